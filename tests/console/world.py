"""One row of every model the console registers, in one book, written with the ORM: what the scoping tests try to
open from another organization. A model registered in the console without a row here fails those tests."""
import secrets
from datetime import datetime, timedelta, timezone
from decimal import Decimal

from billing.models import (CreditGrant, CreditPoolAlert, Invoice, Payment, Refund, SubscriptionChange)
from catalog.models import ModelAlias, PriceOverride, ServiceEntry
from accounts.models import ApiRequestLog, Invitation
from accounts.services import api_key_mint, member_ensure
from jobs.models import Job
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent
from controls.models import CustomerAlert, CustomerAlertFiring, Device, Notification, SpendCap, SpendCapAlert
from customers.models import UsageDailyRollup
from customers.rollup import analytics_rollup_catch_up
from matters.models import MatterAttribution
from portal.models import PortalSession
from tests.factories import (CustomerFactory, MatterFactory, MatterRuleFactory, PlanAgentFactory, SignalFactory,
                             StrategyFactory, SubscriptionFactory, UsageEventFactory)

AT = datetime(2025, 6, 10, 12, 0, tzinfo=timezone.utc)
JUNE = (datetime(2025, 6, 1, tzinfo=timezone.utc), datetime(2025, 7, 1, tzinfo=timezone.utc))


def rollup_row(book) -> UsageDailyRollup:
    """A rollup row of the book, as the catch-up writes it from the book's recorded events."""
    analytics_rollup_catch_up(book_id=book.pk)
    return UsageDailyRollup.objects.filter(book=book).order_by("grain", "day").first()


def populate(book, tag: str) -> dict:
    """model -> one of its rows in `book`; names carry `tag` so a page showing one is easy to spot."""
    organization = book.organization
    membership = member_ensure(organization=organization, email=f"{tag}-member@example.com", role="owner")
    key, _ = api_key_mint(membership=membership, key_type="secret", environment=book.environment, name=f"{tag} key")
    customer = CustomerFactory(book=book, name=f"{tag} customer", external_id=f"{tag}-customer",
                               email=f"billing@{tag}.example.com")
    signal = SignalFactory(book=book, name=f"{tag}-signal", agent__name=f"{tag} agent",
                           agent__agent_code=f"{tag}-agent")
    agent = signal.agent
    event = UsageEventFactory(book=book, customer=customer, signal=signal, model=f"{tag}-model", model_provider="acme",
                              usage_cost=None, event_status="NEEDS_COST_BACKFILL", usage_date=AT)
    plan_agent = PlanAgentFactory(book=book, agent=agent, plan__name=f"{tag} plan")
    plan = plan_agent.plan
    strategy = StrategyFactory(book=book, plan=plan, agent=agent, name=f"{tag} fee")
    subscription = SubscriptionFactory(book=book, plan=plan, agent=agent, customer=customer, name=f"{tag} subscription")
    invoice = Invoice.objects.create(book=book, customer=customer, subscription=subscription, status="issued",
                                     invoice_number=f"{tag.upper()}-1", period_start=JUNE[0], period_end=JUNE[1],
                                     total=Decimal("10.00"))
    payment = Payment.objects.create(book=book, invoice=invoice, amount=Decimal("10.00"), provider=f"{tag}-pay",
                                     provider_payment_id=f"{tag}-payment")
    matter = MatterFactory(book=book, matter_number=f"{tag.upper()}-M1", name=f"{tag} matter")
    cap = SpendCap.objects.create(book=book, scope="dev", scope_value=f"{tag}@example.com", amount_usd=1,
                                  period="month", mode="track", created_by_user_id="x")
    alert = CustomerAlert.objects.create(book=book, customer=customer, metric="cost", threshold_usd=1,
                                         window_mode="month", recipient_email=f"ops@{tag}.example.com",
                                         created_by_user_id="x")
    firing = CustomerAlertFiring.objects.create(book=book, alert=alert, window_key=f"{tag}-2025-06",
                                                window_start=JUNE[0], window_end=JUNE[1], customer=customer,
                                                metric="cost", threshold_usd=1, value_usd=2,
                                                recipient_email=f"ops@{tag}.example.com")
    endpoint = WebhookEndpoint.objects.create(book=book, url=f"https://{tag}.example.com/hooks", secret="whsec_AAAA",
                                              description=f"{tag} hooks")
    webhook_event = WebhookEvent.objects.create(book=book, type="invoice.paid", data_json=f'{{"id": "{tag}-invoice"}}')
    delivery = WebhookDelivery.objects.create(book=book, endpoint=endpoint, event=webhook_event, status="failed",
                                              attempts=1)
    rows = [
        endpoint, webhook_event, delivery,
        WebhookAttempt.objects.create(book=book, delivery=delivery, number=1, response_status=500,
                                      response_body=f"{tag} error", latency_ms=12),
        organization, membership.user, membership, key, customer, agent, signal, event, plan, plan_agent, strategy,
        subscription, invoice, payment, matter, cap, alert, firing,
        ApiRequestLog.objects.create(organization=organization, api_key=key, method="GET", path=f"/v1/{tag}",
                                     status=200, created_at=AT),
        Invitation.objects.create(organization=organization, email=f"invited@{tag}.example.com",
                                  digest=secrets.token_hex(32), expires_at=AT + timedelta(days=7)),
        ModelAlias.objects.create(book=book, model=f"{tag}-alias", model_provider="acme",
                                  service=ServiceEntry.objects.filter(is_active=True).first()),
        PriceOverride.objects.create(book=book, model_provider=f"{tag}-provider", discount_percent=10,
                                     effective_from=AT, note=f"{tag} agreement", created_by="api-key:console"),
        rollup_row(book),
        MatterRuleFactory(matter=matter, agent_code=f"{tag}-agent"),
        MatterAttribution.objects.create(book=book, event=event, matter=matter, source="rule"),
        SubscriptionChange.objects.create(book=book, subscription=subscription, kind="created",
                                          summary=f"{tag} subscription created"),
        CreditGrant.objects.create(book=book, subscription=subscription, kind="topup", units=5, granted_at=AT,
                                   idempotency_key=f"{tag}-topup"),
        CreditPoolAlert.objects.create(book=book, subscription=subscription, period_start=JUNE[0], period_end=JUNE[1],
                                       stage=50, outcome="emailed", used_percent=50, remaining_units=50),
        Refund.objects.create(book=book, payment=payment, amount=Decimal("1.00"), reason=f"{tag} refund"),
        SpendCapAlert.objects.create(book=book, cap=cap, window_start=JUNE[0], window_end=JUNE[1],
                                     threshold_percent=50, amount_usd=1, spent_usd=Decimal("0.5")),
        Device.objects.create(book=book, customer_external_id=f"{tag}@example.com", device_id=f"{tag}-laptop",
                              armed=True, last_seen_at=AT),
        Notification.objects.create(book=book, title=f"{tag} notice", body="Over the threshold",
                                    link="/admin/", alert=alert, firing=firing),
        PortalSession.objects.create(book=book, customer=customer, token_digest=secrets.token_hex(32),
                                     expires_at=AT + timedelta(hours=1)),
        Job.objects.create(book=book, kind="cost_reprice", status="failed", done=3, total=7,
                           error=f"{tag} job failed"),
    ]
    return {type(row): row for row in rows}
