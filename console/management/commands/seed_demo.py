from django.core.management.base import BaseCommand, CommandError

from core import clock
from core.errors import ApiError
from console.demo import book as demo_book
from console.demo.seed import DemoSeedError, demo_counts, demo_seed


class Command(BaseCommand):
    help = ("Write a realistic demo book (customers, plans of every pricing model, 90 days of usage, invoices in "
            "every state, a credit pool near empty, a matter, spend caps) into the test book of a demo "
            "organization, through the API's services. Idempotent: a test book that has customers is left as "
            "it is. Prints a new secret test key of the demo owner as the last line.")

    def add_arguments(self, parser):
        parser.add_argument("--org", default=demo_book.ORGANIZATION,
                            help=f"organization name (default {demo_book.ORGANIZATION!r})")
        parser.add_argument("--email", default=demo_book.OWNER_EMAIL,
                            help=f"owner's email (default {demo_book.OWNER_EMAIL})")

    def handle(self, *args, **options):
        try:
            seeded = demo_seed(now=clock.now(), organization_name=options["org"], owner_email=options["email"])
        except ApiError as exc:
            raise CommandError(f"the demo book was refused, nothing was written: {exc.message}")
        except DemoSeedError as exc:
            raise CommandError(f"{exc}; nothing was written")
        book = seeded.book
        if seeded.created:
            self.stdout.write(f"seeded the test book of {seeded.organization.name} ({seeded.organization.id})")
        else:
            self.stdout.write(f"the test book of {seeded.organization.name} ({seeded.organization.id}) already has "
                              "customers: left as it is")
        for name, count in demo_counts(book=book).items():
            self.stdout.write(f"  {name}: {count}")
        self.stdout.write(f"key id: {seeded.key.id} (secret, test, scope full, role owner of {options['email']})")
        self.stdout.write(seeded.raw_key)
