"""Operator console: every controls page renders, and the notification feed shows each organization only its own."""
import pytest
from django.test import Client

from accounts.models import User
from accounts.services import member_ensure
from controls.models import Notification
from controls.services.customer_alerts import customer_alerts_evaluate
from tests.controls.conftest import NOW
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

PAGES = ["spendcap", "spendcapalert", "device", "customeralert", "customeralertfiring", "notification"]


def operator_of(organization, email) -> Client:
    member_ensure(organization=organization, email=email, role="admin")
    User.objects.filter(email=email).update(is_staff=True)
    client = Client()
    client.force_login(User.objects.get(email=email))
    return client


@pytest.fixture
def fired_notification(api, book, customer_usage):
    customer = CustomerFactory(book=book, name="Globex")
    resp = api.post("/v1/customer-alerts", {"customerId": str(customer.id), "metric": "cost", "thresholdUsd": 1,
                                            "windowMode": "month", "notifyEmail": "owner@acme-agents.example.com"})
    assert resp.status_code == 201
    api.post("/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": 1, "period": "month",
                                  "mode": "track"})
    customer_usage(customer, "5")
    customer_alerts_evaluate(book=book, now=NOW)
    return Notification.objects.get()


@pytest.mark.parametrize("page", PAGES)
def test_every_controls_admin_page_renders(admin_client, fired_notification, page):
    assert admin_client.get(f"/admin/controls/{page}/").status_code == 200


def test_a_notification_page_links_to_the_customers_console_page(org, fired_notification):
    client = operator_of(org, "ops@acme.example.com")
    page = client.get(f"/admin/controls/notification/{fired_notification.pk}/change/")
    assert page.status_code == 200
    assert f'href="{fired_notification.link}"' in page.content.decode()
    customer_id = fired_notification.firing.customer_id
    assert fired_notification.link.endswith(f"/admin/customers/customer/{customer_id}/change/")


def test_operators_see_only_their_organizations_notifications(org, other_org, fired_notification):
    own = operator_of(org, "ops@acme.example.com").get("/admin/controls/notification/")
    foreign = operator_of(other_org, "ops@other.example.com").get("/admin/controls/notification/")
    row_link = f"/admin/controls/notification/{fired_notification.pk}/change/"
    assert row_link in own.content.decode()
    assert foreign.status_code == 200 and row_link not in foreign.content.decode()
