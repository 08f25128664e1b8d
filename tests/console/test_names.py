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
