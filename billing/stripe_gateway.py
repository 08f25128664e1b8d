"""The Stripe boundary: webhook signature checks, Checkout sessions and refunds. Nothing else talks to Stripe."""
import logging
import time
from decimal import Decimal

import stripe
from django.conf import settings

from core import exact_json
from core.errors import ApiError, BadRequest, Unprocessable
from core.money import to_minor_units
from core.serialization import unstorable_message, unstorable_reason

logger = logging.getLogger("billing.payments")

# Stripe's own default: a signed event older than this is refused (replays of captured requests).
SIGNATURE_TOLERANCE_SECONDS = 300

# How many times a call that Stripe did not answer within STRIPE_TIMEOUT_SECONDS is tried again (with the same
# idempotency key, so a retried refund refunds once).
STRIPE_RETRIES = 1
_clients: dict = {}


def _bounded() -> None:
    """Stripe's client as every call here uses it: STRIPE_TIMEOUT_SECONDS a try, STRIPE_RETRIES more tries. Its own
    defaults wait 80 seconds a try, twice more: a pay page then hung for minutes, and a refund, which runs while it
    holds its invoice's and payment's rows, held up that invoice's webhooks as long."""
    timeout = settings.STRIPE_TIMEOUT_SECONDS
    if timeout not in _clients:
        _clients[timeout] = stripe.new_default_http_client(timeout=timeout)
    stripe.default_http_client = _clients[timeout]
    stripe.max_network_retries = STRIPE_RETRIES


# The smallest and largest amount Stripe charges in one payment, in minor units, for the currencies we know them
# of (Stripe's "minimum and maximum charge amounts"): a Checkout session for less or more is refused with an
# InvalidRequestError, so it is not asked for. Other currencies go to Stripe, and its refusal reads the same.
CHECKOUT_AMOUNT_LIMITS_CENTS = {"usd": (50, 99_999_999)}  # USD 0.50 to USD 999,999.99

# Stripe's answers that refuse this request itself (4xx: its parameters, the card): asking again gets the same
# answer. Every other StripeError (no answer, 429, 5xx, a key it does not accept) is an outage of ours or theirs.
REFUSALS = (stripe.InvalidRequestError, stripe.CardError)


class PaymentProviderError(ApiError):
    status, code, code_shown = 502, "payment_provider_error", True


class PaymentRefused(Unprocessable):
    """The provider does not take this payment (an amount outside its limits, a parameter it refuses). Not a 5xx:
    nothing is down, and trying again gets the same answer. 422 rather than 409: the request was understood and
    cannot be carried out as it stands, with no competing change to resolve; the invoice stays payable otherwise."""
    code, code_shown = "payment_refused", True


def checkout_accepts(*, amount_cents: int, currency: str) -> bool:
    """False for an amount outside Stripe's charge limits of a currency in CHECKOUT_AMOUNT_LIMITS_CENTS."""
    limits = CHECKOUT_AMOUNT_LIMITS_CENTS.get(currency.lower())
    return limits is None or limits[0] <= amount_cents <= limits[1]


def is_configured() -> bool:
    return bool(settings.STRIPE_SECRET_KEY)


# Stripe's key prefixes say the mode the key charges in (restricted keys included).
_KEY_MODES = {"sk_live_": True, "rk_live_": True, "sk_test_": False, "rk_test_": False}


def takes_mode(livemode: bool) -> bool:
    """Whether the configured key charges in the mode of a book (live or test): a live key would take real money
    for a test invoice, whose payment the webhook then refuses to record (an event's livemode must match the
    invoice's book), and a test key cannot take a live customer's money. A key whose prefix names no mode is
    trusted."""
    key = settings.STRIPE_SECRET_KEY or ""
    mode = next((live for prefix, live in _KEY_MODES.items() if key.startswith(prefix)), None)
    return mode is None or mode == livemode


def pays_online(amount: Decimal, currency: str, *, livemode: bool) -> bool:
    """Whether Stripe is configured, charges in the book's mode and takes this amount (what a pay button or a PDF
    may promise)."""
    return (is_configured() and takes_mode(livemode)
            and checkout_accepts(amount_cents=to_minor_units(amount), currency=currency))


def _signed_at(signature_header: str) -> int:
    """The header's timestamp, read exactly as Stripe's verification read it (the first part whose key is `t`):
    called once that verification passed, so it is there and a whole number."""
    parts = [part.split("=", 2) for part in signature_header.split(",")]
    return int([part[1] for part in parts if part[0] == "t"][0])


def verify_event(payload: bytes, signature_header: str) -> dict:
    """The event of a webhook request whose `Stripe-Signature` (t=..., v1=HMAC-SHA256 of "{t}.{body}" with
    STRIPE_WEBHOOK_SECRET) verifies, compared in constant time within the timestamp tolerance; 400 otherwise."""
    if not settings.STRIPE_WEBHOOK_SECRET:
        raise BadRequest("Stripe webhooks are not configured on this deployment (STRIPE_WEBHOOK_SECRET is unset).")
    if not signature_header.isascii():
        # Signatures are hex: a header beyond ASCII never verifies, and Stripe's constant-time comparison raises
        # TypeError on it rather than saying so.
        raise BadRequest("Stripe-Signature does not verify.", code="invalid_signature")
    try:
        stripe.WebhookSignature.verify_header(payload.decode("utf-8"), signature_header,
                                              settings.STRIPE_WEBHOOK_SECRET, SIGNATURE_TOLERANCE_SECONDS)
    except (stripe.SignatureVerificationError, UnicodeDecodeError):
        raise BadRequest("Stripe-Signature does not verify.", code="invalid_signature")
    if _signed_at(signature_header) > time.time() + SIGNATURE_TOLERANCE_SECONDS:
        # Stripe's check bounds only the past: a signature dated ahead would stay replayable until then.
        raise BadRequest("Stripe-Signature is dated in the future.", code="invalid_signature")
    try:
        # The API's reader (exact numbers, duplicate keys refused) and its checks of what could be stored.
        event = exact_json.loads(payload.decode("utf-8"))
    except (ValueError, RecursionError):
        raise BadRequest("The webhook body is not JSON the service reads.")
    if not isinstance(event, dict):
        raise BadRequest("The webhook body is not a Stripe event.")
    reason = unstorable_reason(event)
    if reason:
        raise BadRequest([unstorable_message(reason)])
    return event


def checkout_session_url(*, invoice_id: str, title: str, amount_cents: int, currency: str, customer_email: str,
                         success_url: str, cancel_url: str, livemode: bool) -> str:
    """A Checkout session for the amount due; its metadata names the invoice for the webhook. `PaymentRefused`
    when the key charges in the other mode than the invoice's book (`takes_mode`) or Stripe does not take the
    amount (outside its known limits), Stripe not called, or when it refuses the session; `PaymentProviderError`
    when it does not answer."""
    if not takes_mode(livemode):
        logger.warning("invoice %s: STRIPE_SECRET_KEY charges in %s mode, the invoice is in the %s book; no checkout "
                       "session", invoice_id, "test" if livemode else "live", "live" if livemode else "test")
        raise PaymentRefused("Online payment of this invoice is not available on this deployment.")
    if not checkout_accepts(amount_cents=amount_cents, currency=currency):
        logger.info("invoice %s: %s minor units of %s are outside Stripe's charge limits; no checkout session",
                    invoice_id, amount_cents, currency)
        raise PaymentRefused("The payment provider does not take a payment of this amount.")
    metadata = {"invoiceId": invoice_id}
    _bounded()
    try:
        session = stripe.checkout.Session.create(
            api_key=settings.STRIPE_SECRET_KEY, mode="payment", client_reference_id=invoice_id,
            line_items=[{"quantity": 1, "price_data": {"currency": currency, "unit_amount": amount_cents,
                                                       "product_data": {"name": title}}}],
            customer_email=customer_email or None, metadata=metadata, payment_intent_data={"metadata": metadata},
            success_url=success_url, cancel_url=cancel_url)
    except REFUSALS as exc:
        logger.warning("invoice %s: stripe refused the checkout session: %s %s (%s)", invoice_id,
                       exc.__class__.__name__, exc.code or "", exc.user_message or exc)
        raise PaymentRefused("The payment provider refused this payment.")
    except stripe.StripeError as exc:
        logger.warning("stripe checkout session failed: %s", exc.__class__.__name__)
        raise PaymentProviderError("The payment provider is unavailable; try again in a moment.")
    return session.url


def refund(*, payment_intent: str, amount_cents: int, idempotency_key: str) -> str:
    """Refund part or all of a payment at Stripe; the idempotency key makes a retried call refund once.
    `PaymentRefused` (422) when Stripe refuses it, asking again getting the same answer; among them a key sent
    before with another amount: a refund of this payment whose answer was lost (Stripe may have made it), which a
    request with that amount records; `PaymentProviderError` (502) when Stripe does not answer. Returns the refund's
    id."""
    _bounded()
    try:
        result = stripe.Refund.create(api_key=settings.STRIPE_SECRET_KEY, payment_intent=payment_intent,
                                      amount=amount_cents, idempotency_key=idempotency_key)
    except stripe.IdempotencyError:
        logger.warning("stripe refund: key %s was sent before with another amount", idempotency_key)
        raise PaymentRefused("A refund of this payment with another amount was sent to Stripe and its answer was "
                             "lost, so it may have been made there; send that refund again with the same amount to "
                             "record it before refunding more.")
    except REFUSALS as exc:
        logger.warning("stripe refused the refund: %s %s (%s)", exc.__class__.__name__, exc.code or "",
                       exc.user_message or exc)
        raise PaymentRefused(f"Stripe refused the refund: {exc.user_message or exc}")
    except stripe.StripeError as exc:
        logger.warning("stripe refund failed: %s", exc.__class__.__name__)
        raise PaymentProviderError(f"Stripe did not answer the refund: {exc.user_message or exc}; nothing was "
                                   "recorded here, and sending the same refund again refunds once.")
    return result.id


def charge_refunds(*, charge_id: str) -> list[tuple[str, int]]:
    """Every refund of a charge at Stripe, as (refund id, amount in cents): what a `charge.refunded` event whose charge
    does not list them refers to (Stripe's API versions since 2022-11-15 leave the list out). `PaymentProviderError`
    (502) when Stripe does not answer."""
    _bounded()
    try:
        listed = stripe.Refund.list(api_key=settings.STRIPE_SECRET_KEY, charge=charge_id, limit=100)
    except stripe.StripeError as exc:
        logger.warning("stripe refunds of %s not listed: %s", charge_id, exc.__class__.__name__)
        raise PaymentProviderError(f"Stripe did not answer the list of the charge's refunds: {exc.user_message or exc}")
    return [(refund.id, refund.amount) for refund in listed.auto_paging_iter()]
