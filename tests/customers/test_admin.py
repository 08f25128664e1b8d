"""The operator console for customers, agents and signals: scoped lists, search, filters, soft delete."""
from decimal import Decimal

import pytest
from django import forms

from accounts.models import Membership, User
from core import clock
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


def posted_form(client, url: str, **fields) -> dict:
    """What the console page at `url` posts with its form as shown and `fields` changed, its inlines left as they are
    (no rows posted: other apps add inlines of their own to some pages)."""
    page = client.get(url)
    data = {}
    for bound in page.context["adminform"].form:
        value = bound.value()
        if bound.field.disabled or value is None:
            continue
        if isinstance(bound.field, forms.BooleanField):
            data.update({bound.html_name: "on"} if value else {})
        else:
            data[bound.html_name] = bound.field.prepare_value(value) if isinstance(bound.field, forms.JSONField) \
                else value
    inlines = {f"{inline.formset.prefix}-{count}": "0" for inline in page.context["inline_admin_formsets"]
               for count in ("TOTAL_FORMS", "INITIAL_FORMS")}
    return {**data, **inlines, **fields}


def customer_form(operator, book, **fields) -> dict:
    return posted_form(operator, "/admin/customers/customer/add/", book=str(book.id), name="Wayne Enterprises",
                       **fields)


def test_a_taken_external_id_is_a_form_error_on_add(operator, book):
    CustomerFactory(book=book, external_id="taken")
    resp = operator.post("/admin/customers/customer/add/", customer_form(operator, book, external_id="taken"))
    assert resp.status_code == 200  # the form again, not a 500
    assert resp.context["adminform"].form.errors["external_id"] == ["Customer with this External id already exists."]
    assert Customer.objects.filter(external_id="taken").count() == 1


def test_a_taken_external_id_is_a_form_error_on_change(operator, book):
    CustomerFactory(book=book, external_id="taken")
    customer = CustomerFactory(book=book, external_id="mine")
    resp = operator.post(f"/admin/customers/customer/{customer.id}/change/", customer_form(operator, book, external_id="taken"))
    assert resp.status_code == 200
    assert "external_id" in resp.context["adminform"].form.errors
    customer.refresh_from_db()
    assert customer.external_id == "mine"


def test_the_external_id_of_a_deleted_customer_or_of_another_book_is_free(operator, book, other_book):
    CustomerFactory(book=book, external_id="reused", deleted_at=clock.now())
    CustomerFactory(book=other_book, external_id="reused")
    resp = operator.post("/admin/customers/customer/add/", customer_form(operator, book, external_id="reused"))
    assert resp.status_code == 302, resp.context["adminform"].form.errors
    assert Customer.objects.filter(book=book, external_id="reused", deleted_at__isnull=True).count() == 1


# JSON that Django's own form field let through to a 500: an exponent beyond Decimal's, an integer longer than Python
# converts, nesting deeper than Python's recursion limit, a NUL character (jsonb refuses it).
UNSTORABLE_JSON = {
    "exponent": '{"a": 1e99999999999999999999}',
    "long integer": '{"a": ' + "9" * 4301 + "}",
    "nesting": "[" * 1000 + "]" * 1000,
    "NUL": '{"a": "\\u0000"}',
}


@pytest.mark.parametrize("text", UNSTORABLE_JSON.values(), ids=UNSTORABLE_JSON.keys())
def test_an_agent_context_that_cannot_be_stored_is_a_form_error(operator, book, text):
    agent = AgentFactory(book=book, context={"kept": 1})
    url = f"/admin/customers/agent/{agent.id}/change/"
    resp = operator.post(url, posted_form(operator, url, context=text, name="Renamed"))
    assert resp.status_code == 200  # the form again, with the text as typed
    assert list(resp.context["adminform"].form.errors) == ["context"]
    agent.refresh_from_db()
    assert agent.name != "Renamed" and agent.context == {"kept": 1}


def test_an_agent_context_is_stored_with_its_exact_numbers(operator, book):
    agent = AgentFactory(book=book)
    url = f"/admin/customers/agent/{agent.id}/change/"
    resp = operator.post(url, posted_form(operator, url, context='{"rate": 0.1000000000000000055511151231257827}'))
    assert resp.status_code == 302
    agent.refresh_from_db()
    assert agent.context == {"rate": Decimal("0.1000000000000000055511151231257827")}


def test_usage_rollup_list_shows_the_rollup_as_it_stands_when_a_books_catch_up_fails(operator, book, monkeypatch):
    from datetime import datetime, timezone

    from django.db import OperationalError

    from customers import rollup
    from customers.models import RollupBacklog
    from tests.factories import UsageEventFactory
    listed = CustomerFactory(book=book, name="Listed customer")
    UsageEventFactory(book=book, customer=listed, usage_date=datetime(2025, 3, 1, 9, tzinfo=timezone.utc))
    rollup.analytics_rollup_catch_up(book_id=book.pk)
    UsageEventFactory(book=book, usage_date=datetime(2025, 4, 1, 9, tzinfo=timezone.utc))

    def failing(*, book_id):
        raise OperationalError("canceling statement due to lock timeout")
    monkeypatch.setattr(rollup, "analytics_rollup_catch_up", failing)
    resp = operator.get("/admin/customers/usagedailyrollup/")
    assert resp.status_code == 200 and "Listed customer" in resp.content.decode()
    assert RollupBacklog.objects.filter(book=book).exists()  # the periodic job catches it up


def test_usage_rollup_list_counts_unpriced_events_beside_the_cost(operator, book):
    """An event without a cost adds nothing to the row's cost: a row of unpriced events alone read as free."""
    from datetime import datetime, timezone
    from decimal import Decimal

    from customers.rollup import analytics_rollup_catch_up
    from tests.factories import UsageEventFactory
    when = datetime(2025, 4, 1, 9, tzinfo=timezone.utc)
    unpriced = CustomerFactory(book=book, name="Unpriced customer")
    mixed = CustomerFactory(book=book, name="Mixed customer")
    UsageEventFactory(book=book, customer=unpriced, usage_date=when, usage_cost=None)
    signal = UsageEventFactory(book=book, customer=mixed, usage_date=when, usage_cost=Decimal("0.41")).signal
    UsageEventFactory(book=book, customer=mixed, signal=signal, usage_date=when, usage_cost=None)
    UsageEventFactory(book=book, customer=mixed, signal=signal, usage_date=when, usage_cost=None)
    analytics_rollup_catch_up(book_id=book.pk)
    page = operator.get("/admin/customers/usagedailyrollup/", {"grain__exact": "3"}).content.decode()
    assert '<span class="console-number">-</span><br><small>1 unpriced</small>' in page
    assert '<span class="console-number">$0.41</span><br><small>2 unpriced</small>' in page


def test_a_billed_customer_cannot_be_marked_internal_in_the_console_and_an_unbilled_one_can(operator, book):
    """An internal customer's usage is cost, never revenue: ticked on a customer with a subscription, "Is internal"
    would take its invoices out of Billed, Collected, MRR and revenue after the fact (the API's recording refuses
    the same mark)."""
    billed = CustomerFactory(book=book, external_id="billed")
    subscription_for(billed, status="active")
    url = f"/admin/customers/customer/{billed.id}/change/"
    resp = operator.post(url, posted_form(operator, url, is_internal="on"))
    assert resp.status_code == 200  # the form again, with the reason
    assert resp.context["adminform"].form.errors["is_internal"][0].startswith("This customer has a subscription")
    billed.refresh_from_db()
    assert not billed.is_internal
    developer = CustomerFactory(book=book, external_id="dev@acme.example.com")
    url = f"/admin/customers/customer/{developer.id}/change/"
    assert operator.post(url, posted_form(operator, url, is_internal="on")).status_code == 302
    developer.refresh_from_db()
    assert developer.is_internal
    resp = operator.post(url, {k: v for k, v in posted_form(operator, url).items() if k != "is_internal"})
    assert resp.status_code == 302  # clearing the mark is always allowed
    developer.refresh_from_db()
    assert not developer.is_internal


def test_a_signals_agent_is_shown_but_not_changed_in_the_console(operator, book):
    """Usage finds a signal by its agent and name: moved to another agent, the next records of its agent would make
    a new signal that no plan bills. The API refuses another agentId; the console shows the agent read-only."""
    signal = SignalFactory(book=book, agent=AgentFactory(book=book))
    other = AgentFactory(book=book)
    url = f"/admin/customers/signal/{signal.id}/change/"
    assert operator.get(url).context["adminform"].form.fields["agent"].disabled
    resp = operator.post(url, posted_form(operator, url, agent=str(other.id), name="renamed"))
    assert resp.status_code == 302
    signal.refresh_from_db()
    assert (signal.agent_id, signal.name) != (other.id, "renamed") and signal.name == "renamed"
    assert not operator.get("/admin/customers/signal/add/").context["adminform"].form.fields["agent"].disabled
