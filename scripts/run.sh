#!/usr/bin/env bash
# `make run`: create the database if needed, deploy the migrations, then start the API, the
# outbox worker and the provider sandbox together (the providers pointed at the sandbox);
# Ctrl-C (or SIGTERM) stops all three.
set -euo pipefail
cd "$(dirname "$0")/.."

# make run is the development stack: say so (serve and worker refuse to guess the mode).
export APP_ENV=${APP_ENV:-development}
export PORT=${PORT:-8000}
export SANDBOX_PORT=${SANDBOX_PORT:-8100}
if [ "${HA:-}" = 1 ]; then
  # The formation of `make ha-up` (created if missing): every URL names both nodes, and the
  # processes follow the primary through a failover (docs/operations.md "High availability").
  urls=$(scripts/ha.sh up)
  eval "$(printf '%s\n' "$urls" | sed -n 's/^\(DATABASE_URL\|ADMIN_DATABASE_URL\)=/export \1=/p')"
  echo "[run] on the pg_auto_failover formation: $DATABASE_URL"
fi
DB=$(.venv/bin/python -c "from app.config import Config; from urllib.parse import urlsplit; print(urlsplit(Config.from_env().admin_database_url).path.lstrip('/'))")
ADMIN_URL=$(.venv/bin/python -c "from app.config import Config; print(Config.from_env().admin_database_url)")
if ! psql -X "$ADMIN_URL" -tAc 'SELECT 1' >/dev/null 2>&1; then
  echo "[run] creating database $DB"
  psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE \"$DB\""
fi
.venv/bin/python -m app migrate

HOST=${HOST:-127.0.0.1}
SANDBOX_URL=http://127.0.0.1:$SANDBOX_PORT
export PUBLIC_BASE_URL=${PUBLIC_BASE_URL:-http://$HOST:$PORT}
export CHAT_WEBHOOK_URL=${CHAT_WEBHOOK_URL:-$SANDBOX_URL/chat/webhook}
# One set of secrets for every process it starts (the worker signs the service-role bearer
# the API verifies). In development the first `Config.from_env()` above wrote them, once, into
# .env.development (mode 0600, git-ignored), which any `python -m app worker` or `serve`
# started by hand beside this one reads too; in another mode the ones the environment lacks
# are drawn here, once. Production sets them all (.env.example lists them).
eval "$(.venv/bin/python -c 'import os, shlex
from app.config import SECRET_NAMES, Config
config = Config.from_env()
for name in SECRET_NAMES:
    if not os.environ.get(name):
        print(f"export {name}={shlex.quote(config.secret(name))}")')"
if [ "$APP_ENV" = development ]; then
  echo "[run] development secrets in ${DEV_ENV_FILE:-.env.development}"
fi

pids=()
stop() {
  trap - INT TERM EXIT
  echo "[run] stopping"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait
}
# A signal stops everything and ends the script (a Ctrl-C during start-up must not let it go on
# to start the worker); a normal end stops what is left.
trap 'stop; exit 130' INT TERM
trap stop EXIT

.venv/bin/python -m app sandbox --port "$SANDBOX_PORT" & pids+=($!)
.venv/bin/python -m app serve & pids+=($!)
for _ in $(seq 100); do
  curl -fs "$SANDBOX_URL/_sandbox/health" >/dev/null 2>&1 && break
  sleep 0.1
done
.venv/bin/python -m app sandbox configure "$SANDBOX_URL" >/dev/null
.venv/bin/python -m app worker & pids+=($!)

echo "[run] API      on $PUBLIC_BASE_URL (GET /healthz, GET /readyz, GET /openapi.json)"
echo "[run] sandbox  on $SANDBOX_URL (GET /_sandbox/requests, /_sandbox/stats; chat sink /chat/webhook)"
echo "[run] mail     caught on smtp://127.0.0.1:${SANDBOX_SMTP_PORT:-1025} (the OTP mail): GET $SANDBOX_URL/_sandbox/mail"
echo "[run] back-office on $PUBLIC_BASE_URL/backoffice; metrics on $PUBLIC_BASE_URL/metrics"
echo "[run] worker   delivering the outbox of database $DB to $PUBLIC_BASE_URL"
echo "[run] Ctrl-C stops all three"
# The first process to exit stops the others.
wait -n "${pids[@]}" || true
