from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from billing.selectors.credit_pools import cached_read, credit_balance_get, credit_balance_list
from billing.serializers.credit_pools import (CreditAlertsPauseIn, CreditAlertsPauseOut, CreditBalanceListOut,
                                              CreditBalanceOut, CreditBalanceQueryIn, CreditTopupIn, CreditTopupOut)
from billing.services.credit_pools import credit_alerts_pause, credit_topup
from accounts.api import MONEY_ROLES, OrgApiView
from core import clock
from core.openapi import ErrorOut
from core.serialization import decimal_text, parse

# Spec §8 and contract.md: balance reads may be kept privately for up to 30 seconds.
BALANCE_CACHE_CONTROL = "private, max-age=30"


def _cacheable(read: tuple) -> Response:
    answer, age = read
    response = Response(answer)
    response["Cache-Control"] = BALANCE_CACHE_CONTROL
    if age:  # an answer from the shared cache: a private cache counts its 30 seconds from the computation
        response["Age"] = str(age)
    return response


class CreditBalanceListApi(OrgApiView):
    """Every credit-pool subscription's balance, emptiest first."""

    @extend_schema(parameters=[CreditBalanceQueryIn], responses=CreditBalanceListOut,
                   description="One row per subscription whose plan sells a credit pool, lowest remainingPercent "
                               "first. Answers may be up to 30 seconds old (`asOf` says when they were computed).")
    def get(self, request):
        """List credit-pool balances."""
        query = parse(CreditBalanceQueryIn, request.query_params)
        what = "list:" + ":".join(str(query.get(name, "")) for name in ("customer_id", "agent_id"))
        what += ":" + (decimal_text(query["below_percent"]) if "below_percent" in query else "")

        def compute():
            now = clock.now()
            balances = credit_balance_list(book=self.book, now=now, **query)
            return CreditBalanceListOut({"balances": balances, "as_of": now}).data

        return _cacheable(cached_read(book=self.book, what=what, compute=compute))


class CreditBalanceDetailApi(OrgApiView):
    """One subscription's credit balance."""

    @extend_schema(responses=CreditBalanceOut,
                   description="404 when the subscription is not in the organization or its plan sells no pool. "
                               "Answers may be up to 30 seconds old.")
    def get(self, request, subscription_id):
        """Get a subscription's credit balance."""
        def compute():
            balance = credit_balance_get(book=self.book, subscription_id=subscription_id, now=clock.now())
            return CreditBalanceOut(balance).data

        return _cacheable(cached_read(book=self.book, what=f"one:{subscription_id}", compute=compute))


class CreditTopupApi(OrgApiView):
    """Add units to a subscription's pool; replays of an idempotencyKey return the same grant."""

    write_roles = MONEY_ROLES  # spec §5: owner, admin or finance

    @extend_schema(request=CreditTopupIn, responses={201: CreditTopupOut, 200: CreditTopupOut, 409: ErrorOut},
                   description="201 with `created: true`; a replay of the same idempotencyKey answers 200 with the "
                               "same grant and `created: false`; the key reused with other units or on another "
                               "subscription is a 409.")
    def post(self, request, subscription_id):
        """Top up a credit pool."""
        topup = credit_topup(book=self.book, subscription_id=subscription_id, created_by=self.created_by,
                             now=clock.now(), **parse(CreditTopupIn, request.data))
        return Response(CreditTopupOut(topup).data, status=201 if topup.created else 200)


class CreditAlertsPauseApi(OrgApiView):
    """Silence or resume a subscription's pool alert emails (an explicit state, not a toggle)."""

    write_roles = MONEY_ROLES

    @extend_schema(request=CreditAlertsPauseIn, responses=CreditAlertsPauseOut,
                   description="Sets whether pool alert emails are silenced; the countdown keeps counting. Stages "
                               "passed while paused are recorded and not emailed later.")
    def post(self, request, subscription_id):
        """Pause or resume credit-pool alerts."""
        subscription = credit_alerts_pause(book=self.book, subscription_id=subscription_id, actor=self.created_by,
                                           **parse(CreditAlertsPauseIn, request.data))
        return Response(CreditAlertsPauseOut(subscription).data)
