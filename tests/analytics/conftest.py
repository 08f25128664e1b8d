"""Analytics fixtures: the frozen API clock of the billing tests (analytics read what billing writes)."""
from tests.billing.conftest import frozen_now  # noqa: F401 (fixture)
