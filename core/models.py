"""Abstract bases shared by every app (core owns no tables)."""
import uuid

from django.db import models


class TimeStamped(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class OrgOwned(TimeStamped):
    """A record of one organization's book (test or live): every query is scoped through `owned()`."""

    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+")

    class Meta:
        abstract = True
