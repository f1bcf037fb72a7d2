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
echo "[run] API on http://${HOST:-127.0.0.1}:$PORT (GET /healthz, GET /readyz)"
exec .venv/bin/python -m app serve
