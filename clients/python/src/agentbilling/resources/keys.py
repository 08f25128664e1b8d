"""The key itself: `GET /v1/verify` and `GET /v1/me/key` (`client.verify()`, `client.me_key()`)."""
from __future__ import annotations

from agentbilling.models import KeyInfo, Verification
from agentbilling.resources._base import Resource


class Keys(Resource):
    def verify(self) -> Verification:
        """The key's organization (works with either key type)."""
        return self._call("GET", "/v1/verify", model=Verification)

    def me(self) -> KeyInfo:
        return self._call("GET", "/v1/me/key", model=KeyInfo)
