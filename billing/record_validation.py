"""Validation of `POST /v1/usage/record` bodies, written for the hot path.

A request body is checked as a whole first (1 to 100 records, each an object in exactly one of the two
shapes: a 400 otherwise, as spec §2 says), then each record on its own: a record with a bad field
becomes a per-record failure (`invalid_record`, not stored) and never spoils its neighbours. A field the
interface does not list for a record (or for a `services[]` entry) fails its record alone too (`unknown_field`,
naming the field and the one probably meant): a misspelled `inputToken` would otherwise be ignored and the event
stored without its input cost.

Numbers arrive exact: the API's parser reads a JSON number with a fraction or exponent as the Decimal it
spells (core/api_json.py), so a quantity is checked as written and stored as written (the ledger's
quantity is an unbounded `numeric`); only one with more than `QUANTITY_PLACES` decimal places is refused,
never rounded.

Plain Python rather than one DRF serializer per record: a batch of 100 records is validated in well
under a millisecond, and the error strings keep the `field: message` form of the rest of the API. The usual batch
(every record valid) is read by billing/record_decoding.py instead, which builds the very drafts this module
builds in one pass in C and hands every other batch to this module: the rules live here.
"""
import difflib
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

from catalog.event_pricing import ServiceUsage
from catalog.resolution import normalize_model, normalize_provider, too_long_lower_cased
from core.clock import YEAR_RANGE_MESSAGE, parse_instant
from core.errors import ApiError, BadRequest
from core.serialization import SURROGATE_MESSAGE, text_problem, unstorable_reason
from customers.models import Environment

MAX_RECORDS = 100
MAX_NAME_LENGTH = 255
# Numeric maxima of a record (docs/decisions/usage-recording.md "Numeric bounds"): a value beyond one fails its
# record alone (`out_of_range`, not stored). Each keeps its column far from overflow (tokens: BIGINT; quantity:
# unbounded numeric, every sum of it exact) and, with catalog.event_pricing.MAX_EVENT_COST, every sum of cost.
MAX_TOKENS = 10**12  # per token count: 100,000 times the largest context window
TOKEN_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens")
# contract.md "Cost fields of a record": 1-hour cache writes and the provider's service tier, in both shapes.
CACHE_WRITE_1H_FIELD = "cacheWrite1hTokens"
SERVICE_TIER_FIELD = "serviceTier"
SERVICE_TIERS = ("standard", "batch", "flex", "priority")
# The top-level fields of the single-service shape: any of them beside `services` is the mixed shape, a 400
# (docs/decisions/usage-recording.md), so that nothing a client sends is dropped silently.
SINGLE_SHAPE_FIELDS = ("model", "modelProvider", *TOKEN_FIELDS)
# The cost fields a single-service record and each `services[]` entry take: beside `services` one fails its record
# alone (a bad record of a batch fails alone; the mixed shape's 400 is for the fields above).
COST_FIELDS = (CACHE_WRITE_1H_FIELD, SERVICE_TIER_FIELD)
# Every field a record and a `services[]` entry take (spec.md section 2, and contract.md "Cost fields of a record":
# `cacheWrite1hTokens`, `serviceTier`). Anything else fails the record alone (`unknown_field`); free-form data
# belongs in `metadata`. This is the one list of accepted names: a field the service starts to take is added here.
SERVICE_FIELDS = frozenset({"model", "modelProvider", *TOKEN_FIELDS, "cacheWrite1hTokens", "serviceTier", "quantity"})
RECORD_FIELDS = SERVICE_FIELDS | frozenset({"customerExternalId", "agentCode", "signalName", "usageDate", "metadata",
                                            "environment", "idempotencyKey", "services"})
# Names other billing and tracing tools use for a record's fields, and what this service calls them.
FIELD_SYNONYMS = {
    "timestamp": "usageDate", "time": "usageDate", "date": "usageDate", "eventDate": "usageDate",
    "occurredAt": "usageDate", "createdAt": "usageDate", "eventTime": "usageDate", "usageTime": "usageDate",
    "promptTokens": "inputTokens", "completionTokens": "outputTokens", "cachedTokens": "cacheReadTokens",
    "cacheCreationInputTokens": "cacheWriteTokens", "cacheReadInputTokens": "cacheReadTokens",
    "provider": "modelProvider", "customerId": "customerExternalId", "externalId": "customerExternalId",
    "customer": "customerExternalId", "agent": "agentCode", "agentId": "agentCode", "signal": "signalName",
    "signalId": "signalName", "units": "quantity", "count": "quantity", "value": "quantity", "volume": "quantity",
    "idempotency_key": "idempotencyKey", "tags": "metadata", "properties": "metadata", "attributes": "metadata",
    "env": "environment",
}
ENVIRONMENTS = frozenset(Environment.values)
# Per record and per service part: the largest finite binary float. A quantity keeps every digit a client prints
# for a binary float, at any size (Python prints 1e22 as `1e+22`, JavaScript 1e21 as `1e+21`), so the bound is the
# largest number a client's float can hold, never a size a client's float prints. Every sum of quantities stays
# exact: 309 integer digits and 340 places are 649, inside the sums and pricing (core/money.py SUMS,
# billing/pricing/engine.py; docs/decisions/numbers.md "Quantities").
MAX_QUANTITY = Decimal("1.7976931348623157e308")
# Decimal places a quantity may have: every digit a client prints for any binary float. A client prints at most
# 17 significant digits (Python's and JavaScript's shortest repr, C's `%.17g`), and the smallest double printed so,
# `4.9406564584124654e-324`, reaches the 340th place (`2.2250738585072014e-308`: 324; `1.2345678901234567e-15`:
# 31); the contract's minimum is 20 (docs/decisions/numbers.md "Quantities").
QUANTITY_PLACES = 340
# Digits a quantity may have in all: the integer digits of MAX_QUANTITY and QUANTITY_PLACES.
QUANTITY_DIGITS = MAX_QUANTITY.adjusted() + 1 + QUANTITY_PLACES
OUT_OF_RANGE = "out_of_range"
INVALID_RECORD = "invalid_record"
UNKNOWN_FIELD = "unknown_field"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def field_meant(name: str, accepted: frozenset[str]) -> str | None:
    """The accepted field a client most probably meant by `name`, or None: a known synonym (`timestamp` ->
    `usageDate`), the camelCase of a snake_case name (`input_tokens`), another capitalization, or the closest
    spelling (`inputToken` -> `inputTokens`). Only ever computed for a field that is not accepted."""
    for candidate in (FIELD_SYNONYMS.get(name), FIELD_SYNONYMS.get(_camel(name)), _camel(name)):
        if candidate in accepted:
            return candidate
    folded = {field.lower(): field for field in accepted}
    if name.replace("_", "").lower() in folded:
        return folded[name.replace("_", "").lower()]
    close = difflib.get_close_matches(name, sorted(accepted), n=1, cutoff=0.7)
    return close[0] if close else None


def _unknown_fields(data: dict, accepted: frozenset[str]) -> list[str]:
    return [name for name in data if name not in accepted]


class RecordDraft(NamedTuple):
    """A valid usage record, normalized, ready to be provisioned, priced and written. A NamedTuple: as
    immutable as a frozen dataclass and quicker to build (one per record on the hot path)."""

    index: int
    customer_external_id: str
    agent_code: str
    signal_name: str
    quantity: Decimal
    usage_date: datetime
    services: tuple[ServiceUsage, ...]
    is_multi_service: bool
    environment: str | None
    idempotency_key: str | None
    metadata: dict


@dataclass(frozen=True)
class InvalidRecord:
    index: int
    errors: list[str]
    echo: dict  # customerExternalId / agentCode / signalName / model / modelProvider as sent (strings only)
    code: str = INVALID_RECORD  # UNKNOWN_FIELD when a field is not one the record takes; OUT_OF_RANGE when every
    # error is a number beyond its maximum


# Names stored lower-cased (catalog.resolution.normalize_model, normalize_provider): their length is checked so.
LOWERCASED = frozenset({"model", "modelProvider"})


def _shown(name) -> str:
    """A field name as a message shows it: as sent, or quoted with escapes when it is not plain text (an unpaired
    surrogate, a NUL) or not a string."""
    return name if isinstance(name, str) and not text_problem(name) else repr(name)


def check_request_shape(body) -> list[dict]:
    """The whole-request rules: a `records` array of 1 to 100 objects, each in exactly one shape."""
    if not isinstance(body, dict) or "records" not in body:
        raise BadRequest(["records: This field is required."])
    records = body["records"]
    if not isinstance(records, list):
        raise BadRequest(["records: Expected a list of usage records."])
    if not 1 <= len(records) <= MAX_RECORDS:
        raise BadRequest([f"records: Send between 1 and {MAX_RECORDS} records per request (got {len(records)})."])
    problems = []
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            problems.append(f"records[{index}]: Expected an object.")
            continue
        if record.get("services") is not None:
            single = [name for name in SINGLE_SHAPE_FIELDS if record.get(name) is not None]
            if "model" in single or "modelProvider" in single:
                problems.append(f"records[{index}]: Send either model and modelProvider (single-service shape) "
                                f"or services (multi-service shape), not both.")
            elif single:
                problems.append(f"records[{index}]: Send tokens inside each service of services (multi-service "
                                f"shape), not at the top level beside it (got {', '.join(single)}).")
        elif record.get("model") is None and record.get("modelProvider") is None:
            unknown = [f"{_shown(name)} (did you mean {field_meant(name, RECORD_FIELDS)}?)"
                       if field_meant(name, RECORD_FIELDS) else _shown(name)
                       for name in _unknown_fields(record, RECORD_FIELDS) if isinstance(name, str)]
            hint = f" Fields this record carries that a record does not take: {', '.join(unknown)}." if unknown else ""
            problems.append(f"records[{index}]: Send either model and modelProvider (single-service shape) or "
                            f"services (multi-service shape); neither was given.{hint}")
    if problems:
        raise BadRequest(problems)
    return records


class _Checker:
    """Collects `field: message` errors for one record."""

    def __init__(self, prefix: str = ""):
        self.prefix = prefix
        self.errors: list[str] = []
        self.beyond_maximum = 0  # how many of the errors are numbers beyond their maximum
        self.unknown = 0  # how many of the errors are fields the record does not take

    def unknown_fields(self, data: dict, accepted: frozenset[str], what: str) -> None:
        for name in _unknown_fields(data, accepted):
            shown = _shown(name)
            meant = field_meant(name, accepted) if isinstance(name, str) else None
            hint = f" Did you mean {meant}?" if meant else ""
            self.fail(shown, f"Not a field of {what}.{hint} Free-form data belongs in metadata.")
            self.unknown += 1

    def fail(self, name: str, message: str) -> None:
        self.errors.append(f"{self.prefix}{name}: {message}")

    def too_large(self, name: str, maximum) -> None:
        self.fail(name, f"Must be at most {maximum} (the documented maximum).")
        self.beyond_maximum += 1

    def text(self, data: dict, name: str, *, required: bool, max_length: int = MAX_NAME_LENGTH,
             trimmed: bool = True) -> str | None:
        """The field's text, trimmed unless `trimmed` is False (an idempotency key is kept as sent: `run-1 ` is
        another key than `run-1`, and trimming it would replay one record as another); blank is refused either way."""
        value = data.get(name)
        if value.__class__ is str:  # the usual case first: every check passes
            kept = value.strip() if trimmed else value
            if kept and not kept.isspace() and len(kept) <= max_length and "\x00" not in kept and kept.isascii():
                return kept
        if value is None:
            if required:
                self.fail(name, "This field is required.")
            return None
        if not isinstance(value, str):
            self.fail(name, "Must be a string.")
            return None
        if not value.strip():
            self.fail(name, "May not be blank.")
            return None
        if trimmed:
            value = value.strip()
        problem = text_problem(value)  # a NUL or an unpaired surrogate: PostgreSQL cannot store the record
        if problem:
            self.fail(name, problem)
            return None
        if len(value) > max_length:
            self.fail(name, f"Ensure this field has no more than {max_length} characters.")
            return None
        if name in LOWERCASED and len(value.lower()) > max_length:  # "İ" is two characters lower-cased
            self.fail(name, too_long_lower_cased(max_length))
            return None
        return value

    def tokens(self, data: dict, name: str) -> int | None:
        value = data.get(name)
        if value is None:
            return None
        if value.__class__ is int and 0 <= value <= MAX_TOKENS:  # the usual case first
            return value
        # A whole number may also arrive written with a fraction or an exponent (1000.0, 1e3): a Decimal.
        if (isinstance(value, bool) or not isinstance(value, (int, Decimal))
                or (value.__class__ is Decimal and value != value.to_integral_value())):
            self.fail(name, "Must be a whole number of tokens.")
            return None
        if value < 0:
            self.fail(name, "Must be zero or more.")
            return None
        if value > MAX_TOKENS:
            self.too_large(name, MAX_TOKENS)
            return None
        return int(value)

    def quantity(self, data: dict, name: str) -> Decimal | None:
        value = data.get(name)
        if value is None:
            return None
        if value.__class__ is int and 0 <= value <= MAX_QUANTITY:  # a whole count, the usual case
            return Decimal(value)
        if value.__class__ is Decimal:  # a JSON number with a fraction or exponent, exactly as written
            number = value
        elif isinstance(value, bool) or not isinstance(value, (int, str)):
            self.fail(name, "Must be a number.")
            return None
        else:
            try:
                number = Decimal(str(value).strip())
            except (InvalidOperation, ValueError):
                self.fail(name, "Must be a number.")
                return None
        if not number.is_finite():
            self.fail(name, "Must be a number.")
            return None
        if number < 0:
            self.fail(name, "Must be zero or more.")
            return None
        if number > MAX_QUANTITY:
            self.too_large(name, MAX_QUANTITY)
            return None
        if number.as_tuple().exponent < -QUANTITY_PLACES:
            self.fail(name, f"Ensure there are no more than {QUANTITY_PLACES} decimal places.")
            return None
        return number

    def service_tier(self, data: dict) -> str | None:
        """The record's `serviceTier`; None for standard (the default)."""
        value = data.get(SERVICE_TIER_FIELD)
        if value is None or value == "standard":
            return None
        if value.__class__ is str and value in SERVICE_TIERS:
            return value
        self.fail(SERVICE_TIER_FIELD, f"Must be one of {', '.join(SERVICE_TIERS)}.")
        return None

    def service(self, data: dict) -> ServiceUsage | None:
        before = len(self.errors)
        if not data.keys() <= SERVICE_FIELDS:
            self.unknown_fields(data, SERVICE_FIELDS, "a service of a usage record")
        model = self.text(data, "model", required=True)
        provider = self.text(data, "modelProvider", required=True)
        tokens = [self.tokens(data, name) for name in TOKEN_FIELDS]
        quantity = self.quantity(data, "quantity")
        cache_write_1h = self.tokens(data, CACHE_WRITE_1H_FIELD)
        tier = self.service_tier(data)
        if len(self.errors) > before:
            return None
        return ServiceUsage(normalize_model(model), normalize_provider(provider), *tokens, quantity=quantity,
                            cache_write_1h_tokens=cache_write_1h, service_tier=tier)


def validate_record(index: int, data: dict, *, now: datetime) -> RecordDraft | InvalidRecord:
    """One record of a request that passed `check_request_shape`."""
    check = _Checker()
    if not data.keys() <= RECORD_FIELDS:  # one set operation on the hot path; the names only when it fails
        check.unknown_fields(data, RECORD_FIELDS, "a usage record")
    customer_external_id = check.text(data, "customerExternalId", required=True)
    agent_code = check.text(data, "agentCode", required=True)
    signal_name = check.text(data, "signalName", required=True)
    quantity = check.quantity(data, "quantity")
    usage_date = now
    if data.get("usageDate") is not None:
        raw_date = data["usageDate"]
        try:
            if not isinstance(raw_date, str):
                raise BadRequest("not a string")
            usage_date = parse_instant(raw_date, field="usageDate")
        except ApiError as refusal:  # out of the years every read can ask for, or not a date at all
            check.fail("usageDate", YEAR_RANGE_MESSAGE if YEAR_RANGE_MESSAGE in str(refusal.message)
                       else "Not a valid ISO 8601 date or timestamp.")
    environment = data.get("environment")
    if environment is not None and (environment.__class__ is not str or environment not in ENVIRONMENTS):
        check.fail("environment", f"Must be one of {', '.join(sorted(ENVIRONMENTS))}.")
    idempotency_key = check.text(data, "idempotencyKey", required=False, trimmed=False)
    metadata = data.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        check.fail("metadata", "Must be an object.")
    else:
        reason = unstorable_reason(metadata)
        if reason:
            where, problem = reason
            check.fail(f"metadata.{where}" if where else "metadata", problem)

    services: tuple[ServiceUsage, ...] = ()
    is_multi_service = data.get("services") is not None
    if is_multi_service:
        raw_services = data["services"]
        for name in COST_FIELDS:
            if data.get(name) is not None:
                check.fail(name, f"Send {name} inside each service of services (multi-service shape), not at the "
                                 f"top level beside it.")
        if not isinstance(raw_services, list) or not raw_services:
            check.fail("services", "Must be a non-empty list of services.")
        else:
            parts = []
            for position, raw in enumerate(raw_services):
                if not isinstance(raw, dict):
                    check.fail(f"services[{position}]", "Expected an object.")
                    continue
                part_check = _Checker(prefix=f"services[{position}].")
                part = part_check.service(raw)
                check.errors.extend(part_check.errors)
                check.beyond_maximum += part_check.beyond_maximum
                check.unknown += part_check.unknown
                if part is not None:
                    parts.append(part)
            services = tuple(parts)
    else:
        model = check.text(data, "model", required=True)
        provider = check.text(data, "modelProvider", required=True)
        tokens = [check.tokens(data, name) for name in TOKEN_FIELDS]
        cache_write_1h = check.tokens(data, CACHE_WRITE_1H_FIELD)
        tier = check.service_tier(data)
        if model and provider:
            # Quantity is the billable count of the signal and, here, also the service units (contract.md).
            services = (ServiceUsage(normalize_model(model), normalize_provider(provider), *tokens,
                                     quantity=quantity if quantity is not None else Decimal(1),
                                     cache_write_1h_tokens=cache_write_1h, service_tier=tier),)

    if check.errors:
        # Echoed as sent, unless the text cannot be written as UTF-8 JSON (an unpaired surrogate).
        echo = {name: data[name] for name in ("customerExternalId", "agentCode", "signalName", "model",
                                               "modelProvider")
                if isinstance(data.get(name), str) and text_problem(data[name]) != SURROGATE_MESSAGE}
        if check.unknown:  # the likeliest cause of every other error too: a misspelled name
            code = UNKNOWN_FIELD
        elif check.beyond_maximum == len(check.errors):
            code = OUT_OF_RANGE
        else:
            code = INVALID_RECORD
        return InvalidRecord(index=index, errors=check.errors, echo=echo, code=code)
    return RecordDraft(
        index=index, customer_external_id=customer_external_id, agent_code=agent_code, signal_name=signal_name,
        quantity=quantity if quantity is not None else Decimal(1), usage_date=usage_date, services=services,
        is_multi_service=is_multi_service, environment=environment, idempotency_key=idempotency_key,
        metadata=metadata,
    )
