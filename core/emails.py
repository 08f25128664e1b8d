"""Templated emails: a plain-text body with an HTML alternative, rendered from `<template>.txt` and `.html`."""
import re

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

# Every character str.splitlines() breaks on. Subjects carry client-controlled text (customer, subscription and
# endpoint names); a line break in a header makes Django raise BadHeaderError at send time, and sends run on
# commit, where the error is only logged while the database already records the email as sent.
_LINE_BREAKS = re.compile("[\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]+")


def one_line_subject(subject: str) -> str:
    """The subject with each run of line breaks replaced by one space, so that it is always a valid header."""
    return _LINE_BREAKS.sub(" ", subject)


def send_templated(*, template: str, to: list[str], subject: str, context: dict) -> None:
    """Render `<template>.txt` and `<template>.html` (paths under an app's templates/) and send them as one
    message; nothing is sent without recipients. The subject is made one line (any name in it may hold a line
    break), so a message is never refused for its subject."""
    if not to:
        return
    text = render_to_string(f"{template}.txt", context)
    html = render_to_string(f"{template}.html", context)
    message = EmailMultiAlternatives(subject=one_line_subject(subject), body=text,
                                     from_email=settings.DEFAULT_FROM_EMAIL, to=to)
    message.attach_alternative(html, "text/html")
    message.send()
