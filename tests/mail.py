"""Read back what the file email backend wrote: every `.log` file under `settings.EMAIL_FILE_PATH` (one per
connection), messages separated by lines of 79 dashes. The autouse fixture gives each test its own folder."""
from dataclasses import dataclass
from email import message_from_bytes, policy
from pathlib import Path

from django.conf import settings

SEPARATOR = b"\n" + b"-" * 79 + b"\n"


@dataclass(frozen=True)
class SentMail:
    subject: str
    from_email: str
    to: list[str]
    text: str
    html: str | None


def _parse(raw: bytes) -> SentMail:
    message = message_from_bytes(raw, policy=policy.default)
    text_part, html_part = message.get_body(("plain",)), message.get_body(("html",))
    return SentMail(
        subject=str(message["Subject"]), from_email=str(message["From"]),
        to=[address.addr_spec.lower() for address in message["To"].addresses],
        text=text_part.get_content() if text_part is not None else "",
        html=html_part.get_content() if html_part is not None else None,
    )


def sent_mail() -> list[SentMail]:
    """Every message written so far, oldest file first."""
    folder = Path(settings.EMAIL_FILE_PATH)
    if not folder.is_dir():
        return []
    files = sorted(folder.glob("*.log"), key=lambda path: (path.stat().st_mtime_ns, path.name))
    return [_parse(chunk) for path in files for chunk in path.read_bytes().split(SEPARATOR) if chunk.strip()]


def mail_to(address: str) -> list[SentMail]:
    return [mail for mail in sent_mail() if address.lower() in mail.to]
