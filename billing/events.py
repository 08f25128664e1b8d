"""Billing's outbound events (webhooks, docs/webhooks.md): each written inside the transaction of the
change it reports, its `data` what the API's GET answers for the object at that moment."""
from datetime import datetime

from billing.models import Invoice, Payment, Subscription
from billing.selectors.credit_pools import CreditBalance
from billing.selectors.invoices import invoice_get
from billing.serializers.credit_pools import CreditBalanceOut
from billing.serializers.invoices import InvoiceOut, PaymentOut
from billing.serializers.subscriptions import SubscriptionOut
from core.scoping import owned
from webhooks.events import emit
from webhooks.models import EventType


def invoice_event(invoice: Invoice, event_type: str, *, now: datetime | None = None) -> None:
    """`invoice.*`: the invoice as `GET /v1/invoices/{id}` shows it."""
    full = invoice_get(book=invoice.book_id, invoice_id=invoice.pk)
    emit(invoice.book_id, event_type, InvoiceOut(full).data, now=now)


def payment_event(payment: Payment, event_type: str, *, now: datetime | None = None) -> None:
    """`payment.*`: the payment as the invoice's `payments` list shows it, with its `invoiceId`."""
    payment = owned(Payment, payment.book_id).prefetch_related("refunds").get(pk=payment.pk)
    emit(payment.book_id, event_type, {**PaymentOut(payment).data, "invoiceId": str(payment.invoice_id)}, now=now)


def subscription_event(subscription: Subscription, event_type: str, *, now: datetime | None = None) -> None:
    """`subscription.*`: the subscription as `GET /v1/subscriptions/{id}` shows it."""
    emit(subscription.book_id, event_type, subscription_data(subscription), now=now)


def subscription_data(subscription: Subscription) -> dict:
    return SubscriptionOut(owned(Subscription, subscription.book_id).get(pk=subscription.pk)).data


def credit_pool_threshold_crossed(balance: CreditBalance, *, stage: int, passed: list[int],
                                  now: datetime | None = None) -> None:
    """`credit_pool.threshold_crossed`: the pool's balance as `GET /v1/credit-balances` shows it, the highest
    stage newly passed (50, 80, 95 or 100 for empty) and every stage passed with it."""
    data = {**CreditBalanceOut(balance).data, "stage": "empty" if stage == 100 else stage,
            "stagesPassed": ["empty" if each == 100 else each for each in sorted(passed)]}
    emit(balance.subscription.book_id, EventType.CREDIT_POOL_THRESHOLD_CROSSED, data, now=now)
