"""The root URL answers a person: a small page linking the API reference and the console."""
import re

from django.test import Client


def test_the_root_url_is_a_page_linking_the_api_reference_and_the_console(db):
    resp = Client().get("/")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/html")
    links = set(re.findall(r'href="([^"]+)"', resp.content.decode()))
    assert {"/v1/redoc", "/v1/docs", "/v1/openapi.json", "/admin/"} <= links
    for link in ("/v1/redoc", "/v1/openapi.json", "/admin/"):
        assert Client().get(link, follow=True).status_code == 200, link


def test_other_unknown_urls_still_answer_json_404(db):
    resp = Client().get("/no-such-page")
    assert resp.status_code == 404 and resp.json()["message"].startswith("Not found")
