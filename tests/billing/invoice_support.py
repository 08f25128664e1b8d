"""Helpers of the invoice tests: a billing chain built through the API, ledger rows, generate, and Stripe's
webhook signature exactly as Stripe computes it."""
import hashlib
import hmac
import json
import re
import time
import uuid
import zlib
from datetime import datetime
from decimal import Decimal
from email import message_from_bytes, policy
from pathlib import Path
from types import SimpleNamespace

from django.conf import settings

from tests.billing.support import create_plan, create_strategies, create_subscription, ok
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, UsageEventFactory
from tests.mail import SEPARATOR

D = Decimal
JAN = ("2025-01-01T00:00:00Z", "2025-01-31T23:59:59Z")
FEB = ("2025-02-01T00:00:00Z", "2025-02-28T23:59:59Z")
WEBHOOK_SECRET = "whsec_test_invoices"
TIERS = [{"lower": 0, "upper": 100, "rate": "0.10"}, {"lower": 100, "upper": None, "rate": "0.05"}]


def usage(rate="0.25", model="flat", **fields) -> dict:
    return {"chargeType": "usage", "pricingModel": model, "rate": rate, **fields}


def tiered(model, tiers=TIERS, **fields) -> dict:
    return {"chargeType": "usage", "pricingModel": model, "tiers": tiers, **fields}


def credit_pool(pool_units, pool_price, overage_rate) -> dict:
    return tiered("credit_pool", [{"lower": 0, "upper": pool_units, "rate": pool_price},
                                  {"lower": pool_units, "upper": None, "rate": overage_rate}])


def recurring(rate, frequency="monthly") -> dict:
    return {"chargeType": "recurring", "rate": rate, "billingFrequency": frequency}


def onetime(rate) -> dict:
    return {"chargeType": "onetime", "rate": rate}


def seats(rate, minimum=None) -> dict:
    strategy = {"chargeType": "seat_based", "pricingModel": "flat", "rate": rate}
    if minimum is not None:
        strategy["minimumCommitment"] = minimum
    return strategy


def billing_chain(api, book, strategies, *, customer=None, signal_type="usage", start="2025-01-01T00:00:00Z",
                  **subscription_fields) -> SimpleNamespace:
    """customer + agent + signal + plan with `strategies` (agent and signal filled in) + an active subscription."""
    customer = customer or CustomerFactory(book=book, email="billing@client.example.com")
    agent = AgentFactory(book=book)
    signal = SignalFactory(book=book, agent=agent, type=signal_type)
    plan = create_plan(api, agent.id)
    items = [{"name": f"strategy {index}", "agentId": str(agent.id), **strategy} for index, strategy in
             enumerate(strategies)]
    for item in items:
        if item["chargeType"] == "usage":
            item.setdefault("signalId", str(signal.id))
    chain = SimpleNamespace(customer=customer, agent=agent, signal=signal, plan=plan, book=book)
    chain.strategies = create_strategies(api, plan["id"], items) if items else []
    subscription_fields.setdefault("status", "active")
    chain.subscription = create_subscription(api, chain, startDate=start, **subscription_fields)
    return chain


def event(chain, quantity, at: str, *, signal=None):
    """A ledger row for the chain's customer, agent and signal at an ISO instant."""
    signal = signal or chain.signal
    return UsageEventFactory(book=chain.book, customer=chain.customer, signal=signal, agent=signal.agent,
                             quantity=D(str(quantity)),
                             usage_date=datetime.fromisoformat(at.replace("Z", "+00:00")))


def generate(api, chain, period=JAN, **fields):
    body = {"customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"], **fields}
    if period is not None:
        body["billingPeriodStart"], body["billingPeriodEnd"] = period
    return api.post("/v1/invoices/generate", body)


def draft(api, chain, period=JAN, **fields) -> dict:
    body = ok(generate(api, chain, period, **fields), 201)
    assert body["status"] == "draft"
    return body


def amounts(invoice: dict) -> list[tuple[str, float]]:
    return [(line["chargeType"], line["amount"]) for line in invoice["lines"]]


# --------------------------------------------------------------------------- Stripe webhook

def stripe_event(invoice_id: str, amount_cents: int, *, payment_intent: str | None = None,
                 event_type="checkout.session.completed", livemode=False, **session) -> bytes:
    """A Checkout event as Stripe sends it (compact JSON, metadata.invoiceId, amount_total in cents)."""
    obj = {"id": f"cs_test_{uuid.uuid4().hex}", "object": "checkout.session", "amount_total": amount_cents,
           "currency": "usd", "payment_intent": payment_intent or f"pi_test_{uuid.uuid4().hex}",
           "payment_status": "paid", "status": "complete", "mode": "payment",
           "metadata": {"invoiceId": str(invoice_id)}, **session}
    return json.dumps({"id": f"evt_test_{uuid.uuid4().hex}", "object": "event", "type": event_type,
                       "livemode": livemode, "created": int(time.time()), "data": {"object": obj}},
                      separators=(",", ":")).encode()


def stripe_signature(body: bytes, secret: str = WEBHOOK_SECRET, timestamp: int | None = None) -> str:
    timestamp = int(time.time()) if timestamp is None else timestamp
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def post_webhook(client, body: bytes, signature: str | None = None):
    return client.generic("POST", "/v1/webhooks/stripe", body, content_type="application/json",
                          HTTP_STRIPE_SIGNATURE=stripe_signature(body) if signature is None else signature)


def pay(client, invoice: dict, amount_cents: int | None = None, **event_fields):
    cents = round(Decimal(str(invoice["total"])) * 100) if amount_cents is None else amount_cents
    return post_webhook(client, stripe_event(invoice["id"], int(cents), **event_fields))


def raw_messages() -> list:
    """Every message the file backend wrote, parsed whole (attachments included), oldest first."""
    folder = Path(settings.EMAIL_FILE_PATH)
    files = sorted(folder.glob("*.log"), key=lambda path: (path.stat().st_mtime_ns, path.name)) \
        if folder.is_dir() else []
    return [message_from_bytes(chunk, policy=policy.default) for path in files
            for chunk in path.read_bytes().split(SEPARATOR) if chunk.strip()]


def pay_token(mail_text: str) -> str:
    match = re.search(r"/pay/([A-Za-z0-9_\-]+)", mail_text)
    assert match, "no pay-now link in the email"
    return match.group(1)


def pdf_text(pdf: bytes) -> str:
    """The text a reader sees, from the PDF's content streams (fpdf2 writes each cell as one `(...) Tj`)."""
    chunks = []
    # Each stream is cut at its declared /Length: a compressed stream can itself end in a carriage return,
    # which a search for the `endstream` keyword would cut off (and the text with it).
    for match in re.finditer(rb"/Length (\d+)\s*>>\s*stream\r?\n", pdf):
        stream = pdf[match.end():match.end() + int(match.group(1))]
        try:
            stream = zlib.decompress(stream)
        except zlib.error:
            pass
        chunks += [text.decode("latin-1") for text in re.findall(rb"\(((?:[^()\\]|\\.)*)\)\s*Tj", stream)]
    return "\n".join(chunk.replace("\\(", "(").replace("\\)", ")").replace("\\\\", "\\") for chunk in chunks)
