#!/usr/bin/env bash
# The whole suite: the lint gate and the unit tier first (no database), then on a fresh
# throwaway database the sqitch round trip, pgTAP and pytest's database tier, the system drills
# and the meta tests. Exits non-zero on any failure and drops the database at the end.
# Tiers (tests/): unit/ (no database, seconds), <surface>/ and test_*.py (the database tier,
# mirroring app/), system/ (drills: upgrade, failover, restarts, make run, walkthrough, memory),
# meta/ (layout, release, docs, architecture, the SQL's catalog and reference).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh

PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432}
export PGHOST PGPORT
DB=insurance_test_$$_$(date +%s)
ADMIN_URL=postgresql://postgres@$PGHOST:$PGPORT/$DB
TARGET=db:pg://postgres@$PGHOST:$PGPORT/$DB
export SQITCH_FULLNAME="${SQITCH_FULLNAME:-CI}" SQITCH_EMAIL="${SQITCH_EMAIL:-ci@insurance.invalid}"

say() { printf '\n==> %s\n' "$*"; }
psql_admin() { psql -X -q -v ON_ERROR_STOP=1 -U postgres "$@"; }
cleanup() {
  # A job that pg_cron keeps for a dropped database would fail every minute.
  psql_admin -d "${CRON_DATABASE:-postgres}" -c \
    "SELECT cron.unschedule(jobid) FROM cron.job WHERE database = '$DB'" >/dev/null 2>&1 || true
  psql_admin -d postgres -c "DROP DATABASE IF EXISTS \"$DB\" WITH (FORCE)" >/dev/null 2>&1 || true
}
trap cleanup EXIT

say "lint (ruff: pyproject.toml [tool.ruff])"
.venv/bin/ruff check .

# The unit tier proves it needs no database: its URLs point at a port where nothing listens.
say "unit tier (tests/unit): no database reachable"
APP_ENV=test DATABASE_URL=postgresql://nobody@127.0.0.1:1/none ADMIN_DATABASE_URL=postgresql://nobody@127.0.0.1:1/none \
  .venv/bin/pytest -q -p no:cacheprovider tests/unit

# What this machine lacks (root, chromium) is left out on purpose, and said so here and in
# pytest's summary; a test that needs it and is not left out fails (tests/conftest.py NEEDS).
lacking=""
if [ "$(id -u)" != 0 ]; then
  lacking+=" and not needs_root"
  say "WARNING: not root: the tests marked needs_root (failover drill, PostgreSQL restarts) DO NOT RUN"
fi
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ] && ! command -v chromium >/dev/null; then
  lacking+=" and not needs_chromium"
  say "WARNING: no chromium: the tests marked needs_chromium (back-office pages, API reference) DO NOT RUN"
fi

say "npm tools of the partner-client test (scripts/node-tools.sh)"
scripts/node-tools.sh

say "Dockerfile lint (hadolint)"
.venv/bin/hadolint Dockerfile docker/postgres.Dockerfile

say "migration lint (squawk, .squawk.toml)"
.venv/bin/squawk sql/deploy/*.sql

say "sqitch: deploy, verify, revert everything, deploy again ($DB)"
psql_admin -d postgres -c "CREATE DATABASE \"$DB\""
# Tests repoint the insurers and quiet the outbox only in a database that says it was made
# for them (tests/throwaway.py), never in a running stack's.
psql_admin -d postgres -c "COMMENT ON DATABASE \"$DB\" IS 'throwaway test database'"
sqitch deploy --verify "$TARGET"
sqitch verify "$TARGET"
sqitch revert -y "$TARGET"
leftover=$(psql -X -tA -U postgres -d "$DB" -c \
  "SELECT string_agg(nspname, ', ') FROM pg_namespace
    WHERE nspname IN ('insurance', 'postsales', 'gateway', 'integrations', 'outbox', 'dashboard', 'webhooks')")
[ -z "$leftover" ] || { echo "revert left schemas behind: $leftover"; exit 1; }
sqitch deploy --verify "$TARGET"

say "pgTAP (pg_prove)"
psql_admin -d "$DB" -c "CREATE EXTENSION IF NOT EXISTS pgtap"
out=$(mktemp)
set +e
pg_prove -U postgres -d "$DB" --ext .sql -r tests/pgtap 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
set -e
grep -q '^Result: PASS' "$out" || { echo "pg_prove did not pass (no tests counts as a failure)"; exit 1; }
[ "$rc" = 0 ] || exit "$rc"

say "pytest"
# pg_prove has checked that the migration registered the minute sweep; pytest's end-to-end
# tests run their own workers with second-long backoffs, and a sweep landing at a minute
# boundary in the middle of one would make its outcome depend on the clock.
psql_admin -d "${CRON_DATABASE:-postgres}" -c \
  "SELECT cron.unschedule(jobid) FROM cron.job WHERE database = '$DB'" >/dev/null 2>&1 || true
export APP_ENV=test
export DATABASE_URL=postgresql://insurance_app@$PGHOST:$PGPORT/$DB
export ADMIN_DATABASE_URL=$ADMIN_URL
if [ $# -eq 0 ]; then
  # Alone and first: it restarts the cluster, which no other test's connections would survive.
  say "reliability: PostgreSQL restarts in the middle of a batch"
  # 5 (nothing collected): every such test was left out above, and said so.
  .venv/bin/pytest -m "restarts_postgres$lacking" || [ $? = 5 ]
  say "pytest: the rest (the unit tier ran above)"
  .venv/bin/pytest -m "not restarts_postgres and not upgrade and not failover and not backup$lacking" --ignore=tests/unit
  # Databases of their own: the newest release deployed from git, filled, HEAD deployed over it;
  # once with data, once under live traffic (prints the longest pause). Skipped before a release.
  say "upgrade: the newest release to HEAD (tests/system/test_upgrade.py)"
  .venv/bin/pytest -m "upgrade$lacking" -p no:cacheprovider tests/system/test_upgrade.py
else
  set +e
  .venv/bin/pytest -m "not restarts_postgres and not failover and not backup$lacking" "$@"
  rc=$?
  set -e
  # 5: no test left (only tests/system/test_failover.py or tests/system/test_backup.py named): the drills below run them.
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || exit "$rc"
fi

# The failover drill on a pg_auto_failover formation of its own (free ports, a folder of /tmp,
# removed at the end): the whole suite, or when tests/system/test_failover.py is named.
if [ $# -eq 0 ] || [[ " $* " == *test_failover* ]]; then
  say "failover drill: a pg_auto_failover formation of its own (tests/system/test_failover.py)"
  .venv/bin/pytest -m "failover$lacking" -p no:cacheprovider tests/system/test_failover.py || [ $? = 5 ]
fi

# The backup drill on a cluster of its own (initdb on a free port, pgBackRest's repository in a
# folder of /tmp, removed at the end): the whole suite, or when tests/system/test_backup.py is named.
if [ $# -eq 0 ] || [[ " $* " == *test_backup* ]]; then
  say "backup drill: archiving, point-in-time restore, lost rows back (tests/system/test_backup.py)"
  .venv/bin/pytest -m "backup$lacking" -p no:cacheprovider tests/system/test_backup.py || [ $? = 5 ]
fi

# The whole suite (make test, or `scripts/test.sh tests`): the routes and the pipeline once
# more through PgBouncer in transaction pooling mode, as production runs them (docs/operations.md
# "Production layout"): no prepared-statement cache, the worker's LISTEN on a direct connection.
if [ $# -eq 0 ] || [ "$*" = tests ]; then
  say "pytest through PgBouncer (transaction pooling): post-sales, gateway, pipeline"
  bouncer_port=$(.venv/bin/python -c 'from tests.conftest import free_port; print(free_port())')
  bouncer_dir=$(mktemp -d)
  trap 'scripts/pgbouncer.sh stop "$bouncer_dir"; rm -rf "$bouncer_dir"; cleanup' EXIT
  scripts/pgbouncer.sh start "$bouncer_port" "$bouncer_dir"
  DATABASE_LISTEN_URL=$DATABASE_URL \
  DATABASE_URL=postgresql://insurance_app@127.0.0.1:$bouncer_port/$DB DB_STATEMENT_CACHE_SIZE=0 \
    .venv/bin/pytest -m "not restarts_postgres$lacking" -p no:cacheprovider -q \
      tests/postsales tests/gateway tests/integrations/test_pipeline.py tests/integrations/test_worker_wakeups.py
fi
