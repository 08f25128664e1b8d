"""Print the Redis URL for this checkout's test run: a database number of the local Redis that no other
checkout's run is using.

The suite empties its Redis database between tests (FLUSHDB), so two runs sharing one would wipe each
other's counters mid-test. Numbers 1-15 are handed out by claims kept in database 0 (which the suite never
uses): `billing:test-redis-db:N` holds the path of the checkout that claimed N and expires after
CLAIM_SECONDS, longer than any run. A checkout starts from the number its path hashes to and takes the
first that is free or already its own, renewing the claim, so it keeps the same number from run to run.

    .venv/bin/python scripts/test_redis.py [redis://127.0.0.1:6379]
"""
import hashlib
import os
import sys

import redis

NUMBERS = range(1, 16)  # Redis's default 16 databases, less database 0 (the claims, and anyone's default)
CLAIM_SECONDS = 3 * 60 * 60


def claim(server: str, checkout: str) -> int:
    claims = redis.Redis.from_url(f"{server}/0", socket_timeout=5)
    start = int(hashlib.sha256(checkout.encode()).hexdigest(), 16) % len(NUMBERS)
    order = [NUMBERS[(start + step) % len(NUMBERS)] for step in range(len(NUMBERS))]
    for number in order:
        key = f"billing:test-redis-db:{number}"
        if claims.set(key, checkout, nx=True, ex=CLAIM_SECONDS) or claims.get(key) == checkout.encode():
            claims.expire(key, CLAIM_SECONDS)
            return number
    print(f"test_redis: every database number of {server} is claimed by another checkout; "
          f"sharing {order[0]}", file=sys.stderr)
    return order[0]


def main() -> None:
    server = (sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379").rstrip("/")
    checkout = os.path.realpath(os.path.join(os.path.dirname(__file__), ".."))
    print(f"{server}/{claim(server, checkout)}")


if __name__ == "__main__":
    main()
