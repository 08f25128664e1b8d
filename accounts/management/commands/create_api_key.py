from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from accounts.models import ApiKey, Environment, KeyScope, KeyType, Organization, Role, User
from accounts.services import api_key_check, api_key_mint, member_ensure, organization_ensure
from core.errors import ApiError

# Option -> the column its value is stored in: a longer value is refused before anything is written (PostgreSQL
# would refuse it only after the organization, user or membership before it had been).
STORED_IN = {"org": Organization._meta.get_field("name"), "email": User._meta.get_field("email"),
             "name": ApiKey._meta.get_field("name")}


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
        for option, field in STORED_IN.items():
            value = options[option].strip().lower() if option == "email" else options[option]  # as stored
            if len(value) > field.max_length:
                raise CommandError(f"--{option}: Ensure this value has at most {field.max_length} characters.")
        try:
            api_key_check(key_type=options["key_type"], environment=options["env"], scope=options["scope"])
            # All or nothing: a refusal leaves no organization, user or membership behind without its key.
            with transaction.atomic():
                organization = organization_ensure(name=options["org"])
                membership = member_ensure(organization=organization, email=options["email"], role=options["role"])
                key, raw_key = api_key_mint(membership=membership, key_type=options["key_type"],
                                            environment=options["env"], scope=options["scope"], name=options["name"])
        except ApiError as exc:
            raise CommandError("; ".join(exc.message) if isinstance(exc.message, list) else exc.message) from exc
        self.stdout.write(f"organization: {organization.name} ({organization.id})")
        self.stdout.write(f"key id: {key.id} ({key.key_type}, {key.environment}, scope {key.scope}, "
                          f"role {membership.role})")
        self.stdout.write(raw_key)
