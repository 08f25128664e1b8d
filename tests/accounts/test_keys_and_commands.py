"""Key minting, revocation and the bootstrap commands of contract.md."""
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from accounts.models import ApiKey, Book, Membership, Organization, User

pytestmark = pytest.mark.django_db


def run(*args) -> list[str]:
    out = StringIO()
    call_command(*args, stdout=out)
    return [line for line in out.getvalue().splitlines() if line.strip()]


def test_create_api_key_creates_org_user_membership_and_prints_the_key_last():
    lines = run("create_api_key", "--org", "Fresh Co", "--email", "Ana@Fresh.example", "--role", "finance",
                "--type", "secret")
    raw_key = lines[-1]
    assert raw_key.startswith("svc_sk_test_")
    organization = Organization.objects.get(name="Fresh Co")
    assert set(Book.objects.filter(organization=organization).values_list("environment", flat=True)) == {"test", "live"}
    membership = Membership.objects.get(organization=organization, user__email="ana@fresh.example")
    assert membership.role == "finance"
    key = ApiKey.objects.get(prefix=raw_key[:16])
    assert (key.key_type, key.environment, key.scope) == ("secret", "test", "full")


@pytest.mark.parametrize("key_type, env, prefix", [("secret", "test", "svc_sk_test_"), ("secret", "live", "svc_sk_live_"),
                                                   ("publishable", "test", "svc_pk_test_"),
                                                   ("publishable", "live", "svc_pk_live_")])
def test_key_prefixes_follow_type_and_environment(key_type, env, prefix):
    raw_key = run("create_api_key", "--org", "P", "--email", "p@p.example", "--role", "owner",
                  "--type", key_type, "--env", env)[-1]
    assert raw_key.startswith(prefix)


def test_create_api_key_twice_reuses_org_and_user_and_mints_distinct_keys():
    args = ("create_api_key", "--org", "Twice", "--email", "t@t.example", "--role", "owner", "--type", "secret")
    first, second = run(*args)[-1], run(*args)[-1]
    assert first != second
    assert Organization.objects.filter(name="Twice").count() == 1
    assert User.objects.filter(email="t@t.example").count() == 1
    assert ApiKey.objects.filter(organization__name="Twice").count() == 2


def test_create_api_key_with_scope_and_role_change():
    run("create_api_key", "--org", "S", "--email", "s@s.example", "--role", "member", "--type", "secret")
    raw_key = run("create_api_key", "--org", "S", "--email", "s@s.example", "--role", "legal", "--type", "secret",
                  "--scope", "legal")[-1]
    key = ApiKey.objects.get(prefix=raw_key[:16])
    assert key.scope == "legal"
    assert key.membership.role == "legal"


def test_publishable_key_with_a_scope_is_refused():
    with pytest.raises(CommandError):
        run("create_api_key", "--org", "S", "--email", "s@s.example", "--role", "owner", "--type", "publishable",
            "--scope", "ingest")


def stored_rows() -> list[int]:
    return [model.objects.count() for model in (Organization, Book, User, Membership, ApiKey)]


@pytest.mark.parametrize("options, message", [
    (["--type", "publishable", "--scope", "ingest"], "scope: Scopes apply to secret keys only."),
    (["--type", "secret", "--name", "k" * 256], "--name: Ensure this value has at most 255 characters."),
    (["--type", "secret", "--org", "O" * 256], "--org: Ensure this value has at most 255 characters."),
    (["--type", "secret", "--email", f"{'e' * 250}@r.example"], "--email: Ensure this value has at most 254"),
])
def test_a_refused_key_stores_no_organization_user_or_membership(options, message):
    before = stored_rows()
    with pytest.raises(CommandError) as refusal:
        run("create_api_key", "--org", "Refused Co", "--email", "r@r.example", "--role", "owner", *options)
    assert stored_rows() == before
    assert str(refusal.value).startswith(message)


def test_revoke_api_key_records_when(client_for):
    client = client_for()
    run("revoke_api_key", client.raw_key)
    key = ApiKey.objects.get(pk=client.key.pk)
    assert key.revoked_at is not None
    resp = client.get("/v1/verify")
    assert resp.status_code == 401 and resp.json()["code"] == "key_revoked"


def test_revoking_twice_keeps_the_first_time(client_for):
    client = client_for()
    run("revoke_api_key", client.raw_key)
    first = ApiKey.objects.get(pk=client.key.pk).revoked_at
    run("revoke_api_key", client.raw_key)
    assert ApiKey.objects.get(pk=client.key.pk).revoked_at == first


def test_revoke_unknown_key_fails():
    with pytest.raises(CommandError):
        run("revoke_api_key", "svc_sk_test_" + "Q" * 40)
