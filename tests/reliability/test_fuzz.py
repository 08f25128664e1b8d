"""Fuzzing: schemathesis generates requests for every operation of the service's own OpenAPI schema
(`/v1/openapi.json`), valid and invalid, and sends them with an owner's secret key through the WSGI app.

Every answer must be: not a 5xx; a documented status with a documented content type, body and headers;
and, for every 4xx, the JSON error envelope `{message: string | string[], code?: string}`.

Valid (positive) cases address real records: their path ids, body ids and query ids (`customerId`, `planId`,
...) are replaced by records of a `World` in the key's book, so generated requests reach the services instead
of stopping at a 404. Invalid (negative) cases keep what was generated.

`FUZZ_EXAMPLES` (default 10) bounds the examples per operation so `make test` stays quick; `scripts/fuzz.sh`
runs the deeper pass (docs/decisions/reliability.md records its result).
"""
import json
import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (content_type_conformance, response_headers_conformance,
                                               response_schema_conformance, status_code_conformance)

from config.wsgi import application
from tests.reliability.world import PATH_RECORDS, World

FUZZ_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
# The coverage phase (boundary values of every parameter, unbounded by FUZZ_EXAMPLES): the deep run only.
FUZZ_COVERAGE = os.environ.get("FUZZ_COVERAGE", "0") == "1"
# The same examples on every run of the suite (stable CI); FUZZ_RANDOM=1 explores anew each time.
FUZZ_RANDOM = os.environ.get("FUZZ_RANDOM", "0") == "1"



def app(environ, start_response):
    """The service's WSGI app, minus the closing of the database connection after each request (it would
    end the test's transaction), as Django's test client does it."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        response = application(environ, start_response)
        try:
            return [b"".join(response)]
        finally:
            response.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", app)
schema.config.phases.coverage.enabled = FUZZ_COVERAGE

# Body fields and query parameters that name a record, and the World record that fills them in valid cases.
RECORD_FIELDS = {"customerId": "customer", "agentId": "agent", "signalId": "signal", "planId": "plan",
                 "subscriptionId": "subscription", "matterId": "matter", "eventId": "event", "serviceId": "service"}
# Where a path needs a particular record rather than the default of its parameter name.
POOL = {"subscription_id": "pool_subscription"}
PATH_OVERRIDES = {"/v1/invoices/{invoice_id}/payments/{payment_id}/refund": {"invoice_id": "paid_invoice"},
                  "/v1/subscriptions/{subscription_id}/credit-balance": POOL,
                  "/v1/subscriptions/{subscription_id}/credit-topup": POOL,
                  "/v1/subscriptions/{subscription_id}/credit-alerts-pause": POOL}


def error_envelope(ctx, response, case):
    """Every 4xx body is `{message: string | string[], code?: string}` and nothing else."""
    if not 400 <= response.status_code < 500:
        return None
    body = json.loads(response.content)
    assert isinstance(body, dict) and "message" in body and set(body) <= {"message", "code"}, body
    message = body["message"]
    assert isinstance(message, str) or (isinstance(message, list) and all(isinstance(m, str) for m in message)), body
    assert isinstance(body.get("code", ""), str), body
    return None


CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance, error_envelope]


def with_real_ids(value, world):
    if isinstance(value, dict):
        return {key: (world.record_id_of(RECORD_FIELDS[key]) if key in RECORD_FIELDS and isinstance(item, str)
                      else with_real_ids(item, world)) for key, item in value.items()}
    if isinstance(value, list):
        return [with_real_ids(item, world) for item in value]
    return value


def address_real_records(case, world):
    overrides = PATH_OVERRIDES.get(case.operation.path, {})
    for name in list(case.path_parameters or {}):
        if name in PATH_RECORDS:
            case.path_parameters[name] = world.record_id_of(overrides.get(name, PATH_RECORDS[name]))
    if isinstance(case.body, (dict, list)):
        case.body = with_real_ids(case.body, world)
    if case.query:
        case.query = with_real_ids(case.query, world)


@pytest.fixture
def world(api):
    """One world per operation, shared by its examples (a DELETE example may remove a record: the next
    examples then meet a 404, which is fine)."""
    return World(api)


@pytest.mark.django_db
@schema.parametrize()
@settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=not FUZZ_RANDOM, database=None,
          suppress_health_check=list(HealthCheck))
def test_operation_answers_as_documented(case, api, world):
    if case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE:
        address_real_records(case, world)
    case.call_and_validate(headers={"x-api-key": api.raw_key}, checks=CHECKS)
