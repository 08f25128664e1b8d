"""`/v1/subscriptions`: plan changes, changelog, revenue."""
from __future__ import annotations

from agentbilling.models import Model, Subscription
from agentbilling.pagination import ARRAY
from agentbilling.resources._base import Get, OffsetList, Update


class Subscriptions(Get, Update, OffsetList):
    path = "/v1/subscriptions"
    model = Subscription

    def create(self, *, name: str, planId, agentId, customerId, startDate, **fields) -> Subscription:
        return self._call("POST", self.path, model=Subscription, body={
            "name": name, "planId": str(planId), "agentId": str(agentId), "customerId": str(customerId),
            "startDate": startDate, **fields})

    def update_invoice_dates(self, id, **fields) -> Subscription:
        return self._call("PATCH", f"{self._member(id)}/invoice-dates", body=fields, model=Subscription)

    def change_plan(self, id, *, planId, **fields) -> Subscription:
        """End the subscription at `effectiveAt` (default now) and start one on `planId` there; returns the new
        one. Optional `effectiveAt`, `seatsCount`, `name`. Again before it takes effect: replaces the change."""
        return self._call("POST", f"{self._member(id)}/change-plan", body={"planId": str(planId), **fields},
                          model=Subscription)

    def withdraw_plan_change(self, id) -> Subscription:
        """Withdraw the subscription's scheduled plan change; returns the subscription, running on as before."""
        return self._call("DELETE", f"{self._member(id)}/change-plan", model=Subscription)

    def changelog(self, id, **filters):
        """Every changelog entry, newest first."""
        return self._iter(ARRAY, f"{self._member(id)}/changelog", filters)

    def revenue(self, id, *, startDate=None, endDate=None) -> Model:
        return self._call("GET", f"{self._member(id)}/revenue", params={"startDate": startDate, "endDate": endDate})
