"""Shared fixtures: organizations, keys and API clients bound to a key (spec §5)."""
import pytest
from django.core.cache import cache
from pytest_django.plugin import validate_django_db
from rest_framework.test import APIClient

from config.accounts.services import api_key_mint, member_ensure
from tests.factories import OrganizationFactory, book_of


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    """Transactional tests without `serialized_rollback` run last (pytest-django has put every transactional test
    after the others). Their closing flush re-creates the content types under new ids, and a serialized-rollback
    test after them could no longer load the migrated data (the catalog) back: duplicate content types."""
    def flushes_without_serialized_copy(item) -> bool:
        marker = item.get_closest_marker("django_db")
        transaction, reset_sequences, _, serialized_rollback, _ = (
            validate_django_db(marker) if marker else (False, False, None, False, None))
        transactional = transaction or reset_sequences or bool(
            {"live_server", "transactional_db"} & set(getattr(item, "fixturenames", ())))
        return transactional and not serialized_rollback
    items.sort(key=flushes_without_serialized_copy)  # stable: pytest-django's order holds otherwise


@pytest.fixture(autouse=True)
def _isolated_state(settings, tmp_path):
    """Each test: an empty shared cache (rate counters), request-log entries written at once,
    and its own mail directory."""
    cache.clear()
    settings.API_REQUEST_LOG_FLUSH_SECONDS = 0
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(tmp_path / "mail")
    yield
    cache.clear()


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
