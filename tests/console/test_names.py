"""Every record the console shows is named by what it is: a page heading, a breadcrumb, a link or a message never
reads "<Model> object (<id>)" nor prints a decimal with all its stored places."""
import re

import pytest
from django.contrib import admin

from tests.console.world import populate

pytestmark = pytest.mark.django_db

STORED_PLACES = re.compile(r"\d\.\d*0{6,}\b")


def test_every_registered_models_rows_have_a_readable_name(book):
    rows = {model: model._default_manager.get(pk=row.pk) for model, row in populate(book, "names").items()}
    models = set(admin.site._registry) | {inline.model for model_admin in admin.site._registry.values()
                                           for inline in model_admin.inlines}
    unnamed = {model.__name__: str(row) for model, row in rows.items() if model in models
               and ("object (" in str(row) or STORED_PLACES.search(str(row)))}
    assert unnamed == {}


def test_rollup_rows_name_their_agent_and_signal_and_the_csv_keeps_the_ids(console, book):
    from customers.models import Agent, Signal, UsageDailyRollup
    from tests.console.conftest import action

    populate(book, "names")
    agent, signal = Agent.objects.get(book=book, name="names agent"), Signal.objects.get(book=book, name="names-signal")
    row = UsageDailyRollup.objects.filter(book=book, agent_id=agent.pk, signal_id=signal.pk).first()
    assert row is not None
    listing = console.get("/admin/customers/usagedailyrollup/").content.decode()
    assert 'field-agent">names agent<' in listing and str(agent.pk) not in listing
    page = console.get(f"/admin/customers/usagedailyrollup/{row.pk}/change/").content.decode()
    assert "names agent" in page and "names-signal" in page and str(signal.pk) not in page
    export = action(console, "/admin/customers/usagedailyrollup/", "export_csv", [row], follow=False)
    assert str(agent.pk) in b"".join(export.streaming_content).decode()


def test_a_second_models_rollup_row_shows_its_events_and_cost(console, api, book):
    """A multi-service event's figures go to its first model's row; the second model's row shows what it used."""
    import re

    from core import display
    from customers.models import UsageDailyRollup
    from customers.rollup import analytics_rollup_catch_up

    record = {"customerExternalId": "c", "agentCode": "voice", "signalName": "calls", "usageDate": "2025-06-10T12:00:00Z",
              "services": [{"model": "nova-3", "modelProvider": "deepgram", "quantity": 2},
                           {"model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 1_000_000}]}
    resp = api.post("/v1/usage/record", {"records": [record]})
    assert resp.status_code == 200 and resp.json()["results"]["success"], resp.json()
    analytics_rollup_catch_up(book_id=book.pk)
    second = UsageDailyRollup.objects.get(book=book, grain=0, model="gpt-4o-mini")
    assert (second.event_count, second.cost, second.model_event_count) == (0, 0, 1) and second.model_cost > 0
    listing = console.get("/admin/customers/usagedailyrollup/?grain__exact=0").content.decode()
    row = next(row for row in listing.split("<tr") if "gpt-4o-mini" in row)
    assert re.search(r'field-model_events"><span class="console-number">1<', row), row
    assert f'field-cost_of_model"><span class="console-number">{display.price(second.model_cost)}<' in row, row
    no_model = console.get("/admin/customers/usagedailyrollup/?grain__exact=1").content.decode()
    assert 'field-cost_of_model">-<' in no_model  # a grain that sums the models away has no model's figures
