#!/usr/bin/env bash
# The npm tools of the partner-client test (tests/test_openapi_clients.py): openapi-typescript,
# openapi-fetch and typescript 5.9 (TypeScript 7 crashed openapi-typescript here), at
# the versions of tests/clients/package-lock.json, into tests/clients/node_modules (gitignored).
# Run by scripts/test.sh; a second run changes nothing unless the lock file changed.
set -euo pipefail
cd "$(dirname "$0")/../tests/clients"

command -v npm >/dev/null || { echo "[node-tools] npm is missing: install Node.js 20 or later" >&2; exit 1; }
stamp=node_modules/.installed-$(sha256sum package-lock.json | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "[node-tools] npm ci in tests/clients"
  npm ci --no-audit --no-fund --loglevel=error
  touch "$stamp"
fi
