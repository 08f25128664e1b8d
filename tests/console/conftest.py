"""Console fixtures: staff members signed in to the admin; the billing tests' settable clock (NOW is
2025-06-10T12:00Z)."""
import pytest
from django.test import Client

from accounts.models import User
from accounts.services import member_ensure
from tests.billing.conftest import NOW, frozen_now  # noqa: F401 (NOW for the tests, the fixture)


@pytest.fixture
def console_for(org):
    """console_for(organization=org, role="owner", superuser=False) -> a Client signed in as a staff member."""
    def make(organization=None, role="owner", *, superuser=False, email=None):
        organization = organization or org
        email = email or f"{role}-{'root' if superuser else 'staff'}@{organization.pk}.example.com"
        member_ensure(organization=organization, email=email, role=role)
        User.objects.filter(email=email).update(is_staff=True, is_superuser=superuser)
        client = Client()
        client.force_login(User.objects.get(email=email))
        return client
    return make


@pytest.fixture
def console(console_for):
    """An owner of `org` (Acme Agents), staff, not a superuser."""
    return console_for()


def messages_of(resp) -> list[str]:
    """The admin messages of a followed response."""
    return [str(message) for message in resp.context["messages"]]


def action(client, changelist: str, name: str, rows, follow=True, **data):
    """Run a list action on `rows` (ids or model instances), as the changelist's action form posts it."""
    ids = [str(getattr(row, "pk", row)) for row in rows]
    return client.post(changelist, {"action": name, "_selected_action": ids, "index": "0", **data}, follow=follow)


def apply_action(client, changelist: str, name: str, rows, follow=True, **data):
    """Submit an action's intermediate page (its form's fields in `data`)."""
    ids = [str(getattr(row, "pk", row)) for row in rows]
    return client.post(changelist, {"action": name, "_selected_action": ids, "select_across": "0", "apply": "1",
                                    **data}, follow=follow)
