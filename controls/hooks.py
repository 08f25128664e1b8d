"""Work of the controls app that runs at a moment of a lower app (registered in config/hooks.py)."""
from core.background import TaskRunner
from customers.models import CODING_AGENT_CODE

# Through a TaskRunner: without a broker (the zero-setup `make run`) a published task runs inline, inside the
# usage request that recorded the batch; the runner runs it on a thread of the process after the answer.
spend_caps_runner = TaskRunner("spend-caps-after-ingestion")


def evaluate_spend_caps_after_ingestion(*, book, events) -> None:
    """billing's `usage_ingested`: only internal coding-agent usage moves spend against caps."""
    if any(event.agent_code == CODING_AGENT_CODE for event in events):
        # The spend-cap job sweeps what it could not.
        spend_caps_runner.dispatch("controls.tasks.evaluate_spend_caps_task", (str(book.pk),))
