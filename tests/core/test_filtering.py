"""Query parameters PostgreSQL cannot take as text are a 400 naming them, before any filter runs."""
import pytest
from django.http import QueryDict

from core.errors import BadRequest
from core.filtering import query_text_check


def test_a_nul_or_an_unpaired_surrogate_in_a_query_parameter_is_a_400_naming_it():
    params = QueryDict(mutable=True)
    params.setlist("search", ["fine", "a\ud800b"])
    params["email"] = "x\x00y"
    params["limit"] = "5"
    with pytest.raises(BadRequest) as refused:
        query_text_check(params)
    assert refused.value.message == ["email: Must not contain NUL (\\u0000) characters.",
                                     "search: Must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)."]


def test_text_postgresql_takes_passes():
    params = QueryDict(mutable=True)
    params.setlist("search", ["caf\u00e9", "\U0001f600", ""])
    query_text_check(params)  # nothing raised
