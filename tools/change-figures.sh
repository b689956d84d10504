#!/bin/bash
# The change figures of docs/policy.md ("When the job changes", "Moving a job to other
# hardware"): bso-sim replays every workload on both GPUs under the zeus and bso policies
# through a grid of changes (epochs x factor at, at and below, at and above the optimum, from
# each change point), and this prints one row per scenario (the phase after the
# change: geometric mean and worst ratio to that phase's oracle, the geometric mean over the
# cells whose optimum the change moved, cells where bso cost more than zeus (all, and those
# whose optimum moved), recurrences that trained no model in 5 launches); then, paired over the
# seeds (tools/paired-cells.py), each cell where the optimum moved and bso cost more than zeus,
# with its 95% interval; then the stationary figures.
# Usage: tools/change-figures.sh [BUILD_DIR] [SEEDS] [BSO_SIM_ARGS]
#   (default build/release, 1-20, none; e.g. "--declare-changes yes" replays the user telling
#   the server of each change, docs/policy.md "When the user knows the job changed")
# The grid's change points and factors are BSO_CHANGE_POINTS (default "10 25 40") and
# BSO_CHANGE_FACTORS (default "1.3 1.6 2.0"): other values replay a grid the policy was not
# developed on (docs/policy.md, "Off the grid").
set -eu
build=${1:-build/release}
seeds=${2:-1-20}
extra=${3:-} # split into words on purpose: several bso-sim arguments
points=${BSO_CHANGE_POINTS:-10 25 40}
factors=${BSO_CHANGE_FACTORS:-1.3 1.6 2.0}
for v in $points $factors; do
    if ! [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
        echo "change-figures.sh: '$v' in BSO_CHANGE_POINTS or BSO_CHANGE_FACTORS is not a number" >&2
        exit 2
    fi
done
# Checked here too, before the table begins: bso-sim would refuse it only at that row.
for v in $points; do
    if ! [[ $v =~ ^[1-9][0-9]*$ ]]; then
        echo "change-figures.sh: '$v' in BSO_CHANGE_POINTS is not a recurrence (a whole number from 1)" >&2
        exit 2
    fi
done
traces=${BSO_TRACES:-../shared/traces}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
here=$(dirname "$0")
# paired CHANGE: appends to $out/paired.md the cells of the last replay where the optimum moved
# and bso cost more than zeus, and to $out/counts its summary line.
paired() {
    python3 "$here/paired-cells.py" "$out" "$out/decisions.csv" --moved > "$out/cells"
    grep '^| ' "$out/cells" | grep -v '^| workload' | sed "s/^|/| $1 |/" >> "$out/paired.md" || true
    grep ' cells: ' "$out/cells" >> "$out/counts"
}
touch "$out/paired.md" "$out/counts"
summarize() {
    python3 - "$1" "$2" <<'PY'
import csv, math, sys, collections
# Phases where no size reaches the target have no oracle (ratio nan): left out.
every = list(csv.DictReader(open(sys.argv[2])))
rows = [r for r in every
        if r["phase"] != "0" and math.isfinite(float(r["ratio_vs_oracle"]))]
# The size of least expected cost before each phase: where it moved, the change moved the
# optimum (the issue's targets are for those cells).
before = {(r["workload"], r["gpu"], r["policy"], r["move"], int(r["phase"])): r["optimum"]
          for r in every}
def moved(r):
    return before[(r["workload"], r["gpu"], r["policy"], r["move"], int(r["phase"]) - 1)] != r["optimum"]
cells = collections.defaultdict(dict)
for r in rows:
    cells[(r["policy"], r["move"])][(r["workload"], r["gpu"], r["phase"])] = r
def geo(v): return math.exp(sum(math.log(float(r["ratio_vs_oracle"])) for r in v) / len(v))
keys = sorted(cells)
zeus = cells.get(("zeus", "transfer" if ("zeus", "transfer") in cells else ""), {})
for pol, move in keys:
    if pol != "bso":
        continue
    b = cells[(pol, move)]
    def costlier(k, r):
        return k in zeus and float(r["ratio_vs_oracle"]) > float(zeus[k]["ratio_vs_oracle"]) + 1e-9
    worse = sum(1 for k, r in b.items() if costlier(k, r))
    worse_moved = sum(1 for k, r in b.items() if costlier(k, r) and moved(r))
    worst = max(b.items(), key=lambda kv: float(kv[1]["ratio_vs_oracle"]))
    name = sys.argv[1] + (" (%s)" % move if move else "")
    m = [r for r in b.values() if moved(r)]
    print("| %s | %.4f | %.4f | %s | %.4f (%s/%s) | %d of %d (%d of %d) | %d / %d |" % (
        name, geo(zeus.values()) if zeus else float("nan"), geo(b.values()),
        "%.4f (%d)" % (geo(m), len(m)) if m else "-",
        float(worst[1]["ratio_vs_oracle"]), worst[0][0], worst[0][1], worse, len(b),
        worse_moved, len(m),
        sum(int(r["no_model"]) for r in zeus.values()), sum(int(r["no_model"]) for r in b.values())))
PY
}
echo "| change | zeus | bso | bso where the optimum moved (cells) | bso worst | bso > zeus (where it moved) | no model (zeus / bso) |"
echo "|---|---|---|---|---|---|---|"
for kind in "<=opt" ">=opt" "opt"; do
    for factor in $factors; do
        for r in $points; do
            c="$r:epochs=$factor@$kind"
            "$build/bso-sim" --traces "$traces" --gpu v100,a40 --policy zeus,bso --seeds "$seeds" \
                --recurrences 60 --change "$c" $extra --out "$out" \
                --decisions "$out/decisions.csv" > /dev/null
            summarize "\`$c\`" "$out/changes.csv"
            paired "\`$c\`"
        done
    done
done
for c in "25:time=1.5" "25:epochs=1.5"; do
    "$build/bso-sim" --traces "$traces" --gpu v100,a40 --policy zeus,bso --seeds "$seeds" \
        --recurrences 60 --change "$c" $extra --out "$out" --decisions "$out/decisions.csv" \
        > /dev/null
    summarize "\`$c\` (every size)" "$out/changes.csv"
    paired "\`$c\`"
done
for pair in "v100 a40" "a40 v100"; do
    set -- $pair
    "$build/bso-sim" --traces "$traces" --gpu "$1" --policy zeus,bso --seeds "$seeds" \
        --recurrences 60 --change "20:gpu=$2" --move fresh,transfer --out "$out" > /dev/null
    summarize "\`20:gpu=$2\` from $1" "$out/changes.csv"
done
echo
echo "where the optimum moved and bso cost more than zeus, paired over the seeds:"
echo "| change | workload | gpu | phase | bso / zeus | 95% interval | verdict |"
echo "|---|---|---|---|---|---|---|"
cat "$out/paired.md"
awk '{ cells += $1; dearer += $7; beyond += $13; less += $NF }
     END { printf "%d cells: bso costs more in %d, beyond the 95%% interval in %d; less beyond it in %d\n",
           cells, dearer, beyond, less }' "$out/counts"
echo
echo "stationary (N 50, geometric mean vs oracle, max / jit):"
"$build/bso-sim" --traces "$traces" --gpu v100,a40 --policy zeus,bso --power max,jit \
    --recurrences 50 --seeds "$seeds" --out "$out" | grep geomean
