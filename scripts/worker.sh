#!/usr/bin/env bash
# `make worker`: a Celery worker with the beat scheduler embedded, started again whenever it exits on its own.
# A worker can stop for good when its broker goes away under it (Celery logs "Unrecoverable error" and exits);
# follow-up work (the rollup, credit-pool alerts, jobs, webhooks) would then wait until a person noticed. This
# loop restarts it after a pause that grows from 1 to 30 seconds while it keeps failing, and resets once a worker
# has run for a minute. SIGTERM or SIGINT stops the worker and the loop (a warm shutdown: tasks in hand finish or,
# with acks_late, go back to the queue).
#   WORKER_COMMAND  the command to supervise (default: the Celery worker of `make worker`)
set -uo pipefail
cd "$(dirname "$0")/.."
command=${WORKER_COMMAND:-".venv/bin/celery -A config worker --beat --loglevel info"}
child=
stopping=0
stop() {
  stopping=1
  [ -n "$child" ] && kill -TERM "$child" 2>/dev/null
}
trap stop TERM INT
pause=1
while :; do
  started=$(date +%s)
  $command &
  child=$!
  wait "$child"
  status=$?
  # `wait` returns early when a trapped signal arrives: wait for the child's own exit.
  while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done
  [ "$stopping" = 1 ] && exit 0
  [ $(( $(date +%s) - started )) -ge 60 ] && pause=1
  echo "worker: exited with status $status; starting it again in ${pause}s" >&2
  sleep "$pause" & wait $!
  [ "$stopping" = 1 ] && exit 0
  pause=$(( pause * 2 > 30 ? 30 : pause * 2 ))
done
