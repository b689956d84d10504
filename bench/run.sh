#!/bin/bash
# Runs bso-bench against a fresh bso-server (embedded SQLite in a temporary directory) RUNS times
# and prints the median of each figure. Usage:
#   bench/run.sh [--runs N] [SERVER OPTIONS...] -- [BSO-BENCH OPTIONS...]
# e.g. bench/run.sh --threads 8 -- --concurrency 32 --duration 10
# Binaries come from BUILD (default build/release). SERVER_PRELOAD is preloaded into the server
# (e.g. build/release/libbso-slow-fsync.so, with BSO_SLOW_FSYNC_US). DB_TEMPLATE is a database
# each run starts from a copy of (e.g. one made by build/release/bso-bench-fill).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/release}
RUNS=3
SERVER_ARGS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    if [ "$1" = "--runs" ]; then RUNS=$2; shift 2; else SERVER_ARGS+=("$1"); shift; fi
done
[ $# -gt 0 ] && shift
BENCH_ARGS=("$@")
PORT=${PORT:-$((18100 + RANDOM % 1000))}
results=()
steals=()
for ((i = 1; i <= RUNS; i++)); do
    dir=$(mktemp -d /tmp/bso-bench.XXXXXX)
    [ -n "${DB_TEMPLATE:-}" ] && cp "$DB_TEMPLATE" "$dir/bso.db"
    env ${SERVER_PRELOAD:+LD_PRELOAD=$SERVER_PRELOAD} \
        "$BUILD/bso-server" --port "$PORT" --database "sqlite:///$dir/bso.db" --log-level warn \
        "${SERVER_ARGS[@]}" &
    pid=$!
    for _ in $(seq 50); do
        curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break
        sleep 0.1
    done
    read -r _ u n s idle w irq sirq steal _ < <(grep '^cpu ' /proc/stat)
    results+=("$("$BUILD/bso-bench" --url "http://127.0.0.1:$PORT" --server-pid "$pid" --json \
        "${BENCH_ARGS[@]}")")
    # The share of the run the hypervisor gave the machine's CPUs to someone else.
    read -r _ u2 n2 s2 idle2 w2 irq2 sirq2 steal2 _ < <(grep '^cpu ' /proc/stat)
    total=$(((u2 + n2 + s2 + idle2 + w2 + irq2 + sirq2 + steal2) - (u + n + s + idle + w + irq + sirq + steal)))
    steals+=("$((100 * (steal2 - steal) / (total > 0 ? total : 1)))")
    kill "$pid"
    wait "$pid" || true
    rm -rf "$dir"
done
printf '%s\n' "${results[@]}" | python3 bench/median.py
echo "CPU steal of each run (%): ${steals[*]}"
