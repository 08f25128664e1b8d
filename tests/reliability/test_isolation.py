"""Isolation sweep: every /v1 route and method of the URL conf, asked about organization A's records (in A's
test book) by organization B's key and by A's own live key, must not see, change or reveal them.

Each route needs an entry in ROUTES saying how to create A's record and how to ask for it; a route without
one fails, naming it (add the entry when you add the route). The entry kinds:

- `Addressed`: the path names A's records. The others get the same 404 as for ids that exist nowhere; A's
  own key, sending the same request, gets `owner` (proof that the request was about real records).
- `Reads`: a read not addressed by id (lists, totals). What the others see does not change when A's
  `records` appear; what A's key sees does.
- `Writes`: a write addressed by its body. The others get `foreign` (404 where the body names A's ids; the
  success status where it repeats a value that is unique per book, which A's key gets `owner` 409 for) and
  leave `effect` (A's state) unchanged; A's key gets `owner` and changes it (unless `owner_changes=False`).
- `NotKeyScoped`: the route takes no organization's records by key (global catalog, webhooks, user
  sessions); `status` is what every API key gets, when that is fixed.

Whatever the kind, no answer to another key may contain the id of any record A has.
"""
import re
import uuid
from dataclasses import dataclass, field
from typing import Callable

import pytest
from django.core.cache import cache
from django.http import HttpResponse

from webhooks.models import WebhookEndpoint
from controls.models import Device
from customers.models import UsageEvent
from matters.models import MatterAttribution
from portal.models import PortalSession
from tests.reliability.world import JAN, PATH_RECORDS, UNKNOWN_MODEL, World
from tests.routes import api_routes

pytestmark = pytest.mark.django_db


@dataclass(frozen=True)
class Addressed:
    body: dict | list | None = None
    owner: int = 200
    records: dict = field(default_factory=dict)  # path parameter -> World attribute, instead of PATH_RECORDS


@dataclass(frozen=True)
class Reads:
    records: tuple[str, ...]
    query: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Writes:
    body: dict
    foreign: int
    owner: int
    records: tuple[str, ...] = ()  # World attributes to create first (those the body does not name)
    effect: Callable[[World], object] | None = None
    owner_changes: bool = True


@dataclass(frozen=True)
class NotKeyScoped:
    reason: str
    status: int | None = None


CUSTOMER_ALERT = {"customerId": "{customer.id}", "metric": "cost", "thresholdUsd": "10", "windowMode": "month",
                  "notifyEmail": "{caller_email}"}
ORG_CAP = {"scope": "org", "providerScope": "all", "amountUsd": "100", "period": "month", "mode": "track"}
SUBSCRIPTION = {"name": "Sub", "planId": "{plan.id}", "agentId": "{agent.id}", "customerId": "{customer.id}",
                "startDate": JAN[0]}
STRATEGY = {"name": "per call", "agentId": "{agent.id}", "chargeType": "usage", "signalId": "{signal.id}",
            "pricingModel": "flat", "rate": "0.1"}
POOL = {"subscription_id": "pool_subscription"}
JANUARY = {"startDate": "2025-01-01", "endDate": "2025-01-31"}
RECORD = {"customerExternalId": "{customer.externalId}", "agentCode": "{agent.agentCode}",
          "signalName": "{signal.shortName}", "model": "{service.canonical_name}", "modelProvider": "worldai",
          "inputTokens": 10, "idempotencyKey": "{event.idempotency_key}"}


def ledger(world):
    return sorted(UsageEvent.objects.filter(book=world.book).values_list("id", "usage_cost"))


ROUTES = {
    # accounts: the calling key itself, and user-session routes
    ("GET", "/v1/verify"): NotKeyScoped("answers about the calling key's own organization (tests/accounts)"),
    ("GET", "/v1/me/key"): NotKeyScoped("answers about the calling key itself (tests/accounts)"),
    ("GET", "/v1/users/me"): NotKeyScoped("user-session route", status=403),
    ("POST", "/v1/invitations"): NotKeyScoped("user-session route", status=403),
    ("POST", "/v1/invitations/accept/{token}"): NotKeyScoped("user-session route", status=403),
    # catalog: global
    ("GET", "/v1/services"): NotKeyScoped("the global catalog, the same for every organization (spec §4)"),
    ("GET", "/v1/services/{service_id}"): NotKeyScoped("the global catalog (spec §4)"),
    # customers, agents, signals, events
    ("GET", "/v1/customers"): Reads(("customer",)),
    ("POST", "/v1/customers"): Writes({"name": "Twin", "externalId": "{customer.externalId}"}, 201, 409),
    ("GET", "/v1/customers/{customer_id}"): Addressed(),
    ("PATCH", "/v1/customers/{customer_id}"): Addressed({"name": "Renamed"}),
    ("DELETE", "/v1/customers/{customer_id}"): Addressed(owner=204),
    ("GET", "/v1/agents"): Reads(("agent",)),
    ("POST", "/v1/agents"): Writes({"name": "Twin", "agentCode": "{agent.agentCode}"}, 201, 409),
    ("GET", "/v1/agents/{agent_id}"): Addressed(),
    ("PATCH", "/v1/agents/{agent_id}"): Addressed({"name": "Renamed"}),
    ("DELETE", "/v1/agents/{agent_id}"): Addressed(owner=204),
    ("GET", "/v1/signals"): Reads(("signal",), query={"agentId": "{agent.id}"}),
    ("POST", "/v1/signals"): Writes({"name": "calls", "agentId": "{agent.id}"}, 404, 201),
    ("POST", "/v1/signals/bulk"): Writes({"agentId": "{agent.id}", "signals": [{"name": "calls"}]}, 404, 201),
    ("GET", "/v1/signals/{signal_id}"): Addressed(),
    ("PATCH", "/v1/signals/{signal_id}"): Addressed({"name": "renamed"}),
    ("DELETE", "/v1/signals/{signal_id}"): Addressed(owner=204),
    ("GET", "/v1/events"): Reads(("event",), query={"customerId": "{customer.id}"}),
    ("GET", "/v1/events/export"): Reads(("event",), query={"format": "jsonl"}),
    ("POST", "/v1/events/map-model"): Writes(
        {"model": UNKNOWN_MODEL[0], "modelProvider": UNKNOWN_MODEL[1], "serviceId": "{service.id}"}, 201, 201,
        records=("unpriced_event",), effect=ledger),
    ("GET", "/v1/price-overrides"): Reads(("price_override",)),
    ("POST", "/v1/price-overrides"): Writes(
        {"modelProvider": "worldai", "discountPercent": 10, "effectiveFrom": "2025-01-01T00:00:00Z"}, 201, 409,
        records=("price_override",)),
    ("GET", "/v1/price-overrides/{override_id}"): Addressed(),
    ("DELETE", "/v1/price-overrides/{override_id}"): Addressed(),
    # billing
    ("POST", "/v1/usage/record"): Writes({"records": [RECORD]}, 200, 200, effect=ledger, owner_changes=False),
    ("GET", "/v1/pricing-plans"): Reads(("plan",)),
    ("POST", "/v1/pricing-plans"): Writes({"name": "Pro", "agentId": "{agent.id}"}, 404, 201),
    ("GET", "/v1/pricing-plans/{plan_id}"): Addressed(),
    ("PATCH", "/v1/pricing-plans/{plan_id}"): Addressed({"name": "Renamed"}),
    ("DELETE", "/v1/pricing-plans/{plan_id}"): Addressed(owner=204),
    ("POST", "/v1/pricing-plans/{plan_id}/agents"): Addressed({"agentId": "{spare_agent.id}"}, owner=201),
    ("DELETE", "/v1/pricing-plans/{plan_id}/agents/{agent_id}"): Addressed(owner=204),
    ("POST", "/v1/pricing-plans/{plan_id}/copy"): Addressed({}, owner=201),
    ("GET", "/v1/pricing-plans/{plan_id}/pricing-strategies"): Addressed(),
    ("POST", "/v1/pricing-plans/{plan_id}/pricing-strategies"): Addressed([STRATEGY], owner=201),
    ("PATCH", "/v1/pricing-plans/{plan_id}/pricing-strategies"): Addressed(
        {"strategies": {"new": [], "update": [{"id": "{strategy.id}", "rate": "0.3"}]}}),
    ("GET", "/v1/pricing-plans/{plan_id}/pricing-strategies/{strategy_id}"): Addressed(),
    ("PATCH", "/v1/pricing-plans/{plan_id}/pricing-strategies/{strategy_id}"): Addressed({"rate": "0.3"}),
    ("DELETE", "/v1/pricing-plans/{plan_id}/pricing-strategies/{strategy_id}"): Addressed(owner=204),
    ("GET", "/v1/subscriptions"): Reads(("subscription",)),
    ("POST", "/v1/subscriptions"): Writes(SUBSCRIPTION, 404, 201),
    ("GET", "/v1/subscriptions/{subscription_id}"): Addressed(),
    ("PATCH", "/v1/subscriptions/{subscription_id}"): Addressed({"name": "Renamed"}),
    ("PATCH", "/v1/subscriptions/{subscription_id}/invoice-dates"): Addressed({"billingDay": 5}),
    ("GET", "/v1/subscriptions/{subscription_id}/changelog"): Addressed(),
    ("GET", "/v1/invoices"): Reads(("invoice",)),
    ("POST", "/v1/invoices/generate"): Writes({"customerId": "{customer.id}", "subscriptionId": "{subscription.id}",
                                               "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]}, 404, 201),
    ("GET", "/v1/invoices/{invoice_id}"): Addressed(),
    ("PATCH", "/v1/invoices/{invoice_id}"): Addressed({"invoiceMemo": "Thanks"}),
    ("GET", "/v1/invoices/{invoice_id}/pdf"): Addressed(),
    ("POST", "/v1/invoices/{invoice_id}/send"): Addressed({}),
    ("POST", "/v1/invoices/{invoice_id}/void"): Addressed({}),
    ("POST", "/v1/invoices/{invoice_id}/payments/{payment_id}/refund"): Addressed(
        {}, owner=201, records={"invoice_id": "paid_invoice"}),
    ("POST", "/v1/webhooks/stripe"): NotKeyScoped(
        "no API key: Stripe-Signature authenticates it, and an event settles only an invoice of the books its "
        "livemode names (tests/billing/test_invoices_payments.py)"),
    # matters
    ("GET", "/v1/matters"): Reads(("matter",)),
    ("POST", "/v1/matters"): Writes({"matterNumber": "{matter.matterNumber}", "name": "Twin", "clientName": "X"},
                                    201, 409),
    ("GET", "/v1/matters/unassigned"): Reads(("event",)),
    ("POST", "/v1/matters/assign"): Writes({"eventId": "{event.id}", "matterId": "{matter.id}"}, 404, 201),
    ("GET", "/v1/matters/audit"): Reads(("event",), query={"startDate": "2025-01-01", "endDate": "2025-01-31"}),
    ("GET", "/v1/matters/{matter_id}"): Addressed(),
    ("PATCH", "/v1/matters/{matter_id}"): Addressed({"name": "Renamed"}),
    ("DELETE", "/v1/matters/{matter_id}"): Addressed(),
    ("GET", "/v1/matter-rules"): Reads(("rule",)),
    ("POST", "/v1/matter-rules"): Writes({"matterId": "{matter.id}", "agentCode": "any"}, 404, 201),
    ("POST", "/v1/matter-rules/apply"): Writes({}, 201, 201, records=("rule", "event"), effect=lambda world: list(
        MatterAttribution.objects.filter(event_id=world.event.id).values_list("matter_id", "source"))),
    ("PATCH", "/v1/matter-rules/{rule_id}"): Addressed({"priority": 5}),
    # jobs
    ("GET", "/v1/jobs/{job_id}"): Addressed(),
    ("DELETE", "/v1/matter-rules/{rule_id}"): Addressed(),
    # controls
    ("GET", "/v1/control/caps"): Reads(("cap",)),
    ("POST", "/v1/control/caps"): Writes(ORG_CAP, 201, 409, records=("cap",)),
    ("PATCH", "/v1/control/caps/{cap_id}"): Addressed({"amountUsd": "5"}),
    ("DELETE", "/v1/control/caps/{cap_id}"): Addressed(),
    ("GET", "/v1/control/spend"): Reads(("coding_event",), query={"customerExternalId": "{developer_email}"}),
    ("GET", "/v1/control/coverage"): Reads(("device",)),
    ("POST", "/v1/control/devices/heartbeat"): Writes(
        {"customerExternalId": "{developer_email}", "deviceId": "{device.deviceId}", "armed": False}, 200, 200,
        effect=lambda world: list(Device.objects.filter(book=world.book).values_list("device_id", "armed"))),
    ("GET", "/v1/control/check"): Reads(("cap", "coding_event"), query={"customerExternalId": "{developer_email}"}),
    ("GET", "/v1/customer-alerts"): Reads(("alert",)),
    ("POST", "/v1/customer-alerts"): Writes(CUSTOMER_ALERT, 404, 201),
    ("PATCH", "/v1/customer-alerts/{alert_id}"): Addressed({"thresholdUsd": "20"}),
    ("DELETE", "/v1/customer-alerts/{alert_id}"): Addressed(),
    # credit pools (the pool subscription's; parallel top-ups: test_concurrency.py)
    ("GET", "/v1/credit-balances"): Reads(("pool_subscription",)),
    ("GET", "/v1/subscriptions/{subscription_id}/credit-balance"): Addressed(records=POOL),
    ("POST", "/v1/subscriptions/{subscription_id}/credit-topup"): Addressed(
        {"units": "10", "idempotencyKey": "topup-{tag}"}, owner=201, records=POOL),
    ("POST", "/v1/subscriptions/{subscription_id}/credit-alerts-pause"): Addressed({"paused": True}, records=POOL),
    # plan changes: the other book's subscription is a 404 (withdrawing when nothing is scheduled is a 404 too)
    ("POST", "/v1/subscriptions/{subscription_id}/change-plan"): Addressed({"planId": "{plan.id}"}, owner=201),
    ("DELETE", "/v1/subscriptions/{subscription_id}/change-plan"): Addressed(owner=404),
    # analytics and revenue: the other books' figures do not move when A records usage
    ("GET", "/v1/analytics/usage"): Reads(("recorded_event",), query=JANUARY),
    ("GET", "/v1/analytics/cost"): Reads(("recorded_event",), query=JANUARY),
    ("GET", "/v1/analytics/mrr"): Reads(("subscription", "recorded_event"), query={"variant": "all"}),
    ("GET", "/v1/analytics/revenue"): Reads(("subscription", "recorded_event"), query=JANUARY),
    ("GET", "/v1/customers/{customer_id}/revenue"): Addressed(),
    ("GET", "/v1/subscriptions/{subscription_id}/revenue"): Addressed(),
    # webhooks (outbound)
    ("GET", "/v1/webhook-endpoints"): Reads(("webhook_endpoint",)),
    ("POST", "/v1/webhook-endpoints"): Writes({"url": "https://hooks.example.com/billing"}, 201, 201,
                                              effect=lambda world: sorted(WebhookEndpoint.objects.filter(
                                                  book=world.book).values_list("id", flat=True))),
    ("GET", "/v1/webhook-endpoints/{endpoint_id}"): Addressed(),
    ("PATCH", "/v1/webhook-endpoints/{endpoint_id}"): Addressed({"description": "Renamed"}),
    ("DELETE", "/v1/webhook-endpoints/{endpoint_id}"): Addressed(),
    ("POST", "/v1/webhook-endpoints/{endpoint_id}/rotate-secret"): Addressed({}),
    ("POST", "/v1/webhook-endpoints/{endpoint_id}/test"): Addressed({}, owner=202),
    ("POST", "/v1/webhook-endpoints/{endpoint_id}/replay"): Addressed({"since": JAN[0]}, owner=202),
    ("GET", "/v1/webhook-endpoints/{endpoint_id}/deliveries"): Addressed(),
    ("POST", "/v1/webhook-endpoints/{endpoint_id}/deliveries/{delivery_id}/resend"): Addressed({}, owner=202),
    # portal sessions
    ("GET", "/v1/portal-sessions"): Reads(("portal_session",)),
    ("POST", "/v1/portal-sessions"): Writes({"customerId": "{customer.id}"}, 404, 201, effect=lambda world: sorted(
        PortalSession.objects.filter(book=world.book).values_list("id", flat=True))),
    ("GET", "/v1/portal-sessions/{session_id}"): Addressed(),
    ("DELETE", "/v1/portal-sessions/{session_id}"): Addressed(owner=204),
}

URL_CONF_ROUTES = sorted({(method.upper(), path) for path, _, method in api_routes()}, key=lambda r: (r[1], r[0]))


# --------------------------------------------------------------------------- sending and reading

class Fill(dict):
    """`str.format_map` context: the caller's email, else a World attribute (created on first use)."""

    def __init__(self, world, caller_email):
        super().__init__(caller_email=caller_email)
        self.world = world

    def __missing__(self, name):
        return getattr(self.world, name)


def fill(template, context):
    if isinstance(template, str):
        return template.format_map(context)
    if isinstance(template, dict):
        return {key: fill(value, context) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(item, context) for item in template]
    return template


def send(client, method, path, body=None, query=None):
    if method == "GET":
        return read_whole(client.get(path, query or {}))
    return read_whole(getattr(client, method.lower())(path, body if body is not None else {}))


def read_whole(resp):
    """A streamed answer (the usage export) as one with its whole body, so that it is compared like any other."""
    if not getattr(resp, "streaming", False):
        return resp
    whole = HttpResponse(b"".join(resp.streaming_content), status=resp.status_code)
    for header, value in resp.items():
        whole[header] = value
    return whole


INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")


def seen(resp) -> tuple:
    """What a caller can observe of a response, minus the clock (timestamps such as asOf)."""
    return resp.status_code, resp.get("X-Total-Count"), INSTANT.sub("<instant>", resp.content.decode(errors="replace"))


def email_of(client) -> str:
    return client.key.membership.user.email


def record_ids(world) -> set[str]:
    """Ids of every book record the world created so far (the catalog entry is global)."""
    ids = set()
    for name, value in vars(world).items():
        if name == "service":
            continue
        record_id = getattr(value, "id", None) or getattr(value, "pk", None)
        if record_id is not None:
            ids.add(str(record_id))
    return ids


def assert_reveals_nothing(world, name, method, path, resp):
    leaked = [record_id for record_id in record_ids(world) if record_id in resp.content.decode(errors="replace")]
    assert not leaked, f"{method} {path} with {name}'s key shows ids of the other book's records: {leaked}"


# --------------------------------------------------------------------------- the sweep

def test_every_entry_is_a_route_of_the_url_conf():
    stale = sorted(set(ROUTES) - set(URL_CONF_ROUTES))
    assert not stale, f"isolation entries for routes that no longer exist: {stale}"


@pytest.mark.parametrize("method, path", URL_CONF_ROUTES, ids=[f"{m} {p}" for m, p in URL_CONF_ROUTES])
def test_route_keeps_other_books_out(method, path, client_for, other_org):
    entry = ROUTES.get((method, path))
    if entry is None:
        pytest.fail(f"{method} {path} has no entry in ROUTES (tests/reliability/test_isolation.py): say how to "
                    "create a record in one organization and request it from another.")
    owner = client_for()  # organization A, test book: the world's records live here
    others = {"organization B": client_for(organization=other_org),
              "A's live key": client_for(environment="live")}
    world = World(owner)
    if isinstance(entry, NotKeyScoped):
        if entry.status is not None:
            for name, client in {"A's test key": owner, **others}.items():
                resp = send(client, method, path.replace("{token}", "x" * 43))
                assert resp.status_code == entry.status, (name, resp.status_code, resp.content[:300])
        return
    {Addressed: check_addressed, Reads: check_reads, Writes: check_writes}[type(entry)](
        entry, method, path, world, owner, others)


def check_addressed(entry, method, path, world, owner, others):
    names = re.findall(r"{(\w+)}", path)
    url = path.format(**{name: getattr(world, entry.records.get(name, PATH_RECORDS[name])).id for name in names})
    nowhere = path.format(**{name: uuid.uuid4() for name in names})
    for name, client in others.items():
        body = fill(entry.body, Fill(world, email_of(client)))
        resp = send(client, method, url, body)
        assert resp.status_code == 404, f"{method} {path} with {name}'s key: {resp.status_code} {resp.content[:300]}"
        assert resp.json() == send(client, method, nowhere, body).json(), \
            f"{method} {path}: another book's record reads differently from a missing one"
        assert_reveals_nothing(world, name, method, path, resp)
    resp = send(owner, method, url, fill(entry.body, Fill(world, email_of(owner))))
    assert resp.status_code == entry.owner, f"owner's {method} {path}: {resp.status_code} {resp.content[:300]}"


def check_reads(entry, method, path, world, owner, others):
    callers = {**others, "A's test key": owner}
    query = fill(entry.query, Fill(world, email_of(owner)))
    before = {name: seen(send(client, method, path, query=query)) for name, client in callers.items()}
    for record in entry.records:
        getattr(world, record)
    cache.clear()  # reads kept for a while (credit balances: 30 s) are computed afresh, so a leak would show
    for name, client in others.items():
        resp = send(client, method, path, query=query)
        assert seen(resp) == before[name], f"{method} {path} with {name}'s key changed when the other book's " \
                                           f"records appeared: {resp.content[:400]}"
        assert_reveals_nothing(world, name, method, path, resp)
    after = seen(send(owner, method, path, query=query))
    assert after[0] == 200 and after != before["A's test key"], \
        f"owner's {method} {path} does not show its own {entry.records}: {after}"


def check_writes(entry, method, path, world, owner, others):
    for record in entry.records:
        getattr(world, record)
    bodies = {name: fill(entry.body, Fill(world, email_of(client))) for name, client in {**others, "A": owner}.items()}
    state = entry.effect(world) if entry.effect else None
    for name, client in others.items():
        resp = send(client, method, path, bodies[name])
        assert resp.status_code == entry.foreign, \
            f"{method} {path} with {name}'s key: {resp.status_code} {resp.content[:300]}"
        assert_reveals_nothing(world, name, method, path, resp)
        if entry.effect:
            assert entry.effect(world) == state, f"{method} {path} with {name}'s key changed the other book"
    resp = send(owner, method, path, bodies["A"])
    assert resp.status_code == entry.owner, f"owner's {method} {path}: {resp.status_code} {resp.content[:300]}"
    if entry.effect and entry.owner_changes:
        assert entry.effect(world) != state, f"owner's {method} {path} changed nothing: the probe proves nothing"
