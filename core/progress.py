"""Progress of long work: what the chunked loops report, and the bar a management command draws from it.

A loop that works in chunks takes a `progress` and calls `progress.expect(remaining)` once it knows how much
is left, then `progress.advance(count)` after each chunk (never per row: a report may be a database write).
`NO_PROGRESS` ignores both. A job (jobs) writes them to its row; a command draws them with
`ProgressBar`.

A loop that walks its items in id order also says, at each chunk, the last id it walked and how many items it
changed (`advance(count, through=..., changed=...)`); `progress.resumed` gives both back to a run of the same
work taken up again (a job whose runner was lost), which goes on after that id and adds to that count. A work
that walked everything again would count its first items twice (`done` past the real total) and answer only
its own run's changes.

`ProgressBar` redraws one line in place on a terminal and prints plain lines otherwise (a log file or a CI
job gets a line per tenth of the way, not a stream of carriage returns)."""
import time
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from django.core.management.base import OutputWrapper


@dataclass(frozen=True)
class Resumed:
    """Where earlier runs of a work stopped: the last id they walked (None: start from the first) and how many
    items they changed."""
    after: UUID | None = None
    changed: int = 0

    def rest(self, items):
        """The items (a queryset walked in primary-key order) a run taken up here has still to walk."""
        return items if self.after is None else items.filter(pk__gt=self.after)


FROM_THE_START = Resumed()


class Progress(Protocol):
    @property
    def resumed(self) -> Resumed:
        """Where earlier runs of this work stopped (`FROM_THE_START` for a first run), as when this run began."""

    def expect(self, remaining: int) -> None:
        """`remaining` more items are to come (the total is what is done plus this)."""

    def advance(self, count: int, *, through: UUID | None = None, changed: int = 0) -> None:
        """`count` more items are done, the last of them `through` (in id order), `changed` of them changed."""


class _NoProgress:
    resumed = FROM_THE_START

    def expect(self, remaining: int) -> None:
        pass

    def advance(self, count: int, *, through: UUID | None = None, changed: int = 0) -> None:
        pass


NO_PROGRESS = _NoProgress()


def percent_of(done: int, total: int | None) -> int | None:
    """Whole percent done, 0-100; None while the total is unknown. An empty total is complete."""
    if total is None:
        return None
    if total <= 0:
        return 100
    return max(0, min(100, done * 100 // total))


class ProgressBar:
    """`update(done, total)` as often as the work likes; the bar redraws at most every `redraw_seconds` on a
    terminal and prints a line per 10% otherwise; `finish()` draws the last state and ends the line."""

    width = 30
    redraw_seconds = 0.1

    def __init__(self, stream, label: str):
        self.stream, self.label = stream, label
        self.tty = bool(getattr(stream, "isatty", lambda: False)())
        self.done, self.total = 0, None
        self._drawn_at = 0.0
        self._drawn_width = 0
        self._printed_step = -1  # the last tenth printed as a plain line
        self._started = False

    def update(self, done: int, total: int | None) -> None:
        self.done, self.total = done, total
        self._started = True
        if self.tty:
            if time.monotonic() - self._drawn_at >= self.redraw_seconds:
                self._draw()
            return
        percent = percent_of(done, total)
        if percent is not None and percent // 10 > self._printed_step:
            self._printed_step = percent // 10
            self._write(self._text() + "\n")

    def finish(self) -> None:
        if not self._started:
            return
        if self.tty:
            self._draw()
            self._write("\n")
        elif percent_of(self.done, self.total) is None or percent_of(self.done, self.total) // 10 > self._printed_step:
            self._write(self._text() + "\n")
        self._started = False

    def _text(self) -> str:
        percent = percent_of(self.done, self.total)
        if percent is None:
            return f"{self.label}: {self.done:,} done"
        if not self.tty:
            return f"{self.label}: {self.done:,}/{self.total:,} ({percent}%)"
        filled = self.width * percent // 100
        return f"{self.label} [{'#' * filled}{'-' * (self.width - filled)}] {percent:3d}% {self.done:,}/{self.total:,}"

    def _draw(self) -> None:
        text = self._text()
        # Back to the line's start; spaces cover what a longer earlier state left.
        self._write("\r" + text + " " * max(0, self._drawn_width - len(text)))
        self._drawn_width = len(text)
        self._drawn_at = time.monotonic()

    def _write(self, text: str) -> None:
        if isinstance(self.stream, OutputWrapper):
            self.stream.write(text, ending="")
        else:
            self.stream.write(text)
        self.stream.flush()
