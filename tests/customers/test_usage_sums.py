"""The two ways `customers/usage_sums.py` sums the ledger answer the same figures: `rollup_sums` (the rollup
for whole days, the events for the edges) and `event_sums` (a scan of a queryset of events), on the six
events of the analytics ledger (recorded through the API)."""
from datetime import datetime, timezone

import pytest

from core.scoping import owned
from customers.models import UsageEvent
from django.db.models import Q

from customers.usage_sums import (Scope, Segment, Window, event_sums, grand_total, labelled_event_sums,
                                  rollup_sums)
from tests.analytics.support import D, ledger, models  # noqa: F401 (fixtures)

# From 09:30 on the Sunday of e1 to 02:00 on May 1st: both edges are partial days; e6 (March 31) is outside.
WINDOW = Window(datetime(2025, 4, 6, 9, 30, tzinfo=timezone.utc), datetime(2025, 5, 1, 2, tzinfo=timezone.utc))
MEASURES = ("event_count", "unpriced_count", "quantity", "cost")


def figures(sums) -> tuple:
    return sums.event_count, sums.unpriced_count, sums.quantity, sums.cost


def in_window(book):
    return owned(UsageEvent, book).filter(usage_date__gte=WINDOW.start, usage_date__lt=WINDOW.end)


def test_both_read_the_same_totals_and_breakdown_by_customer(book, ledger):
    # e1 acme qty 2 0.002, e2 acme qty 3 0.002, e3 beta qty 1 0.02, e4 beta qty 1 0.022, e5 acme qty 5 unpriced
    expected = {"total": (5, 1, D(12), D("0.046")),
                ledger.acme.pk: (3, 1, D(10), D("0.004")), ledger.beta.pk: (2, 0, D(2), D("0.042"))}
    rolled = rollup_sums(book=book, window=WINDOW, groups={"total": (), "customer": ("customer",)},
                         measures=MEASURES)
    assert figures(grand_total(rolled["total"])) == expected["total"]
    assert {row.key[0]: figures(row) for row in rolled["customer"]} == {
        key: value for key, value in expected.items() if key != "total"}
    [scanned] = event_sums(in_window(book))
    assert figures(scanned) == expected["total"]
    assert {row.key[0]: figures(row) for row in event_sums(in_window(book), by=("customer_id",))} == {
        key: value for key, value in expected.items() if key != "total"}


def test_a_scope_and_the_filter_of_a_queryset_select_the_same_events(book, ledger):
    rolled = rollup_sums(book=book, window=WINDOW, groups={"total": ()}, measures=MEASURES,
                         scope=Scope(agent_id=ledger.writer.pk))
    [scanned] = event_sums(in_window(book).filter(agent=ledger.writer))
    assert figures(grand_total(rolled["total"])) == figures(scanned) == (4, 1, D(11), D("0.024"))


def test_event_sums_of_no_events_is_one_row_of_zeros_and_a_grouped_read_has_no_rows(book, ledger):
    none = in_window(book).filter(customer__external_id="nobody")
    [row] = event_sums(none)
    assert (row.key, figures(row), row.priced_count) == ((), (0, 0, 0, 0), 0)
    assert event_sums(none, by=("customer_id",)) == []


def test_event_sums_orders_groups_as_asked_and_sums_only_the_measures_named(book, ledger):
    rows = event_sums(owned(UsageEvent, book), by=("signal_name",), measures=("event_count",),
                      order_by=("-event_count", "signal_name"))
    # pages: e6, e1, e2, e5; reports: e3; search: e4
    assert [(row.key, row.event_count, row.quantity, row.cost) for row in rows] == [
        (("pages",), 4, 0, 0), (("reports",), 1, 0, 0), (("search",), 1, 0, 0)]


def test_labelled_event_sums_read_each_label_as_a_group_by_that_label_would(book, ledger):
    # the same events per customer as grouping by customer, each label its own condition; a label selecting
    # nothing has no row, as a group without events has none
    labels = {"acme": Q(customer=ledger.acme), "beta": Q(customer=ledger.beta),
              "nobody": Q(customer__external_id="nobody")}
    rows = labelled_event_sums(in_window(book), labels)
    grouped = {row.key[0]: figures(row) for row in event_sums(in_window(book), by=("customer_id",))}
    assert {row.key[0]: figures(row) for row in rows} == {
        "acme": grouped[ledger.acme.pk], "beta": grouped[ledger.beta.pk]}
    # only the measures named are summed; a label is kept by its events, not by a sum above zero
    [quantity_only] = labelled_event_sums(in_window(book), {"beta": Q(customer=ledger.beta)}, measures=("quantity",))
    assert figures(quantity_only) == (0, 0, D(2), 0)
    with pytest.raises(ValueError):
        labelled_event_sums(in_window(book), labels, measures=("model_cost",))


def test_event_sums_refuses_the_per_model_measures_only_the_rollup_splits(book):
    with pytest.raises(ValueError, match="model_cost"):
        event_sums(owned(UsageEvent, book), measures=("cost", "model_cost"))


def test_partial_days_holding_a_multi_service_event_count_it_once_and_its_parts_per_model(book, ledger):
    # Both edges partial: April 30 from 12:00 holds e4 (alpha + 4 searches), May 1 to 02:00 holds e5.
    window = Window(datetime(2025, 4, 30, 12, tzinfo=timezone.utc), datetime(2025, 5, 1, 2, tzinfo=timezone.utc))
    events = owned(UsageEvent, book).filter(usage_date__gte=window.start, usage_date__lt=window.end)
    rolled = rollup_sums(book=book, window=window, groups={"customer": ("customer",)}, measures=MEASURES)
    assert {row.key[0]: figures(row) for row in rolled["customer"]} == {
        row.key[0]: figures(row) for row in event_sums(events, by=("customer_id",))} == {
        ledger.beta.pk: (1, 0, D(1), D("0.022")), ledger.acme.pk: (1, 1, D(5), D(0))}
    # A per-model measure counts e4 once per part (alpha, and the search service's null model).
    per_model = rollup_sums(book=book, window=window, groups={"customer": ("customer",)},
                            measures=("model_event_count",))
    assert {row.key[0]: row.model_event_count for row in per_model["customer"]} == {
        ledger.beta.pk: 2, ledger.acme.pk: 1}


def test_segments_of_a_window_shorter_than_a_day_across_midnight_count_the_events_after_midnight(book, ledger):
    # One partial piece from April 30 12:00 to May 1 02:00: e4 before midnight, e5 after it.
    window = Window(datetime(2025, 4, 30, 12, tzinfo=timezone.utc), datetime(2025, 5, 1, 2, tzinfo=timezone.utc))
    segments = [Segment(ledger.acme.pk, ledger.writer.pk, window.start, None, "acme"),
                Segment(ledger.beta.pk, ledger.research.pk, window.start, None, "beta")]
    rolled = rollup_sums(book=book, window=window, groups={"label": ("label",)}, measures=MEASURES, segments=segments)
    assert {row.key[0]: figures(row) for row in rolled["label"]} == {
        "acme": (1, 1, D(5), D(0)), "beta": (1, 0, D(1), D("0.022"))}
