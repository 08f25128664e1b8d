"""The operator console for customers, agents and signals: scoped lists, search, filters, soft delete."""
import pytest

from accounts.models import Membership, User
from customers.models import Customer
from tests.customers.test_customers import subscription_for
from tests.factories import AgentFactory, CustomerFactory, SignalFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, org):
    """A staff member of `org` only (not a superuser)."""
    user = User.objects.create_user(email="ops@acme.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


@pytest.mark.parametrize("path, params", [
    ("/admin/customers/customer/", {"q": "Mine", "status__exact": "active", "deleted_at__isempty": "1"}),
    ("/admin/customers/agent/", {"q": "Mine", "is_active__exact": "1"}),
    ("/admin/customers/signal/", {"q": "Mine", "type__exact": "usage"}),
])
def test_lists_search_and_filter_only_the_operators_organizations(operator, book, other_book, path, params):
    SignalFactory(book=book, name="Mine signal", agent=AgentFactory(book=book, name="Mine agent"))
    CustomerFactory(book=book, name="Mine customer")
    SignalFactory(book=other_book, name="Theirs signal", agent=AgentFactory(book=other_book, name="Theirs agent"))
    CustomerFactory(book=other_book, name="Theirs customer")
    resp = operator.get(path, params)
    assert resp.status_code == 200
    page = resp.content.decode()
    assert "Mine" in page and "Theirs" not in page
    assert other_book.organization.name not in page  # not even as a filter choice


def test_agent_page_shows_its_signals_inline(operator, book):
    signal = SignalFactory(book=book, name="Inline signal")
    resp = operator.get(f"/admin/customers/agent/{signal.agent_id}/change/")
    assert resp.status_code == 200
    assert "Inline signal" in resp.content.decode()


def test_soft_delete_action_keeps_the_row_and_respects_subscriptions(operator, book):
    customer, subscribed = CustomerFactory(book=book), CustomerFactory(book=book)
    subscription_for(subscribed, status="active")
    resp = operator.post("/admin/customers/customer/", {"action": "soft_delete_customers",
                                                        "_selected_action": [str(customer.id), str(subscribed.id)]},
                         follow=True)
    assert resp.status_code == 200
    assert Customer.objects.get(pk=customer.pk).deleted_at is not None
    assert Customer.objects.get(pk=subscribed.pk).deleted_at is None
    assert "upcoming or active subscription" in resp.content.decode()


def test_customers_cannot_be_hard_deleted_from_the_console(operator, book):
    customer = CustomerFactory(book=book)
    assert operator.get(f"/admin/customers/customer/{customer.id}/delete/").status_code == 403


def test_usage_rollup_is_listed_read_only_and_scoped(operator, book, other_book):
    from datetime import date

    from customers.models import UsageDailyRollup
    mine = UsageDailyRollup.objects.create(book=book, day=date(2025, 4, 1), event_count=3,
                                           customer=CustomerFactory(book=book, name="Mine customer"), model="mine-llm")
    UsageDailyRollup.objects.create(book=other_book, day=date(2025, 4, 1), event_count=5, model="theirs-llm",
                                    customer=CustomerFactory(book=other_book, name="Theirs customer"))
    page = operator.get("/admin/customers/usagedailyrollup/", {"q": "llm"}).content.decode()
    assert "mine-llm" in page and "theirs-llm" not in page
    assert operator.get("/admin/customers/usagedailyrollup/add/").status_code == 403
    assert operator.post(f"/admin/customers/usagedailyrollup/{mine.id}/delete/", {"post": "yes"}).status_code == 403


def test_usage_rollup_list_counts_the_events_still_waiting_for_a_catch_up(operator, book, other_book):
    """Recorded events wait in the rollup's backlog until a catch-up (the worker's, seconds later; none while the
    workers are down): the list catches up the books it shows first, as every analytics read does."""
    from datetime import datetime, timezone

    from customers.models import RollupBacklog
    from tests.factories import UsageEventFactory
    waiting = CustomerFactory(book=book, name="Waiting customer")
    for _ in range(3):
        UsageEventFactory(book=book, customer=waiting, usage_date=datetime(2025, 4, 1, 9, tzinfo=timezone.utc))
    UsageEventFactory(book=other_book, usage_date=datetime(2025, 4, 1, 9, tzinfo=timezone.utc))
    page = operator.get("/admin/customers/usagedailyrollup/").content.decode()
    assert "Waiting customer" in page
    assert not RollupBacklog.objects.filter(book=book).exists()
    assert RollupBacklog.objects.filter(book=other_book).exists()  # another organization's book: not this page's
