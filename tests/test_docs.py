"""The docs check: README.md and docs/ link only to files (and headings) inside the repository, cite no
document that is not in it, name only `make` targets the Makefile has, and document every environment
variable the settings read."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Any link-like syntax, for the check that LINK reads every link there is (a title or a space inside the
# parentheses, a reference-style link, an HTML link would otherwise go unchecked).
ANY_LINK = re.compile(r"\]\(|\]\[|^\s*\[[^\]]+\]:\s|<a\s|<img\s", re.M | re.I)
# Documents outside the repository a page must not rely on: the interface specification and the project
# contract it was built from, by file name, section or possessive.
OUTSIDE_CITATION = re.compile(
    r"\b(?:spec|contract)\.md\b|\bspec(?:ification)?(?:'s)?\s*(?:§|section\b)|\bcontract\s*§"
    r"|\bthe (?:interface )?spec(?:ification)?\b|\bspec's\b|\(contract:", re.I)


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def prose(text: str) -> str:
    """The text without code blocks and inline code (links there are examples, not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def code(text: str) -> list[str]:
    """The code blocks and inline code spans (without their backticks) of a page."""
    return FENCE.findall(text) + [span.strip("`") for span in INLINE_CODE.findall(FENCE.sub("", text))]


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: a link in a heading reads as its text; lowercase, punctuation
    dropped, spaces to hyphens; the second heading with the same anchor gets `-1`, the third `-2`."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", page.read_text()), re.M)
    anchors: set[str] = set()
    for heading in headings:
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
        anchor = base = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        repeat = 0
        while anchor in anchors:
            repeat += 1
            anchor = f"{base}-{repeat}"
        anchors.add(anchor)
    return anchors


def broken_links(page: Path, root: Path) -> list[str]:
    """The page's relative links that leave `root`, name no file, or name a heading the linked page lacks."""
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.is_relative_to(root):
            broken.append(f"{target}: outside the repository")
        elif not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    return broken


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, re.M))


def settings_env_names() -> set[str]:
    source = (ROOT / "config" / "settings.py").read_text()
    return set(re.findall(r"""(?:environ\.get|env_bool|env_int|env_list)\(\s*["'](\w+)["']""", source))


def test_the_docs_exist():
    names = {page_id(page) for page in PAGES}
    assert {"docs/index.md", "docs/quickstart.md", "docs/concepts.md", "docs/pricing-models.md",
            "docs/operations.md", "docs/architecture.md"} <= names


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_relative_links_resolve_to_files_and_headings(page):
    broken = broken_links(page, ROOT)
    assert not broken, f"{page_id(page)} has broken links: {broken}"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_link_is_one_the_check_reads(page):
    text = prose(page.read_text())
    assert len(ANY_LINK.findall(text)) == len(LINK.findall(text)), (
        f"{page_id(page)} has a link the check cannot read: write it as [text](path#anchor)")


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_no_page_cites_a_document_outside_the_repository(page):
    cited = [match.group(0) for match in OUTSIDE_CITATION.finditer(page.read_text())]
    assert not cited, f"{page_id(page)} cites documents that are not in the repository: {cited}; state the rule"


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_make_targets_mentioned_exist(page):
    mentioned = {target for snippet in code(page.read_text())
                 for target in re.findall(r"(?:^|[\s;&|(])make ([a-z][\w-]*)", snippet, re.M)}
    assert mentioned <= makefile_targets(), f"{page_id(page)} names missing make targets: {mentioned - makefile_targets()}"


def test_operations_documents_every_setting_read_from_the_environment():
    operations = (ROOT / "docs" / "operations.md").read_text()
    undocumented = {name for name in settings_env_names() if f"`{name}`" not in operations}
    assert not undocumented, f"add these to the configuration table of docs/operations.md: {undocumented}"


def test_the_link_check_catches_a_broken_link(tmp_path):
    """The checker itself: a missing file, a missing heading, a file outside the repository and a link it could
    not read are all found."""
    root = tmp_path.resolve() / "repo"
    (root / "docs").mkdir(parents=True)
    (tmp_path / "outside.md").write_text("# Outside\n")
    (root / "a.md").write_text("# Title\n\n## Limits\n\n## Limits\n\n## The [ledger](a.md) `GET /v1/x` table\n")
    page = root / "docs" / "c.md"
    page.write_text("[ok](../a.md#limits-1) [gone](missing.md) [bad](../a.md#nope) [away](../../outside.md) "
                    "[abs](/etc/hostname) [web](https://example.com/x) `[x](y.md)`\n")
    assert heading_anchors(root / "a.md") == {"title", "limits", "limits-1", "the-ledger-get-v1x-table"}
    assert broken_links(page, root) == ["missing.md: no such file", "../a.md#nope: no heading with anchor #nope",
                                        "../../outside.md: outside the repository",
                                        "/etc/hostname: outside the repository"]
    unread = '[title](../a.md "A") [ref][r]\n\n[r]: ../a.md\n<a href="../a.md">a</a>\n'
    assert LINK.findall(prose(unread)) == [] and len(ANY_LINK.findall(prose(unread))) == 4
    assert code("Run `make nothing-here` or\n```sh\nX=1 make test\n```\n") == ["```sh\nX=1 make test\n```",
                                                                              "make nothing-here"]


def test_the_citation_check_catches_the_outside_documents():
    cited = ["see spec.md", "(spec §7)", "spec section 4.2", "the contract.md table", "(contract: Exact numbers)",
             "The spec's rule", "where the interface specification leaves a choice"]
    fine = ["a Contract Reviewer agent", "contract reviews", "the specified rate", "Specifications of the plan"]
    assert all(OUTSIDE_CITATION.search(text) for text in cited), [t for t in cited if not OUTSIDE_CITATION.search(t)]
    assert not any(OUTSIDE_CITATION.search(text) for text in fine)
