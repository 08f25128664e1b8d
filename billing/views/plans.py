from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from billing.filters import PAGE_PARAMETERS, PlanFilter, openapi_parameters
from billing.selectors.plans import plan_get, plan_list
from billing.serializers.common import page_of
from billing.serializers.plans import PlanAgentLinkIn, PlanCopyIn, PlanCreateIn, PlanOut, PlanUpdateIn
from billing.services.plans import (plan_agent_link, plan_agent_unlink, plan_copy, plan_create, plan_delete,
                                    plan_update)
from accounts.api import OrgApiView
from core.filtering import filtered
from core.openapi import ErrorOut
from core.pagination import page_response
from core.serialization import parse


class PlanListCreateApi(OrgApiView):
    """Pricing plans: list (`{results, page, limit, totalPages, totalResults}`) and create."""

    @extend_schema(parameters=openapi_parameters(PlanFilter) + PAGE_PARAMETERS, responses=page_of(PlanOut))
    def get(self, request):
        """List pricing plans.

        Plans of the key's book, filtered by the query parameters, as one page `{results, page, limit, totalPages,
        totalResults}`."""
        plans = filtered(PlanFilter, request.query_params, plan_list(book=self.book))
        return page_response(plans, request.query_params, PlanOut)

    @extend_schema(request=PlanCreateIn, responses={201: PlanOut})
    def post(self, request):
        """Create a pricing plan.

        A plan, optionally linked to one agent (`agentId`); its prices are its pricing strategies, added with `POST
        /v1/pricing-plans/{plan_id}/pricing-strategies`."""
        plan = plan_create(book=self.book, **parse(PlanCreateIn, request.data))
        return Response(PlanOut(plan).data, status=201)


class PlanDetailApi(OrgApiView):
    """One pricing plan: read, change (agent links only through the link routes), delete."""

    @extend_schema(responses=PlanOut)
    def get(self, request, plan_id):
        """Get a pricing plan.

        One plan with its agent links."""
        return Response(PlanOut(plan_get(book=self.book, plan_id=plan_id)).data)

    @extend_schema(request=PlanUpdateIn, responses=PlanOut)
    def patch(self, request, plan_id):
        """Update a pricing plan.

        Name, description, `featuresList` and `isActive`; agent links change only through the link routes (`agentId`
        here is a 400)."""
        plan = plan_update(book=self.book, plan_id=plan_id, **parse(PlanUpdateIn, request.data))
        return Response(PlanOut(plan).data)

    @extend_schema(responses={204: None, 409: ErrorOut})
    def delete(self, request, plan_id):
        """Delete a pricing plan.

        409 while subscriptions use the plan (ended ones keep it for their history and invoices: deactivate it instead).
        """
        plan_delete(book=self.book, plan_id=plan_id)
        return Response(status=204)


class PlanAgentLinkApi(OrgApiView):
    """Link the plan to one more agent (409 when already linked)."""

    @extend_schema(request=PlanAgentLinkIn, responses={201: PlanOut, 409: ErrorOut})
    def post(self, request, plan_id):
        """Link a pricing plan to an agent."""
        plan = plan_agent_link(book=self.book, plan_id=plan_id, **parse(PlanAgentLinkIn, request.data))
        return Response(PlanOut(plan).data, status=201)


class PlanAgentUnlinkApi(OrgApiView):
    """Unlink an agent (400 while live subscriptions use the pair, 409 while the plan prices it)."""

    @extend_schema(responses={204: None, 400: ErrorOut, 409: ErrorOut})
    def delete(self, request, plan_id, agent_id):
        """Unlink an agent from a pricing plan."""
        plan_agent_unlink(book=self.book, plan_id=plan_id, agent_id=agent_id)
        return Response(status=204)


class PlanCopyApi(OrgApiView):
    """Copy a plan with its agent links and current strategies; `discount` is a percent off every rate."""

    @extend_schema(request=PlanCopyIn, responses={201: PlanOut})
    def post(self, request, plan_id):
        """Copy a pricing plan."""
        copy = plan_copy(book=self.book, plan_id=plan_id, **parse(PlanCopyIn, request.data))
        return Response(PlanOut(copy).data, status=201)
