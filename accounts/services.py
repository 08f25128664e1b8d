"""Writes for organizations, members and keys."""
import hmac
import logging
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction

from accounts.book_generations import GENERATION_COLUMNS, Generation, stamp
from accounts.keys import display_prefix, generate_raw_key, key_digest
from accounts.models import (ApiKey, Book, Environment, Invitation, KeyScope, KeyType, Membership,
                                   Organization, User)
from core.database import WholeRows, prepared_cursor
from core.errors import BadRequest, EmailNotSent, NotFound

logger = logging.getLogger("billing.accounts")


@transaction.atomic
def organization_ensure(*, name: str) -> Organization:
    """The organization with this name, created with both of its books when missing."""
    organization, _ = Organization.objects.get_or_create(name=name)
    for environment in Environment.values:
        Book.objects.get_or_create(organization=organization, environment=environment)
    return organization


def book_for(*, organization: Organization, environment: str) -> Book:
    book, _ = Book.objects.get_or_create(organization=organization, environment=environment)
    return book


@transaction.atomic
def member_ensure(*, organization: Organization, email: str, role: str) -> Membership:
    """The user (created without a usable password when new) and their membership with this role."""
    email = email.strip().lower()
    user = User.objects.filter(email=email).first() or User.objects.create_user(email=email)
    membership, created = Membership.objects.get_or_create(organization=organization, user=user,
                                                           defaults={"role": role})
    if not created and membership.role != role:
        membership.role = role
        membership.save(update_fields=["role"])
    return membership


def api_key_check(*, key_type: str, environment: str, scope: str) -> None:
    """BadRequest unless a key of this type, environment and scope can be minted: what `api_key_mint` refuses,
    for callers that write other rows first (`create_api_key` checks before creating the organization)."""
    if key_type not in KeyType.values:
        raise BadRequest([f"type: Must be one of {', '.join(KeyType.values)}."])
    if environment not in Environment.values:
        raise BadRequest([f"env: Must be one of {', '.join(Environment.values)}."])
    if scope not in KeyScope.values:
        raise BadRequest([f"scope: Must be one of {', '.join(KeyScope.values)}."])
    if key_type == KeyType.PUBLISHABLE and scope != KeyScope.FULL:
        raise BadRequest(["scope: Scopes apply to secret keys only."])


def api_key_mint(*, membership: Membership, key_type: str, environment: str = Environment.TEST,
                 scope: str = KeyScope.FULL, name: str = "") -> tuple[ApiKey, str]:
    """Mint a key for a member; returns the row and the raw value, which is never stored."""
    api_key_check(key_type=key_type, environment=environment, scope=scope)
    raw_key = generate_raw_key(key_type, environment)
    key = ApiKey.objects.create(
        organization=membership.organization,
        book=book_for(organization=membership.organization, environment=environment),
        membership=membership, name=name, key_type=key_type, scope=scope, environment=environment,
        prefix=display_prefix(raw_key), digest=key_digest(raw_key),
    )
    return key, raw_key


# The key with its book, organization and membership (what `select_related` would read), as one raw
# statement: every /v1 request runs it, and the ORM took longer compiling it than PostgreSQL running it.
_KEY_PARTS = (WholeRows(ApiKey, "k"), WholeRows(Book, "b"), WholeRows(Organization, "o"), WholeRows(Membership, "m"))
# With the key, the generations of its book's cached records (accounts/book_generations.py): no statement more.
_KEY_SQL = (
    f"SELECT {', '.join(part.select for part in _KEY_PARTS)}, {GENERATION_COLUMNS} "
    f"FROM {ApiKey._meta.db_table} k JOIN {Book._meta.db_table} b ON b.id = k.book_id "
    f"JOIN {Organization._meta.db_table} o ON o.id = k.organization_id "
    f"JOIN {Membership._meta.db_table} m ON m.id = k.membership_id WHERE k.digest = %s"
)


def api_key_find(raw_key: str) -> ApiKey | None:
    """The key with this raw value (by digest; compared again in constant time), or None."""
    digest = key_digest(raw_key)
    with prepared_cursor() as cursor:
        cursor.execute(_KEY_SQL, [digest])
        row = cursor.fetchone()
    if row is None:
        return None
    parts, start = [], 0
    for part in _KEY_PARTS:
        parts.append(part.instance(row, start))
        start += part.width
    key, key.book, key.organization, key.membership = parts
    stamp(key, Generation(*row[start:]))
    if not hmac.compare_digest(key.digest, digest):
        return None
    return key


def api_key_revoke(*, key: ApiKey, now: datetime) -> ApiKey:
    """Revoke a key; revoking twice keeps the first revocation time."""
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now)
    key.refresh_from_db(fields=["revoked_at"])
    return key


def api_key_revoke_raw(*, raw_key: str, now: datetime) -> ApiKey:
    key = api_key_find(raw_key.strip())
    if key is None:
        raise NotFound("API key not found")
    return api_key_revoke(key=key, now=now)


INVITATION_LIFETIME_DAYS = 7


@transaction.atomic
def invitation_create(*, organization: Organization, email: str, role: str, invited_by: User,
                      now: datetime) -> tuple[Invitation, str]:
    """Invite someone by email; returns the invitation and the raw token (emailed, never stored).

    The email is sent before the invitation commits: its token exists nowhere else, so an invitation whose email
    the mail server did not take could never be accepted. Such a request answers 502 `email_not_sent` and
    stores nothing (invite again)."""
    raw_token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        organization=organization, email=email.strip().lower(), role=role, invited_by=invited_by,
        digest=key_digest(raw_token), expires_at=now + timedelta(days=INVITATION_LIFETIME_DAYS),
    )
    accept_url = f"{settings.PUBLIC_BASE_URL}/v1/invitations/accept/{raw_token}"
    try:
        send_mail(
            subject=f"You are invited to {organization.display_name}",
            message=(f"{invited_by.email} invited you to join {organization.display_name} as {role}.\n\n"
                     f"Sign in, then accept with POST {accept_url} (valid {INVITATION_LIFETIME_DAYS} days)."),
            from_email=settings.DEFAULT_FROM_EMAIL, recipient_list=[invitation.email],
        )
    except Exception:
        logger.exception("invitation email failed", extra={"organization_id": str(organization.pk)})
        raise EmailNotSent(f"The invitation email to {invitation.email} could not be sent; nothing was saved. "
                           f"Invite again.")
    return invitation, raw_token


@transaction.atomic
def invitation_accept(*, raw_token: str, user: User, now: datetime) -> Membership:
    """Join the inviting organization with the invited role; a token works once, before it expires."""
    invitation = (Invitation.objects.select_for_update()
                  .filter(digest=key_digest(raw_token), accepted_at__isnull=True, expires_at__gt=now).first())
    if invitation is None:
        raise NotFound("Invitation not found, already accepted or expired")
    invitation.accepted_at = now
    invitation.save(update_fields=["accepted_at"])
    return member_ensure(organization=invitation.organization, email=user.email, role=invitation.role)
