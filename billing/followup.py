"""What follows a recorded batch, coalesced per book: one task for many batches.

Recording a batch leaves two things to do after its commit: add its events to the analytics rollup (they
wait in the rollup backlog) and settle the credit pools of its customers (alert emails). Publishing a task
per batch cost a broker round trip and a worker run per 100 events; instead each batch adds its customers
to a per-book set in Redis and arms the book's follow-up (`SET ... NX EX`), and only the batch that armed
it publishes `usage_followup_task`, a few seconds later. The task first disarms and takes the customers (one
MULTI), then catches the rollup up and evaluates those customers' pools: a batch whose arming failed was
committed before the task disarmed, so the task sees its events; a batch after that arms a new task.

Nothing depends on the follow-up for correctness: analytics reads catch the rollup up themselves and the
periodic jobs (config/schedule.py) settle pools and backlogs every few minutes even if Redis lost a key.
Without Redis (the zero-setup `make run`) tasks run inline and there is nothing to coalesce.
"""
import logging
import redis

from config.core.redis_client import redis_client

logger = logging.getLogger("billing.followup")

# How long a follow-up waits for more batches of the same book. A catch-up costs about one rollup upsert per
# (day, customer, agent, signal, model) it touches, however many events share it: at 1 second, under
# sustained load over 500 customers, the worker's catch-ups held a PostgreSQL backend a third of the time;
# at 5 seconds a sixth (docs/performance.md). Analytics reads catch up whatever is left themselves; credit-pool
# alerts go out a few seconds after the batch that crossed a threshold.
DELAY_SECONDS = 5
ARMED_SECONDS = 60  # an armed key outlives a lost task by at most this
CUSTOMERS_SECONDS = 24 * 3600


def _armed_key(book_id: str) -> str:
    return f"usage-followup:{book_id}:armed"


def _customers_key(book_id: str) -> str:
    return f"usage-followup:{book_id}:customers"


def usage_followup_schedule(*, book_id: str, customer_ids: list[str]) -> None:
    """Call on commit of a batch that stored new events for these customers."""
    from billing.tasks import usage_followup_task  # tasks import the services this module feeds

    client = redis_client()
    if client is None:
        usage_followup_task.delay(book_id, customer_ids)
        return
    try:
        pipeline = client.pipeline(transaction=False)  # one round trip
        pipeline.sadd(_customers_key(book_id), *customer_ids)
        pipeline.expire(_customers_key(book_id), CUSTOMERS_SECONDS)
        pipeline.set(_armed_key(book_id), 1, nx=True, ex=ARMED_SECONDS)
        armed = pipeline.execute()[-1]
    except redis.RedisError:
        logger.warning("usage follow-up not coalesced: Redis unavailable", exc_info=True)
        usage_followup_task.apply_async((book_id, customer_ids), countdown=DELAY_SECONDS)
        return
    if armed:
        usage_followup_task.apply_async((book_id,), countdown=DELAY_SECONDS)


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
