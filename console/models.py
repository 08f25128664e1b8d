from django.db import models

from core.models import TimeStamped


class LedgerDrift(TimeStamped):
    """A figure derived from a book's ledger that the last verification found different from the ledger
    (console/verification.py): kept while it lasts, so the dashboard and the operator see what differs,
    by how much and since when. A later run that no longer finds it deletes it."""

    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+")
    check_name = models.CharField(max_length=40)
    subject = models.CharField(max_length=500)
    ledger = models.TextField()
    derived = models.TextField()
    since = models.DateTimeField(null=True, blank=True, help_text="The earliest instant involved, when known.")
    first_found_at = models.DateTimeField()
    last_found_at = models.DateTimeField()

    class Meta:
        ordering = ["book", "check_name", "subject"]
        constraints = [models.UniqueConstraint(fields=["book", "check_name", "subject"], name="ledger_drift_uniq")]

    def __str__(self):
        return f"{self.check_name}: {self.subject}"
