"""Operator console: portal sessions are listed per organization, read-only, and revoked by an action."""
import pytest
from django.test import Client

from accounts.models import User
from accounts.services import member_ensure
from portal.models import PortalSession
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db


def operator_of(organization, email) -> Client:
    member_ensure(organization=organization, email=email, role="admin")
    User.objects.filter(email=email).update(is_staff=True)
    client = Client()
    client.force_login(User.objects.get(email=email))
    return client


def test_the_portal_session_pages_render(admin_client, customer, create_session):
    session = create_session(customer)
    assert admin_client.get("/admin/portal/portalsession/").status_code == 200
    page = admin_client.get(f"/admin/portal/portalsession/{session['id']}/change/")
    assert page.status_code == 200 and session["token"] not in page.content.decode()
    assert admin_client.get("/admin/portal/portalsession/add/").status_code == 403


def test_the_revoke_action_revokes_the_selected_sessions(org, customer, create_session):
    session = create_session(customer)
    resp = operator_of(org, "ops@acme.example.com").post("/admin/portal/portalsession/", {
        "action": "revoke_sessions", "_selected_action": [session["id"]]})
    assert resp.status_code == 302
    assert PortalSession.objects.get(pk=session["id"]).revoked_at is not None


def test_operators_see_only_their_organizations_sessions(org, other_org, other_book, customer, create_session,
                                                         client_for):
    own = create_session(customer)
    CustomerFactory(book=other_book, external_id="foreign")
    foreign = client_for(organization=other_org).post("/v1/portal-sessions", {"customerExternalId": "foreign"}).json()
    listing = operator_of(org, "ops@acme.example.com").get("/admin/portal/portalsession/").content.decode()
    assert own["id"] in listing and foreign["id"] not in listing
