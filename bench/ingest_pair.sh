#!/usr/bin/env bash
# One ingestion pair in the production shape (docs/performance.md#ingestion), on a fresh database:
# gunicorn (3 sync workers) and a Celery worker of this checkout, Redis as broker and cache, then 5 seconds of
# warm-up and, in turn, the service, the `minimal` baseline and the `executemany` (ledger-shaped) one for
# SECONDS each, each run with the CPU a batch costs split by process. The servers are stopped and the database
# dropped afterwards.
#
#   bench/ingest_pair.sh [service-first|service-last]
#
# ZERO_SETUP=1 measures the zero-setup default instead: `make run`'s shape (3 gunicorn workers on the embedded
# PostgreSQL, on a fresh data directory of its own, no Redis, no worker), both baselines against the same server.
#
#   ADMIN_URL   a PostgreSQL URL on the server to use, to create and drop the database (default: the local
#               server's postgres database)
#   REDIS_URL   the broker and cache (default: redis://127.0.0.1:6379/3)
#   SECONDS_EACH, CLIENTS, PORT  (defaults 20, 4, 8765)
#   SERVICE_ONLY  set: the service alone, no baselines (comparing two builds of the service)
#   BY_SECOND  set: the service's batches also by second of the run (bench/ingest.py --by-second)
#   WEB_CONCURRENCY  gunicorn workers (default 3, as `make run`)
#   VENV  the virtualenv that runs the servers, the load generator and the baselines (default .venv): to
#         compare interpreters, e.g. one made with another python3 and `pip install -r requirements.txt`
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${VENV:-.venv}/bin
if [ -n "${ZERO_SETUP:-}" ] && [ -z "${INSIDE_EMBEDDED:-}" ]; then
  data=var/bench-pair/zero-$$
  status=0
  env -u DATABASE_URL -u REDIS_URL INSIDE_EMBEDDED=1 \
    $bin/python -m config.embedded_database --data "$data" -- bench/ingest_pair.sh "$@" || status=$?
  rm -rf "$data"
  exit $status
fi
order=${1:-service-first}
if [ -n "${INSIDE_EMBEDDED:-}" ]; then
  admin_url=${DATABASE_URL%/*}/postgres
else
  admin_url=${ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}
fi
database=billing_bench_$$
database_url=${admin_url%/*}/$database
seconds=${SECONDS_EACH:-20}
clients=${CLIENTS:-4}
port=${PORT:-8765}
export DATABASE_URL=$database_url DEBUG=0 SECRET_KEY=bench-pair-secret-key-not-for-production SECURE_SSL_REDIRECT=0
[ -z "${INSIDE_EMBEDDED:-}" ] && export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:6379/3}
logs=var/bench-pair
mkdir -p "$logs"

web= worker=
cleanup() {
  [ -n "$web" ] && kill -TERM "$web" 2>/dev/null && wait "$web" 2>/dev/null
  [ -n "$worker" ] && kill -TERM "$worker" 2>/dev/null && wait "$worker" 2>/dev/null
  $bin/python - "$admin_url" "$database" <<'EOF' || true
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as connection:
    connection.execute(f'DROP DATABASE IF EXISTS "{sys.argv[2]}" WITH (FORCE)')
EOF
}
trap cleanup EXIT

$bin/python - "$admin_url" "$database" <<'EOF'
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as connection:
    connection.execute(f'CREATE DATABASE "{sys.argv[2]}"')
EOF
$bin/python manage.py migrate --verbosity 0
$bin/python manage.py load_catalog > /dev/null
key=$($bin/python manage.py create_api_key --org Bench --email bench@example.com --role owner --type secret \
  | grep -o 'svc_sk_[A-Za-z0-9_]*' | head -1)
postmaster=$($bin/python - "$database_url" <<'EOF'
import sys, psycopg
with psycopg.connect(sys.argv[1]) as connection:
    print(connection.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'").fetchone()[0])
EOF
)
postmaster=$(ps -o ppid= -p "$postmaster" | tr -d ' ')

if [ -z "${INSIDE_EMBEDDED:-}" ]; then
  $bin/celery -A config worker --loglevel warning > "$logs/worker.log" 2>&1 &
  worker=$!
fi
$bin/gunicorn config.wsgi:application --bind 127.0.0.1:"$port" --workers "${WEB_CONCURRENCY:-3}" --timeout 120 \
  --config python:config.web_server \
  > "$logs/web.log" 2>&1 &
web=$!
for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && break; sleep 0.2; done

pids=(--web-pid "$web" --postgres-pid "$postmaster" ${worker:+--worker-pid "$worker"})
service() { $bin/python bench/ingest.py --url "http://127.0.0.1:$port" --key "$key" --clients "$clients" --seconds "$1" "${pids[@]}" ${BY_SECOND:+--by-second}; }
baseline() { $bin/python bench/ingest.py --baseline "$1" --database-url "$database_url" --clients "$clients" --seconds "$seconds" "${pids[@]}"; }

echo "== warm-up (load average $(cut -d' ' -f1 /proc/loadavg) at the start)"
service 5 > /dev/null
if [ "$order" = service-first ]; then echo "== service"; service "$seconds"; fi
if [ -z "${SERVICE_ONLY:-}" ]; then
  echo "== minimal"; baseline minimal
  echo "== executemany"; baseline executemany
fi
if [ "$order" = service-last ]; then echo "== service"; service "$seconds"; fi
