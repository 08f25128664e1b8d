"""The usage chart's geometry (core/charts.py): a pure function, tested table-driven."""
from decimal import Decimal as D

import pytest

from core.charts import BOTTOM, LEFT, MAX_BAR_WIDTH, TOP, bar_chart, nice_ceiling, number_label


@pytest.mark.parametrize("value, expected", [
    ("0", "1"), ("-3", "1"), ("0.3", "0.5"), ("1", "1"), ("1.5", "2"), ("2", "2"), ("3", "5"), ("7", "10"),
    ("10", "10"), ("11", "20"), ("250", "500"), ("501", "1000"), ("0.01", "0.01"),
])
def test_the_scale_rounds_up_to_one_two_or_five_times_a_power_of_ten(value, expected):
    assert nice_ceiling(D(value)) == D(expected)


@pytest.mark.parametrize("value, label", [(D(0), "0"), (D(5), "5"), (D("2.5"), "2.5"), (D("2.50"), "2.5"),
                                          (D(1500), "1,500"), (D("1234.5"), "1,234.5")])
def test_numbers_are_labelled_without_trailing_zeros(value, label):
    assert number_label(value) == label


def test_bars_are_as_tall_as_their_share_of_the_scale_and_stand_on_the_baseline():
    chart = bar_chart([("Jun 1", D(3)), ("Jun 2", D(0)), ("Jun 3", D(10))], unit="events", width=640, height=200)
    plot_height = D(200) - TOP - BOTTOM
    assert [bar.height for bar in chart.bars] == [D("49.2"), D("0.0"), plot_height]
    assert all(bar.y + bar.height == chart.baseline for bar in chart.bars)
    assert [bar.title for bar in chart.bars] == ["Jun 1: 3 events", "Jun 2: 0 events", "Jun 3: 10 events"]
    assert [tick.label for tick in chart.y_ticks] == ["0", "5", "10"]
    money = bar_chart([("Jun 1", D(3)), ("Jun 2", D(1))], unit="USD", tick_prefix="$", unit_of_one="USD")
    assert [tick.label for tick in money.y_ticks] == ["$0", "$2.5", "$5"]  # the scale rounded up to 5
    assert chart.description == "13 events from Jun 1 to Jun 3"


def test_bars_stay_inside_the_plot_and_never_wider_than_the_cap():
    chart = bar_chart([(str(day), D(day)) for day in range(1, 4)], unit="events", width=640)
    assert all(bar.width == MAX_BAR_WIDTH for bar in chart.bars)
    assert chart.bars[0].x >= LEFT and chart.bars[-1].x + chart.bars[-1].width <= chart.plot_right
    many = bar_chart([(str(day), D(1)) for day in range(31)], unit="events", width=640)
    assert all(D(1) <= bar.width < MAX_BAR_WIDTH for bar in many.bars)
    assert all(left.x + left.width < right.x for left, right in zip(many.bars, many.bars[1:]))


@pytest.mark.parametrize("days, labelled", [
    (1, ["0"]),
    (5, ["0", "1", "2", "3", "4"]),
    (7, ["0", "1", "2", "3", "4", "5", "6"]),
    (8, ["0", "2", "4", "7"]),  # day 6 would crowd the last: the last takes its place
    (30, ["0", "5", "10", "15", "20", "25", "29"]),
    (31, ["0", "5", "10", "15", "20", "25", "30"]),
    (27, ["0", "4", "8", "12", "16", "20", "26"]),  # seven already: the last replaces day 24
])
def test_at_most_seven_days_are_labelled_the_first_and_last_always(days, labelled):
    chart = bar_chart([(str(day), D(1)) for day in range(days)], unit="events")
    assert [tick.label for tick in chart.x_labels] == labelled


def test_an_empty_period_draws_an_empty_scale():
    chart = bar_chart([], unit="events")
    assert chart.bars == [] and chart.x_labels == [] and chart.description == "no events"
    assert [tick.label for tick in chart.y_ticks] == ["0", "0.5", "1"]


@pytest.mark.parametrize("highest, ticks", [
    (0, ["0", "1", "2"]), (1, ["0", "1", "2"]), (2, ["0", "1", "2"]), (3, ["0", "3", "6"]), (5, ["0", "3", "6"]),
    (7, ["0", "5", "10"]), (40, ["0", "25", "50"]), (120, ["0", "100", "200"]),
])
def test_a_chart_of_counts_has_whole_ticks_only(highest, ticks):
    # The portal's events per day read "0, 2.5, 5" for at most 5 events a day: nobody has half an event.
    chart = bar_chart([("Jun 1", D(highest)), ("Jun 2", D(0))], unit="events", whole=True)
    assert [tick.label for tick in chart.y_ticks] == ticks
    assert chart.bars[0].y >= TOP  # the tallest bar still fits the scale
    assert [tick.label for tick in bar_chart([], unit="events", whole=True).y_ticks] == ["0", "1", "2"]


def test_a_reference_far_above_the_bars_leaves_the_scale_to_them():
    """$0.20 of cost a day under $18.93 of revenue a day: scaled to hold the revenue, every bar was a sliver on the
    axis. Within five times the highest bar, the reference is drawn and the scale holds it."""
    far = bar_chart([("Nov 1", D("0.20")), ("Nov 2", D("0.15"))], unit="USD", reference=D("18.93"))
    assert (far.reference_above, far.reference_y, [tick.label for tick in far.y_ticks]) == (True, None,
                                                                                            ["0", "0.1", "0.2"])
    near = bar_chart([("Nov 1", D("2")), ("Nov 2", D("1"))], unit="USD", reference=D("7.5"))
    assert not near.reference_above and near.reference_y is not None and near.y_ticks[-1].label == "10"


def test_a_wide_y_axis_label_widens_the_left_margin_so_it_is_not_cut_off():
    """The dashboard's cost chart of a month costing tenths of a cent labelled its middle line `$0.0025` in a 44 px
    margin, 6 px from the plot: the `$` fell outside the picture."""
    narrow = bar_chart([("Nov 1", D(3)), ("Nov 2", D(1))], unit="USD", tick_prefix="$")
    assert narrow.plot_left == LEFT
    small = bar_chart([("Nov 1", D("0.0035")), ("Nov 2", D(0))], unit="USD", tick_prefix="$")
    assert [tick.label for tick in small.y_ticks] == ["$0", "$0.0025", "$0.005"]
    assert small.plot_left - 6 >= D("6.5") * len("$0.0025")  # the label's width at 11 px fits left of its anchor
    assert small.bars[0].x >= small.plot_left and small.bars[-1].x + small.bars[-1].width <= small.plot_right
