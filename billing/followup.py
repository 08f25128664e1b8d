"""What follows a recorded batch, coalesced per book: one task for many batches.

Recording a batch leaves two things to do after its commit: add its events to the analytics rollup (they
wait in the rollup backlog) and settle the credit pools of its customers (alert emails). Publishing a task
per batch cost a broker round trip and a worker run per 100 events; instead each batch adds its customers
to a per-book set in Redis and arms the book's follow-up (`SET ... NX EX`), and only the batch that armed
it publishes `usage_followup_task`, a few seconds later. The task first disarms and takes the customers (one
MULTI), then catches the rollup up and evaluates those customers' pools: a batch whose arming failed was
committed before the task disarmed, so the task sees its events; a batch after that arms a new task.

A web process also remembers, per book, when the follow-up it saw armed is due and which customers it
added to it since: a batch committed well before that time whose customers are all there needs no round
trip at all (the follow-up runs at its due time at the earliest, so after this commit, and takes those
customers). On a busy book most batches end there.

Nothing depends on the follow-up for correctness: analytics reads catch the rollup up themselves and the
periodic jobs (config/schedule.py) settle pools and backlogs every few minutes even if Redis lost a key. So a
broker that cannot take the task (Redis down) costs nothing but time: the batch is answered as stored, the
failure is logged, and the sweeps find the backlog rows and pools it left (`publish`, core/background.py).

Without Redis (the zero-setup `make run`) there is no worker, and a task would run inline, on the request
path of every batch. The follow-up is coalesced in the process instead (core/background.py): a batch
adds its customers to the book's pending set, and a thread of the web process runs the follow-up
DELAY_SECONDS after the batch that armed it, as a worker would.
"""
import logging
import time
from dataclasses import dataclass
from uuid import UUID

import redis
from celery import current_app
from django.utils.module_loading import import_string

from core.background import Coalescer, broker_pause_end, publish
from core.redis_client import redis_client

logger = logging.getLogger("billing.followup")

# How long a follow-up waits for more batches of the same book. A catch-up costs about one rollup upsert per
# (day, customer, agent, signal, model) it touches, however many events share it, so the longer it waits, the
# more batches share each upsert and the less of a PostgreSQL backend the worker's catch-ups hold under
# sustained load (docs/performance.md has the figures). Analytics reads catch up whatever is left themselves;
# credit-pool alerts go out a few seconds after the batch that crossed a threshold.
DELAY_SECONDS = 5
FOLLOWUP_TASK = "billing.tasks.usage_followup_task"  # named, not imported: the task imports what this feeds
ARMED_SECONDS = 60  # an armed key outlives a lost task by at most this
CUSTOMERS_SECONDS = 24 * 3600
# A remembered follow-up is trusted until this long before it is due: the clocks of the web and worker
# machines agree within it.
CLOCK_MARGIN_SECONDS = 1
REMEMBERED_CUSTOMERS = 10_000  # per book and process; past it a process only stops remembering more
REMEMBERED_BOOKS = 1_000  # past it, follow-ups already due are forgotten


@dataclass(frozen=True)
class _ArmedFollowUp:
    """A book's armed follow-up as this process knows it: when it is due (Unix time), and customers this
    process has added to it."""

    due: float
    customer_ids: frozenset

    def covers(self, customer_ids, now: float) -> bool:
        return now < self.due - CLOCK_MARGIN_SECONDS and self.customer_ids.issuperset(customer_ids)


_armed_here: dict[str, _ArmedFollowUp] = {}


def _armed_key(book_id: str) -> str:
    return f"usage-followup:{book_id}:armed"


def _customers_key(book_id: str) -> str:
    return f"usage-followup:{book_id}:customers"


def _run_in_process(book_id: str, customer_ids: set[str]) -> None:
    # Every web process runs its own follow-ups, and under steady load at the same moments: one that finds another's
    # catch-up running leaves the backlog to the next run instead of queueing behind it to catch up the few
    # batches that came meanwhile (one catch-up per process each time, each upserting most of the same keys).
    # Armed again, so what it left is caught up by the next run even if no batch follows.
    added = import_string(FOLLOWUP_TASK)(book_id, sorted(customer_ids), unless_busy=True)
    if added is None:
        in_process.add(book_id, ())


# Without Redis: the follow-ups of this process's batches, run by a thread of the process.
in_process = Coalescer("usage-followup", _run_in_process, delay=DELAY_SECONDS)


def usage_followup_schedule(*, book_id: str, customer_ids: set[UUID | str]) -> None:
    """Call on commit of a batch that stored new events for these customers."""
    client = redis_client()
    if client is None:
        in_process.add(book_id, map(str, customer_ids))
        return
    now = time.time()
    known = _armed_here.get(book_id)
    if known is not None and known.covers(customer_ids, now):
        return  # the armed follow-up runs after this commit and already has these customers
    due = now + DELAY_SECONDS
    try:
        pipeline = client.pipeline(transaction=True)  # one round trip, atomic with the task's take
        pipeline.sadd(_customers_key(book_id), *map(str, customer_ids))
        pipeline.expire(_customers_key(book_id), CUSTOMERS_SECONDS)
        pipeline.set(_armed_key(book_id), repr(due), nx=True, ex=ARMED_SECONDS, get=True)
        armed_due = pipeline.execute()[-1]  # None: this batch armed it; else when the armed one is due
    except redis.RedisError:
        logger.warning("usage follow-up not coalesced: Redis unavailable", exc_info=True)
        publish(FOLLOWUP_TASK, (book_id, sorted(map(str, customer_ids))), countdown=DELAY_SECONDS)
        return
    broker_pause_end()  # Redis answered: the broker (the same server) takes the task even right after an outage
    if armed_due is None and not publish(FOLLOWUP_TASK, (book_id,), countdown=DELAY_SECONDS):
        # No task behind the mark this batch set: left, it would keep the next batches from arming one for
        # ARMED_SECONDS. Taken back (if still this batch's), the next batch arms a follow-up again; the scheduled
        # catch-up and pool jobs do this batch's.
        _disarm(client, book_id, repr(due))
        return
    if not current_app.conf.task_always_eager:  # an eager task has already taken them
        _remember(book_id, due if armed_due is None else float(armed_due), customer_ids, known, now)  # not money


# Deletes the mark only while it is the one this batch set (another batch may have armed a follow-up since).
_DISARM = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def _disarm(client, book_id: str, due_text: str) -> None:
    try:
        client.eval(_DISARM, 1, _armed_key(book_id), due_text)
    except redis.RedisError:
        logger.warning("usage follow-up mark left to expire: Redis unavailable", exc_info=True)


def _remember(book_id: str, due: float, customer_ids, known: _ArmedFollowUp | None, now: float) -> None:
    """Customers just added to the follow-up due at `due`, with those this process added to it before."""
    remembered = known.customer_ids if known is not None and known.due == due else frozenset()
    if len(remembered) + len(customer_ids) > REMEMBERED_CUSTOMERS:
        remembered = frozenset()
    if len(_armed_here) >= REMEMBERED_BOOKS:
        for stale in [book for book, armed in _armed_here.items() if armed.due <= now]:
            del _armed_here[stale]
    _armed_here[book_id] = _ArmedFollowUp(due, remembered | frozenset(customer_ids))


def usage_followup_take(*, book_id: str) -> list[str]:
    """Disarm the book's follow-up and take the customers batches left for it (atomically: a batch that
    comes after this arms a new follow-up)."""
    client = redis_client()
    if client is None:
        return []
    try:
        pipeline = client.pipeline(transaction=True)
        pipeline.delete(_armed_key(book_id))
        pipeline.smembers(_customers_key(book_id))
        pipeline.delete(_customers_key(book_id))
        _, members, _ = pipeline.execute()
    except redis.RedisError:  # the periodic credit-pool job settles them instead
        logger.warning("usage follow-up customers unavailable: Redis unavailable", exc_info=True)
        return []
    return sorted(member.decode() for member in members)
