"""`/v1/customer-alerts`: spend watches on one customer."""
from __future__ import annotations

from agentbilling.models import CustomerAlert
from agentbilling.resources._base import Create, Delete, ListAll, Update


class CustomerAlerts(ListAll, Create, Update, Delete):
    path = "/v1/customer-alerts"
    model = CustomerAlert
