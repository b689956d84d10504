"""Reading a bso-sim replay (its --out directory and its --decisions file) for the tools that
weigh one afterwards: late-cost.py and paired-cells.py. Imported, not run."""
import csv
import os
from collections import defaultdict, namedtuple

# One run of the decisions file; a job is (arm, workload, gpu, seed).
Run = namedtuple("Run", "arm workload gpu seed recurrence cost batch_size outcome")
# One phase of a cell (arm, workload, gpu): its number, first recurrence, the oracle's expected
# cost per recurrence (inf where no size reaches), the size the oracle picks, and the recurrences
# that trained no model (None without --change: summary.csv does not count them).
Phase = namedtuple("Phase", "number first oracle optimum no_model")


class ReplayError(Exception):
    """A replay that cannot be read or weighed; its text is the message for the user."""


def arm_of(row):
    """The arm name bso-sim writes in a decisions file, from a summary.csv or changes.csv row."""
    name = "%s/%s" % (row["policy"], row["power"])
    if row.get("profile") == "probe":
        name += "+probe"
    if row.get("move"):
        name += "+" + row["move"]
    return name


def read(out, decisions):
    """The replay in directory `out` with its decisions file: (runs, phases), phases per cell in
    order (one phase from the first recurrence without --change). Refuses a replay whose jobs
    move to another GPU (R:gpu=NAME): they change GPU on the way, and a cell's runs are no
    longer one GPU's."""
    try:
        with open(os.path.join(out, "summary.csv")) as f:
            summary = list(csv.DictReader(f))
        changes = []
        if os.path.exists(os.path.join(out, "changes.csv")):
            with open(os.path.join(out, "changes.csv")) as f:
                changes = list(csv.DictReader(f))
        with open(decisions) as f:
            runs = [Run(r["arm"], r["workload"], r["gpu"], int(r["seed"]), int(r["recurrence"]),
                        float(r["cost"]), r["batch_size"], r["outcome"])
                    for r in csv.DictReader(f)]
        if any(r["move"] for r in changes):
            raise ReplayError("%s is a replay with a move to another GPU: its jobs change GPU "
                              "on the way" % out)
        phases = defaultdict(list)
        for r in changes or summary:
            if changes and int(r["recurrences"]) == 0:
                continue  # a change at the first recurrence leaves its phase 0 empty
            phase = (Phase(int(r["phase"]), int(r["first_recurrence"]), float(r["oracle_cost"]),
                           r["optimum"], int(r["no_model"])) if changes
                     else Phase(0, 1, float(r["oracle_cost"]), "", None))
            phases[(arm_of(r), r["workload"], r["gpu"])].append(phase)
    except KeyError as e:
        raise ReplayError("cannot read the replay: no column %s" % e) from None
    except (OSError, ValueError) as e:
        raise ReplayError("cannot read the replay: %s" % e) from None
    if not runs:
        raise ReplayError("%s holds no runs" % decisions)
    for cell in phases.values():
        cell.sort()
    return runs, dict(phases)


def phase_of(cell_phases, recurrence):
    """The phase a recurrence falls in: the last one begun by it."""
    return max((p for p in cell_phases if p.first <= recurrence),
               key=lambda p: (p.first, p.number))
