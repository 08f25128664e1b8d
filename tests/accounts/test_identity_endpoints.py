"""GET /v1/verify, GET /v1/me/key and the user-session-only routes."""
import pytest

from accounts.models import Membership
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_verify_identifies_the_organization(api, org):
    resp = api.get("/v1/verify")
    assert resp.status_code == 200
    body = resp.json()
    assert body["verified"] is True
    assert body["organization"] == {"id": str(org.id), "name": org.name}
    assert body["createdAt"].endswith("Z") and body["updatedAt"].endswith("Z")


def test_me_key_describes_the_calling_key(client_for):
    client = client_for(role="finance", scope="ingest", environment="live")
    resp = client.get("/v1/me/key")
    assert resp.status_code == 200
    body = resp.json()
    assert body["id"] == str(client.key.id)
    assert (body["type"], body["environment"], body["scope"], body["role"]) == ("secret", "live", "ingest", "finance")
    assert body["livemode"] is True
    assert body["prefix"] == client.raw_key[:16]
    assert client.raw_key not in resp.content.decode()
    assert body["createdAt"].endswith("Z")
    assert "lastUsedAt" in body


def test_me_key_reports_last_use_after_a_request(api):
    api.get("/v1/verify")
    assert api.get("/v1/me/key").json()["lastUsedAt"] is not None


def test_user_session_routes_refuse_api_keys_with_403(api):
    resp = api.get("/v1/users/me")
    assert resp.status_code == 403
    assert "signed-in user" in resp.json()["message"]
    assert api.post("/v1/invitations/accept/whatever", {}).status_code == 403


def test_user_session_route_without_session_is_401(anonymous):
    assert anonymous.get("/v1/users/me").status_code == 401


def test_signed_in_user_reads_their_profile_and_accepts_an_invitation(org, anonymous, settings):
    from rest_framework.test import APIClient

    from accounts.services import invitation_create
    from core import clock

    owner = UserFactory(email="boss@acme.example")
    Membership.objects.create(organization=org, user=owner, role="owner")
    invitee = UserFactory(email="new@acme.example")
    _, token = invitation_create(organization=org, email=invitee.email, role="finance", invited_by=owner,
                                 now=clock.now())
    client = APIClient()
    client.force_login(invitee)
    assert client.get("/v1/users/me").json()["memberships"] == []
    accepted = client.post(f"/v1/invitations/accept/{token}")
    assert accepted.status_code == 201
    assert Membership.objects.get(organization=org, user=invitee).role == "finance"
    assert client.post(f"/v1/invitations/accept/{token}").status_code == 404  # single use


class _RefusingMailServer:
    """An email backend whose server refuses every message."""

    def __init__(self, *args, **kwargs):
        pass

    def send_messages(self, messages):
        raise ConnectionRefusedError("smtp down")


def test_an_invitation_whose_email_is_refused_answers_502_and_stores_nothing(org, settings):
    """Its token exists only in the email: an invitation committed without it could never be accepted."""
    from rest_framework.test import APIClient

    from accounts.models import Invitation
    from tests.mail import mail_to

    owner = UserFactory(email="boss@acme.example")
    Membership.objects.create(organization=org, user=owner, role="owner")
    client = APIClient()
    client.force_login(owner)
    body = {"organizationId": str(org.id), "email": "new@acme.example", "role": "finance"}
    settings.EMAIL_BACKEND = f"{__name__}._RefusingMailServer"
    refused = client.post("/v1/invitations", body, format="json")
    assert refused.status_code == 502
    assert refused.json()["code"] == "email_not_sent" and "new@acme.example" in refused.json()["message"]
    assert not Invitation.objects.exists()
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    assert client.post("/v1/invitations", body, format="json").status_code == 201
    [email] = mail_to("new@acme.example")
    assert "/v1/invitations/accept/" in email.text and Invitation.objects.count() == 1


def test_a_session_cookie_holding_a_nul_is_no_session_not_a_500(anonymous):
    # `\000` in a quoted cookie is a NUL once parsed, and the session's lookup with it was a 500.
    resp = anonymous.get("/v1/users/me", HTTP_COOKIE='sessionid="\\000AAAAAAAAAA"')
    assert resp.status_code == 401, resp.content[:300]
