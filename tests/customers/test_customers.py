"""/v1/customers through HTTP (spec §2 Customer, §4 Customers; contract: lists are bare arrays)."""
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from billing.models import PricingPlan, Subscription
from customers.models import Customer
from tests.factories import AgentFactory, CustomerFactory, UsageEventFactory

pytestmark = pytest.mark.django_db

FULL = {
    "name": "Acme Ltd", "externalId": "acme-1", "email": "billing@acme.example", "phone": "+351 21 000 0000",
    "addressLine1": "Rua Augusta 1", "addressLine2": "3rd floor", "city": "Lisbon", "state": "Lisboa",
    "zipCode": "1100-048", "country": "PT", "timezone": "Europe/Lisbon", "status": "suspended",
    "billingContactName": "Ana", "billingContactEmail": "ana@acme.example", "netTerms": 45,
    "invoiceEmailRecipients": ["ap@acme.example", "cfo@acme.example"],
    "metadata": {"crm_id": 7, "accountOwner": {"first_name": "Rui"}, "tags": ["gold"]},
}


def subscription_for(customer, *, status):
    """A subscription row written directly (the subscription endpoints live in billing)."""
    agent = AgentFactory(book=customer.book)
    plan = PricingPlan.objects.create(book=customer.book, name="Plan")
    return Subscription.objects.create(book=customer.book, name="Sub", plan=plan, agent=agent, customer=customer,
                                       start_date=datetime(2025, 1, 1, tzinfo=timezone.utc), status=status)


# --------------------------------------------------------------------------- create and read

def test_create_returns_201_with_every_field_in_camel_case(api):
    resp = api.post("/v1/customers", FULL)
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert {key: body[key] for key in FULL} == FULL
    assert body["createdAt"].endswith("Z") and body["updatedAt"].endswith("Z")
    assert api.get(f"/v1/customers/{body['id']}").json() == body


def test_metadata_keys_are_returned_exactly_as_sent(api):
    metadata = {"snake_key": 1, "camelKey": {"nested_key": [{"Deep_Key": True}]}, "UPPER": None}
    created = api.post("/v1/customers", {"name": "Meta", "metadata": metadata}).json()
    assert api.get(f"/v1/customers/{created['id']}").json()["metadata"] == metadata


def test_defaults_are_active_utc_thirty_days_and_empty_collections(api):
    body = api.post("/v1/customers", {"name": "Defaults"}).json()
    assert (body["status"], body["timezone"], body["netTerms"]) == ("active", "UTC", 30)
    assert (body["invoiceEmailRecipients"], body["metadata"], body["externalId"], body["email"]) == ([], {}, None, None)


def test_customer_is_written_to_the_keys_book(api, book):
    created = api.post("/v1/customers", {"name": "Booked"}).json()
    assert Customer.objects.get(pk=created["id"]).book == book


@pytest.mark.parametrize("payload, field", [
    ({}, "name"),
    ({"name": ""}, "name"),
    ({"name": 123}, "name"),
    ({"name": "n" * 256}, "name"),
    ({"name": "x", "email": "not-an-email"}, "email"),
    ({"name": "x", "billingContactEmail": "nope"}, "billingContactEmail"),
    ({"name": "x", "status": "deleted"}, "status"),
    ({"name": "x", "timezone": "Mars/Olympus"}, "timezone"),
    ({"name": "x", "timezone": "localtime"}, "timezone"),
    ({"name": "x", "netTerms": -1}, "netTerms"),
    ({"name": "x", "netTerms": "thirty"}, "netTerms"),
    ({"name": "x", "invoiceEmailRecipients": ["ok@example.com", "bad"]}, "invoiceEmailRecipients"),
    ({"name": "x", "invoiceEmailRecipients": "ok@example.com"}, "invoiceEmailRecipients"),
    ({"name": "x", "metadata": ["not", "an", "object"]}, "metadata"),
    ({"name": "x", "metadata": {"note": "nul\x00inside"}}, "metadata"),
    ({"name": "x\x00"}, "name"),
    ({"name": "x", "externalId": ""}, "externalId"),
    ({"name": "x", "externalId": "e" * 256}, "externalId"),
])
def test_invalid_field_is_400_naming_the_field(api, payload, field):
    resp = api.post("/v1/customers", payload)
    assert resp.status_code == 400, resp.json()
    assert any(message.startswith(f"{field}") for message in resp.json()["message"]), resp.json()
    assert not Customer.objects.exists()


def test_metadata_with_a_number_beyond_1000_digits_is_400_not_a_server_error(api):
    resp = api.post("/v1/customers", '{"name": "x", "metadata": {"n": 1e1000}}', format=None,
                    content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith("metadata.n: ")  # the place inside the field


def test_metadata_numbers_are_stored_and_returned_with_the_digits_sent(api):
    resp = api.post("/v1/customers", '{"name": "x", "metadata": {"wide": 12345678901234567890.123, "small": 0.1, '
                    '"trailing": 1.50, "big": 1180591620717411303424}}', format=None, content_type="application/json")
    assert resp.status_code == 201, resp.json()
    answered = api.get(f"/v1/customers/{resp.json()['id']}")
    for fragment in (b'"wide":12345678901234567890.123', b'"small":0.1', b'"trailing":1.50',
                     b'"big":1180591620717411303424'):
        assert fragment in resp.content and fragment in answered.content, fragment
    assert Customer.objects.get().metadata["wide"] == Decimal("12345678901234567890.123")


@pytest.mark.parametrize("body", ["[1, 2]", "{not json"])
def test_a_body_that_is_not_a_json_object_is_400(api, body):
    resp = api.post("/v1/customers", body, format=None, content_type="application/json")
    assert resp.status_code == 400
    assert not Customer.objects.exists()


def test_unknown_and_malformed_ids_are_404(api):
    assert api.get("/v1/customers/00000000-0000-4000-8000-000000000000").status_code == 404
    assert api.get("/v1/customers/not-a-uuid").status_code == 404
    assert api.patch("/v1/customers/not-a-uuid", {"name": "x"}).status_code == 404
    assert api.delete("/v1/customers/00000000-0000-4000-8000-000000000000").status_code == 404


# --------------------------------------------------------------------------- uniqueness

def test_duplicate_external_id_on_create_is_409(api):
    assert api.post("/v1/customers", {"name": "First", "externalId": "dup"}).status_code == 201
    resp = api.post("/v1/customers", {"name": "Second", "externalId": "dup"})
    assert resp.status_code == 409
    assert resp.json()["message"][0].startswith("externalId:")
    assert Customer.objects.filter(external_id="dup").count() == 1


def test_duplicate_external_id_on_update_is_409_and_changes_nothing(api):
    api.post("/v1/customers", {"name": "First", "externalId": "taken"})
    other = api.post("/v1/customers", {"name": "Second", "externalId": "free"}).json()
    resp = api.patch(f"/v1/customers/{other['id']}", {"externalId": "taken", "name": "Renamed"})
    assert resp.status_code == 409
    assert api.get(f"/v1/customers/{other['id']}").json()["externalId"] == "free"
    assert api.get(f"/v1/customers/{other['id']}").json()["name"] == "Second"


def test_customers_without_external_id_do_not_collide(api):
    assert api.post("/v1/customers", {"name": "A"}).status_code == 201
    assert api.post("/v1/customers", {"name": "B", "externalId": None}).status_code == 201


def test_same_external_id_in_another_organization_is_allowed(api, other_api):
    assert api.post("/v1/customers", {"name": "Mine", "externalId": "shared"}).status_code == 201
    assert other_api.post("/v1/customers", {"name": "Theirs", "externalId": "shared"}).status_code == 201


# --------------------------------------------------------------------------- update

def test_patch_changes_only_the_sent_fields(api):
    created = api.post("/v1/customers", FULL).json()
    resp = api.patch(f"/v1/customers/{created['id']}", {"name": "Renamed", "netTerms": 0, "status": "inactive"})
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert (body["name"], body["netTerms"], body["status"]) == ("Renamed", 0, "inactive")
    unchanged = {key: value for key, value in FULL.items() if key not in ("name", "netTerms", "status")}
    assert {key: body[key] for key in unchanged} == unchanged


def test_patch_with_null_clears_optional_text_and_external_id(api):
    created = api.post("/v1/customers", FULL).json()
    body = api.patch(f"/v1/customers/{created['id']}", {"email": None, "externalId": None, "phone": ""}).json()
    assert (body["email"], body["externalId"], body["phone"]) == (None, None, None)


def test_patch_replaces_metadata_as_a_whole(api):
    created = api.post("/v1/customers", {"name": "M", "metadata": {"a": 1, "b": 2}}).json()
    body = api.patch(f"/v1/customers/{created['id']}", {"metadata": {"c_d": 3}}).json()
    assert body["metadata"] == {"c_d": 3}


@pytest.mark.parametrize("payload, field", [
    ({"name": None}, "name"), ({"email": "bad"}, "email"), ({"status": "gone"}, "status"),
    ({"timezone": "UTC+1"}, "timezone"), ({"netTerms": -5}, "netTerms"),
])
def test_patch_validates_like_create(api, payload, field):
    created = api.post("/v1/customers", {"name": "Valid"}).json()
    resp = api.patch(f"/v1/customers/{created['id']}", payload)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


# --------------------------------------------------------------------------- soft delete

def test_delete_is_soft_the_row_stays_and_reads_as_404(api):
    created = api.post("/v1/customers", {"name": "Gone", "externalId": "gone"}).json()
    resp = api.delete(f"/v1/customers/{created['id']}")
    assert resp.status_code == 204 and not resp.content
    assert Customer.objects.get(pk=created["id"]).deleted_at is not None
    assert api.get(f"/v1/customers/{created['id']}").status_code == 404
    assert api.patch(f"/v1/customers/{created['id']}", {"name": "Back"}).status_code == 404
    assert api.delete(f"/v1/customers/{created['id']}").status_code == 404
    listed = api.get("/v1/customers")
    assert created["id"] not in {row["id"] for row in listed.json()} and listed["X-Total-Count"] == "0"


def test_deleted_customer_keeps_its_usage_events(api, book):
    event = UsageEventFactory(book=book)
    assert api.delete(f"/v1/customers/{event.customer_id}").status_code == 204
    event.refresh_from_db()
    assert event.customer_id is not None


def test_deleted_customer_frees_its_external_id(api):
    first = api.post("/v1/customers", {"name": "Old", "externalId": "reused"}).json()
    api.delete(f"/v1/customers/{first['id']}")
    assert api.post("/v1/customers", {"name": "New", "externalId": "reused"}).status_code == 201


@pytest.mark.parametrize("status", ["active", "upcoming"])
def test_delete_with_an_unfinished_subscription_is_409(api, book, status):
    customer = CustomerFactory(book=book)
    subscription_for(customer, status=status)
    resp = api.delete(f"/v1/customers/{customer.id}")
    assert resp.status_code == 409
    assert "subscription" in resp.json()["message"]
    customer.refresh_from_db()
    assert customer.deleted_at is None


def test_delete_with_only_ended_subscriptions_succeeds(api, book):
    customer = CustomerFactory(book=book)
    subscription_for(customer, status="ended")
    assert api.delete(f"/v1/customers/{customer.id}").status_code == 204


# --------------------------------------------------------------------------- list

def test_list_is_a_bare_array_newest_first_with_total_count(api, book):
    older = CustomerFactory(book=book)
    newer = CustomerFactory(book=book)
    resp = api.get("/v1/customers")
    assert resp.status_code == 200
    assert [row["id"] for row in resp.json()] == [str(newer.id), str(older.id)]
    assert resp["X-Total-Count"] == "2"


def test_list_pages_with_limit_and_offset(api, book):
    made = {str(CustomerFactory(book=book).id) for _ in range(5)}
    pages = [api.get("/v1/customers", {"limit": 2, "offset": offset}) for offset in (0, 2, 4)]
    assert [len(page.json()) for page in pages] == [2, 2, 1]
    assert {row["id"] for page in pages for row in page.json()} == made
    assert {page["X-Total-Count"] for page in pages} == {"5"}


def test_list_default_limit_is_100(api, book):
    CustomerFactory.create_batch(101, book=book)
    resp = api.get("/v1/customers")
    assert len(resp.json()) == 100 and resp["X-Total-Count"] == "101"


@pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"limit": "ten"}, {"offset": -1}])
def test_list_paging_outside_bounds_is_400(api, params):
    resp = api.get("/v1/customers", params)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(next(iter(params)))


def test_list_filters(api, book):
    acme = CustomerFactory(book=book, name="Acme Corp", external_id="acme", email="Billing@Acme.example")
    CustomerFactory(book=book, name="Globex", external_id="globex", status="suspended", email="ap@globex.example")

    def ids(**params):
        resp = api.get("/v1/customers", params)
        assert resp.status_code == 200, resp.json()
        return [row["name"] for row in resp.json()]

    assert ids(status="suspended") == ["Globex"]
    assert ids(externalId="acme") == ["Acme Corp"]
    assert ids(email="billing@acme.example") == [acme.name]
    assert ids(search="GLOB") == ["Globex"]
    assert ids(search="acme.example") == ["Acme Corp"]
    assert ids(status="active", search="globex") == []


def test_list_created_window_is_half_open(api, book):
    start = datetime(2025, 3, 1, tzinfo=timezone.utc)
    moments = {"before": start - timedelta(seconds=1), "at-start": start, "inside": start + timedelta(days=1),
               "at-end": start + timedelta(days=2)}
    for name, moment in moments.items():
        customer = CustomerFactory(book=book, name=name)
        Customer.objects.filter(pk=customer.pk).update(created_at=moment)
    resp = api.get("/v1/customers", {"createdAfter": "2025-03-01T00:00:00Z", "createdBefore": "2025-03-03"})
    assert sorted(row["name"] for row in resp.json()) == ["at-start", "inside"]


@pytest.mark.parametrize("params, field", [
    ({"status": "deleted"}, "status"), ({"createdAfter": "yesterday"}, "createdAfter"),
    ({"createdBefore": "2025-13-01"}, "createdBefore"), ({"search": "a\x00b"}, "search"),
])
def test_list_bad_filter_value_is_400_naming_it(api, params, field):
    resp = api.get("/v1/customers", params)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")
