"""Spend caps through HTTP: CRUD, the org ceiling, one cap per target, sentences, roles (spec §2, §4, §5)."""
import uuid

import pytest

from controls.models import SpendCap

pytestmark = pytest.mark.django_db

CAPS = "/v1/control/caps"


def org_cap(**extra):
    return {"scope": "org", "providerScope": "all", "amountUsd": 1000, "period": "month", "mode": "track", **extra}


def dev_cap(developer="dev@acme.example.com", **extra):
    return {"scope": "dev", "scopeValue": developer, "providerScope": "all", "amountUsd": 200, "period": "month",
            "mode": "track", **extra}


def create(api, body):
    resp = api.post(CAPS, body)
    assert resp.status_code == 201, resp.json()
    return resp.json()


def assert_400_naming(resp, text):
    assert resp.status_code == 400, resp.json()
    assert text in str(resp.json()["message"])


# --------------------------------------------------------------------------- create

def test_org_cap_is_created_with_its_fields_default_thresholds_and_sentence(api):
    cap = create(api, org_cap(amountUsd=100))
    assert cap["scope"] == "org" and cap["scopeValue"] is None and cap["providerScope"] == "all"
    assert cap["amountUsd"] == 100 and cap["period"] == "month" and cap["mode"] == "track"
    assert cap["coolOffHours"] is None and cap["alertThresholds"] == [50, 80, 100]
    assert cap["createdByUserId"] == str(api.key.membership.user_id)
    assert cap["createdAt"].endswith("Z") and cap["updatedAt"].endswith("Z")
    assert cap["sentence"] == ("Alert at 50%, 80% and 100% of $100.00 per month of AI tool spend for the whole team; "
                               "tool calls are not blocked.")


def test_amount_is_kept_exact_and_returned_as_a_json_number(api):
    cap = create(api, org_cap(amountUsd="1234.5"))
    assert cap["amountUsd"] == 1234.5
    assert SpendCap.objects.get(pk=cap["id"]).amount_usd == pytest.approx(1234.5)


def test_dev_cap_under_the_org_cap_is_created_with_its_developer_and_sentence(api):
    create(api, org_cap())
    cap = create(api, dev_cap(amountUsd=20, period="day", mode="enforce", coolOffHours=4, alertThresholds=[80, 100]))
    assert cap["scope"] == "dev" and cap["scopeValue"] == "dev@acme.example.com"
    assert cap["sentence"] == ("Stop dev@acme.example.com's AI tool calls at $20.00 per day; alerts at 80% and 100%; "
                               "after a stop, calls stay refused for 4 hours.")


def test_dev_cap_equal_to_the_org_cap_is_allowed(api):
    create(api, org_cap(amountUsd=50))
    assert create(api, dev_cap(amountUsd=50))["amountUsd"] == 50


def test_dev_cap_without_an_org_cap_is_400_and_nothing_is_stored(api):
    assert_400_naming(api.post(CAPS, dev_cap()), "needs an org cap")
    assert not SpendCap.objects.exists()


def test_dev_cap_above_the_org_cap_is_400(api):
    create(api, org_cap(amountUsd=100))
    assert_400_naming(api.post(CAPS, dev_cap(amountUsd="100.01")), "amountUsd")


def test_second_org_cap_is_409(api):
    create(api, org_cap())
    assert api.post(CAPS, org_cap(amountUsd=500)).status_code == 409
    assert SpendCap.objects.filter(scope="org").count() == 1


def test_second_cap_for_the_same_developer_is_409(api):
    create(api, org_cap())
    create(api, dev_cap())
    assert api.post(CAPS, dev_cap(amountUsd=10, period="day")).status_code == 409


def test_the_same_targets_may_have_caps_in_another_organization(api, other_api):
    create(api, org_cap())
    create(api, dev_cap())
    create(other_api, org_cap())
    assert create(other_api, dev_cap())["scopeValue"] == "dev@acme.example.com"


@pytest.mark.parametrize("body, field", [
    (dev_cap(scopeValue=None), "scopeValue"),
    ({k: v for k, v in dev_cap().items() if k != "scopeValue"}, "scopeValue"),
    (dev_cap(scopeValue="not-an-email"), "scopeValue"),
    (org_cap(scopeValue="dev@acme.example.com"), "scopeValue"),
])
def test_scope_value_must_match_the_scope(api, body, field):
    create(api, org_cap())
    assert_400_naming(api.post(CAPS, body), field)


def test_provider_scope_other_than_all_is_400_saying_caps_cover_all_ai_tools(api):
    resp = api.post(CAPS, org_cap(providerScope="openai"))
    assert_400_naming(resp, "providerScope")
    assert "all AI tools for now" in str(resp.json()["message"])


def test_provider_scope_is_required(api):
    body = org_cap()
    del body["providerScope"]
    assert_400_naming(api.post(CAPS, body), "providerScope")


@pytest.mark.parametrize("thresholds", [[80, 50], [50, 50], [10, 20, 30, 40, 50, 60], [50.5], [0, 50], [-10],
                                        "50", [None], [1001]])
def test_alert_thresholds_must_be_up_to_five_increasing_whole_percents(api, thresholds):
    assert_400_naming(api.post(CAPS, org_cap(alertThresholds=thresholds)), "alertThresholds")


@pytest.mark.parametrize("thresholds, stored", [([25], [25]), ([10, 20, 30, 40, 150], [10, 20, 30, 40, 150]),
                                                ([50.0, 75], [50, 75]), ([], [])])
def test_valid_alert_thresholds_are_stored(api, thresholds, stored):
    assert create(api, org_cap(alertThresholds=thresholds))["alertThresholds"] == stored


@pytest.mark.parametrize("field, value", [("period", "year"), ("mode", "block"), ("amountUsd", 0),
                                          ("amountUsd", -5), ("amountUsd", "ten"), ("coolOffHours", -1),
                                          ("coolOffHours", 1.5), ("scope", "team")])
def test_invalid_values_are_400_naming_the_field(api, field, value):
    assert_400_naming(api.post(CAPS, org_cap(**{field: value})), field)


@pytest.mark.parametrize("field", ["scope", "amountUsd", "period", "mode"])
def test_required_fields_are_400_when_missing(api, field):
    body = org_cap()
    del body[field]
    assert_400_naming(api.post(CAPS, body), field)


# --------------------------------------------------------------------------- list

def test_list_has_the_org_cap_first_and_a_sentence_on_every_cap(api, other_api):
    create(api, org_cap())
    create(api, dev_cap("zed@acme.example.com"))
    create(api, dev_cap("amy@acme.example.com"))
    create(other_api, org_cap(amountUsd=5))
    caps = api.get(CAPS).json()
    assert [cap["scopeValue"] for cap in caps] == [None, "amy@acme.example.com", "zed@acme.example.com"]
    assert all(cap["sentence"] for cap in caps)


def test_live_key_does_not_see_the_test_books_caps(api, client_for):
    create(api, org_cap())
    assert client_for(environment="live").get(CAPS).json() == []


# --------------------------------------------------------------------------- patch

def test_patch_changes_the_amount_and_refreshes_the_sentence(api):
    cap = create(api, org_cap(amountUsd=100))
    resp = api.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 350})
    assert resp.status_code == 200, resp.json()
    assert resp.json()["amountUsd"] == 350
    assert "$350.00 per month" in resp.json()["sentence"] and resp.json()["sentence"] != cap["sentence"]


def test_patch_changes_period_mode_cool_off_and_thresholds(api):
    cap = create(api, org_cap(amountUsd=100))
    body = api.patch(f"{CAPS}/{cap['id']}", {"period": "week", "mode": "enforce", "coolOffHours": 1,
                                             "alertThresholds": [90]}).json()
    assert (body["period"], body["mode"], body["coolOffHours"], body["alertThresholds"]) == ("week", "enforce", 1, [90])
    assert body["sentence"] == ("Stop the whole team's AI tool calls at $100.00 per week; alerts at 90%; "
                                "after a stop, calls stay refused for 1 hour.")


@pytest.mark.parametrize("field, value", [("scope", "dev"), ("scopeValue", "x@acme.example.com"),
                                          ("providerScope", "all"), ("createdByUserId", "someone")])
def test_patch_of_a_fixed_field_is_400_naming_it(api, field, value):
    cap = create(api, org_cap())
    assert_400_naming(api.patch(f"{CAPS}/{cap['id']}", {field: value}), field)
    assert SpendCap.objects.get(pk=cap["id"]).scope == "org"


def test_patch_validates_values_like_create(api):
    cap = create(api, org_cap())
    assert_400_naming(api.patch(f"{CAPS}/{cap['id']}", {"alertThresholds": [100, 80]}), "alertThresholds")
    assert_400_naming(api.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 0}), "amountUsd")


def test_patch_lifting_a_dev_cap_above_the_org_cap_is_400(api):
    create(api, org_cap(amountUsd=100))
    cap = create(api, dev_cap(amountUsd=50))
    assert_400_naming(api.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 101}), "amountUsd")
    assert SpendCap.objects.get(pk=cap["id"]).amount_usd == 50


def test_patch_lowering_the_org_cap_below_a_dev_cap_is_400_but_down_to_it_is_allowed(api):
    ceiling = create(api, org_cap(amountUsd=100))
    create(api, dev_cap(amountUsd=60))
    assert_400_naming(api.patch(f"{CAPS}/{ceiling['id']}", {"amountUsd": 59}), "amountUsd")
    assert api.patch(f"{CAPS}/{ceiling['id']}", {"amountUsd": 60}).status_code == 200


# --------------------------------------------------------------------------- delete

def test_delete_answers_deleted_with_the_sentence_and_the_cap_leaves_the_list(api):
    ceiling = create(api, org_cap())
    cap = create(api, dev_cap())
    resp = api.delete(f"{CAPS}/{cap['id']}")
    assert resp.status_code == 200
    assert resp.json() == {"deleted": True, "sentence": cap["sentence"]}
    assert [row["id"] for row in api.get(CAPS).json()] == [ceiling["id"]]


def test_deleting_the_org_cap_while_dev_caps_depend_on_it_is_400_and_allowed_after(api):
    ceiling = create(api, org_cap())
    cap = create(api, dev_cap())
    assert api.delete(f"{CAPS}/{ceiling['id']}").status_code == 400
    api.delete(f"{CAPS}/{cap['id']}")
    assert api.delete(f"{CAPS}/{ceiling['id']}").status_code == 200
    assert not SpendCap.objects.exists()


# --------------------------------------------------------------------------- 404

@pytest.mark.parametrize("cap_id", ["5a9d3e1c-27b4-4f80-9c6e-d1b2a3f4e5c6", "not-a-uuid"])
def test_unknown_cap_id_is_404(api, cap_id):
    assert api.patch(f"{CAPS}/{cap_id}", {"amountUsd": 5}).status_code == 404
    assert api.delete(f"{CAPS}/{cap_id}").status_code == 404


def test_cap_of_another_organization_reads_as_404(api, other_api):
    foreign = create(other_api, org_cap())
    assert api.patch(f"{CAPS}/{foreign['id']}", {"amountUsd": 5}).status_code == 404
    assert api.delete(f"{CAPS}/{foreign['id']}").status_code == 404
    assert SpendCap.objects.get(pk=foreign["id"]).amount_usd == 1000


# --------------------------------------------------------------------------- roles and key types

def test_finance_key_can_create_change_and_delete_caps(client_for):
    finance = client_for(role="finance")
    cap = create(finance, org_cap())
    assert finance.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 10}).status_code == 200
    assert finance.delete(f"{CAPS}/{cap['id']}").status_code == 200


@pytest.mark.parametrize("role", ["admin", "member", "legal"])
def test_other_roles_cannot_write_caps_and_the_403_names_owner_or_finance(client_for, api, role):
    cap = create(api, org_cap())
    client = client_for(role=role)
    for resp in (client.post(CAPS, org_cap()), client.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 1}),
                 client.delete(f"{CAPS}/{cap['id']}")):
        assert resp.status_code == 403
        assert "owner or finance" in resp.json()["message"]


@pytest.mark.parametrize("scope", ["ingest", "legal"])
def test_ingest_only_and_legal_keys_read_caps_but_cannot_write_them(client_for, api, scope):
    cap = create(api, org_cap())
    client = client_for(scope=scope)
    assert [row["id"] for row in client.get(CAPS).json()] == [cap["id"]]
    assert client.post(CAPS, dev_cap()).status_code == 403


@pytest.mark.parametrize("role", ["member", "admin", "legal"])
def test_any_member_role_with_a_secret_key_reads_caps(client_for, api, role):
    create(api, org_cap())
    assert len(client_for(role=role).get(CAPS).json()) == 1


def test_publishable_key_is_refused_on_every_spend_control_route(client_for, api):
    cap = create(api, org_cap())
    publishable = client_for(key_type="publishable")
    for resp in (publishable.get(CAPS), publishable.post(CAPS, org_cap()),
                 publishable.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 1}), publishable.delete(f"{CAPS}/{cap['id']}"),
                 publishable.get("/v1/control/spend?period=month"), publishable.get("/v1/control/coverage"),
                 publishable.get("/v1/control/check?customerExternalId=dev@acme.example.com"),
                 publishable.post("/v1/control/devices/heartbeat",
                                  {"customerExternalId": "dev@acme.example.com", "deviceId": "d", "armed": True})):
        assert resp.status_code == 403, resp.json()
