"""What the ledger verifier (`manage.py ledger_verify`, console/verification.py) checks in billing: the
figures billing wrote down from the ledger.

- Draft invoices (not issued yet): each draft's lines against the lines its captured terms give over the ledger
  now. A draft generated before events of its period were recorded is stale, not drifted (it is refreshed on
  regenerate and before the end-of-period job issues it): a draft counts as drift only when no event of its
  customer dated in its period was stored after its lines last read the ledger (`usage_read_at`: a PATCH of its
  discount or memo re-totals the lines without reading; events of other periods say nothing of it). Repair refreshes the draft (as generating it again does).
- Credit pools: each settled period's `consumed_units` against what the subscription bills of the ledger in that
  period, on the signal of the pool in force for it (its invoice's captured pool, else the plan's), counting the
  events recorded by the moment it was settled (a batch stamped up to READ_MARGIN before it may have committed after
  it, so the settlement lies between the two counts): a settlement is final, so usage recorded for the period later
  is no drift. Repair settles that period and the later ones again (their top-up draws follow from it).

- Final invoices (issued, pending, overdue, paid, refunded): each usage line's counted quantity against what the
  ledger holds of the invoice's kept claims (`billed_claims`). An invoice is a document: what it billed stays
  whatever the ledger learns later (invoices keep what was reviewed), so usage recorded since its lines last read
  the ledger (`usage_read_at`) is no drift (the console shows it on the invoice). An event is stamped with its
  request's start (`created_at`) and may commit up to the web timeout later, so the line must lie between the
  events recorded `READ_MARGIN` before the read (all committed by then) and every event recorded now: fewer is
  events the read missed, more is events it counted twice or that left the ledger. A finding has no repair: only
  voiding the invoice and generating the period again puts it right.

- Events billed once: no two final invoices' kept claims overlap (the same customer, agent and signal in the same
  instants); each invoice agrees with the ledger on its own, so this is the check that sees an event billed twice.
- Invoice totals (every invoice but a void one): subtotal, discount, tax and total against its lines' amounts and
  its settings; and every invoice's amount paid against its payments net of their refunds, each payment's refunded
  amount against its refunds (read in the invoice's own statement: a payment committing meanwhile is no drift).

None of those that read the ledger compares a period that shares a day with a month archived out of the ledger (`ArchivedMonth`): its
events are no longer there to compare with."""
import logging
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F, OuterRef, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from billing.models import ChargeType, CreditGrant, Invoice, InvoiceStatus, Payment, Refund
from billing.pricing.lines import billing_window, claims_of_document, invoice_terms, priced_lines, totals
from billing.pricing.usage import billed_usage, claims_usage
from billing.selectors.credit_pools import PERIOD, period_pool, pool_for, timeline_of
from billing.services.credit_pools import credit_pool_settle_again
from billing.services.invoices import invoice_generate
from core.errors import ApiError
from core.money import SUMS, ZERO, CentsField
from core.scoping import owned
from customers.models import Signal, UsageEvent
from customers.partitions import archived_spans, overlaps_archive
from customers.verification import Finding

logger = logging.getLogger("billing.verification")


def _plain(number) -> str:
    """A quantity as people write it: 30, 409.45 (never 3E+1 or 409.450000000000)."""
    return f"{number.normalize(SUMS):f}" if number else "0"


def _line_figures(lines) -> list[tuple]:
    return [(line.position, line.charge_type, _plain(line.quantity), line.amount) for line in lines]


def draft_invoice_differences(*, book, now: datetime, repair: bool = False) -> list[Finding]:
    findings = []
    drafts = owned(Invoice, book).filter(status=InvoiceStatus.DRAFT).select_related("subscription", "customer")
    archived = archived_spans()
    for invoice in drafts.order_by("period_start", "invoice_number"):
        if overlaps_archive(invoice.period_start, invoice.period_end, archived):
            continue  # its period's events left the ledger: the ledger no longer says what it bills
        subscription = invoice.subscription
        expected = _line_figures(priced_lines(subscription, billing_window(subscription, invoice.period_start,
                                                                            invoice.period_end),
                                              invoice_terms(invoice)))
        stored = _line_figures(invoice.lines.order_by("position"))
        if expected == stored:
            continue
        if owned(UsageEvent, book).filter(customer_id=invoice.customer_id, usage_date__gte=invoice.period_start,
                                          usage_date__lt=invoice.period_end,
                                          created_at__gt=invoice.usage_read_at or invoice.updated_at).exists():
            continue  # stale: events of its period arrived after its last refresh
        findings.append(Finding(
            f"draft invoice {invoice.invoice_number} ({invoice.period_start:%Y-%m-%d} to {invoice.period_end:%Y-%m-%d})",
            "; ".join(f"line {p} {c}: {q} for {a}" for p, c, q, a in expected),
            "; ".join(f"line {p} {c}: {q} for {a}" for p, c, q, a in stored), invoice.period_start))
        if repair:
            try:
                invoice_generate(book=book, now=now, customer_id=invoice.customer_id, subscription_id=subscription.pk,
                                 billing_period_start=invoice.period_start, billing_period_end=invoice.period_end)
            except ApiError as refused:  # a customer deleted or internal since, a period past the subscription's end
                logger.warning("draft invoice %s not refreshed by the repair, left for the operator to void: %s",
                               invoice.invoice_number, refused)
    return findings


# Longer than a request may run (gunicorn's --timeout, WEB_TIMEOUT, 300 s by default, twice over): every event
# stamped this long before an invoice read the ledger had committed by then.
READ_MARGIN = timedelta(seconds=2 * max(settings.WEB_TIMEOUT_SECONDS, 300))
FINAL = (InvoiceStatus.ISSUED, InvoiceStatus.PENDING, InvoiceStatus.OVERDUE, InvoiceStatus.PAID,
         InvoiceStatus.REFUNDED)


def _by_signal(usage: dict[tuple, Decimal]) -> dict:
    return {signal_id: quantity for (_, signal_id), quantity in usage.items()}


def final_invoice_differences(*, book, now: datetime, repair: bool = False) -> list[Finding]:
    findings = []
    archived = archived_spans()
    invoices = (owned(Invoice, book).filter(status__in=FINAL, billed_claims__isnull=False, usage_read_at__isnull=False)
                .prefetch_related("lines").order_by("period_start", "invoice_number"))
    for invoice in invoices:
        counted = [line for line in invoice.lines.all()
                   if line.charge_type == ChargeType.USAGE and line.signal_id and line.used_quantity is not None]
        if not counted or overlaps_archive(invoice.period_start, invoice.period_end, archived):
            continue
        claims = claims_of_document(invoice)
        settled = _by_signal(claims_usage(book=book.pk, claims=claims,
                                          recorded_by=invoice.usage_read_at - READ_MARGIN))
        recorded = _by_signal(claims_usage(book=book.pk, claims=claims))
        for line in counted:
            low, high = settled.get(line.signal_id, ZERO), recorded.get(line.signal_id, ZERO)
            if not low <= line.used_quantity <= high:
                findings.append(Finding(
                    f"invoice {invoice.invoice_number} ({invoice.status}, {invoice.period_start:%Y-%m-%d} to "
                    f"{invoice.period_end:%Y-%m-%d}) line {line.position}",
                    f"{_plain(low)} units recorded before its lines read the ledger, {_plain(high)} by now",
                    f"{_plain(line.used_quantity)} counted", invoice.period_start))
    return findings


def events_billed_twice(*, book, now: datetime, repair: bool = False) -> list[Finding]:
    """Final invoices whose kept claims overlap: the same agent's events on the same signal in the same instants
    counted by two invoices of the customer. Each invoice agrees with the ledger on its own, so only this comparison
    sees an event billed twice. No repair: only voiding one of them and generating its period again puts it right."""
    findings = []
    invoices = (owned(Invoice, book).filter(status__in=FINAL, billed_claims__isnull=False)
                .only("id", "invoice_number", "subscription_id", "customer_id", "billed_claims")
                .order_by("period_start", "invoice_number"))
    by_stream: dict[tuple, list] = {}
    for invoice in invoices.iterator(chunk_size=500):
        for claim in claims_of_document(invoice):
            by_stream.setdefault((claim.customer_id, claim.agent_id, claim.signal_id), []).append((claim, invoice))
    for held in by_stream.values():
        held.sort(key=lambda pair: (pair[0].start, pair[0].end))
        reaching = None  # the claim reaching furthest so far, and its invoice
        for claim, invoice in held:
            if reaching is not None and claim.start < reaching[0].end and reaching[1].pk != invoice.pk:
                findings.append(Finding(
                    f"invoices {reaching[1].invoice_number} and {invoice.invoice_number} (signal {claim.signal_id})",
                    "each event on one invoice",
                    f"both bill the events from {claim.start:%Y-%m-%d %H:%M} to "
                    f"{min(claim.end, reaching[0].end):%Y-%m-%d %H:%M}", claim.start))
            if reaching is None or claim.end > reaching[0].end:
                reaching = (claim, invoice)
    return findings


def invoice_total_differences(*, book, now: datetime, repair: bool = False) -> list[Finding]:
    """Every invoice: its amount paid against its payments net of their refunds, and each payment's refunded amount
    against its refunds; but a void one, its subtotal, discount, tax and total against its lines' amounts and its
    settings, by the one rule that totals an invoice. No repair: a final invoice is a document, a draft is
    totalled again by its next refresh, and money is put right by a payment or a refund."""
    findings = []
    invoices = (_with_money_as_recorded(owned(Invoice, book)).prefetch_related("lines")
                .order_by("period_start", "invoice_number"))
    for invoice in invoices.iterator(chunk_size=500):  # a book's every invoice and line: never all in memory
        if invoice.payment_off is not None:
            findings.append(Finding(f"payment {invoice.payment_off} of invoice {invoice.invoice_number}",
                                    "its refunds add up to another amount", "its refunded amount",
                                    invoice.period_start))
        if invoice.collected != invoice.amount_paid:
            findings.append(Finding(
                f"invoice {invoice.invoice_number} ({invoice.status}) amount paid",
                f"its payments net of refunds add up to {invoice.collected:.2f}",
                f"amount paid {invoice.amount_paid:.2f}", invoice.period_start))
        if invoice.status == InvoiceStatus.VOID:
            continue
        expected = totals([line.amount for line in invoice.lines.all()], discount_percent=invoice.discount_percent,
                          discount_fixed=invoice.discount_fixed, tax_percent=invoice.tax_percent)
        expected = (expected.subtotal, expected.discount, expected.tax, expected.total)
        stored = (invoice.subtotal, invoice.discount, invoice.tax, invoice.total)
        if expected != stored:
            findings.append(Finding(
                f"invoice {invoice.invoice_number} ({invoice.status}, {invoice.period_start:%Y-%m-%d} to "
                f"{invoice.period_end:%Y-%m-%d}) totals",
                "its lines give subtotal {:.2f}, discount {:.2f}, tax {:.2f}, total {:.2f}".format(*expected),
                "subtotal {:.2f}, discount {:.2f}, tax {:.2f}, total {:.2f}".format(*stored), invoice.period_start))
    return findings


def _with_money_as_recorded(invoices):
    """The invoices with what their payments record, read in the same statement as their own rows (one snapshot: a
    payment or refund committing meanwhile is in all of it or none): `collected`, their payments net of refunds, and
    `payment_off`, the first payment whose refunded amount its refunds do not add up to (None: none)."""
    zero = Value(ZERO, output_field=CentsField())
    refunds = Refund.objects.filter(payment=OuterRef("pk")).values("payment").annotate(total=Sum("amount"))
    payments = Payment.objects.filter(invoice=OuterRef("pk")).annotate(
        refunds_total=Coalesce(Subquery(refunds.values("total")), zero, output_field=CentsField()))
    net = payments.values("invoice").annotate(net=Sum(F("amount") - F("refunded_amount"))).values("net")
    off = payments.exclude(refunds_total=F("refunded_amount")).values("provider_payment_id")[:1]
    return invoices.annotate(collected=Coalesce(Subquery(net), zero, output_field=CentsField()),
                             payment_off=Subquery(off))


def credit_pool_differences(*, book, now: datetime, repair: bool = False) -> list[Finding]:
    findings = []
    grants = (owned(CreditGrant, book).filter(kind=PERIOD, settled_at__isnull=False)
              .select_related("subscription").order_by("subscription_id", "period_start"))
    drifted: dict = {}
    timelines: dict = {}
    archived = archived_spans()
    signals = set(owned(Signal, book).values_list("pk", flat=True))
    for grant in grants:
        if overlaps_archive(grant.period_start, grant.period_end, archived):
            continue  # its period's events left the ledger: reading them as none would settle it again at 0
        if grant.subscription_id not in timelines:
            timelines[grant.subscription_id] = timeline_of(grant.subscription)
        plan_pool = pool_for(grant.subscription)  # None once the plan sells no pool: the invoice's may still say
        pool = period_pool(timelines[grant.subscription_id], grant.period_start, plan_pool)
        if pool is None or pool.signal_id not in signals:
            # A pool of a signal deleted since: its events are orphans now (signal null), so the ledger no longer
            # says what the period used; what it settled stays, as a final invoice's line of that signal does.
            continue
        # What the settlement read: the events recorded by the moment it was written. Usage recorded for the period
        # later does not move a settled period (docs/decisions/credit-pools.md), so it is no drift. An event is
        # stamped with its request's start and commits up to a request's run later: a batch stamped just before the
        # settlement and committed after it was not there to count, so the settlement lies between what was
        # recorded READ_MARGIN before it (all committed by then) and what was recorded by it.
        window = {grant.subscription: (grant.period_start, grant.period_end)}
        key = (grant.subscription_id, pool.signal_id)
        low = billed_usage(book=book.pk, windows=window, recorded_by=grant.settled_at - READ_MARGIN).get(key, 0)
        high = billed_usage(book=book.pk, windows=window, recorded_by=grant.settled_at).get(key, 0)
        if not low <= grant.consumed_units <= high:
            findings.append(Finding(
                f"credit pool of subscription {grant.subscription_id}, period {grant.period_start:%Y-%m-%d}",
                f"{_plain(high)} units used" if low == high else f"{_plain(low)} to {_plain(high)} units used",
                f"{_plain(grant.consumed_units)} settled", grant.period_start))
            if plan_pool is not None:  # settling again needs the pool the plan sells now
                drifted.setdefault(grant.subscription, (grant.period_start, plan_pool))
    if repair:
        for subscription, (start, pool) in drifted.items():
            with transaction.atomic():  # each period with the events recorded by its first settlement
                credit_pool_settle_again(subscription=subscription, since=start, now=now, pool=pool)
    return findings
