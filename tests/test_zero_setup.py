"""The zero-setup shape, live: `make run` with no DATABASE_URL and no REDIS_URL (the embedded PostgreSQL from the
wheel, inline follow-up work, the gunicorn command and worker count `make run` uses), started once for this module
in a fresh data directory (about 15 seconds, most of it migrating), then:

- docs/quickstart.md run as a reader runs it: every `sh` block of the page, in order, in one bash, each printed
  answer compared with the `json` or `text` block right under its command (see `matches`);
- the README's quickstart block, pasted the same way, before and after the page (both print what they show in
  either order);
- two clients recording 1,000 batches at once: every answer 2xx, every record stored exactly once.

No PostgreSQL program is on any PATH here: `make run` gets only the programs its recipes call, the pages' commands
only those a reader needs besides a shell (`curl`, `jq`, `date`, `tail`, `grep`).

The commands run as written, with three stand-ins a test needs: the server listens on a free port instead of 8000
(exported as PORT, which the commands read, as a reader who chose another port does; a literal 8000 is replaced),
`manage.py` reaches this module's server through DATABASE_URL (a reader's reaches `make run`'s var/postgres by
default), and the pages' relative paths (`.venv`, `manage.py`, `var/mail`) resolve in a scratch directory where the
server writes its email.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from decimal import Decimal
from pathlib import Path

import pytest

from config.embedded_database import url_for

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
ANY = "…"  # in an expected block: any value, any characters of a string or line, or "and more"
MARKER = "\x1equickstart-block-done\x1e"
SERVER_TOOLS = ("bash", "sh", "mkdir", "env")  # what the Makefile's recipes call
READER_TOOLS = ("bash", "sh", "curl", "jq", "date", "tail", "grep")  # what the pages' commands call
# What a test cannot inherit from the environment it runs in (a `make test` sets these for the suite).
DROPPED = {"DATABASE_URL", "REDIS_URL", "CELERY_TASK_ALWAYS_EAGER", "EMAIL_FILE_PATH", "MAKEFLAGS", "MFLAGS",
           "MAKELEVEL", "MAKEOVERRIDES"}


# --- the pages' blocks and what an expected block means

def blocks(text: str) -> list[tuple[str, str, str | None]]:
    """The fenced blocks of a page, as (language, code, expected): a `json` or `text` block that follows a block
    directly (nothing but blank lines between them) is that block's expected output, not a block of its own."""
    found: list[list] = []
    previous_end = None
    for fence in FENCE.finditer(text):
        language, code = fence.group(1), fence.group(2)
        adjacent = previous_end is not None and not text[previous_end:fence.start()].strip()
        if adjacent and language in ("json", "text") and found and found[-1][2] is None:
            found[-1][2] = f"{language}\n{code}"
        else:
            found.append([language, code, None])
        previous_end = fence.end()
    return [tuple(block) for block in found]


class Rest:
    """A bare `…` among an array's elements: the array may hold more elements than those shown."""


def expected_json(text: str) -> list:
    """The JSON values of an expected block, where a bare `…` is a value that matches anything, or (as the last
    member of an object or element of an array) says that more follow."""
    out, stack, in_string, escaped, position = [], [], False, False, 0
    while position < len(text):
        char = text[position]
        if in_string:
            in_string = not (char == '"' and not escaped)
            escaped = char == "\\" and not escaped
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append(char)
        elif char in "]}":
            stack.pop()
        elif char == ANY:
            before = "".join(out).rstrip()
            if stack and stack[-1] == "{" and before[-1:] in ("{", ","):  # in place of a member: more members
                out = [before[:-1]] if before.endswith(",") else [before]
                position += 1
                continue
            char = '"\\u0000rest"' if stack and stack[-1] == "[" and before[-1:] in ("[", ",") else f'"{ANY}"'
        out.append(char)
        position += 1
    decoder, source, values, at = json.JSONDecoder(parse_float=Decimal, parse_int=Decimal), "".join(out), [], 0
    while source[at:].strip():
        at += len(source[at:]) - len(source[at:].lstrip())
        value, at = decoder.raw_decode(source, at)
        values.append(value)
    return [_rests(value) for value in values]


def _rests(value):
    if isinstance(value, list):
        return [Rest if item == "\u0000rest" else _rests(item) for item in value]
    if isinstance(value, dict):
        return {key: _rests(item) for key, item in value.items()}
    return value


def json_values(output: str) -> list:
    """The JSON values printed one after another (curl prints no newline after a body)."""
    decoder, values, at = json.JSONDecoder(parse_float=Decimal, parse_int=Decimal), [], 0
    while output[at:].strip():
        at += len(output[at:]) - len(output[at:].lstrip())
        value, at = decoder.raw_decode(output, at)
        values.append(value)
    return values


def pattern(text: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in text.split(ANY)), re.S)


def matches(expected, actual) -> bool:
    """Whether an answer is what the page shows: the members an object shows (others are ignored), an array's
    elements in any order (all of them unless a `…` says more follow), numbers by value (57 is 57.00), strings
    exactly, where `…` stands for any characters (`"…"` alone for any value at all)."""
    if isinstance(expected, str) and ANY in expected:
        return expected == ANY or (isinstance(actual, str) and pattern(expected).fullmatch(actual) is not None)
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(key in actual and matches(value, actual[key])
                                                for key, value in expected.items())
    if isinstance(expected, list):
        shown = [item for item in expected if item is not Rest]
        if not isinstance(actual, list) or len(actual) < len(shown) or (len(shown) == len(expected)
                                                                        and len(actual) != len(shown)):
            return False
        return _assign(shown, list(actual))
    return type(expected) is type(actual) and expected == actual  # true is not 1, "8" is not 8


def _assign(shown: list, candidates: list) -> bool:
    """Each shown element matched by a different actual element (a small backtracking search)."""
    if not shown:
        return True
    first, rest = shown[0], shown[1:]
    return any(matches(first, candidate) and _assign(rest, candidates[:i] + candidates[i + 1:])
               for i, candidate in enumerate(candidates))


def check(expected: str, output: str, *, command: str = "", prefix: bool = False) -> None:
    """Compare a command's printed output with its expected block (`text` blocks line by line; the first lines
    only when `prefix`, for a server that keeps printing)."""
    language, _, body = expected.partition("\n")
    if language == "text":
        lines, printed = body.rstrip("\n").splitlines(), output.strip("\n").splitlines()
        if prefix:
            printed = printed[:len(lines)]
        same = len(printed) == len(lines) and all(pattern(line).fullmatch(out) for line, out in zip(lines, printed))
    else:
        try:
            actual = json_values(output)
        except json.JSONDecodeError:
            actual = None
        wanted = expected_json(body)
        same = actual is not None and len(wanted) == len(actual) and all(map(matches, wanted, actual))
    if not same:
        pytest.fail(f"{command}\nthe page shows:\n{body}\nthe command printed:\n{output}")


# --- the server

def environment(**extra) -> dict[str, str]:
    return {**{name: value for name, value in os.environ.items() if name not in DROPPED}, **extra}


def free_port() -> int:
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


def tools(directory: Path, programs: tuple[str, ...]) -> str:
    """A PATH of one directory holding only `programs` (links to this machine's)."""
    directory.mkdir()
    for program in programs:
        (directory / program).symlink_to(shutil.which(program))
    return str(directory)


class Served:
    def __init__(self, scratch: Path, base: str, database_url: str, output: Path):
        self.scratch, self.base, self.database_url, self.output = scratch, base, database_url, output
        self.path = tools(scratch / "reader-bin", READER_TOOLS)

    def stand_ins(self, code: str) -> str:
        """The page's commands with the test's stand-ins (see the module docstring)."""
        for written, used in (("http://127.0.0.1:8000", self.base), (".venv/bin/python", f"{ROOT}/.venv/bin/python"),
                              ("manage.py", f"{ROOT}/manage.py")):
            code = code.replace(written, used)
        return code

    def bash(self, script: str) -> subprocess.CompletedProcess:
        # PORT as a reader who ran `PORT=... make run` exports it: the pages' commands read it.
        return subprocess.run([shutil.which("bash"), "-c", script], cwd=self.scratch, capture_output=True, text=True,
                              timeout=180, env=environment(DATABASE_URL=self.database_url, PATH=self.path,
                                                           PORT=self.base.rsplit(":", 1)[1]))

    def mint_key(self, organization: str, email: str) -> str:
        minted = self.bash(f"{ROOT}/.venv/bin/python {ROOT}/manage.py create_api_key --org '{organization}' "
                           f"--email {email} --role owner --type secret")
        assert minted.returncode == 0, minted.stderr
        return minted.stdout.splitlines()[-1]


@pytest.fixture(scope="module")
def served():
    """`make run` as a reader starts it (a fresh data directory under a scratch directory's var/, its email in
    var/mail there), stopped with Ctrl-C after the module. The scratch directory lives outside pytest's tmp_path
    (tests/test_embedded_database.py says why)."""
    make = shutil.which("make")
    if subprocess.run([make, "-q", ".venv/.installed"], cwd=ROOT).returncode != 0:
        pytest.skip("requirements.txt changed since `make install` (make test installs first)")
    scratch = Path(tempfile.mkdtemp(prefix="billing-zero-setup-test-"))
    data, port = scratch / "var" / "postgres", free_port()
    (scratch / "var").mkdir()
    base = f"http://127.0.0.1:{port}"
    output, errors = scratch / "make-run.out", scratch / "make-run.err"
    env = environment(EMAIL_FILE_PATH=str(scratch / "var" / "mail"), PATH=tools(scratch / "server-bin", SERVER_TOOLS))
    with open(output, "w") as stdout, open(errors, "w") as stderr:
        server = subprocess.Popen(
            [make, "--no-print-directory", "run", f"EMBEDDED_POSTGRES_DATA={data}", f"PORT={port}"], cwd=ROOT, env=env,
            stdout=stdout, stderr=stderr, start_new_session=True)  # its own process group, for the Ctrl-C below
    try:
        deadline = time.monotonic() + 180
        while not answers(f"{base}/healthz"):
            assert server.poll() is None and time.monotonic() < deadline, errors.read_text()[-3000:]
            time.sleep(0.5)
        yield Served(scratch, base, url_for(data), output)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGINT)  # Ctrl-C in the terminal
        server.wait(timeout=60)
        deadline = time.monotonic() + 60
        while (data / "postmaster.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        shutil.rmtree(scratch, ignore_errors=True)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


# --- the checks of the matching itself

def test_an_expected_block_matches_only_what_it_shows():
    def shown(expected: str, printed: str) -> bool:
        return matches(expected_json(expected)[0], json_values(printed)[0])

    invoice = '{"id": "…", "total": 57.00, "key": "svc_sk_test_…", "lines": [{"amount": 8, …}, …], …}'
    assert shown(invoice, '{"id": "x", "total": 57, "key": "svc_sk_test_a", "lines": [{"amount": 8, "n": 1}], "n": 2}')
    assert not shown(invoice, '{"id": "x", "total": 57.01, "key": "svc_sk_test_a", "lines": [{"amount": 8}]}')
    assert not shown(invoice, '{"id": "x", "total": 57, "key": "svc_sk_live_a", "lines": [{"amount": 8}]}')
    assert not shown(invoice, '{"total": 57, "key": "svc_sk_test_a", "lines": [{"amount": 8}]}')  # no id
    assert not shown(invoice, '{"id": "x", "total": 57, "key": "svc_sk_test_a", "lines": [{"amount": 9}]}')
    costs = '[{"usageCost": "0.006"}, {"usageCost": "0.0046"}]'
    assert shown(costs, '[{"usageCost": "0.0046"}, {"usageCost": "0.006"}]')  # in any order
    assert not shown(costs, '[{"usageCost": "0.006"}, {"usageCost": "0.0046"}, {"usageCost": "0.006"}]')
    assert not shown(costs, '[{"usageCost": "0.006"}, {"usageCost": "0.006"}]')  # each shown element once
    assert not shown(costs, '[{"usageCost": "0.006"}, {"usageCost": 0.0046}]')  # a string stays a string
    assert not shown('{"verified": true}', '{"verified": 1}')
    assert shown('{"revenue": …, "bySubscription": […]}', '{"revenue": 3.5, "bySubscription": [1, 2]}')
    assert not shown('{"revenue": …}', '{"cost": 3.5}')
    with pytest.raises(pytest.fail.Exception):
        check("text\nSubject: Invoice INV-…\nTotal: $57.00\n", "Subject: Invoice INV-000001\nTotal: $58.00\n")
    check("text\nSubject: Invoice INV-…\n", "Subject: Invoice INV-000001\n")
    with pytest.raises(pytest.fail.Exception):
        check("json\n{\"processed\": 1}\n", '{"processed": 1}{"processed": 1}')  # one answer shown, two printed


def test_a_command_followed_by_its_output_block_is_one_block():
    page = "```sh\napi $BASE/verify\n```\n```json\n{}\n```\n\nText.\n\n```json\n[]\n```\n"
    assert blocks(page) == [("sh", "api $BASE/verify\n", "json\n{}\n"), ("json", "[]\n", None)]


# --- the pages, live

def run_the_readme_quickstart(served) -> None:
    """The README's quickstart block, pasted as it is: the event recorded comes back first in the events, with
    its cost. Its customer is not the docs' quickstart's, so the two pages print what they show in either order."""
    readme = (ROOT / "README.md").read_text()
    quickstart = readme[readme.index("\n## Quickstart\n"):]
    (language, code, _), *_ = blocks(quickstart)
    assert language == "sh" and "usage/record" in code
    ran = served.bash("set -eo pipefail\n" + served.stand_ins(code))
    assert ran.returncode == 0, ran.stderr[-3000:]
    recorded, events = json_values(ran.stdout)
    assert recorded["successful"] == 1 and recorded["failed"] == 0, recorded
    newest = events[0]
    assert newest["id"] == recorded["results"]["success"][0]["eventId"]
    assert (newest["customerExternalId"], newest["model"], newest["usageCost"]) == ("cust-7", "gpt-4o", "0.006")


def test_the_readme_portal_example_returns_a_link_that_opens(served):
    """The README's portal block, pasted after its quickstart (which minted `$KEY` and recorded cust-7's event): a
    201 with the one-time link, and the link opens the customer's portal."""
    readme = (ROOT / "README.md").read_text()
    quickstart = readme[readme.index("\n## Quickstart\n"):]
    portal = readme[readme.index("\n## The customer portal\n"):]
    (_, first, _), *_ = blocks(quickstart)
    (language, example, _), *_ = blocks(portal)
    assert language == "sh" and "/v1/portal-sessions" in example
    ran = served.bash("set -eo pipefail\n" + served.stand_ins(first) + "\n" + served.stand_ins(example))
    assert ran.returncode == 0, ran.stderr[-3000:]
    *_, session = json_values(ran.stdout)
    assert session["url"].startswith(f"{served.base}/portal/"), session
    page = urllib.request.urlopen(session["url"], timeout=30)
    assert page.status == 200 and "cust-7" in page.read().decode()


def test_the_readme_quickstart_runs_as_documented_before_the_quickstart(served):
    """Into the organization the docs' quickstart then uses (the same --org): that page must still print what it
    shows (the test below)."""
    run_the_readme_quickstart(served)


def test_the_quickstart_runs_as_documented(served):
    """Every `sh` block of docs/quickstart.md in order, in one bash, as a reader pastes them into their second
    terminal; `make run` is the server this module started, and `make demo` the `seed_demo` of the next block."""
    commands = [(code, expected) for language, code, expected in blocks((ROOT / "docs" / "quickstart.md").read_text())
                if language == "sh"]
    (start, started), *commands = commands
    assert start.startswith("make run") and started is not None
    check(started, served.output.read_text(), command=start, prefix=True)
    commands = [(code, expected) for code, expected in commands if not code.startswith("make ")]
    assert any(expected for _, expected in commands)
    script = "set -eo pipefail\n" + "".join(f"{served.stand_ins(code)}\nprintf '\\n{MARKER}\\n'\n"
                                            for code, _ in commands)
    ran = served.bash(script)
    *finished, last = ran.stdout.split(f"\n{MARKER}\n")
    for (code, expected), output in zip(commands, finished):
        if expected is not None:
            check(expected, output, command=code)
    assert ran.returncode == 0 and len(finished) == len(commands), (
        f"block {len(finished) + 1} of {len(commands)} failed:\n{commands[len(finished)][0]}\nprinted:\n{last}\n"
        f"stderr:\n{ran.stderr[-3000:]}")


def test_the_readme_quickstart_runs_as_documented_after_the_quickstart(served):
    run_the_readme_quickstart(served)



def test_make_run_runs_the_periodic_jobs_without_a_broker(served):
    """Without REDIS_URL there is no Celery beat: the web processes run the periodic jobs (config/in_process_schedule.py).
    Every job of the schedule is claimed by one of them soon after the start, and a run made due is run within a tick:
    a subscription that starts while the server runs goes from upcoming to active with no worker and no command."""
    import psycopg

    from config.schedule import SCHEDULED_JOBS

    key, base = served.mint_key("Scheduled", "scheduled@example.com"), f"{served.base}/v1"
    status, _, body = request("POST", f"{base}/usage/record", key, {"records": [
        {"customerExternalId": "cust-s", "agentCode": "planner", "signalName": "plans", "model": "gpt-4o-mini",
         "modelProvider": "openai", "inputTokens": 10, "outputTokens": 0}]})
    assert status == 200, body
    (customer,), (agent,) = request("GET", f"{base}/customers", key)[2], request("GET", f"{base}/agents", key)[2]
    status, _, plan = request("POST", f"{base}/pricing-plans", key, {"name": "Basic", "agentId": agent["id"]})
    assert status == 201, plan
    starts = time.time() + 3
    status, _, subscription = request("POST", f"{base}/subscriptions", key, {
        "name": "Basic", "planId": plan["id"], "agentId": agent["id"], "customerId": customer["id"],
        "startDate": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(starts + 1))})
    assert (status, subscription["status"]) == (201, "upcoming"), subscription

    with psycopg.connect(served.database_url, autocommit=True) as database:
        deadline, claimed = time.monotonic() + 60, set()
        while not {job.name for job in SCHEDULED_JOBS} <= claimed and time.monotonic() < deadline:
            time.sleep(0.5)
            claimed = {name for (name,) in database.execute("SELECT name FROM jobs_periodicrun")}
        assert claimed == {job.name for job in SCHEDULED_JOBS}
        time.sleep(max(0.0, starts + 2 - time.time()))
        database.execute("UPDATE jobs_periodicrun SET due_at = now() WHERE name = 'subscriptions_advance'")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status, _, subscription = request("GET", f"{base}/subscriptions/{subscription['id']}", key)
        if subscription["status"] == "active":
            break
        time.sleep(0.5)
    assert subscription["status"] == "active", subscription


# --- two writers at once

def request(method: str, url: str, key: str, body=None) -> tuple[int, dict, object]:
    data = json.dumps(body).encode() if body is not None else None
    call = urllib.request.Request(url, data=data, method=method,
                                  headers={"x-api-key": key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(call, timeout=60) as response:
            return response.status, dict(response.headers), json.loads(response.read(), parse_float=Decimal)
    except urllib.error.HTTPError as failure:
        return failure.code, dict(failure.headers), failure.read().decode()


WRITERS, BATCHES, RECORDS = 2, 500, 2  # 1,000 batches, 2,000 records


def test_two_concurrent_writers_get_no_errors_over_1000_batches(served):
    """Two clients record 500 batches each at the same time (released together, each sending its next batch as
    soon as the last one answers). Every answer is 200 with both records successful, and the API then counts
    each record once: 2,000 events, each record's distinct input-token count seen exactly once, and the cost of
    all of them to the digit (record n costs n x gpt-4o-mini's 0.15 per million input tokens)."""
    key = served.mint_key("Two Writers", "writers@example.com")
    url = f"{served.base}/v1/usage/record"
    answers_seen: list[list] = [[] for _ in range(WRITERS)]
    barrier = threading.Barrier(WRITERS)

    def writer(number: int):
        barrier.wait()
        for batch in range(BATCHES):
            first = (number * BATCHES + batch) * RECORDS + 1
            records = [{"customerExternalId": f"writer-{number}", "agentCode": "load", "signalName": "batches",
                        "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": n, "outputTokens": 0}
                       for n in range(first, first + RECORDS)]
            status, _, body = request("POST", url, key, {"records": records})
            answers_seen[number].append((status, body.get("successful") if isinstance(body, dict) else body))

    first_day = time.strftime("%Y-%m-%d", time.gmtime())  # the records are dated when they arrive
    started = time.monotonic()
    threads = [threading.Thread(target=writer, args=(number,)) for number in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started

    every = [answer for seen in answers_seen for answer in seen]
    assert len(every) == WRITERS * BATCHES
    assert [answer for answer in every if answer != (200, RECORDS)] == [], f"in {elapsed:.1f} s"

    total = WRITERS * BATCHES * RECORDS
    tokens = []
    for offset in range(0, total, 100):
        status, headers, page = request("GET", f"{served.base}/v1/events?limit=100&offset={offset}", key)
        assert status == 200, page
        assert int(headers["X-Total-Count"]) == total
        tokens += [event["inputTokens"] for event in page]
    assert sorted(tokens) == list(range(1, total + 1))  # each record once: none lost, none twice

    last_day = time.strftime("%Y-%m-%d", time.gmtime())  # a run across midnight UTC spans two days
    status, _, cost = request("GET", f"{served.base}/v1/analytics/cost?startDate={first_day}&endDate={last_day}",
                              key)
    assert status == 200, cost
    assert cost["eventCount"] == total and cost["eventCountWithNullCost"] == 0
    assert cost["cost"] == Decimal("0.00000015") * (total * (total + 1) // 2)
    assert sorted(row["eventCount"] for row in cost["byCustomer"]) == [BATCHES * RECORDS] * WRITERS
