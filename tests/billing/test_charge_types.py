"""Each charge type is one entry of the pricing engine (`billing.pricing.engine.CHARGES`) that answers every money
question about it: a charge type registered there alone is priced on an invoice, in revenue and in MRR, and no
module outside billing tells charge types apart (docs/architecture.md, "A new charge type")."""
import ast
from pathlib import Path

import pytest

from billing.models import PricingStrategy
from billing.pricing.engine import CHARGES, Charge
from tests.analytics.support import get, money
from tests.billing.invoice_support import JAN, billing_chain, draft, generate, recurring
from tests.billing.support import error

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
APPS_OUTSIDE_BILLING = ("analytics", "controls", "portal", "console", "customers", "matters", "catalog", "core",
                        "accounts", "jobs", "webhooks", "config")


class DoubleFeeCharge(Charge):
    """A throwaway charge type: twice its rate per billing frequency, recognized by the day like a fee."""

    charge_type, figure = "double_fee", "recurring"

    def line(self, terms, *, subscription, period, quantity):
        return self._fee_line(terms, subscription=subscription, period=period)

    def periodic_fee(self, terms, *, seats):
        return terms.rate * 2


@pytest.fixture
def double_fee():
    CHARGES[DoubleFeeCharge.charge_type] = DoubleFeeCharge()
    yield DoubleFeeCharge.charge_type
    del CHARGES[DoubleFeeCharge.charge_type]


def test_a_charge_type_registered_in_the_engine_is_priced_on_the_invoice_in_revenue_and_in_mrr(api, book,
                                                                                               double_fee):
    """A 12.50 monthly rate from 2025-01-01: January's invoice bills 25.00, revenue recognizes 25.00 over
    January (every day of the period), and the run-rate MRR is 25.00 a month."""
    chain = billing_chain(api, book, [recurring("12.5")])
    # The API offers the four charge types of the interface; the registered one is set below it.
    PricingStrategy.objects.filter(pk=chain.strategies[0]["id"]).update(charge_type=double_fee)

    invoice = draft(api, chain, JAN)
    assert [(line["chargeType"], line["quantity"], line["amount"]) for line in invoice["lines"]] == [
        (double_fee, 1, 25)]
    assert invoice["total"] == 25

    revenue = get(api, "/v1/analytics/revenue", startDate="2025-01-01", endDate="2025-01-31")
    assert (money(revenue["breakdown"]["recurring"]), money(revenue["revenue"])) == (25, 25)

    mrr = get(api, "/v1/analytics/mrr", variant="runRate", subscriptionId=chain.subscription["id"])
    assert (money(mrr["breakdown"][0]["recurring"]), money(mrr["mrr"])) == (25, 25)


def test_without_its_entry_the_engine_refuses_the_charge_type(api, book):
    chain = billing_chain(api, book, [recurring("12.5")])
    PricingStrategy.objects.filter(pk=chain.strategies[0]["id"]).update(charge_type="double_fee")
    assert "double_fee" not in CHARGES
    assert "chargeType: Unknown charge type 'double_fee'" in error(generate(api, chain, JAN), 422)


def charge_type_comparisons(source: str) -> list[int]:
    """Lines of `source` that compare a charge type: `ChargeType.X` or a `.charge_type` in a comparison."""
    def names_a_charge_type(node) -> bool:
        return isinstance(node, ast.Attribute) and (
            node.attr == "charge_type" or (isinstance(node.value, ast.Name) and node.value.id == "ChargeType"))
    return [node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Compare)
            and any(names_a_charge_type(part) for part in [node.left, *node.comparators])]


def test_no_module_outside_billing_compares_a_charge_type():
    found = {}
    for app in APPS_OUTSIDE_BILLING:
        for path in sorted((ROOT / app).rglob("*.py")):
            if "migrations" not in path.parts and (lines := charge_type_comparisons(path.read_text())):
                found[str(path.relative_to(ROOT))] = lines
    assert not found, f"ask the pricing engine's charge entry (billing.pricing.engine.charge_of) instead: {found}"


@pytest.mark.parametrize("source, compares", [
    ("if strategy.charge_type == ChargeType.RECURRING:\n    pass", True),
    ("x = line.charge_type in ('usage', 'seat_based')", True),
    ("if ChargeType.ONETIME != kind:\n    pass", True),
    ("charge = charge_of(strategy.charge_type)", False),
    ("label = line.charge_type", False),
])
def test_the_scan_sees_a_comparison_of_charge_types(source, compares):
    assert bool(charge_type_comparisons(source)) is compares
