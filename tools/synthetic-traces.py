#!/usr/bin/env python3
"""Synthetic training traces in the format of shared/traces, for checking the policy on
workloads it was not developed on (docs/policy.md, "Held-out synthetic workloads").

Usage: tools/synthetic-traces.py OUT_DIR N SEED [KNEE]

Writes N workloads (syn0 .. syn<N-1>) on two made-up GPUs, g1 (max power 250 W) and g2
(300 W), to OUT_DIR: summary_train.csv, summary_power_g1.csv, summary_power_g2.csv and
workloads.csv (for bso-sim --workloads, with samples_per_epoch for --profile probe). The same
SEED gives the same files.

Each workload draws its shape at random:
* batch sizes: powers of two over 6-10 octaves, sometimes with the sizes halfway (3 * 2^k);
* epochs to the target follow the critical-batch-size law, E_min * (1 + b / B_noise): flat
  below B_noise, growing in proportion above it; five runs per size, log-normal around it
  (a spread of 3-25%, rounded up), some diverge (never reach), and so do many runs at sizes
  below a floor;
* time per epoch falls with batch size as throughput saturates, 1 + (b_half / b)^KNEE: with
  KNEE 1 (the default), (b + b_half) / b, a time per sample and a time per step, as the bso
  policy assumes between measured sizes (docs/policy.md, "Cost per epoch between measured
  sizes"); other KNEEs bend it otherwise (below 1 a slower, above 1 a sharper saturation),
  with every random draw the same; power rises with it; at the lower power limits (80%, 60%) the GPU slows where it drew more;
* the largest sizes may not fit (absent from the power trace);
* max_epochs is either tight (1.3-2x what the cheapest size needs) or generous (2.5-6x);
  the default batch size is a random size that fits.
"""
import math
import os
import random
import sys


def workload(rng, name, train, power, listing, knee):
    lo = rng.choice([2, 3, 4, 5, 6])
    octaves = rng.randint(6, 10)
    sizes = [2 ** e for e in range(lo, lo + octaves + 1)]
    if rng.random() < 0.4:
        sizes += [3 * 2 ** (e - 1) for e in range(lo + 1, lo + octaves + 1)]
    sizes.sort()
    b_noise = 2 ** rng.uniform(lo + 1, lo + octaves - 1)
    e_min = rng.uniform(2, 40)
    spread = rng.uniform(0.03, 0.25)
    diverge = rng.uniform(0, 0.08)
    floor = sizes[0] * 2 ** rng.uniform(-2, 1)
    expected = {}
    for b in sizes:
        mean = e_min * (1 + b / b_noise)
        expected[b] = mean
        for run in range(1, 6):
            if rng.random() < diverge or (b < floor and rng.random() < 0.5):
                epochs = ""
            else:
                epochs = str(max(1, math.ceil(mean * math.exp(rng.gauss(0, spread)))))
            train.write("%s,net,%d,opt,1e-3,%d,0.5,%s\n" % (name, b, run, epochs))
    fits = rng.choice([None, sizes[-2], sizes[-3]])
    for gpu, max_power in (("g1", 250), ("g2", 300)):
        speed = 1.0 if gpu == "g1" else rng.uniform(0.5, 2.0)
        b_half = 2 ** rng.uniform(lo, lo + octaves)
        t0 = rng.uniform(5, 500) / speed
        for b in sizes:
            if fits and b > fits:
                continue
            seconds = t0 * (1 + (b_half / b) ** knee)
            watts = max_power * (0.35 + 0.6 * b / (b + b_half))
            for limit in (max_power, int(max_power * 0.8), int(max_power * 0.6)):
                slower = 1 + 0.8 * max(0, watts - limit) / watts
                power[gpu].write("%s,net,%d,opt,%d,%.4f,%.2f\n" %
                                 (name, b, limit, seconds * slower, min(watts, limit)))
    need = min(expected.values())
    if rng.random() < 0.4:
        max_epochs = max(3, math.ceil(need * rng.uniform(1.3, 2.0)))
    else:
        max_epochs = math.ceil(need * rng.uniform(2.5, 6))
    default = rng.choice([b for b in sizes[1:-1] if not fits or b <= fits])
    # A training set a thousand times the largest batch (no random draw: the traces stay those
    # of the same SEED before this column), for --profile probe's cost.
    listing.write("%s,net,opt,0.5,true,%d,%d,%d\n" % (name, max_epochs, default, 1000 * sizes[-1]))


def main():
    usage = "usage: tools/synthetic-traces.py OUT_DIR N SEED [KNEE]"
    if len(sys.argv) not in (4, 5):
        sys.exit(usage)
    out = sys.argv[1]
    try:
        n, seed = int(sys.argv[2]), int(sys.argv[3])
    except ValueError:
        sys.exit("synthetic-traces: N and SEED must be whole numbers\n" + usage)
    try:
        knee = float(sys.argv[4]) if len(sys.argv) == 5 else 1.0
    except ValueError:
        knee = float("nan")
    if not 0 < knee < 10:  # nan too
        sys.exit("synthetic-traces: KNEE must be a number between 0 and 10\n" + usage)
    if n < 1:
        sys.exit("synthetic-traces: N must be at least 1")
    rng = random.Random(seed)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary_train.csv"), "w") as train, \
            open(os.path.join(out, "summary_power_g1.csv"), "w") as g1, \
            open(os.path.join(out, "summary_power_g2.csv"), "w") as g2, \
            open(os.path.join(out, "workloads.csv"), "w") as listing:
        train.write("dataset,network,batch_size,optimizer,learning_rate,run,target_metric,"
                    "target_epoch\n")
        power = {"g1": g1, "g2": g2}
        for f in power.values():
            f.write("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                    "average_power\n")
        listing.write("dataset,network,optimizer,target_metric,higher_is_better,max_epochs,"
                      "default_batch_size,samples_per_epoch\n")
        for k in range(n):
            workload(rng, "syn%d" % k, train, power, listing, knee)


if __name__ == "__main__":
    main()
