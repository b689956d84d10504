#!/usr/bin/env python3
"""Whether one policy costs more than another cell by cell, beyond what the seeds' spread allows
(docs/policy.md, "Cell by cell against Zeus's policy"). A bso-sim replay runs both policies on
the same draws (common random numbers), so each seed is a pair: the interval is a paired
bootstrap over seeds of the ratio of the two policies' summed costs.

Usage: tools/paired-cells.py SIM_OUT DECISIONS [--policy bso] [--peer zeus] [--moved]
                             [--trained] [--level 0.95] [--all]
  SIM_OUT    the --out directory of a bso-sim replay of both policies (its summary.csv, and
             with --change its changes.csv)
  DECISIONS  that replay's --decisions file
  --moved    only the phases after a change that moved the optimum (changes.csv's optimum
             differs from the phase before)
  --trained  only the cells where both policies trained a model in every recurrence of the
             phase (changes.csv's no_model 0; a replay with --change, or `--change 1:time=1`
             for none): a recurrence a policy gives up costs it nothing, so a policy that gives
             up looks cheap (Zeus's on the held-out synthetic workloads)
  --all      list every cell, not only those where POLICY costs more

A cell is a workload on a GPU under one power mode (and profile) in one phase: POLICY's cost
summed over the seeds and the phase's recurrences, over PEER's. Prints the cells where POLICY
costs more, each with its interval and a verdict (beyond: the whole interval is above 1; within
noise: it holds 1), then how many cells there are, in how many POLICY costs more, and in how
many beyond the interval either way. A replay whose jobs move to another GPU is refused.
"""
import argparse
import random
import sys
from collections import defaultdict

import replay

RESAMPLES = 2000


def fail(message):
    print("paired-cells.py: " + message, file=sys.stderr)
    sys.exit(2)


def ratio(a, b):
    return a / b if b > 0 else (1.0 if a == 0 else float("inf"))


def interval(pairs, level, rng):
    """The paired bootstrap's percentile interval, at `level`, of sum(first) / sum(second) over
    the seeds' pairs, resampling seeds."""
    draws = []
    for _ in range(RESAMPLES):
        picked = [pairs[rng.randrange(len(pairs))] for _ in pairs]
        draws.append(ratio(sum(p[0] for p in picked), sum(p[1] for p in picked)))
    draws.sort()
    tail = (1 - level) / 2
    return draws[int(tail * RESAMPLES)], draws[min(RESAMPLES - 1, int((1 - tail) * RESAMPLES))]


def main(argv):
    parser = argparse.ArgumentParser(prog="tools/paired-cells.py", add_help=True)
    parser.add_argument("out")
    parser.add_argument("decisions")
    parser.add_argument("--policy", default="bso")
    parser.add_argument("--peer", default="zeus")
    parser.add_argument("--moved", action="store_true")
    parser.add_argument("--trained", action="store_true")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args(argv[1:])
    if not 0 < args.level < 1:
        fail("--level must lie between 0 and 1")
    if args.policy == args.peer:
        fail("--policy and --peer name the same policy")
    try:
        runs, phases = replay.read(args.out, args.decisions)
    except replay.ReplayError as e:
        fail(str(e))
    # Per cell (the arm less its policy, workload, gpu, phase) and seed, each policy's cost.
    if args.trained and any(p.no_model is None for cell in phases.values() for p in cell):
        fail("--trained needs a replay with --change (changes.csv counts the recurrences "
             "without a model; --change 1:time=1 changes nothing)")
    cost = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    policies = {args.policy: 0, args.peer: 1}
    ran = set()
    # The cells (arm less its policy, workload, gpu, phase) where some policy left a recurrence
    # without a model.
    gave_up = {(arm.partition("/")[2], w, g, p.number)
               for (arm, w, g), cell in phases.items() for p in cell if p.no_model}
    for run in runs:
        policy, _, rest = run.arm.partition("/")
        if policy not in policies:
            continue
        ran.add(policy)
        cell_phases = phases.get((run.arm, run.workload, run.gpu))
        if not cell_phases:
            fail("no summary row for %s on %s under %s" % (run.workload, run.gpu, run.arm))
        phase = replay.phase_of(cell_phases, run.recurrence)
        if args.moved:
            before = [p for p in cell_phases if p.number == phase.number - 1]
            if not before or before[0].optimum == phase.optimum:
                continue
        cell = (rest, run.workload, run.gpu, phase.number)
        if args.trained and cell in gave_up:
            continue
        cost[cell][run.seed][policies[policy]] += run.cost
    # Both policies ran every seed of a cell (a replay of both writes both).
    cells = {cell: [tuple(pair) for _, pair in sorted(seeds.items())]
             for cell, seeds in cost.items()}
    arms = {cell[0] for cell in cells}
    if len(ran) < 2:
        fail("no runs of both %s and %s in %s" % (args.policy, args.peer, args.decisions))
    dearer = beyond = cheaper_beyond = 0
    lines = []
    for cell in sorted(cells):
        pairs = cells[cell]
        r = ratio(sum(p[0] for p in pairs), sum(p[1] for p in pairs))
        # Resampled from the cell's name: a cell's interval does not hang on which others the
        # replay holds.
        rng = random.Random("%s|%s|%s|%d" % cell)
        lo, hi = interval(pairs, args.level, rng) if len(pairs) > 1 else (r, r)
        if len(pairs) < 2:
            verdict = "one seed"
        elif lo > 1:
            verdict = "beyond"
        elif hi < 1:
            verdict = "cheaper beyond"
        else:
            verdict = "within noise"
        dearer += r > 1
        beyond += verdict == "beyond"
        cheaper_beyond += verdict == "cheaper beyond"
        if r > 1 or args.all:
            arm = "" if len(arms) == 1 else " %s" % cell[0]
            lines.append("| %s | %s%s | %d | %.4f | %.4f-%.4f | %s |"
                         % (cell[1], cell[2], arm, cell[3], r, lo, hi, verdict))
    print("| workload | gpu | phase | %s / %s | %g%% interval | verdict |"
          % (args.policy, args.peer, 100 * args.level))
    print("|---|---|---|---|---|---|")
    if lines:
        print("\n".join(lines))
    print()
    print("%d cells: %s costs more in %d, beyond the %g%% interval in %d; less beyond it in %d"
          % (len(cells), args.policy, dearer, 100 * args.level, beyond, cheaper_beyond))


if __name__ == "__main__":
    main(sys.argv)
