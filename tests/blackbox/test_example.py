"""End to end: examples/digits/train.py (a real PyTorch CNN on scikit-learn's digits, CPU) runs
as a recurring job against a real bso-server, single-process and data-parallel (gloo)."""
import json
import os
import re
import subprocess
import sys
import unittest

from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "..", "..", "examples", "digits", "train.py")
SOURCES = {"nvml-counter", "nvml-power", "rapl", "estimate"}

try:
    import sklearn  # noqa: F401
    import torch  # noqa: F401
except ImportError:
    torch = None


@unittest.skipIf(torch is None, "python3-torch and python3-sklearn are not installed")
class DigitsExample(unittest.TestCase):
    def train(self, srv, job_id, *args):
        env = dict(os.environ, BSO_SERVER_URL="http://127.0.0.1:%d" % srv.port,
                   BSO_ASSUMED_POWER_W="65")
        p = subprocess.run([sys.executable, TRAIN, "--job-id", job_id] + list(args), env=env,
                           capture_output=True, text=True, timeout=600)
        lines = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
        self.assertIn(p.returncode, (0, 3), p.stdout + p.stderr)
        self.assertTrue(lines, p.stderr)
        return p.returncode, lines

    def test_recurring_job(self):
        with Server() as srv:
            runs = [self.train(srv, "digits-e2e", "--seed", "5") for _ in range(14)]
            job = srv.request("GET", "/jobs/digits-e2e")[1]
            self.assertEqual(job["spec"]["policy"], "bso")  # the server's default
            self.assertEqual(job["stage"], "MAB")  # through exploration into Thompson sampling
            trials = {t["trial_number"]: t for t in
                      srv.request("GET", "/jobs/digits-e2e/trials")[1]["trials"]}
            self.assertEqual(len(trials), 14)
            for rc, (r,) in runs:
                t = trials[r["trial"]]
                self.assertEqual(t["status"], "Succeeded")
                self.assertEqual(t["batch_size"], r["batch_size"])
                # A run the server stopped unconverged raised the train-fail error (exit 3).
                self.assertEqual(rc == 3, not t["converged"], (r, t))
                if rc == 3:
                    self.assertIn("Train failed", r["error"])
                self.assertGreater(t["time"], 0)
                self.assertGreater(t["energy"], 0)
                self.assertIn(t["energy_source"], SOURCES)
                self.assertEqual(t["energy_source"], r["source"])
            # Whether the policy stops a probe here hangs on wall-clock timings (the costs per
            # epoch of neighbouring sizes are within noise of each other), so the stopped path
            # is made certain apart: a target no run reaches ends in the train-fail error.
            rc, (r,) = self.train(srv, "digits-unreachable", "--target", "1.01",
                                  "--max-epochs", "2")
            self.assertEqual(rc, 3, r)
            self.assertIn("Train failed", r["error"])
            t = srv.request("GET", "/jobs/digits-unreachable/trials")[1]["trials"][0]
            self.assertEqual((t["status"], t["converged"]), ("Succeeded", False))
            # `bso show` names the cheapest batch size.
            out = subprocess.run([os.environ["BSO_CLI_BIN"], "--server",
                                  "http://127.0.0.1:%d" % srv.port, "show", "digits-e2e"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            best = int(re.search(r"best batch size so far: (\d+)", out.stdout).group(1))
            cheapest = min((s for s in job["batch_size_stats"] if s["expected_cost"] is not None),
                           key=lambda s: s["expected_cost"])["batch_size"]
            self.assertEqual(best, cheapest, out.stdout)

    def test_data_parallel(self):
        with Server() as srv:
            for _ in range(2):
                rc, lines = self.train(srv, "digits-dp", "--world-size", "2")
                self.assertEqual(sorted(l["rank"] for l in lines), [0, 1])
                self.assertEqual(len({(l["batch_size"], l["trial"]) for l in lines}), 1)
                self.assertEqual(len({l["epochs"] for l in lines if "epochs" in l}), 1)
                t = srv.request("GET", "/jobs/digits-dp/trials?after=%d" %
                                (lines[0]["trial"] - 1))[1]["trials"][0]
                self.assertEqual(t["batch_size"], lines[0]["batch_size"])
                self.assertEqual(t["status"], "Succeeded")
                self.assertIn(t["energy_source"], SOURCES)
            spec = srv.request("GET", "/jobs/digits-dp")[1]["spec"]
            self.assertEqual(spec["number_of_gpus"], 2)  # the job spans both ranks

    def test_adapt(self):
        """--adapt: the batch size changes during the run, from the size the server chose."""
        with Server() as srv:
            for kind in ("ramp", "memory", "noise"):
                rc, (r,) = self.train(srv, "digits-adapt-" + kind, "--adapt", kind,
                                      "--max-epochs", "4")
                self.assertIn("mean_batch_size", r, r)
                if kind == "ramp":  # from the smallest size up to the chosen one
                    self.assertLess(r["mean_batch_size"], r["batch_size"])
                if kind == "memory":  # the CPU reports no memory pressure: it grows
                    self.assertGreater(r["mean_batch_size"], r["batch_size"])
                t = srv.request("GET", "/jobs/digits-adapt-%s/trials" % kind)[1]["trials"][0]
                self.assertEqual(t["batch_size"], r["batch_size"])
                self.assertEqual(t["status"], "Succeeded")
                # The server kept the run's batch size over time: one point per epoch, ending
                # at the run's own mean.
                self.assertEqual([p["epoch"] for p in t["progress"]],
                                 list(range(1, r["epochs"] + 1)))
                self.assertAlmostEqual(t["mean_batch_size"], r["mean_batch_size"], delta=0.1)
                if kind == "ramp":  # each epoch's batch is at least the one before
                    sizes = [p["batch_size"] for p in t["progress"]]
                    self.assertTrue(all(b > a - 1e-6 for a, b in zip(sizes, sizes[1:])), sizes)
            # Data parallel: rank 0 decides, both ranks take the same sizes at the same steps.
            rc, lines = self.train(srv, "digits-adapt-dp", "--adapt", "memory", "--world-size",
                                   "2", "--max-epochs", "3")
            self.assertEqual(sorted(l["rank"] for l in lines), [0, 1])
            self.assertEqual(len({l["steps"] for l in lines}), 1, lines)
            # The shards differ by one sample at most: so do the ranks' epochs.
            self.assertLess(abs(lines[0]["mean_batch_size"] - lines[1]["mean_batch_size"]), 1)


SYNTHETIC = os.path.join(HERE, "..", "..", "examples", "synthetic")


@unittest.skipIf(torch is None, "python3-torch and python3-sklearn are not installed")
class SyntheticExample(unittest.TestCase):
    """examples/synthetic/train.py, whose --label-noise makes the drift of
    tools/gpu-drift-check.sh."""

    def test_label_noise_replaces_a_share_of_the_training_labels_only(self):
        sys.path.insert(0, SYNTHETIC)
        try:
            import train as synthetic
        finally:
            sys.path.remove(SYNTHETIC)
        (xt, yt), (xv, yv) = synthetic.data(20000, "cpu")
        (xn, yn), (xvn, yvn) = synthetic.data(20000, "cpu", 0.2)
        self.assertTrue(torch.equal(xt, xn) and torch.equal(xv, xvn) and torch.equal(yv, yvn))
        changed = (yt != yn).float().mean().item()
        # A fifth replaced at random; one in 16 of those draws the label it had.
        self.assertAlmostEqual(changed, 0.2 * 15 / 16, delta=0.01)

    def test_runs_against_the_server_and_rejects_bad_noise(self):
        train = os.path.join(SYNTHETIC, "train.py")
        env = dict(os.environ, BSO_ASSUMED_POWER_W="65")
        with Server() as srv:
            args = [sys.executable, train, "--server", "http://127.0.0.1:%d" % srv.port,
                    "--job-id", "synthetic-test", "--device", "cpu", "--width", "32",
                    "--depth", "1", "--samples", "2000", "--target", "0.3", "--max-epochs", "4"]
            p = subprocess.run(args + ["--label-noise", "0.1"], env=env, capture_output=True,
                               text=True, timeout=300)
            self.assertIn(p.returncode, (0, 3), p.stdout + p.stderr)
            run = json.loads(p.stdout.splitlines()[-1])
            self.assertEqual((run["trial"], run["batch_size"]), (1, 256))  # the default first
            self.assertGreaterEqual(run["epochs"], 1)
            bad = subprocess.run(args + ["--label-noise", "1.5"], env=env, capture_output=True,
                                 text=True, timeout=300)
            self.assertEqual(bad.returncode, 2)
            self.assertIn("--label-noise must be in [0, 1)", bad.stderr)
            # The job moved to other hardware (tools/gpu-transfer-check.sh): a new job started
            # from the old one's evidence.
            moved = [a if a != "synthetic-test" else "synthetic-moved" for a in args]
            p = subprocess.run(moved + ["--transfer-from", "synthetic-test"], env=env,
                               capture_output=True, text=True, timeout=300)
            self.assertIn(p.returncode, (0, 3), p.stdout + p.stderr)
            status, job = srv.request("GET", "/jobs/synthetic-moved")
            self.assertEqual(status, 200, job)
            self.assertEqual(job["transferred_from"]["job_id"], "synthetic-test")
            # The device probe in a process of its own: a profile, and no training run.
            probed = [a if a != "synthetic-moved" else "synthetic-probed" for a in moved]
            p = subprocess.run(probed + ["--probe-only"], env=env, capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            out = json.loads(p.stdout.splitlines()[-1])
            self.assertNotIn("trial", out)
            self.assertEqual(len(out["probe"]), 7)
            status, job = srv.request("GET", "/jobs/synthetic-probed")
            self.assertEqual(status, 200, job)
            self.assertEqual(job["trials"]["total"], 0)
            self.assertEqual([(q["batch_size"], q["device"]) for q in job["profile"]],
                             [(b, "cpu") for b in (64, 128, 256, 512, 1024, 2048, 4096)])
            unknown = subprocess.run(moved + ["--job-id", "synthetic-other", "--transfer-from",
                                              "no-such-job"], env=env, capture_output=True,
                                     text=True, timeout=300)
            self.assertNotIn(unknown.returncode, (0, 3))
            self.assertIn("Unknown job(no-such-job) to transfer from", unknown.stderr)


if __name__ == "__main__":
    unittest.main()
