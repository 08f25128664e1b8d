from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from billing.filters import PAGE_PARAMETERS, StrategyFilter, openapi_parameters
from billing.selectors.plans import strategy_get, strategy_list
from billing.serializers.common import page_of
from billing.serializers.strategies import (StrategyBatchIn, StrategyBatchOut, StrategyIn, StrategyOut,
                                            StrategyPatchIn)
from billing.services.strategies import strategies_batch, strategies_create, strategy_delete, strategy_update
from accounts.api import OrgApiView
from core import clock
from core.filtering import filtered
from core.pagination import page_response
from core.serialization import parse, parse_many


class StrategyListApi(OrgApiView):
    """A plan's pricing strategies: list, create from an array, batch change `{strategies: {new, update}}`."""

    @extend_schema(parameters=openapi_parameters(StrategyFilter) + PAGE_PARAMETERS, responses=page_of(StrategyOut))
    def get(self, request, plan_id):
        """List a plan's pricing strategies.

        Strategies of one plan, filtered by the query parameters, as one page `{results, page, limit, totalPages,
        totalResults}`."""
        strategies = filtered(StrategyFilter, request.query_params, strategy_list(book=self.book, plan_id=plan_id))
        return page_response(strategies, request.query_params, StrategyOut)

    @extend_schema(request=StrategyIn(many=True), responses={201: StrategyOut(many=True)})
    def post(self, request, plan_id):
        """Create pricing strategies.

        An array of strategies for the plan, all or nothing. A `usage` strategy prices a signal (`signalId`) with a
        pricing model (`flat`, `graduated`, `volume` or `credit_pool`); `recurring`, `seat_based` and `onetime`
        strategies charge fees. An unknown agent or signal is a 404."""
        strategies = strategies_create(book=self.book, plan_id=plan_id, items=parse_many(StrategyIn, request.data),
                                       actor=self.created_by, now=clock.now())
        return Response(StrategyOut(strategies, many=True).data, status=201)

    @extend_schema(request=StrategyBatchIn, responses=StrategyBatchOut)
    def patch(self, request, plan_id):
        """Create and change a plan's strategies in one batch.

        `{strategies: {new: [...], update: [{id, ...changes}]}}`, applied all or nothing; the answer lists what was
        created and what was updated."""
        changes = parse(StrategyBatchIn, request.data)["strategies"]
        created, updated = strategies_batch(book=self.book, plan_id=plan_id, new=changes["new"],
                                            update=changes["update"], actor=self.created_by, now=clock.now())
        return Response(StrategyBatchOut({"created": created, "updated": updated}).data)


class StrategyDetailApi(OrgApiView):
    """One pricing strategy: read (deleted ones show `deletedAt`), change, soft delete."""

    @extend_schema(responses=StrategyOut)
    def get(self, request, plan_id, strategy_id):
        """Get a pricing strategy.

        One strategy of the plan; a deleted one is still readable and shows `deletedAt`."""
        return Response(StrategyOut(strategy_get(book=self.book, plan_id=plan_id, strategy_id=strategy_id)).data)

    @extend_schema(request=StrategyPatchIn, responses=StrategyOut)
    def patch(self, request, plan_id, strategy_id):
        """Update a pricing strategy.

        Any strategy field; the strategy as changed is checked again as a whole. The change prices periods not yet
        invoiced: issued invoices keep the terms they captured."""
        strategy = strategy_update(book=self.book, plan_id=plan_id, strategy_id=strategy_id,
                                   changes=parse(StrategyPatchIn, request.data), actor=self.created_by,
                                   now=clock.now())
        return Response(StrategyOut(strategy).data)

    @extend_schema(responses={204: None})
    def delete(self, request, plan_id, strategy_id):
        """Delete a pricing strategy.

        Soft delete: it stops pricing periods not yet invoiced and stays readable with `deletedAt`; issued invoices keep
        the terms they captured."""
        strategy_delete(book=self.book, plan_id=plan_id, strategy_id=strategy_id, now=clock.now(),
                        actor=self.created_by)
        return Response(status=204)
