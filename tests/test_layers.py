"""The import contracts of `.importlinter` (docs/architecture.md): the apps form a stack with the composition
root on top, and the pure engines import the standard library and the money and time helpers only.

The real tool runs on the real code here, so `make test` fails on an upward import. The other tests show that the
configuration catches what it should: an import added to the real import graph breaks the contract it must break
(and only that one), a module outside every layer fails the check of the layers' coverage, and the command line
run on a copy of the code with one upward import fails naming it.
"""
import ast
import copy
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import importlinter.api  # noqa: F401  (configures import-linter: graph builder, timer)
import pytest
from importlinter.application import use_cases
from importlinter.contracts.forbidden import ForbiddenContract
from importlinter.contracts.layers import LayersContract

ROOT = Path(__file__).resolve().parent.parent
CONFIG = ROOT / ".importlinter"
CONTRACT_TYPES = {"layers": LayersContract, "forbidden": ForbiddenContract}


@pytest.fixture(scope="module")
def options():
    return use_cases.read_user_options(config_filename=str(CONFIG))


@pytest.fixture(scope="module")
def contracts(options) -> dict:
    return {contract["id"]: CONTRACT_TYPES[contract["type"]](
        name=contract["name"], session_options=options.session_options, contract_options=contract)
        for contract in options.contracts_options}


@pytest.fixture(scope="module")
def graph(options):
    return grimp.build_graph(*options.session_options["root_packages"], include_external_packages=True,
                             cache_dir=None)


def broken(contracts: dict, graph) -> set[str]:
    return {contract_id for contract_id, contract in contracts.items()
            if not contract.check(copy.deepcopy(graph), verbose=False).kept}


def test_the_code_keeps_every_contract():
    """What `lint-imports` does, in process: its report is printed (and shown by pytest) when a contract breaks."""
    assert use_cases.lint_imports(config_filename=str(CONFIG), cache_dir=None, no_logo=True) is True


def test_the_contracts_are_the_layers_the_pure_engines_and_the_invoice_path(contracts):
    assert set(contracts) == {"layers", "pure-engines", "pricing-seam", "invoice-path", "tasks-at-the-edge",
                              "revenue-read"}


# (importer, imported, the contracts it breaks): one import per boundary of the stack, then the engines, then the
# invoice path.
VIOLATIONS = [
    ("accounts.models", "core.errors", None),  # downwards: allowed (a control case)
    ("core.errors", "accounts.models", "layers"),
    ("core.jobs", "config.schedule", "layers"),  # the platform reaching the periodic jobs' list
    ("core.views", "config.hooks", "layers"),
    ("webhooks.models", "jobs.models", "layers"),  # the outbox sits below jobs, which emit to it
    ("webhooks.events", "billing.models", "layers"),  # events are handed their data; never fetched up
    ("jobs.services", "webhooks.events", None),
    ("controls.services.spend_caps", "webhooks.events", None),
    ("accounts.models", "catalog.models", "layers"),
    ("catalog.resolution", "customers.models", "layers"),
    ("customers.models", "matters.models", "layers"),
    ("matters.services", "billing.models", "layers"),
    ("billing.recording", "controls.hooks", "layers"),  # what the usage_ingested hook list stands in for
    ("billing.services.invoices", "analytics.selectors.revenue", "layers"),
    ("analytics.dashboard", "controls.models", "layers"),
    ("controls.metrics", "portal.models", "layers"),
    ("portal.pages", "console.site", "layers"),
    ("customers.models", "config", "layers"),  # indirect: config/__init__ imports config.celery, the root
    ("console.site", "portal.models", None),  # the console stands on every product app
    ("core.jobs", "console.models", "layers"),
    ("jobs.services", "config.schedule", "layers"),  # no app reaches the composition root
    ("console.verification", "config.hooks", "layers"),
    ("config.hooks", "console.site", None),  # the composition root may import every app
    ("config.urls", "core.views", None),
    ("config.schedule", "billing.services.invoices", None),
    ("billing.pricing.engine", "billing.models", "pure-engines"),
    ("billing.pricing.engine", "billing.pricing.terms", ("pure-engines", "invoice-path", "revenue-read")),
    ("billing.pricing.periods", "core.scoping", "pure-engines"),
    ("billing.pricing.engine", "django", "pure-engines"),
    ("catalog.costing", "catalog.models", "pure-engines"),
    ("catalog.costing", "core.clock", "pure-engines"),  # reading the clock: a time helper, not this one's
    ("matters.routing", "customers.models", "pure-engines"),
    ("matters.routing", "celery", "pure-engines"),
    ("matters.routing", "re", None),  # the standard library
    ("billing.pricing.lines", "billing.selectors.subscriptions", "pricing-seam"),  # leaving the seam mid-path
    # services.subscriptions reaches the invoice service (its webhooks render the invoice), so the seam calling it
    # would also turn the invoice path back on itself.
    ("billing.pricing.usage", "billing.services.subscriptions", {"pricing-seam", "invoice-path"}),
    ("billing.pricing.terms", "billing.services.invoices", ("pricing-seam", "invoice-path", "revenue-read")),
    ("billing.pricing.terms", "billing.pricing.usage", ("invoice-path", "revenue-read")),
    ("billing.pricing.attribution", "billing.pricing.lines", "invoice-path"),
    ("billing.pricing.periods", "billing.pricing.engine", ("pure-engines", "invoice-path", "revenue-read")),
    ("billing.selectors.credit_pools", "billing.pricing.usage", None),  # billing calls the seam
    # The revenue read turned back on itself.
    ("analytics.selectors.coverage", "analytics.selectors.revenue", "revenue-read"),
    ("analytics.selectors.coverage", "analytics.selectors.invoiced", "revenue-read"),
    ("customers.usage_sums", "billing.pricing.periods", ("layers", "revenue-read")),
    ("analytics.selectors.revenue", "analytics.selectors.invoiced", None),
    # The circles the named tasks replaced: a service importing the task that runs it.
    ("billing.followup", "billing.tasks", "tasks-at-the-edge"),
    ("customers.backfill", "customers.tasks", "tasks-at-the-edge"),
    ("matters.services", "matters.tasks", "tasks-at-the-edge"),
    ("controls.hooks", "controls.tasks", "tasks-at-the-edge"),
    ("webhooks.dispatch", "webhooks.tasks", "tasks-at-the-edge"),
    ("billing.tasks", "billing.services.invoices", None),  # a task calls the service it runs
    ("config.celery", "billing.tasks", None),  # the composition root may name a task
]


@pytest.mark.parametrize("importer, imported, contract_ids", VIOLATIONS,
                         ids=[f"{importer}->{imported}" for importer, imported, _ in VIOLATIONS])
def test_an_added_import_breaks_exactly_the_contracts_it_must(contracts, graph, importer, imported, contract_ids):
    assert importer in graph.modules
    assert not broken(contracts, graph)  # the real graph first
    changed = copy.deepcopy(graph)
    changed.add_import(importer=importer, imported=imported)
    expected = {contract_ids} if isinstance(contract_ids, str) else set(contract_ids or ())
    assert broken(contracts, changed) == expected


def layer_modules(options) -> set[str]:
    (layers,) = [contract["layers"] for contract in options.contracts_options if contract["id"] == "layers"]
    return {name.strip().strip("()") for layer in layers for name in layer.replace("|", ":").split(":")}


def is_layered(module: str, layers: set[str]) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in layers)


def test_every_module_of_the_code_is_in_a_layer(options, graph):
    """A module outside every layer would be checked only through the chains it lies on: name it in a layer."""
    layers = layer_modules(options)
    roots = options.session_options["root_packages"]
    modules = {module for module in graph.modules if module.split(".")[0] in roots}
    assert len(modules) > 200  # the graph is read
    assert not {module for module in modules - {"config"} if not is_layered(module, layers)}
    # and the check itself sees one: a new top-level package that no layer names
    assert not is_layered("platform.progress", layers) and is_layered("config.tasks", layers)


def test_the_command_fails_on_a_copy_of_the_code_with_one_upward_import(options, contracts, tmp_path):
    for package in options.session_options["root_packages"]:
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns(
            "__pycache__", "templates", "static", "data", "*.html", "*.json", "*.txt"))
    shutil.copy(CONFIG, tmp_path / ".importlinter")
    errors = tmp_path / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\n\ndef _upward():\n    from controls.models import SpendCap  # noqa\n")

    result = subprocess.run(
        [Path(sys.executable).parent / "lint-imports", "--no-cache"],
        cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True)

    assert result.returncode == 1, result.stdout + result.stderr
    assert f"Contracts: {len(contracts) - 1} kept, 1 broken." in result.stdout, result.stdout
    assert "core.errors -> controls.models" in result.stdout, result.stdout


# --------------------------------------------------------------------------- raw SQL and the fenced places

APP_PACKAGES = ("config", "console", "core", "accounts", "jobs", "webhooks", "catalog", "customers", "matters",
                "billing", "analytics", "controls", "portal")
# The modules that write SQL by hand, and why; every other module reads and writes through the ORM and owned().
RAW_SQL_MODULES = {
    "customers/ledger.py": "the ledger insert",
    "customers/rollup.py": "the rollup's writes and its comparison with the ledger",
    "customers/verification.py": "the ledger verifier's checks of the keys and the backlog",
    "matters/verification.py": "the ledger verifier's check of matter attributions against the ledger and archives",
    "customers/usage_sums.py": "the rollup's reads",
    "customers/partitions.py": "the ledger's monthly partitions (DDL)",
    "customers/partition_conversion.py": "converting a populated ledger to partitions (DDL)",
    "accounts/services.py": "hot lookup: the API key of every request",
    "accounts/book_generations.py": "the generations of a book's cached records, read with the API key",
    "customers/provisioning.py": "hot lookup: the identities a recorded batch names",
    "catalog/resolution.py": "hot lookup: the catalog entries a recorded batch prices with",
    "matters/ingestion.py": "hot lookup and insert: a recorded batch's matter attribution",
    "core/database.py": "the prepared cursor of the hot lookups, advisory and key-share locks, one-snapshot reads",
    "core/postgresql/base.py": "a transaction's id, and what became of a commit whose answer was lost",
    "core/views.py": "the readiness probe",
    "core/replica.py": "the replica's replay position",
    "config/embedded_database.py": "the embedded server's database, before Django runs",
}
SQL_TEXT = re.compile(r"^\s*(SELECT|INSERT INTO|UPDATE \S+ SET|DELETE FROM|WITH \w+ AS|CREATE|ALTER|DROP|LOCK|SET LOCAL)\b")
CURSOR_CALLS = {"cursor", "prepared_cursor", "raw", "extra", "RawSQL", "execute", "executemany"}
HAND_WRITTEN_BOOK_CONDITION = re.compile(r"book_id\s*=\s*%")


def docstrings(tree) -> set[int]:
    return {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}


def raw_sql_in(source: str) -> list[str]:
    """What makes a module one that writes SQL by hand: a cursor or raw query call (not a Redis pipeline's
    `execute`), or a string that starts like an SQL statement (docstrings aside)."""
    tree = ast.parse(source)
    skipped = docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
            receiver = getattr(function.value, "id", None) if isinstance(function, ast.Attribute) else None
            if name in CURSOR_CALLS and receiver != "pipeline":
                found.append(f"{name}() at line {node.lineno}")
        elif isinstance(node, ast.JoinedStr):
            text = "".join(part.value if isinstance(part, ast.Constant) else "{}" for part in node.values)
            if SQL_TEXT.match(text):
                found.append(f"SQL text at line {node.lineno}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            if SQL_TEXT.match(node.value):
                found.append(f"SQL text at line {node.lineno}")
    return found


def app_modules():
    for package in APP_PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield str(path.relative_to(ROOT)), path.read_text()


def test_raw_sql_lives_only_in_the_named_modules():
    writing_sql = {module: found for module, source in app_modules() if (found := raw_sql_in(source))}
    assert {"customers/ledger.py", "catalog/resolution.py", "matters/ingestion.py"} <= set(writing_sql)  # read
    assert not {module: found for module, found in writing_sql.items() if module not in RAW_SQL_MODULES}


@pytest.mark.parametrize("source, writes_sql", [
    ("with connection.cursor() as c:\n    c.execute('SELECT 1')", True),
    ("rows = Customer.objects.raw('SELECT * FROM customers_customer')", True),
    ("qs = qs.annotate(n=RawSQL('count(*)', []))", True),
    ("table = 't'\nSQL = f'DELETE FROM {table} WHERE id = %s'", True),
    ("SQL = '''\n    SELECT id FROM t\n'''", True),
    ("pipeline = client.pipeline()\npipeline.execute()", False),  # Redis, not SQL
    ("owned(Customer, book).filter(external_id='x').update(name='y')", False),
    ("def f():\n    '''SELECT the best one.'''", False),  # a docstring
])
def test_the_raw_sql_check_tells_sql_from_orm(source, writes_sql):
    assert bool(raw_sql_in(source)) is writes_sql


def test_every_raw_statement_scopes_the_book_through_book_sql():
    hand_written = {module: [number for number, line in enumerate(source.splitlines(), 1)
                             if HAND_WRITTEN_BOOK_CONDITION.search(line)]
                    for module, source in app_modules() if module != "core/scoping.py"}
    assert not {module: lines for module, lines in hand_written.items() if lines}
    assert HAND_WRITTEN_BOOK_CONDITION.search('f"WHERE e.book_id = %s AND e.day >= %s"')  # the check reads SQL


BOOK_ARGUMENTS = {"book", "book_id"}
READS = {"filter", "exclude", "get"}  # a create names the book it writes into: that is the scoping


def book_queries_bypassing_owned(source: str) -> list[int]:
    """Lines where a manager query names the book itself (`Model.objects.filter(book=...)`) instead of starting
    from `owned(Model, book)`. A correlated subquery's `book=OuterRef(...)` matches the outer row's book, which
    the outer query scoped already."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        function = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(function, ast.Attribute) and isinstance(function.value, ast.Attribute)
                and function.value.attr == "objects" and function.attr in READS):
            continue
        for keyword in node.keywords:
            outer_ref = (isinstance(keyword.value, ast.Call)
                         and getattr(keyword.value.func, "id", None) == "OuterRef")
            if keyword.arg in BOOK_ARGUMENTS and not outer_ref:
                lines.append(node.lineno)
    return lines


def test_orm_queries_scope_the_book_through_owned():
    bypassing = {module: lines for module, source in app_modules()
                 if module != "core/scoping.py" and (lines := book_queries_bypassing_owned(source))}
    assert not bypassing, f"start these from owned(Model, book): {bypassing}"


@pytest.mark.parametrize("source, bypasses", [
    ("UsageEventKey.objects.filter(book=book, idempotency_key=key)", True),
    ("RollupBacklog.objects.filter(book_id=book_id).exists()", True),
    ("Invoice.objects.get(pk=pk, book=book)", True),
    ("owned(UsageEventKey, book).filter(idempotency_key=key)", False),
    ("MatterAttribution.objects.filter(book=OuterRef('book'), matter=OuterRef('pk'))", False),
    ("Invoice.objects.filter(status='draft', period_end__lte=now)", False),  # a job across books
    ("PricingPlan.objects.create(book=book, name=name)", False),
])
def test_the_owned_check_tells_a_hand_scoped_query(source, bypasses):
    assert bool(book_queries_bypassing_owned(source)) is bypasses


@pytest.mark.parametrize("pattern, only_in", [
    (re.compile(r"object\.__setattr__\("), "core/ids.py"),  # a UUID's slots, set without its checks
    (re.compile(r"\.__dict__\s*=[^=]"), "customers/ledger.py"),  # model instances without Model.__init__
])
def test_the_fenced_shortcuts_stay_in_their_one_module(pattern, only_in):
    assert {module for module, source in app_modules() if pattern.search(source)} == {only_in}
