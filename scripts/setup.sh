#!/usr/bin/env bash
# Idempotent machine setup, run by `make run` and `make test`.
# A second run changes nothing: each step checks before it acts.
set -euo pipefail
cd "$(dirname "$0")/.."

PG_VERSION=15
PG_CLUSTER=main
PG_CONF=/etc/postgresql/$PG_VERSION/$PG_CLUSTER/postgresql.conf
CRON_DATABASE=${CRON_DATABASE:-postgres}
APT_PACKAGES=(postgresql-$PG_VERSION postgresql-$PG_VERSION-cron postgresql-$PG_VERSION-pgtap pgtap sqitch libdbd-pg-perl
              chromium pgbouncer  # pgbouncer: make test runs a part of the suite through it
              postgresql-$PG_VERSION-auto-failover pg-auto-failover-cli  # make ha-up and the failover drill
              pgbackrest)  # backups, point-in-time restore and the backup drill (python -m app backup)

log() { printf '[setup] %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. Debian packages: only when one is missing, so a warm machine stays fast.
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  as_root apt-get update -qq
  as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. A running PostgreSQL 15 cluster.
if ! pg_lsclusters -h 2>/dev/null | awk '{print $1" "$2}' | grep -q "^$PG_VERSION $PG_CLUSTER$"; then
  log "creating cluster $PG_VERSION/$PG_CLUSTER"
  as_root pg_createcluster "$PG_VERSION" "$PG_CLUSTER" --port 5432
fi

# 3. pg_cron: preload it and name its database; restart only when a setting changed.
conf_dir=/etc/postgresql/$PG_VERSION/$PG_CLUSTER/conf.d
as_root mkdir -p "$conf_dir"
want="# managed by scripts/setup.sh
shared_preload_libraries = 'pg_cron'
cron.database_name = '$CRON_DATABASE'"
if [ "$(cat "$conf_dir/pg_cron.conf" 2>/dev/null)" != "$want" ]; then
  log "configuring pg_cron (database $CRON_DATABASE)"
  printf '%s\n' "$want" | as_root tee "$conf_dir/pg_cron.conf" >/dev/null
  grep -q "^include_dir = 'conf.d'" "$PG_CONF" || echo "include_dir = 'conf.d'" | as_root tee -a "$PG_CONF" >/dev/null
  as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" "$PG_CLUSTER" restart
fi
if ! pg_lsclusters -h | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $4}' | grep -q online; then
  log "starting PostgreSQL $PG_VERSION/$PG_CLUSTER"
  as_root pg_ctlcluster --skip-systemctl-redirect "$PG_VERSION" "$PG_CLUSTER" start
fi
for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
pg_isready -q -h 127.0.0.1 -p 5432 || { log "PostgreSQL does not answer on 127.0.0.1:5432"; exit 1; }

psql_admin() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres "$@"; }
psql_admin -d "$CRON_DATABASE" -c "CREATE EXTENSION IF NOT EXISTS pg_cron" 2>&1 | grep -v 'already exists' || true
# pg_cron's history of this project's jobs is pruned by the migration (insurance_retention_job,
# CRON_HISTORY_RETENTION): one home, deployed with the jobs it prunes, in every cluster.

# 4. The Python environment: rebuilt only when pyproject.toml changed.
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
  log "installing the package with its test extras"
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -e '.[test]'
  rm -f .venv/.installed-*; touch "$stamp"
fi
# 5. The API reference's viewer (/docs): Swagger UI from npm, pinned by app/apidocs/package-lock.json.
scripts/api-viewer.sh
log "ready"
