"""Credit pools: balances, top-ups and the pause of their alerts."""
from __future__ import annotations

from agentbilling.models import CreditAlertsPause, CreditBalance, CreditBalanceList, CreditTopup
from agentbilling.resources._base import Resource, new_idempotency_key, path_id


class CreditBalances(Resource):
    def list(self, *, customerId=None, agentId=None, belowPercent=None) -> CreditBalanceList:
        """`{balances: [...], asOf}`, emptiest pool first (answers may be up to 30 s old)."""
        return self._call("GET", "/v1/credit-balances", model=CreditBalanceList,
                          params={"customerId": customerId, "agentId": agentId, "belowPercent": belowPercent})

    def get(self, subscription_id) -> CreditBalance:
        return self._call("GET", f"/v1/subscriptions/{path_id(subscription_id)}/credit-balance",
                          model=CreditBalance)

    def topup(self, subscription_id, *, units, idempotencyKey: str | None = None, note: str | None = None
              ) -> CreditTopup:
        """Add units to the pool. Without `idempotencyKey` one is made, so the client's own retries are
        replays; pass your own to make retries across processes safe (`created: false` on a replay)."""
        body = {"units": units, "idempotencyKey": idempotencyKey or new_idempotency_key()}
        if note is not None:
            body["note"] = note
        return self._call("POST", f"/v1/subscriptions/{path_id(subscription_id)}/credit-topup", body=body,
                          replay_safe=True, model=CreditTopup)

    def pause_alerts(self, subscription_id, *, paused: bool) -> CreditAlertsPause:
        return self._call("POST", f"/v1/subscriptions/{path_id(subscription_id)}/credit-alerts-pause",
                          body={"paused": paused}, replay_safe=True, model=CreditAlertsPause)
