#!/usr/bin/env bash
# `make ha-up` / `make ha-down`: a pg_auto_failover formation on this machine, for development
# and for the failover drill (tests/system/test_failover.py): a monitor and two PostgreSQL 15 nodes
# with pg_cron and pgTAP, the schema deployed by sqitch on the primary.
#
#   scripts/ha.sh up       create what is missing, start what is stopped, print the URLs
#   scripts/ha.sh down     stop every process of the formation and remove its folder
#   scripts/ha.sh url      print the two-host URL of the application login
#   scripts/ha.sh status   pg_autoctl show state
#
# Settings (environment; docs/operations.md "High availability"):
#   HA_DIR           the formation's folder, owned by postgres     (default /tmp/insurance-ha)
#   HA_MONITOR_PORT  the monitor                                   (default 6000)
#   HA_NODE1_PORT    the first node (primary at creation)          (default 6001)
#   HA_NODE2_PORT    the second node (standby at creation)         (default 6002)
#   HA_DATABASE      the application database                      (default insurance)
#   HA_UNHEALTHY_MS  monitor: a node unheard of this long is down  (default 3000)
#   HA_DEMOTE_MS     monitor: wait for a lost primary to demote    (default 3000)
#   HA_BACKUP        1: WAL archived from the primary to a pgBackRest repository in HA_DIR/backup
#                    (default 1 when pgbackrest is installed); HA_STANZA (default insurance-ha)
#
# pg_autoctl refuses to run as root: every pg_autoctl and postgres process runs as the user
# postgres, with its configuration, state and pid files under HA_DIR (XDG_* below), so that
# `down` leaves nothing behind. Nothing here touches the main cluster on port 5432.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

HA_DIR=${HA_DIR:-/tmp/insurance-ha}
HA_MONITOR_PORT=${HA_MONITOR_PORT:-6000}
HA_NODE1_PORT=${HA_NODE1_PORT:-6001}
HA_NODE2_PORT=${HA_NODE2_PORT:-6002}
HA_DATABASE=${HA_DATABASE:-insurance}
HA_UNHEALTHY_MS=${HA_UNHEALTHY_MS:-3000}
HA_DEMOTE_MS=${HA_DEMOTE_MS:-3000}
PG_BIN=/usr/lib/postgresql/15/bin
CRON_DATABASE=postgres
HA_BACKUP=${HA_BACKUP:-$(command -v pgbackrest >/dev/null && echo 1 || echo 0)}
HA_STANZA=${HA_STANZA:-insurance-ha}
BACKUP_CONF=$HA_DIR/pgbackrest.conf

log() { printf '[ha] %s\n' "$*" >&2; }

# A command as postgres, from the formation's folder, with pg_autoctl's files kept under it.
as_postgres() {
  local env=(env -C "$HA_DIR" XDG_RUNTIME_DIR="$HA_DIR/run" XDG_CONFIG_HOME="$HA_DIR/config"
             XDG_DATA_HOME="$HA_DIR/share" PATH="$PG_BIN:/usr/bin:/bin")
  if [ "$(id -un)" = postgres ]; then "${env[@]}" "$@"
  elif [ "$(id -u)" = 0 ]; then runuser -u postgres -- "${env[@]}" "$@"
  else sudo -u postgres -- "${env[@]}" "$@"; fi
}
autoctl() { as_postgres pg_autoctl "$@"; }
# as_postgres for setsid, which runs a program, not a function: this script, re-entered.
if [ "${1:-}" = --as-postgres ]; then shift; as_postgres "$@"; exit; fi
psql_at() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$1" -U postgres -d "$2" "${@:3}"; }

monitor_uri() { autoctl show uri --pgdata "$HA_DIR/monitor" --formation monitor; }
formation_uri() { autoctl show uri --pgdata "$HA_DIR/monitor" --formation default; }

# The application's URL: the formation's two hosts, the primary whichever it is.
app_url() {
  printf 'postgresql://%s@127.0.0.1:%s,127.0.0.1:%s/%s?target_session_attrs=read-write\n' \
    "${1:-insurance_app}" "$HA_NODE1_PORT" "$HA_NODE2_PORT" "$HA_DATABASE"
}

pidfile() { echo "$HA_DIR/run/pg_autoctl$1/pg_autoctl.pid"; }

running() {  # the pg_autoctl service of a data dir is alive (by the pid it wrote; no zombie)
  local pid
  pid=$(head -1 "$(pidfile "$1")" 2>/dev/null) || return 1
  [ -n "$pid" ] && grep -q pg_autoctl "/proc/$pid/cmdline" 2>/dev/null &&
    ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}

start() {  # pg_autoctl run, detached, logging to <dir>.log
  local dir=$1
  running "$dir" && return 0
  log "starting $(basename "$dir")"
  # Two sessions: the outer one takes runuser off this terminal (a later Ctrl-C in it reaches
  # none of the formation); the inner one makes the service lead a process group of its own,
  # which holds its keeper, its postmaster and every backend (the drill kills that group).
  setsid "$ROOT/scripts/ha.sh" --as-postgres setsid pg_autoctl run --pgdata "$dir" >>"$dir.log" 2>&1 </dev/null &
  for _ in $(seq 1 100); do running "$dir" && return 0; sleep 0.2; done
  log "$(basename "$dir") did not start; see $dir.log"; return 1
}

wait_ready() {  # until postgres on the port answers
  for _ in $(seq 1 300); do pg_isready -q -h 127.0.0.1 -p "$1" && return 0; sleep 0.2; done
  log "nothing answers on port $1"; return 1
}

# Until the formation has a primary and a streaming standby (states as pg_autoctl names them).
wait_formation() {
  local settled
  for _ in $(seq 1 600); do
    settled=$(psql_at "$HA_MONITOR_PORT" pg_auto_failover -tA -c \
      "SELECT count(*) FILTER (WHERE reportedstate = 'primary' AND goalstate = 'primary') = 1
          AND count(*) FILTER (WHERE reportedstate = 'secondary' AND goalstate = 'secondary') = 1
         FROM pgautofailover.node" 2>/dev/null || true)
    [ "$settled" = t ] && return 0
    sleep 0.2
  done
  log "the formation did not settle:"; autoctl show state --pgdata "$HA_DIR/monitor" >&2; return 1
}

# pg_cron on every node: the setting travels with the data directory (pg_basebackup copies it).
configure_node() {
  local dir=$1
  if ! grep -q "^include 'postgresql-insurance.conf'" "$dir/postgresql.conf"; then
    as_postgres sh -c "cat > '$dir/postgresql-insurance.conf' <<EOF
# scripts/ha.sh: pg_cron (the minute sweep and the retention job run on the primary)
shared_preload_libraries = 'pg_stat_statements,pg_cron'
cron.database_name = '$CRON_DATABASE'
# Jobs run in background workers, not through a libpq connection to cron.job's nodename and
# nodeport: those are the port of the node that scheduled them, and on one machine the nodes'
# ports differ, so after a failover every job would connect to the lost node.
cron.use_background_workers = on
max_worker_processes = 16
EOF
echo \"include 'postgresql-insurance.conf'\" >> '$dir/postgresql.conf'"
  fi
}

# Continuous archiving from whichever node is primary: one pgBackRest stanza naming both nodes'
# data directories, archive_mode = on on both (a standby archives nothing until it is promoted;
# then it goes on in the same stanza, on its new timeline). Each node's archive_command names
# its own data directory (pgBackRest reads a relative %p against pg1-path). The key and the
# repository live in HA_DIR: this formation is for development and the drills.
write_backup_config() {
  [ "$HA_BACKUP" = 1 ] || return 0
  [ -f "$BACKUP_CONF" ] && return 0
  local key
  key=$(head -c 48 /dev/urandom | base64 | tr -d '/+=\n')
  as_postgres mkdir -p "$HA_DIR/backup" "$HA_DIR/backup-log"
  as_postgres tee "$BACKUP_CONF" >/dev/null <<EOF
# scripts/ha.sh: the formation's WAL archive and backups (docs/operations.md "Backups and restore")
[global]
repo1-path=$HA_DIR/backup
repo1-retention-full=2
repo1-cipher-type=aes-256-cbc
repo1-cipher-pass=$key
compress-type=zst
log-path=$HA_DIR/backup-log
start-fast=y

[$HA_STANZA]
pg1-path=$HA_DIR/node1
pg1-port=$HA_NODE1_PORT
pg1-socket-path=/var/run/postgresql
pg2-path=$HA_DIR/node2
pg2-port=$HA_NODE2_PORT
pg2-socket-path=/var/run/postgresql
EOF
  as_postgres chmod 600 "$BACKUP_CONF"
}

# Rewritten for each node after its creation: a standby's copy of the primary's files names the
# primary's folder.
configure_archiving() {
  local dir=$1
  [ "$HA_BACKUP" = 1 ] || return 0
  as_postgres tee "$dir/postgresql-backup.conf" >/dev/null <<EOF
# scripts/ha.sh: WAL to the formation's pgBackRest stanza from whichever node is primary
archive_mode = on
archive_command = 'pgbackrest --config=$BACKUP_CONF --stanza=$HA_STANZA --pg1-path=$dir archive-push %p'
archive_timeout = 60
EOF
  grep -q "^include_if_exists 'postgresql-backup.conf'" "$dir/postgresql.conf" ||
    echo "include_if_exists 'postgresql-backup.conf'" | as_postgres tee -a "$dir/postgresql.conf" >/dev/null
}

create_stanza() {
  [ "$HA_BACKUP" = 1 ] || return 0
  as_postgres pgbackrest --config="$BACKUP_CONF" --stanza="$HA_STANZA" stanza-create >>"$HA_DIR/backup.log" 2>&1 ||
    { log "pgbackrest stanza-create failed; see $HA_DIR/backup.log"; tail -5 "$HA_DIR/backup.log" >&2; return 1; }
}

create_monitor() {
  [ -f "$HA_DIR/monitor/PG_VERSION" ] && return 0
  log "creating the monitor on port $HA_MONITOR_PORT"
  autoctl create monitor --pgctl "$PG_BIN/pg_ctl" --pgdata "$HA_DIR/monitor" --pgport "$HA_MONITOR_PORT" \
    --hostname 127.0.0.1 --auth trust --no-ssl >>"$HA_DIR/monitor.log" 2>&1
}

# How soon the monitor gives up on a node: the defaults (20 s unhealthy, 30 s demote timeout)
# make a lost machine cost about 50 s of writes. Shorter costs false failovers on a loaded
# host (docs/operations.md "High availability").
tune_monitor() {
  psql_at "$HA_MONITOR_PORT" pg_auto_failover >/dev/null <<SQL
ALTER SYSTEM SET pgautofailover.health_check_period = 1000;
ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000;
ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1;
ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500;
ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = $HA_UNHEALTHY_MS;
ALTER SYSTEM SET pgautofailover.primary_demote_timeout = $HA_DEMOTE_MS;
SELECT pg_reload_conf();
SQL
}

create_node() {
  local name=$1 port=$2 dir=$HA_DIR/$1
  [ -f "$dir/PG_VERSION" ] && return 0
  log "creating $name on port $port"
  autoctl create postgres --pgctl "$PG_BIN/pg_ctl" --pgdata "$dir" --pgport "$port" --name "$name" \
    --hostname 127.0.0.1 --listen 127.0.0.1 --dbname "$HA_DATABASE" --auth trust --no-ssl \
    --monitor "$(monitor_uri)" >>"$dir.log" 2>&1
  # A keeper lost with its machine must not keep a partitioned primary writing longer than the
  # monitor waits before it promotes the other (HA_DEMOTE_MS).
  autoctl config set --pgdata "$dir" timeout.network_partition_timeout "$(( HA_DEMOTE_MS / 1000 > 1 ? HA_DEMOTE_MS / 1000 - 1 : 1 ))" >/dev/null
  configure_node "$dir"
  configure_archiving "$dir"
}

primary_port() {
  psql_at "$HA_MONITOR_PORT" pg_auto_failover -tA -c \
    "SELECT nodeport FROM pgautofailover.node WHERE reportedstate IN ('primary', 'single', 'wait_primary') LIMIT 1"
}

deploy() {
  local port
  port=$(primary_port)
  psql_at "$port" "$CRON_DATABASE" -c "CREATE EXTENSION IF NOT EXISTS pg_cron" 2>&1 | grep -v 'already exists' || true
  psql_at "$port" "$CRON_DATABASE" -tAc "SELECT cron.schedule('purge-cron-history', '17 3 * * *',
    \$\$DELETE FROM cron.job_run_details WHERE end_time < now() - interval '7 days'\$\$)" >/dev/null
  psql_at "$port" "$HA_DATABASE" -c "CREATE EXTENSION IF NOT EXISTS pgtap" 2>&1 | grep -v 'already exists' || true
  log "deploying the schema on the primary (port $port)"
  APP_ENV=${APP_ENV:-development} ADMIN_DATABASE_URL=$(app_url postgres) "$ROOT/.venv/bin/python" -m app migrate >>"$HA_DIR/deploy.log" 2>&1 ||
    { log "sqitch deploy failed; see $HA_DIR/deploy.log"; tail -20 "$HA_DIR/deploy.log" >&2; return 1; }
}

up() {
  if [ ! -d "$HA_DIR" ]; then
    mkdir -p "$HA_DIR/run"
    chmod 700 "$HA_DIR" "$HA_DIR/run"
    [ "$(id -un)" = postgres ] || chown -R postgres: "$HA_DIR" 2>/dev/null || sudo chown -R postgres: "$HA_DIR"
  fi
  create_monitor
  start "$HA_DIR/monitor"
  wait_ready "$HA_MONITOR_PORT"
  tune_monitor
  write_backup_config
  create_node node1 "$HA_NODE1_PORT"
  start "$HA_DIR/node1"
  wait_ready "$HA_NODE1_PORT"
  create_node node2 "$HA_NODE2_PORT"
  start "$HA_DIR/node2"
  wait_formation
  deploy
  create_stanza
  log "formation up in $HA_DIR (monitor $HA_MONITOR_PORT, nodes $HA_NODE1_PORT and $HA_NODE2_PORT)"
  echo "DATABASE_URL=$(app_url)"
  echo "ADMIN_DATABASE_URL=$(app_url postgres)"
  echo "MONITOR_URL=$(monitor_uri)"
  if [ "$HA_BACKUP" = 1 ]; then echo "BACKUP_CONFIG=$BACKUP_CONF"; echo "BACKUP_STANZA=$HA_STANZA"; fi
}

down() {
  [ -d "$HA_DIR" ] || { log "no formation in $HA_DIR"; return 0; }
  local dir pid
  for dir in "$HA_DIR/node2" "$HA_DIR/node1" "$HA_DIR/monitor"; do
    running "$dir" && autoctl stop --pgdata "$dir" >/dev/null 2>&1 || true
  done
  for dir in "$HA_DIR/node2" "$HA_DIR/node1" "$HA_DIR/monitor"; do
    for _ in $(seq 1 100); do running "$dir" || break; sleep 0.2; done
    # What did not stop (a keeper stuck in a restart): the process group of the service, by the
    # pid it wrote, and its postmaster.
    if running "$dir"; then
      pid=$(head -1 "$(pidfile "$dir")")
      kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
    fi
    pid=$(head -1 "$dir/postmaster.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && grep -q postgres "/proc/$pid/cmdline" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$HA_DIR"
  log "formation removed ($HA_DIR)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  url) app_url ;;
  status) autoctl show state --pgdata "$HA_DIR/monitor" ;;
  *) echo "usage: scripts/ha.sh up|down|url|status" >&2; exit 2 ;;
esac
