"""A training loop on the fake NVML's GPU, for test_power.py: BatchSizeOptimizer with
optimize_power, 100 steps of 10 ms per epoch, the target reached at epoch 2.

Each step reports the work that the fake's scripted step time at the present limit makes of
the time that really passed, so the measured throughput follows the script on a loaded machine.

    power_train.py URL JOB_ID normal|raise|hang|short

raise: an exception in the middle of profiling; hang: prints PROFILING during profiling and
waits to be killed; short: one epoch of 30 steps reaches the target, before every limit is
profiled. At the end it prints a JSON line: the batch size, the run's power limit,
whether it profiled, and the limits the GPU was seen at.
"""
import ctypes
import json
import logging
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import bso  # noqa: E402

url, job_id, mode = sys.argv[1:4]
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
fake = ctypes.CDLL(os.environ["BSO_NVML_LIBRARY"])
fake.bso_fake_nvml_step_s.restype = ctypes.c_double
fake.bso_fake_nvml_step_s.argtypes = [ctypes.c_uint]


def limit_now():
    """The fake driver's limit of GPU 0 in W, or None before any change."""
    try:
        with open(os.environ["BSO_FAKE_NVML_STATE"]) as f:
            return int(f.read().split()[1]) / 1000
    except (OSError, IndexError):
        return None


opt = bso.BatchSizeOptimizer(
    bso.EnergyMonitor(), url,
    bso.JobSpec(job_id=job_id, job_id_prefix="pw", batch_sizes=[64], default_batch_size=64,
                target_metric=0.9, max_epochs=5),
    optimize_power=True, power_options=dict(warmup_s=0.03, window_s=0.12, min_steps=3))
bs = opt.get_batch_size()
opt.on_train_begin()
seen = set()
steps = 30 if mode == "short" else 100
reach = 1 if mode == "short" else 2
for epoch in range(1, 6):
    last = time.monotonic()
    for step in range(steps):
        time.sleep(0.01)
        now = time.monotonic()
        opt.on_step(bs * (now - last) / fake.bso_fake_nvml_step_s(0))
        last = now
        if limit_now() is not None:
            seen.add(limit_now())
        if epoch == 1 and step == 20 and mode == "raise":
            raise RuntimeError("the loss diverged")
        if epoch == 1 and step == 20 and mode == "hang":
            print("PROFILING", flush=True)
            time.sleep(600)
    opt.on_evaluate(0.95 if epoch == reach else 0.5)
    if opt.training_finished:
        break
print(json.dumps({"batch_size": bs, "power_limit": opt.power_limit,
                  "profiled": opt.power_profile is not None, "seen": sorted(seen),
                  "measured": len((opt.power_profile or {}).get("measurements", []))}))
