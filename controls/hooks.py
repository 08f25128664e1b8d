"""Work of the controls app that runs at a moment of a lower app (registered in config/hooks.py)."""
from core.background import publish
from customers.models import CODING_AGENT_CODE


def evaluate_spend_caps_after_ingestion(*, book, events) -> None:
    """billing's `usage_ingested`: only internal coding-agent usage moves spend against caps."""
    if any(event.agent_code == CODING_AGENT_CODE for event in events):
        # The spend-cap job sweeps what it could not.
        publish("controls.tasks.evaluate_spend_caps_task", (str(book.pk),))
