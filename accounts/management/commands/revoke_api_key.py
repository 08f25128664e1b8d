from django.core.management.base import BaseCommand, CommandError

from accounts.services import api_key_revoke_raw
from core import clock
from core.errors import ApiError


class Command(BaseCommand):
    help = "Revoke an API key given its raw value."

    def add_arguments(self, parser):
        parser.add_argument("key", help="the raw key value")

    def handle(self, *args, **options):
        try:
            key = api_key_revoke_raw(raw_key=options["key"], now=clock.now())
        except ApiError as exc:
            raise CommandError(str(exc.message))
        self.stdout.write(f"revoked {key.prefix}… ({key.id}) at {key.revoked_at.isoformat()}")
