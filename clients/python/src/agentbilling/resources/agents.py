"""`/v1/agents`."""
from __future__ import annotations

from agentbilling.models import Agent
from agentbilling.resources._base import Delete, Get, OffsetList, Update


class Agents(Get, Update, Delete, OffsetList):
    path = "/v1/agents"
    model = Agent

    def create(self, *, name: str, agentCode: str, **fields) -> Agent:
        return self._call("POST", self.path, body={"name": name, "agentCode": agentCode, **fields}, model=Agent)
