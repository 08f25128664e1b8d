"""Portal sessions: create a one-time link, revoke it, consume it when the customer opens it.

Rules callers rely on (docs/decisions/portal.md):
- a link lives one hour from creation and opens once; only the SHA-256 of its token is stored;
- opening is one conditional UPDATE, so two concurrent opens consume the link once;
- revoking is immediate and also ends the browser session the link started (pages check the row every time).
"""
import hashlib
import hmac
import secrets
from datetime import datetime, timedelta
from enum import Enum

from django.conf import settings
from django.contrib.sessions.models import Session

from core.errors import NotFound
from core.scoping import get_owned, owned
from customers.models import Customer
from customers.selectors import customers_live
from portal.models import PortalSession

LIFETIME = timedelta(hours=1)  # spec §8
TOKEN_BYTES = 32


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def portal_url(token: str) -> str:
    return f"{settings.PUBLIC_BASE_URL}/portal/{token}"


def _customer(book, *, customer_id: str | None, customer_external_id: str | None) -> Customer:
    """The live customer named by id or externalId; unknown, foreign and deleted customers are a 404."""
    live = customers_live(book=book)
    if customer_id is not None:
        return get_owned(Customer, book, customer_id, queryset=live)
    customer = live.filter(external_id=customer_external_id).first()
    if customer is None:
        raise NotFound("Customer not found")
    return customer


def portal_session_create(*, book, now: datetime, features: list[str], customer_id: str | None = None,
                          customer_external_id: str | None = None, return_url: str = "",
                          created_by: str = "") -> tuple[PortalSession, str]:
    """A link for one customer, valid for an hour; returns the session and the raw token (shown once)."""
    customer = _customer(book, customer_id=customer_id, customer_external_id=customer_external_id)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    session = PortalSession.objects.create(
        book=book, customer=customer, token_digest=token_digest(token), return_url=return_url or "",
        features=features, expires_at=now + LIFETIME, created_by=created_by)
    return session, token


def portal_session_revoke(*, book, session_id, now: datetime) -> PortalSession:
    """The link and any browser session it started stop working at once; revoking again changes nothing."""
    session = get_owned(PortalSession, book, session_id)
    owned(PortalSession, book).filter(pk=session.pk, revoked_at__isnull=True).update(revoked_at=now, updated_at=now)
    session.refresh_from_db()
    return session


class LinkState(Enum):
    OPENED = "opened"  # consumed by this request: show the portal
    USED = "used"  # opened before
    EXPIRED = "expired"
    REVOKED = "revoked"  # by DELETE, or its customer was deleted since
    UNKNOWN = "unknown"  # no such token


def _link_state(session: PortalSession, now: datetime) -> LinkState:
    """What opening this link now would be, as stored (OPENED: not used, revoked or expired yet)."""
    if session.customer.deleted_at is not None or session.revoked_at is not None:
        return LinkState.REVOKED
    if now >= session.expires_at:
        return LinkState.EXPIRED
    if session.used_at is not None:
        return LinkState.USED
    return LinkState.OPENED


def portal_link_find(*, token: str, now: datetime) -> tuple[LinkState, PortalSession | None]:
    """The link's session and what opening it now would be, nothing written. The token alone identifies the
    session (any book), like a pay-now link: found by digest and compared again in constant time."""
    digest = token_digest(token)
    session = (PortalSession.objects.select_related("customer", "book__organization")
               .filter(token_digest=digest).first())
    if session is None or not hmac.compare_digest(session.token_digest, digest):
        return LinkState.UNKNOWN, None
    return _link_state(session, now), session


def portal_link_consume(*, session: PortalSession, now: datetime) -> LinkState:
    """Consume a link `portal_link_find` found openable: OPENED when this call consumed it, else what a concurrent
    open (or a revoke, or the clock) made it meanwhile."""
    consumed = owned(PortalSession, session.book_id).filter(
        pk=session.pk, used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now,
    ).update(used_at=now, updated_at=now)  # 1: consumed now; 0: already used, revoked or expired
    session.refresh_from_db(fields=["used_at", "revoked_at", "updated_at"])
    return LinkState.OPENED if consumed else _link_state(session, now)


def browser_sessions_clear_expired(*, now: datetime) -> str:
    """Scheduled job: delete Django sessions past their expiry (every opened portal link starts one, which
    expires with its portal session), as `manage.py clearsessions` would. Idempotent."""
    deleted, _ = Session.objects.filter(expire_date__lte=now).delete()
    return f"{deleted} expired browser session(s) deleted"
