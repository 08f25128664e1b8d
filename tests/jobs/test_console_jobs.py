"""The console's Jobs page (read only, the operator's books only) and the actions that start a job linking to it."""
import re

import pytest

from jobs.models import Job
from matters.models import MatterAttribution
from tests.console.conftest import action, messages_of
from tests.factories import MatterFactory, MatterRuleFactory, UsageEventFactory

pytestmark = pytest.mark.django_db

REFRESH = '<meta http-equiv="refresh" content="3">'


def test_the_jobs_page_shows_each_jobs_status_and_percent(console, book, other_book):
    running = Job.objects.create(book=book, kind="cost_backfill", status="running", done=3, total=12, changed=2)
    failed = Job.objects.create(book=book, kind="matter_rules_apply", status="failed", done=1, total=4,
                                error="Matter not found")
    foreign = Job.objects.create(book=other_book, kind="cost_reprice", status="queued")
    page = console.get("/admin/jobs/job/").content.decode()
    assert f"/admin/jobs/job/{running.pk}/change/" in page and f"/admin/jobs/job/{failed.pk}/change/" in page
    assert f"/admin/jobs/job/{foreign.pk}/" not in page
    assert '<progress max="100" value="25"></progress> 25%' in page and "Matter not found" in page
    assert re.search(r'field-changed">(<span class="console-number">)?2<', page)  # 3 examined, 2 priced
    assert console.get(f"/admin/jobs/job/{foreign.pk}/change/").status_code == 302  # not found: back to the index
    # A job's own page reloads itself until the job is finished.
    assert REFRESH in console.get(f"/admin/jobs/job/{running.pk}/change/").content.decode()
    assert REFRESH not in console.get(f"/admin/jobs/job/{failed.pk}/change/").content.decode()
    assert console.get("/admin/jobs/job/add/").status_code == 403


def test_a_sweep_the_action_leaves_to_the_background_links_to_its_job(console, book, settings,
                                                                      django_capture_on_commit_callbacks):
    settings.MATTERS_APPLY_EVENTS_PER_CALL = 1
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="contracts-bot")
    for _ in range(3):
        UsageEventFactory(book=book, agent_code="contracts-bot")
    with django_capture_on_commit_callbacks(execute=True):
        resp = action(console, "/admin/matters/matter/", "apply_matter_rules", [matter])
    job = Job.objects.get(book=book)
    assert messages_of(resp) == [(
        f'{book}: 1 events assigned by rule so far; the rest of the sweep runs in the background: '
        f'<a href="/admin/jobs/job/{job.pk}/change/">follow the job (applying the matter routing rules)</a>.')]
    assert (job.status, job.done, job.total, job.result) == ("succeeded", 3, 3, {"assigned": 3})
    assert MatterAttribution.objects.filter(matter=matter).count() == 3


def test_jobs_are_found_by_id_and_by_their_error(console, book):
    failed = Job.objects.create(book=book, kind="matter_rules_apply", status="failed", error="Matter not found")
    other = Job.objects.create(book=book, kind="cost_backfill", status="succeeded")
    by_id = console.get(f"/admin/jobs/job/?q={failed.pk}").content.decode()
    assert f"/admin/jobs/job/{failed.pk}/change/" in by_id and f"/admin/jobs/job/{other.pk}/change/" not in by_id
    by_error = console.get("/admin/jobs/job/?q=not+found").content.decode()
    assert f"/admin/jobs/job/{failed.pk}/change/" in by_error and f"/admin/jobs/job/{other.pk}/change/" not in by_error
