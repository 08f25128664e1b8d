"""What the service's answers tell browsers and caches, and the console's sign-in limit:

- every HTML page carries a Content-Security-Policy (scripts from this origin only; the API reference may also
  run its inline start-up script), JSON answers none;
- answers that carry a secret (a portal link's token, a minted API key) and the pages a link token opens say
  `Cache-Control: no-store`;
- failed console sign-ins are limited per network and a valid sign-in always works;
- the request log keeps a request whose path holds a NUL character (escaped).
"""
import re

import pytest
from django.test import Client

from accounts.models import ApiRequestLog, Membership, User
from core.middleware import PAGE_POLICY, REFERENCE_POLICY
from tests.billing.invoice_support import WEBHOOK_SECRET
from tests.browser import chromium, csp_violations  # noqa: F401 (the fixture)
from tests.console.conftest import console, console_for  # noqa: F401 (fixtures: a staff member signed in)
from tests.mail import sent_mail
from tests.reliability.world import World

pytestmark = pytest.mark.django_db


def no_store(resp) -> bool:
    return "no-store" in resp.get("Cache-Control", "")


# --------------------------------------------------------------------------- Content-Security-Policy

def test_html_pages_carry_the_page_policy_and_json_answers_none(api):
    for path in ("/", "/admin/login/", "/portal/" + "x" * 43, "/pay/" + "x" * 43):
        resp = Client().get(path)
        assert resp["Content-Type"].startswith("text/html"), path
        assert resp["Content-Security-Policy"] == PAGE_POLICY, path
    assert "Content-Security-Policy" not in api.get("/v1/verify")
    assert "script-src 'self';" in PAGE_POLICY and "'unsafe-inline'" not in PAGE_POLICY.split("style-src")[0]
    assert "frame-ancestors 'none'" in PAGE_POLICY


def test_the_api_reference_may_run_its_inline_start_up_script(client):
    for path in ("/v1/docs", "/v1/redoc"):
        assert client.get(path)["Content-Security-Policy"] == REFERENCE_POLICY


# --------------------------------------------------------------------------- no-store

def test_a_portal_session_answer_carries_its_token_and_is_never_stored(api):
    world = World(api)
    resp = api.post("/v1/portal-sessions", {"customerId": world.customer.id})
    assert resp.status_code == 201 and resp.json()["url"]
    assert no_store(resp)


def test_the_pages_a_link_token_opens_are_never_stored(api, settings):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    world = World(api)
    portal_url = world.portal_session.url
    assert api.post(f"/v1/invoices/{world.invoice.id}/send", {}).status_code == 200
    pay_path = re.search(r"(/pay/[^\s\"'<>]+)", sent_mail()[-1].text).group(1)
    settings.LINK_TOKEN_FAILURE_LIMIT = 2
    portal_path = portal_url.split("testserver")[-1].split("8000")[-1]
    browser = Client()
    answers = [browser.get(path) for path in (portal_path, portal_path, pay_path, "/portal/" + "y" * 43,
                                              "/pay/" + "y" * 43, "/pay/" + "z" * 43)]
    assert [resp.status_code for resp in answers] == [200, 410, 200, 404, 404, 429]  # fresh, used, unknown, limited
    assert all(no_store(resp) for resp in answers), [resp.get("Cache-Control") for resp in answers]


def test_the_console_page_showing_a_minted_key_is_never_stored(console, org):
    membership = Membership.objects.get(organization=org, user__is_staff=True)
    resp = console.post("/admin/accounts/apikey/add/", {"membership": str(membership.pk), "name": "ci",
                                                        "key_type": "secret", "scope": "full", "environment": "test"})
    assert resp.context["raw_key"] in resp.content.decode()
    assert no_store(resp) and resp["Content-Security-Policy"] == PAGE_POLICY


# --------------------------------------------------------------------------- console sign-in

@pytest.fixture
def operator(org):
    user = User.objects.create_user(email="ops@acme.example.com", password="a long and good passphrase")
    User.objects.filter(pk=user.pk).update(is_staff=True)
    Membership.objects.create(organization=org, user=user, role="owner")
    return user


def sign_in(client, password, address="203.0.113.7"):
    return client.post("/admin/login/", {"username": "ops@acme.example.com", "password": password},
                       REMOTE_ADDR=address)


def test_failed_sign_ins_past_the_limit_are_429_and_a_valid_one_still_signs_in(operator, settings):
    settings.ADMIN_LOGIN_FAILURE_LIMIT = 3
    for _ in range(3):
        assert sign_in(Client(), "wrong").status_code == 200  # the form again, with its error
    refused = sign_in(Client(), "wrong")
    assert refused.status_code == 429 and refused["Retry-After"] == str(settings.ADMIN_LOGIN_FAILURE_WINDOW_SECONDS)
    assert "Too many failed sign-ins" in refused.content.decode()
    for _ in range(5):  # a guesser keeps going (each attempt costs a password hash: a few show the rule)
        assert sign_in(Client(), "wrong").status_code == 429
    operator_browser = Client()
    resp = sign_in(operator_browser, "a long and good passphrase")
    assert resp.status_code == 302
    assert operator_browser.get("/admin/").status_code == 200
    assert sign_in(Client(), "wrong", address="198.51.100.9").status_code == 200  # other networks: not counted


# --------------------------------------------------------------------------- the request log

def test_a_request_whose_path_holds_a_nul_character_is_logged_escaped(api):
    resp = api.get("/v1/customers/%00abc")
    assert resp.status_code == 404
    assert list(ApiRequestLog.objects.values_list("path", "status")) == [("/v1/customers/%00abc", 404)]


# --------------------------------------------------------------------------- in a browser

@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("path, shown", [("/v1/docs", ".swagger-ui .info"), ("/v1/redoc", "h1"),
                                         ("/admin/login/", "#login-form"), ("/", "h1")])
def test_pages_render_under_their_policy_in_chromium(chromium, live_server, path, shown):
    context = chromium.new_context(base_url=live_server.url)
    page = context.new_page()
    refused = csp_violations(page)
    page.goto(path)
    page.wait_for_selector(shown, timeout=15000)
    page.wait_for_load_state("networkidle")
    context.close()
    # ReDoc shows Redocly's badge from its CDN: refused, as the reference loads nothing from another origin.
    assert [message for message in refused if "https://cdn.redoc.ly/" not in message] == []
