"""Request helpers for the billing API tests."""


def ok(resp, status=200):
    assert resp.status_code == status, (resp.status_code, resp.content[:600])
    return resp.json() if resp.content else None


def error(resp, status) -> str:
    """The error message (string or list) as one string, after checking the status."""
    assert resp.status_code == status, (resp.status_code, resp.content[:600])
    message = resp.json()["message"]
    return " | ".join(message) if isinstance(message, list) else message


def create_plan(api, agent_id=None, **fields) -> dict:
    body = {"name": "Pro", **fields}
    if agent_id:
        body["agentId"] = str(agent_id)
    return ok(api.post("/v1/pricing-plans", body), 201)


def flat_usage(chain, rate="0.25", **fields) -> dict:
    return {"name": "per page", "agentId": str(chain.agent.id), "chargeType": "usage",
            "signalId": str(chain.signal.id), "pricingModel": "flat", "rate": rate, **fields}


def recurring(chain, rate="20", **fields) -> dict:
    return {"name": "platform fee", "agentId": str(chain.agent.id), "chargeType": "recurring", "rate": rate, **fields}


def tiered(chain, model, tiers, **fields) -> dict:
    return {"name": f"{model} usage", "agentId": str(chain.agent.id), "chargeType": "usage",
            "signalId": str(chain.signal.id), "pricingModel": model, "tiers": tiers, **fields}


def create_strategies(api, plan_id, items) -> list[dict]:
    return ok(api.post(f"/v1/pricing-plans/{plan_id}/pricing-strategies", items), 201)


def subscription_body(chain, **fields) -> dict:
    return {"name": "Main", "planId": chain.plan["id"], "agentId": str(chain.agent.id),
            "customerId": str(chain.customer.id), "startDate": "2025-01-01T00:00:00Z", **fields}


def create_subscription(api, chain, **fields) -> dict:
    return ok(api.post("/v1/subscriptions", subscription_body(chain, **fields)), 201)


def changelog(api, subscription_id, **params) -> list[dict]:
    return ok(api.get(f"/v1/subscriptions/{subscription_id}/changelog", params))
