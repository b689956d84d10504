#!/usr/bin/env python3
"""How often a policy is still far from the oracle late in a job's life: a geometric mean over
jobs hides the few a policy holds on a dear size for good (docs/policy.md, "Late in a job's
life").

Usage: tools/late-cost.py SIM_OUT DECISIONS [LAST] [WORST]
  SIM_OUT    the --out directory of a bso-sim replay without --change (its summary.csv)
  DECISIONS  that replay's --decisions file
  LAST       how many of each job's last recurrences to weigh (default 20)
  WORST      how many of the dearest jobs to list (default 10)

For each arm (policy/power..., as bso-sim names it) prints how many jobs (a workload on a GPU
under one seed) paid more than 1.1, 1.2 and 1.3 times the oracle's expected cost per recurrence
over their last LAST recurrences, then the WORST dearest jobs with the sizes they ran then.
"""
import csv
import os
import sys
from collections import Counter, defaultdict

THRESHOLDS = (1.1, 1.2, 1.3)


def fail(message):
    print("late-cost.py: " + message, file=sys.stderr)
    sys.exit(2)


def arm_of(row):
    """The arm name bso-sim writes in a decisions file, from a summary.csv row."""
    name = "%s/%s" % (row["policy"], row["power"])
    if row.get("profile") == "probe":
        name += "+probe"
    if row.get("move"):
        name += "+" + row["move"]
    return name


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
    if os.path.exists(os.path.join(out, "changes.csv")):
        fail("%s is a replay with --change: each phase has its own oracle" % out)
    try:
        with open(os.path.join(out, "summary.csv")) as f:
            oracle = {(arm_of(r), r["workload"], r["gpu"]): float(r["oracle_cost"])
                      for r in csv.DictReader(f)}
        with open(decisions) as f:
            rows = list(csv.DictReader(f))
    except (OSError, KeyError, ValueError) as e:
        fail("cannot read the replay: %s" % e)
    if not rows:
        fail("%s holds no runs" % decisions)
    final = max(int(r["recurrence"]) for r in rows)
    if last > final:
        fail("the jobs had %d recurrences, fewer than LAST (%d)" % (final, last))
    cost = Counter()
    sizes = defaultdict(Counter)
    for r in rows:
        if int(r["recurrence"]) > final - last:
            job = (r["arm"], r["workload"], r["gpu"], int(r["seed"]))
            cost[job] += float(r["cost"])
            if r["outcome"] == "reached":
                sizes[job][r["batch_size"]] += 1
    ratio = {}
    for job, c in cost.items():
        o = oracle.get(job[:3])
        if o is None:
            fail("no summary row for %s on %s under %s" % (job[1], job[2], job[0]))
        ratio[job] = c / (last * o)
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
