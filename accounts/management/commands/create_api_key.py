from django.core.management.base import BaseCommand, CommandError

from accounts.models import Environment, KeyScope, KeyType, Role
from accounts.services import api_key_mint, member_ensure, organization_ensure
from core.errors import ApiError


class Command(BaseCommand):
    help = ("Create the organization, user and membership when missing, mint an API key and print the raw key "
            "as the last line (it is shown only once).")

    def add_arguments(self, parser):
        parser.add_argument("--org", required=True, help="organization name (created when missing)")
        parser.add_argument("--email", required=True, help="member email (created when missing)")
        parser.add_argument("--role", required=True, choices=Role.values)
        parser.add_argument("--type", required=True, choices=KeyType.values, dest="key_type")
        parser.add_argument("--scope", default=KeyScope.FULL, choices=KeyScope.values)
        parser.add_argument("--env", default=Environment.TEST, choices=Environment.values)
        parser.add_argument("--name", default="", help="a label for the key")

    def handle(self, *args, **options):
        organization = organization_ensure(name=options["org"])
        membership = member_ensure(organization=organization, email=options["email"], role=options["role"])
        try:
            key, raw_key = api_key_mint(membership=membership, key_type=options["key_type"],
                                        environment=options["env"], scope=options["scope"], name=options["name"])
        except ApiError as exc:
            raise CommandError(str(exc.message))
        self.stdout.write(f"organization: {organization.name} ({organization.id})")
        self.stdout.write(f"key id: {key.id} ({key.key_type}, {key.environment}, scope {key.scope}, "
                          f"role {membership.role})")
        self.stdout.write(raw_key)
