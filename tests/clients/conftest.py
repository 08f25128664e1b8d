"""The client's tests run it against the live service, not against mocks of the API: one live server (the
WSGI application on a real port, as pytest-django's `live_server` runs it) for the whole session, on the
test database in autocommit. Each test gets its own organization and key (`service`), so tests see only
their own data without a database flush after each one (a flush costs seconds; the tests would spend most
of their time there). At the end of the session what the tests wrote is removed.
"""
import os
import uuid
from dataclasses import dataclass
from decimal import Decimal

import pytest
from django.db import connection, connections
from django.test.utils import setup_databases, teardown_databases
from pytest_django.live_server_helper import LiveServer

from catalog.models import ServiceEntry
from accounts.models import Organization, User
from accounts.services import api_key_mint, member_ensure
from tests.factories import OrganizationFactory, book_of
from tests.parallel import end_other_sessions

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM must not fetch its price map

D = Decimal

# Catalog rates the tests price with (USD per token), used when the catalog lacks the model; expected costs
# are computed from whatever rates the catalog row holds (`llm_cost`).
RATES = {
    ("openai", "gpt-4o-mini"): dict(input_cost=D("0.00000015"), output_cost=D("0.0000006"),
                                    cache_read_cost=D("0.000000075"), cache_write_cost=None),
    ("anthropic", "claude-sonnet-4-5"): dict(input_cost=D("0.000003"), output_cost=D("0.000015"),
                                             cache_read_cost=D("0.0000003"), cache_write_cost=D("0.00000375")),
}


@dataclass
class Service:
    url: str
    key: str
    org: object
    book: object

    def __iter__(self):  # url, key = service
        return iter((self.url, self.key))

    def key_for(self, role="owner", key_type="secret", scope="full") -> str:
        membership = member_ensure(organization=self.org, email=f"{role}-{uuid.uuid4().hex[:6]}@client.example.com",
                                   role=role)
        return api_key_mint(membership=membership, key_type=key_type, environment="test", scope=scope)[1]


@pytest.fixture(scope="session")
def live_service(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        # pytest-django creates the test database only for sessions holding a database-marked test; a run of
        # these modules alone may hold none.
        own_database = None
        if connection.settings_dict["NAME"] != connection.creation._get_test_db_name():
            own_database = setup_databases(verbosity=0, interactive=False, aliases={"default"},
                                           serialized_aliases={"default"})
        server = LiveServer("127.0.0.1:0")
        server._live_server_modified_settings.enable()
        try:
            yield server
        finally:
            server.stop()
            server._live_server_modified_settings.disable()
            # The server's request threads may still hold connections (each thread's own, closed only when the
            # thread is collected): left open, they made dropping the test database at the session's end fail
            # now and then ("being accessed by other users").
            end_other_sessions()
            if own_database:
                teardown_databases(own_database, verbosity=0)
            else:
                _reset_database()


def _reset_database():
    """Remove what the tests wrote: every organization and user with all that references them (the tests'
    organizations are the only ones left at this point: other tests roll back or flush), and the catalog rows
    `priced_models` added. Cheaper than a flush and a reload of the catalog."""
    connections.close_all()
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {Organization._meta.db_table}, {User._meta.db_table} CASCADE")
    ServiceEntry.objects.filter(external_id__startswith="client-test:").delete()


@pytest.fixture
def service(live_service, django_db_blocker, priced_models):
    """The live service's URL and an owner's secret key for a fresh organization (its test book)."""
    with django_db_blocker.unblock():
        org = OrganizationFactory(name=f"Client test {uuid.uuid4().hex[:8]}")
        service = Service(url=live_service.url, key="", org=org, book=book_of(org, "test"))
        service.key = service.key_for()
        yield service


@pytest.fixture
def database(django_db_blocker):
    """Database access for the test's own checks (the data is committed by the live service)."""
    with django_db_blocker.unblock():
        yield


@pytest.fixture(scope="session")
def priced_models(live_service, django_db_blocker):
    with django_db_blocker.unblock():
        for (provider, name), rates in RATES.items():
            ServiceEntry.objects.get_or_create(
                provider=provider, canonical_name=name,
                defaults=dict(external_id=f"client-test:{provider}/{name}", display_name=name, service_type="chat",
                              cost_unit="token", source="curated", is_api=False, is_active=True, **rates))


def llm_cost(provider: str, model: str, *, input=0, output=0, cache_read=0, cache_write=0) -> Decimal:
    """What the service charges for these tokens with the catalog row's own rates (no long-context tier)."""
    entry = ServiceEntry.objects.get(provider=provider, canonical_name=model)
    cache_read_rate = entry.input_cost if entry.cache_read_cost is None else entry.cache_read_cost
    cache_write_rate = entry.input_cost if entry.cache_write_cost is None else entry.cache_write_cost
    return (input * entry.input_cost + output * entry.output_cost + cache_read * cache_read_rate
            + cache_write * cache_write_rate)
