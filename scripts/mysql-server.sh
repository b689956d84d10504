#!/bin/sh
# A throwaway MariaDB server for tests (reading a Zeus database kept in MySQL), on loopback and a
# free port, with grant tables off (any user, no password): its data is thrown away.
#   scripts/mysql-server.sh start DIR   make and start one, print its URL (mysql://root@...)
#   scripts/mysql-server.sh stop DIR    stop it and remove its files
# The data lives in a directory of its own under /tmp, which the server's user can reach
# whatever the permissions of DIR's parents. Run as root, the server runs as `mysql`.
set -eu
cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] ||
    { echo "mysql-server: MariaDB is not installed (apt-get install mariadb-server)" >&2; exit 1; }
user_opt=""
[ "$(id -u)" -ne 0 ] || user_opt="--user=mysql"
case $cmd in
start)
    mkdir -p "$dir"
    data=$(mktemp -d /tmp/bso-mariadb.XXXXXX)
    echo "$data" >"$dir/data"
    [ "$(id -u)" -ne 0 ] || chown mysql "$data"
    mariadb-install-db --no-defaults $user_opt --datadir="$data/db" --skip-test-db \
        >"$data/install.log" 2>&1 || { cat "$data/install.log" >&2; exit 1; }
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    /usr/sbin/mariadbd --no-defaults $user_opt --datadir="$data/db" --port="$port" \
        --bind-address=127.0.0.1 --socket="$data/sock" --pid-file="$data/pid" \
        --skip-grant-tables --skip-log-bin --innodb-flush-log-at-trx-commit=0 \
        >"$data/server.log" 2>&1 &
    for _ in $(seq 1 100); do
        mariadb-admin --no-defaults -h127.0.0.1 -P"$port" -uroot ping >/dev/null 2>&1 && break
        sleep 0.2
    done
    mariadb-admin --no-defaults -h127.0.0.1 -P"$port" -uroot ping >/dev/null 2>&1 ||
        { cat "$data/server.log" >&2; exit 1; }
    echo "mysql://root@127.0.0.1:$port"
    ;;
stop)
    if [ -f "$dir/data" ]; then
        data=$(cat "$dir/data")
        [ ! -f "$data/pid" ] || kill "$(cat "$data/pid")" 2>/dev/null || true
        for _ in $(seq 1 50); do [ -f "$data/pid" ] || break; sleep 0.1; done
        rm -rf "$data"
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
