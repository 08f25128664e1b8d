"""Post-ingestion work of the controls app, hooked on billing's `usage_recorded` signal."""
from django.dispatch import receiver

from billing.recording import usage_recorded
from controls.tasks import evaluate_spend_caps_task
from customers.models import CODING_AGENT_CODE


@receiver(usage_recorded, dispatch_uid="controls.evaluate_spend_caps")
def evaluate_spend_caps_after_ingestion(sender, *, book, events, **kwargs):
    """Only internal coding-agent usage moves spend against caps."""
    if any(event.agent_code == CODING_AGENT_CODE for event in events):
        evaluate_spend_caps_task.delay(str(book.pk))
