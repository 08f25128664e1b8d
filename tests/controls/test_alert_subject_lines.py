"""An alert whose subject holds a name with a line break is still sent: the subject is made one line. (A header
with a line break made Django refuse the message at send time, after the alert was recorded as emailed.)"""
import pytest

from controls.models import CustomerAlertFiring
from tests.factories import CustomerFactory
from tests.mail import mail_to

pytestmark = pytest.mark.django_db

OWNER = "owner@acme-agents.example.com"


@pytest.mark.parametrize("name", ["Acme\nCorp", "Acme\r\n\r\nCorp", "Acme\u2028Corp", "Acme\x85\x0c\x1cCorp"])
def test_a_customer_alert_for_a_name_with_a_line_break_is_emailed_with_a_one_line_subject(
        api, book, customer_usage, run_jobs, name):
    customer = CustomerFactory(book=book, name="Globex", external_id="globex")
    resp = api.patch(f"/v1/customers/{customer.id}", {"name": name})
    assert resp.status_code == 200 and resp.json()["name"] == name, resp.json()
    resp = api.post("/v1/customer-alerts", {"customerId": str(customer.id), "metric": "cost", "thresholdUsd": 10,
                                            "windowMode": "month", "notifyEmail": OWNER})
    assert resp.status_code == 201, resp.json()
    customer_usage(customer, "10.5")
    run_jobs()
    assert CustomerAlertFiring.objects.count() == 1
    [mail] = [mail for mail in mail_to(OWNER) if "reached" in mail.subject]
    assert mail.subject == "Acme Agents: Acme Corp's cost reached $10.50"
    assert "$10.50" in mail.text
