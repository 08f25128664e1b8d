"""Headless Chromium for the end-to-end tests (tests marked `browser`), driven by Playwright for Python, which never
downloads a browser. The program is the first that exists of: CHROMIUM (a path), chromium, chromium-browser,
google-chrome-stable or google-chrome on PATH, and var/chromium/bin/chromium (Debian's package unpacked there
without root by scripts/services.sh, which `make test` runs first). Without one, the browser tests are skipped
with the line that says how to get it."""
import os
import shutil
from pathlib import Path

import pytest
from django.db import connections
from playwright.sync_api import sync_playwright

UNPACKED = Path(__file__).resolve().parent.parent / "var" / "chromium" / "bin" / "chromium"
NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
HOW_TO_GET_IT = ("install Debian's chromium package (apt-get install chromium, as root), or set "
                 "CHROMIUM=/path/to/chromium; as another user `make test` unpacks Debian's package under "
                 "var/chromium when apt-get can download it")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def chromium_program() -> tuple[str | None, str]:
    """The Chromium to drive, and when there is none, what was looked for."""
    named = os.environ.get("CHROMIUM", "")
    if named:
        return (named, "") if os.access(named, os.X_OK) else (None, f"CHROMIUM={named} is not a program")
    on_path = next(filter(None, map(shutil.which, NAMES)), None)
    if on_path:
        return on_path, ""
    if os.access(UNPACKED, os.X_OK):
        return str(UNPACKED), ""
    return None, f"none of {', '.join(NAMES)} on PATH, no CHROMIUM, nothing unpacked in var/chromium"


@pytest.fixture
def chromium(monkeypatch):
    """A headless Chromium for one test. Playwright's sync API runs an event loop in this thread while it lives,
    so it starts after the test's database setup and stops before its flush (both must run outside the loop)."""
    executable, missing = chromium_program()
    if executable is None:
        pytest.skip(f"Chromium not found ({missing}): {HOW_TO_GET_IT}")
    # The test's own ORM calls are synchronous code that Django would otherwise refuse next to a running loop.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()
        connections.close_all()  # the ORM connections opened while the loop ran belong to its context


def csp_violations(page) -> list[str]:
    """What the page's Content-Security-Policy refused, as Chromium reports it on the console, from now on: a test
    asserts it stays empty (core/middleware.py)."""
    refused: list[str] = []
    page.on("console", lambda message: refused.append(message.text)
            if "Content Security Policy" in message.text else None)
    return refused
