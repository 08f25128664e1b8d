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
