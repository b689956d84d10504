#!/bin/bash
# The real-GPU checks of BSO, for a machine with an NVIDIA GPU and PyTorch with CUDA:
# NVML energy against nvidia-smi's power readings, bso gpus, a device probe, real CUDA training
# runs as a recurring job against a live bso-server, power-limit profiling (root only), a real
# out-of-memory under MemoryScaler, and bench/adaptive.py on CUDA.
# Usage: tools/gpu-check.sh BUILD_DIR [OUT_DIR]   (BUILD_DIR holds bso-server, bso, libbso.so)
# STEPS=nvml,train,power,digits,oom,adaptive (any of them, comma-separated) runs only those, to
# fit a short loan of a GPU (nvml alone takes under a minute); by default all run.
set -u
build=$(cd "$1" && pwd); out=${2:-/tmp/bso-gpu-check}; mkdir -p "$out"
here=$(cd "$(dirname "$0")/.." && pwd)
export BSO_LIBRARY=$build/libbso.so PYTHONUNBUFFERED=1 PYTHONPATH=$here/python${PYTHONPATH:+:$PYTHONPATH}
py=${PYTHON:-python3}
step() { echo; echo "=== $*"; }
want() { [ -z "${STEPS:-}" ] || [[ ",$STEPS," == *",$1,"* ]]; }
for s in ${STEPS//,/ }; do
    case $s in nvml | train | power | digits | oom | adaptive) ;;
    *) echo "$0: unknown step '$s' (nvml, train, power, digits, oom, adaptive)" >&2; exit 2 ;;
    esac
done

step "GPU"
nvidia-smi --query-gpu=name,driver_version,power.draw,power.limit,power.min_limit,power.max_limit --format=csv
step "bso gpus"
"$build/bso" gpus

if want nvml; then
step "NVML energy vs nvidia-smi power samples, 15 s of bf16 matrix products"
nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits -lms 100 > "$out/smi-power.txt" &
smi=$!
"$py" - <<'PY'
import time, torch, bso
m = bso.EnergyMonitor()
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
for phase, seconds in (("idle", 5), ("busy", 15)):
    m.begin_window(phase)
    t = time.time()
    while time.time() - t < seconds:
        if phase == "busy":
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()
        else:
            time.sleep(0.1)
    r = m.end_window(phase)
    print("%s: %.2f s, %.1f J, mean %.1f W, source %s" % (phase, r.time, r.total_energy,
          r.total_energy / r.time, r.source))
PY
kill $smi
"$py" - "$out/smi-power.txt" <<'PY'
import sys
w = [float(l) for l in open(sys.argv[1]) if l.strip()]
print("nvidia-smi: %d samples over the 20 s; the top 140 (the busy 14 s) average %.1f W, "
      "the first 40 (idle) %.1f W" % (len(w), sum(sorted(w)[-140:]) / 140, sum(w[:40]) / 40))
PY
fi

if want train || want power || want digits; then
step "bso-server on SQLite"
"$build/bso-server" --database "sqlite:///$out/bso.db" --port 8123 > "$out/server.log" 2>&1 &
srv=$!
sleep 1
export BSO_SERVER_URL=http://127.0.0.1:8123
fi
if want train; then
step "probe + 8 recurrences of the synthetic job on CUDA"
for i in 1 2 3 4 5 6 7 8; do
    extra=""; [ $i = 1 ] && extra=--probe
    "$py" "$here/examples/synthetic/train.py" --job-id synthetic-gpu --seed 1 $extra 2>&1 \
        | grep -v '^INFO' | tail -12
done
"$build/bso" show synthetic-gpu
"$build/bso" probe synthetic-gpu
fi

if want power; then
step "power limits: libbso's tuner on the synthetic model (width 4096, batch 1024), 5 limits"
"$py" - <<'PY'
import json, sys, time, torch, torch.nn as nn, bso
sys.path.insert(0, "examples/synthetic")
import train as T
(xt, yt), _ = T.data(200_000, "cuda")
net = T.model(4096, 4, "cuda")
opt = torch.optim.Adam(net.parameters(), lr=1e-4)
m = bso.EnergyMonitor()
tuner = bso.PowerTuner(m, eta=0.5)
print("limits", tuner.limits, "state", tuner.start(), tuner.message)
state, t0, steps = "profiling", time.time(), 0
while state == "profiling" and time.time() - t0 < 120:
    idx = torch.randint(0, len(yt), (1024,), device="cuda")
    opt.zero_grad(set_to_none=True)
    nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
    opt.step()
    torch.cuda.synchronize()
    state = tuner.step(1024)
    steps += 1
print("state", state, "after", steps, "steps,", round(time.time() - t0, 1), "s")
print(json.dumps(tuner.result(), indent=1))
tuner.close()
PY
nvidia-smi --query-gpu=power.limit --format=csv
step "optimize_power through the server: 2 recurrences at 1M samples, width 4096"
for i in 1 2; do
    "$py" "$here/examples/synthetic/train.py" --job-id synthetic-power --seed 1 --optimize-power \
        --samples 1000000 --width 4096 --max-epochs 6 2>&1 | tail -5
done
nvidia-smi --query-gpu=power.limit --format=csv
"$build/bso" show synthetic-power
fi

if want digits; then
step "digits example on CUDA, 3 recurrences"
for i in 1 2 3; do
    "$py" "$here/examples/digits/train.py" --job-id digits-gpu --device cuda 2>&1 | tail -2
done
fi
[ -n "${srv:-}" ] && { kill $srv; wait $srv 2>/dev/null; }

if want oom; then
step "a real out-of-memory under MemoryScaler (process capped at 4 GiB)"
"$py" "$here/tools/gpu-memory-check.py"
fi
if want adaptive; then
step "fixed against changing batch sizes on CUDA (bench/adaptive.py, 5 seeds)"
"$py" "$here/bench/adaptive.py" --device cuda --seeds 5
fi
echo "gpu-check done"
