"""The client's pure parts, without a service: exact JSON, the record checks, what each answer means to the
recorder, the list shapes, the instrumentation's token arithmetic."""
from decimal import Decimal

import pytest

from agentbilling import RetryPolicy, build_record
from agentbilling._http import retry_after_seconds
from agentbilling._json import dumps, loads
from agentbilling.errors import APIConnectionError, APIError, KeyRevokedError, RateLimitError, error_class
from agentbilling.integrations import anthropic as anthropic_integration
from agentbilling.integrations import openai as openai_integration
from agentbilling.pagination import ARRAY, DATA_PAGINATION, HAS_MORE, RESULTS, parse_page
from agentbilling.recorder import _error_verdict

D = Decimal
RECORD = dict(customerExternalId="c", agentCode="a", signalName="s", model="m", modelProvider="p")


@pytest.mark.parametrize("value, text", [
    (D("1.50"), b"1.50"), (D("12345678.123456789"), b"12345678.123456789"), (D("-0.000001"), b"-0.000001"),
    (D("1E-20"), b"0.00000000000000000001"), (D("2.5E+3"), b"2500"), (D("0"), b"0"),
])
def test_a_decimal_is_written_as_the_json_number_of_its_digits(value, text):
    assert dumps({"rate": value}) == b'{"rate":' + text + b"}"
    assert loads(dumps({"rate": value}))["rate"] == value


def test_strings_that_look_like_the_decimal_marker_stay_strings():
    document = {"note": "\x00abc:1.5", "rate": D("1.5"), "list": ["\x00", D("2")]}
    assert loads(dumps(document)) == document


@pytest.mark.parametrize("value", [D("NaN"), D("Infinity"), float("nan")])
def test_numbers_json_cannot_hold_are_refused(value):
    with pytest.raises(ValueError):
        dumps({"quantity": value})


def test_numbers_with_a_fraction_come_back_as_decimals_and_integers_as_ints():
    assert loads(b'{"a": 0.1, "b": 7, "c": 1e2}') == {"a": D("0.1"), "b": 7, "c": D("1E+2")}


@pytest.mark.parametrize("fields, problem", [
    ({**RECORD, "customerExternalId": ""}, "customerExternalId is required"),
    ({k: v for k, v in RECORD.items() if k != "model"}, "neither was given"),
    ({**RECORD, "services": [{"model": "m", "modelProvider": "p"}]}, "not both"),
    ({**RECORD, "inputTokens": -1}, "whole number"),
    ({**RECORD, "inputTokens": 1.5}, "whole number"),
    ({**RECORD, "quantity": D("-1")}, ">= 0"),
    ({**RECORD, "quantity": float("inf")}, "finite"),
    ({**RECORD, "environment": "prod"}, "environment"),
    ({**RECORD, "idempotencyKey": "k" * 256}, "255"),
])
def test_a_record_the_service_would_refuse_raises_in_the_caller(fields, problem):
    with pytest.raises(ValueError, match=problem):
        build_record(**fields)


def test_a_record_gets_an_idempotency_key_unless_it_has_one():
    assert build_record(**RECORD)["idempotencyKey"] != build_record(**RECORD)["idempotencyKey"]
    assert build_record(**RECORD, idempotencyKey="mine")["idempotencyKey"] == "mine"


BATCH = [{"idempotencyKey": f"k{i}"} for i in range(4)]
POLICY = RetryPolicy(backoff_base=1, backoff_max=8)


@pytest.mark.parametrize("error, resend, codes", [
    (RateLimitError(429, "slow down", retry_after=7), 4, []),
    (APIError(503, "down", "auth_unavailable"), 4, []),
    (APIError(504, "gateway"), 4, []),
    (APIConnectionError("reset"), 4, []),
    (APIError(500, "boom"), 4, []),  # the first 500 is retried
    (APIError(400, ["records[1]: bad", "records[3]: worse"]), 2, ["invalid_record", "invalid_record"]),
    (APIError(400, "records: Expected a list."), 0, ["http_400"] * 4),
    (KeyRevokedError(401, "revoked", "key_revoked"), 0, ["key_revoked"] * 4),
])
def test_what_each_answer_means_for_a_batch(error, resend, codes):
    verdict = _error_verdict(BATCH, error, attempt=0, server_errors=0, policy=POLICY, max_attempts=None)
    assert len(verdict.resend or []) == resend
    assert [failure.code for failure in verdict.failures] == codes
    if isinstance(error, RateLimitError):
        assert verdict.wait == 7  # Retry-After, not the backoff


def test_a_second_500_and_spent_attempts_make_failures():
    second = _error_verdict(BATCH, APIError(500, "boom"), attempt=1, server_errors=1, policy=POLICY,
                            max_attempts=None)
    assert {failure.code for failure in second.failures} == {"server_error"} and not second.resend
    spent = _error_verdict(BATCH, APIError(503, "down"), attempt=2, server_errors=0, policy=POLICY, max_attempts=3)
    assert {failure.code for failure in spent.failures} == {"retries_exhausted"}


def test_backoff_doubles_up_to_its_ceiling_with_jitter():
    delays = [POLICY.delay(attempt) for attempt in range(6)]
    for attempt, delay in enumerate(delays):
        ceiling = min(8, 2 ** attempt)
        assert ceiling / 2 <= delay <= ceiling


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after_seconds({"retry-after": "12"}) == 12
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0  # in the past
    assert retry_after_seconds({}) is None


def test_error_classes_follow_status_and_code():
    assert error_class(401, "key_revoked") is KeyRevokedError
    assert error_class(418, None) is APIError


@pytest.mark.parametrize("shape, body, headers, params, expected", [
    (ARRAY, [1, 2], {"x-total-count": "5"}, {"limit": 2, "offset": 2}, ([1, 2], 5, True, {"limit": 2, "offset": 4})),
    (ARRAY, [5], {"x-total-count": "5"}, {"limit": 2, "offset": 4}, ([5], 5, False, None)),
    (HAS_MORE, {"data": [1], "hasMore": True}, {}, {"limit": 1, "offset": 0},
     ([1], None, True, {"limit": 1, "offset": 1})),
    (RESULTS, {"results": [1], "page": 1, "limit": 1, "totalPages": 2, "totalResults": 2}, {}, {"page": 1},
     ([1], 2, True, {"page": 2})),
    (DATA_PAGINATION, {"data": [1], "pagination": {"page": 2, "limit": 1, "total": 2, "totalPages": 2}}, {},
     {"page": 2}, ([1], 2, False, None)),
])
def test_each_list_shape_says_what_comes_next(shape, body, headers, params, expected):
    assert parse_page(shape, body, headers, params) == expected


def test_openai_usage_counts_cached_prompt_tokens_as_cache_reads_only():
    chat = {"model": "gpt-4o", "usage": {"prompt_tokens": 100, "completion_tokens": 7,
                                          "prompt_tokens_details": {"cached_tokens": 60}}}
    call = openai_integration.model_call(chat, provider="openai")
    assert (call.inputTokens, call.cacheReadTokens, call.outputTokens, call.cacheWriteTokens) == (40, 60, 7, 0)
    embedding = {"model": "text-embedding-3-small", "usage": {"prompt_tokens": 12, "total_tokens": 12}}
    assert openai_integration.model_call(embedding, provider="openai").inputTokens == 12
    assert openai_integration.model_call({"model": "gpt-4o"}, provider="openai") is None  # no usage: nothing


def test_anthropic_usage_keeps_cache_reads_and_writes_apart():
    message = {"model": "claude-x", "usage": {"input_tokens": 5, "output_tokens": 9, "cache_read_input_tokens": 70,
                                              "cache_creation_input_tokens": 30}}
    call = anthropic_integration.model_call(message, provider="anthropic")
    assert (call.inputTokens, call.outputTokens, call.cacheReadTokens, call.cacheWriteTokens) == (5, 9, 70, 30)
