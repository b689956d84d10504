#!/bin/bash
# A recurring job that moves to new hardware, with real training against a live bso-server
# (#18 §3): examples/synthetic/train.py recurs on the CPU (the old hardware), then moves to the
# GPU twice over, as a fresh job and as a job started from the CPU job (transfer_from), run for
# run on the same draws. Each GPU job probes the device first, in a process of its own (as
# docs/policy.md advises; PROBE=with-first-run probes in the first run's process, as the run in
# "A move in real training" did). A sweep of every batch size on the GPU (two initialisations)
# gives the oracle the two are judged against.
# Usage: tools/gpu-transfer-check.sh BUILD_DIR [OUT_DIR] [GPU_RUNS]   (default 6)
# WIDTH, SAMPLES (default 512 and 200000), CPU_SECONDS (time for the CPU job, default 180),
# DEVICE (default cuda) and TARGET (default: the highest the sweep finds most sizes reaching)
# shrink it to a smoke test on a machine without a GPU. SWEEP names the sweep.json of an earlier
# run to use instead of sweeping again; SWEEP_EPOCHS (default 10) shortens the sweep (it took
# four minutes on an H200, the whole check about ten at the defaults; SWEEP_EPOCHS=4 and
# CPU_SECONDS=90 should bring it to about seven). tools/bundle-binaries.sh packs BUILD_DIR for a GPU
# machine without this build's packages. The CPU job's energy is RAPL's where the machine has it,
# else an estimate at CPU_WATTS (default 150).
set -u
build=$(cd "$1" && pwd); out=${2:-/tmp/bso-transfer-check}; runs=${3:-6}
mkdir -p "$out" && rm -f "$out"/bso.db* "$out"/train.log  # new jobs each time
here=$(cd "$(dirname "$0")/.." && pwd)
export BSO_LIBRARY=$build/libbso.so PYTHONUNBUFFERED=1 PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
"$py" -c "import torch" 2> /dev/null || {
    echo "$0: $py cannot import torch (set PYTHON to a Python that has PyTorch)" >&2
    exit 2
}
export WIDTH=${WIDTH:-512} SAMPLES=${SAMPLES:-200000} DEVICE=${DEVICE:-cuda}
cpu_seconds=${CPU_SECONDS:-180}
step() { echo; echo "=== $* ($(date +%T))"; }

if [ -n "${SWEEP:-}" ]; then
    cp "$SWEEP" "$out/sweep.json"
else
step "sweep on $DEVICE: every batch size from two initialisations, to ${SWEEP_EPOCHS:-10} epochs"
"$py" - "$here/examples/synthetic" "$out/sweep.json" <<'PY' || exit 1
import json, os, sys, torch, bso
sys.path.insert(0, sys.argv[1])
import train as T
dev, width, samples = os.environ["DEVICE"], int(os.environ["WIDTH"]), int(os.environ["SAMPLES"])
sweep_epochs = int(os.environ.get("SWEEP_EPOCHS", "10"))
(xt, yt), (xv, yv) = T.data(samples, dev)
m = bso.EnergyMonitor()
runs = []
for seed in (1, 2):
    for b in T.BATCH_SIZES:
        torch.manual_seed(seed)
        net = T.model(width, 4, dev)
        opt = T.optimizer(net, b)
        epochs = []
        for e in range(sweep_epochs):
            m.begin_window("epoch")
            T.train_epoch(net, opt, xt, yt, b)
            acc = T.accuracy(net, xv, yv)
            r = m.end_window("epoch")
            epochs.append(dict(accuracy=acc, time=r.time, energy=r.total_energy))
        runs.append(dict(seed=seed, batch_size=b, epochs=epochs))
        print("seed %d batch %4d: %s  (%.2f s, %.0f J per epoch)" % (
            seed, b, " ".join("%.3f" % e["accuracy"] for e in epochs),
            sum(e["time"] for e in epochs) / sweep_epochs,
            sum(e["energy"] for e in epochs) / sweep_epochs))
# The highest target of these that most sizes reach within 8 epochs (the sweep's, if fewer)
# from both initialisations.
def reached(run, target):
    return next((i + 1 for i, e in enumerate(run["epochs"]) if e["accuracy"] >= target), None)
target = next((t for t in (0.88, 0.86, 0.84, 0.82) if sum(
    1 for r in runs if (reached(r, t) or 99) <= 8) >= len(runs) * 4 // 7), 0.80)
json.dump(dict(target=target, max_power=m.max_power_w, source=m.source, runs=runs),
          open(sys.argv[2], "w"))
print("target %.2f, max_power %.0f W, energy from %s" % (target, m.max_power_w, m.source))
PY
fi
[ -n "${TARGET:-}" ] && "$py" -c 'import json, sys; d = json.load(open(sys.argv[1])); d["target"] = float(sys.argv[2]); json.dump(d, open(sys.argv[1], "w"))' "$out/sweep.json" "$TARGET"
target=$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["target"])' "$out/sweep.json")
echo "target accuracy $target"

"$build/bso-server" --database "sqlite:///$out/bso.db" --port 8125 > "$out/server.log" 2>&1 &
srv=$!
trap 'kill $srv 2>/dev/null' EXIT
sleep 1
export BSO_SERVER_URL=http://127.0.0.1:8125
train() { # job id, then train.py's extra arguments; prints the run on one line
    local job=$1; shift
    timeout "${RUN_SECONDS:-0}" "$py" "$here/examples/synthetic/train.py" --job-id "$job" --seed 1 --width "$WIDTH" \
        --samples "$SAMPLES" --target "$target" --max-epochs 10 "$@" 2>>"$out/train.log" |
        "$py" -c 'import json, sys; r = json.loads(sys.stdin.read()); print("%-14s trial %2d  batch %4d  epochs %2s  %-7s  %6.1f s  %7.0f J (%s)  %s" % (r["job_id"], r["trial"], r["batch_size"], r.get("epochs"), "reached" if r["converged"] else "stopped", r["time"], r["energy"], r["source"], r.get("error", "")[:80]))'
}

step "the old hardware: the job on the CPU for ${cpu_seconds} s"
start=$(date +%s)
while [ $(($(date +%s) - start)) -lt "$cpu_seconds" ]; do
    RUN_SECONDS=$((cpu_seconds + 60 - ($(date +%s) - start))) CUDA_VISIBLE_DEVICES=-1 \
        BSO_ASSUMED_POWER_W=${CPU_WATTS:-150} train transfer-cpu --device cpu || break
done
"$build/bso" show transfer-cpu | grep -E "best|^ +[0-9]+ "

step "the move to $DEVICE: a fresh job and one started from the CPU job, $runs runs each"
probe() { # job id, then train.py's extra arguments: the device profile, in a process of its own
    "$py" "$here/examples/synthetic/train.py" --job-id "$1" --seed 1 --width "$WIDTH" --samples "$SAMPLES" \
        --target "$target" --max-epochs 10 --probe-only "${@:2}" 2>>"$out/train.log" >/dev/null
}
# PROBE=with-first-run probes in the first run's process instead (a warm first run).
first=""; [ "${PROBE:-}" = with-first-run ] && first=--probe
[ -n "$first" ] || { probe transfer-fresh --device "$DEVICE"; probe transfer-moved --device "$DEVICE" --transfer-from transfer-cpu; }
for i in $(seq "$runs"); do
    probe_arg=""; [ "$i" = 1 ] && probe_arg=$first
    train transfer-fresh --device "$DEVICE" $probe_arg
    train transfer-moved --device "$DEVICE" $probe_arg --transfer-from transfer-cpu
done
for job in transfer-cpu transfer-fresh transfer-moved; do
    "$build/bso" show "$job" > "$out/$job.show.txt"
    "$py" -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' \
        "$BSO_SERVER_URL/jobs/$job/trials?limit=100" > "$out/$job.trials.json"
done
"$build/bso" show transfer-moved | grep -E "best|transfer|^ +[0-9]+ "

step "cost per trained model against the sweep's oracle (eta 0.5)"
"$py" - "$out" <<'PY'
import json, sys
out = sys.argv[1]
sweep = json.load(open(out + "/sweep.json"))
target, maxp = sweep["target"], sweep["max_power"]
cost = {}
for r in sweep["runs"]:
    k = next((i + 1 for i, e in enumerate(r["epochs"]) if e["accuracy"] >= target), None)
    if k is not None:
        e = r["epochs"][:k]
        cost.setdefault(r["batch_size"], []).append(
            0.5 * sum(x["energy"] for x in e) + 0.5 * maxp * sum(x["time"] for x in e))
mean = {b: sum(c) / len(c) for b, c in cost.items() if len(c) == 2}
best = min(mean, key=mean.get)
print("sweep: " + ", ".join("%d: %.0f" % (b, mean[b]) for b in sorted(mean)) +
      "; oracle %d at %.0f" % (best, mean[best]))
for job in ("transfer-fresh", "transfer-moved"):
    trials = json.load(open("%s/%s.trials.json" % (out, job)))["trials"]
    total = sum(t["cost"] or 0 for t in trials)  # stopped runs' costs count too
    models = sum(1 for t in trials if t["converged"])
    sizes = " ".join("%d%s" % (t["batch_size"], "" if t["converged"] else "x") for t in trials)
    print("%-14s %d runs, %d trained models, %.0f per model = %.3f x the oracle; sizes %s" % (
        job, len(trials), models, total / max(models, 1), total / max(models, 1) / mean[best],
        sizes))
PY
echo "transfer check done"
