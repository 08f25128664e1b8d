#!/usr/bin/env python3
"""Soak: ingestion under load for a set time, then proof that nothing was lost or stored twice.

  bench/soak.py --url http://127.0.0.1:8000 --key svc_sk_test_... [--clients 4] [--seconds 300]
                [--database-url postgres://...]   # verify from the database instead of GET /v1/events

Each client (a process) sends batches of records to POST /v1/usage/record, every record with an
idempotency key of its own, and keeps a ledger of what the service acknowledged. Deliberately:

- some batches are sent again as they were (replays): every record must come back `replayed` with the
  eventId it got the first time;
- some batches repeat a key inside the batch (a replay of an earlier record of the same batch);
- some records are invalid (negative tokens): `stored: false`, and they must not be stored;
- some records name a model the catalog does not know: stored with cost null (`stored: true`);
- a request that fails (connection error, 5xx, 429) is sent again unchanged until acknowledged, as a
  client with idempotency keys may: if the lost attempt had committed, the retry answers with replays of
  it (counted as "batches committed before their answer was lost").

When the time is up, the events stored for this run (its own agent code) are read back and checked:
the stored idempotency keys are exactly the acknowledged ones, none twice, each with the acknowledged
eventId; no invalid record was stored; and the sum of stored costs equals the sum of the `totalCostUsd`
the service reported. Exit status 0 only when every check holds.
"""
import argparse
import http.client
import json
import multiprocessing
import random
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal

PRICED = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("claude-sonnet-4-5", "anthropic")]
UNKNOWN = ("soak-unknown-model", "acme")


@dataclass
class Ledger:
    """What one client was told."""
    accepted: dict = field(default_factory=dict)  # idempotency key -> (eventId, totalCostUsd or None)
    invalid: set = field(default_factory=set)  # keys refused with stored: false
    batches: int = 0
    replayed_batches: int = 0
    replays_checked: int = 0
    retries: int = 0
    committed_before_lost_answer: int = 0  # retried batches that came back as replays of the lost attempt
    statuses: dict = field(default_factory=dict)  # non-200 answers by status (and "connection")
    problems: list = field(default_factory=list)  # answers that contradict the ledger


def make_batch(args, run: str, client: int, sequence: int, rng: random.Random) -> tuple[list[dict], set]:
    """One batch and the keys of its deliberately invalid records."""
    base = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=sequence)
    records, invalid = [], set()
    for index in range(args.batch):
        usage_date = base + timedelta(milliseconds=index)
        if rng.random() < args.backfill_rate:  # a past month (15th), which may not have its partition yet
            now = datetime.now(timezone.utc)
            year, month = divmod(now.year * 12 + now.month - 1 - rng.randrange(1, 13), 12)
            usage_date = datetime(year, month + 1, 15, tzinfo=timezone.utc) + timedelta(seconds=sequence,
                                                                                        milliseconds=index)
        key = f"soak-{run}-{client}-{sequence}-{index}"
        model, provider = UNKNOWN if rng.random() < args.unknown_rate else PRICED[index % len(PRICED)]
        record = {"customerExternalId": f"soak-{run}-customer-{rng.randrange(args.customers)}",
                  "agentCode": f"soak-{run}", "signalName": f"signal-{index % 4}", "model": model,
                  "modelProvider": provider, "inputTokens": rng.randrange(1, 20000),
                  "outputTokens": rng.randrange(0, 4000), "quantity": rng.choice([1, 2, "0.5"]),
                  "usageDate": usage_date.isoformat(), "idempotencyKey": key,
                  "metadata": {"soak": run, "client": client}}
        if rng.random() < args.invalid_rate:
            record["inputTokens"] = -1
            invalid.add(key)
        records.append(record)
    if rng.random() < args.replay_rate and len(records) > 1:  # the last record repeats the first one's key
        records[-1] = dict(records[0])
    return records, invalid


class Connection:
    def __init__(self, url: str, key: str):
        target = urllib.parse.urlsplit(url)
        self.host, self.port = target.hostname, target.port or 80
        self.headers = {"x-api-key": key, "Content-Type": "application/json"}
        self.http = None

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self.http is None:
            self.http = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            self.http.request("POST", path, body=body, headers=self.headers)
            response = self.http.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.http.close()
            self.http = None
            raise


def send_until_acknowledged(connection: Connection, records: list[dict], ledger: Ledger
                            ) -> tuple[dict, bool]:
    """The service's answer, and whether it took more than one attempt."""
    body = json.dumps({"records": records}).encode()
    for attempt in range(1, 31):
        try:
            status, payload = connection.post("/v1/usage/record", body)
        except (OSError, http.client.HTTPException):
            status, payload = "connection", b""
        if status == 200:
            return json.loads(payload), attempt > 1
        ledger.statuses[str(status)] = ledger.statuses.get(str(status), 0) + 1
        ledger.retries += 1
        time.sleep(min(0.2 * attempt, 3))
    raise RuntimeError("a batch was never acknowledged")


def take_answer(records: list[dict], invalid: set, answer: dict, ledger: Ledger, *, replayed_batch: bool,
                retried: bool = False):
    """Fold one acknowledged batch into the ledger, noting anything that contradicts it. A new batch answers
    without replays, unless it was retried and the lost attempt had committed (then all of it replays)."""
    seen_in_batch = {}
    entries = sorted(answer["results"]["success"] + answer["results"]["failed"], key=lambda entry: entry["index"])
    if len(entries) != len(records) or answer["processed"] != len(records):
        ledger.problems.append(f"batch of {len(records)} answered with {len(entries)} entries")
    for entry in entries:
        key = records[entry["index"]]["idempotencyKey"]
        if entry.get("stored") is False:
            if key not in invalid:
                ledger.problems.append(f"{key}: refused unexpectedly: {entry.get('message')}")
            ledger.invalid.add(key)
            continue
        if key in invalid:
            ledger.problems.append(f"{key}: an invalid record was stored")
        cost = entry.get("totalCostUsd")
        known = ledger.accepted.get(key) or seen_in_batch.get(key)
        if known is not None:
            ledger.replays_checked += 1
            if not entry.get("replayed") or entry["eventId"] != known[0]:
                ledger.problems.append(f"{key}: replay answered {entry['eventId']} (first {known[0]})")
        else:
            if replayed_batch or (entry.get("replayed") and not retried):
                ledger.problems.append(f"{key}: unexpected first acceptance / replay flag")
            seen_in_batch[key] = (entry["eventId"], cost)
    if retried and any(entry.get("replayed") for entry in entries if entry.get("stored") is not False):
        ledger.committed_before_lost_answer += 1
    ledger.accepted.update(seen_in_batch)


def client_main(args, run: str, client: int, deadline: float, queue):
    rng = random.Random(f"{run}-{client}")
    connection = Connection(args.url, args.key)
    ledger, sent = Ledger(), []
    sequence = 0
    while time.time() < deadline:
        replay = bool(sent) and rng.random() < args.replay_rate
        if replay:
            records, invalid = rng.choice(sent)
            ledger.replayed_batches += 1
        else:
            records, invalid = make_batch(args, run, client, sequence, rng)
            sequence += 1
        answer, retried = send_until_acknowledged(connection, records, ledger)
        take_answer(records, invalid, answer, ledger, replayed_batch=replay, retried=retried)
        if not replay and len(sent) < 50:
            sent.append((records, invalid))
        ledger.batches += 1
    queue.put(ledger)


# --------------------------------------------------------------------------- reading back what was stored

def stored_via_api(args, run: str) -> list[tuple[str, str, str | None]]:
    """(idempotencyKey, eventId, usageCost) of every event of this run, page by page."""
    target = urllib.parse.urlsplit(args.url)
    http_connection = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=120)
    rows, offset = [], 0
    while True:
        query = urllib.parse.urlencode({"agentCode": f"soak-{run}", "limit": 100, "offset": offset})
        http_connection.request("GET", f"/v1/events?{query}", headers={"x-api-key": args.key})
        response = http_connection.getresponse()
        page = json.loads(response.read())
        if response.status != 200:
            raise RuntimeError(f"GET /v1/events answered {response.status}: {page}")
        rows += [(event["idempotencyKey"], event["id"], event["usageCost"]) for event in page]
        if len(page) < 100:
            return rows
        offset += 100


def stored_via_database(args, run: str) -> list[tuple[str, str, str | None]]:
    import psycopg

    with psycopg.connect(args.database_url) as connection:
        rows = connection.execute(
            "SELECT idempotency_key, id::text, usage_cost::text FROM customers_usageevent WHERE agent_code = %s",
            [f"soak-{run}"]).fetchall()
    return [(key, event_id, cost) for key, event_id, cost in rows]


def verify(ledgers: list[Ledger], stored: list[tuple]) -> tuple[dict, list[str]]:
    accepted = {key: value for ledger in ledgers for key, value in ledger.accepted.items()}
    invalid = set().union(*(ledger.invalid for ledger in ledgers))
    stored_keys = [key for key, _, _ in stored]
    by_key = {key: (event_id, cost) for key, event_id, cost in stored}
    reported = sum((Decimal(cost) for _, cost in accepted.values() if cost is not None), Decimal(0))
    stored_sum = sum((Decimal(cost) for _, _, cost in stored if cost is not None), Decimal(0))
    duplicates = len(stored_keys) - len(set(stored_keys))
    failures = [problem for ledger in ledgers for problem in ledger.problems]
    missing, extra = accepted.keys() - by_key.keys(), by_key.keys() - accepted.keys()
    if duplicates:
        failures.append(f"{duplicates} idempotency keys stored more than once")
    if missing:
        failures.append(f"{len(missing)} acknowledged records not stored, e.g. {sorted(missing)[:3]}")
    if extra:
        failures.append(f"{len(extra)} stored events never acknowledged, e.g. {sorted(extra)[:3]}")
    if invalid & by_key.keys():
        failures.append(f"{len(invalid & by_key.keys())} invalid records stored")
    wrong_ids = [key for key in accepted.keys() & by_key.keys() if accepted[key][0] != by_key[key][0]]
    if wrong_ids:
        failures.append(f"{len(wrong_ids)} stored events carry another eventId than acknowledged")
    if reported != stored_sum:
        failures.append(f"cost sums differ: reported {reported}, stored {stored_sum}")
    figures = {
        "batches": sum(ledger.batches for ledger in ledgers),
        "replayed batches": sum(ledger.replayed_batches for ledger in ledgers),
        "accepted (acknowledged, stored: true or success)": len(accepted),
        "accepted without cost (unknown model)": sum(1 for _, cost in accepted.values() if cost is None),
        "replays checked (same eventId back)": sum(ledger.replays_checked for ledger in ledgers),
        "invalid (stored: false)": len(invalid),
        "stored": len(stored),
        "stored twice": duplicates,
        "sum of reported totalCostUsd": str(reported),
        "sum of stored usageCost": str(stored_sum),
        "retried requests": sum(ledger.retries for ledger in ledgers),
        "batches committed before their answer was lost": sum(ledger.committed_before_lost_answer
                                                               for ledger in ledgers),
        "non-200 answers": {status: sum(ledger.statuses.get(status, 0) for ledger in ledgers)
                            for status in sorted({s for ledger in ledgers for s in ledger.statuses})},
    }
    return figures, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="base URL of the service")
    parser.add_argument("--key", required=True, help="a secret API key (full or ingest scope for sending; "
                                                     "reading back through the API needs a full key)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--batch", type=int, default=100, help="records per request (1-100)")
    parser.add_argument("--customers", type=int, default=300, help="distinct customers the records name")
    parser.add_argument("--replay-rate", type=float, default=0.05, help="share of batches sent again")
    parser.add_argument("--invalid-rate", type=float, default=0.02, help="share of invalid records")
    parser.add_argument("--unknown-rate", type=float, default=0.03, help="share of records of an unknown model")
    parser.add_argument("--backfill-rate", type=float, default=0.0,
                        help="share of records dated in one of the 12 months before now (back-fills)")
    parser.add_argument("--database-url", help="read the stored events from PostgreSQL instead of the API")
    args = parser.parse_args()

    run = uuid.uuid4().hex[:10]
    queue = multiprocessing.Queue()
    started = time.time()
    deadline = started + args.seconds
    workers = [multiprocessing.Process(target=client_main, args=(args, run, n, deadline, queue))
               for n in range(args.clients)]
    for worker in workers:
        worker.start()
    ledgers = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    elapsed = time.time() - started

    stored = stored_via_database(args, run) if args.database_url else stored_via_api(args, run)
    figures, failures = verify(ledgers, stored)
    print(f"run: soak-{run}, clients: {args.clients}, seconds: {elapsed:.1f}, batch: {args.batch}")
    for name, value in figures.items():
        print(f"{name}: {value}")
    print(f"accepted per second: {figures['accepted (acknowledged, stored: true or success)'] / elapsed:,.0f}")
    if failures:
        print("FAILED:")
        for failure in failures[:50]:
            print(f"  {failure}")
        raise SystemExit(1)
    print("OK: stored events equal the acknowledged records, none twice, cost sums equal")


if __name__ == "__main__":
    main()
