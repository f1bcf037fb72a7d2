#!/usr/bin/env bash
# A throwaway PgBouncer (Debian's 1.18) in transaction pooling mode in front of the local
# PostgreSQL, for the tests and the benchmarks:
#
#   scripts/pgbouncer.sh start PORT DIR   # every database of 127.0.0.1:5432 on 127.0.0.1:PORT
#   scripts/pgbouncer.sh stop DIR
#
# DIR holds its configuration, log and pid file. Trust authentication, as the local cluster
# has; the users must still be listed in its auth_file.
set -euo pipefail

action=${1:?start PORT DIR | stop DIR}
case "$action" in
  start)
    port=${2:?port}; dir=${3:?directory}
    mkdir -p "$dir"
    cat >"$dir/pgbouncer.ini" <<EOF
[databases]
* = host=${PGHOST:-127.0.0.1} port=${PGPORT:-5432}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = trust
auth_file = $dir/userlist.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
EOF
    printf '"insurance_app" ""\n"postgres" ""\n' >"$dir/userlist.txt"
    # PgBouncer refuses to run as root: it drops to the postgres user (-u).
    user_flag=()
    if [ "$(id -u)" = 0 ]; then chown -R postgres "$dir"; user_flag=(-u postgres); fi
    /usr/sbin/pgbouncer -d "${user_flag[@]}" "$dir/pgbouncer.ini"
    for _ in $(seq 50); do
      pg_isready -q -h 127.0.0.1 -p "$port" && exit 0
      sleep 0.1
    done
    echo "pgbouncer did not answer on 127.0.0.1:$port" >&2
    cat "$dir/pgbouncer.log" >&2 || true
    exit 1
    ;;
  stop)
    dir=${2:?directory}
    [ -f "$dir/pgbouncer.pid" ] && kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true
    ;;
  *) echo "usage: $0 start PORT DIR | stop DIR" >&2; exit 2 ;;
esac
