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


class MatterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "matters.Matter"

    matter_number = factory.Sequence(lambda n: f"M-{n:04d}")
    name = factory.Sequence(lambda n: f"Matter {n}")
    client_name = "Smith & Co"


class MatterRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "matters.MatterRule"

    matter = factory.SubFactory(MatterFactory)
    book = factory.SelfAttribute("matter.book")
