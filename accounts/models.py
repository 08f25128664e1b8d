"""Organizations, their members, their books and their API keys."""
import uuid

from django.contrib.auth.models import AbstractUser, BaseUserManager
from django.db import models
from django.db.models import Q


class Role(models.TextChoices):
    OWNER = "owner"
    ADMIN = "admin"
    FINANCE = "finance"
    LEGAL = "legal"
    MEMBER = "member"


class Environment(models.TextChoices):
    TEST = "test"
    LIVE = "live"


class Organization(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=255, unique=True)
    # Where credit-pool alerts go when set; otherwise every owner and finance member.
    billing_email = models.EmailField(blank=True)
    # The billing profile: who sends the invoices. Printed on invoices and in email subjects (the business name
    # is the legal name; the organization name when blank), used as the invoice email's sender.
    business_name = models.CharField(max_length=255, blank=True)
    address = models.TextField(blank=True, help_text="The seller's postal address, as printed on invoices.")
    tax_id = models.CharField("tax id", max_length=64, blank=True, help_text="VAT or other tax number.")
    logo = models.FileField(upload_to="logos/", blank=True, help_text="PNG or JPEG, printed on invoices.")
    sender_email = models.EmailField(blank=True, help_text="Invoice emails come from this address "
                                                           "(DEFAULT_FROM_EMAIL when blank).")
    sender_name = models.CharField(max_length=255, blank=True, help_text="The sender's display name.")
    payment_instructions = models.TextField(blank=True, help_text="How to pay other than the pay-now link "
                                                                  "(bank transfer details, terms).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def display_name(self) -> str:
        return self.business_name or self.name


class Book(models.Model):
    """One organization's test or live books: every record an API key writes belongs to its book."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="books")
    environment = models.CharField(max_length=4, choices=Environment.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "environment"], name="book_org_env_uniq")]
        ordering = ["organization__name", "environment"]

    def __str__(self):
        return f"{self.organization.name} ({self.environment})"

    @property
    def livemode(self) -> bool:
        return self.environment == Environment.LIVE


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email, password=None, **extra):
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email, password=None, **extra):
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class User(AbstractUser):
    """A person; signs in with their email."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    username = None
    email = models.EmailField(unique=True)

    USERNAME_FIELD = "email"
    REQUIRED_FIELDS = []
    objects = UserManager()

    def __str__(self):
        return self.email


class Membership(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "user"], name="membership_org_user_uniq")]
        ordering = ["organization__name", "user__email"]

    def __str__(self):
        return f"{self.user.email} ({self.role}) in {self.organization.name}"


class KeyType(models.TextChoices):
    SECRET = "secret"
    PUBLISHABLE = "publishable"


class KeyScope(models.TextChoices):
    FULL = "full"
    INGEST = "ingest"
    LEGAL = "legal"


class ApiKey(models.Model):
    """An API key. Only a SHA-256 digest of the raw value is kept; the raw value is shown once."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    book = models.ForeignKey(Book, on_delete=models.PROTECT, related_name="api_keys")
    membership = models.ForeignKey(Membership, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=255, blank=True)
    key_type = models.CharField(max_length=16, choices=KeyType.choices)
    scope = models.CharField(max_length=8, choices=KeyScope.choices, default=KeyScope.FULL)
    environment = models.CharField(max_length=4, choices=Environment.choices)
    prefix = models.CharField(max_length=32, help_text="The first characters of the key, for recognising it.")
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(condition=Q(key_type="secret") | Q(scope="full"), name="api_key_scope_secret_only"),
        ]

    def __str__(self):
        return f"{self.prefix}… ({self.key_type}, {self.environment})"

    @property
    def role(self) -> str:
        return self.membership.role

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None


class ApiRequestLog(models.Model):
    """One API-key request: who (key id, never the secret), what, from where, and the answer."""

    id = models.BigAutoField(primary_key=True)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="+")
    method = models.CharField(max_length=8)
    path = models.CharField(max_length=2048)
    status = models.PositiveSmallIntegerField()
    ip = models.GenericIPAddressField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organization", "-created_at"], name="api_request_log_org_time")]
        verbose_name = "API request log entry"
        verbose_name_plural = "API request log"

    def __str__(self):
        return f"{self.method} {self.path} {self.status}"


class Invitation(models.Model):
    """A pending invitation to join an organization (accepted by a signed-in user)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    digest = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(User, on_delete=models.SET_NULL, null=True, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return f"Invitation of {self.email} ({self.role})"
