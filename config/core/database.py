"""Which database serves this process. PostgreSQL in production and tests; the SQLite of `make run` trials
takes the portable paths beside the hot-path statements (which use PostgreSQL arrays, JSON and locks)."""
from django.db import connection


def on_postgresql() -> bool:
    return connection.vendor == "postgresql"
