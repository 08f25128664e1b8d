"""factory-boy factories for every model the tests build directly."""
import factory

from config.accounts.models import Book, Membership, Organization, User
from config.accounts.services import organization_ensure


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Org {n}")

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        organization = organization_ensure(name=kwargs.pop("name"))
        for field, value in kwargs.items():
            setattr(organization, field, value)
        if kwargs:
            organization.save()
        return organization


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ["email"]

    email = factory.Sequence(lambda n: f"user{n}@example.com")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    role = "owner"


def book_of(organization: Organization, environment: str = "test") -> Book:
    return Book.objects.get(organization=organization, environment=environment)


class ServiceEntryFactory(factory.django.DjangoModelFactory):
    """A catalog entry with known rates (tests never depend on the loaded price data's values)."""

    class Meta:
        model = "catalog.ServiceEntry"

    external_id = factory.Sequence(lambda n: f"test:model-{n}")
    canonical_name = factory.Sequence(lambda n: f"test-model-{n}")
    display_name = factory.LazyAttribute(lambda entry: entry.canonical_name)
    provider = "testai"
    service_type = "chat"
    input_cost = None
    output_cost = None
    cost_unit = "token"
    source = "curated"
    is_api = False
    is_active = True
