"""When an evaluation last judged a spend cap's ladder or a customer watch (`judged_at`): what tells an ended window
whose last part no run judged (controls/selectors.py `ended_window_due`)."""
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

# `judged_at` is written at most this often: it need only say whether a run came after a window's end, and a run that
# finds it a little older judges an ended window once more, which alerts nothing twice.
JUDGED_MARK_EVERY = timedelta(hours=1)


def judged_mark(rows: QuerySet, now: datetime) -> None:
    """Record that an evaluation at `now` judged these spend caps or watches (`judged_at`): one UPDATE, of the rows
    not marked within JUDGED_MARK_EVERY (a run after every batch writes nothing most of the time); never moved back
    (a late task carrying an earlier `now`)."""
    rows.filter(Q(judged_at__isnull=True) | Q(judged_at__lt=now - JUDGED_MARK_EVERY)).update(judged_at=now)
