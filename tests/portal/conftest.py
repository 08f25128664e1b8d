"""Portal fixtures: a customer, links created through the API, and browsers (Django test clients) that open
them."""
from datetime import datetime, timezone

import pytest

from core import clock
from tests.factories import CustomerFactory

PUBLIC_BASE_URL = "https://billing.example.com"


@pytest.fixture(autouse=True)
def public_base_url(settings):
    settings.PUBLIC_BASE_URL = PUBLIC_BASE_URL
    settings.STRIPE_SECRET_KEY = ""
    settings.PAYMENTS_LOCAL_CHECKOUT = False  # tests that pay through the development checkout turn it on
    return PUBLIC_BASE_URL


@pytest.fixture
def customer(book):
    return CustomerFactory(book=book, name="Globex Corp", email="billing@globex.example.com",
                           external_id="globex")


@pytest.fixture
def create_session(api):
    """create_session(customer, **body) -> the 201 body of POST /v1/portal-sessions."""
    def create(customer, **body):
        resp = api.post("/v1/portal-sessions", {"customerExternalId": customer.external_id, **body})
        assert resp.status_code == 201, resp.content
        return resp.json()
    return create


def link_path(session: dict) -> str:
    """The path of a session's url (the test client speaks to the app, not to PUBLIC_BASE_URL)."""
    assert session["url"].startswith(PUBLIC_BASE_URL)
    return session["url"][len(PUBLIC_BASE_URL):]


@pytest.fixture
def clock_at(monkeypatch):
    """clock_at(moment): every reader of core.clock.now() sees `moment` from now on."""
    def move(moment: datetime) -> datetime:
        monkeypatch.setattr(clock, "now", lambda: moment)
        return moment
    return move


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)


def html(resp) -> str:
    return resp.content.decode()
