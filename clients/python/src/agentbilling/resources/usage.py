"""`POST /v1/usage/record`: usage records, in requests of up to 100."""
from __future__ import annotations

from typing import Sequence

from agentbilling._http import Plan
from agentbilling.models import UsageRecordResponse
from agentbilling.resources._base import MAX_RECORDS_PER_REQUEST, Resource, new_idempotency_key
from agentbilling.types import UsageRecord


class Usage(Resource):
    def record(self, records: Sequence[UsageRecord], *, add_idempotency_keys: bool = True) -> UsageRecordResponse:
        """`POST /v1/usage/record`, in requests of up to 100 records; the answers are merged into one (each
        entry's `index` is its position in `records`). Records without an `idempotencyKey` get one (unless
        `add_idempotency_keys=False`), so that a retried request stores nothing twice."""
        records = [dict(record) for record in records]
        if add_idempotency_keys:
            for record in records:
                if not record.get("idempotencyKey"):
                    record["idempotencyKey"] = new_idempotency_key()
        return self._run(self._record_in_batches(records, replay_safe=add_idempotency_keys))

    def _record_in_batches(self, records: list[dict], *, replay_safe: bool) -> Plan[UsageRecordResponse]:
        merged: dict = {"processed": 0, "successful": 0, "failed": 0, "results": {"success": [], "failed": []}}
        for start in range(0, len(records), MAX_RECORDS_PER_REQUEST):
            answer = yield from self._answer("POST", "/v1/usage/record",
                                             body={"records": records[start:start + MAX_RECORDS_PER_REQUEST]},
                                             replay_safe=replay_safe, model=None)
            for name in ("processed", "successful", "failed"):
                merged[name] += answer[name]
            for outcome in ("success", "failed"):
                for entry in answer["results"][outcome]:
                    merged["results"][outcome].append({**entry, "index": entry.get("index", 0) + start})
        return UsageRecordResponse.parse(merged)
