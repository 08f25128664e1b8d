"""Hosted pages a customer opens from a link (no API key): the pay-now page of an invoice and the customer
portal (contract.md: Hosted pages; docs/decisions/portal.md).

Portal mechanics: the first GET of `/portal/<token>` consumes the link and binds this browser's Django session
to the portal session; the pages under `/portal/s/` then work until the portal session ends (one hour after it
was created, or when it is revoked), which every request checks against the row.
"""
import uuid
from functools import partial, wraps

from django.conf import settings
from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from billing import stripe_gateway
from billing.invoice_documents import InvoiceView, invoice_pdf, money, period_days
from billing.models import InvoiceStatus
from billing.services.payments import (LocalCheckoutDisabled, checkout_url, customer_invoice_pay_locally,
                                       invoice_for_pay_token, invoice_pay_locally, local_checkout_enabled)
from accounts.api import client_ip
from accounts.throttling import bad_link_token_retry_after
from core import clock, display
from core.errors import NotFound
from customers.serializers import CustomerWriteIn
from customers.services import customer_update
from portal.presentation import home_context, profile_inputs, profile_submission
from portal.selectors import customer_invoice, portal_session_live
from portal.services import LinkState, portal_link_consume, portal_link_find

SESSION_KEY = "portal_session_id"  # in the Django session: the portal session this browser may use
MAX_TOKEN_LENGTH = 128  # issued tokens have 43 characters; anything far longer is not looked up
# Pay pages that show an amount still due.
OWED_STATES = ("checkout", "not_configured", "not_payable_online", "provider_down")


# --------------------------------------------------------------------------- checkout (pay-now and portal)

def _pay_page(request, state: str, *, invoice=None, status: int = 200, **extra):
    context = {"state": state, "invoice": invoice, **extra}
    if invoice is not None:
        view = InvoiceView.of(invoice)
        first, last = period_days(invoice)
        context.update(view=view, business_name=view.business_name, period_first=first, period_last=last,
                       billed_to=view.bill_to[0] if view.bill_to else "",
                       # The issue day as its due date counts from it: in the subscription's timezone.
                       issued_on=(display.day(invoice.issued_at, invoice.subscription.timezone)
                                  if invoice.issued_at else ""),
                       amount_due=money(invoice.amount_due, invoice.currency),
                       amount_overpaid=money(invoice.amount_overpaid, invoice.currency),
                       # Past its due date and still owed: the page asking for the money says so.
                       overdue=invoice.status == InvoiceStatus.OVERDUE and state in OWED_STATES)
    return render(request, "portal/pay.html", context, status=status)


def _attempt(request) -> uuid.UUID:
    try:
        return uuid.UUID(request.POST.get("attempt", ""))
    except ValueError:
        return uuid.uuid4()


def _checkout(request, invoice, *, pay_url: str, pay_locally, back_url: str | None = None):
    """GET: with STRIPE_SECRET_KEY, straight to a Stripe Checkout session for the amount due (an amount Stripe
    does not take: the invoice and how to pay it otherwise, 422; Stripe not answering: 502); without it, the
    invoice and a note that online payment is not configured, or, only when PAYMENTS_LOCAL_CHECKOUT is on
    (development), a local checkout. POST (the local checkout, CSRF-protected): pay what is due; with the local
    checkout off it changes nothing and answers 403 (contract: Payments without Stripe)."""
    page = partial(_pay_page, request, invoice=invoice, back_url=back_url)
    if invoice.status == InvoiceStatus.VOID:  # its email link still finds it (invoice_void keeps the token)
        return page("void", status=410)
    if request.method == "POST":
        if not stripe_gateway.is_configured():
            try:
                pay_locally(attempt=_attempt(request), now=clock.now())
            except LocalCheckoutDisabled:
                return page("not_configured", status=403)
        return redirect(request.path, permanent=False)
    if invoice.status in (InvoiceStatus.PAID, InvoiceStatus.REFUNDED) or invoice.amount_due <= 0:
        return page("settled")
    checkout = request.GET.get("checkout")
    if checkout == "success":
        return page("processing")
    if stripe_gateway.is_configured() and checkout != "cancelled":
        try:
            return redirect(checkout_url(invoice, pay_url=pay_url))
        except stripe_gateway.PaymentRefused:
            # Not an outage, and asking again gets the same answer: how to pay otherwise (PaymentRefused: why 422).
            return page("not_payable_online", status=stripe_gateway.PaymentRefused.status)
        except stripe_gateway.PaymentProviderError:
            return page("provider_down", status=502)
    if not stripe_gateway.is_configured() and not local_checkout_enabled():
        return page("not_configured")
    return page("checkout", attempt=uuid.uuid4(), local=not stripe_gateway.is_configured())


@never_cache
@require_http_methods(["GET", "POST"])
def pay_page(request, token: str):
    """The invoice email's pay-now link. The token is looked up first: a valid one always opens; unknown ones
    count against the caller's network (429 past LINK_TOKEN_FAILURE_LIMIT in a window, else 404)."""
    invoice = None if len(token) > MAX_TOKEN_LENGTH else invoice_for_pay_token(token)
    if invoice is None:
        retry_after = bad_link_token_retry_after(client_ip(request))
        if retry_after is not None:  # this network has been guessing tokens
            response = _pay_page(request, "blocked", status=429)
            response["Retry-After"] = str(retry_after)
            return response
        return _pay_page(request, "unknown", status=404)
    return _checkout(request, invoice, pay_url=f"{settings.PUBLIC_BASE_URL}/pay/{token}",
                     pay_locally=partial(invoice_pay_locally, token=token))


@csrf_exempt  # as on the pay link: other methods get require_GET's 405, not the CSRF check's 403 page
@never_cache
@require_GET
def pay_without_link(request):
    """`/pay/` itself, a pay link cut short: the page of a link that is not valid (no token to count against the
    caller's network)."""
    return _pay_page(request, "unknown", status=404)


# --------------------------------------------------------------------------- portal: the link

def _notice(request, state: str, *, status: int, session=None, continue_url: str | None = None):
    """The one page for everything that is not the portal itself: a used, expired, revoked or unknown link, an
    ended session, a missing invoice, too many bad links."""
    return render(request, "portal/notice.html", {
        "state": state, "continue_url": continue_url,
        "business_name": session.book.organization.display_name if session is not None else None,
    }, status=status)


def _bind(request, session) -> None:
    """This browser may use the portal session from now on (until it ends)."""
    request.session.cycle_key()  # a new session id: a cookie planted before the link was opened reads nothing
    request.session[SESSION_KEY] = str(session.pk)
    if not request.user.is_authenticated:  # an operator's console login keeps its own lifetime
        request.session.set_expiry(session.expires_at)


def _home(request, session, now, *, profile=None, status: int = 200):
    context = home_context(session, now=now, profile=profile)
    context["saved"] = request.GET.get("saved") == "profile" and profile is None
    return render(request, "portal/home.html", context, status=status)


@csrf_exempt  # as on a portal link: other methods get require_GET's 405, not the CSRF check's 403 page
@never_cache
@require_GET
def portal_without_link(request):
    """`/portal/` itself, as a customer trims a link down to it: the portal opens only from a session's link, so a
    browser that holds one goes to it (which says whether it has ended), any other reads how to open it."""
    if request.session.get(SESSION_KEY):
        return redirect("portal-home")
    return _notice(request, "no_session", status=404)


@csrf_exempt  # only GET opens a link: other methods get require_GET's 405, not the CSRF check's 403 page
@never_cache
@require_GET
def portal_open(request, token: str):
    """The link of a portal session: the first GET shows the portal and consumes it; later GETs are a 410 page
    that says whether it was used, or expired or was revoked. As on the pay page, the token is looked up first
    (a valid one always opens) and only unknown tokens count against the caller's network (429 past
    LINK_TOKEN_FAILURE_LIMIT in a window, else 404); used, expired and revoked links do not count."""
    now = clock.now()
    state, session = ((LinkState.UNKNOWN, None) if len(token) > MAX_TOKEN_LENGTH
                      else portal_link_find(token=token, now=now))
    if state is LinkState.OPENED:
        # The page is read first, and the link spent after, with the browser's binding, in one transaction: a
        # database that stopped answering while the page was read (or the link spent) leaves the link unused, where
        # it used to leave a 503 and a link "already used" ever after. The page's reads stay outside that
        # transaction, each figure from its own snapshot (core/database.py one_snapshot). Only the session's
        # save again with the answer's cookie, after the commit, can still fail with the link spent.
        response = _home(request, session, now)
        with transaction.atomic():
            state = portal_link_consume(session=session, now=now)
            if state is LinkState.OPENED:
                _bind(request, session)
                request.session.save()
        if state is LinkState.OPENED:
            return response
    if state is LinkState.UNKNOWN:
        retry_after = bad_link_token_retry_after(client_ip(request))
        if retry_after is not None:
            response = _notice(request, "rate_limited", status=429)
            response["Retry-After"] = str(retry_after)
            return response
        return _notice(request, "unknown", status=404)
    same_browser = state is LinkState.USED and request.session.get(SESSION_KEY) == str(session.pk)
    return _notice(request, state.value, status=410, session=session,
                   continue_url=reverse("portal-home") if same_browser else None)


# --------------------------------------------------------------------------- portal: the session's pages

def portal_page(view):
    """Runs `view(request, session, now, ...)` for the live portal session this browser is bound to; 403 without
    one, 410 once it has ended (expired or revoked: the binding is dropped)."""
    @wraps(view)
    @never_cache
    def page(request, *args, **kwargs):
        bound = request.session.get(SESSION_KEY)
        if bound is None:
            return _notice(request, "no_session", status=403)
        now = clock.now()
        session = portal_session_live(session_id=bound, now=now)
        if session is None:
            del request.session[SESSION_KEY]
            return _notice(request, "ended", status=410)
        return view(request, session, now, *args, **kwargs)
    return page


@require_GET
@portal_page
def portal_home(request, session, now):
    return _home(request, session, now)


@require_POST
@portal_page
def portal_profile(request, session, now):
    """The customer edits name, billing email, phone and address under the customers API's rules; errors show
    next to their fields (400), success redirects to the page (200 with a notice)."""
    submitted = profile_submission(request.POST)
    form = CustomerWriteIn(data=submitted, partial=True)
    if not form.is_valid():
        return _home(request, session, now, profile=profile_inputs(session.customer, submitted, form.errors),
                     status=400)
    try:
        customer_update(book=session.book, customer_id=session.customer_id, data=dict(form.validated_data))
    except NotFound:  # the customer was deleted a moment ago
        return _notice(request, "ended", status=410)
    return redirect(f"{reverse('portal-home')}?saved=profile#profile")


@require_GET
@portal_page
def portal_invoice_pdf(request, session, now, invoice_id):
    try:
        invoice = customer_invoice(book=session.book, customer=session.customer, invoice_id=invoice_id)
    except NotFound:
        return _notice(request, "no_invoice", status=404, session=session, continue_url=reverse("portal-home"))
    response = HttpResponse(invoice_pdf(InvoiceView.of(invoice)), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="invoice-{invoice.invoice_number}.pdf"'
    return response


@require_http_methods(["GET", "POST"])
@portal_page
def portal_invoice_pay(request, session, now, invoice_id):
    """Pay-now from the portal: the pay-now page's checkout for an invoice of this customer."""
    try:
        invoice = customer_invoice(book=session.book, customer=session.customer, invoice_id=invoice_id)
    except NotFound:
        return _notice(request, "no_invoice", status=404, session=session, continue_url=reverse("portal-home"))
    pay_url = settings.PUBLIC_BASE_URL + reverse("portal-invoice-pay", args=[invoice.pk])
    return _checkout(request, invoice, pay_url=pay_url, back_url=reverse("portal-home"),
                     pay_locally=partial(customer_invoice_pay_locally, book=session.book,
                                         customer_id=session.customer_id, invoice_id=invoice.pk))


@never_cache
@require_POST
def portal_sign_out(request):
    request.session.pop(SESSION_KEY, None)
    return _notice(request, "signed_out", status=200)
