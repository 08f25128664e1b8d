"""Hosted pages a customer opens from an email: the pay-now page of an invoice."""
import uuid

from django.conf import settings
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from billing import stripe_gateway
from billing.invoice_documents import InvoiceView, money, period_days
from billing.models import InvoiceStatus
from billing.services.payments import checkout_url, invoice_for_pay_token, invoice_pay_locally
from config.accounts.api import client_ip
from config.accounts.throttling import link_token_retry_after, record_bad_link_token
from config.core import clock


def _page(request, state: str, *, invoice=None, status: int = 200, **extra):
    context = {"state": state, "invoice": invoice, **extra}
    if invoice is not None:
        view = InvoiceView.of(invoice)
        first, last = period_days(invoice)
        context.update(view=view, business_name=view.business_name, period_first=first, period_last=last,
                       amount_due=money(invoice.amount_due, invoice.currency))
    return render(request, "portal/pay.html", context, status=status)


def _attempt(request) -> uuid.UUID:
    try:
        return uuid.UUID(request.POST.get("attempt", ""))
    except ValueError:
        return uuid.uuid4()


@never_cache
@require_http_methods(["GET", "POST"])
def pay_page(request, token: str):
    """GET: with STRIPE_SECRET_KEY, straight to a Stripe Checkout session for the amount due; without it, a
    local checkout page for development. POST (local checkout only, CSRF-protected): pay what is due."""
    ip = client_ip(request)
    retry_after = link_token_retry_after(ip)
    if retry_after is not None:  # this network has been guessing tokens
        response = _page(request, "blocked", status=429)
        response["Retry-After"] = str(retry_after)
        return response
    invoice = invoice_for_pay_token(token)
    if invoice is None:
        record_bad_link_token(ip)
        return _page(request, "unknown", status=404)
    if request.method == "POST":
        if not stripe_gateway.is_configured():
            invoice_pay_locally(token=token, attempt=_attempt(request), now=clock.now())
        return redirect(request.path, permanent=False)
    if invoice.status == InvoiceStatus.VOID:
        return _page(request, "void", invoice=invoice, status=410)
    if invoice.status in (InvoiceStatus.PAID, InvoiceStatus.REFUNDED) or invoice.amount_due <= 0:
        return _page(request, "settled", invoice=invoice)
    checkout = request.GET.get("checkout")
    if checkout == "success":
        return _page(request, "processing", invoice=invoice)
    if stripe_gateway.is_configured() and checkout != "cancelled":
        try:
            return redirect(checkout_url(invoice, pay_url=f"{settings.PUBLIC_BASE_URL}/pay/{token}"))
        except stripe_gateway.PaymentProviderError:
            return _page(request, "provider_down", invoice=invoice, status=502)
    return _page(request, "checkout", invoice=invoice, attempt=uuid.uuid4(),
                 local=not stripe_gateway.is_configured())
