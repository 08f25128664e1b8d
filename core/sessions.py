"""The session engine: Django's database sessions, with a session cookie that cannot be a key taken as none.

Django accepts any cookie value of 8 characters or more as a session key and looks it up, and a cookie may carry a
NUL written as `\\000` (RFC 6265 quoting, which Django's cookie parser undoes): PostgreSQL refuses the lookup's
parameter, a DataError on the first read of `request.session`, a 500 on every page and API call that reads it (the
portal's sign-in by link, `GET /v1/users/me`). The keys Django makes are 32 lowercase letters and digits; any
other value is a cookie this server never set, and the request goes on without a session, as with an unknown key.
"""
import re

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore

_KEY_SHAPE = re.compile(r"[a-z0-9]{8,40}")


class SessionStore(DatabaseSessionStore):
    def _validate_session_key(self, key):
        return isinstance(key, str) and _KEY_SHAPE.fullmatch(key) is not None
