#!/usr/bin/env bash
# What `make test` needs besides PostgreSQL (scripts/test.sh brings that: TEST_DATABASE_URL or an embedded
# server, never a system package): Redis answering on 127.0.0.1:6379, and Debian's Chromium, which the portal's
# browser tests drive through Playwright (it never downloads a browser of its own). Each is looked for before
# anything is done: a Redis that answers is used as it is; one installed but stopped is started; only a missing
# one is installed (from Debian's packages). With TEST_REDIS_URL set, that Redis is the caller's to provide.
# Idempotent.
set -euo pipefail

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq "$@" >/dev/null
}

# A PING over bash's /dev/tcp: no redis-cli needed to ask.
redis_answers() {
  timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/6379 && printf "PING\r\n" >&3 && head -c 5 <&3' 2>/dev/null \
    | grep -q PONG
}

ensure_redis() {
  redis_answers && return
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

[ -n "${TEST_REDIS_URL:-}" ] || ensure_redis
ensure_chromium
