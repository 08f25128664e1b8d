"""Shared fixtures: organizations, keys and API clients bound to a key (spec §5)."""
import os

import pytest
from celery import _state as celery_state
from celery import current_app
from django.conf import settings as django_settings
from django.core.cache import cache
from rest_framework.test import APIClient

from pytest_django.fixtures import validate_django_db

from accounts import book_generations
from core import background, redis_client
from accounts.services import api_key_mint, member_ensure
from tests.factories import OrganizationFactory, book_of


def _redis_database_of_this_worker() -> None:
    """`make test` runs the suite in parallel workers (pytest-xdist), each with a PostgreSQL database of its own
    and all with the run's one Redis: each worker takes a Redis database of its own too (1, 2, ...), so that one
    worker's `cache.clear()`, rate counters and follow-ups never meet another's. Servers a test starts inherit it."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not (worker.startswith("gw") and django_settings.REDIS_URL):
        return
    url = f"{django_settings.REDIS_URL.rsplit('/', 1)[0]}/{int(worker[2:]) + 1}"
    os.environ["REDIS_URL"] = django_settings.REDIS_URL = django_settings.CELERY_BROKER_URL = url
    django_settings.CACHES["default"]["LOCATION"] = url
    current_app.conf.broker_url = url


_redis_database_of_this_worker()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, with every other session on this worker's database ended before they are
    dropped: a thread a test started (a live server's request, a race between two connections) keeps its own
    connection until the thread is collected, and one still open made the drop fail now and then ("being
    accessed by other users"), leaving the database behind."""
    yield
    from tests.parallel import end_other_sessions

    with django_db_blocker.unblock():
        end_other_sessions()


def _run_order(item) -> int:
    """pytest-django's order (database tests, then transactional ones, then the rest), with transactional
    tests that reload the initial data (`serialized_rollback`: the catalog) before the other transactional
    tests: those flush the database and re-create content types, which a later reload would duplicate."""
    marker = item.get_closest_marker("django_db")
    transaction = serialized = False
    if marker:
        transaction, reset_sequences, _, serialized, _ = validate_django_db(marker)
        transaction = transaction or reset_sequences
    if transaction or {"transactional_db", "live_server"} & set(item.fixturenames):
        return 1 if serialized else 2
    return 0 if marker or "db" in item.fixturenames else 3


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    items.sort(key=_run_order)


@pytest.fixture(autouse=True)
def _isolated_state(settings, tmp_path):
    """Each test: an empty shared cache (rate counters) and per-process book caches (a rolled-back test's book
    ids can come back in the next test), request-log entries written at once, its own mail directory, and Celery
    outside any task."""
    cache.clear()
    book_generations.clear_all()
    # Eager tasks (CELERY_TASK_ALWAYS_EAGER) mark "inside a task" in a process-wide flag that each call saves
    # and restores; calls overlapping in a live server's threads (every usage batch enqueues the credit-pool
    # task) can restore it to "inside" for good, and every later `result.get()` of the process would refuse.
    celery_state._set_task_join_will_block(False)
    settings.API_REQUEST_LOG_FLUSH_SECONDS = 0
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    background.broker_pause_end()  # a broker or a Redis that failed in the test before is not this test's
    redis_client.reachable_again()
    yield
    redis_client.reachable_again()  # a test that pointed a cache at a Redis that is down leaves the real one usable
    cache.clear()
    book_generations.clear_all()


# The checks of the ledger verifier that every test's data must pass (console/verification.py): the tables
# derived from the ledger as it is written. Draft invoices and settled credit-pool periods are left to their own
# tests: a test may well leave a draft generated before its last events, which is stale, not drift. Invoice totals
# too: many tests make invoices row by row, totals without lines.
VERIFIED_AFTER_EACH_TEST = ("rollup", "rollup_backlog", "idempotency_keys", "matter_attributions", "final_invoices",
                            "events_billed_once")


@pytest.fixture(autouse=True)
def _ledger_verified(request):
    """After every test that stored usage, the ledger verifier finds no drift in what the test left: every test
    that records usage also checks that nothing derived from the ledger drifted. A test that leaves drift on
    purpose is marked `ledger_drift_allowed`."""
    marker = request.node.get_closest_marker("django_db")
    database = next((name for name in ("transactional_db", "db") if name in request.fixturenames), None)
    if database is None and marker is None or "ledger_drift_allowed" in request.keywords:
        yield
        return
    # Requested here, so that the database is torn down (rolled back, flushed) only after this check.
    request.getfixturevalue(database or ("transactional_db" if validate_django_db(marker)[0] else "db"))
    yield
    from console.verification import ledger_verify
    from core import clock
    from customers.models import UsageEvent

    if not UsageEvent.objects.exists():
        return
    drift = [f"{report.book.pk} {check}: {finding.subject}: the ledger says {finding.ledger}; derived: "
             f"{finding.derived}"
             for report in ledger_verify(now=clock.now(), checks=VERIFIED_AFTER_EACH_TEST)
             for check, found in report.findings.items() for finding in found]
    assert not drift, "figures derived from the ledger differ from it:\n" + "\n".join(drift[:20])


class KeyClient(APIClient):
    """An APIClient that sends one API key in x-api-key on every request."""

    def __init__(self, raw_key: str | None, key=None, **kwargs):
        super().__init__(**kwargs)
        self.raw_key, self.key = raw_key, key
        if raw_key:
            self.credentials(HTTP_X_API_KEY=raw_key)

    def post(self, path, data=None, format="json", **kwargs):
        return super().post(path, data, format=format, **kwargs)

    def patch(self, path, data=None, format="json", **kwargs):
        return super().patch(path, data, format=format, **kwargs)

    def put(self, path, data=None, format="json", **kwargs):
        return super().put(path, data, format=format, **kwargs)


@pytest.fixture
def org(db):
    return OrganizationFactory(name="Acme Agents")


@pytest.fixture
def other_org(db):
    return OrganizationFactory(name="Other Org")


@pytest.fixture
def book(org):
    """The test-environment book of `org` (what `api` reads and writes)."""
    return book_of(org, "test")


@pytest.fixture
def other_book(other_org):
    return book_of(other_org, "test")


@pytest.fixture
def client_for(org):
    """client_for(role=, key_type=, scope=, environment=, organization=) -> KeyClient with a fresh key."""
    def make(role="owner", key_type="secret", scope="full", environment="test", organization=None, email=None):
        organization = organization or org
        email = email or f"{role}@{organization.name.lower().replace(' ', '-')}.example.com"
        membership = member_ensure(organization=organization, email=email, role=role)
        key, raw_key = api_key_mint(membership=membership, key_type=key_type, environment=environment, scope=scope)
        return KeyClient(raw_key, key=key)
    return make


@pytest.fixture
def api(client_for):
    """Owner, secret, full scope, test environment."""
    return client_for()


@pytest.fixture
def other_api(client_for, other_org):
    return client_for(organization=other_org)


@pytest.fixture
def anonymous():
    return KeyClient(None)
