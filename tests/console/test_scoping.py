"""Multi-organization safety of the console: a staff member of one organization never sees, opens, picks or acts
on another organization's records. The checks iterate over every registered model (`admin.site._registry`), so a
model registered without scoping, or without a row in tests/console/world.py, fails here."""
import pytest
from django.contrib import admin
from django.forms import ModelChoiceField
from django.urls import reverse

from billing.models import Invoice, PlanAgent, PricingPlan
from catalog.models import ServiceEntry
from accounts.models import User
from customers.models import Customer
from matters.models import Matter, MatterRule
from tests.console.conftest import action
from tests.console.world import populate
from tests.factories import AgentFactory, book_of

pytestmark = pytest.mark.django_db

GLOBAL = {ServiceEntry}  # the catalog: one table every organization reads
MINE, THEIRS = "acmetag", "zyxforeign"
SCOPED = sorted((model for model in admin.site._registry if model not in GLOBAL), key=lambda model: model._meta.label)


def url(model, view: str, *args) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)


@pytest.fixture
def worlds(book, other_book):
    return populate(book, MINE), populate(other_book, THEIRS)


def test_every_registered_model_has_a_row_in_the_test_world(worlds):
    mine, theirs = worlds
    assert [model._meta.label for model in SCOPED if model not in mine or model not in theirs] == []


def test_every_list_has_a_search_that_finds_nothing_of_another_organization(console, worlds):
    """docs/console.md: every list has search; searching for what only the other organization's rows hold
    answers an empty list, never their rows, never an error."""
    assert [model._meta.label for model, model_admin in admin.site._registry.items()
            if not model_admin.search_fields] == []
    _, theirs = worlds
    failures = []
    for model in SCOPED:
        resp = console.get(url(model, "changelist"), {"q": THEIRS})
        if resp.status_code != 200 or {row.pk for row in resp.context["cl"].result_list} & {theirs[model].pk}:
            failures.append(model._meta.label)
    assert failures == []


def test_an_operator_opens_their_own_records_by_url(console, worlds):
    mine, _ = worlds
    failures = [(model._meta.label, status) for model in SCOPED
                if (status := console.get(url(model, "change", mine[model].pk)).status_code) != 200]
    assert failures == []


def test_an_operator_cannot_open_another_organizations_records_by_url(console, worlds):
    _, theirs = worlds
    failures = []
    for model in SCOPED:
        for view in ("change", "delete", "history"):
            resp = console.get(url(model, view, theirs[model].pk))
            # 302 to the index ("does not exist") or 403: never the page, never a word of the record.
            refused = resp.status_code == 403 or (resp.status_code == 302 and resp.url == reverse("admin:index"))
            if not refused or THEIRS in resp.content.decode():
                failures.append((model._meta.label, view, resp.status_code))
    assert failures == []


def test_a_superuser_opens_every_organizations_records(console_for, worlds):
    _, theirs = worlds
    root = console_for(superuser=True)
    assert [model._meta.label for model in SCOPED if root.get(url(model, "change", theirs[model].pk)).status_code
            != 200] == []


def test_lists_and_their_filters_show_only_the_operators_organizations(console, worlds, other_org):
    mine, theirs = worlds
    failures = []
    for model in SCOPED:
        resp = console.get(url(model, "changelist"))
        shown = {row.pk for row in resp.context["cl"].result_list}
        page = resp.content.decode()
        if resp.status_code != 200 or mine[model].pk not in shown or theirs[model].pk in shown \
                or THEIRS in page or other_org.name in page:
            failures.append(model._meta.label)
    assert failures == []


def test_the_organization_filter_offers_visible_organizations_only(console, worlds, org, other_org):
    page = console.get(url(PricingPlan, "changelist")).content.decode()
    assert f"book={book_of(org).pk}" in page and f"book={book_of(org, 'live').pk}" in page
    assert str(book_of(other_org).pk) not in page
    members = console.get("/admin/accounts/membership/").content.decode()
    assert f"organization={org.pk}" in members and str(other_org.pk) not in members


def test_autocomplete_answers_only_visible_rows_for_every_related_field(console, worlds):
    _, theirs = worlds
    foreign = {str(row.pk) for row in theirs.values()}
    failures = []
    for model in admin.site._registry:
        for field in model._meta.fields:
            target = field.related_model
            if not field.is_relation or target not in admin.site._registry or target in GLOBAL \
                    or not admin.site._registry[target].search_fields:
                continue
            resp = console.get("/admin/autocomplete/", {"app_label": model._meta.app_label,
                                                         "model_name": model._meta.model_name,
                                                         "field_name": field.name, "term": ""})
            answered = {result["id"] for result in resp.json()["results"]} if resp.status_code == 200 else set()
            if resp.status_code != 200 or answered & foreign:
                failures.append(f"{model._meta.label}.{field.name}")
    assert failures == []
    agents = console.get("/admin/autocomplete/", {"app_label": "customers", "model_name": "signal",
                                                   "field_name": "agent", "term": "agent"}).json()["results"]
    assert [result["text"] for result in agents] == [f"{MINE} agent ({MINE}-agent)"]


def test_form_choices_of_every_add_and_change_page_are_visible_rows_only(console, worlds):
    mine, theirs = worlds
    foreign = {row.pk for row in theirs.values()}
    failures = []
    for model in SCOPED:
        for page in (url(model, "add"), url(model, "change", mine[model].pk)):
            resp = console.get(page)
            if resp.status_code != 200 or "adminform" not in resp.context:
                continue  # read-only records have no add page; keys are minted on their own page (tested there)
            formsets = [inline.formset for inline in resp.context["inline_admin_formsets"]]
            forms = [resp.context["adminform"].form, *[form for formset in formsets
                                                       for form in [*formset.forms, formset.empty_form]]]
            for form in forms:
                # An inline row's hidden primary key is looked up among the inline's own (scoped) rows, never saved
                # onto another row: Django builds that field from the default manager, so it is left out here.
                choices = {name: field for name, field in form.fields.items()
                           if isinstance(field, ModelChoiceField) and name != form._meta.model._meta.pk.name}
                failures += [f"{page} {name}" for name, field in choices.items()
                             if field.queryset.filter(pk__in=foreign).exists()]
    assert failures == []


def test_no_change_page_moves_a_record_to_another_book_or_organization(console, worlds, book, other_org):
    """A customer moved to another organization's book left its events and invoices behind and answered 404 to
    its own organization: on a change page the book and the organization are shown, never edited."""
    mine, _ = worlds
    editable = []
    for model in SCOPED:
        resp = console.get(url(model, "change", mine[model].pk))
        if resp.status_code == 200 and "adminform" in resp.context:
            fields = resp.context["adminform"].form.fields
            editable += [f"{model._meta.label}.{name}" for name in ("book", "organization")
                         if name in fields and not fields[name].disabled]
    assert editable == []
    customer = mine[Customer]
    other_book = book_of(other_org, "test")
    console.post(url(Customer, "change", customer.pk), {"book": str(other_book.pk), "name": customer.name,
                                                        "external_id": customer.external_id})
    customer.refresh_from_db()
    assert customer.book_id == book.pk


def test_a_foreign_id_posted_in_a_form_is_refused(console, worlds, book):
    _, theirs = worlds
    resp = console.post(url(MatterRule, "add"), {"book": str(book.pk), "matter": str(theirs[Matter].pk),
                                                 "priority": "1", "agent_code": "anything"})
    assert resp.status_code == 200 and "Select a valid choice" in resp.content.decode()
    assert not MatterRule.objects.filter(agent_code="anything").exists()


def test_a_plan_never_links_an_agent_of_its_other_book(console, worlds, org):
    mine, _ = worlds
    plan, link = mine[PricingPlan], mine[PlanAgent]
    live_agent = AgentFactory(book=book_of(org, "live"), name="Live agent")
    resp = console.post(url(PricingPlan, "change", plan.pk), {
        "book": str(plan.book_id), "name": plan.name, "description": "", "features_list": "{}", "is_active": "on",
        "agent_links-TOTAL_FORMS": "2", "agent_links-INITIAL_FORMS": "1",
        "agent_links-0-id": str(link.pk), "agent_links-0-plan": str(plan.pk), "agent_links-0-agent": str(link.agent_id),
        "agent_links-1-plan": str(plan.pk), "agent_links-1-agent": str(live_agent.pk),
        "strategies-TOTAL_FORMS": "0", "strategies-INITIAL_FORMS": "0"})
    assert resp.status_code == 200
    assert "Must belong to the same book" in resp.content.decode()
    assert not PlanAgent.objects.filter(agent=live_agent).exists()


def test_actions_never_reach_another_organizations_rows(console, worlds):
    _, theirs = worlds
    invoice = theirs[Invoice]
    resp = action(console, url(Invoice, "changelist"), "send_invoices", [invoice])
    assert resp.status_code == 200
    invoice.refresh_from_db()
    assert invoice.last_sent_at is None and invoice.status == "issued"
    assert not any("sent" in str(message) for message in resp.context["messages"])


def test_the_dashboard_shows_only_the_operators_organizations(console, worlds, other_org):
    page = console.get("/admin/", {"environment": "test"}).content.decode()
    assert "Acme Agents" in page and other_org.name not in page
    foreign = console.get("/admin/", {"environment": "test", "organization": str(other_org.pk)}).content.decode()
    assert other_org.name not in foreign and "No organization to show" in foreign


def test_a_staff_user_without_a_membership_sees_nothing(client, worlds):
    client.force_login(User.objects.create_user(email="drifter@example.com", password="pw", is_staff=True))
    assert client.get(url(Invoice, "changelist")).status_code == 403
    page = client.get("/admin/", {"environment": "test"}).content.decode()
    assert "No organization to show" in page and MINE not in page and THEIRS not in page


def test_an_operator_of_several_organizations_sees_whose_each_row_is(console_for, worlds, org, other_org, book):
    """Lists name each row's book for an operator of two organizations (unless filtered to one book); an operator
    of one organization, whose rows are all its own, keeps the narrower list."""
    email = "both@example.com"
    both = console_for(org, email=email)
    assert "book" not in both.get(url(Customer, "changelist")).context["cl"].list_display
    console_for(other_org, email=email)  # a member of the second organization too
    listed = both.get(url(Customer, "changelist"))
    assert listed.context["cl"].list_display[-1] == "book"
    assert f"{org.name} (test)" in listed.content.decode() and f"{other_org.name} (test)" in listed.content.decode()
    filtered = both.get(url(Customer, "changelist"), {"book": str(book.pk)})
    assert "book" not in filtered.context["cl"].list_display
    assert console_for(superuser=True).get(url(Invoice, "changelist")).context["cl"].list_display[-1] == "book"
    from accounts.models import ApiKey

    assert both.get(url(ApiKey, "changelist")).context["cl"].list_display[-1] == "organization"



def test_logs_of_payments_refunds_and_subscription_changes_open_newest_first(console, worlds):
    """Read as logs, they open as the invoice list does, newest first (their API answers keep the order of events)."""
    from billing.models import Payment, Refund, SubscriptionChange

    for model in (Payment, Refund, SubscriptionChange):
        resp = console.get(url(model, "changelist"))
        ordering = resp.context["cl"].get_ordering(resp.wsgi_request, resp.context["cl"].queryset)
        assert ordering[0] == "-created_at", (model._meta.label, ordering)


@pytest.mark.parametrize("lookup", ["secret__startswith", "previous_secret__regex", "secret"])
def test_no_list_is_filtered_by_a_secret_the_page_hides(console_for, worlds, lookup):
    # A filter is an oracle: `?secret__startswith=whsec_A` listed the endpoint and `whsec_B` did not, so any operator
    # (a member too) read its signing secret a character at a time.
    from webhooks.models import WebhookEndpoint

    member = console_for(role="member")
    for prefix in ("whsec_A", "whsec_AAAA", "whsec_B"):
        resp = member.get(url(WebhookEndpoint, "changelist"), {lookup: prefix})
        assert resp.status_code == 400, (prefix, resp.status_code)  # Django's refusal of a lookup it disallows
    for model, lookup in ((WebhookEndpoint, "secret__isnull"), (User, "password__startswith")):
        assert console_for().get(url(model, "changelist"), {lookup: "x"}).status_code == 400
