#!/usr/bin/env python3
"""How well the bso policy's two ways of guessing an unmeasured size's cost per epoch from two
measured sizes either side of it do on the traces (docs/policy.md, "Cost per epoch between
measured sizes").

Usage: tools/interpolation-error.py [TRACES_DIR] [ETA]
  (default, or an empty TRACES_DIR: BSO_TRACES, else ../shared/traces; eta 0.5)

For every workload and GPU in the traces, at the highest power limit, each size's cost per
epoch (eta x energy + (1 - eta) x max power x time) is guessed from every pair of sizes around
it at most three sizes apart, leaving it out, by both ways:
  log:      linear in log(batch size), log(cost);
  per step: cost = per_sample + per_step / b through both, where neither part comes out
            negative; otherwise as log.
Prints, per workload and GPU, the number of guesses, the root mean square and the mean of
log(guess / measured) of each, and on the last line on how many pairs per step erred less.
"""
import csv
import math
import os
import sys
from collections import defaultdict
from itertools import combinations


def costs_per_epoch(traces, gpu, eta):
    rows = defaultdict(dict)
    with open(os.path.join(traces, "summary_power_%s.csv" % gpu)) as f:
        for r in csv.DictReader(f):
            limit = int(r["power_limit"])
            rows[r["dataset"]].setdefault(int(r["batch_size"]), {})[limit] = (
                float(r["time_per_epoch"]), float(r["average_power"]))
    out = {}
    for workload, sizes in rows.items():
        max_power = max(max(limits) for limits in sizes.values())
        out[workload] = {}
        for b, limits in sizes.items():
            seconds, watts = limits[max(limits)]
            out[workload][b] = eta * seconds * watts + (1 - eta) * max_power * seconds
    return out


def by_log(b0, c0, b1, c1, b):
    f = (math.log2(b) - math.log2(b0)) / (math.log2(b1) - math.log2(b0))
    return math.exp(math.log(c0) * (1 - f) + math.log(c1) * f)


def by_parts(b0, c0, b1, c1, b):
    per_step = (c0 - c1) / (1 / b0 - 1 / b1)
    per_sample = c1 - per_step / b1
    if per_step < 0 or per_sample < 0:
        return by_log(b0, c0, b1, c1, b)
    return per_sample + per_step / b


def main():
    usage = "usage: tools/interpolation-error.py [TRACES_DIR] [ETA]"
    if len(sys.argv) > 3:
        sys.exit(usage)
    traces = (sys.argv[1] if len(sys.argv) > 1 and sys.argv[1]
              else os.environ.get("BSO_TRACES", "../shared/traces"))
    try:
        eta = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
    except ValueError:
        eta = float("nan")
    if not 0 <= eta <= 1:  # nan too
        sys.exit("interpolation-error: ETA must be a number in [0, 1]\n" + usage)
    try:
        gpus = sorted(name[len("summary_power_"):-len(".csv")] for name in os.listdir(traces)
                      if name.startswith("summary_power_") and name.endswith(".csv"))
    except OSError as e:
        sys.exit("interpolation-error: cannot read the traces in %s: %s\n%s" % (
            traces, e.strerror, usage))
    if not gpus:
        sys.exit("interpolation-error: no summary_power_*.csv in %s\n%s" % (traces, usage))
    print("%-6s %-14s %5s %10s %10s %10s %10s" % ("gpu", "workload", "n", "log rms",
                                                   "log mean", "step rms", "step mean"))
    better = pairs = 0
    for gpu in gpus:
        for workload, cost in sorted(costs_per_epoch(traces, gpu, eta).items()):
            sizes = sorted(cost)
            err = {"log": [], "step": []}
            for i, j, k in combinations(range(len(sizes)), 3):
                if k - i > 3:
                    continue
                b0, b, b1 = sizes[i], sizes[j], sizes[k]
                for name, guess in (("log", by_log), ("step", by_parts)):
                    err[name].append(math.log(guess(b0, cost[b0], b1, cost[b1], b) / cost[b]))
            if not err["log"]:
                continue
            rms = {n: math.sqrt(sum(e * e for e in v) / len(v)) for n, v in err.items()}
            mean = {n: sum(v) / len(v) for n, v in err.items()}
            print("%-6s %-14s %5d %10.4f %+10.4f %10.4f %+10.4f" % (
                gpu, workload, len(err["log"]), rms["log"], mean["log"], rms["step"],
                mean["step"]))
            pairs += 1
            better += rms["step"] < rms["log"]
    print("per step erred less on %d of %d workload/GPU pairs (eta %g)" % (better, pairs, eta))


if __name__ == "__main__":
    main()
