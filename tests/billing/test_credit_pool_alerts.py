"""Credit-pool alert emails (spec §6): one per stage per billing period, only the highest newly passed stage, to
the billing email or every owner and finance member, silenced while paused. Driven by `run_scheduled_jobs --now`
and by the Celery task that usage recording enqueues; emails are read back from the file backend."""
import json
from datetime import datetime, timezone
from uuid import UUID

import pytest

from billing.models import CreditPoolAlert, Subscription, SubscriptionChange
from billing.selectors.credit_pools import pool_subscription_ids
from billing.services.credit_pools import credit_pool_alerts_evaluate
from billing.tasks import evaluate_credit_pool_alerts_task
from webhooks.models import WebhookEvent
from accounts.services import member_ensure
from config.celery import app as celery_app
from tests.billing.pools import another_chain, balance, pause, pool_subscription, run_jobs, topup, use
from tests.billing.support import create_strategies, create_subscription, error, flat_usage, ok
from tests.mail import mail_to, sent_mail

pytestmark = pytest.mark.django_db

OWNER = "owner@acme-agents.example.com"  # the `api` fixture's member
JOBS_AT = "2025-06-10T12:00:00Z"


@pytest.fixture
def jobs(django_capture_on_commit_callbacks):
    """jobs(now=JOBS_AT): `run_scheduled_jobs --now`, with the emails it leaves for the commit sent."""
    def run(now: str = JOBS_AT) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            run_jobs(now)
    return run


def subjects() -> list[str]:
    """Subjects of every email sent, sorted: the file backend's files do not keep the sending order."""
    return sorted(mail.subject for mail in sent_mail())


def states() -> list[str]:
    """What each email said of the pool ("is 50% used", "is empty"), sorted."""
    return sorted(text.rsplit(") ", 1)[1] for text in subjects())


def test_each_stage_is_emailed_once_per_period(jobs, api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    name = chain.customer.name
    for units, expected in [(49, []), (6, ["is 50% used"]), (30, ["is 50% used", "is 80% used"]),
                            (12, ["is 50% used", "is 80% used", "is 95% used"]),
                            (3, ["is 50% used", "is 80% used", "is 95% used", "is empty"]),
                            (40, ["is 50% used", "is 80% used", "is 95% used", "is empty"])]:
        use(chain, units)
        jobs()
        jobs()
        assert subjects() == [f"Acme Agents: credit pool of Main ({name}) {state}" for state in expected]
    assert sorted(CreditPoolAlert.objects.values_list("stage", "outcome")) == [
        (50, "emailed"), (80, "emailed"), (95, "emailed"), (100, "emailed")]
    assert balance(api, subscription)["remainingUnits"] == -40


def test_a_pool_overdrawn_by_any_amount_still_alerts(jobs, api, chain, frozen_now):
    # One record may carry 10^21 units (and far more): a pool of 100 overdrawn by that is used 10^21 percent, past
    # what a 16-digit column holds; the alert is stored and emailed, the job does not fail for the book.
    pool_subscription(api, chain)
    use(chain, 10**21)
    jobs()
    alert = CreditPoolAlert.objects.get(stage=100)
    assert (alert.outcome, alert.used_percent) == ("emailed", 10**21)  # 10^21 units used of 100
    assert alert.remaining_units == 100 - 10**21


def test_only_the_highest_newly_passed_stage_is_emailed(jobs, api, chain, frozen_now):
    pool_subscription(api, chain)
    use(chain, 85)  # passes 50 and 80 at once
    jobs()
    assert states() == ["is 80% used"]
    assert sorted(CreditPoolAlert.objects.values_list("stage", "outcome")) == [(50, "superseded"), (80, "emailed")]
    use(chain, 20)  # 95 and empty at once
    jobs()
    assert states() == ["is 80% used", "is empty"]


def subscription_id(chain) -> str:
    return str(chain.customer.subscriptions.get().pk)


def test_the_email_tells_the_countdown(jobs, api, chain, frozen_now):
    pool_subscription(api, chain)
    use(chain, 60)
    jobs()
    [mail] = sent_mail()
    assert "Remaining (top-ups included): 40 units (40% of the pool)" in mail.text
    assert "Consumed this period: 60 units" in mail.text
    assert "bills at $0.75 per unit" in mail.text
    assert "2025-06-01 00:00 to 2025-07-01 00:00 UTC" in mail.text
    assert mail.html and "<strong>is 50% used</strong>" in mail.html
    assert f"POST /v1/subscriptions/{subscription_id(chain)}/credit-alerts-pause" in mail.text
    use(chain, 1040.5)  # 1,000.5 units beyond the pool: said in words, grouped
    jobs()
    [empty] = [mail for mail in sent_mail() if mail.subject.endswith("is empty")]
    assert "Remaining (top-ups included): none; 1,000.5 units used beyond the pool and its top-ups" in empty.text
    assert "Consumed this period: 1,100.5 units" in empty.text


def test_a_new_period_sends_the_stages_again(jobs, api, chain, frozen_now):
    pool_subscription(api, chain)
    use(chain, 60)
    jobs()
    use(chain, 55, at=datetime(2025, 7, 3, tzinfo=timezone.utc))
    jobs("2025-07-03T12:00:00Z")
    assert states() == ["is 50% used", "is 50% used"]


def test_stages_passed_in_a_periods_last_part_that_no_run_judged_are_alerted_when_it_is_settled(jobs, api, chain,
                                                                                                 frozen_now):
    """The pool emptied in June's last seconds and no evaluation ran before the period ended (the follow-up was due
    after it, or the worker or broker was down): the run that settles June judges what June closed with, once."""
    created = pool_subscription(api, chain)
    Subscription.objects.filter(pk=created["id"]).update(created_at=datetime(2025, 5, 20, tzinfo=timezone.utc))
    use(chain, 60)
    jobs()
    use(chain, 45, at=datetime(2025, 6, 30, 23, 59, 58, tzinfo=timezone.utc))
    jobs("2025-07-02T09:00:00Z")
    assert states() == ["is 50% used", "is empty"]
    june = datetime(2025, 6, 1, tzinfo=timezone.utc)
    assert sorted(CreditPoolAlert.objects.filter(period_start=june).values_list("stage", "outcome")) == [
        (50, "emailed"), (80, "superseded"), (95, "superseded"), (100, "emailed")]
    assert CreditPoolAlert.objects.get(stage=100).remaining_units == -5
    crossings = [json.loads(event.data_json) for event in
                 WebhookEvent.objects.filter(type="credit_pool.threshold_crossed").order_by("created_at")]
    assert [(data["periodStart"], data["stage"], data["stagesPassed"], data["remainingUnits"])
            for data in crossings] == [("2025-06-01T00:00:00Z", 50, [50], 40),
                                       ("2025-06-01T00:00:00Z", "empty", [80, 95, "empty"], -5)]
    jobs("2025-07-02T09:05:00Z")
    assert len(sent_mail()) == 2


def test_a_period_settled_long_after_it_ended_or_before_its_subscription_was_entered_alerts_nothing(
        jobs, api, chain, frozen_now):
    """The stages of a settled period are news within a week of its end, for a subscription that existed then: a
    subscription entered afterwards for an earlier contract (created ended, its last period settled only now) or a
    period settled after a longer silence records no late alert."""
    created = pool_subscription(api, chain)  # entered "now" (the database's clock), after June 2025
    use(chain, 150)
    jobs("2025-07-02T09:00:00Z")
    assert not CreditPoolAlert.objects.filter(period_start=datetime(2025, 6, 1, tzinfo=timezone.utc)).exists()
    Subscription.objects.filter(pk=created["id"]).update(created_at=datetime(2025, 5, 20, tzinfo=timezone.utc))
    use(chain, 150, at=datetime(2025, 7, 15, tzinfo=timezone.utc))
    jobs("2025-08-09T00:00:00Z")  # July settled eight days after it ended
    assert not CreditPoolAlert.objects.filter(period_start=datetime(2025, 7, 1, tzinfo=timezone.utc)).exists()
    assert sent_mail() == []


def test_a_top_up_pushes_the_stages_back(jobs, api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 20), 201)
    use(chain, 85)  # 35 of 120 left: 35% of the pool, so 65% used (80% without the top-up)
    jobs()
    assert states() == ["is 50% used"]
    use(chain, 35)  # nothing left
    jobs()
    assert states() == ["is 50% used", "is empty"]


def test_alerts_go_to_owners_and_finance_members(jobs, api, org, chain, frozen_now):
    member_ensure(organization=org, email="money@acme.example.com", role="finance")
    member_ensure(organization=org, email="boss@acme.example.com", role="admin")
    member_ensure(organization=org, email="dev@acme.example.com", role="member")
    pool_subscription(api, chain)
    use(chain, 50)
    jobs()
    [mail] = sent_mail()
    assert sorted(mail.to) == ["money@acme.example.com", OWNER]
    assert "an owner or finance member" in mail.text


def test_alerts_go_only_to_the_billing_email_when_set(jobs, api, org, chain, frozen_now):
    org.billing_email = "billing@acme.example.com"
    org.save()
    member_ensure(organization=org, email="money@acme.example.com", role="finance")
    pool_subscription(api, chain)
    use(chain, 50)
    jobs()
    [mail] = sent_mail()
    assert mail.to == ["billing@acme.example.com"]
    assert CreditPoolAlert.objects.get().recipients == ["billing@acme.example.com"]


def test_paused_alerts_are_silent_and_stages_passed_meanwhile_stay_unsent(jobs, api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(pause(api, subscription, True))
    use(chain, 85)
    jobs()
    assert sent_mail() == []
    assert sorted(CreditPoolAlert.objects.values_list("stage", "outcome")) == [(50, "paused"), (80, "paused")]
    assert balance(api, subscription)["remainingUnits"] == 15  # the countdown kept counting
    ok(pause(api, subscription, False))
    jobs()
    assert sent_mail() == []  # 50 and 80 were passed while paused
    use(chain, 10)
    jobs()
    assert states() == ["is 95% used"]


def test_pause_sets_an_explicit_state(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    first = ok(pause(api, subscription, True))
    assert set(first) == {"subscriptionId", "alertsPaused", "updatedAt"}
    assert (first["subscriptionId"], first["alertsPaused"]) == (subscription["id"], True)
    assert ok(pause(api, subscription, True))["alertsPaused"] is True  # not a toggle
    assert balance(api, subscription)["alertsPaused"] is True
    assert ok(pause(api, subscription, False))["alertsPaused"] is False
    assert balance(api, subscription)["alertsPaused"] is False  # the pause refreshes the cached read
    entries = SubscriptionChange.objects.filter(subscription_id=subscription["id"], kind="update").order_by(
        "created_at")
    actor = f"api-key:{api.key.id}"
    assert [(e.summary, e.changes, e.actor) for e in entries] == [
        ("Credit-pool alert emails paused", {"alertsPaused": {"before": False, "after": True}}, actor),
        ("Credit-pool alert emails resumed", {"alertsPaused": {"before": True, "after": False}}, actor)]


@pytest.mark.parametrize("body", [{}, {"paused": None}, {"paused": "maybe"}])
def test_pause_needs_a_boolean(api, chain, frozen_now, body):
    subscription = pool_subscription(api, chain)
    resp = api.post(f"/v1/subscriptions/{subscription['id']}/credit-alerts-pause", body)
    assert error(resp, 400).startswith("paused:")


def test_pause_of_a_plan_without_pool_is_400_and_of_a_foreign_subscription_404(api, other_api, chain, frozen_now):
    create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    error(pause(api, subscription, True), 400)
    error(pause(other_api, subscription, True), 404)


def test_pause_needs_owner_admin_or_finance(client_for, api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    message = error(pause(client_for(role="member"), subscription, True), 403)
    assert all(role in message for role in ("owner", "admin", "finance"))
    ok(pause(client_for(role="finance"), subscription, True))
    error(pause(client_for(key_type="publishable"), subscription, False), 403)


def test_the_celery_task_evaluates_the_listed_subscriptions_or_the_book_once(
        api, book, chain, frozen_now, django_capture_on_commit_callbacks):
    assert "billing.evaluate_credit_pool_alerts" in celery_app.tasks
    subscription = pool_subscription(api, chain)
    other = another_chain(api, book)
    pool_subscription(api, other)
    use(chain, 50)
    use(other, 50)
    assert pool_subscription_ids(book=book, customer_ids=[chain.customer.id]) == [subscription["id"]]
    with django_capture_on_commit_callbacks(execute=True):
        assert evaluate_credit_pool_alerts_task.delay(str(book.id), [subscription["id"]]).get() == 1
        assert CreditPoolAlert.objects.get().subscription_id == UUID(subscription["id"])
        assert evaluate_credit_pool_alerts_task.delay(str(book.id)).get() == 1  # the other pool
        assert evaluate_credit_pool_alerts_task.delay(str(book.id)).get() == 0
    assert len(mail_to(OWNER)) == 2
    assert evaluate_credit_pool_alerts_task.delay("00000000-0000-4000-8000-000000000000").get() == 0


def test_an_upcoming_subscription_sends_nothing(jobs, api, chain, frozen_now):
    pool_subscription(api, chain, start="2025-07-01T00:00:00Z")
    use(chain, 500)
    jobs()
    assert sent_mail() == []


def test_a_quiet_evaluation_reads_the_book_in_a_fixed_number_of_queries(jobs, api, book, chain, frozen_now,
                                                                       django_assert_max_num_queries):
    """The balances, the strategies, then what each pool's subscription bills (its customer and agent's
    subscriptions, their strategies and invoices, the events): not a query per pool."""
    for _ in range(5):
        pool_chain = another_chain(api, book)
        pool_subscription(api, pool_chain)
        use(pool_chain, 60)
    jobs()
    assert len(sent_mail()) == 5
    with django_assert_max_num_queries(7):
        assert credit_pool_alerts_evaluate(book=book, now=frozen_now(datetime(2025, 6, 11, tzinfo=timezone.utc))) == 0


def test_recording_usage_evaluates_the_customers_pools_right_after_ingestion(api, chain, frozen_now,
                                                                              django_capture_on_commit_callbacks):
    pool_subscription(api, chain)
    record = {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
              "signalName": chain.signal.short_name, "model": "unpriced-model", "modelProvider": "nobody",
              "quantity": 55, "usageDate": "2025-06-05T00:00:00Z"}
    with django_capture_on_commit_callbacks(execute=True):
        assert api.post("/v1/usage/record", {"records": [record]}).status_code == 200
    assert states() == ["is 50% used"]


def test_volume_signals_draw_their_recorded_quantity(api, chain, frozen_now):
    """Contract "Signal types bill alike": a volume signal draws the sum of its quantities, 0 draws 0."""
    from customers.models import Signal

    Signal.objects.filter(pk=chain.signal.pk).update(type="volume")
    subscription = pool_subscription(api, chain)
    use(chain, 0)
    use(chain, 3)
    assert balance(api, subscription)["consumedUnits"] == 3
