"""Bar charts as plain geometry for an inline SVG (no JavaScript, no external assets): the portal's usage chart
and the console dashboard's cost chart.

Pure: values in, coordinates out (Decimal, rounded to tenths of a pixel); the template draws them.
"""
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from typing import Sequence

from core import display

TENTH = Decimal("0.1")
LEFT, RIGHT, TOP, BOTTOM = Decimal(44), Decimal(8), Decimal(10), Decimal(26)  # room for the axis labels
# The y axis's labels are drawn right-aligned 6 px left of the plot in 11 px type: a wider label ("$0.0025",
# "12,500") widens the left margin, at about 6.5 px a character (a digit is 0.55 em), or it is cut off.
LABEL_GAP, CHARACTER_WIDTH = Decimal(8), Decimal("6.5")
MAX_X_LABELS = 7
MAX_BAR_WIDTH = Decimal(28)


def _px(value: Decimal) -> Decimal:
    return value.quantize(TENTH, rounding=ROUND_HALF_UP)


def nice_ceiling(value: Decimal) -> Decimal:
    """The smallest 1, 2 or 5 times a power of ten that is at least `value` (1 for nothing to show)."""
    if value <= 0:
        return Decimal(1)
    power = Decimal(10) ** value.adjusted()
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)  # 10 x power always is


def number_label(value: Decimal) -> str:
    """A tick or tooltip number: grouped, whole numbers without decimals, others without trailing zeros."""
    return display.quantity(value)


@dataclass(frozen=True)
class Bar:
    x: Decimal
    y: Decimal
    width: Decimal
    height: Decimal
    title: str  # the tooltip: label and value


@dataclass(frozen=True)
class Tick:
    position: Decimal
    label: str


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    bars: list[Bar]
    y_ticks: list[Tick]  # position = y of the grid line
    x_labels: list[Tick]  # position = x of the label's centre
    baseline: Decimal  # y of the x axis
    plot_left: Decimal
    plot_right: Decimal
    description: str  # for screen readers
    reference_y: Decimal | None = None  # y of a horizontal reference line (a value to compare the bars with)
    reference_above: bool = False  # the reference lies far above the bars: not drawn, the scale is the bars'


def _labelled_indexes(count: int) -> set[int]:
    """Every n-th bar so that at most MAX_X_LABELS are labelled, and the last; the last takes the place of the
    regular label before it when that one is close or the labels are full."""
    if count == 0:
        return set()
    every = -(-count // MAX_X_LABELS)  # ceiling division
    indexes = list(range(0, count, every))
    if indexes[-1] != count - 1:
        crowded = len(indexes) == MAX_X_LABELS or 2 * ((count - 1) - indexes[-1]) <= every
        if crowded and len(indexes) > 1:
            indexes[-1] = count - 1
        else:
            indexes.append(count - 1)
    return set(indexes)


def whole_ceiling(top: Decimal) -> Decimal:
    """A scale for whole counts: its middle grid line must be a whole number too (a scale of 5 events would label
    it 2.5, a count nobody can have), so an odd or fractional top grows to the next even number."""
    halved = top / 2
    return top if halved == halved.to_integral_value() else 2 * (halved.to_integral_value(rounding=ROUND_CEILING))


REFERENCE_SPAN = 5  # a reference more than this many times the highest bar is not drawn to scale


def bar_chart(points: Sequence[tuple[str, Decimal]], *, unit: str, width: int = 640, height: int = 200,
              reference: Decimal | None = None, unit_of_one: str | None = None, tick_prefix: str = "",
              whole: bool = False) -> BarChart:
    """One bar per (label, value), scaled to a rounded maximum with three grid lines (0, half, max); at most
    MAX_X_LABELS labels under the bars, the first and the last always among them. A `reference` value is drawn
    as a horizontal line on the same scale (the scale grows to hold it). `unit_of_one`: the unit after a value of
    exactly 1 ("1 event"), when it is not `unit`. `tick_prefix`: written before each number of the y axis ("$"), so
    that the axis says what it counts. `whole`: the values are counts (events), so every tick is a whole number."""

    def amount(value: Decimal) -> str:
        return f"{number_label(value)} {unit_of_one if unit_of_one is not None and value == 1 else unit}"

    plot_height = Decimal(height) - TOP - BOTTOM
    highest = max((Decimal(value) for _, value in points), default=Decimal(0))
    # A reference many times the highest bar would flatten every bar into the axis (a day's cost of $0.20 under a
    # day's revenue of $18.93): the scale stays the bars', and the reference is said in words instead.
    above = reference is not None and highest > 0 and reference > REFERENCE_SPAN * highest
    top = nice_ceiling(highest if reference is None or above else max(highest, reference))
    if whole:
        top = whole_ceiling(top)
    y_labels = [(share, tick_prefix + number_label(top * Decimal(share) / 2)) for share in (0, 1, 2)]
    left_margin = max(LEFT, LABEL_GAP + CHARACTER_WIDTH * max(len(label) for _, label in y_labels))
    plot_width = Decimal(width) - left_margin - RIGHT
    slot = plot_width / max(len(points), 1)
    bar_width = max(min(slot * Decimal("0.7"), MAX_BAR_WIDTH), Decimal(1))
    labelled = _labelled_indexes(len(points))
    bars, x_labels = [], []
    for index, (label, value) in enumerate(points):
        value = Decimal(value)
        bar_height = plot_height * value / top
        left = left_margin + slot * index
        bars.append(Bar(_px(left + (slot - bar_width) / 2), _px(TOP + plot_height - bar_height), _px(bar_width),
                        _px(bar_height), f"{label}: {amount(value)}"))
        if index in labelled:
            x_labels.append(Tick(_px(left + slot / 2), label))
    y_ticks = [Tick(_px(TOP + plot_height * (1 - Decimal(share) / 2)), label) for share, label in y_labels]
    total = sum((Decimal(value) for _, value in points), Decimal(0))
    description = (f"{amount(total)} from {points[0][0]} to {points[-1][0]}" if points
                   else f"no {unit}")
    reference_y = (None if reference is None or above
                   else _px(TOP + plot_height - plot_height * max(reference, 0) / top))
    return BarChart(width, height, bars, y_ticks, x_labels, _px(TOP + plot_height), _px(left_margin),
                    Decimal(width) - RIGHT, description, reference_y, above)
