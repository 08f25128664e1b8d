"""Reads of organizations and their members."""
from accounts.models import Membership, Organization, Role


def billing_recipients(organization: Organization) -> list[str]:
    """Who gets an organization's billing alerts: its billing email when set, otherwise every owner and finance
    member (spec §6)."""
    if organization.billing_email:
        return [organization.billing_email]
    return sorted(Membership.objects.filter(organization=organization, role__in=[Role.OWNER, Role.FINANCE])
                  .values_list("user__email", flat=True))
