"""Django's PostgreSQL backend, with one addition: a commit whose answer was lost is asked about.

When the connection dies while a transaction commits (a crash, a restart, a failover, a dropped network), the
commit may have happened and only its answer been lost. Django raises, the request answers 503, and a client that
sends it again stores it twice: a second refund, a second strategy billing its fee twice, a second webhook
endpoint. The contract: a request whose writes committed never answers 5xx.

So before each commit the transaction's id is read (one round trip unless a statement of the transaction read
it already; None for a transaction that wrote nothing, which has nothing to lose), and when the commit fails
with the connection gone, PostgreSQL is asked on a new connection what became of that transaction
(`pg_xact_status`: committed, aborted, or still in progress, in which case it is asked again). A committed one goes on as if the commit had answered: the request keeps its new
connection and its on-commit work runs. Anything else raises as before: a connection that survived its failure
means the server refused the commit (it rolled back), and an answer not had within COMMIT_PROBE_SECONDS is a 503
without knowing.
"""
import time

from django.db import DatabaseError, InterfaceError, OperationalError
from django.db.backends.postgresql import base

# How long a commit that lost its answer waits for PostgreSQL to say what became of it (a restart takes seconds);
# past it the error is raised as it came.
COMMIT_PROBE_SECONDS = 5


class DatabaseWrapper(base.DatabaseWrapper):
    # The id of the transaction in progress, where a statement of it already read it (`pg_current_xact_id()`, as
    # the usage ledger's insert does): the commit then needs no round trip of its own to know it.
    transaction_id_known: str | None = None

    def connect(self):
        self.transaction_id_known = None
        super().connect()

    def rollback(self):
        self.transaction_id_known = None
        super().rollback()

    def commit(self):
        xid, self.transaction_id_known = self.transaction_id_known or self._transaction_id(), None
        try:
            super().commit()
        except (OperationalError, InterfaceError):
            if xid is None or not self._answer_lost() or not self._committed_after_all(xid):
                raise
            # What `commit` does after a commit that answered: its on-commit work runs once autocommit is back on.
            self.errors_occurred = False
            self.run_commit_hooks_on_set_autocommit_on = True

    def _transaction_id(self) -> str | None:
        """The id of the transaction about to commit, None when it wrote nothing. On the raw connection: not a query
        of Django's log (tests count queries)."""
        if self.connection is None or self.autocommit:
            return None
        with self.wrap_database_errors:
            return self.connection.execute("SELECT pg_current_xact_id_if_assigned()::text").fetchone()[0]

    def _answer_lost(self) -> bool:
        """Whether the connection is gone: a connection that survived the failure had the server's answer."""
        return self.connection is None or self.connection.closed

    def _committed_after_all(self, xid: str) -> bool:
        """Whether transaction `xid` committed, asked on a new connection, which the request keeps (its
        on-commit work kept with it). While it is in progress (its backend may still be committing) it is asked
        again; False once PostgreSQL has not said within COMMIT_PROBE_SECONDS."""
        on_commit = self.run_on_commit
        deadline = time.monotonic() + COMMIT_PROBE_SECONDS
        while True:
            try:
                if self.connection is None or self.connection.closed:
                    self.connect()  # resets the transaction state, on-commit work included (restored below)
                with self.wrap_database_errors:
                    status = self.connection.execute("SELECT pg_xact_status(%s::xid8)", [xid]).fetchone()[0]
                if status != "in progress":
                    self.run_on_commit = on_commit if status == "committed" else []
                    return status == "committed"
            except (OperationalError, InterfaceError):
                pass  # PostgreSQL is not back yet
            except DatabaseError:  # it does not know the transaction (a failover to a server without it)
                self.run_on_commit = []
                return False
            if time.monotonic() >= deadline:
                self.run_on_commit = []
                return False
            time.sleep(0.2)

