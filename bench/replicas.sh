#!/bin/bash
# Throughput of 1, 2 and 3 bso-server replicas on one PostgreSQL (a throwaway cluster from
# scripts/pg-cluster.sh on this machine), RUNS runs each on a fresh database, medians printed.
# Usage: bench/replicas.sh [--runs N] [-- BSO-BENCH OPTIONS]   (default: 64 clients, 200 jobs)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build/release}
RUNS=3
[ "${1:-}" = "--runs" ] && { RUNS=$2; shift 2; }
[ "${1:-}" = "--" ] && shift
BENCH_ARGS=("$@")
[ ${#BENCH_ARGS[@]} -gt 0 ] || BENCH_ARGS=(--duration 10 --concurrency 64 --jobs 200)
cluster=$(mktemp -d /tmp/bso-pg.XXXXXX)
chmod 755 "$cluster"
trap 'scripts/pg-cluster.sh stop "$cluster/pg"; rm -rf "$cluster"' EXIT
url=$(scripts/pg-cluster.sh start "$cluster/pg")
n_db=0
for replicas in 1 2 3; do
    results=()
    for ((i = 1; i <= RUNS; i++)); do
        n_db=$((n_db + 1))
        psql "$url" -qc "CREATE DATABASE run$n_db"
        db="${url%/postgres}/run$n_db"
        "$BUILD/bso-server" migrate --database "$db" >/dev/null
        pids=() urls=()
        for ((r = 0; r < replicas; r++)); do
            port=$((18700 + RANDOM % 1000))
            "$BUILD/bso-server" --port "$port" --database "$db" --log-level warn &
            pids+=($!)
            urls+=(--url "http://127.0.0.1:$port")
        done
        for p in "${urls[@]}"; do
            [ "$p" = --url ] && continue
            for _ in $(seq 50); do curl -sf "$p/readyz" >/dev/null && break; sleep 0.1; done
        done
        results+=("$("$BUILD/bso-bench" "${urls[@]}" --json "${BENCH_ARGS[@]}")")
        kill "${pids[@]}"
        wait "${pids[@]}" 2>/dev/null || true
    done
    echo "== $replicas replica(s)"
    printf '%s\n' "${results[@]}" | python3 bench/median.py
done
