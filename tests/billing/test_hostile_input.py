"""Nothing a client sends produces a 500: values PostgreSQL or the calendar cannot hold are 400s naming the field."""
import json

import pytest
from rest_framework.test import APIClient

from billing.models import PricingPlan, Subscription
from tests.billing.support import create_subscription, error, subscription_body

pytestmark = pytest.mark.django_db


def post_raw(api, path, raw: str):
    return APIClient.post(api, path, raw, content_type="application/json")


def names(message: str, field: str) -> bool:
    """The error names the field, or a place inside it (`featuresList.a: ...`)."""
    return message.startswith((f"{field}:", f"{field}.", f"{field}["))


@pytest.mark.parametrize("raw, field", [
    ('{"name": "Pro", "featuresList": {"a": 1e1000}}', "featuresList"),  # 1,001 digits: beyond what JSON keeps
    ('{"name": "Pro", "featuresList": {"a\\u0000": 1}}', "featuresList"),
    ('{"name": "P\\u0000ro"}', "name"),
    ('{"name": "Pro", "agentId": 7}', "agentId"),
])
def test_plan_create_refuses_unstorable_values(api, raw, field):
    assert names(error(post_raw(api, "/v1/pricing-plans", raw), 400), field)
    assert not PricingPlan.objects.exists()


@pytest.mark.parametrize("fields, field", [
    ({"metadata": {"note": "a\u0000b"}}, "metadata"),
    ({"seatsCount": 2 ** 31}, "seatsCount"),
    ({"startDate": "0001-01-01"}, "startDate"),
    ({"endDate": "9999-12-31T23:59:59Z"}, "endDate"),
    ({"customerId": 12}, "customerId"),
    ({"netTerms": 10 ** 12}, "netTerms"),
    ({"invoiceMemo": "m" * 5001}, "invoiceMemo"),
    ({"name": "n\u0000"}, "name"),
])
def test_subscription_create_refuses_unstorable_values(api, chain, fields, field):
    raw = json.dumps(subscription_body(chain, **fields))
    assert names(error(post_raw(api, "/v1/subscriptions", raw), 400), field)
    assert not Subscription.objects.exists()


def test_subscription_details_with_a_number_beyond_1000_digits_is_400(api, chain):
    raw = json.dumps(subscription_body(chain)).replace('"subscriptionDetails"', '"x"')[:-1] + \
        ', "subscriptionDetails": {"cap": 1e-1001}}'
    assert names(error(post_raw(api, "/v1/subscriptions", raw), 400), "subscriptionDetails")


@pytest.mark.parametrize("rate", ["1e999", "1e30", '"NaN"', "true"])
def test_strategy_rates_outside_the_exact_range_are_400(api, chain, rate):
    raw = ('[{"name": "fee", "agentId": "%s", "chargeType": "recurring", "rate": %s}]' % (chain.agent.id, rate))
    resp = post_raw(api, f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies", raw)
    assert error(resp, 400).startswith("[0].rate:")


def test_patch_with_a_malformed_body_is_400(api, chain):
    subscription = create_subscription(api, chain)
    error(post_raw(api, "/v1/subscriptions", "{not json"), 400)
    error(APIClient.patch(api, f"/v1/subscriptions/{subscription['id']}", "[1, 2]", content_type="application/json"),
          400)


@pytest.mark.parametrize("path, params", [
    ("/v1/pricing-plans", {"page": "99999999999999999999"}),
    ("/v1/subscriptions", {"offset": "99999999999999999999"}),
])
def test_a_page_or_offset_past_any_list_is_400(api, path, params):
    assert error(api.get(path, params), 400).startswith(f"{next(iter(params))}:")
