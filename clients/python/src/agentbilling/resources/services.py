"""`/v1/services`: the read-only services catalog."""
from __future__ import annotations

from agentbilling.models import CatalogService
from agentbilling.pagination import DATA_PAGINATION
from agentbilling.resources._base import Get, PageList


class Services(Get, PageList):
    """`list` answers `{data, pagination}`; filters `provider`, `serviceType`, `isApi`, `search`."""

    path = "/v1/services"
    model = CatalogService
    shape = DATA_PAGINATION
