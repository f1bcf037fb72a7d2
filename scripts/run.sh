#!/usr/bin/env bash
# `make run`: create the database if needed, deploy the migrations, serve the API.
set -euo pipefail
cd "$(dirname "$0")/.."

export PORT=${PORT:-8000}
DB=$(.venv/bin/python -c "from app.config import Config; from urllib.parse import urlsplit; print(urlsplit(Config.from_env().admin_database_url).path.lstrip('/'))")
ADMIN_URL=$(.venv/bin/python -c "from app.config import Config; print(Config.from_env().admin_database_url)")
if ! psql -X "$ADMIN_URL" -tAc 'SELECT 1' >/dev/null 2>&1; then
  echo "[run] creating database $DB"
  psql -X -q -h 127.0.0.1 -U postgres -d postgres -c "CREATE DATABASE \"$DB\""
fi
.venv/bin/python -m app migrate
if [ "${APP_ENV:-development}" != production ] && [ "${SANDBOX:-1}" != 0 ]; then
  # The provider sandbox beside the API, and every provider pointed at it (SANDBOX=0: neither).
  export SANDBOX_PORT=${SANDBOX_PORT:-8100} CHAT_WEBHOOK_URL=${CHAT_WEBHOOK_URL:-http://127.0.0.1:${SANDBOX_PORT:-8100}/chat/webhook}
  .venv/bin/python -m app sandbox --port "$SANDBOX_PORT" &
  .venv/bin/python -m app integrations use-sandbox "http://127.0.0.1:$SANDBOX_PORT" >/dev/null
  echo "[run] provider sandbox on http://127.0.0.1:$SANDBOX_PORT (GET /_sandbox/requests)"
fi
echo "[run] API on http://${HOST:-127.0.0.1}:$PORT (GET /healthz, GET /readyz)"
exec .venv/bin/python -m app serve
