"""`manage.py load_catalog` shows how far the pricing of unpriced events has come: a bar redrawn in place on a
terminal (a pseudo-terminal here), plain lines otherwise.

The events are recorded through the API while the catalog lacks their model, so they are stored unpriced; the
load brings the model back and starts a pricing job per book. Tasks go to Redis, where no worker takes them (as
when the command runs before the workers start), so the command runs the job itself and draws each chunk."""
import io
import os
import pty
import select

import pytest
from django.core.management import call_command

from catalog.models import ServiceEntry
from config.celery import app as celery_app
from core.progress import ProgressBar
from jobs.models import Job
from customers import backfill
from customers.models import UsageEvent

pytestmark = pytest.mark.django_db(transaction=True)

LABEL = "Checking unpriced events of 1 book(s)"


@pytest.fixture
def broker_without_workers():
    eager = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = eager
    celery_app.control.purge()  # the messages nobody took, from the suite's own Redis database


@pytest.fixture
def unpriced_events(api, monkeypatch, broker_without_workers):
    """Five events of gpt-4o recorded while the catalog lacked it (stored with cost null); chunks of 2."""
    call_command("load_catalog", stdout=io.StringIO())
    ServiceEntry.objects.filter(provider="openai", canonical_name="gpt-4o").update(is_active=False)
    records = [{"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "gpt-4o",
                "modelProvider": "openai", "inputTokens": 1000, "outputTokens": 100} for _ in range(5)]
    resp = api.post("/v1/usage/record", {"records": records})
    assert [failure["code"] for failure in resp.json()["results"]["failed"]] == ["unknown_model"] * 5
    monkeypatch.setattr(backfill, "BACKFILL_CHUNK", 2)
    monkeypatch.setattr(ProgressBar, "redraw_seconds", 0)  # every report drawn, however fast the chunks come


def on_a_terminal(*args) -> str:
    """What `load_catalog` writes to a pseudo-terminal (whose line discipline turns each \\n into \\r\\n)."""
    controller, terminal = pty.openpty()
    with os.fdopen(terminal, "w") as stdout:
        assert stdout.isatty()
        call_command("load_catalog", *args, stdout=stdout)
    output = b""
    while select.select([controller], [], [], 0.5)[0]:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the terminal side is closed and everything was read
            break
        if not chunk:
            break
        output += chunk
    os.close(controller)
    return output.decode()


def test_on_a_terminal_the_bar_is_redrawn_in_place_per_chunk(unpriced_events):
    output = on_a_terminal()
    states = [part.rstrip() for part in output.replace("\r\n", "\n").split("\r")[1:]]
    assert states[0] == f"{LABEL}: 0 done"  # the job is queued: how much is left is not counted yet
    assert states[1:] == [
        f"{LABEL} [------------------------------]   0% 0/5",
        f"{LABEL} [############------------------]  40% 2/5",
        f"{LABEL} [########################------]  80% 4/5",
        f"{LABEL} [##############################] 100% 5/5",  # the last chunk
        f"{LABEL} [##############################] 100% 5/5",  # the job succeeded
        f"{LABEL} [##############################] 100% 5/5",  # read back from its row
        f"{LABEL} [##############################] 100% 5/5\nunpriced events: 5 of 5 priced",  # finish ends the line
    ]
    assert not UsageEvent.objects.filter(usage_cost__isnull=True).exists()
    assert Job.objects.get().status == "succeeded"


def test_elsewhere_it_prints_a_plain_line_per_tenth(unpriced_events):
    stdout = io.StringIO()
    call_command("load_catalog", stdout=stdout)
    lines = stdout.getvalue().splitlines()
    assert "\r" not in stdout.getvalue()
    assert lines[0].startswith("catalog: 0 created, 1 updated, ")
    assert lines[1:] == [f"{LABEL}: 0/5 (0%)", f"{LABEL}: 2/5 (40%)", f"{LABEL}: 4/5 (80%)", f"{LABEL}: 5/5 (100%)",
                         "unpriced events: 5 of 5 priced"]


def test_no_wait_leaves_the_jobs_to_the_workers(unpriced_events):
    stdout = io.StringIO()
    call_command("load_catalog", "--no-wait", stdout=stdout)
    job = Job.objects.get()
    assert stdout.getvalue().splitlines()[1] == f"pricing unpriced events of 1 book(s) in the background: jobs {job.pk}"
    assert (job.kind, job.status, job.done) == ("cost_reprice", "queued", 0)
    assert UsageEvent.objects.filter(usage_cost__isnull=True).count() == 5
