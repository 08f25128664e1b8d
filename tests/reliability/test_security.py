"""Security: secrets stored as digests and compared in constant time, never in logs or error bodies;
production headers and cookies; hosted-page links that cannot be guessed.

Key storage and the API key's own limits are tested in tests/accounts; `manage.py check --deploy` in
tests/core/test_production_settings.py.
"""
import hashlib
import io
import json
import logging
import math
import os
import re
import secrets
import subprocess
import sys

import pytest
from django.conf import settings
from django.test import Client
from django.urls import get_resolver
from rest_framework.test import APIClient

from billing.models import Invoice
from accounts import services as account_services
from accounts.keys import KEY_ALPHABET, KEY_RANDOM_LENGTH
from accounts.models import Invitation, Membership
from accounts.services import api_key_revoke, invitation_create
from core import clock
from core.logs import JsonFormatter
from portal.models import PortalSession
from tests.factories import UserFactory
from tests.mail import sent_mail
from tests.reliability.world import World
from tests.routes import url_routes

pytestmark = pytest.mark.django_db

URL_SAFE_TOKEN = re.compile(r"[A-Za-z0-9_-]+")  # 6 bits a character


@pytest.fixture
def log_output():
    """Everything the configured log handler writes (settings.LOGGING), as one string, at DEBUG level."""
    handler = next(h for h in logging.getLogger().handlers if isinstance(h.formatter, JsonFormatter))
    stream, root = io.StringIO(), logging.getLogger()
    previous_stream, previous_level = handler.setStream(stream), root.level
    root.setLevel(logging.DEBUG)
    yield stream.getvalue
    root.setLevel(previous_level)
    handler.setStream(previous_stream)


def pay_token_of(mail) -> str:
    return re.search(r"/pay/([^\s\"'<>]+)", mail.text).group(1)


# --------------------------------------------------------------------------- storage and comparison

def test_a_key_is_found_by_its_digest_and_compared_in_constant_time(api, monkeypatch):
    compared = []
    real = account_services.hmac.compare_digest
    monkeypatch.setattr(account_services.hmac, "compare_digest", lambda a, b: compared.append((a, b)) or real(a, b))
    assert api.get("/v1/verify").status_code == 200
    digest = hashlib.sha256(api.raw_key.encode()).hexdigest()
    assert compared == [(digest, digest)]


def test_link_tokens_are_stored_as_digests_only_and_carry_enough_entropy(api, org):
    world = World(api)
    assert api.post(f"/v1/invoices/{world.invoice.id}/send", {}).status_code == 200
    pay_token = pay_token_of(sent_mail()[-1])
    invoice = Invoice.objects.get(pk=world.invoice.id)
    assert invoice.pay_token_digest == hashlib.sha256(pay_token.encode()).hexdigest()
    assert pay_token not in json.dumps({f.attname: str(getattr(invoice, f.attname)) for f in Invoice._meta.fields})

    owner = UserFactory(email="boss@acme.example")
    Membership.objects.create(organization=org, user=owner, role="owner")
    invitation, invite_token = invitation_create(organization=org, email="new@acme.example", role="member",
                                                 invited_by=owner, now=clock.now())
    assert Invitation.objects.get(pk=invitation.pk).digest == hashlib.sha256(invite_token.encode()).hexdigest()

    portal_token = world.portal_session.token
    session = PortalSession.objects.get(pk=world.portal_session.id)
    assert session.token_digest == hashlib.sha256(portal_token.encode()).hexdigest()
    assert portal_token not in json.dumps({f.attname: str(getattr(session, f.attname))
                                           for f in PortalSession._meta.fields})

    for token in (pay_token, invite_token, portal_token):  # secrets.token_urlsafe(32): 256 random bits
        assert URL_SAFE_TOKEN.fullmatch(token) and len(token) * 6 >= 256, token
    assert KEY_RANDOM_LENGTH * math.log2(len(KEY_ALPHABET)) > 230  # API keys: 40 characters of 62


# --------------------------------------------------------------------------- secrets never leak

def test_no_key_or_link_token_reaches_the_logs_or_an_error_body(api, client_for, org, log_output, settings):
    settings.LINK_TOKEN_FAILURE_LIMIT = 1000
    world = World(api)
    assert api.post(f"/v1/invoices/{world.invoice.id}/send", {}).status_code == 200
    pay_token = pay_token_of(sent_mail()[-1])
    owner = UserFactory(email="boss@acme.example")
    Membership.objects.create(organization=org, user=owner, role="owner")
    _, invite_token = invitation_create(organization=org, email=owner.email, role="owner", invited_by=owner,
                                        now=clock.now())
    revoked = client_for(role="finance")
    api_key_revoke(key=revoked.key, now=clock.now())
    unknown_key = "svc_sk_test_" + "Z" * 40
    portal_token = world.portal_session.token
    secrets_sent = [api.raw_key, revoked.raw_key, unknown_key, pay_token, invite_token, portal_token]

    anonymous, browser = APIClient(), Client()
    signed_in = APIClient()
    signed_in.force_login(owner)
    answers = [
        api.get("/v1/customers"), api.post("/v1/customers", {"name": 42}), api.get("/v1/customers/nope"),
        revoked.get("/v1/customers"),
        anonymous.get("/v1/customers", HTTP_X_API_KEY=unknown_key),
        anonymous.get("/v1/customers", HTTP_X_API_KEY=api.raw_key + "x"),
        anonymous.get("/v1/customers", HTTP_AUTHORIZATION=f"Bearer {api.raw_key}"),
        anonymous.get(f"/v1/customers?api_key={api.raw_key}"),
        anonymous.post(f"/v1/invitations/accept/{invite_token}", HTTP_X_API_KEY=api.raw_key),
        signed_in.post(f"/v1/invitations/accept/{invite_token}x"),
        signed_in.post(f"/v1/invitations/accept/{invite_token}"),
        browser.get(f"/pay/{pay_token}"), browser.get(f"/pay/{pay_token}x"), browser.get(f"/portal/{pay_token}"),
        browser.get(f"/portal/{portal_token}"), browser.get(f"/portal/{portal_token}"),  # opened, then used
        browser.get(f"/portal/{portal_token}x"),
    ]
    logged = log_output()
    assert "/pay/[redacted]" in logged and "/portal/[redacted]" in logged  # the capture works
    for secret in secrets_sent:
        assert secret not in logged
    for answer in answers:
        if answer.status_code >= 400:
            body = answer.content.decode()
            assert not [secret for secret in secrets_sent if secret in body], (answer.status_code, body[:300])


# --------------------------------------------------------------------------- production settings

PRODUCTION_PROBE = """
import json, os, django
os.environ["DJANGO_SETTINGS_MODULE"] = "config.settings"
django.setup()
from django.conf import settings
from django.test import Client
client = Client()
login = client.get("/admin/login/", secure=True)
api = client.get("/v1/verify", secure=True)
plain = client.get("/v1/verify")
print(json.dumps({
    "login": {"status": login.status_code, "headers": dict(login.headers),
              "cookies": {name: dict(morsel) for name, morsel in login.cookies.items()}},
    "api": {"status": api.status_code, "headers": dict(api.headers)},
    "plain": {"status": plain.status_code, "location": plain.headers.get("Location")},
    "session": [settings.SESSION_COOKIE_SECURE, settings.SESSION_COOKIE_HTTPONLY, settings.SESSION_COOKIE_SAMESITE],
}))
"""


@pytest.fixture(scope="module")
def production():
    """What a production process (DEBUG=0) answers, from a fresh interpreter."""
    env = {name: value for name, value in os.environ.items()
           if name not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS"}}
    env.update(DEBUG="0", SECRET_KEY=secrets.token_urlsafe(50), ALLOWED_HOSTS="testserver")
    result = subprocess.run([sys.executable, "-c", PRODUCTION_PROBE], cwd=settings.BASE_DIR, env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("page", ["login", "api"])
def test_production_answers_carry_the_security_headers(production, page):
    headers = production[page]["headers"]
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"


def test_production_cookies_are_secure_and_http_only(production):
    csrf = production["login"]["cookies"]["csrftoken"]
    assert production["login"]["status"] == 200
    assert csrf["secure"] is True and csrf["httponly"] is True and csrf["samesite"] == "Lax"
    assert production["session"] == [True, True, "Lax"]


def test_production_redirects_plain_http_to_https(production):
    assert production["plain"] == {"status": 301, "location": "https://testserver/v1/verify"}


# --------------------------------------------------------------------------- guessing hosted-page tokens

def hosted_token_pages() -> list[str]:
    """Every page outside /v1 whose path carries a token (the pay-now link, the portal link)."""
    return sorted(path for path, _ in url_routes(get_resolver().url_patterns)
                  if "{token}" in path and not path.startswith("/v1/"))


def test_the_hosted_token_pages_are_found():
    assert {"/pay/{token}", "/portal/{token}"} <= set(hosted_token_pages())


@pytest.mark.parametrize("page", hosted_token_pages())
def test_a_network_guessing_link_tokens_is_refused_for_a_while(page, settings):
    settings.LINK_TOKEN_FAILURE_LIMIT = 3
    guesser, bystander = Client(REMOTE_ADDR="203.0.113.7"), Client(REMOTE_ADDR="203.0.113.8")
    for _ in range(3):
        guess = guesser.get(page.format(token=secrets.token_urlsafe(32)))
        assert 400 <= guess.status_code < 500 and guess.status_code != 429
    blocked = guesser.get(page.format(token=secrets.token_urlsafe(32)))
    assert blocked.status_code == 429
    assert int(blocked["Retry-After"]) == settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS
    assert bystander.get(page.format(token=secrets.token_urlsafe(32))).status_code != 429  # counted per network


def test_guesses_on_one_hosted_page_count_for_every_other(settings):
    settings.LINK_TOKEN_FAILURE_LIMIT = 2
    pages = hosted_token_pages()
    guesser = Client(REMOTE_ADDR="203.0.113.9")
    assert guesser.get(f"/pay/{secrets.token_urlsafe(32)}").status_code == 404
    assert guesser.get(f"/portal/{secrets.token_urlsafe(32)}").status_code == 404
    for page in pages:
        assert guesser.get(page.format(token=secrets.token_urlsafe(32))).status_code == 429, page


def fresh_link(api, page: str) -> str:
    """A valid link of `page` that nobody opened yet (a sent invoice's pay link, a new portal session's)."""
    world = World(api)
    if page == "pay":
        assert api.post(f"/v1/invoices/{world.invoice.id}/send", {}).status_code == 200
        return f"/pay/{pay_token_of(sent_mail()[-1])}"
    return f"/portal/{world.portal_session.token}"


@pytest.mark.parametrize("page", ["pay", "portal"])
def test_a_valid_link_opens_from_a_network_that_just_sent_100_bad_tokens(api, settings, page):
    """Behind a proxy every customer shares one address: a guesser there must not lock them out."""
    assert settings.LINK_TOKEN_FAILURE_LIMIT < 100  # the default (20) is in force
    link = fresh_link(api, page)
    shared = Client(REMOTE_ADDR="198.51.100.9")
    misses = [shared.get(f"/{page}/{secrets.token_urlsafe(32)}").status_code for _ in range(100)]
    limit = settings.LINK_TOKEN_FAILURE_LIMIT
    assert set(misses[:limit]) == {404} and set(misses[limit:]) == {429}
    opened = shared.get(link)
    assert opened.status_code == 200 and "Retry-After" not in opened
    blocked = shared.get(f"/{page}/{secrets.token_urlsafe(32)}")  # a valid link does not clear the count
    assert blocked.status_code == 429 and int(blocked["Retry-After"]) == settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS


def guesses_until_blocked(client: Client, **headers) -> list[int]:
    return [client.get(f"/pay/{secrets.token_urlsafe(32)}", **headers).status_code for _ in range(3)]


def test_behind_a_trusted_proxy_clients_are_limited_by_their_forwarded_address(settings):
    settings.TRUSTED_PROXY_COUNT, settings.LINK_TOKEN_FAILURE_LIMIT = 1, 2
    proxy = Client(REMOTE_ADDR="10.0.0.2")  # every request arrives from the proxy's address
    assert guesses_until_blocked(proxy, HTTP_X_FORWARDED_FOR="203.0.113.20") == [404, 404, 429]
    assert guesses_until_blocked(proxy, HTTP_X_FORWARDED_FOR="203.0.113.21") == [404, 404, 429]  # another client
    # Entries left of the proxy's own are the client's to write: they do not move it to a fresh count.
    spoofed = proxy.get(f"/pay/{secrets.token_urlsafe(32)}", HTTP_X_FORWARDED_FOR="192.0.2.55, 203.0.113.20")
    assert spoofed.status_code == 429


def test_with_two_trusted_proxies_the_client_is_the_entry_the_outer_proxy_wrote(settings):
    settings.TRUSTED_PROXY_COUNT, settings.LINK_TOKEN_FAILURE_LIMIT = 2, 2
    inner = Client(REMOTE_ADDR="10.0.0.3")
    assert guesses_until_blocked(inner, HTTP_X_FORWARDED_FOR="203.0.113.30, 10.0.0.9") == [404, 404, 429]
    forged = inner.get(f"/pay/{secrets.token_urlsafe(32)}", HTTP_X_FORWARDED_FOR="192.0.2.1, 203.0.113.30, 10.0.0.9")
    assert forged.status_code == 429
    other = inner.get(f"/pay/{secrets.token_urlsafe(32)}", HTTP_X_FORWARDED_FOR="203.0.113.31, 10.0.0.9")
    assert other.status_code == 404


def test_without_a_trusted_proxy_x_forwarded_for_is_ignored(settings):
    settings.TRUSTED_PROXY_COUNT, settings.LINK_TOKEN_FAILURE_LIMIT = 0, 2
    client = Client(REMOTE_ADDR="203.0.113.40")
    statuses = [client.get(f"/portal/{secrets.token_urlsafe(32)}", HTTP_X_FORWARDED_FOR=f"192.0.2.{n}").status_code
                for n in range(4)]  # a fresh forged address on every request
    assert statuses == [404, 404, 429, 429]
