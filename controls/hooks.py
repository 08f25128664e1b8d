"""Work of the controls app that runs at a moment of a lower app (registered in config/hooks.py)."""
from core.background import TaskRunner
from customers.models import CODING_AGENT_CODE

# Through a TaskRunner: without a broker (the zero-setup `make run`) a published task runs inline, inside the
# usage request that recorded the batch; the runner runs it on a thread of the process after the answer. Once
# while waiting: with the worker down, every coding-agent batch queued an evaluation of its book, and the queue (in a
# Redis that keeps nothing on disk) held thousands ahead of follow-ups and scheduled runs when the worker came back.
SPEND_CAPS_TASK = "controls.tasks.evaluate_spend_caps_task"
spend_caps_runner = TaskRunner("spend-caps-after-ingestion", once_while_waiting=True)


def evaluate_spend_caps_after_ingestion(*, book, events) -> None:
    """billing's `usage_ingested`: only internal coding-agent usage moves spend against caps."""
    if any(event.agent_code == CODING_AGENT_CODE for event in events):
        # The spend-cap job sweeps what it could not.
        spend_caps_runner.dispatch(SPEND_CAPS_TASK, (str(book.pk),))
