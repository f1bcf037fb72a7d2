#!/usr/bin/env bash
# The API reference's viewer (Swagger UI, npm swagger-ui-dist at the version of
# app/apidocs/package-lock.json) into app/apidocs/node_modules (gitignored), which the app serves
# at /docs (app/apidocs/__init__.py). Run by scripts/setup.sh; a second run changes nothing unless
# the lock file changed. --ignore-scripts: swagger-ui-dist's dependency @scarf/scarf reports each
# install to its vendor from a postinstall script; nothing of the viewer needs a script.
set -euo pipefail
cd "$(dirname "$0")/../app/apidocs"

if ! command -v npm >/dev/null; then
  echo "[api-viewer] npm is missing: /docs answers 503 until Node.js 20 or later is installed and this runs again" >&2
  exit 0
fi
stamp=node_modules/.installed-$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "[api-viewer] npm ci in app/apidocs"
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
