#!/bin/bash
# A recurring job whose data drifts, with real CUDA training against a live bso-server: the
# synthetic example (examples/synthetic/train.py) recurs on clean data, then on data whose
# training labels got noisier (the same target takes more epochs), then on twice the data (every
# epoch costs twice as much). Prints each run and what the server concluded (`bso show`: the
# change it found, the best size). The noise level is picked first by a short calibration
# without the server, so that the target stays reachable in max_epochs (NOISE=F skips it).
# Usage: tools/gpu-drift-check.sh BUILD_DIR [OUT_DIR] [RUNS_PER_PHASE]   (default 6)
# WIDTH and SAMPLES (default 2048 and 200000) shrink the model and data for a smoke test on a CPU.
set -u
build=$(cd "$1" && pwd); out=${2:-/tmp/bso-drift-check}; runs=${3:-6}
mkdir -p "$out" && rm -f "$out"/bso.db*  # a new job each time
here=$(cd "$(dirname "$0")/.." && pwd)
export BSO_LIBRARY=$build/libbso.so PYTHONUNBUFFERED=1 PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
"$py" -c "import torch" 2> /dev/null || {
    echo "$0: $py cannot import torch (set PYTHON to a Python that has PyTorch)" >&2
    exit 2
}
export WIDTH=${WIDTH:-2048} SAMPLES=${SAMPLES:-200000}
step() { echo; echo "=== $* ($(date +%T))"; }

noise=${NOISE:-}  # set: skip the calibration
[ -n "$noise" ] || step "calibration: validation accuracy per epoch at 512 and 2048, by label noise (no server)"
[ -n "$noise" ] || noise=$("$py" - "$here/examples/synthetic" <<'PY'
import os, sys, torch
sys.path.insert(0, sys.argv[1])
import train as T
dev = "cuda" if torch.cuda.is_available() else "cpu"
width, samples = int(os.environ["WIDTH"]), int(os.environ["SAMPLES"])
target, limit = 0.88, 8
best = None
for noise in (0.0, 0.1, 0.2):
    (xt, yt), (xv, yv) = T.data(samples, dev, noise)
    reached = {}
    for b in (512, 2048):
        torch.manual_seed(1)
        net = T.model(width, 4, dev)
        opt = T.optimizer(net, b)
        accs = []
        for epoch in range(10):
            T.train_epoch(net, opt, xt, yt, b)
            accs.append(T.accuracy(net, xv, yv))
        reached[b] = next((e + 1 for e, a in enumerate(accs) if a >= target), None)
        print("noise %.1f batch %4d: %s -> %s epochs" % (noise, b, " ".join("%.3f" % a for a in accs),
              reached[b]), file=sys.stderr)
    if noise == 0:
        clean = reached
    elif reached[512] and clean[512] and clean[512] * 1.5 <= reached[512] <= limit:
        best = noise  # the noisiest at which 512 still reaches in time, with epochs well up
print(best if best is not None else 0.1)
if best is None:
    print("no noise level fits; 0.1", file=sys.stderr)
PY
)
echo "label noise for the drift: $noise"

"$build/bso-server" --database "sqlite:///$out/bso.db" --port 8124 > "$out/server.log" 2>&1 &
srv=$!
sleep 1
export BSO_SERVER_URL=http://127.0.0.1:8124
phase() { # name, then train.py's extra arguments
    local name=$1; shift
    step "$name: $runs recurrences"
    for i in $(seq "$runs"); do
        "$py" "$here/examples/synthetic/train.py" --job-id drift-gpu --seed 1 --width "$WIDTH" \
            --samples "$SAMPLES" "$@" 2>/dev/null |
            "$py" -c 'import json, sys; r = json.loads(sys.stdin.read()); print("trial %2d  batch %4d  epochs %2s  %-9s  %6.1f s  %7.0f J  %s" % (r["trial"], r["batch_size"], r.get("epochs"), "reached" if r["converged"] else "stopped", r["time"], r["energy"], r.get("error", "")[:90]))'
    done
    "$build/bso" show drift-gpu | grep -E "best|chang|out of reach|^ +[0-9]+ "
}
phase "clean data"
phase "noisier labels ($noise)" --label-noise "$noise"
phase "twice the data, as noisy" --label-noise "$noise" --samples $((2 * SAMPLES))
kill $srv; wait $srv 2>/dev/null
echo "drift check done"
