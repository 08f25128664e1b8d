"""Payments and refunds of invoices: the Stripe webhook, the pay-now page and the refund endpoint all record
money through `payment_record`, under the invoice's row lock.

- A payment is unique per book by the provider's payment id: a replayed notification changes nothing.
- `Invoice.amount_paid` is the net collected (payments minus refunds); a payable invoice becomes `paid` when
  it reaches the total, and a paid one `refunded` when refunds bring it back to zero.
- Money beyond the total (a second Checkout paid in another tab) is recorded all the same: the invoice stays
  `paid`, owes nothing (`amount_due` 0) and shows `amount_overpaid` until the surplus payment is refunded.
"""
import hmac
import logging
import re
import uuid
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from accounts.models import Environment
from billing import stripe_gateway
from billing.events import invoice_event, payment_event
from billing.models import PAYABLE, Invoice, InvoiceStatus, Payment, PaymentStatus, Refund
from billing.pay_links import pay_token_digest, pay_token_of
from billing.pricing.periods import local_date
from core.errors import BadRequest, Conflict, Forbidden, ServiceUnavailable
from core.money import CENTS_LIMIT, ZERO, from_minor_units, sum_exactly, to_minor_units
from core.scoping import get_owned, owned
from webhooks.models import EventType

logger = logging.getLogger("billing.payments")

Status = InvoiceStatus
STRIPE, LOCAL = "stripe", "local"
CHECKOUT_EVENTS = ("checkout.session.completed", "checkout.session.async_payment_succeeded")
# What a webhook's session may hold: an amount a cents column (14 digits, 2 places) holds, a currency code, a
# provider id as Stripe writes them that fits Payment.provider_payment_id.
MAX_AMOUNT_CENTS = 10**14 - 1
CURRENCY_CODE = re.compile(r"[A-Za-z]{3}")
PROVIDER_ID_LENGTH = 255
PROVIDER_ID = re.compile(rf"[A-Za-z0-9_]{{1,{PROVIDER_ID_LENGTH}}}")


def payment_record(*, invoice: Invoice, amount: Decimal, provider: str, provider_payment_id: str,
                   now: datetime, received_on: date | None = None) -> tuple[Payment, bool]:
    """Record money received for an invoice the caller holds locked; returns (payment, created).

    Money is recorded whatever the invoice's status (it was received); only a payable invoice moves, to
    `paid` once the net collected covers its total."""
    earlier = owned(Payment, invoice.book_id).filter(provider_payment_id=provider_payment_id).first()
    if earlier is not None:  # a replay (the unique constraint below settles a race)
        return earlier, False
    if invoice.amount_paid + amount >= CENTS_LIMIT:  # checked before the payment is stored: nothing changes
        raise BadRequest([f"amount: {amount} with the {invoice.amount_paid} already paid on invoice "
                          f"{invoice.invoice_number} is more than an invoice holds (below {CENTS_LIMIT:f})."])
    try:
        with transaction.atomic():
            payment = Payment.objects.create(book_id=invoice.book_id, invoice=invoice, amount=amount,
                                             provider=provider, provider_payment_id=provider_payment_id,
                                             received_on=received_on)
    except IntegrityError:
        return owned(Payment, invoice.book_id).get(provider_payment_id=provider_payment_id), False
    invoice.amount_paid += amount
    became_paid = invoice.status in PAYABLE and invoice.amount_paid >= invoice.total
    if became_paid:
        invoice.status, invoice.paid_at = Status.PAID, now
    invoice.save(update_fields=["amount_paid", "status", "paid_at", "updated_at"])
    payment_event(payment, EventType.PAYMENT_SUCCEEDED, now=now)
    if became_paid:
        invoice_event(invoice, EventType.INVOICE_PAID, now=now)
    if invoice.amount_overpaid > 0:
        logger.warning("invoice %s is overpaid by %s after payment %s (%s): refund the surplus", invoice.pk,
                       invoice.amount_overpaid, provider_payment_id, provider)
    return payment, True


RECEIVED = "manual"  # the provider of money received outside Stripe (a transfer, a cheque), recorded by an operator


@transaction.atomic
def payment_record_received(*, book, invoice_id, amount: Decimal, reference: str, now: datetime,
                            received_on: date | None = None) -> tuple[Payment, bool]:
    """Money received outside the payment provider (a bank transfer, a cheque), recorded by an operator against
    a sent, unpaid invoice; returns (payment, created). The transfer's reference is the payment's provider id, so
    recording the same reference again finds the payment already recorded instead of adding it twice.
    `received_on`: the day the money arrived (default: today in the subscription's time zone), never after today
    there; it is a record for reconciliation and moves no figure (the invoice is paid when it is recorded)."""
    invoice = get_owned(Invoice, book, invoice_id, queryset=owned(Invoice, book).select_for_update())
    reference = reference.strip()
    if not reference or len(reference) > PROVIDER_ID_LENGTH:
        raise BadRequest([f"reference: Must be 1 to {PROVIDER_ID_LENGTH} characters (the transfer's reference)."])
    today = local_date(now, invoice.subscription.timezone)
    if received_on is not None and received_on > today:
        raise BadRequest([f"receivedOn: Must not be after today ({today.isoformat()}, "
                          f"{invoice.subscription.timezone}): the day the money arrived."])
    recorded = owned(Payment, book).filter(provider_payment_id=reference).first()
    if recorded is None:
        if invoice.status not in PAYABLE:
            raise BadRequest(f"Invoice {invoice.invoice_number} is {invoice.status}: payments are recorded against "
                             f"sent invoices that are not paid.")
        if amount <= 0:
            raise BadRequest(["amount: Must be more than 0."])
        # A concurrent recording of the reference loses the insert and finds the winner's payment.
        recorded, created = payment_record(invoice=invoice, amount=amount, provider=RECEIVED,
                                           provider_payment_id=reference, now=now, received_on=received_on or today)
        if created:
            return recorded, True
    if recorded.invoice_id != invoice.pk:
        raise Conflict(f"The reference {reference} is already recorded as a payment of invoice "
                       f"{recorded.invoice.invoice_number}.")
    return recorded, False


# --------------------------------------------------------------------------- Stripe webhook

@dataclass(frozen=True)
class WebhookOutcome:
    handled: bool
    detail: str
    payment: Payment | None = None
    invoice: Invoice | None = None


def _event_object(event: dict):
    """The event's `data.object` (None when the event holds none)."""
    data = event.get("data")
    return data.get("object") if isinstance(data, dict) else None


def _invoice_id(session: dict):
    metadata = session.get("metadata") if isinstance(session.get("metadata"), dict) else {}
    try:
        return uuid.UUID(str(metadata.get("invoiceId")))
    except ValueError:
        return None


def _checked_session(session: dict) -> tuple[int, str]:
    """(amount in cents, provider payment id) of a paid session that names one of our invoices, checked before
    anything is read from the database; a value no Stripe event holds is a 400 naming it (nothing changes)."""
    amount_cents = session.get("amount_total")
    if amount_cents.__class__ is not int or not 0 <= amount_cents <= MAX_AMOUNT_CENTS:
        raise BadRequest([f"data.object.amount_total: Must be a whole number of cents from 0 to {MAX_AMOUNT_CENTS}."])
    currency = session.get("currency")
    if currency is not None and not (isinstance(currency, str) and CURRENCY_CODE.fullmatch(currency)):
        raise BadRequest(["data.object.currency: Must be a three-letter ISO 4217 currency code."])
    provider_payment_id = session.get("payment_intent") or session.get("id")
    if not (isinstance(provider_payment_id, str) and PROVIDER_ID.fullmatch(provider_payment_id)):
        raise BadRequest(["data.object.payment_intent: Must be a Stripe id (letters, digits and underscores, "
                          f"at most {PROVIDER_ID_LENGTH})."])
    return amount_cents, provider_payment_id


def stripe_event_handle(event: dict, *, now: datetime) -> WebhookOutcome:
    """A verified Stripe event. A completed, paid Checkout session whose `metadata.invoiceId` names an
    invoice records `amount_total` (cents) under its `payment_intent`; other events and sessions are
    acknowledged and ignored (Stripe would retry an error for days). A session of ours holding an amount,
    currency or id no Stripe event holds is a 400 and changes nothing."""
    if event.get("type") == CHARGE_REFUNDED:
        return _charge_refunded(event, now=now)
    if event.get("type") not in CHECKOUT_EVENTS:
        return WebhookOutcome(False, f"event type {event.get('type')!r} is not handled")
    session = _event_object(event)
    if not isinstance(session, dict):
        return WebhookOutcome(False, "the event has no data.object")
    if session.get("payment_status", "paid") != "paid":
        return WebhookOutcome(False, "the session is not paid yet (an async payment method)")
    invoice_id = _invoice_id(session)
    if invoice_id is None:  # another integration's session on the same Stripe account
        return WebhookOutcome(False, "the session names no invoice")
    amount_cents, provider_payment_id = _checked_session(session)
    if amount_cents == 0:
        return WebhookOutcome(False, "the session collected nothing (amount_total 0)")
    with transaction.atomic():
        # The signed event names the invoice; its book follows from it (a webhook carries no API key).
        # `of`: the invoice's row alone; FOR UPDATE on the book's row as well would hold up every insert that refers to
        # the book (their foreign-key checks) until this commits.
        invoice = (Invoice.objects.select_for_update(of=("self",)).select_related("book").filter(pk=invoice_id)
                   .first())
        if invoice is None:
            return WebhookOutcome(False, "no such invoice")
        if "livemode" in event and event["livemode"] is not invoice.book.livemode:
            # A test-mode payment never settles a live invoice, nor the reverse. Stripe's events always say which;
            # a signed event that does not is the sender's own, and the invoice it names decides.
            return WebhookOutcome(False, "the event's livemode does not match the invoice's books")
        if str(session.get("currency", invoice.currency)).lower() != invoice.currency:
            return WebhookOutcome(False, f"the session's currency is not {invoice.currency}")
        payment, created = payment_record(invoice=invoice, amount=from_minor_units(amount_cents), provider=STRIPE,
                                          provider_payment_id=provider_payment_id, now=now)
    detail = "payment recorded" if created else "payment already recorded"
    if invoice.amount_overpaid > 0:
        # Shown in Stripe's webhook log, where an operator reconciling the two charges looks first.
        detail += (f"; the invoice is {invoice.status} and holds {invoice.amount_overpaid} (refund the payment)"
                   if invoice.status in (Status.VOID, Status.REFUNDED)
                   else f"; the invoice is overpaid by {invoice.amount_overpaid} (refund the surplus payment)")
    return WebhookOutcome(True, detail, payment, invoice)


# --------------------------------------------------------------------------- pay-now page

def invoice_for_pay_token(token: str) -> Invoice | None:
    """The invoice a pay-now link opens (any book: the token alone identifies it), found by digest and compared
    again in constant time; None for an unknown token."""
    digest = pay_token_digest(token)
    invoice = (Invoice.objects.select_related("book__organization", "customer", "subscription")
               .filter(pay_token_digest=digest).first())
    if invoice is None or not hmac.compare_digest(invoice.pay_token_digest, digest):
        return None
    # The token is an HMAC under SECRET_KEY: one made under a key rotated since no longer opens anything (a
    # leaked key's links are retired by rotating it; the next send mints a new link).
    if not hmac.compare_digest(pay_token_of(invoice, invoice.pay_token_nonce), token):
        return None
    return invoice


def checkout_url(invoice: Invoice, *, pay_url: str) -> str:
    """A Stripe Checkout session for what is still due; `stripe_gateway.PaymentRefused` for an amount Stripe does
    not take (below its minimum charge, above its maximum: Stripe is not asked) or a session it refuses."""
    return stripe_gateway.checkout_session_url(
        invoice_id=str(invoice.pk), title=f"Invoice {invoice.invoice_number}",
        amount_cents=to_minor_units(invoice.amount_due), currency=invoice.currency,
        customer_email=invoice.customer.email, success_url=f"{pay_url}?checkout=success",
        cancel_url=f"{pay_url}?checkout=cancelled", livemode=invoice.book.livemode)


class LocalCheckoutDisabled(Forbidden):
    code, code_shown = "local_checkout_disabled", True


def local_checkout_enabled() -> bool:
    """The development "mark as paid" checkout exists only when PAYMENTS_LOCAL_CHECKOUT is on and there is no
    STRIPE_SECRET_KEY; a missing key alone never enables it (contract: Payments without Stripe)."""
    return settings.PAYMENTS_LOCAL_CHECKOUT and not stripe_gateway.is_configured()


def _pay_due_locally(invoices, *, attempt: uuid.UUID, now: datetime) -> Invoice | None:
    """The development checkout: pay what is due on the one invoice of `invoices`, recorded like a webhook
    payment. `attempt` comes from the page's form, so a double submit records one payment. Refused
    (`LocalCheckoutDisabled`, nothing written) unless `local_checkout_enabled()`."""
    if not local_checkout_enabled():
        raise LocalCheckoutDisabled("Online payment is not configured on this deployment; the local checkout is "
                                    "off (PAYMENTS_LOCAL_CHECKOUT).")
    with transaction.atomic():
        invoice = invoices.select_for_update().first()
        if invoice is not None and invoice.status in PAYABLE and invoice.amount_due > 0:
            payment_record(invoice=invoice, amount=invoice.amount_due, provider=LOCAL,
                           provider_payment_id=f"local_{attempt}", now=now)
    return invoice


def invoice_pay_locally(*, token: str, attempt: uuid.UUID, now: datetime) -> Invoice | None:
    """The pay-now link's development checkout."""
    return _pay_due_locally(Invoice.objects.filter(pay_token_digest=pay_token_digest(token)), attempt=attempt,
                            now=now)


def customer_invoice_pay_locally(*, book, customer_id, invoice_id, attempt: uuid.UUID,
                                 now: datetime) -> Invoice | None:
    """The customer portal's development checkout: only an invoice of that customer."""
    return _pay_due_locally(owned(Invoice, book).filter(pk=invoice_id, customer_id=customer_id), attempt=attempt,
                            now=now)


# A refund made on Stripe's side (its dashboard, a support agent), or one made here whose answer was lost.
CHARGE_REFUNDED = "charge.refunded"
MADE_AT_STRIPE = "Refunded at Stripe (charge.refunded)"


def _charge_refunded(event: dict, *, now: datetime) -> WebhookOutcome:
    """`charge.refunded`: the refunds of the charge of one of our Stripe payments (its `payment_intent`) that are not
    recorded yet, each recorded under its Stripe id ("Refunded at Stripe"): the ids the charge lists, else those
    Stripe lists for it (with STRIPE_SECRET_KEY; a 503 when Stripe does not answer, which Stripe sends again). By id,
    a refund made through this service is recorded once whichever of the two writes it first, and a retry after a
    lost answer finds it recorded. Without STRIPE_SECRET_KEY no refund goes through Stripe from here, and the charge's
    `amount_refunded` less what the payment recorded refunded is recorded as one refund. A charge of no payment of
    ours is acknowledged and ignored."""
    charge = _event_object(event)
    if not isinstance(charge, dict):
        return WebhookOutcome(False, "the event has no data.object")
    payment_intent = charge.get("payment_intent")
    if not (isinstance(payment_intent, str) and PROVIDER_ID.fullmatch(payment_intent)):
        return WebhookOutcome(False, "the charge names no payment intent")
    # Another integration's charge on the same Stripe account is none of ours, whatever it holds.
    payments = Payment.objects.filter(provider=STRIPE, provider_payment_id=payment_intent)
    if isinstance(event.get("livemode"), bool):  # a test-mode refund never moves a live book's payment
        live = Q(invoice__book__environment=Environment.LIVE)
        payments = payments.filter(live if event["livemode"] else ~live)
    found = list(payments.values_list("pk", "invoice_id")[:2])
    if not found:
        return WebhookOutcome(False, "no payment of this charge")
    if len(found) > 1:  # ids are unique per book only: which book's payment Stripe refunded is not said
        logger.warning("charge.refunded for %s matches payments of several books; none recorded", payment_intent)
        return WebhookOutcome(False, "the charge's payment intent names payments of several books")
    refunds = _charge_refunds_listed(charge)
    [(payment_pk, invoice_pk)] = found
    with transaction.atomic():
        # The invoice first, as every writer of payments locks it.
        invoice = Invoice.objects.select_for_update(of=("self",)).select_related("book").get(pk=invoice_pk)
        payment = Payment.objects.select_for_update().get(pk=payment_pk)
        if refunds is None:  # no refund went through Stripe from here: the difference is Stripe's own
            more = min(from_minor_units(_refunded_cents(charge)), payment.amount) - payment.refunded_amount
            new = [(None, more)] if more > 0 else []
        else:
            known = set(owned(Refund, invoice.book_id).filter(provider_refund_id__in=[rid for rid, _ in refunds])
                        .values_list("provider_refund_id", flat=True))
            new = [(rid, from_minor_units(cents)) for rid, cents in refunds if rid not in known and cents > 0]
        recorded = ZERO
        for refund_id, amount in new:
            amount = min(amount, payment.refundable)  # never past the payment (its check constraint referees too)
            if amount <= 0:
                logger.warning("refund %s at Stripe goes past payment %s; not recorded", refund_id, payment.pk)
                continue
            Refund.objects.create(book_id=invoice.book_id, payment=payment, amount=amount, reason=MADE_AT_STRIPE,
                                  provider_refund_id=refund_id)
            _refund_apply(invoice, payment, amount, now=now)
            recorded += amount
    if not recorded:
        return WebhookOutcome(True, "refund already recorded", payment, invoice)
    return WebhookOutcome(True, f"refund of {recorded} made at Stripe recorded", payment, invoice)


def _refunded_cents(charge: dict) -> int:
    cents = charge.get("amount_refunded")
    if cents.__class__ is not int or not 0 <= cents <= MAX_AMOUNT_CENTS:
        raise BadRequest([f"data.object.amount_refunded: Must be a whole number of cents from 0 to "
                          f"{MAX_AMOUNT_CENTS}."])
    return cents


def _charge_refunds_listed(charge: dict) -> list[tuple[str, int]] | None:
    """The charge's refunds as (id, cents): as the event lists them, else as Stripe lists them (a 503 when it does
    not answer: Stripe sends the event again); None without STRIPE_SECRET_KEY (nothing to ask, and no refund went
    through Stripe from here)."""
    listed = charge.get("refunds")
    data = listed.get("data") if isinstance(listed, dict) else None
    if isinstance(data, list) and not listed.get("has_more") and all(
            isinstance(item, dict) and isinstance(item.get("id"), str) and PROVIDER_ID.fullmatch(item["id"])
            and item.get("amount").__class__ is int and 0 <= item["amount"] <= MAX_AMOUNT_CENTS for item in data):
        return [(item["id"], item["amount"]) for item in data if item.get("status", "succeeded") == "succeeded"]
    if not settings.STRIPE_SECRET_KEY:
        return None
    charge_id = charge.get("id")
    if not (isinstance(charge_id, str) and PROVIDER_ID.fullmatch(charge_id)):
        raise BadRequest(["data.object.id: Must be a Stripe id (letters, digits and underscores)."])
    try:
        return stripe_gateway.charge_refunds(charge_id=charge_id)
    except stripe_gateway.PaymentProviderError:
        raise ServiceUnavailable("Stripe did not answer the list of the charge's refunds; nothing was recorded. "
                                 "Stripe sends the event again.", headers={"Retry-After": "60"})


# --------------------------------------------------------------------------- refunds

@transaction.atomic
def refund_create(*, book, invoice_id, payment_id, now: datetime, amount: Decimal | None = None,
                  reason: str = "") -> Refund:
    """Refund part or all of a payment (default: what is left of it). Records are kept: the payment's
    refunded amount grows and the invoice's net collected shrinks; a paid invoice whose payments are all
    refunded becomes `refunded`. With STRIPE_SECRET_KEY, Stripe refunds a Stripe payment first."""
    invoice = get_owned(Invoice, book, invoice_id, queryset=owned(Invoice, book).select_for_update())
    payment = get_owned(Payment, book, payment_id,
                        queryset=owned(Payment, book).filter(invoice=invoice).select_for_update())
    refundable = payment.refundable
    if refundable <= 0:
        raise BadRequest(f"Payment {payment.pk} is refunded in full already.")
    amount = refundable if amount is None else amount
    if amount <= 0 or amount > refundable:
        raise BadRequest([f"amount: Must be more than 0 and at most {refundable} (what is left of the payment)."])
    refund = Refund(book=book, payment=payment, amount=amount, reason=reason)
    if settings.STRIPE_SECRET_KEY and payment.provider == STRIPE:
        # Refunds recorded from Stripe's events (made at Stripe, or made here with their answer lost) are left out
        # of the key: a retry after a lost answer sends the key it was first sent with, and Stripe refunds once.
        made_here = payment.refunded_amount - sum_exactly(
            payment.refunds.filter(reason=MADE_AT_STRIPE).values_list("amount", flat=True))
        # A retried request refunds once at Stripe; the key leaves the amount out, so a refund of another amount
        # after one whose answer was lost is refused by Stripe rather than made a second time.
        provider_refund_id = stripe_gateway.refund(payment_intent=payment.provider_payment_id,
                                                   amount_cents=to_minor_units(amount),
                                                   idempotency_key=f"refund-{payment.pk}-{made_here}")
        # Stripe's event may have recorded this very refund already (this key's first try, its answer lost): it is
        # this request's refund, made here, and counts in the next refund's key.
        recorded = owned(Refund, book).filter(provider_refund_id=provider_refund_id).first()
        if recorded is not None:
            recorded.reason = reason
            recorded.save(update_fields=["reason", "updated_at"])
            return recorded
        refund.provider_refund_id = provider_refund_id
    refund.save()
    _refund_apply(invoice, payment, amount, now=now)
    return refund


def _refund_apply(invoice: Invoice, payment: Payment, amount: Decimal, *, now: datetime) -> None:
    """A refund of `amount` recorded: the payment's refunded amount grows, the invoice's net collected shrinks, and a
    paid invoice whose payments are all refunded becomes `refunded`. Both rows held by the caller."""
    payment.refunded_amount += amount
    payment.status = PaymentStatus.REFUNDED if payment.refunded_amount == payment.amount \
        else PaymentStatus.PARTIALLY_REFUNDED
    payment.save(update_fields=["refunded_amount", "status", "updated_at"])
    invoice.amount_paid -= amount
    became_refunded = invoice.status == Status.PAID and invoice.amount_paid <= ZERO
    if became_refunded:
        invoice.status = Status.REFUNDED
    invoice.save(update_fields=["amount_paid", "status", "updated_at"])
    payment_event(payment, EventType.PAYMENT_REFUNDED, now=now)
    if became_refunded:
        invoice_event(invoice, EventType.INVOICE_REFUNDED, now=now)
