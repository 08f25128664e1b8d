"""Alert-ladder emails of spend caps: one per threshold per window per cap, both modes (spec §6), driven by
`run_scheduled_jobs --now` and by the Celery task that ingestion enqueues."""
from datetime import datetime, timezone

import pytest

from config.celery import app as celery_app
from controls.models import SpendCap, SpendCapAlert
from controls.tasks import evaluate_spend_caps_task
from tests.controls.conftest import NOW
from tests.factories import CustomerFactory
from tests.mail import mail_to, sent_mail

pytestmark = pytest.mark.django_db

CAPS = "/v1/control/caps"
ALICE, BOB = "alice@acme.example.com", "bob@acme.example.com"
OWNER = "owner@acme-agents.example.com"  # the `api` fixture's member


def create_cap(api, **body):
    base = {"scope": "org", "providerScope": "all", "amountUsd": 100, "period": "month", "mode": "track"}
    resp = api.post(CAPS, {**base, **body})
    assert resp.status_code == 201, resp.json()
    return resp.json()


def subjects() -> list[str]:
    return [mail.subject for mail in sent_mail()]


def test_each_threshold_crossed_sends_one_email_once_per_window(run_jobs, api, coding_usage, member):
    member("finance", "money@acme.example.com")
    create_cap(api)
    coding_usage(ALICE, "49.99")
    run_jobs()
    assert sent_mail() == []
    coding_usage(BOB, "0.01")  # exactly 50%
    run_jobs()
    run_jobs()
    assert subjects() == ["Acme Agents: AI tool spend for the whole team reached 50% of $100.00 per month"]
    coding_usage(ALICE, "50")  # 100%: the 80% and 100% rungs, one email each
    run_jobs()
    assert sorted(subjects()[1:]) == [
        "Acme Agents: AI tool spend for the whole team reached 100% of $100.00 per month",
        "Acme Agents: AI tool spend for the whole team reached 80% of $100.00 per month"]
    run_jobs()
    assert len(sent_mail()) == 3
    assert SpendCapAlert.objects.count() == 3


def test_a_cap_moved_from_a_day_to_a_month_on_the_1st_alerts_its_new_window(run_jobs, api, coding_usage, frozen_now):
    """The day's window and the month's begin at the same instant on the 1st; the month's ladder is its own."""
    first = datetime(2025, 3, 1, 10, tzinfo=timezone.utc)
    frozen_now.moment = first
    cap = create_cap(api, amountUsd=20, period="day", alertThresholds=[100])
    coding_usage(ALICE, "20", at=first)
    run_jobs(first)
    assert subjects() == ["Acme Agents: AI tool spend for the whole team reached 100% of $20.00 per day"]
    assert api.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 400, "period": "month"}).status_code == 200
    coding_usage(ALICE, "380", at=first)
    run_jobs(first)
    assert subjects()[1:] == ["Acme Agents: AI tool spend for the whole team reached 100% of $400.00 per month"]


def test_alert_goes_to_owners_and_finance_members_as_text_and_html(run_jobs, api, coding_usage, member, settings):
    member("finance", "money@acme.example.com")
    member("admin", "boss@acme.example.com")
    member("member", "dev@acme.example.com")
    create_cap(api, alertThresholds=[10])
    coding_usage(ALICE, "10")
    run_jobs()
    [mail] = sent_mail()
    assert sorted(mail.to) == ["money@acme.example.com", OWNER]
    assert mail.from_email == settings.DEFAULT_FROM_EMAIL
    assert "$10.00 of $100.00 per month" in mail.text and "2025-03-01 00:00" in mail.text
    assert "no tool call is blocked" in mail.text
    assert mail.html is not None and "<strong>10%</strong>" in mail.html


def test_alert_goes_only_to_the_billing_email_when_set(run_jobs, api, org, coding_usage, member):
    member("finance", "money@acme.example.com")
    org.billing_email = "billing@acme.example.com"
    org.save()
    create_cap(api, alertThresholds=[50])
    coding_usage(ALICE, "60")
    run_jobs()
    assert [mail.to for mail in sent_mail()] == [["billing@acme.example.com"]]


def test_enforce_caps_send_the_ladder_too(run_jobs, api, coding_usage):
    create_cap(api, mode="enforce", alertThresholds=[100])
    coding_usage(ALICE, "100")
    run_jobs()
    [mail] = mail_to(OWNER)
    assert "Armed machines refuse tool calls" in mail.text


def test_a_new_window_sends_the_ladder_again(run_jobs, api, coding_usage):
    create_cap(api, period="day", alertThresholds=[50])
    coding_usage(ALICE, "60")
    run_jobs()
    next_day = datetime(2025, 3, 13, 9, tzinfo=timezone.utc)
    coding_usage(ALICE, "70", at=next_day)
    run_jobs(next_day)
    assert len(sent_mail()) == 2
    assert [alert.window_start.day for alert in SpendCapAlert.objects.order_by("window_start")] == [12, 13]


def test_a_window_crossed_in_its_last_seconds_alerts_once_it_has_ended(run_jobs, api, coding_usage, frozen_now):
    """The next evaluation after the last seconds of a day runs in the next day: the day that ended is judged for
    an hour after its end, for caps that were as they are now before it ended."""
    last_seconds = datetime(2025, 3, 12, 23, 59, 58, tzinfo=timezone.utc)
    frozen_now.moment = last_seconds
    create_cap(api, amountUsd=10, period="day", alertThresholds=[100])
    SpendCap.objects.update(updated_at=last_seconds)  # written by the database's clock, not the test's
    coding_usage(ALICE, "10", at=last_seconds)
    run_jobs(datetime(2025, 3, 13, 0, 0, 3, tzinfo=timezone.utc))
    run_jobs(datetime(2025, 3, 13, 0, 5, tzinfo=timezone.utc))
    assert [(alert.window_start.day, alert.threshold_percent) for alert in SpendCapAlert.objects.all()] == [(12, 100)]
    assert subjects() == ["Acme Agents: AI tool spend for the whole team reached 100% of $10.00 per day"]
    # A batch dated into the day that ended, arriving within the hour, is judged with it; after the hour, nothing.
    cap = create_cap(api, scope="dev", scopeValue=BOB, amountUsd=5, period="day", alertThresholds=[100])
    SpendCap.objects.filter(pk=cap["id"]).update(updated_at=datetime(2025, 3, 13, 0, 20, tzinfo=timezone.utc))
    coding_usage(BOB, "5", at=datetime(2025, 3, 12, 20, tzinfo=timezone.utc))
    run_jobs(datetime(2025, 3, 13, 0, 30, tzinfo=timezone.utc))
    assert SpendCapAlert.objects.filter(cap_id=cap["id"]).count() == 0  # made after the 12th ended: not its window
    coding_usage(ALICE, "10", at=datetime(2025, 3, 11, 12, tzinfo=timezone.utc))
    run_jobs(datetime(2025, 3, 13, 0, 30, tzinfo=timezone.utc))
    assert SpendCapAlert.objects.filter(window_start__day=11).count() == 0  # ended a day ago


def test_windows_crossed_before_the_jobs_stopped_alert_when_they_run_again_however_late(run_jobs, api, coding_usage,
                                                                                      frozen_now):
    """The worker or the broker was down from the last minutes of the 12th to the 15th: the days whose last part no
    run judged are judged by the first run after, each once; a day judged before the outage is not judged again."""
    frozen_now.moment = datetime(2025, 3, 12, 23, 50, tzinfo=timezone.utc)
    create_cap(api, amountUsd=10, period="day", alertThresholds=[100])
    SpendCap.objects.update(updated_at=datetime(2025, 3, 11, tzinfo=timezone.utc),
                            created_at=datetime(2025, 3, 11, tzinfo=timezone.utc))
    run_jobs(datetime(2025, 3, 12, 23, 50, tzinfo=timezone.utc))  # the last run before the outage
    coding_usage(ALICE, "10", at=datetime(2025, 3, 12, 23, 59, 58, tzinfo=timezone.utc))
    coding_usage(ALICE, "10", at=datetime(2025, 3, 14, 9, tzinfo=timezone.utc))
    coding_usage(ALICE, "10", at=datetime(2025, 3, 11, 12, tzinfo=timezone.utc))  # back-filled into a judged day
    run_jobs(datetime(2025, 3, 15, 8, tzinfo=timezone.utc))  # 32 hours after the 14th ended
    assert sorted(alert.window_start.day for alert in SpendCapAlert.objects.all()) == [12, 14]
    run_jobs(datetime(2025, 3, 15, 8, 5, tzinfo=timezone.utc))
    assert SpendCapAlert.objects.count() == 2


def test_a_dev_cap_counts_only_its_developers_spend(run_jobs, api, coding_usage):
    create_cap(api, amountUsd=1000, alertThresholds=[100])
    create_cap(api, scope="dev", scopeValue=ALICE, amountUsd=10, alertThresholds=[50])
    coding_usage(BOB, "100")
    run_jobs()
    assert sent_mail() == []
    coding_usage(ALICE, "5")
    run_jobs()
    assert subjects() == [f"Acme Agents: AI tool spend for {ALICE} reached 50% of $10.00 per month"]


def test_usage_of_other_books_and_customer_billing_does_not_alert(run_jobs, api, coding_usage, customer_usage,
                                                                   other_book, book):
    create_cap(api, alertThresholds=[1])
    coding_usage(ALICE, "100", in_book=other_book)
    customer_usage(CustomerFactory(book=book), "100")
    run_jobs()
    assert sent_mail() == []


def test_the_celery_task_evaluates_one_book_and_is_idempotent(api, book, coding_usage,
                                                               django_capture_on_commit_callbacks):
    create_cap(api, alertThresholds=[50])
    coding_usage(ALICE, "50")
    assert "controls.evaluate_spend_caps" in celery_app.tasks
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluate_spend_caps_task.delay(str(book.id), NOW.isoformat()).get() == 1
        assert evaluate_spend_caps_task.delay(str(book.id), NOW.isoformat()).get() == 0
    assert len(sent_mail()) == 1


def test_the_celery_task_of_a_vanished_book_does_nothing(db):
    assert evaluate_spend_caps_task.delay("00000000-0000-4000-8000-000000000000").get() == 0


HALF_OF_TEN = "Acme Agents: AI tool spend for the whole team reached 50% of $10.00 per month"


def record_coding_usage_past_half_a_cap(api, django_capture_on_commit_callbacks) -> None:
    """A $10 cap alerting at 50%, and one coding-agent record costing $6 recorded through the API."""
    from decimal import Decimal

    from tests.factories import ServiceEntryFactory

    ServiceEntryFactory(canonical_name="hook-llm", provider="hookai", input_cost=Decimal("0.001"),
                        output_cost=Decimal("0"))
    create_cap(api, amountUsd=10, alertThresholds=[50])
    record = {"customerExternalId": ALICE, "agentCode": "svc-coding-agent", "signalName": "session",
              "model": "hook-llm", "modelProvider": "hookai", "inputTokens": 6000, "outputTokens": 0}
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/v1/usage/record", {"records": [record]}).status_code == 200


def test_recording_coding_agent_usage_evaluates_caps_right_after_ingestion(api, django_capture_on_commit_callbacks):
    record_coding_usage_past_half_a_cap(api, django_capture_on_commit_callbacks)
    assert [mail.subject for mail in sent_mail()] == [HALF_OF_TEN]


def test_without_a_broker_caps_are_evaluated_after_the_answer_not_inside_the_request(
        api, book, django_capture_on_commit_callbacks, monkeypatch):
    """The zero-setup `make run`: no Redis, so a published task would run inline in the usage request."""
    from controls import hooks
    from core import background
    from core.background import Coalescer, TaskRunner

    monkeypatch.setattr(background, "redis_client", lambda: None)
    runner = TaskRunner("spend-caps-test")
    runner.in_process = Coalescer("spend-caps-test", runner._run_in_process, delay=3600)  # flushed by the test
    monkeypatch.setattr(hooks, "spend_caps_runner", runner)
    record_coding_usage_past_half_a_cap(api, django_capture_on_commit_callbacks)
    assert sent_mail() == []
    assert list(runner.in_process._due) == [("controls.tasks.evaluate_spend_caps_task", (str(book.pk),))]
    with django_capture_on_commit_callbacks(execute=True):
        runner.in_process.flush()  # what the process's thread does after the answer
    assert [mail.subject for mail in sent_mail()] == [HALF_OF_TEN]


def test_customer_usage_does_not_trigger_cap_evaluation(api, django_capture_on_commit_callbacks, monkeypatch):
    calls = []
    monkeypatch.setattr(evaluate_spend_caps_task, "apply_async", lambda *args, **kwargs: calls.append(args))
    record = {"customerExternalId": "cust", "agentCode": "support-bot", "signalName": "tickets",
              "model": "nope", "modelProvider": "nobody"}
    with django_capture_on_commit_callbacks(execute=True):
        api.post("/v1/usage/record", {"records": [record]})
    assert calls == []
