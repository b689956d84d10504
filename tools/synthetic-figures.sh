#!/bin/bash
# The held-out synthetic figures of docs/policy.md ("Held-out synthetic workloads"): for each
# seed, tools/synthetic-traces.py makes 24 workloads, bso-sim replays them on both of their GPUs
# under the bso policy (N 50, seeds 1-20), and this prints one row: the geometric mean of the
# ratio to the oracle over the 48 workload x GPU cells, the worst cell, and the recurrences
# whose first five launches trained no model (from a change that changes nothing, which makes
# bso-sim count them).
# Usage: tools/synthetic-figures.sh [BUILD_DIR] [SEED...]   (default build/release, 202 303)
#   KNEE=K in the environment bends the traces' time per epoch otherwise (synthetic-traces.py's
#   KNEE; default 1, the shape the bso policy assumes between measured sizes).
set -eu
build=${1:-build/release}
shift || true
seeds=${*:-202 303}
here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x "$build/bso-sim" ]; then
    echo "$0: no bso-sim in $build (build it first: cmake --build --preset release)" >&2
    exit 2
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "| traces seed | bso geomean | worst cell | no model |"
echo "|---|---|---|---|"
for seed in $seeds; do
    python3 "$here/synthetic-traces.py" "$out/traces" 24 "$seed" "${KNEE:-1}" > /dev/null
    "$build/bso-sim" --traces "$out/traces" --workloads "$out/traces/workloads.csv" \
        --gpu g1,g2 --policy bso --seeds 1-20 --recurrences 50 --change "1:time=1.0" \
        --out "$out/sim" > /dev/null
    python3 - "$seed" "$out/sim/summary.csv" "$out/sim/changes.csv" <<'PY'
import csv, math, sys
seed, summary, changes = sys.argv[1:]
cells = {(r["workload"], r["gpu"]): float(r["ratio_vs_oracle"])
         for r in csv.DictReader(open(summary)) if r["policy"] == "bso"}
geo = math.exp(sum(math.log(v) for v in cells.values()) / len(cells))
worst = max(cells, key=cells.get)
no_model = sum(int(r["no_model"]) for r in csv.DictReader(open(changes))
               if r["policy"] == "bso")
print("| %s | %.4f | %.3f (%s/%s) | %d |" % (seed, geo, cells[worst], worst[0], worst[1],
                                            no_model))
PY
    rm -rf "$out/traces" "$out/sim"
done
