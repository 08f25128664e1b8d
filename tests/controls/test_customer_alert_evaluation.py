"""Watch evaluation driven by `run_scheduled_jobs --now`: month, rolling and custom windows, once per window,
the permanent firing record, the alert email and the in-app notification (spec §3, §6)."""
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from types import SimpleNamespace

import pytest

from controls import metrics
from controls.metrics import customer_metric_value
from controls.models import CustomerAlert, CustomerAlertFiring, Notification
from tests.controls.conftest import NOW
from tests.factories import CustomerFactory
from tests.mail import mail_to, sent_mail

pytestmark = pytest.mark.django_db

ALERTS = "/v1/customer-alerts"
OWNER = "owner@acme-agents.example.com"


def utc(*parts):
    return datetime(*parts, tzinfo=timezone.utc)


@pytest.fixture
def customer(book):
    return CustomerFactory(book=book, name="Globex", external_id="globex")


@pytest.fixture
def create_watch(api, customer):
    """create_watch(**fields) -> the watch's id (confirmation emails are not sent: no on-commit capture)."""
    def create(**fields):
        body = {"customerId": str(customer.id), "metric": "cost", "thresholdUsd": 10, "windowMode": "month",
                "notifyEmail": OWNER, **fields}
        resp = api.post(ALERTS, body)
        assert resp.status_code == 201, resp.json()
        return resp.json()["id"]
    return create


def alert_mail() -> list:
    return [mail for mail in mail_to(OWNER) if "reached" in mail.subject]


# --------------------------------------------------------------------------- month

def test_a_month_watch_fires_once_with_an_email_and_a_notification(create_watch, customer, customer_usage, run_jobs,
                                                                   settings, book):
    alert_id = create_watch()
    customer_usage(customer, "6")
    run_jobs()
    assert alert_mail() == [] and not Notification.objects.exists()
    customer_usage(customer, "4.5")
    run_jobs()
    run_jobs()
    [mail] = alert_mail()
    assert mail.subject == "Acme Agents: Globex's cost reached $10.50"
    link = f"{settings.PUBLIC_BASE_URL}/admin/customers/customer/{customer.id}/change/"
    assert "threshold of $10.00 in a calendar month (UTC)" in mail.text and link in mail.text
    assert mail.html is not None and f'href="{link}"' in mail.html
    notification = Notification.objects.get()
    assert (notification.book, str(notification.alert_id), notification.link) == (book, alert_id, link)
    assert notification.title == "Globex's cost reached $10.50"
    firing = CustomerAlertFiring.objects.get()
    assert (firing.window_key, firing.window_start, firing.window_end) == ("month:2025-03", utc(2025, 3, 1),
                                                                           utc(2025, 4, 1))
    assert (firing.value_usd, firing.threshold_usd, firing.recipient_email) == (Decimal("10.5"), 10, OWNER)


def test_a_threshold_finer_than_a_cent_is_said_reached_at_its_own_places(create_watch, customer, customer_usage,
                                                                          run_jobs):
    create_watch(thresholdUsd="10.001")
    customer_usage(customer, "10.0012")
    run_jobs()
    [mail] = alert_mail()
    # To the cent it read "reached $10.00", at or above a threshold of $10.001.
    assert mail.subject == "Acme Agents: Globex's cost reached $10.001"
    assert Notification.objects.get().title == "Globex's cost reached $10.001"


def test_a_fired_window_does_not_fire_again_after_the_threshold_is_edited(api, create_watch, customer,
                                                                          customer_usage, run_jobs):
    alert_id = create_watch()
    customer_usage(customer, "12")
    run_jobs()
    assert api.patch(f"{ALERTS}/{alert_id}", {"thresholdUsd": 11}).status_code == 200
    run_jobs(NOW + timedelta(hours=1))
    assert api.patch(f"{ALERTS}/{alert_id}", {"thresholdUsd": 5, "metric": "cost"}).status_code == 200
    run_jobs(NOW + timedelta(hours=2))
    assert len(alert_mail()) == 1 and CustomerAlertFiring.objects.count() == 1


def test_a_month_watch_re_arms_in_the_next_month(create_watch, customer, customer_usage, run_jobs):
    create_watch()
    customer_usage(customer, "12")
    run_jobs()
    run_jobs(utc(2025, 4, 2))  # April: March's cost is not April's
    assert len(alert_mail()) == 1
    customer_usage(customer, "10", at=utc(2025, 4, 3))
    run_jobs(utc(2025, 4, 3, 12))
    assert len(alert_mail()) == 2
    assert sorted(CustomerAlertFiring.objects.values_list("window_key", flat=True)) == ["month:2025-03",
                                                                                       "month:2025-04"]


def test_only_this_customers_priced_cost_counts(create_watch, customer, customer_usage, run_jobs, book):
    create_watch()
    customer_usage(CustomerFactory(book=book), "50")
    customer_usage(customer, None)
    customer_usage(customer, "9.99")
    run_jobs()
    assert alert_mail() == []


# --------------------------------------------------------------------------- rolling

def test_a_rolling_watch_fires_once_per_crossing_and_re_arms_after_dropping_below(create_watch, customer,
                                                                                  customer_usage, run_jobs):
    alert_id = create_watch(windowMode="rolling")
    customer_usage(customer, "12", at=utc(2025, 3, 10))
    run_jobs()
    run_jobs(utc(2025, 4, 1))  # still inside the last 30 days: no second email
    assert len(alert_mail()) == 1
    armed_at = CustomerAlert.objects.get(pk=alert_id).rolling_armed_at
    run_jobs(utc(2025, 4, 10))  # the usage aged out: below the threshold, the watch re-arms
    assert CustomerAlert.objects.get(pk=alert_id).rolling_armed_at == utc(2025, 4, 10)
    assert armed_at != utc(2025, 4, 10)
    customer_usage(customer, "10", at=utc(2025, 4, 11))
    run_jobs(utc(2025, 4, 12))
    run_jobs(utc(2025, 4, 13))
    assert len(alert_mail()) == 2
    assert CustomerAlertFiring.objects.filter(window_start=utc(2025, 3, 13)).exists()  # 30 days before Apr 12


def test_a_rolling_watch_below_its_threshold_before_any_firing_keeps_its_arming(create_watch, customer,
                                                                                customer_usage, run_jobs):
    alert_id = create_watch(windowMode="rolling")
    armed_at = CustomerAlert.objects.get(pk=alert_id).rolling_armed_at
    customer_usage(customer, "1")
    run_jobs()
    assert CustomerAlert.objects.get(pk=alert_id).rolling_armed_at == armed_at


def test_a_rolling_watch_counts_the_last_30_days_only(create_watch, customer, customer_usage, run_jobs):
    create_watch(windowMode="rolling")
    customer_usage(customer, "9", at=NOW - timedelta(days=30, seconds=1))
    customer_usage(customer, "9", at=NOW - timedelta(days=29))
    run_jobs()
    assert alert_mail() == []


# --------------------------------------------------------------------------- custom

def test_a_custom_watch_fires_at_most_once_within_its_range(create_watch, customer, customer_usage, run_jobs):
    create_watch(windowMode="custom", customStartDate="2025-03-05", customEndDate="2025-03-20")
    customer_usage(customer, "50", at=utc(2025, 3, 4))  # before the range: not counted
    customer_usage(customer, "6", at=utc(2025, 3, 6))
    run_jobs()
    assert alert_mail() == []
    customer_usage(customer, "6", at=utc(2025, 3, 20, 23))  # the inclusive last day
    run_jobs(utc(2025, 3, 15))
    run_jobs(utc(2025, 3, 16))
    assert len(alert_mail()) == 1
    assert CustomerAlertFiring.objects.get().window_key == \
        "custom:2025-03-05T00:00:00+00:00/2025-03-21T00:00:00+00:00"


def test_a_custom_watch_expires_at_its_range_end(create_watch, customer, customer_usage, run_jobs):
    create_watch(windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-10")
    customer_usage(customer, "50", at=utc(2025, 3, 9))
    run_jobs(utc(2025, 3, 11, 1, 0, 1))  # the range ended (March 11, 00:00) over an hour ago
    assert alert_mail() == [] and not CustomerAlertFiring.objects.exists()


def test_the_last_minutes_of_a_custom_range_are_judged_once_just_after_it_ends(create_watch, customer,
                                                                             customer_usage, run_jobs):
    """The job runs every few minutes: usage recorded in the range's last minutes, after its last run inside the
    range, is judged by the first run after the end, over the whole range, and fires its window once."""
    watched_since(create_watch(windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-10"),
                  utc(2025, 2, 20))
    customer_usage(customer, "6", at=utc(2025, 3, 9))
    run_jobs(utc(2025, 3, 10, 23, 55))
    customer_usage(customer, "6", at=utc(2025, 3, 10, 23, 58))
    run_jobs(utc(2025, 3, 11, 0, 0, 30))
    run_jobs(utc(2025, 3, 11, 0, 5, 30))
    assert len(alert_mail()) == 1
    assert CustomerAlertFiring.objects.get().window_key == \
        "custom:2025-03-01T00:00:00+00:00/2025-03-11T00:00:00+00:00"


def test_a_month_crossed_before_the_jobs_stopped_fires_when_they_run_again_however_late(create_watch, customer,
                                                                                       customer_usage, run_jobs):
    """No evaluation ran from March 31, 23:50 to April 2 (a worker or broker outage): March's last minutes were
    judged by no run, so the first run after judges March, however late; April's runs after that do not again."""
    watched_since(create_watch(), utc(2025, 3, 1))
    customer_usage(customer, "6", at=utc(2025, 3, 20))
    run_jobs(utc(2025, 3, 31, 23, 50))
    customer_usage(customer, "6", at=utc(2025, 3, 31, 23, 58))
    run_jobs(utc(2025, 4, 2, 9))
    [mail] = alert_mail()
    assert CustomerAlertFiring.objects.get().window_key == "month:2025-03"
    customer_usage(customer, "20", at=utc(2025, 3, 15))  # dated into March, after it was judged: no second firing
    run_jobs(utc(2025, 4, 2, 9, 5))
    assert CustomerAlertFiring.objects.count() == 1 and len(alert_mail()) == 1


def test_a_long_customer_name_and_a_sum_past_any_column_still_fire(api, book, customer_usage, run_jobs):
    """A title is cut at the customer's name, never the figure; a cost of 1.8 x 10^16 is stored as it is; and a
    watch that could not be judged would stop no other watch of the book."""
    long_named = CustomerFactory(book=book, name="A" * 240, external_id="long")
    rich = CustomerFactory(book=book, name="Rich", external_id="rich")
    for watched in (long_named, rich):
        assert api.post(ALERTS, {"customerId": str(watched.id), "metric": "cost", "thresholdUsd": 10,
                                 "windowMode": "month", "notifyEmail": OWNER}).status_code == 201
    customer_usage(long_named, "10.5")
    customer_usage(rich, "9000000000000000")
    customer_usage(rich, "9000000000000000")
    run_jobs()
    titles = sorted(Notification.objects.values_list("title", flat=True))
    assert titles[0].endswith("…'s cost reached $10.50") and len(titles[0]) == 255
    assert titles[1] == "Rich's cost reached $18,000,000,000,000,000.00"
    assert CustomerAlertFiring.objects.get(customer=rich).value_usd == Decimal("18000000000000000")


def watched_since(alert_id, moment):
    """The watch as created and last changed at `moment` (the model stamps the real time, not the test's clock)."""
    CustomerAlert.objects.filter(pk=alert_id).update(created_at=moment, updated_at=moment)


def test_a_watch_created_or_changed_after_a_window_ended_never_judges_it(create_watch, customer, customer_usage,
                                                                         run_jobs, api):
    """Created on April 1 at 00:10, a month watch says nothing of March; a custom range set to one that ended ten
    minutes ago stays expired."""
    customer_usage(customer, "50", at=utc(2025, 3, 20))
    watched_since(create_watch(), utc(2025, 4, 1, 0, 10))
    custom = create_watch(windowMode="custom", customStartDate="2025-03-01", customEndDate="2025-03-31",
                          thresholdUsd=11)
    watched_since(custom, utc(2025, 4, 1, 0, 10))
    run_jobs(utc(2025, 4, 1, 0, 20))
    assert alert_mail() == [] and not CustomerAlertFiring.objects.exists()


def test_a_revenue_watch_at_a_months_whole_fee_fires_once_the_month_is_over(create_watch, customer, run_jobs,
                                                                           monkeypatch):
    """Revenue is judged up to now (fees recognized by the day), so a watch set at the month's whole fee is
    reached only as the month ends: the first run of the next month judges March over all of it, once."""
    judged = []

    def revenue(*, book, customer, metric, start, end):
        judged.append((start, end))
        return Decimal(1200) * Decimal((end - start) / timedelta(days=31))  # 1,200.00 over March, by the day
    monkeypatch.setattr("controls.services.customer_alerts.customer_metric_value", revenue)
    watched_since(create_watch(metric="revenue", thresholdUsd=1200), utc(2025, 3, 1))
    run_jobs(utc(2025, 3, 31, 23, 55))
    assert alert_mail() == []
    run_jobs(utc(2025, 4, 1, 0, 1))
    run_jobs(utc(2025, 4, 1, 0, 6))
    assert len(alert_mail()) == 1
    firing = CustomerAlertFiring.objects.get()
    assert (firing.window_key, firing.value_usd) == ("month:2025-03", Decimal(1200))
    assert (utc(2025, 3, 1), utc(2025, 4, 1)) in judged


def test_a_custom_watch_does_not_fire_before_its_range_starts(create_watch, customer, customer_usage, run_jobs):
    create_watch(windowMode="custom", customStartDate="2025-04-01", customEndDate="2025-04-30")
    customer_usage(customer, "50", at=utc(2025, 4, 2))
    run_jobs()
    assert alert_mail() == []
    run_jobs(utc(2025, 4, 3))
    assert len(alert_mail()) == 1


# --------------------------------------------------------------------------- recipients, lifecycle

def test_a_recipient_who_lost_the_money_role_gets_no_email_but_the_notification_is_kept(create_watch, customer,
                                                                                        customer_usage, run_jobs,
                                                                                        member, org):
    money = member("finance", "money@acme.example.com")
    create_watch(notifyEmail=money)
    member("member", money)  # demoted
    customer_usage(customer, "20")
    run_jobs()
    assert mail_to(money) == []
    assert Notification.objects.count() == 1 and CustomerAlertFiring.objects.count() == 1


def test_watches_of_deleted_customers_are_not_evaluated(create_watch, customer, customer_usage, run_jobs):
    create_watch()
    customer_usage(customer, "20")
    customer.deleted_at = NOW
    customer.save()
    run_jobs()
    assert alert_mail() == [] and not CustomerAlertFiring.objects.exists()


def test_the_firing_record_outlives_the_watch(api, create_watch, customer, customer_usage, run_jobs):
    alert_id = create_watch()
    customer_usage(customer, "20")
    run_jobs()
    api.delete(f"{ALERTS}/{alert_id}")
    firing = CustomerAlertFiring.objects.get()
    assert firing.alert_id is None and firing.value_usd == 20
    assert not Notification.objects.exists()


def test_watches_of_other_books_are_judged_on_their_own_usage(create_watch, customer, customer_usage, run_jobs,
                                                              other_api, other_book):
    create_watch()
    foreign = CustomerFactory(book=other_book, external_id="globex")
    resp = other_api.post(ALERTS, {"customerId": str(foreign.id), "metric": "cost", "thresholdUsd": 10,
                                   "windowMode": "month", "notifyEmail": "owner@other-org.example.com"})
    assert resp.status_code == 201
    customer_usage(foreign, "20")
    run_jobs()
    assert alert_mail() == []
    assert [mail.to for mail in sent_mail()] == [["owner@other-org.example.com"]]


# --------------------------------------------------------------------------- the metric function

def test_cost_metric_sums_the_customers_priced_cost_over_a_half_open_window(book, customer, customer_usage):
    customer_usage(customer, "1.5", at=utc(2025, 3, 1))
    customer_usage(customer, "2", at=utc(2025, 3, 31, 23, 59))
    customer_usage(customer, "4", at=utc(2025, 4, 1))
    customer_usage(customer, None, at=utc(2025, 3, 2))
    value = customer_metric_value(book=book, customer=customer, metric="cost", start=utc(2025, 3, 1),
                                  end=utc(2025, 4, 1))
    assert value == Decimal("3.5")


def test_cost_metric_without_usage_is_zero(book, customer):
    assert customer_metric_value(book=book, customer=customer, metric="cost", start=utc(2025, 3, 1),
                                 end=utc(2025, 4, 1)) == 0


# --------------------------------------------------------------------------- revenue watches (TEST DOUBLE)
# The Revenue label (Agent-Earned plus prorated fees) is `analytics.selectors.revenue.customer_revenue_total`.
# These tests replace that boundary with a recording double; they check how watches use it, not the revenue
# figures themselves.

@pytest.fixture
def revenue_double(monkeypatch):
    """TEST DOUBLE for analytics.selectors.revenue.customer_revenue_total, as controls.metrics calls it: answers
    `revenue_double.value`, records calls."""
    double = SimpleNamespace(value=Decimal(0), calls=[])

    def customer_revenue_total(*, book, customer, start, end):
        double.calls.append((book, customer, start, end))
        return double.value

    monkeypatch.setattr(metrics, "customer_revenue_total", customer_revenue_total)
    return double


def test_revenue_watch_fires_on_billings_revenue_total_for_its_window(create_watch, customer, run_jobs, book,
                                                                       revenue_double):
    create_watch(metric="revenue", thresholdUsd=500)
    revenue_double.value = Decimal("499.99")
    run_jobs()
    assert alert_mail() == []
    assert revenue_double.calls == [(book, customer, utc(2025, 3, 1), NOW)]  # the month so far
    revenue_double.value = Decimal("500")
    run_jobs()
    [mail] = alert_mail()
    assert mail.subject == "Acme Agents: Globex's revenue reached $500.00"


def test_a_revenue_watch_counts_the_fees_earned_so_far_not_the_months_still_to_come(api, book, create_watch, customer,
                                                                                     run_jobs):
    """A 1,200.00 monthly fee is recognized by the day: on March 1 at 00:05 the month has earned cents of it, not
    the 1,200.00 its whole window holds; by March 28 it has earned 27/31 of it, 1,045.16."""
    from tests.billing.invoice_support import billing_chain, recurring

    billing_chain(api, book, [recurring("1200")], customer=customer, start="2025-03-01T00:00:00Z")
    create_watch(metric="revenue", thresholdUsd=1000)
    run_jobs(utc(2025, 3, 1, 0, 5))
    assert alert_mail() == []
    run_jobs(utc(2025, 3, 28))
    [mail] = alert_mail()
    assert mail.subject == "Acme Agents: Globex's revenue reached $1,045.16"


def test_revenue_watch_fires_once_per_window_like_cost(create_watch, run_jobs, revenue_double):
    create_watch(metric="revenue", thresholdUsd=100)
    revenue_double.value = Decimal("150")
    run_jobs()
    run_jobs(NOW + timedelta(days=1))
    assert len(alert_mail()) == 1
