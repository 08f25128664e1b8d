#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1 for the test suite: start them when they are
# installed but stopped, install them from Debian's packages when missing. Also install Debian's Chromium
# when missing: the portal's browser tests drive /usr/bin/chromium through Playwright, which never
# downloads a browser of its own. Idempotent.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq "$@" >/dev/null
}

pg_answers() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }

ensure_postgres() {
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "services: installing PostgreSQL"
    apt_install postgresql postgresql-client
  fi
  if ! pg_answers; then
    echo "services: starting PostgreSQL"
    for version in $(ls /etc/postgresql); do
      as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
    done
    for _ in $(seq 1 30); do pg_answers && break; sleep 1; done
  fi
  pg_answers || { echo "services: PostgreSQL does not answer on 127.0.0.1:5432" >&2; exit 1; }
  # The suite connects as postgres/postgres over TCP; give the role that password when it needs one.
  if ! PGPASSWORD=postgres psql -h 127.0.0.1 -U postgres -d postgres -Atqc 'select 1' >/dev/null 2>&1; then
    as_root su postgres -c "psql -Atqc \"ALTER USER postgres PASSWORD 'postgres'\"" >/dev/null
  fi
}

redis_answers() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

ensure_redis() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "services: installing Redis"
    apt_install redis-server
  fi
  if ! redis_answers; then
    echo "services: starting Redis"
    mkdir -p /tmp/redis-test
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no --dir /tmp/redis-test \
      --logfile /tmp/redis-test/redis.log
    for _ in $(seq 1 30); do redis_answers && break; sleep 0.5; done
  fi
  redis_answers || { echo "services: Redis does not answer on 127.0.0.1:6379" >&2; exit 1; }
}

ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    echo "services: installing Chromium"
    apt_install chromium
  fi
}

ensure_postgres
ensure_redis
ensure_chromium
