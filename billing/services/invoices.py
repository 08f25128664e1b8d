"""Invoices: generation from the ledger and the pricing engine, drafts edited and re-priced, finalization
(by send or at the end of the period), void, and the scheduled jobs (finalize, overdue).

Rules callers rely on (docs/decisions/invoices.md):
- one live (non-void) invoice per subscription and period, and periods of one subscription never overlap;
- an invoice captures its pricing terms when first generated and keeps them (contract: "Invoices keep what
  was reviewed"); regenerating a draft, and the end-of-period job before it issues, refresh its usage;
  send issues exactly what the draft shows;
- numbers are taken from a per-book counter in the generating transaction: consecutive, never reused;
- every check-then-act locks its rows first: subscription, then invoice, then the number counter.
"""
import logging
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import DatabaseError, transaction
from django.db.models import F, Q

from accounts.book_generations import batches_in_flight_wait
from billing.events import invoice_event
from billing.invoice_documents import InvoiceEmail, InvoiceView, parties_document, send_invoice_email
from billing.pay_links import live_pay_token, pay_token_digest, pay_token_of, pay_url
from billing.pricing.lines import (billing_window, claims_counted_by, claims_document, invoice_terms, period_claims,
                                   priced_lines, totals)
from billing.models import Invoice, InvoiceCounter, InvoiceLine, InvoiceStatus, Subscription
from billing.pricing.periods import local_date, local_midnight
from billing.services.credit_pools import credit_pools_follow_claims, customer_pools_lock
from billing.pricing.terms import day_instant, effective_end, period_end_grown_back, period_in_force
from core import clock
from core.database import retried_on_deadlock, retry_while_reconnecting
from core.errors import BadRequest, Conflict, NotFound, Unprocessable
from core.jobs import BookFailures
from core.money import CENTS_LIMIT
from core.scoping import get_owned, owned
from webhooks.models import EventType
from customers.models import Customer
from customers.partitions import archived_overlapping, archived_spans

logger = logging.getLogger("billing.invoices")

Status = InvoiceStatus
UNSENDABLE = (Status.PAID, Status.VOID, Status.REFUNDED)
SETTINGS_FIELDS = ("discount_percent", "discount_fixed", "tax_percent")


def _pay_token(invoice: Invoice) -> str:
    """The invoice's live pay token (its link stays the same across resends), or a new one when it has none."""
    token = live_pay_token(invoice)
    if token is not None:
        return token
    invoice.pay_token_nonce = secrets.token_urlsafe(24)
    token = pay_token_of(invoice, invoice.pay_token_nonce)
    invoice.pay_token_digest = pay_token_digest(token)
    invoice.save(update_fields=["pay_token_digest", "pay_token_nonce", "updated_at"])
    return token


# Never voided: its payments are refunded instead (invoice_void). A refunded invoice, its money given back, is voided
# like an unpaid one, so that its period can be billed again.
NEVER_VOIDED = (Status.PAID,)


def void_first(invoice: Invoice) -> str:
    """How to take a finalized invoice out of the way, as a refusal says it: void it, once its payments are
    refunded; a paid invoice is never voided (invoice_void)."""
    if invoice.status in NEVER_VOIDED:
        return "a paid invoice is never voided"
    if invoice.amount_paid > 0:
        return "refund its payments and void it first"
    return "void it first"


def _invoice_locked(book, invoice_id) -> Invoice:
    return get_owned(Invoice, book, invoice_id, queryset=owned(Invoice, book).select_for_update(of=("self",))
                     .select_related("subscription", "customer"))


# --------------------------------------------------------------------------- generate

def _requested_period(subscription: Subscription, start, end, *, now: datetime) -> tuple[datetime, datetime]:
    """The window asked for, or the subscription's current period (its first one while upcoming)."""
    if (start is None) != (end is None):
        raise BadRequest(["billingPeriodStart, billingPeriodEnd: Send both, or neither for the current period."])
    if start is None:
        stored_end = subscription.current_period_end
        if subscription.current_period_start is not None and (stored_end is None or now < stored_end):
            return subscription.current_period_start, stored_end
        # Not stored yet, or ended and not rolled forward yet (the scheduled job rolls it, every few minutes or, with
        # no scheduler running, never): the period in force now, not one already past.
        period = period_in_force(subscription, now)
        if period is None:
            raise Unprocessable(["subscriptionId: The subscription has no billing period (it ends before it starts)."])
        return period.start, period.end
    # A bare date is local midnight in the timezone of the period it falls in (a timezone change takes effect from
    # the next period: January's days stay UTC days after a change to Tokyo); the end in the one of the period it
    # closes.
    start, end = day_instant(subscription, start), day_instant(subscription, end, ends_window=True)
    if end <= start:
        raise Unprocessable(["billingPeriodEnd: Must be after billingPeriodStart."])
    life_end = effective_end(subscription)
    if end <= subscription.start_date or (life_end is not None and start >= life_end):
        raise Unprocessable(["billingPeriodStart, billingPeriodEnd: The subscription does not run in this period."])
    return start, end


def _take_number(book) -> str:
    """The next number of the book. The counter row stays locked until the invoice is committed, so a
    generate that fails gives its number back and none is skipped."""
    owned(InvoiceCounter, book).get_or_create(book=book)
    counter = owned(InvoiceCounter, book).select_for_update().get()
    counter.last_number += 1
    counter.save(update_fields=["last_number", "updated_at"])
    return f"INV-{counter.last_number:06d}"


def _apply_totals(invoice: Invoice, line_amounts) -> None:
    result = totals(line_amounts, discount_percent=invoice.discount_percent, discount_fixed=invoice.discount_fixed,
                    tax_percent=invoice.tax_percent)
    invoice.subtotal, invoice.discount, invoice.tax, invoice.total = (result.subtotal, result.discount,
                                                                       result.tax, result.total)


def _refresh(invoice: Invoice, subscription: Subscription) -> None:
    """Replace the lines with the period's charges under the invoice's captured terms (captured now on the
    first generation) and the usage the ledger holds now."""
    terms = invoice_terms(invoice)
    if invoice.pricing_terms is None:
        invoice.pricing_terms = terms.document()
    window = billing_window(subscription, invoice.period_start, invoice.period_end)
    claims = period_claims(subscription, window)
    lines = priced_lines(subscription, window, terms, claims)
    # Asked again after the ledger was read: that read waited while a month was leaving the ledger
    # (customers/partitions.py holds it exclusively), so a month archived meanwhile is seen here, and the period
    # is refused rather than billed without that month's usage (generating, the end-of-period job, a cut draft).
    _refuse_archived(invoice.period_start, invoice.period_end)
    invoice.billed_claims = claims_document(claims)
    _apply_totals(invoice, [line.amount for line in lines])
    _refuse_unstorable(invoice, lines)
    owned(InvoiceLine, invoice.book_id).filter(invoice=invoice).delete()
    for line in lines:
        line.invoice = invoice
    InvoiceLine.objects.bulk_create(lines)
    invoice.usage_read_at = clock.now()  # the clock events are stamped with (`created_at`), which it is compared to
    invoice.save()


def _refuse_unstorable(invoice: Invoice, lines: list[InvoiceLine], *,
                       remedy: str = "bill the period in shorter windows") -> None:
    """A period whose amounts exceed what an invoice holds (cents: 12 integer digits) is a 422 naming the line,
    before anything is written: never a database overflow, never a rounded bill. Quantities have no bound (their
    columns are unbounded `numeric`: one record may carry 1.8 x 10^308 units)."""
    too_large = [f"lines[{line.position}] ({line.description[:60]}): amount {line.amount}"
                 for line in lines if abs(line.amount) >= CENTS_LIMIT]
    if any(abs(value) >= CENTS_LIMIT for value in (invoice.subtotal, invoice.total)):
        too_large.append(f"total: {invoice.total}")
    if too_large:
        raise Unprocessable([f"{problem} is beyond what an invoice holds (amounts below 10^12 USD); {remedy}."
                             for problem in too_large])


@retried_on_deadlock
def invoice_generate(*, book, now: datetime, customer_id, subscription_id, billing_period_start=None,
                     billing_period_end=None, **invoice_settings) -> tuple[Invoice, bool]:
    """A draft for one period of a customer's subscription; returns (invoice, created).

    Again for the same period: a draft's usage is refreshed in place under its captured terms (with any
    discount or tax sent), a finalized invoice comes back unchanged. Internal coding-agent customers are never invoiced (400)."""
    customer = get_owned(Customer, book, customer_id, queryset=owned(Customer, book).filter(deleted_at__isnull=True))
    subscription = get_owned(Subscription, book, subscription_id)
    if subscription.customer_id != customer.pk:
        raise NotFound("Subscription not found for this customer")
    if customer.is_internal:
        raise BadRequest(["customerId: Internal coding-agent customers (developers) are never invoiced."])
    start, end = _requested_period(subscription, billing_period_start, billing_period_end, now=now)
    with transaction.atomic():
        # One generate per subscription at a time: the second sees what the first wrote.
        subscription = owned(Subscription, book).select_for_update().get(pk=subscription.pk)
        invoices = (owned(Invoice, book).select_for_update().filter(subscription=subscription)
                    .exclude(status=Status.VOID))
        existing = invoices.filter(period_start=start, period_end=end).first()
        if existing is not None and existing.status != Status.DRAFT:
            return existing, False
        _refuse_archived(start, end)
        if existing is not None:  # a draft: refreshed in place
            for field, value in invoice_settings.items():
                setattr(existing, field, value)
            _refresh(existing, subscription)
            return existing, False
        overlapping = invoices.filter(period_start__lt=end, period_end__gt=start).order_by("period_start").first()
        if overlapping is not None:
            remedy = ("a paid invoice stays as it is: pick a period that does not overlap"
                      if overlapping.status in NEVER_VOIDED
                      else f"{void_first(overlapping)}, or pick a period that does not overlap")
            raise Conflict(f"Invoice {overlapping.invoice_number} ({overlapping.status}) already bills "
                           f"{overlapping.period_start.isoformat()} to {overlapping.period_end.isoformat()}, which "
                           f"overlaps this period; {remedy}.")
        invoice = Invoice(book=book, customer=customer, subscription=subscription, period_start=start,
                          period_end=end, memo=subscription.invoice_memo, invoice_number=_take_number(book),
                          **invoice_settings)
        invoice.save()
        _refresh(invoice, subscription)
        invoice_event(invoice, EventType.INVOICE_CREATED, now=now)
    return invoice, True


def _refuse_archived(start: datetime, end: datetime) -> None:
    """A period sharing a day with a month archived out of the ledger is a 409 naming the month: its events are
    no longer in the ledger, so an invoice of it would bill none of them (a draft or a current period over a month
    keeps it from being detached; a past period never invoiced does not)."""
    months = [f"{month:%Y-%m}" for month in archived_overlapping(start, end, archived_spans())]
    if months:
        raise Conflict(f"The usage of {', '.join(months)} was archived out of the ledger (ledger_partitions detach), "
                       f"so an invoice for this period would bill none of it. Restore the month first (python "
                       f"manage.py ledger_partitions restore {months[0]}), then generate the invoice.",
                       code="period_archived")


def invoices_fit_to_end(*, book, subscription: Subscription, now: datetime, reason: str,
                        previous_end: datetime | None = None) -> None:
    """After the subscription's end moved (a plan change, its withdrawal, a new endDate): a draft reaching past
    an earlier end is cut there and re-priced (same id and number), a draft wholly after it is voided; a draft that
    `previous_end` had cut grows back to its cycle's end (or the new end, when earlier) and is re-priced, so the
    usage of the days it gets back is billed. Finalized invoices are the caller's to refuse."""
    end = effective_end(subscription)
    if previous_end is not None and (end is None or end > previous_end):
        cut = owned(Invoice, book).select_for_update().filter(subscription=subscription, status=Status.DRAFT,
                                                              period_end=previous_end).order_by("pk")
        for invoice in cut:
            grown = period_end_grown_back(subscription, invoice.period_start)
            if grown > invoice.period_end:
                invoice.period_end = grown
                _refresh(invoice, subscription)
    if end is None:
        return
    drafts = (owned(Invoice, book).select_for_update().filter(subscription=subscription, status=Status.DRAFT,
                                                              period_end__gt=end).order_by("pk"))
    for invoice in drafts:
        if invoice.period_start < end:
            invoice.period_end = end
            _refresh(invoice, subscription)
        else:
            # The pay token stays: its link opens the voided page (410), where nothing can be paid.
            invoice.status, invoice.voided_at, invoice.void_reason = Status.VOID, now, reason[:500]
            invoice.save()
            invoice_event(invoice, EventType.INVOICE_VOIDED, now=now)  # as a void asked for (invoice_void)


# --------------------------------------------------------------------------- drafts

@transaction.atomic
def invoice_update(*, book, invoice_id, **changes) -> Invoice:
    """Discount, tax and memo of a draft; finalized invoices never change (409)."""
    invoice = _invoice_locked(book, invoice_id)
    if invoice.status != Status.DRAFT:
        remedy = ("A paid invoice is never voided: it stays as it is" if invoice.status in NEVER_VOIDED
                  else f"To bill the period differently, {void_first(invoice)}, then generate it again")
        raise Conflict(f"Invoice {invoice.invoice_number} is {invoice.status}: only drafts change. {remedy}.",
                       code="invoice_immutable")
    for field, value in changes.items():
        setattr(invoice, field, value)
    lines = list(owned(InvoiceLine, book).filter(invoice=invoice))
    _apply_totals(invoice, [line.amount for line in lines])
    _refuse_unstorable(invoice, lines, remedy="lower the tax rate or the discount")  # a tax rate can take a total
    # past what the invoice holds
    invoice.save()
    return invoice


def _finalize(invoice: Invoice, *, now: datetime, status: str) -> None:
    """Freeze the draft as it is: issue date now, due date the issue day plus the subscription's netTerms
    (days in its time zone), overdue from the first instant after the due date. A draft whose lines last read the
    ledger before invoices stored their claims stores them now, as its lines counted them."""
    subscription = invoice.subscription
    timezone = subscription.timezone
    if invoice.billed_claims is None:
        invoice.billed_claims = claims_document(claims_counted_by(invoice))
    invoice.status, invoice.issued_at = status, now
    invoice.parties = parties_document(invoice)  # from and to whom, as it is issued
    invoice.due_date = local_date(now, timezone) + timedelta(days=subscription.net_terms)
    invoice.overdue_at = local_midnight(invoice.due_date + timedelta(days=1), timezone)
    invoice.save()


# --------------------------------------------------------------------------- send

def _claim_keys(document: list[dict]) -> set[tuple]:
    return {(claim["agentId"], claim["signalId"], claim["start"], claim["end"]) for claim in document}


def _refuse_out_of_date(invoice: Invoice) -> None:
    """A draft is sent as it is (contract: send issues exactly the lines the draft shows), so one whose claims no
    longer hold is refused (409) instead: since it was generated, another subscription of the customer, or another
    strategy, took usage it counts (an event is billed at most once), or gave some back. Events recorded since
    within its claims do not make it out of date: the reviewed draft is what is sent."""
    if invoice.billed_claims is None:
        return
    subscription = invoice.subscription
    window = billing_window(subscription, invoice.period_start, invoice.period_end)
    if _claim_keys(claims_document(period_claims(subscription, window))) != _claim_keys(invoice.billed_claims):
        raise Conflict(f"Draft {invoice.invoice_number} is out of date: since it was generated, which of its "
                       "customer's subscriptions bills the usage of its period changed (a strategy, a subscription "
                       "or a plan change), and sending it would bill usage another invoice bills, or leave some "
                       "unbilled. Generate it again (POST /v1/invoices/generate for its period refreshes it, same "
                       "number), review it, then send it.", code="invoice_out_of_date")


@dataclass(frozen=True)
class Delivery:
    invoice: Invoice
    email_id: str  # "" when the email was not sent
    recipient: str
    failure: str = ""  # why the email was not sent ("": it was)

    @property
    def sent(self) -> bool:
        return not self.failure


def _recipients(customer: Customer, recipient_email: str | None) -> tuple[str, list[str]]:
    to = recipient_email or customer.email or customer.billing_contact_email
    if not to:
        raise BadRequest(["recipientEmail: The customer has no email address; send recipientEmail."])
    extra = [address for address in customer.invoice_email_recipients or [] if isinstance(address, str)]
    cc = list(dict.fromkeys(address for address in extra if address.lower() != to.lower()))
    return to, cc


def invoice_send(*, book, invoice_id, now: datetime, recipient_email: str | None = None,
                 subject: str | None = None, message: str = "") -> Delivery:
    """Email the invoice with its PDF and its pay-now link (the same link as any earlier send while it is live).

    A draft is finalized first and is `pending` while the email goes out, `issued` once the email backend
    accepted it. An email that fails leaves it pending (send again) and comes back as a Delivery with its
    `failure`, not as an error: the finalization (and a new pay link) committed before the email was tried, and a
    request whose writes committed never answers 5xx (contract: "Derived figures"). Issued, pending and overdue
    invoices are re-sent without a status change; paid, refunded and void ones cannot be sent (400)."""
    with transaction.atomic():
        invoice = _invoice_locked(book, invoice_id)
        if invoice.status in UNSENDABLE:
            raise BadRequest(f"Invoice {invoice.invoice_number} is {invoice.status} and cannot be sent.")
        to, cc = _recipients(invoice.customer, recipient_email)
        if invoice.status == Status.DRAFT:
            _refuse_out_of_date(invoice)
            _finalize(invoice, now=now, status=Status.PENDING)
        link = pay_url(_pay_token(invoice))
    try:
        # Read after the commit: on a new connection while PostgreSQL comes back (a restart answered 503 here for a
        # committed finalization, and left it pending without its email).
        view = retry_while_reconnecting(lambda: InvoiceView.of(invoice))
    except DatabaseError:
        logger.warning("invoice %s: finalized, its email not sent (the database was lost)", invoice.pk, exc_info=True)
        return Delivery(invoice, "", to, failure=f"Invoice {invoice.invoice_number} could not be emailed because of "
                                                 f"a fault on our side; it stays {invoice.status}. Send it again.")
    default_subject = f"Invoice {invoice.invoice_number} from {view.business_name}"
    if invoice.status == Status.OVERDUE:  # sent again as a reminder: the subject says so
        default_subject = f"Overdue: {default_subject}"
    email = InvoiceEmail(to=to, cc=cc, subject=subject or default_subject, message=message, pay_url=link)
    try:
        email_id = send_invoice_email(view, email)
    except Exception:
        logger.exception("invoice email failed", extra={"invoice_id": str(invoice.pk)})
        return Delivery(invoice, "", to, failure=f"The email for invoice {invoice.invoice_number} could not be sent; "
                                                 f"the invoice stays {invoice.status}. Send it again.")
    # The email is out: the invoice must not stay pending because the connection failed now (a PostgreSQL
    # restart), or it is never counted as billed nor becomes overdue, and a 503 invites a second email.
    retry_while_reconnecting(lambda: _mark_sent(book, invoice, now=now))
    return Delivery(invoice, email_id, to)


@transaction.atomic
def _mark_sent(book, invoice: Invoice, *, now: datetime) -> None:
    """Issue a pending invoice whose email went out, and note the send (idempotent but for its webhook events,
    written in the same transaction)."""
    issued = owned(Invoice, book).filter(pk=invoice.pk, status=Status.PENDING).update(status=Status.ISSUED,
                                                                                       updated_at=now)
    owned(Invoice, book).filter(pk=invoice.pk).update(last_sent_at=now)
    invoice.refresh_from_db()
    if issued:
        invoice_event(invoice, EventType.INVOICE_ISSUED, now=now)
    invoice_event(invoice, EventType.INVOICE_SENT, now=now)


# --------------------------------------------------------------------------- void

@retried_on_deadlock
@transaction.atomic
def invoice_void(*, book, invoice_id, now: datetime, reason: str = "") -> Invoice:
    """Drafts, unpaid pending, issued or overdue invoices and refunded ones become void (their number stays taken,
    the pay link shows the voided page). Voiding twice changes nothing. Money received must be refunded first (400).

    The terms the invoice captured no longer hold its period, which is billed under the plan's terms of now: which
    subscription bills its events may move, so the customer's settled pool periods from its start on settle again
    (as after a plan change), their syncs held before the invoice's row; and the subscription's row before the
    invoice's, as generating takes them (settling a pool again may write a grant that references it)."""
    unlocked = get_owned(Invoice, book, invoice_id)
    pairs = customer_pools_lock(book=book, customer_id=unlocked.customer_id)
    list(owned(Subscription, book).select_for_update(of=("self",)).filter(pk=unlocked.subscription_id)
         .values_list("pk", flat=True))
    invoice = _invoice_locked(book, invoice_id)
    if invoice.status == Status.VOID:
        return invoice
    if invoice.status in NEVER_VOIDED:
        raise BadRequest(f"Invoice {invoice.invoice_number} is {invoice.status}; a paid invoice is not voided, "
                         "its payments are refunded.")
    if invoice.amount_paid > 0:
        raise BadRequest(f"Invoice {invoice.invoice_number} has {invoice.amount_paid} collected; refund the payments "
                         "before voiding it.")
    # The pay token stays, so the emailed link opens the voided page (410) rather than "not valid" (404); the
    # link is no longer live (`live_pay_token`) and the pay page pays nothing on a void invoice.
    invoice.status, invoice.voided_at, invoice.void_reason = Status.VOID, now, reason
    invoice.save()
    for customer_id, agent_id in pairs:
        credit_pools_follow_claims(book=book, customer_id=customer_id, agent_id=agent_id, since=invoice.period_start,
                                   now=now)
    invoice_event(invoice, EventType.INVOICE_VOIDED, now=now)
    return invoice


# --------------------------------------------------------------------------- scheduled jobs

def invoices_finalize_due(*, now: datetime) -> str:
    """Scheduled job (every book): drafts whose period has ended are finalized (issued). Idempotent."""
    due = list(Invoice.objects.filter(status=Status.DRAFT, period_end__lte=now).order_by("pk")
               .values_list("pk", "book_id"))
    finalized = 0
    failures = BookFailures("invoices_finalize_due")
    settled_books = set()
    for pk, book_id in due:
        with failures.isolated(book_id):
            if book_id not in settled_books:
                # Batches of the book still committing (begun before the period ended, dated in it) are in the
                # ledger before the drafts read it.
                batches_in_flight_wait(book_id)
                settled_books.add(book_id)
            with transaction.atomic():
                # A row another worker (or a send) holds is skipped; it is being finalized there.
                invoice = (Invoice.objects.select_for_update(skip_locked=True, of=("self",))
                           .select_related("subscription").filter(pk=pk, status=Status.DRAFT).first())
                if invoice is not None:
                    _refresh(invoice, invoice.subscription)  # the period has ended: all its usage is in
                    _finalize(invoice, now=now, status=Status.ISSUED)
                    invoice_event(invoice, EventType.INVOICE_ISSUED, now=now)
                    finalized += 1
    return failures.finish(f"{finalized} finalized")


def invoices_mark_overdue(*, now: datetime) -> str:
    """Scheduled job (every book): issued invoices not paid in full after their due date become overdue, each
    reported as `invoice.overdue` in the same transaction. Rows a payment holds are skipped (the payment decides
    first; the next run sees the outcome). Idempotent."""
    with transaction.atomic():
        overdue = list(Invoice.objects.select_for_update(skip_locked=True)
                       .filter(Q(status=Status.ISSUED, overdue_at__lte=now), amount_paid__lt=F("total"))
                       .order_by("pk"))
        Invoice.objects.filter(pk__in=[invoice.pk for invoice in overdue]).update(status=Status.OVERDUE,
                                                                                  updated_at=now)
        for invoice in overdue:
            invoice_event(invoice, EventType.INVOICE_OVERDUE, now=now)
    return f"{len(overdue)} overdue"


def final_invoices_keep_claims() -> int:
    """Store the claims of final invoices made final before invoices kept them (`billed_claims` null), every book;
    the number stored. Each is its period's claims settled among the subscriptions that existed when its lines last
    read the ledger (`claims_counted_by`): what they counted, so a subscription created since, even backdated,
    takes none of its events (a strategy added since to another plan is the one change this cannot see). Run after
    every `migrate` (billing/apps.py). Idempotent; earliest periods first, so each is settled against the claims
    already stored, as the invoices were against one another; an invoice that cannot be priced is logged and left
    for the next run."""
    legacy = list(Invoice.objects.filter(billed_claims__isnull=True).exclude(status__in=[Status.DRAFT, Status.VOID])
                  .order_by("period_start", "pk").values_list("pk", "book_id"))
    stored = 0
    for pk, book_id in legacy:
        try:
            with transaction.atomic():
                invoice = (owned(Invoice, book_id).select_for_update(of=("self",)).select_related("subscription")
                           .filter(pk=pk, billed_claims__isnull=True).exclude(status__in=[Status.DRAFT, Status.VOID])
                           .first())
                if invoice is None:
                    continue
                claims = claims_document(claims_counted_by(invoice))
                owned(Invoice, book_id).filter(pk=pk).update(billed_claims=claims)
                stored += 1
        except Exception:  # one invoice the service cannot price (its plan broken since) never blocks a migrate
            logger.exception("Could not store the billed claims of invoice %s; the next migrate tries again", pk)
    if stored:
        logger.info("Stored the billed claims of %s final invoices made final before invoices kept them", stored)
    return stored
