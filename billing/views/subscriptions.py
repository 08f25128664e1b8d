from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from billing.filters import OFFSET_PARAMETERS, ChangelogFilter, SubscriptionFilter, openapi_parameters
from billing.selectors.subscriptions import subscription_changelog, subscription_get, subscription_list
from billing.serializers.subscriptions import (SubscriptionChangeOut, SubscriptionChangePlanIn, SubscriptionCreateIn,
                                               SubscriptionInvoiceDatesIn, SubscriptionOut, SubscriptionUpdateIn)
from billing.services.plan_changes import subscription_change_plan, subscription_plan_change_withdraw
from billing.services.subscriptions import subscription_create, subscription_update
from accounts.api import OrgApiView
from core import clock
from core.filtering import filtered
from core.openapi import ErrorOut
from core.pagination import array_response
from core.serialization import parse


class SubscriptionListCreateApi(OrgApiView):
    """Subscriptions: list (bare array, `X-Total-Count`) and create."""

    @extend_schema(parameters=openapi_parameters(SubscriptionFilter) + OFFSET_PARAMETERS,
                   responses=SubscriptionOut(many=True), description="Bare array; the total is in X-Total-Count.")
    def get(self, request):
        """List subscriptions."""
        subscriptions = filtered(SubscriptionFilter, request.query_params, subscription_list(book=self.book))
        return array_response(subscriptions, request.query_params, SubscriptionOut)

    @extend_schema(request=SubscriptionCreateIn, responses={201: SubscriptionOut, 409: ErrorOut, 422: ErrorOut})
    def post(self, request):
        """Create a subscription.

        Subscribes a customer to a plan for one of the plan's agents from `startDate`. 404 when the customer, agent or
        plan is unknown; 409 when the customer already has an overlapping subscription on the plan; 422 when the parts
        are inconsistent (an inactive plan, an agent of another book, `custom` billing without `customCycleDays`)."""
        subscription = subscription_create(book=self.book, now=clock.now(), actor=self.created_by,
                                           **parse(SubscriptionCreateIn, request.data))
        return Response(SubscriptionOut(subscription).data, status=201)


class SubscriptionDetailApi(OrgApiView):
    """One subscription: read and change (startDate and the current period are fixed)."""

    @extend_schema(responses=SubscriptionOut)
    def get(self, request, subscription_id):
        """Get a subscription.

        One subscription with its plan, current period, status and billing settings."""
        return Response(SubscriptionOut(subscription_get(book=self.book, subscription_id=subscription_id)).data)

    @extend_schema(request=SubscriptionUpdateIn, responses={200: SubscriptionOut, 409: ErrorOut, 422: ErrorOut})
    def patch(self, request, subscription_id):
        """Update a subscription.

        Any create field but those fixed at creation (`startDate`, `billingCycle`, `customCycleDays`, the customer: a
        400). 409 when the change would overlap another subscription of the customer on the plan; 422 for an impossible
        move (an ended subscription stays ended, a started one cannot become upcoming again, an inactive plan)."""
        subscription = subscription_update(book=self.book, subscription_id=subscription_id, now=clock.now(),
                                           actor=self.created_by, **parse(SubscriptionUpdateIn, request.data))
        return Response(SubscriptionOut(subscription).data)


class SubscriptionInvoiceDatesApi(OrgApiView):
    """Move when future invoices are generated (billingDay, timezone) from the next period on."""

    @extend_schema(request=SubscriptionInvoiceDatesIn, responses={200: SubscriptionOut, 409: ErrorOut, 422: ErrorOut},
                   description="Moves the billing day (and/or time zone) from the next period on; the current "
                               "period and issued invoices are untouched.")
    def patch(self, request, subscription_id):
        """Move a subscription's invoice dates."""
        subscription = subscription_update(book=self.book, subscription_id=subscription_id, now=clock.now(),
                                           actor=self.created_by, **parse(SubscriptionInvoiceDatesIn, request.data))
        return Response(SubscriptionOut(subscription).data)


class SubscriptionChangePlanApi(OrgApiView):
    """Change a subscription's plan at an instant, or withdraw a change scheduled for later."""

    @extend_schema(request=SubscriptionChangePlanIn,
                   responses={201: SubscriptionOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut})
    def post(self, request, subscription_id):
        """Change a subscription's plan.

        Ends the subscription at `effectiveAt` (default now) and starts a new one on `planId` at that instant with the
        same customer, agent, billing day, time zone, cycle, net terms, seats (unless `seatsCount` is sent), memo and
        metadata; answers 201 with the new subscription (`previousSubscriptionId`; the old one gains
        `nextSubscriptionId`). The period the change falls in is split: each side's fees by the local days it covers
        (the change day is the new side's), usage by the instant, credit pools prorated in units and price; the new
        plan's one-time fees are not charged. A future `effectiveAt` schedules the change (the new subscription is
        `upcoming`); calling this again before it takes effect replaces the scheduled change. 422: a plan not linked
        to the subscription's agent, an ended subscription, an instant outside its life; 409: a finalized invoice of
        the subscription bills the period of `effectiveAt` (the message names it)."""
        subscription = subscription_change_plan(book=self.book, subscription_id=subscription_id, now=clock.now(),
                                                actor=self.created_by, **parse(SubscriptionChangePlanIn, request.data))
        return Response(SubscriptionOut(subscription).data, status=201)

    @extend_schema(request=None, responses={200: SubscriptionOut, 404: ErrorOut, 409: ErrorOut})
    def delete(self, request, subscription_id):
        """Withdraw a scheduled plan change.

        Deletes the upcoming subscription a scheduled plan change would start and lets this one run on as before
        (its previous endDate and isForever come back); answers 200 with this subscription. 404 when no change is
        scheduled; 409 once the change has taken effect."""
        subscription = subscription_plan_change_withdraw(book=self.book, subscription_id=subscription_id,
                                                         now=clock.now(), actor=self.created_by)
        return Response(SubscriptionOut(subscription).data)


class SubscriptionChangelogApi(OrgApiView):
    """The subscription's history: plan changes, price updates, date adjustments, status moves."""

    @extend_schema(parameters=openapi_parameters(ChangelogFilter) + OFFSET_PARAMETERS,
                   responses=SubscriptionChangeOut(many=True), description="Newest first; total in X-Total-Count.")
    def get(self, request, subscription_id):
        """List a subscription's changes."""
        entries = filtered(ChangelogFilter, request.query_params,
                           subscription_changelog(book=self.book, subscription_id=subscription_id))
        return array_response(entries, request.query_params, SubscriptionChangeOut)
