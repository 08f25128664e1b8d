#!/usr/bin/env bash
# `make test` after scripts/services.sh: the suite (or the pytest arguments given) on PostgreSQL and Redis.
#
#   PostgreSQL  TEST_DATABASE_URL when it answers, else an embedded server of this checkout's own under
#               var/test-postgres (config/embedded_database.py: no root, no system package), started for the
#               run and stopped after it. A running server is used as it is, never reconfigured.
#   Redis       TEST_REDIS_URL when set, else a database number of 127.0.0.1:6379 this checkout claims
#               (scripts/test_redis.py).
#
# The test database is test_billing_<hash of the checkout's path> (TEST_DATABASE_NAME overrides it), so two
# checkouts testing at once on one server never share a database, nor a Redis database number.
set -euo pipefail
cd "$(dirname "$0")/.."
checkout_hash=$(printf '%s' "$PWD" | sha256sum | cut -c1-8)
export TEST_DATABASE_NAME=${TEST_DATABASE_NAME:-test_billing_$checkout_hash}
redis_url=${TEST_REDIS_URL:-$(.venv/bin/python scripts/test_redis.py)}
echo "redis: $redis_url"
exec .venv/bin/python -m config.embedded_database --data var/test-postgres --scratch \
  --prefer "${TEST_DATABASE_URL:-}" -- \
  env REDIS_URL="$redis_url" CELERY_TASK_ALWAYS_EAGER=1 EMAIL_FILE_PATH="$PWD/var/test-mail" \
  .venv/bin/python -m pytest "$@"
