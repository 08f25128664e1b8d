"""`/v1/jobs`: work the service goes on with after answering."""
from __future__ import annotations

import time

from agentbilling._http import Plan, Sleep
from agentbilling.models import Job
from agentbilling.resources._base import Resource, path_id


class Jobs(Resource):
    """Work the service goes on with after answering (the cost backfill of `events.map_model`, the rest of a
    `matter_rules.apply` sweep): those answers carry a `jobId`."""
    path = "/v1/jobs"
    FINISHED = ("succeeded", "failed")

    def get(self, id) -> Job:
        return self._call("GET", f"{self.path}/{path_id(id)}", model=Job)

    def wait(self, id, *, timeout: float = 300.0, interval: float = 1.0) -> Job:
        """The job once it has finished (`status` succeeded or failed: check it); `TimeoutError` when it is still
        queued or running after `timeout` seconds."""
        return self._run(self._polled(id, timeout=timeout, interval=interval))

    def _polled(self, id, *, timeout: float, interval: float) -> Plan[Job]:
        deadline = time.monotonic() + timeout
        while True:
            job = yield from self._answer("GET", f"{self.path}/{path_id(id)}", model=Job)
            if job.status in self.FINISHED:
                return job
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"job {id} is still {job.status} ({job.percent}%) after {timeout} s")
            yield Sleep(min(interval, left))
