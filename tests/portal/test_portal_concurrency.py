"""Parallel opens of one link against a live server on PostgreSQL: the conditional UPDATE consumes it once."""
import threading
import urllib.error
import urllib.request

import pytest

from portal.models import PortalSession
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PARALLEL = 6


def test_concurrent_opens_of_one_link_show_the_portal_once(live_server, api, book, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    CustomerFactory(book=book, external_id="globex")
    session = api.post("/v1/portal-sessions", {"customerExternalId": "globex"}).json()
    barrier = threading.Barrier(PARALLEL)
    statuses = []

    def open_link():
        barrier.wait()
        try:
            with urllib.request.urlopen(session["url"], timeout=30) as response:
                statuses.append(response.status)
        except urllib.error.HTTPError as failure:
            statuses.append(failure.code)

    threads = [threading.Thread(target=open_link) for _ in range(PARALLEL)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [200] + [410] * (PARALLEL - 1)
    assert PortalSession.objects.get(pk=session["id"]).used_at is not None
