#!/usr/bin/env bash
# Spend-cap hook for a developer's coding agent: run it before every tool call (for Claude Code, as a
# PreToolUse hook). It asks the billing service whether this developer may spend more on AI tools now.
#
#   exit 0  go ahead
#   exit 2  refused: an enforce cap is reached or cooling off; the reason is printed on stderr
#
# It fails open: when the service cannot be reached or answers an error, it prints a warning on stderr and
# exits 0, so an outage of the billing service never stops anyone's work.
#
# At most once per SVC_HEARTBEAT_SECONDS it also reports this machine as armed
# (POST /v1/control/devices/heartbeat), which is what spend coverage counts.
#
# Environment:
#   SVC_API_URL             the service origin, e.g. https://billing.example.com (required)
#   SVC_API_KEY             a secret key; an ingest-only key is enough (required)
#   SVC_DEVELOPER           the developer's email, as sent in usage records (default: git config user.email)
#   SVC_DEVICE_ID           this machine's id (default: hostname)
#   SVC_HEARTBEAT_SECONDS   seconds between heartbeats (default 3600; 0 sends none)
#   SVC_TIMEOUT             seconds to wait for the service (default 5)
set -u

warn() { echo "coding-agent-hook: warning: $*; the tool call is allowed" >&2; }
json_string() { printf '"%s"' "$(printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g')"; }

api_url=${SVC_API_URL:-}
api_key=${SVC_API_KEY:-}
developer=${SVC_DEVELOPER:-$(git config user.email 2>/dev/null || true)}
device_id=${SVC_DEVICE_ID:-$(hostname)}
heartbeat_every=${SVC_HEARTBEAT_SECONDS:-3600}
timeout=${SVC_TIMEOUT:-5}

if [ -z "$api_url" ] || [ -z "$api_key" ] || [ -z "$developer" ]; then
  warn "set SVC_API_URL, SVC_API_KEY and SVC_DEVELOPER (or git user.email) to enable spend caps"
  exit 0
fi
api_url=${api_url%/}

heartbeat_due() {
  [ "$heartbeat_every" -gt 0 ] || return 1
  stamp_file="${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/svc-coding-agent-hook/last-heartbeat"
  last=$(cat "$stamp_file" 2>/dev/null || echo 0)
  [ $(( $(date +%s) - last )) -ge "$heartbeat_every" ]
}

if heartbeat_due; then
  body="{\"customerExternalId\":$(json_string "$developer"),\"deviceId\":$(json_string "$device_id"),\"armed\":true}"
  if curl --silent --fail --max-time "$timeout" -X POST -H "x-api-key: $api_key" \
       -H "Content-Type: application/json" --data "$body" "$api_url/v1/control/devices/heartbeat" >/dev/null; then
    mkdir -p "$(dirname "$stamp_file")" && date +%s >"$stamp_file"
  fi
fi

if ! response=$(curl --silent --show-error --max-time "$timeout" --get -H "x-api-key: $api_key" \
                  --data-urlencode "customerExternalId=$developer" --write-out '\n%{http_code}' \
                  "$api_url/v1/control/check" 2>&1); then
  warn "the spend check could not reach $api_url (${response##*$'\n'})"
  exit 0
fi
status=${response##*$'\n'}
answer=${response%$'\n'*}
if [ "$status" != 200 ]; then
  warn "the spend check answered HTTP $status: $answer"
  exit 0
fi
if printf '%s' "$answer" | grep -Eq '"allowed"[[:space:]]*:[[:space:]]*false'; then
  reason=$(printf '%s' "$answer" | sed -n 's/.*"reason"[[:space:]]*:[[:space:]]*"\(\([^"\\]\|\\.\)*\)".*/\1/p')
  echo "Refused by the AI tool spend cap: ${reason:-an enforce cap is reached}" >&2
  exit 2
fi
exit 0
