"""No dead ends: an event stored with cost null is priced by a later catalog load, and the console says why
each unpriced event is unpriced (docs/decisions/catalog.md "Unpriced events")."""
from decimal import Decimal as D

import pytest
from django.core.management import call_command

from catalog.models import ServiceEntry
from accounts.models import Membership, User
from jobs.models import Job
from customers.models import EventStatus, UsageDailyRollup, UsageEvent
from customers.rollup import analytics_rollup_rebuild
from tests.factories import UsageEventFactory

pytestmark = pytest.mark.django_db


def record(api, **fields):
    body = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "answers", **fields}
    resp = api.post("/v1/usage/record", {"records": [body]})
    assert resp.status_code == 200, resp.json()
    return resp.json()


def test_cache_tokens_on_an_entry_without_cache_rates_are_priced_at_record_time(api):
    body = record(api, model="gpt-4o", modelProvider="openai", inputTokens=1000, outputTokens=500,
                  cacheWriteTokens=7000)
    assert body["failed"] == 0 and body["results"]["success"][0]["totalCostUsd"] == "0.025"


def unpriced_event(book, **fields):
    """An event stored unpriced under the rules before cache tokens billed at the input rate."""
    return UsageEventFactory(book=book, model="gpt-4o", model_provider="openai", input_tokens=1000,
                             output_tokens=500, cache_write_tokens=7000, usage_cost=None,
                             event_status=EventStatus.NEEDS_COST_BACKFILL, **fields)


def test_load_catalog_prices_the_unpriced_events_it_now_can(book, django_capture_on_commit_callbacks):
    waiting = unpriced_event(book)
    unknown = UsageEventFactory(book=book, model="no-such-model", model_provider="openai", input_tokens=10,
                                usage_cost=None, event_status=EventStatus.NEEDS_COST_BACKFILL)
    analytics_rollup_rebuild(book=book)  # factory rows bypass the ledger's backlog
    with django_capture_on_commit_callbacks(execute=True):
        call_command("load_catalog", stdout=open("/dev/null", "w"))
    waiting.refresh_from_db()
    unknown.refresh_from_db()
    assert (waiting.usage_cost, waiting.event_status) == (D("0.025"), EventStatus.PROCESSED)
    assert waiting.service == ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    assert (unknown.usage_cost, unknown.event_status) == (None, EventStatus.NEEDS_COST_BACKFILL)
    day = UsageDailyRollup.objects.get(book=book, grain=3, day=waiting.usage_date.date(),
                                       customer=waiting.customer)
    assert (day.cost, day.unpriced_count) == (D("0.025"), 0)


@pytest.fixture
def operator(client, org):
    user = User.objects.create_user(email="ops@acme.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def test_console_shows_why_each_unpriced_event_is_unpriced(operator, book):
    UsageEventFactory(book=book, model="no-such-model", model_provider="openai", input_tokens=10,
                      usage_cost=None, event_status=EventStatus.NEEDS_COST_BACKFILL)
    UsageEventFactory(book=book, model="eu/text-embedding-3-small", model_provider="azure", input_tokens=10,
                      output_tokens=5, usage_cost=None, event_status=EventStatus.NEEDS_COST_BACKFILL)
    unpriced_event(book)
    page = operator.get("/admin/customers/usageevent/").content.decode()
    assert "Why unpriced" in page
    assert "&#x27;no-such-model&#x27; from provider &#x27;openai&#x27; is not in the catalog" in page
    assert "has no catalog rate for its output tokens" in page
    assert "Priceable now with the current catalog" in page


def test_console_action_prices_again_what_the_catalog_can_price(operator, book, django_capture_on_commit_callbacks):
    waiting = unpriced_event(book)
    # The pricing is a job run after the action's commit (eagerly in the suite, as a worker would).
    with django_capture_on_commit_callbacks(execute=True):
        resp = operator.post("/admin/customers/usageevent/", {"action": "price_again",
                                                             "_selected_action": [str(waiting.id)]}, follow=True)
    assert resp.status_code == 200
    job = Job.objects.get(book=book)
    assert "its unpriced events are being priced with the current catalog in the background" in resp.content.decode()
    assert f'<a href="/admin/jobs/job/{job.pk}/change/">follow the job' in resp.content.decode()
    assert (job.kind, job.status, job.done, job.total, job.result) == ("cost_reprice", "succeeded", 1, 1,
                                                                        {"eventsPriced": 1})
    assert UsageEvent.objects.get(pk=waiting.pk).usage_cost == D("0.025")
