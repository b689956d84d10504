#!/bin/sh
# A throwaway PostgreSQL cluster for tests and benchmarks, on loopback and a free port.
#   scripts/pg-cluster.sh start DIR   initdb, start it, print its URL
#   scripts/pg-cluster.sh stop DIR    stop it and remove its files
#   scripts/pg-cluster.sh down DIR    stop it, keeping its data (an outage)
#   scripts/pg-cluster.sh up DIR      start it again on the same port
# DIR only notes where the cluster is: its files (data, socket, log) live in a directory of
# their own under /tmp, which the `postgres` user reaches wherever DIR is (a checkout in a
# 0700 home included). Run as root, the server runs as `postgres` (initdb refuses root).
# fsync is off: the data is thrown away anyway.
set -eu
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop|down|up DIR" >&2; exit 2; }
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$bin" ] || { echo "pg-cluster: PostgreSQL is not installed (apt-get install postgresql)" >&2; exit 1; }
as_pg() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
home() { cat "$dir/home"; }
case $cmd in
start)
    mkdir -p "$dir"
    home=$(mktemp -d /tmp/bso-pg.XXXXXX)
    echo "$home" >"$dir/home"
    [ "$(id -u)" -ne 0 ] || chown postgres "$home"
    as_pg "$bin/initdb" -D "$home/data" -U bso --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
        { cat "$dir/initdb.log" >&2; exit 1; }
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    echo "$port" >"$dir/port"
    "$0" up "$dir"
    echo "postgresql://bso@127.0.0.1:$port/postgres"
    ;;
up)
    as_pg "$bin/pg_ctl" -D "$(home)/data" -l "$(home)/server.log" -w -o \
        "-p $(cat "$dir/port") -k $(home) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=300" \
        start >/dev/null || { cat "$(home)/server.log" >&2; exit 1; }
    ;;
down)
    as_pg "$bin/pg_ctl" -D "$(home)/data" -m fast -w stop >/dev/null
    ;;
stop)
    if [ -f "$dir/home" ]; then
        [ ! -d "$(home)/data" ] || as_pg "$bin/pg_ctl" -D "$(home)/data" -m immediate -w stop >/dev/null 2>&1 || true
        rm -rf "$(home)"
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop|down|up DIR" >&2
    exit 2
    ;;
esac
