#!/usr/bin/env bash
# The whole suite on a fresh throwaway database: the sqitch round trip, pgTAP, pytest.
# Exits non-zero on any failure and drops the database at the end.
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

say "npm tools of the partner-client test (scripts/node-tools.sh)"
scripts/node-tools.sh

say "Dockerfile lint (hadolint)"
.venv/bin/hadolint Dockerfile docker/postgres.Dockerfile

say "migration lint (squawk, .squawk.toml)"
.venv/bin/squawk sql/deploy/*.sql

say "sqitch: deploy, verify, revert everything, deploy again ($DB)"
psql_admin -d postgres -c "CREATE DATABASE \"$DB\""
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
  .venv/bin/pytest -m restarts_postgres
  say "pytest: the rest"
  .venv/bin/pytest -m "not restarts_postgres and not upgrade and not failover and not backup"
  # Databases of their own: the newest release deployed from git, filled, HEAD deployed over it;
  # once with data, once under live traffic (prints the longest pause). Skipped before a release.
  say "upgrade: the newest release to HEAD (tests/test_upgrade.py)"
  .venv/bin/pytest -m upgrade -p no:cacheprovider tests/test_upgrade.py
else
  set +e
  .venv/bin/pytest -m "not restarts_postgres and not failover and not backup" "$@"
  rc=$?
  set -e
  # 5: no test left (only tests/test_failover.py or tests/test_backup.py named): the drills below run them.
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || exit "$rc"
fi

# The failover drill on a pg_auto_failover formation of its own (free ports, a folder of /tmp,
# removed at the end): the whole suite, or when tests/test_failover.py is named.
if [ $# -eq 0 ] || [[ " $* " == *test_failover* ]]; then
  say "failover drill: a pg_auto_failover formation of its own (tests/test_failover.py)"
  .venv/bin/pytest -m failover -p no:cacheprovider tests/test_failover.py
fi

# The backup drill on a cluster of its own (initdb on a free port, pgBackRest's repository in a
# folder of /tmp, removed at the end): the whole suite, or when tests/test_backup.py is named.
if [ $# -eq 0 ] || [[ " $* " == *test_backup* ]]; then
  say "backup drill: archiving, point-in-time restore, lost rows back (tests/test_backup.py)"
  .venv/bin/pytest -m backup -p no:cacheprovider tests/test_backup.py
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
    .venv/bin/pytest -m "not restarts_postgres" -p no:cacheprovider -q \
      tests/postsales tests/gateway tests/integrations/test_pipeline.py tests/integrations/test_worker_wakeups.py
fi
