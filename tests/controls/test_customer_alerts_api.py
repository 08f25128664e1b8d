"""Customer watches through HTTP: create with every rule, confirmation email, PATCH, DELETE, roles (spec §2, §4)."""
import uuid
from types import SimpleNamespace

import pytest

from controls.models import CustomerAlert, CustomerAlertFiring, Notification
from controls.services.customer_alerts import customer_alerts_evaluate
from tests.controls.conftest import NOW
from tests.factories import CustomerFactory
from tests.mail import mail_to, sent_mail

pytestmark = pytest.mark.django_db

ALERTS = "/v1/customer-alerts"
OWNER = "owner@acme-agents.example.com"  # the `api` fixture's member


@pytest.fixture
def customer(book):
    return CustomerFactory(book=book, name="Globex", external_id="globex")


def watch(customer, notify=OWNER, **extra):
    return {"customerId": str(customer.id), "metric": "cost", "thresholdUsd": 100, "windowMode": "month",
            "notifyEmail": notify, **extra}


@pytest.fixture
def create(api, django_capture_on_commit_callbacks):
    """create(body, client=api) -> the 201 body (on-commit emails sent)."""
    def post(body, client=None):
        with django_capture_on_commit_callbacks(execute=True):
            resp = (client or api).post(ALERTS, body)
        assert resp.status_code == 201, resp.json()
        return resp.json()
    return post


def assert_400_naming(resp, text):
    assert resp.status_code == 400, resp.json()
    assert text in str(resp.json()["message"])


# --------------------------------------------------------------------------- create

def test_create_returns_the_watch_with_customer_recipient_and_creator(api, create, customer):
    body = create(watch(customer))
    assert body["customerId"] == str(customer.id)
    assert (body["customerName"], body["customerExternalId"]) == ("Globex", "globex")
    assert (body["metric"], body["thresholdUsd"], body["windowMode"]) == ("cost", 100, "month")
    assert body["customStartDate"] is None and body["customEndDate"] is None
    assert body["recipientEmail"] == OWNER
    assert body["createdByUserId"] == str(api.key.membership.user_id)
    assert body["createdAt"].endswith("Z") and body["updatedAt"].endswith("Z")
    uuid.UUID(body["id"])


def test_create_emails_a_confirmation_to_the_recipient(create, customer, member, settings):
    recipient = member("finance", "money@acme.example.com")
    create(watch(customer, recipient, thresholdUsd="250.5"))
    [mail] = sent_mail()
    assert mail.to == [recipient] and mail.from_email == settings.DEFAULT_FROM_EMAIL
    assert mail.subject == "Acme Agents: watching Globex's cost"
    assert "$250.50 in a calendar month (UTC)" in mail.text
    assert f"/admin/customers/customer/{customer.id}/change/" in mail.text
    assert mail.html is not None and "<strong>Globex</strong>" in mail.html


def test_recipient_is_matched_case_insensitively_and_stored_as_the_members_email(create, customer):
    assert create(watch(customer, OWNER.upper()))["recipientEmail"] == OWNER


def test_custom_window_keeps_its_range_with_a_date_only_end_inclusive(create, customer):
    body = create(watch(customer, windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-31"))
    assert body["customStartDate"] == "2025-03-01T00:00:00Z"
    assert body["customEndDate"] == "2025-04-01T00:00:00Z"  # the exclusive end: March 31 is inside


@pytest.mark.parametrize("end, stored", [("2025-03-31T23:59:59Z", "2025-04-01T00:00:00Z"),
                                         ("2025-03-15T12:00:00Z", "2025-03-15T12:00:00Z"),
                                         # the last second of a day in the offset written, as analytics reads it
                                         ("2025-03-31T23:59:59-05:00", "2025-04-01T05:00:00Z"),
                                         ("2025-03-31T18:59:59-05:00", "2025-03-31T23:59:59Z")])
def test_custom_end_timestamps_are_exclusive_with_the_last_second_meaning_midnight(create, customer, end, stored):
    body = create(watch(customer, windowMode="custom", customStartDate="2025-03-01T00:00:00Z", customEndDate=end))
    assert body["customEndDate"] == stored


def test_admin_and_finance_keys_create_and_read_watches(client_for, create, customer):
    for role in ("admin", "finance"):
        client = client_for(role=role)
        created = create(watch(customer, thresholdUsd=77 if role == "admin" else 78), client=client)
        assert created["id"] in [row["id"] for row in client.get(ALERTS).json()]


def test_unknown_customer_is_404(api):
    assert api.post(ALERTS, watch(SimpleNamespace(id=uuid.uuid4()))).status_code == 404


def test_customer_of_another_organization_is_404(api, other_book):
    assert api.post(ALERTS, watch(CustomerFactory(book=other_book))).status_code == 404


def test_malformed_customer_id_is_400(api, customer):
    assert_400_naming(api.post(ALERTS, {**watch(customer), "customerId": "nope"}), "customerId")


def test_deleted_customer_is_400(api, customer):
    customer.deleted_at = NOW
    customer.save()
    assert_400_naming(api.post(ALERTS, watch(customer)), "deleted")


def test_internal_coding_agent_customer_is_400(api, book, coding_usage):
    developer = coding_usage("dev@acme.example.com", "1").customer
    assert developer.is_internal
    assert_400_naming(api.post(ALERTS, watch(developer)), "internal coding-agent")
    assert not CustomerAlert.objects.exists()


@pytest.mark.parametrize("field, value", [("thresholdUsd", 0), ("thresholdUsd", -1), ("thresholdUsd", "abc"),
                                          ("metric", "margin"), ("windowMode", "week"), ("notifyEmail", "nope")])
def test_invalid_values_are_400_naming_the_field(api, customer, field, value):
    assert_400_naming(api.post(ALERTS, watch(customer, **{field: value})), field)


@pytest.mark.parametrize("field", ["customerId", "metric", "thresholdUsd", "windowMode", "notifyEmail"])
def test_required_fields_are_400_when_missing(api, customer, field):
    body = watch(customer)
    del body[field]
    assert_400_naming(api.post(ALERTS, body), field)


@pytest.mark.parametrize("dates, text", [
    ({}, "customStartDate"),
    ({"customStartDate": "2025-03-01"}, "customEndDate"),
    ({"customEndDate": "2025-03-01"}, "customStartDate"),
    ({"customStartDate": "2025-03-10", "customEndDate": "2025-03-01"}, "after customStartDate"),
    ({"customStartDate": "2025-03-10T00:00:00Z", "customEndDate": "2025-03-10T00:00:00Z"}, "after customStartDate"),
    ({"customStartDate": "March 1st", "customEndDate": "2025-03-10"}, "ISO 8601"),
])
def test_custom_window_needs_consistent_dates(api, customer, dates, text):
    assert_400_naming(api.post(ALERTS, watch(customer, windowMode="custom", **dates)), text)


@pytest.mark.parametrize("mode", ["month", "rolling"])
def test_custom_dates_are_only_allowed_with_custom(api, customer, mode):
    body = watch(customer, windowMode=mode, customStartDate="2025-03-01", customEndDate="2025-03-31")
    assert_400_naming(api.post(ALERTS, body), "only allowed with windowMode custom")


def test_notify_email_of_a_stranger_is_400(api, customer):
    assert_400_naming(api.post(ALERTS, watch(customer, "stranger@example.com")), "notifyEmail")


@pytest.mark.parametrize("role", ["member", "legal"])
def test_notify_email_of_a_member_without_a_money_role_is_400(api, customer, member, role):
    assert_400_naming(api.post(ALERTS, watch(customer, member(role))), "owner, admin or finance")


def test_notify_email_of_another_organizations_owner_is_400(api, customer, client_for, other_org):
    client_for(organization=other_org, email="boss@other.example.com")
    assert_400_naming(api.post(ALERTS, watch(customer, "boss@other.example.com")), "notifyEmail")


def test_identical_watch_is_409_but_a_different_threshold_or_recipient_is_not(api, create, customer, member):
    create(watch(customer))
    assert api.post(ALERTS, watch(customer, thresholdUsd="100.00")).status_code == 409
    create(watch(customer, thresholdUsd=101))
    create(watch(customer, member("admin", "boss@acme.example.com")))
    create(watch(customer, windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-31"))
    custom_again = watch(customer, windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-31")
    assert api.post(ALERTS, custom_again).status_code == 409
    assert CustomerAlert.objects.count() == 4


def test_the_organization_watch_limit_is_400(api, create, customer, settings):
    settings.CUSTOMER_ALERT_LIMIT = 2
    create(watch(customer, thresholdUsd=1))
    create(watch(customer, thresholdUsd=2))
    assert_400_naming(api.post(ALERTS, watch(customer, thresholdUsd=3)), "2 watches")


def test_the_limit_counts_only_this_organizations_watches(other_api, create, customer, settings, other_book):
    settings.CUSTOMER_ALERT_LIMIT = 1
    create(watch(customer))
    foreign = CustomerFactory(book=other_book)
    create(watch(foreign, "owner@other-org.example.com"), client=other_api)


# --------------------------------------------------------------------------- list

def test_list_shows_only_this_organizations_watches(api, other_api, create, customer, other_book):
    mine = create(watch(customer))
    create(watch(CustomerFactory(book=other_book), "owner@other-org.example.com"), client=other_api)
    assert [row["id"] for row in api.get(ALERTS).json()] == [mine["id"]]


# --------------------------------------------------------------------------- patch

def test_patch_changes_threshold_and_metric(api, create, customer):
    created = create(watch(customer))
    resp = api.patch(f"{ALERTS}/{created['id']}", {"thresholdUsd": 250, "metric": "revenue"})
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert (body["thresholdUsd"], body["metric"], body["customerId"]) == (250, "revenue", str(customer.id))


def test_patch_to_custom_needs_dates_and_keeps_them(api, create, customer):
    created = create(watch(customer))
    url = f"{ALERTS}/{created['id']}"
    assert_400_naming(api.patch(url, {"windowMode": "custom"}), "customStartDate")
    body = api.patch(url, {"windowMode": "custom", "customStartDate": "2025-03-01",
                           "customEndDate": "2025-03-10"}).json()
    assert (body["customStartDate"], body["customEndDate"]) == ("2025-03-01T00:00:00Z", "2025-03-11T00:00:00Z")
    body = api.patch(url, {"customEndDate": "2025-03-20"}).json()
    assert (body["customStartDate"], body["customEndDate"]) == ("2025-03-01T00:00:00Z", "2025-03-21T00:00:00Z")
    assert_400_naming(api.patch(url, {"customEndDate": "2025-02-01"}), "after customStartDate")


def test_patch_away_from_custom_clears_the_dates(api, create, customer):
    created = create(watch(customer, windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-31"))
    body = api.patch(f"{ALERTS}/{created['id']}", {"windowMode": "rolling"}).json()
    assert (body["windowMode"], body["customStartDate"], body["customEndDate"]) == ("rolling", None, None)


def test_patch_custom_dates_without_custom_mode_is_400(api, create, customer):
    created = create(watch(customer))
    assert_400_naming(api.patch(f"{ALERTS}/{created['id']}", {"customStartDate": "2025-03-01"}),
                      "only allowed with windowMode custom")


@pytest.mark.parametrize("field, value", [("customerId", "6f0c2b1e-8d4a-4c7e-9b3f-2a1d5e7c9b04"), ("notifyEmail", OWNER),
                                          ("recipientEmail", OWNER)])
def test_customer_and_recipient_are_fixed_after_create(api, create, customer, field, value):
    created = create(watch(customer))
    assert_400_naming(api.patch(f"{ALERTS}/{created['id']}", {field: value}), field)


def test_patch_into_an_identical_watch_is_409(api, create, customer):
    create(watch(customer, thresholdUsd=100))
    other = create(watch(customer, thresholdUsd=200))
    assert api.patch(f"{ALERTS}/{other['id']}", {"thresholdUsd": 100}).status_code == 409
    assert CustomerAlert.objects.get(pk=other["id"]).threshold_usd == 200


def test_patch_validates_values(api, create, customer):
    created = create(watch(customer))
    assert_400_naming(api.patch(f"{ALERTS}/{created['id']}", {"thresholdUsd": 0}), "thresholdUsd")


# --------------------------------------------------------------------------- delete

def test_delete_answers_deleted_with_the_id_then_the_watch_is_404(api, create, customer):
    created = create(watch(customer))
    resp = api.delete(f"{ALERTS}/{created['id']}")
    assert resp.status_code == 200
    assert resp.json() == {"deleted": True, "id": created["id"]}
    assert api.patch(f"{ALERTS}/{created['id']}", {"thresholdUsd": 5}).status_code == 404
    assert api.get(ALERTS).json() == []


def test_delete_clears_the_watches_notifications_and_keeps_its_firing_record(api, create, customer, book,
                                                                             customer_usage):
    created = create(watch(customer, thresholdUsd=1))
    kept = create(watch(customer, thresholdUsd=2))
    customer_usage(customer, "5")
    assert customer_alerts_evaluate(book=book, now=NOW) == 2
    api.delete(f"{ALERTS}/{created['id']}")
    assert list(Notification.objects.values_list("alert_id", flat=True)) == [uuid.UUID(kept["id"])]
    firing = CustomerAlertFiring.objects.get(threshold_usd=1)
    assert firing.alert_id is None and firing.customer_id == customer.id


# --------------------------------------------------------------------------- 404s and roles

@pytest.mark.parametrize("alert_id", ["0b7e4c2a-91d3-4f6e-8a25-c3d9e1f4a706", "nope"])
def test_unknown_watch_is_404(api, alert_id):
    assert api.patch(f"{ALERTS}/{alert_id}", {"thresholdUsd": 5}).status_code == 404
    assert api.delete(f"{ALERTS}/{alert_id}").status_code == 404


def test_watch_of_another_organization_reads_as_404(api, other_api, create, other_book):
    foreign = create(watch(CustomerFactory(book=other_book), "owner@other-org.example.com"), client=other_api)
    assert api.patch(f"{ALERTS}/{foreign['id']}", {"thresholdUsd": 5}).status_code == 404
    assert api.delete(f"{ALERTS}/{foreign['id']}").status_code == 404
    assert CustomerAlert.objects.filter(pk=foreign["id"]).exists()


@pytest.mark.parametrize("role", ["member", "legal"])
def test_roles_without_money_access_get_403_on_every_operation(client_for, create, customer, role):
    created = create(watch(customer))
    client = client_for(role=role)
    for resp in (client.get(ALERTS), client.post(ALERTS, watch(customer, thresholdUsd=9)),
                 client.patch(f"{ALERTS}/{created['id']}", {"thresholdUsd": 9}),
                 client.delete(f"{ALERTS}/{created['id']}")):
        assert resp.status_code == 403
        assert "owner, admin or finance" in resp.json()["message"]


@pytest.mark.parametrize("scope", ["ingest", "legal"])
def test_ingest_only_and_legal_keys_get_403(client_for, customer, scope):
    client = client_for(scope=scope)
    assert client.get(ALERTS).status_code == 403
    assert client.post(ALERTS, watch(customer)).status_code == 403


def test_publishable_key_gets_403_on_reads_and_writes(client_for, create, customer):
    created = create(watch(customer))
    publishable = client_for(key_type="publishable")
    for resp in (publishable.get(ALERTS), publishable.post(ALERTS, watch(customer, thresholdUsd=9)),
                 publishable.patch(f"{ALERTS}/{created['id']}", {"thresholdUsd": 9}),
                 publishable.delete(f"{ALERTS}/{created['id']}")):
        assert resp.status_code == 403


def test_no_confirmation_is_sent_when_create_fails(api, customer):
    api.post(ALERTS, watch(customer, "stranger@example.com"))
    assert mail_to("stranger@example.com") == [] and sent_mail() == []
