"""The docs check: README.md and docs/ link only to files (and headings) that exist, name only `make`
targets the Makefile has, and document every environment variable the settings read."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def prose(text: str) -> str:
    """The text without code blocks and inline code (links there are examples, not links)."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def code(text: str) -> list[str]:
    """The code blocks and inline code spans (without their backticks) of a page."""
    return FENCE.findall(text) + [span.strip("`") for span in INLINE_CODE.findall(FENCE.sub("", text))]


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lowercase, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#{1,6}\s+(.+?)\s*$", FENCE.sub("", page.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


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
    broken = []
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert not broken, f"{page_id(page)} has broken links: {broken}"


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
    """The checker itself: a missing file and a missing heading are both found."""
    (tmp_path / "a.md").write_text("# Title\n\n[ok](#title) [gone](missing.md) [bad](a.md#nope) `[x](y.md)`\n")
    targets = LINK.findall(prose((tmp_path / "a.md").read_text()))
    assert targets == ["#title", "missing.md", "a.md#nope"]
    assert heading_anchors(tmp_path / "a.md") == {"title"}
    assert code("Run `make nothing-here` or\n```sh\nX=1 make test\n```\n") == ["```sh\nX=1 make test\n```",
                                                                              "make nothing-here"]
