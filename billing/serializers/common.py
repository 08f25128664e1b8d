"""Serializer pieces shared by the billing resources."""
from collections.abc import Mapping

from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers
from rest_framework.fields import empty

from core.clock import MAX_YEAR, MIN_YEAR, UTC, closing_midnight

INT32_MAX = 2_147_483_647  # the largest value of a PositiveIntegerField column


@extend_schema_field(OpenApiTypes.DATETIME)
class InstantIn(serializers.Field):
    """An ISO 8601 date or timestamp.

    A bare date stays a `date`: the service places it at local midnight in the record's time zone. A
    timestamp without an offset is UTC. With `period_end=True` the last second of a day (`...T23:59:59`)
    means the following midnight (contract.md, Periods).
    """

    default_error_messages = {"invalid": "Not a valid ISO 8601 date or timestamp.",
                              "range": "Must lie between the years 1900 and 9000."}

    def __init__(self, *, period_end: bool = False, **kwargs):
        self.period_end = period_end
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        text = data.strip()
        try:
            day = parse_date(text)
            moment = None if day else parse_datetime(text)
        except ValueError:
            self.fail("invalid")
        if day:
            return day if MIN_YEAR <= day.year <= MAX_YEAR else self.fail("range")
        if moment is None:
            self.fail("invalid")
        if not MIN_YEAR <= moment.year <= MAX_YEAR:
            self.fail("range")
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        if not MIN_YEAR <= moment.astimezone(UTC).year <= MAX_YEAR:  # in UTC too, as core.clock.parse_instant
            self.fail("range")
        return closing_midnight(moment) if self.period_end else moment.astimezone(UTC)

    def to_representation(self, value):
        return value.isoformat()


class RefusesFields:
    """A serializer mixin: fields listed in `refused` ({camelCase name: reason}) are a 400 naming each of them,
    checked before anything else so that every refused field is reported."""

    refused: dict[str, str] = {}

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            errors = {name: [reason] for name, reason in self.refused.items() if name in data}
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


class AllOptional:
    """A serializer mixin for updates: every declared field becomes optional without a default, so only the
    fields a client sends reach `validated_data` (nested items stay fully validated, unlike `partial=True`)."""

    still_required: tuple[str, ...] = ()

    def get_fields(self):
        fields = super().get_fields()
        for name, field in fields.items():
            if name not in self.still_required:
                field.required = False
                field.default = empty
        return fields


def page_of(serializer_class) -> serializers.Serializer:
    """The documented shape of a `{results, page, limit, totalPages, totalResults}` list."""
    return inline_serializer(name=f"{serializer_class.__name__.removesuffix('Out')}Page", fields={
        "results": serializer_class(many=True), "page": serializers.IntegerField(),
        "limit": serializers.IntegerField(), "totalPages": serializers.IntegerField(),
        "totalResults": serializers.IntegerField(),
    })
