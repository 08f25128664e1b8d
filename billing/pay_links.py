"""Pay-now links: `{PUBLIC_BASE_URL}/pay/{token}`. A token is an HMAC under SECRET_KEY of the invoice and a
nonce stored on it, so only its digest is stored, a resend gives the same link again, and a rotated key retires it.
A void keeps the token, so the link opens the invoice's voided page; it is no longer live."""
import base64
import hashlib
import hmac

from django.conf import settings

from billing.models import Invoice, InvoiceStatus


def pay_token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def pay_token_of(invoice: Invoice, nonce: str) -> str:
    mac = hmac.new(settings.SECRET_KEY.encode(), f"pay-link:{invoice.pk}:{nonce}".encode(), hashlib.sha256)
    return base64.urlsafe_b64encode(mac.digest()).rstrip(b"=").decode()


def live_pay_token(invoice: Invoice) -> str | None:
    """The token of the invoice's live pay link, None when it has none (never sent, voided, key rotated)."""
    if invoice.status == InvoiceStatus.VOID or not (invoice.pay_token_digest and invoice.pay_token_nonce):
        return None
    token = pay_token_of(invoice, invoice.pay_token_nonce)
    return token if hmac.compare_digest(pay_token_digest(token), invoice.pay_token_digest) else None


def pay_url(token: str) -> str:
    return f"{settings.PUBLIC_BASE_URL}/pay/{token}"
