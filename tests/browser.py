"""Headless Chromium for the end-to-end tests (tests marked `browser`): Debian's /usr/bin/chromium driven by
Playwright for Python, which never downloads a browser (`make test` installs the package when it is missing)."""
import os

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture
def chromium(monkeypatch):
    """A headless Chromium for one test. Playwright's sync API runs an event loop in this thread while it lives,
    so it starts after the test's database setup and stops before its flush (both must run outside the loop)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium package (scripts/services.sh)")
    # The test's own ORM calls are synchronous code that Django would otherwise refuse next to a running loop.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
        connections.close_all()  # the ORM connections opened while the loop ran belong to its context


def csp_violations(page) -> list[str]:
    """What the page's Content-Security-Policy refused, as Chromium reports it on the console, from now on: a test
    asserts it stays empty (config/core/middleware.py)."""
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    return refused
