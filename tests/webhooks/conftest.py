"""Webhook fixtures: real receivers on loopback (WEBHOOKS_ALLOW_PRIVATE_URLS on for the tests that use one)."""
import pytest

from tests.billing.conftest import frozen_now  # noqa: F401 (fixture)
from tests.console.conftest import console, console_for  # noqa: F401 (fixtures)
from tests.webhooks.receiver import Receiver


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def second_receiver(receiver):
    second = Receiver()
    yield second
    second.stop()
