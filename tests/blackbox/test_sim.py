"""bso-sim: clear errors, the oracle on synthetic traces, determinism, exact seeded decisions on
the real traces (Zeus's policy), and identical decisions in-process and over HTTP."""
import collections
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from harness import Server

SIM = os.environ.get("BSO_SIM_BIN", "bso-sim")
HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.environ.get("BSO_TRACES") or os.path.join(HERE, "..", "..", "..", "shared", "traces")


def sim(*args, env=None, cwd=None):
    return subprocess.run([SIM] + list(args), capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, **(env or {})), cwd=cwd)


def decisions(path):
    with open(path) as f:
        return [row for row in csv.DictReader(f)]


def write_synthetic(d, paths32=("10", "12", "10", ""), paths64=("20", "20", "20")):
    """Two batch sizes: 32 needs 10 or 12 epochs (never in one of four runs), 64 needs 20
    (pathsNN: the epochs each run of size NN needs, "" where it never reaches)."""
    with open(os.path.join(d, "summary_train.csv"), "w") as f:
        f.write("dataset,network,batch_size,optimizer,learning_rate,run,target_metric,"
                "target_epoch\n")
        for bs, paths in ((32, paths32), (64, paths64)):
            for run, epoch in enumerate(paths):
                f.write("toy,net,%d,sgd,0.1,%d,0.9,%s\n" % (bs, run + 1, epoch))
    with open(os.path.join(d, "summary_power_gpu1.csv"), "w") as f:
        f.write("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,average_power\n")
        f.write("toy,net,32,sgd,100,10,80\ntoy,net,32,sgd,200,8,150\n")
        f.write("toy,net,64,sgd,100,6,90\ntoy,net,64,sgd,200,5,180\n")
    with open(os.path.join(d, "workloads.csv"), "w") as f:
        f.write("dataset,network,optimizer,target_metric,higher_is_better,max_epochs,"
                "default_batch_size\ntoy,net,sgd,0.9,true,30,64\n")


def write_workloads_with_samples(path):
    """write_synthetic's workload with its samples per epoch (1000), which a replay with
    --profile probe charges the probe by."""
    with open(path, "w") as f:
        f.write("dataset,network,optimizer,target_metric,higher_is_better,max_epochs,"
                "default_batch_size,samples_per_epoch\ntoy,net,sgd,0.9,true,30,64,1000\n")


def write_second_gpu(d, top64=(5, 180)):
    """gpu2 for write_synthetic: 32 is the cheaper size per epoch there (it is not on gpu1);
    top64: 64's seconds per epoch and watts at the largest limit (200 W)."""
    with open(os.path.join(d, "summary_power_gpu2.csv"), "w") as f:
        f.write("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                "average_power\n")
        f.write("toy,net,32,sgd,100,3,80\ntoy,net,32,sgd,200,2,150\n")
        f.write("toy,net,64,sgd,100,6,90\ntoy,net,64,sgd,200,%g,%g\n" % top64)


# The headers of the files a replay writes (bso-sim --out and --decisions), for replays written
# by hand.
SUMMARY_HEADER = ("workload,gpu,policy,power,recurrences,seeds,cost_mean,cost_sd,oracle_cost,"
                  "base_cost,ratio_vs_oracle,ratio_vs_base,settle_recurrences,failed_runs,"
                  "profile,move")
CHANGES_HEADER = ("workload,gpu,policy,power,phase,first_recurrence,recurrences,oracle_cost,"
                  "ratio_vs_oracle,no_model,stopped_per_recurrence,lag,never_settled,profile,"
                  "move,optimum,changes_found,gave_up,no_model_floor,refused")
DECISIONS_HEADER = ("workload,gpu,seed,trial,batch_size,target_epoch,outcome,cost,policy,"
                    "recurrence,epochs_run,arm")


def write_csv(path, header, lines):
    with open(path, "w") as f:
        f.write(header + "\n" + "".join(line + "\n" for line in lines))


class Sim(unittest.TestCase):
    def assert_refused(self, result, message, context=None):
        """A tool's run that must fail: non-zero exit, `message` on stderr, no traceback."""
        self.assertNotEqual(result.returncode, 0, context)
        self.assertIn(message, result.stderr)
        self.assertNotIn("Traceback", result.stderr)

    def test_errors(self):
        with tempfile.TemporaryDirectory() as d:
            self.assertEqual(sim("--traces", d).returncode, 2)  # no --gpu
            out = sim("--traces", d, "--gpu", "v100", cwd=d)
            self.assertEqual(out.returncode, 1)
            self.assertIn("summary_power_v100.csv", out.stderr)
            # Failing on its input, it leaves nothing behind (no default output folder).
            self.assertFalse(os.path.exists(os.path.join(d, "sim-out")))
            write_synthetic(d)
            wl = os.path.join(d, "workloads.csv")
            out = sim("--traces", d, "--gpu", "gpu1", "--workloads", wl, "--workload", "nope")
            self.assertEqual(out.returncode, 2)
            self.assertIn("no workload named 'nope'", out.stderr)
            self.assertEqual(sim("--traces", d, "--gpu", "gpu1", "--power", "turbo").returncode, 2)
            self.assertEqual(sim("--traces", d, "--gpu", "gpu1", "--seeds", "5-2").returncode, 2)
            with open(os.path.join(d, "summary_power_bad.csv"), "w") as f:
                f.write("dataset,network,batch_size,optimizer,power_limit,seconds\n")
            out = sim("--traces", d, "--gpu", "bad", "--workloads", wl)
            self.assertEqual(out.returncode, 1)
            self.assertIn("has no column 'time_per_epoch'", out.stderr)

    def test_traces_as_spreadsheets_and_other_tools_write_them(self):
        """The same traces written with a byte-order mark, CRLF line ends, every field quoted,
        spaces after the commas, columns in another order, twenty more columns, blank lines at
        the end, a run that never reached marked NA, None, null, - or N/A instead of left
        empty, and higher_is_better written 1 replay exactly as written plainly; a quote left open or an overlong line is a
        clear error with the file and line."""
        with tempfile.TemporaryDirectory() as d:
            plain = os.path.join(d, "plain")
            os.makedirs(plain)
            write_synthetic(plain)
            files = sorted(os.listdir(plain))
            rows = {f: list(csv.reader(open(os.path.join(plain, f)))) for f in files}

            def variant(name, write):
                out = os.path.join(d, name)
                os.makedirs(out)
                for f in files:
                    with open(os.path.join(out, f), "w", newline="") as fh:
                        write(fh, rows[f])
                return out

            def replay(traces):
                out = os.path.join(d, "out-" + os.path.basename(traces))
                got = sim("--traces", traces, "--gpu", "gpu1", "--workloads",
                          os.path.join(traces, "workloads.csv"), "--policy", "zeus,bso",
                          "--seeds", "1-3", "--recurrences", "12", "--out", out,
                          "--decisions", os.path.join(out, "d.csv"))
                self.assertEqual(got.returncode, 0, (traces, got.stderr))
                with open(os.path.join(out, "d.csv")) as f:
                    return f.read()

            expected = replay(plain)
            variants = {
                "bom-crlf": lambda fh, r: fh.write("\ufeff" + "".join(
                    ",".join(x) + "\r\n" for x in r)),
                "quoted": lambda fh, r: csv.writer(fh, quoting=csv.QUOTE_ALL).writerows(r),
                "spaces": lambda fh, r: fh.write("".join(", ".join(x) + "\n" for x in r)),
                "reversed": lambda fh, r: csv.writer(fh).writerows(x[::-1] for x in r),
                "wide": lambda fh, r: csv.writer(fh).writerows(
                    x + [("extra%d" % j if i == 0 else '"a, b"') for j in range(20)]
                    for i, x in enumerate(r)),
                "blank-end": lambda fh, r: fh.write("".join(",".join(x) + "\n" for x in r)
                                                    + "\n \n"),
                # A run that never reached written as R, Python, JSON or by hand write it.
                "never-marks": lambda fh, r: csv.writer(fh).writerows(
                    x[:-1] + [x[-1] or marks[i % len(marks)]] if len(x) == 8 else x
                    for i, x in enumerate(r)),
            }
            marks = ["NA", "None", "null", "-", "N/A", "nan"]
            # higher_is_better as other tools write true (the workloads file's fifth column).
            variants["one-for-true"] = lambda fh, r: csv.writer(fh).writerows(
                x[:4] + ["1" if x[4] == "true" else x[4]] + x[5:] if len(x) == 7 else x
                for x in r)
            for name, write in variants.items():
                with self.subTest(variant=name):
                    self.assertEqual(replay(variant(name, write)), expected)
            bad = variant("open-quote", lambda fh, r: fh.write(
                "".join(",".join(x) + "\n" for x in r[:2]) + '"toy,net\n'))
            self.assert_refused(sim("--traces", bad, "--gpu", "gpu1", "--workloads",
                                    os.path.join(bad, "workloads.csv")),
                                ":3: a quoted field is not closed")
            long_line = variant("long", lambda fh, r: fh.write(
                ",".join(r[0]) + "\n" + ",".join(r[1]) + "," + "x" * 5000 + "\n"))
            self.assert_refused(sim("--traces", long_line, "--gpu", "gpu1", "--workloads",
                                    os.path.join(long_line, "workloads.csv")),
                                ":2: a line longer than")

    def test_traces_with_many_sizes_and_runs(self):
        """A workload of 200 batch sizes with 100 runs each replays (the replay held 64 sizes,
        and dropped the runs past 64 unsaid); past 256 runs of a size it says so instead of
        dropping them."""
        with tempfile.TemporaryDirectory() as d:
            sizes = [8 * (k + 1) for k in range(200)]

            def write(runs):
                with open(os.path.join(d, "summary_train.csv"), "w") as f:
                    f.write("dataset,network,batch_size,optimizer,learning_rate,run,"
                            "target_metric,target_epoch\n")
                    for bs in sizes:
                        for run in range(runs):
                            f.write("w,n,%d,o,1,%d,0.5,%d\n" % (bs, run + 1, 5 + run % 3))

            write(100)
            with open(os.path.join(d, "summary_power_g.csv"), "w") as f:
                f.write("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                        "average_power\n")
                for bs in sizes:
                    f.write("w,n,%d,o,100,%g,90\n" % (bs, 1000.0 / bs + 1))
            wl = os.path.join(d, "workloads.csv")
            with open(wl, "w") as f:
                f.write("dataset,network,optimizer,target_metric,higher_is_better,max_epochs,"
                        "default_batch_size\nw,n,o,0.5,true,50,%d\n" % sizes[-1])
            out = os.path.join(d, "out")
            got = sim("--traces", d, "--workloads", wl, "--gpu", "g", "--policy", "bso",
                      "--seeds", "1-2", "--recurrences", "6", "--out", out,
                      "--decisions", os.path.join(out, "d.csv"))
            self.assertEqual(got.returncode, 0, got.stderr)
            rows = decisions(os.path.join(out, "d.csv"))
            self.assertGreater(len({r["batch_size"] for r in rows}), 1)
            write(257)
            self.assert_refused(sim("--traces", d, "--workloads", wl, "--gpu", "g"),
                                "more than 256 runs of batch size 8")

    def test_many_workloads(self):
        """A workloads file of 100 workloads on two GPUs (200 pairs; the replay took 64)
        replays every pair."""
        with tempfile.TemporaryDirectory() as d:
            names = ["toy%d" % k for k in range(100)]
            with open(os.path.join(d, "summary_train.csv"), "w") as f:
                f.write("dataset,network,batch_size,optimizer,learning_rate,run,target_metric,"
                        "target_epoch\n")
                for name in names:
                    for bs, epochs in ((32, 10), (64, 20)):
                        f.write("%s,net,%d,sgd,0.1,1,0.9,%d\n" % (name, bs, epochs))
            for gpu in ("g1", "g2"):
                with open(os.path.join(d, "summary_power_%s.csv" % gpu), "w") as f:
                    f.write("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                            "average_power\n")
                    for name in names:
                        f.write("%s,net,32,sgd,100,10,80\n%s,net,64,sgd,100,4,90\n"
                                % (name, name))
            wl = os.path.join(d, "workloads.csv")
            with open(wl, "w") as f:
                f.write("dataset,network,optimizer,target_metric,higher_is_better,max_epochs,"
                        "default_batch_size\n")
                f.writelines("%s,net,sgd,0.9,true,30,32\n" % name for name in names)
            out = os.path.join(d, "out")
            got = sim("--traces", d, "--workloads", wl, "--gpu", "g1,g2", "--policy", "zeus,bso",
                      "--seeds", "1-1", "--recurrences", "3", "--out", out)
            self.assertEqual(got.returncode, 0, got.stderr)
            rows = decisions(os.path.join(out, "summary.csv"))
            self.assertEqual(len({(r["workload"], r["gpu"]) for r in rows}), 200)

    def test_every_arm_at_once(self):
        """Both policies, both power modes, both profiles and both moves in one replay: the
        sixteen arms each replay (the replay took eight)."""
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d)
            write_second_gpu(d)
            wl = os.path.join(d, "workloads.csv")
            write_workloads_with_samples(wl)
            out = os.path.join(d, "out")
            got = sim("--traces", d, "--workloads", wl, "--gpu", "gpu1", "--policy", "zeus,bso",
                      "--power", "max,jit", "--profile", "none,probe", "--change", "4:gpu=gpu2",
                      "--seeds", "1-2", "--recurrences", "8", "--out", out)
            self.assertEqual(got.returncode, 0, got.stderr)
            arms = {(r["policy"], r["power"], r["profile"], r["move"])
                    for r in decisions(os.path.join(out, "summary.csv"))}
            self.assertEqual(len(arms), 16, arms)

    def test_oracle_on_synthetic_traces(self):
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d)
            out = sim("--traces", d, "--gpu", "gpu1", "--workloads", os.path.join(d, "workloads.csv"),
                      "--policy", "zeus,bso", "--power", "max,jit", "--seeds", "1-3",
                      "--recurrences", "8", "--out", os.path.join(d, "out"))
            self.assertEqual(out.returncode, 0, out.stderr)
            rows = decisions(os.path.join(d, "out", "summary.csv"))
            self.assertEqual(len(rows), 4)
            # Max power (200 W is the largest limit). An epoch of 32 costs 0.5*8*150 +
            # 0.5*200*8 = 1400, and it needs (10 + 12 + 10 + 30) / 3 reaching runs epochs per
            # success: 62/3*1400 = 28933. 64 needs 20 epochs of 0.5*5*180 + 0.5*200*5 = 950:
            # 19000, which is both the oracle and the base (the default).
            r = [x for x in rows if x["policy"] == "zeus" and x["power"] == "max"][0]
            self.assertAlmostEqual(float(r["oracle_cost"]), 19000, places=3)
            self.assertAlmostEqual(float(r["base_cost"]), 19000, places=3)
            # JIT: 64 is cheapest per epoch at 100 W (0.5*6*90 + 0.5*200*6 = 870): 17400. The
            # base stays at max power.
            r = [x for x in rows if x["policy"] == "zeus" and x["power"] == "jit"][0]
            self.assertAlmostEqual(float(r["oracle_cost"]), 17400, places=3)
            self.assertAlmostEqual(float(r["base_cost"]), 19000, places=3)
            for f in ("curves.csv", "regret.svg"):
                self.assertGreater(os.path.getsize(os.path.join(d, "out", f)), 100)
            # A job that does not change: what the bso policy finds is counted as false alarms
            # (one line per bso arm; the zeus policy looks for no change).
            found = [l for l in out.stdout.splitlines() if "changes found" in l]
            self.assertEqual(len(found), 2, out.stdout)
            for line in found:
                self.assertIn("bso/", line)
                self.assertRegex(line, r"changes found: \d+ in 3 jobs \(the traces do not "
                                       r"change: false alarms\)")

    def test_held_out_synthetic_workloads(self):
        """tools/synthetic-traces.py writes traces bso-sim replays: the same seed gives the same
        files, and the bso policy trains a model in every recurrence of every workload (Zeus's
        gives up on some, at a small fraction of the oracle's cost)."""
        tool = os.path.join(HERE, "..", "..", "tools", "synthetic-traces.py")
        with tempfile.TemporaryDirectory() as d:
            a, b = os.path.join(d, "a"), os.path.join(d, "b")
            for out in (a, b):
                made = subprocess.run([sys.executable, tool, out, "4", "7"], capture_output=True,
                                      text=True, timeout=60)
                self.assertEqual(made.returncode, 0, made.stderr)
            for name in ("summary_train.csv", "summary_power_g1.csv", "summary_power_g2.csv",
                         "workloads.csv"):
                with open(os.path.join(a, name)) as fa, open(os.path.join(b, name)) as fb:
                    self.assertEqual(fa.read(), fb.read(), name)
            bad = subprocess.run([sys.executable, tool, a], capture_output=True, text=True,
                                 timeout=60)
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("usage", bad.stderr)
            bad = subprocess.run([sys.executable, tool, a, "four", "7"], capture_output=True,
                                 text=True, timeout=60)
            self.assert_refused(bad, "N and SEED must be whole numbers")
            for knee in ("sharp", "0", "nan"):
                bad = subprocess.run([sys.executable, tool, b, "4", "7", knee],
                                     capture_output=True, text=True, timeout=60)
                self.assert_refused(bad, "KNEE must be a number", knee)
            # Another knee bends the time per epoch only: the same epochs, other seconds.
            bent = os.path.join(d, "bent")
            made = subprocess.run([sys.executable, tool, bent, "4", "7", "1.6"],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(made.returncode, 0, made.stderr)
            for name, same in (("summary_train.csv", True), ("summary_power_g1.csv", False)):
                with open(os.path.join(a, name)) as fa, open(os.path.join(bent, name)) as fb:
                    self.assertEqual(fa.read() == fb.read(), same, name)
            out = sim("--traces", a, "--workloads", os.path.join(a, "workloads.csv"), "--gpu",
                      "g1,g2", "--policy", "bso", "--seeds", "1-3", "--recurrences", "20",
                      "--out", os.path.join(d, "out"))
            self.assertEqual(out.returncode, 0, out.stderr)
            rows = decisions(os.path.join(d, "out", "summary.csv"))
            self.assertEqual(len(rows), 8)
            for r in rows:
                self.assertGreater(float(r["ratio_vs_oracle"]), 0.8, r)

    def test_synthetic_figures(self):
        """tools/synthetic-figures.sh makes a set per seed, replays it and prints one table row
        each: the bso policy's geometric mean against the oracle, its worst cell, and the
        recurrences without a model."""
        tool = os.path.join(HERE, "..", "..", "tools", "synthetic-figures.sh")
        build = os.path.dirname(os.path.abspath(shutil.which(SIM) or SIM))
        out = subprocess.run(["bash", tool, build, "7", "8"], capture_output=True, text=True,
                             timeout=600)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = [line.split("|")[1:-1] for line in out.stdout.splitlines()
                if line.startswith("| 7 ") or line.startswith("| 8 ")]
        self.assertEqual(len(rows), 2, out.stdout)
        for seed, geo, worst, no_model in rows:
            self.assertGreaterEqual(float(geo), 1.0)
            self.assertGreaterEqual(float(worst.split()[0]), float(geo))
            self.assertIn("syn", worst)
            self.assertGreaterEqual(int(no_model), 0)
        self.assertNotEqual(rows[0][1:], rows[1][1:])  # two seeds, two different sets

    @unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                         "public traces not available")
    def test_change_figures_off_the_grid(self):
        """tools/change-figures.sh replays the grid at the change points and factors of
        BSO_CHANGE_POINTS and BSO_CHANGE_FACTORS (one row per point, factor and side of the
        optimum, none of the default grid's), and refuses, before printing anything, a value that is
        not a number and a change point that is no recurrence."""
        tool = os.path.join(HERE, "..", "..", "tools", "change-figures.sh")
        build = os.path.dirname(os.path.abspath(shutil.which(SIM) or SIM))
        env = dict(os.environ, BSO_TRACES=TRACES, BSO_CHANGE_POINTS="12",
                   BSO_CHANGE_FACTORS="1.7")
        out = subprocess.run(["bash", tool, build, "1-2"], capture_output=True, text=True,
                             timeout=600, env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = [line.split("|")[1].strip() for line in out.stdout.splitlines()
                if line.startswith("| `") and ":epochs=" in line and "@" in line
                and "noise" not in line and "beyond" not in line]
        self.assertEqual(rows, ["`12:epochs=1.7@<=opt`", "`12:epochs=1.7@>=opt`",
                                "`12:epochs=1.7@opt`"], out.stdout)
        for bad in ("BSO_CHANGE_POINTS", "BSO_CHANGE_FACTORS"):
            refused = subprocess.run(["bash", tool, build, "1-2"], capture_output=True,
                                     text=True, timeout=600, env=dict(env, **{bad: "10 x"}))
            self.assert_refused(refused, "'x' in BSO_CHANGE_POINTS or BSO_CHANGE_FACTORS")
            self.assertEqual(refused.returncode, 2)
            self.assertEqual(refused.stdout, "")
        for point in ("10.5", "0"):  # a number, but no recurrence
            refused = subprocess.run(["bash", tool, build, "1-2"], capture_output=True,
                                     text=True, timeout=600,
                                     env=dict(env, BSO_CHANGE_POINTS=point))
            self.assert_refused(refused, "'%s' in BSO_CHANGE_POINTS is not a recurrence" % point)
            self.assertEqual(refused.returncode, 2)
            self.assertEqual(refused.stdout, "")

    def test_profile_from_the_traces(self):
        """--profile probe: the probe's cost is charged to the first recurrence, the profile
        reaches the policy, and a workload without samples_per_epoch is refused."""
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d)
            wl = os.path.join(d, "workloads.csv")
            base = ["--traces", d, "--gpu", "gpu1", "--policy", "bso", "--seeds", "1",
                    "--recurrences", "6", "--out", os.path.join(d, "out")]
            out = sim(*base, "--workloads", wl, "--profile", "probe")
            self.assertEqual(out.returncode, 2)
            self.assertIn("samples_per_epoch", out.stderr)
            for bad in (("--profile", "maybe"), ("--probe-noise", "-1"), ("--probe-steps", "0")):
                self.assertEqual(sim(*base, "--workloads", wl, *bad).returncode, 2, bad)
            write_workloads_with_samples(wl)
            out = sim(*base, "--workloads", wl, "--profile", "none,probe", "--probe-noise", "0",
                      "--probe-steps", "10")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("bso/max+probe", out.stdout)
            rows = {r["profile"]: r for r in decisions(os.path.join(d, "out", "summary.csv"))}
            self.assertEqual(set(rows), {"none", "probe"})
            curves = {}
            for r in decisions(os.path.join(d, "out", "curves.csv")):
                curves.setdefault(r["profile"], []).append(float(r["mean_cost"]))
            # The probe: 10 steps of 32 samples at 8 s per 1000 samples and 150 W, then 12 of
            # 64 (the failed try at 128 counts as two more) at 5 s and 180 W; cost = 0.5 * J +
            # 0.5 * 200 W * s. The policy starts at the default either way, so the first
            # recurrences differ by exactly that.
            t32, t64 = 10 * 32 * 8 / 1000, 12 * 64 * 5 / 1000
            probe = 0.5 * (t32 * 150 + t64 * 180) + 0.5 * 200 * (t32 + t64)
            self.assertAlmostEqual(curves["probe"][0] - curves["none"][0], probe, places=2)

            # 128 was trained but has no power data on gpu1: it does not fit. Registered, each
            # policy tries it until three runs in a row die (no report); a profile marks it
            # infeasible first, so it is never tried.
            with open(os.path.join(d, "summary_train.csv"), "a") as f:
                f.write("toy,net,128,sgd,0.1,1,0.9,25\n")
            for policy in ("zeus", "bso"):
                for profile, ooms in (("none", 3), ("probe", 0)):
                    path = os.path.join(d, "unfit.csv")
                    out = sim("--traces", d, "--gpu", "gpu1", "--workloads", wl, "--policy",
                              policy, "--seeds", "1", "--recurrences", "6", "--profile",
                              profile, "--unfit-sizes", "register", "--decisions", path,
                              "--out", d)
                    self.assertEqual(out.returncode, 0, out.stderr)
                    rows = decisions(path)
                    died = [r for r in rows if r["outcome"] == "out-of-memory"]
                    self.assertEqual(len(died), ooms, (policy, profile))
                    self.assertTrue(all(r["batch_size"] == "128" for r in died))
                    self.assertNotIn("128", {r["batch_size"] for r in rows
                                             if r["outcome"] != "out-of-memory"})
            self.assertEqual(sim(*base, "--workloads", wl, "--unfit-sizes", "maybe").returncode, 2)

        # The profile reaches the policy: 128 is four times slower per epoch than 64. Without
        # a profile the prior (cost per epoch falling with batch size) makes it worth a
        # one-epoch look; with one its cost per epoch is known and it is never tried.
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "summary_train.csv"), "w") as f:
                f.write("dataset,network,batch_size,optimizer,learning_rate,run,target_metric,"
                        "target_epoch\n")
                for bs in (64, 128):
                    for run in range(3):
                        f.write("toy,net,%d,sgd,0.1,%d,0.9,20\n" % (bs, run + 1))
            with open(os.path.join(d, "summary_power_gpu1.csv"), "w") as f:
                f.write("dataset,network,batch_size,optimizer,power_limit,time_per_epoch,"
                        "average_power\ntoy,net,64,sgd,200,5,180\ntoy,net,128,sgd,200,20,180\n")
            wl = os.path.join(d, "workloads.csv")
            write_workloads_with_samples(wl)
            tried = {}
            for profile in ("none", "probe"):
                path = os.path.join(d, profile + ".csv")
                out = sim("--traces", d, "--gpu", "gpu1", "--workloads", wl, "--policy", "bso",
                          "--seeds", "1-3", "--recurrences", "5", "--profile", profile,
                          "--decisions", path, "--out", d)
                self.assertEqual(out.returncode, 0, out.stderr)
                tried[profile] = {r["batch_size"] for r in decisions(path)}
            self.assertEqual(tried, {"none": {"64", "128"}, "probe": {"64"}})

    @unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                         "the shared traces are not beside the repository")
    def test_exact_seeded_decisions(self):
        """Zeus's policy on librispeech/V100: the batch sizes of 30 recurrences, by seed."""
        expected = {
            "1": "192,156,128,96,72,64,56,48,32,24,16,12,8,48,32,24,16,12,56,64,72,96,128,156,"
                 "192,48,64,48,48,48",
            "2": "192,156,128,96,72,64,56,48,32,24,16,12,8x,48,32,24,16,12,56,64,72,96,128,156,"
                 "192,48,56,56,56,56,64",
        }
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "decisions.csv")
            out = sim("--traces", TRACES, "--gpu", "v100", "--workload", "librispeech",
                      "--policy", "zeus", "--seeds", "1-2", "--recurrences", "30",
                      "--decisions", path, "--out", d)
            self.assertEqual(out.returncode, 0, out.stderr)
            got = {}
            for row in decisions(path):
                mark = "x" if row["outcome"] == "stopped" else ""
                got.setdefault(row["seed"], []).append(row["batch_size"] + mark)
            self.assertEqual({k: ",".join(v) for k, v in got.items()}, expected)
            # Each run says its policy, its recurrence (one per recurrence here: a run stopped
            # early leaves its recurrence to the next run) and the epochs it ran: a run that
            # reached ran to its path's target epoch, one stopped ran fewer.
            for seed in ("1", "2"):
                rows = [r for r in decisions(path) if r["seed"] == seed]
                self.assertEqual({r["policy"] for r in rows}, {"zeus"})
                recurrences = [int(r["recurrence"]) for r in rows]
                self.assertEqual(recurrences, sorted(recurrences))
                self.assertEqual(set(recurrences), set(range(1, 31)))
                for r in rows:
                    if r["outcome"] == "reached":
                        self.assertEqual(r["epochs_run"], r["target_epoch"], r)
                    elif int(r["target_epoch"]) > 0:
                        self.assertLess(int(r["epochs_run"]), int(r["target_epoch"]), r)
            self.assertGreater(len(decisions(path)), 60)  # seed 2's stopped run is one more
            # The same command again gives the same decisions, for both policies.
            for policy in ("zeus", "bso"):
                runs = []
                for k in range(2):
                    p = os.path.join(d, "d%s%d.csv" % (policy, k))
                    sim("--traces", TRACES, "--gpu", "a40", "--workload", "cifar100", "--policy",
                        policy, "--power", "jit", "--seeds", "3-4", "--recurrences", "20",
                        "--decisions", p, "--out", d)
                    runs.append(decisions(p))
                self.assertEqual(runs[0], runs[1])
                self.assertGreater(len(runs[0]), 40)

    @unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                         "the shared traces are not beside the repository")
    def test_server_mode_gives_identical_decisions(self):
        with Server() as srv, tempfile.TemporaryDirectory() as d:
            url = "http://127.0.0.1:%d" % srv.port
            # imagenet on the V100 has two trained sizes that do not fit (512, 1024).
            for policy, power, workload, profile, unfit in (
                    ("zeus", "max", "squad", "none", "skip"),
                    ("bso", "max", "squad", "none", "skip"),
                    ("bso", "jit", "librispeech", "none", "skip"),
                    ("bso", "max", "imagenet", "probe", "register"),
                    ("zeus", "max", "imagenet", "none", "register")):
                got = {}
                for mode, extra in (("local", []), ("http", ["--server", url])):
                    p = os.path.join(d, "%s-%s-%s.csv" % (policy, power, mode))
                    out = sim("--traces", TRACES, "--gpu", "v100", "--workload", workload,
                              "--policy", policy, "--power", power, "--profile", profile,
                              "--unfit-sizes", unfit, "--seeds", "1-2",
                              "--recurrences", "15", "--decisions", p, "--out", d, *extra)
                    self.assertEqual(out.returncode, 0, out.stderr)
                    got[mode] = [(r["seed"], r["trial"], r["batch_size"], r["outcome"],
                                  r["cost"]) for r in decisions(p)]
                self.assertEqual(got["local"], got["http"], policy)
                self.assertGreaterEqual(len(got["local"]), 30)
            # The replay cleans up after itself.
            self.assertEqual(srv.request("GET", "/jobs")[1]["jobs"], [])

    def replay_both(self, url, d, workload, change, seeds="1-2", extra_args=()):
        """Replays 16 recurrences of two seeds of `workload` on the A40 with `change` (and
        `extra_args`), in process and through the server at `url`. Returns each mode's decisions (seed, trial,
        batch size, outcome, cost) and changes found per phase, and the last run's stdout."""
        got, found = {}, {}
        for mode, extra in (("local", []), ("http", ["--server", url])):
            p = os.path.join(d, "%s.csv" % mode)
            out = sim("--traces", TRACES, "--gpu", "a40", "--workload", workload,
                      "--policy", "bso", "--seeds", seeds, "--recurrences", "16",
                      "--change", change, "--decisions", p, "--out", d, *extra_args, *extra)
            self.assertEqual(out.returncode, 0, out.stderr)
            got[mode] = [(r["seed"], r["trial"], r["batch_size"], r["outcome"], r["cost"])
                         for r in decisions(p)]
            # Changes found per phase: in process from the job, over HTTP from GET /jobs/ID.
            found[mode] = [r["changes_found"] for r in decisions(os.path.join(d, "changes.csv"))]
        self.assertEqual(got["local"], got["http"])
        self.assertEqual(found["local"], found["http"])
        return got["local"], found["local"], out.stdout

    @unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                         "the shared traces are not beside the repository")
    def test_change_replayed_identically_over_http(self):
        """A job that changes: the policy finds it and revises every size's statistics, which
        the server stores (on this suite's backend) and reloads, so its decisions over HTTP are
        the in-process ones; per-phase figures come out. Also a change right after the first
        recurrence, found by looking back at a size's first run."""
        # No jobs kept in memory: every request reads the job back from the database.
        with Server(args=["--cache-mb", "0"]) as srv, tempfile.TemporaryDirectory() as d:
            url = "http://127.0.0.1:%d" % srv.port
            # squad moves off the sizes that ran out of epochs without an alarm (one failure
            # after five successes is not enough evidence); sentiment140, whose epochs double at
            # its best sizes, raises one. Both count the same in process and over HTTP.
            got, found, _ = self.replay_both(url, d, "squad", "6:epochs=2@<=opt")
            self.assertEqual(found[1], "0")
            # Told of the same change (--declare-changes yes: POST /jobs/ID/changed), its first
            # failure at a size that used to reach is the alarm; the declaration is stored with
            # each size, so HTTP decides as in process.
            told, found, _ = self.replay_both(url, d, "squad", "6:epochs=2@<=opt",
                                              extra_args=["--declare-changes", "yes"])
            self.assertGreaterEqual(int(found[1]), 1)
            self.assertNotEqual(told, got)
            _, found, stdout = self.replay_both(url, d, "sentiment140", "6:epochs=2@>=opt")
            self.assertEqual(found[0], "0")  # nothing changed before recurrence 6
            self.assertGreaterEqual(int(found[1]), 1)
            # After the change the sizes that used to win run out of epochs (max 6): the runs
            # that follow move elsewhere and reach.
            after = [r for r in got if int(r[1]) > 8]
            self.assertTrue(any(r[3] == "reached" for r in after))
            with open(os.path.join(d, "changes.csv")) as f:
                phases = list(csv.DictReader(f))
            self.assertEqual([p["phase"] for p in phases], ["0", "1"])
            self.assertEqual(phases[1]["first_recurrence"], "6")
            self.assertEqual(phases[1]["recurrences"], "11")
            self.assertIn("after a change", stdout)
            # Only the best size's cost per epoch doubles: the policy first takes it for the
            # whole job's jump, checks at another size, finds its cost where it was and
            # undoes the guess (marks the server stores and reloads), then leaves 128.
            got, _, _ = self.replay_both(url, d, "sentiment140", "6:time=2@opt")
            for seed in ("1", "2"):
                last = [r[2] for r in got if r[0] == seed][-5:]
                self.assertNotIn("128", last, got)
            # Epochs cost twice as much at and above librispeech's best (32 on the A40): 64's
            # run bears out the jump above 32, the guess below it is undone at 8, and 16,
            # between a size the jump moved and one it did not (levels the server stores and
            # reloads), is weighed at the lower level, probed and kept (seed 1).
            got, _, _ = self.replay_both(url, d, "librispeech", "6:time=2@>=opt")
            self.assertEqual([r[2] for r in got if r[0] == "1"][-5:], ["16"] * 5, got)
            # Every size's epochs cost 1.5 times as much (more data): the first run after it
            # moves every size's cost per epoch as a guess; a probe at another size bears the
            # guess out and drops the marks on its side of the jump, at sizes that did not run
            # (which the server stored only for the probed size, so that over HTTP the guess
            # stood at the others and the job went elsewhere; seed 1 from trial 19).
            self.replay_both(url, d, "cifar100", "10:time=1.5", seeds="1-3")
            # Every size needs 1.5 times the epochs: once three sizes re-measured since the
            # alarm agree, the sizes known only from before are moved alike (seed 4; the
            # sizes' epochs before the change are stored with their statistics).
            self.replay_both(url, d, "movielens-1m", "6:epochs=1.5", seeds="3-4")
            # A change right after the first recurrence: imagenet's 256 reached in about 20 epochs
            # then, twice that since; looking back at its first run (stored with the size)
            # finds the change in both modes.
            _, found, _ = self.replay_both(url, d, "imagenet", "2:epochs=2.0@<=opt")
            self.assertEqual(found[0], "0")
            self.assertGreaterEqual(int(found[1]), 1)

    def test_interpolation_error_on_traces_of_the_per_step_shape(self):
        """tools/interpolation-error.py on synthetic traces whose cost per epoch is exactly a cost
        per sample plus a cost per step (KNEE 1): guessed by parts, every left-out size comes
        out right, while log space errs high; other KNEEs it need not. Bad arguments get a
        message and a non-zero exit."""
        maker = os.path.join(HERE, "..", "..", "tools", "synthetic-traces.py")
        tool = os.path.join(HERE, "..", "..", "tools", "interpolation-error.py")
        with tempfile.TemporaryDirectory() as d:
            for knee in ("1", "0.6"):
                traces = os.path.join(d, knee)
                made = subprocess.run([sys.executable, maker, traces, "3", "7", knee],
                                      capture_output=True, text=True, timeout=60)
                self.assertEqual(made.returncode, 0, made.stderr)
                out = subprocess.run([sys.executable, tool, traces, "0.5"],
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(out.returncode, 0, out.stderr)
                rows = [line.split() for line in out.stdout.splitlines()[1:-1]]
                self.assertEqual(len(rows), 6, out.stdout)  # 3 workloads on g1 and g2
                for gpu, workload, n, log_rms, log_mean, step_rms, step_mean in rows:
                    self.assertGreater(int(n), 0)
                    if knee == "1":
                        self.assertLess(float(step_rms), 1e-3, out.stdout)
                        self.assertGreater(float(log_rms), 0.01, out.stdout)
                        self.assertGreater(float(log_mean), 0, out.stdout)  # too high
                    else:
                        self.assertGreater(float(step_rms), 1e-3, out.stdout)
                if knee == "1":
                    self.assertIn("per step erred less on 6 of 6", out.stdout)
            for args, message in (([d, "2"], "ETA must be a number in [0, 1]"),
                                  ([d, "x"], "ETA must be a number in [0, 1]"),
                                  ([os.path.join(d, "none")], "cannot read the traces"),
                                  ([d], "no summary_power_*.csv")):
                bad = subprocess.run([sys.executable, tool, *args], capture_output=True,
                                     text=True, timeout=60)
                self.assert_refused(bad, message, args)

    def test_late_cost_counts_the_jobs_still_dear_at_the_end(self):
        """tools/late-cost.py: on a replay written by hand, the jobs whose last recurrences cost
        more than 1.1, 1.2 and 1.3 times the oracle, by arm, and the dearest with the sizes
        they ran; with --change, each recurrence against its phase's oracle, those of a phase
        where nothing reaches left out; on real replays of bso-sim, one row per arm over every
        job. Bad arguments and a replay with a move to another GPU get a message and a
        non-zero exit."""
        tool = os.path.join(HERE, "..", "..", "tools", "late-cost.py")

        def late(*args):
            return subprocess.run([sys.executable, tool, *args], capture_output=True, text=True,
                                  timeout=60)

        with tempfile.TemporaryDirectory() as d:
            write_csv(os.path.join(d, "summary.csv"), SUMMARY_HEADER,
                      ["toy,gpu1,bso,max,3,1-2,0,0,100,0,0,0,0,0,none,",
                       "toy,gpu1,bso,jit,3,1-2,0,0,80,0,0,0,0,0,probe,"])
            runs = os.path.join(d, "runs.csv")
            write_csv(runs, DECISIONS_HEADER, [
                # bso/max seed 1: dear at first, then at the oracle's cost (1.0 late).
                "toy,gpu1,1,1,64,9,reached,900,bso,1,9,bso/max",
                "toy,gpu1,1,2,32,5,reached,100,bso,2,5,bso/max",
                "toy,gpu1,1,3,32,5,reached,100,bso,3,5,bso/max",
                # bso/max seed 2: a stopped probe and a run late, 125 a recurrence (1.25).
                "toy,gpu1,2,1,32,5,reached,100,bso,1,5,bso/max",
                "toy,gpu1,2,2,16,1,stopped,50,bso,2,1,bso/max",
                "toy,gpu1,2,3,64,7,reached,75,bso,2,7,bso/max",
                "toy,gpu1,2,4,64,7,reached,125,bso,3,7,bso/max",
                # bso/jit+probe seed 1: 112 a recurrence against 80 (1.4).
                "toy,gpu1,1,1,64,7,reached,112,bso,2,7,bso/jit+probe",
                "toy,gpu1,1,2,64,7,reached,112,bso,3,7,bso/jit+probe"])
            out = late(d, runs, "2", "2")
            self.assertEqual(out.returncode, 0, out.stderr)
            table = [line for line in out.stdout.splitlines() if line.startswith("| bso")]
            self.assertEqual(table, ["| bso/jit+probe | 1 | 1 | 1 | 1 |",
                                     "| bso/max | 2 | 1 | 1 | 0 |"])
            dearest = [line.split() for line in out.stdout.splitlines() if line.startswith("  ")]
            self.assertEqual(len(dearest), 2)  # WORST 2
            self.assertEqual(dearest[0][2:6], ["bso/jit+probe", "seed", "1", "1.400"])
            self.assertEqual(dearest[1][2:6], ["bso/max", "seed", "2", "1.250"])
            self.assertIn("(64 x2)", out.stdout)
            for args, message in (([d], "usage"),
                                  ([d, runs, "x"], "whole numbers"),
                                  ([d, runs, "0"], "at least 1"),
                                  ([d, runs, "4"], "fewer than LAST"),
                                  ([os.path.join(d, "none"), runs], "cannot read the replay"),
                                  ([d, os.path.join(d, "summary.csv")], "no column 'arm'")):
                bad = late(*args)
                self.assert_refused(bad, message, args)
            # A real replay: every job of every arm counted once.
            write_synthetic(d)
            replay = os.path.join(d, "replay")
            real = os.path.join(d, "real.csv")
            ran = sim("--traces", d, "--gpu", "gpu1", "--workloads",
                      os.path.join(d, "workloads.csv"), "--policy", "zeus,bso", "--power",
                      "max,jit", "--seeds", "1-3", "--recurrences", "8", "--out", replay,
                      "--decisions", real)
            self.assertEqual(ran.returncode, 0, ran.stderr)
            out = late(replay, real, "4")
            self.assertEqual(out.returncode, 0, out.stderr)
            arms = [line.split("|")[1:3] for line in out.stdout.splitlines()
                    if line.startswith("| ") and "/" in line]
            self.assertEqual(sorted((a.strip(), n.strip()) for a, n in arms),
                             [("bso/jit", "3"), ("bso/max", "3"), ("zeus/jit", "3"),
                              ("zeus/max", "3")])
            changed = sim("--traces", d, "--gpu", "gpu1", "--workloads",
                          os.path.join(d, "workloads.csv"), "--policy", "bso", "--seeds",
                          "1-2", "--recurrences", "6", "--change", "3:time=2", "--out",
                          os.path.join(d, "changed"),
                          "--decisions", os.path.join(d, "changed.csv"))
            self.assertEqual(changed.returncode, 0, changed.stderr)
            out = late(os.path.join(d, "changed"), os.path.join(d, "changed.csv"), "2")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("| bso/max | 2 |", out.stdout)
            write_second_gpu(d)
            moved = sim("--traces", d, "--gpu", "gpu1", "--workloads",
                        os.path.join(d, "workloads.csv"), "--seeds", "1-2", "--recurrences",
                        "6", "--change", "3:gpu=gpu2", "--out", os.path.join(d, "moved"),
                        "--decisions", os.path.join(d, "moved.csv"))
            self.assertEqual(moved.returncode, 0, moved.stderr)
            bad = late(os.path.join(d, "moved"), os.path.join(d, "moved.csv"), "2")
            self.assertNotEqual(bad.returncode, 0)
            self.assertIn("move to another GPU", bad.stderr)
            # Written by hand: the oracle doubles from recurrence 3, and nothing reaches from 5.
            phased = os.path.join(d, "phased")
            os.mkdir(phased)
            write_csv(os.path.join(phased, "summary.csv"), SUMMARY_HEADER,
                      ["toy,gpu1,bso,max,5,1-1,0,0,100,0,0,0,0,0,none,"])
            write_csv(os.path.join(phased, "changes.csv"), CHANGES_HEADER,
                      ["toy,gpu1,bso,max,0,1,2,100,1,0,0,0,0,none,,32,0,0,0,0",
                       "toy,gpu1,bso,max,1,3,2,200,1,0,0,0,0,none,,64,0,0,0,0",
                       "toy,gpu1,bso,max,2,5,1,inf,nan,1,0,0,0,none,,0,0,0,0,0"])
            runs = os.path.join(phased, "runs.csv")
            write_csv(runs, DECISIONS_HEADER,
                      ["toy,gpu1,1,%d,64,5,%s,%d,bso,%d,5,bso/max"
                       % (rec, "reached" if rec < 5 else "failed", cost, rec)
                       for rec, cost in ((1, 100), (2, 100), (3, 250), (4, 230), (5, 999))])
            garbled = os.path.join(phased, "garbled.csv")
            write_csv(garbled, DECISIONS_HEADER,
                      ["toy,gpu1,one,1,64,5,reached,100,bso,1,5,bso/max"])  # seed not a number
            bad = late(phased, garbled, "1")
            self.assert_refused(bad, "cannot read the replay")
            out = late(phased, runs, "3", "1")
            self.assertEqual(out.returncode, 0, out.stderr)
            # Recurrences 3-5: (250 + 230) / (200 + 200), the fifth left out.
            self.assertIn("| bso/max | 1 | 1 | 0 | 0 |", out.stdout)
            self.assertIn(" 1.200 ", out.stdout)

    def test_paired_cells_says_where_a_policy_costs_more_beyond_noise(self):
        """tools/paired-cells.py: on a replay written by hand, a cell where bso costs 10% more
        than zeus on every seed is beyond the interval, one where it costs more on one seed
        and less on another is within noise, and one where it costs less is counted as such;
        --moved keeps only the phases after a change that moved the optimum; a real replay
        of both policies gives one cell per workload, GPU and power mode. Bad arguments get a
        message and a non-zero exit."""
        tool = os.path.join(HERE, "..", "..", "tools", "paired-cells.py")

        def paired(*args):
            return subprocess.run([sys.executable, tool, *args], capture_output=True, text=True,
                                  timeout=60)

        def rows(stdout):
            return [[c.strip() for c in line.split("|")[1:-1]] for line in stdout.splitlines()
                    if line.startswith("| ") and not line.startswith("| workload")]

        with tempfile.TemporaryDirectory() as d:
            # Phase 0 (recurrences 1-2, optimum 32) and phase 1 (3-4, optimum 64) on gpu1;
            # on gpu2 the optimum stays at 32.
            write_csv(os.path.join(d, "summary.csv"), SUMMARY_HEADER, [])
            write_csv(os.path.join(d, "changes.csv"), CHANGES_HEADER, [
                "toy,%s,%s,max,%d,%d,2,100,1,0,0,0,0,none,,%s,0,0,0,0"
                % (gpu, policy, phase, 1 + 2 * phase, "64" if gpu == "gpu1" and phase else "32")
                for gpu in ("gpu1", "gpu2") for policy in ("zeus", "bso") for phase in (0, 1)])
            lines = []
            for seed in (1, 2, 3):
                for rec in (1, 2, 3, 4):
                    for gpu in ("gpu1", "gpu2"):
                        zeus = 100 + 10 * seed
                        if gpu == "gpu1":  # 10% dearer in phase 1, 5% cheaper in phase 0
                            bso = zeus * (1.1 if rec >= 3 else 0.95)
                        else:  # phase 1: dearer on seed 1, cheaper on seed 2
                            bso = zeus + {1: 30, 2: -25, 3: 0}[seed] if rec >= 3 else zeus
                        for policy, spent in (("zeus", zeus), ("bso", bso)):
                            lines.append("toy,%s,%d,%d,32,5,reached,%g,%s,%d,5,%s/max"
                                         % (gpu, seed, rec, spent, policy, rec, policy))
            runs = os.path.join(d, "runs.csv")
            write_csv(runs, DECISIONS_HEADER, lines)
            out = paired(d, runs, "--all")
            self.assertEqual(out.returncode, 0, out.stderr)
            got = {(r[0], r[1], r[2]): (r[3], r[5]) for r in rows(out.stdout)}
            self.assertEqual(got[("toy", "gpu1", "1")], ("1.1000", "beyond"))
            self.assertEqual(got[("toy", "gpu1", "0")], ("0.9500", "cheaper beyond"))
            self.assertEqual(got[("toy", "gpu2", "1")][1], "within noise")
            self.assertEqual(got[("toy", "gpu2", "0")], ("1.0000", "within noise"))
            self.assertIn("4 cells: bso costs more in 2, beyond the 95% interval in 1; less "
                          "beyond it in 1", out.stdout)
            # Without --all only the dearer cells; --moved only gpu1's second phase.
            out = paired(d, runs)
            self.assertEqual(sorted(r[1] + "/" + r[2] for r in rows(out.stdout)),
                             ["gpu1/1", "gpu2/1"])
            out = paired(d, runs, "--moved")
            self.assertEqual([r[1] + "/" + r[2] for r in rows(out.stdout)], ["gpu1/1"])
            self.assertIn("1 cells: bso costs more in 1", out.stdout)
            # The other way round, zeus against bso.
            out = paired(d, runs, "--policy", "zeus", "--peer", "bso", "--moved")
            self.assertIn("1 cells: zeus costs more in 0, beyond the 95% interval in 0; less "
                          "beyond it in 1", out.stdout)
            # --trained: zeus left recurrences of gpu1's second phase without a model, so that
            # cell is no comparison and is left out.
            gave_up = os.path.join(d, "gave_up")
            os.mkdir(gave_up)
            write_csv(os.path.join(gave_up, "summary.csv"), SUMMARY_HEADER, [])
            write_csv(os.path.join(gave_up, "changes.csv"), CHANGES_HEADER, [
                "toy,%s,%s,max,%d,%d,2,100,1,%d,0,0,0,none,,%s,0,0,0,0"
                % (gpu, policy, phase, 1 + 2 * phase,
                   3 if (gpu, policy, phase) == ("gpu1", "zeus", 1) else 0,
                   "64" if gpu == "gpu1" and phase else "32")
                for gpu in ("gpu1", "gpu2") for policy in ("zeus", "bso") for phase in (0, 1)])
            out = paired(gave_up, runs, "--all", "--trained")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(sorted(r[1] + "/" + r[2] for r in rows(out.stdout)),
                             ["gpu1/0", "gpu2/0", "gpu2/1"])
            out = paired(gave_up, runs, "--all")
            self.assertEqual(len(rows(out.stdout)), 4)
            for args, message in (([d], "usage"),
                                  ([d, runs, "--level", "1.5"], "between 0 and 1"),
                                  ([d, runs, "--peer", "bso"], "the same policy"),
                                  ([d, runs, "--peer", "nobody"], "no runs of both"),
                                  ([os.path.join(d, "none"), runs], "cannot read the replay"),
                                  ([d, os.path.join(d, "changes.csv")], "no column 'arm'")):
                bad = paired(*args)
                self.assert_refused(bad, message, args)
            # A real replay of both policies, with and without a change.
            write_synthetic(d)
            for extra, cells in (([], 2), (["--change", "4:epochs=2@opt"], 4)):
                replay = os.path.join(d, "replay%d" % cells)
                real = os.path.join(d, "real%d.csv" % cells)
                ran = sim("--traces", d, "--gpu", "gpu1", "--workloads",
                          os.path.join(d, "workloads.csv"), "--policy", "zeus,bso", "--power",
                          "max,jit", "--seeds", "1-3", "--recurrences", "8", "--out", replay,
                          "--decisions", real, *extra)
                self.assertEqual(ran.returncode, 0, ran.stderr)
                out = paired(replay, real, "--all")
                self.assertEqual(out.returncode, 0, out.stderr)
                self.assertEqual(len(rows(out.stdout)), cells)
                self.assertIn("%d cells:" % cells, out.stdout)
            # A change at the first recurrence leaves phase 0 empty: every run is phase 1's, and
            # --trained goes by that phase's count.
            ran = sim("--traces", d, "--gpu", "gpu1", "--workloads",
                      os.path.join(d, "workloads.csv"), "--policy", "zeus,bso", "--seeds", "1-3",
                      "--recurrences", "6", "--change", "1:time=1", "--out",
                      os.path.join(d, "first"), "--decisions", os.path.join(d, "first.csv"))
            self.assertEqual(ran.returncode, 0, ran.stderr)
            out = paired(os.path.join(d, "first"), os.path.join(d, "first.csv"), "--all",
                         "--trained")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual([r[2] for r in rows(out.stdout)], ["1"])
            # Nothing moved without a change: no cell, and no error.
            out = paired(os.path.join(d, "replay2"), os.path.join(d, "real2.csv"), "--moved")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("0 cells: bso costs more in 0", out.stdout)
            # Without --change there is no count of recurrences without a model to go by.
            bad = paired(os.path.join(d, "replay2"), os.path.join(d, "real2.csv"), "--trained")
            self.assert_refused(bad, "needs a replay with --change")

    def test_sizes_that_reach_by_chance_replayed_identically_over_http(self):
        """A held-out synthetic workload whose sizes reach the target only some of the time
        (syn18 of set 808: max_epochs 78, 32 reaches three runs in five): the runs that ran to
        max_epochs without reaching (misses, which rank the rescue's sizes) are stored with
        each size and read back, so the decisions over HTTP are the in-process ones."""
        tool = os.path.join(HERE, "..", "..", "tools", "synthetic-traces.py")
        with Server(args=["--cache-mb", "0"]) as srv, tempfile.TemporaryDirectory() as d:
            traces = os.path.join(d, "traces")
            made = subprocess.run([sys.executable, tool, traces, "24", "808"],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(made.returncode, 0, made.stderr)
            got = {}
            for mode, extra in (("local", []), ("http", ["--server",
                                                         "http://127.0.0.1:%d" % srv.port])):
                p = os.path.join(d, "%s.csv" % mode)
                out = sim("--traces", traces, "--workloads", os.path.join(traces, "workloads.csv"),
                          "--workload", "syn18", "--gpu", "g1", "--policy", "bso", "--seeds",
                          "5-6", "--recurrences", "12", "--decisions", p, "--out", d, *extra)
                self.assertEqual(out.returncode, 0, out.stderr)
                got[mode] = [(r["seed"], r["trial"], r["batch_size"], r["outcome"], r["cost"],
                              r["epochs_run"]) for r in decisions(p)]
            self.assertEqual(got["local"], got["http"])
            reached = {(r[0], r[2]) for r in got["local"] if r[3] == "reached"}
            missed = {(r[0], r[2]) for r in got["local"]
                      if r[3] != "reached" and r[5] == "78"}
            self.assertTrue(reached & missed, got["local"])  # a size that reached also missed

    @unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                         "the shared traces are not beside the repository")
    def test_window_replayed_identically_over_http(self):
        """window_size: each size keeps the epochs of its last runs, which the server stores (on
        this suite's backend; no job cache, so every request reads them back) and reloads, so
        its decisions over HTTP are the in-process ones; and the window changes them."""
        with Server(args=["--cache-mb", "0"]) as srv, tempfile.TemporaryDirectory() as d:
            url = "http://127.0.0.1:%d" % srv.port
            got = {}
            for mode, window, extra in (("local", "3", []), ("http", "3", ["--server", url]),
                                        ("none", "0", [])):
                p = os.path.join(d, "%s.csv" % mode)
                out = sim("--traces", TRACES, "--gpu", "v100", "--workload", "librispeech",
                          "--policy", "bso", "--seeds", "1-2", "--recurrences", "30",
                          "--window", window, "--change", "12:epochs=1.3@>=opt",
                          "--decisions", p, "--out", d, *extra)
                self.assertEqual(out.returncode, 0, out.stderr)
                got[mode] = [(r["seed"], r["trial"], r["batch_size"], r["outcome"], r["cost"])
                             for r in decisions(p)]
            self.assertEqual(got["local"], got["http"])
            self.assertNotEqual(got["local"], got["none"])
            bad = sim("--traces", TRACES, "--window", "-1", "--gpu", "v100")
            self.assertEqual(bad.returncode, 2)
            self.assertIn("--window must be", bad.stderr)

    def test_change_errors(self):
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d)
            common = ["--traces", d, "--workloads", os.path.join(d, "workloads.csv"),
                      "--gpu", "gpu1", "--out", d]
            for bad, says in (("x:epochs=2", "whole number"), ("5:speed=2", "unknown kind"),
                              ("5:epochs=0", "factor"), ("5:epochs=2@<<opt", "sizes"),
                              ("5epochs", "R:KIND=FACTOR"),
                              ("51:epochs=2", "after the last one replayed")):  # N 50
                out = sim(*common, "--change", bad)
                self.assertEqual(out.returncode, 2, bad)
                self.assertIn(says, out.stderr, bad)
            # A drift in small steps: 48 changes replay (the replay took 16), 65 are refused.
            drift = ";".join("%d:epochs=1.01" % r for r in range(2, 50))
            out = sim(*common, "--change", drift, "--seeds", "1", "--recurrences", "50")
            self.assertEqual(out.returncode, 0, out.stderr)
            with open(os.path.join(d, "changes.csv")) as f:
                self.assertEqual(max(int(r["phase"]) for r in csv.DictReader(f)), 48)
            out = sim(*common, "--change", ";".join("%d:time=1.01" % r for r in range(2, 67)),
                      "--recurrences", "70")
            self.assertEqual(out.returncode, 2)
            self.assertIn("at most 64 changes", out.stderr)
            out = sim(*common, "--launches", "0")
            self.assertEqual(out.returncode, 2)
            out = sim(*common, "--move", "transfer")  # no move to another GPU to replay
            self.assertEqual(out.returncode, 2)
            self.assertIn("--change R:gpu=NAME", out.stderr)

    def replay_change(self, d, change, recurrences):
        """The bso policy on write_synthetic's traces in d, seed 1, under `change`: bso-sim's
        result, changes.csv's rows and the path of the decisions it wrote."""
        write_synthetic(d)
        dec = os.path.join(d, "dec.csv")
        out = sim("--traces", d, "--workloads", os.path.join(d, "workloads.csv"), "--gpu", "gpu1",
                  "--policy", "bso", "--seeds", "1", "--recurrences", str(recurrences),
                  "--change", change, "--decisions", dec, "--out", d)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(os.path.join(d, "changes.csv")) as f:
            return out, list(csv.DictReader(f)), dec

    def test_change_on_synthetic_traces(self):
        """Epochs x3 at the optimum (64: 20 epochs x 950) from recurrence 5: 64 can no longer
        reach within max_epochs (30), so 32 (its paths' 62 epochs over 3 successes x 1400 an
        epoch) is the new phase's oracle; the bso policy moves there and always trains a model."""
        with tempfile.TemporaryDirectory() as d:
            out, phases, dec = self.replay_change(d, "5:epochs=3@opt", 30)
            self.assertAlmostEqual(float(phases[0]["oracle_cost"]), 20 * 950, places=3)
            self.assertAlmostEqual(float(phases[1]["oracle_cost"]), 62 / 3 * 1400, places=1)
            self.assertEqual([p["optimum"] for p in phases], ["64", "32"])
            self.assertEqual(phases[1]["no_model"], "0")
            # What any policy would leave without a model: 64 always reaches before the change;
            # after it the likeliest size to reach is 32, three paths in four, so each of the
            # phase's 26 recurrences misses its five launches one time in 4^5.
            self.assertEqual(float(phases[0]["no_model_floor"]), 0)
            self.assertAlmostEqual(float(phases[1]["no_model_floor"]), 26 / 4 ** 5, places=2)
            self.assertIn("0 recurrences without a model (0.0 to expect of any policy)", out.stdout)
            self.assertEqual([p["changes_found"] for p in phases], ["0", "1"])
            last = [r for r in decisions(dec) if r["outcome"] == "reached"][-10:]
            self.assertTrue(all(r["batch_size"] == "32" for r in last), last)
            self.assertLess(float(phases[1]["lag"]), 10)

    def test_recurrences_given_up_at_the_launch_cap_are_reported(self):
        """Epochs x10 at every size from recurrence 5: no size can reach within max_epochs (30)
        any more, the bso policy keeps handing out sizes in case the job changes back, and the
        replay gives each recurrence up after 100 runs. Those recurrences cost only their runs,
        less than a trained model would, so changes.csv counts them (gave_up) and the table
        says so beside the ratio it flatters."""
        with tempfile.TemporaryDirectory() as d:
            out, phases, dec = self.replay_change(d, "5:epochs=10", 8)
            self.assertEqual([p["gave_up"] for p in phases], ["0", "4"])
            self.assertEqual(phases[1]["no_model"], "4")
            self.assertEqual(float(phases[1]["no_model_floor"]), 4)  # no policy can train one
            runs = collections.Counter(r["recurrence"] for r in decisions(dec))
            self.assertEqual([runs[str(r)] for r in range(5, 9)], [100] * 4)
            self.assertIn("4 recurrences given up after 100 runs without a model", out.stdout)

    def test_recurrences_refused_a_size_end_and_the_job_tries_again(self):
        """A job that rarely reaches: 32 in one path of four, 64 never. Where two passes over
        both sizes miss, the bso policy refuses the next recurrence a size (a 409 over HTTP):
        the replay ends that recurrence without a model and without a run, and the next asks
        again, and in some seeds a later pass trains the job. changes.csv counts each refused
        recurrence as one without a model, and the table says that some were refused."""
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d, paths32=("", "", "", "10"), paths64=("", "", ""))
            dec = os.path.join(d, "dec.csv")
            out = sim("--traces", d, "--workloads", os.path.join(d, "workloads.csv"), "--gpu",
                      "gpu1", "--policy", "bso", "--seeds", "1-8", "--recurrences", "12",
                      "--change", "1:time=1.0", "--decisions", dec, "--out", d)
            self.assertEqual(out.returncode, 0, out.stderr)
            runs = collections.defaultdict(list)
            for r in decisions(dec):
                runs[(r["seed"], int(r["recurrence"]))].append(r["outcome"])
            refused_then_trained, no_model = 0, 0
            for seed in range(1, 9):
                outcomes = [runs.get((str(seed), r), []) for r in range(1, 13)]
                no_model += sum("reached" not in o[:5] for o in outcomes)
                refused = [r for r, o in enumerate(outcomes) if not o]
                if refused and any("reached" in o for o in outcomes[refused[0]:]):
                    refused_then_trained += 1
            self.assertGreater(refused_then_trained, 0, dict(runs))
            with open(os.path.join(d, "changes.csv")) as f:
                counted = sum(int(p["no_model"]) for p in csv.DictReader(f))
            self.assertEqual(counted, no_model)
            with open(os.path.join(d, "changes.csv")) as f:
                refused = sum(int(p["refused"]) for p in csv.DictReader(f) if p["phase"] == "1")
            # A recurrence ends without a model before the replay's hundred launches only where
            # the policy refused it a size, after the runs of a pass or before any run.
            self.assertEqual(refused, sum(1 for seed in range(1, 9) for r in range(1, 13)
                                          if "reached" not in runs.get((str(seed), r), [])
                                          and len(runs.get((str(seed), r), [])) < 100))
            self.assertIn("(%d of them refused a batch size by the policy, at no cost)" % refused,
                          out.stdout)

    def test_move_decisions_name_their_arm(self):
        """A move to another GPU replayed fresh and with transfer in one command: each run in
        --decisions names its arm, and each arm's runs are those it makes when replayed alone."""
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d)
            write_second_gpu(d)
            common = ["--traces", d, "--workloads", os.path.join(d, "workloads.csv"),
                      "--gpu", "gpu1", "--policy", "bso", "--seeds", "1-2",
                      "--recurrences", "12", "--change", "5:gpu=gpu2"]
            runs = {}
            for moves in ("fresh,transfer", "transfer"):
                p = os.path.join(d, moves + ".csv")
                out = sim(*common, "--move", moves, "--decisions", p, "--out", d)
                self.assertEqual(out.returncode, 0, out.stderr)
                runs[moves] = decisions(p)
            both = runs["fresh,transfer"]
            self.assertEqual({r["arm"] for r in both}, {"bso/max+fresh", "bso/max+transfer"})
            for arm in ("bso/max+fresh", "bso/max+transfer"):
                recurrences = {(r["seed"], int(r["recurrence"])) for r in both if r["arm"] == arm}
                self.assertEqual(len(recurrences), 2 * 12, arm)
            self.assertEqual([r for r in both if r["arm"] == "bso/max+transfer"],
                             runs["transfer"])

    def test_a_moved_job_probes_its_new_gpu(self):
        """--profile probe with a move: the new job probes its new GPU before its first
        recurrence there, which pays for that probe at the new GPU's rates; without a profile
        no recurrence costs more than its runs."""
        with tempfile.TemporaryDirectory() as d:
            write_synthetic(d)
            write_second_gpu(d, top64=(4, 170))  # 64 unlike gpu1's, so the probes cost apart
            wl = os.path.join(d, "workloads.csv")
            write_workloads_with_samples(wl)
            path = os.path.join(d, "runs.csv")
            out = sim("--traces", d, "--workloads", wl, "--gpu", "gpu1", "--policy", "bso",
                      "--seeds", "1", "--recurrences", "8", "--change", "5:gpu=gpu2",
                      "--move", "fresh,transfer", "--profile", "none,probe", "--probe-noise",
                      "0", "--probe-steps", "10", "--decisions", path, "--out", d)
            self.assertEqual(out.returncode, 0, out.stderr)
            spent = collections.defaultdict(float)
            for r in decisions(path):
                spent[r["arm"], int(r["recurrence"])] += float(r["cost"])
            curves = collections.defaultdict(list)
            for r in decisions(os.path.join(d, "curves.csv")):
                curves[r["profile"], r["move"]].append(float(r["mean_cost"]))

            def probe_cost(t32_per_1000, w32, t64_per_1000, w64):
                # 10 steps of 32 samples, then 12 of 64 (the failed try at 128 counts as two
                # more), at the largest limit; cost = 0.5 * J + 0.5 * 200 W * s.
                t32, t64 = 10 * 32 * t32_per_1000 / 1000, 12 * 64 * t64_per_1000 / 1000
                return 0.5 * (t32 * w32 + t64 * w64) + 0.5 * 200 * (t32 + t64)

            for move in ("fresh", "transfer"):
                for profile, arm in (("probe", "bso/max+probe+" + move), ("none", "bso/max+" + move)):
                    curve = curves[profile, move]
                    self.assertEqual(len(curve), 8, (profile, move))
                    # curves.csv has six significant digits
                    extra = [(c - spent[arm, r + 1], 1e-5 * c) for r, c in enumerate(curve)]
                    want = {0: probe_cost(8, 150, 5, 180), 4: probe_cost(2, 150, 4, 170)}
                    for r, (e, tol) in enumerate(extra):
                        expect = want.get(r, 0) if profile == "probe" else 0
                        self.assertAlmostEqual(e, expect, delta=tol, msg=(arm, r + 1))

    @unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                         "the shared traces are not beside the repository")
    def test_jit_posts_power_profiles(self):
        """--power jit through a server posts what the first epoch at each size profiled, as
        a client with optimize_power does: one profile per size run, the cheapest limit."""
        with Server() as srv, tempfile.TemporaryDirectory() as d:
            url = "http://127.0.0.1:%d" % srv.port
            p = os.path.join(d, "runs.csv")
            out = sim("--traces", TRACES, "--gpu", "a40", "--workload", "squad", "--policy",
                      "bso", "--power", "jit", "--seeds", "5", "--recurrences", "8",
                      "--keep-jobs", "yes", "--decisions", p, "--out", d, "--server", url)
            self.assertEqual(out.returncode, 0, out.stderr)
            (job_id,) = [j["job_id"] for j in srv.request("GET", "/jobs")[1]["jobs"]]
            job = srv.request("GET", "/jobs/" + job_id)[1]
            profiles = job["power_profiles"]
            run_sizes = {int(r["batch_size"]) for r in decisions(p)}
            self.assertEqual({x["batch_size"] for x in profiles}, run_sizes)
            for x in profiles:
                costs = {m["power_limit"]: m["cost_per_sample"] for m in x["measurements"]}
                self.assertGreaterEqual(len(costs), 2)
                self.assertEqual(x["power_limit"], min(costs, key=costs.get), x)
                self.assertEqual(x["device"], "trace")


if __name__ == "__main__":
    unittest.main()
