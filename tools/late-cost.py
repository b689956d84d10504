#!/usr/bin/env python3
"""How often a policy is still far from the oracle late in a job's life: a geometric mean over
jobs hides the few a policy holds on a dear size for good (docs/policy.md, "Late in a job's
life").

Usage: tools/late-cost.py SIM_OUT DECISIONS [LAST] [WORST]
  SIM_OUT    the --out directory of a bso-sim replay (its summary.csv, and with --change its
             changes.csv)
  DECISIONS  that replay's --decisions file
  LAST       how many of each job's last recurrences to weigh (default 20)
  WORST      how many of the dearest jobs to list (default 10)

For each arm (policy/power..., as bso-sim names it) prints how many jobs (a workload on a GPU
under one seed) paid more than 1.1, 1.2 and 1.3 times the oracle's expected cost over their
last LAST recurrences, then the WORST dearest jobs with the sizes they ran then. With --change
each recurrence is weighed against the oracle of its phase, and recurrences in a phase where no
size reaches the target are left out (a job with only those is not counted); a replay whose
jobs move to another GPU (R:gpu=NAME) is refused, as its jobs change GPU on the way.
"""
import math
import sys
from collections import Counter, defaultdict

import replay

THRESHOLDS = (1.1, 1.2, 1.3)


def fail(message):
    print("late-cost.py: " + message, file=sys.stderr)
    sys.exit(2)


def main(argv):
    if len(argv) < 3 or len(argv) > 5:
        fail("usage: tools/late-cost.py SIM_OUT DECISIONS [LAST] [WORST]")
    out, decisions = argv[1], argv[2]
    try:
        last = int(argv[3]) if len(argv) > 3 else 20
        worst = int(argv[4]) if len(argv) > 4 else 10
    except ValueError:
        fail("LAST and WORST are whole numbers")
    if last < 1 or worst < 0:
        fail("LAST must be at least 1 and WORST at least 0")
    try:
        rows, phases = replay.read(out, decisions)
    except replay.ReplayError as e:
        fail(str(e))
    final = max(run.recurrence for run in rows)
    if last > final:
        fail("the jobs had %d recurrences, fewer than LAST (%d)" % (final, last))
    first = final - last + 1  # the window: recurrences first..final
    cost = defaultdict(Counter)  # per job, per recurrence in the window
    sizes = defaultdict(Counter)
    for run in rows:
        job = run[:4]
        if run.recurrence >= first:
            cost[job][run.recurrence] += run.cost
            if run.outcome == "reached":
                sizes[job][run.batch_size] += 1
    ratio = {}
    for job, spent in cost.items():
        cell = phases.get(job[:3])
        if not cell:
            fail("no summary row for %s on %s under %s" % (job[1], job[2], job[0]))
        # Each recurrence's oracle: that of the last phase begun by it; left out where none.
        oracle = {rec: replay.phase_of(cell, rec).oracle for rec in range(first, final + 1)}
        weighed = [rec for rec, o in oracle.items() if math.isfinite(o)]
        if weighed:
            ratio[job] = (sum(spent[rec] for rec in weighed) /
                          sum(oracle[rec] for rec in weighed))
    print("| arm | jobs | " + " | ".join("over %.1fx" % t for t in THRESHOLDS) + " |")
    print("|---|---|" + "---|" * len(THRESHOLDS))
    for arm in sorted({job[0] for job in ratio}):
        values = [v for job, v in ratio.items() if job[0] == arm]
        print("| %s | %d | %s |" % (arm, len(values),
                                    " | ".join(str(sum(v > t for v in values))
                                               for t in THRESHOLDS)))
    dearest = sorted(ratio, key=ratio.get, reverse=True)[:worst]
    if dearest:
        print()
        print("dearest over the last %d recurrences:" % last)
    for job in dearest:
        ran = ", ".join("%s x%d" % (b, n) for b, n in sizes[job].most_common(3))
        print("  %-14s %-6s %-12s seed %-4d %.3f  (%s)" % (job[1], job[2], job[0], job[3],
                                                           ratio[job], ran))


if __name__ == "__main__":
    main(sys.argv)
