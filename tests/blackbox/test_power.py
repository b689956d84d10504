"""Batch size and GPU power limit together (issue #11), end to end: a real server, libbso's
tuner on the fake NVML (a GPU whose power and step time follow a script per limit), and the
Python optimizer with optimize_power. The chosen limit, the server round trip (stored once,
handed to later runs), the original limit back after a normal end, an exception and SIGTERM,
`bso gpus --restore-power` after SIGKILL, the fallback without permission, and bad input."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.environ.get("BSO_CLI_BIN", "bso")
# Cost per sample (eta 0.5, max_power 300 W) is least at 200 W: see tests/test_power.c.
CURVE = "curve=100:95:150,150:140:80,200:180:60,250:225:58,300:260:56"


class Power(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="bso-power-")
        self.addCleanup(self.tmp.cleanup)
        self.srv = Server()
        self.srv.start()
        self.addCleanup(self.srv.stop)
        self.url = "http://127.0.0.1:%d" % self.srv.port
        self.state = os.path.join(self.tmp.name, "limits")
        self.script = os.path.join(self.tmp.name, "nvml.txt")
        self.env = dict(os.environ, BSO_NVML_LIBRARY=os.environ["BSO_FAKE_NVML_LIB"],
                        BSO_FAKE_NVML=self.script, BSO_FAKE_NVML_STATE=self.state,
                        BSO_POWER_RECORD=os.path.join(self.tmp.name, "record"),
                        BSO_POWERCAP_ROOT="/nonexistent")
        self.env.pop("BSO_ASSUMED_POWER_W", None)
        self.gpu()

    def gpu(self, extra=""):
        with open(self.script, "w") as f:
            f.write('gpu name="Fake A100" max_mw=300000 min_mw=100000 limit_mw=280000 %s %s\n'
                    % (CURVE, extra))

    def limit(self):
        with open(self.state) as f:
            return int(f.read().split()[1]) / 1000

    def train(self, job_id, mode="normal"):
        return subprocess.Popen([sys.executable, os.path.join(HERE, "power_train.py"), self.url,
                                 job_id, mode], env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def finish(self, proc):
        out, err = proc.communicate(timeout=120)
        return proc.returncode, out, err

    def result(self, job_id, mode="normal"):
        rc, out, err = self.finish(self.train(job_id, mode))
        self.assertEqual(rc, 0, err)
        return json.loads(out.strip().splitlines()[-1]), err

    def test_profiles_once_and_later_runs_get_the_limit(self):
        first, log = self.result("pw-1")
        self.assertEqual(first["power_limit"], 200, log)
        self.assertTrue(first["profiled"])
        self.assertEqual(first["seen"], [100, 150, 200, 250, 300])
        self.assertEqual(self.limit(), 280)  # the original, after the run
        job = self.srv.request("GET", "/jobs/pw-1")[1]
        self.assertEqual(job["trials"]["succeeded"], 1)
        (profile,) = job["power_profiles"]
        self.assertEqual((profile["batch_size"], profile["power_limit"], profile["device"]),
                         (64, 200, "Fake A100"))
        limits = [m["power_limit"] for m in profile["measurements"]]
        self.assertEqual(limits, [300, 250, 200, 150, 100])
        costs = [m["cost_per_sample"] for m in profile["measurements"]]
        self.assertEqual(min(costs), costs[2])
        for m, (watts, ms) in zip(profile["measurements"],
                                  [(260, 56), (225, 58), (180, 60), (140, 80), (95, 150)]):
            self.assertAlmostEqual(m["power"], watts, delta=0.05 * watts)
            self.assertAlmostEqual(m["samples_per_s"], 64 / (ms / 1000), delta=0.05 * 64000 / ms)
        # The next run of that size sets 200 W at once: no profiling.
        second, log = self.result("pw-1")
        self.assertEqual((second["power_limit"], second["profiled"], second["seen"]),
                         (200, False, [200]), log)
        self.assertIn("chosen by an earlier run", log)
        self.assertEqual(self.limit(), 280)
        status, answer = self.srv.request("GET", "/jobs/batch_size?job_id=pw-1")
        self.assertEqual((status, answer["power_limit"]), (200, 200))
        # A job nobody profiled gets Zeus's answer, without the key.
        self.srv.register({"job_id": "zeus-1", "job_id_prefix": "zeus", "batch_sizes": [8, 16],
                           "default_batch_size": 8, "max_power": 300, "number_of_gpus": 1,
                           "gpu_model": "A100"})
        self.assertEqual(sorted(self.srv.predict("zeus-1")[1]),
                         ["batch_size", "job_id", "trial_number"])
        shown = subprocess.run([CLI, "--server", self.url, "show", "pw-1"], capture_output=True,
                               text=True, timeout=60)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("power limits", shown.stdout)
        self.assertRegex(shown.stdout, r"\s+64\s+200\s+300:")

    def test_a_run_shorter_than_the_profile_chooses_among_what_it_measured(self):
        """The run reaches its target before every limit was measured (epochs shorter than
        the profile, as on a fast GPU): the limits measured decide, the profile is posted, and
        the next run of that size sets the choice without profiling."""
        first, log = self.result("pw-short", "short")
        self.assertTrue(first["profiled"], log)
        self.assertGreaterEqual(first["measured"], 2)
        self.assertLess(first["measured"], 5)
        self.assertIn("measured before the run ended", log)
        self.assertEqual(self.limit(), 280)  # the original, after the run
        (profile,) = self.srv.request("GET", "/jobs/pw-short")[1]["power_profiles"]
        limits = [m["power_limit"] for m in profile["measurements"]]
        self.assertEqual(limits, [300, 250, 200, 150, 100][:first["measured"]])
        self.assertEqual(profile["power_limit"], first["power_limit"])
        second, log = self.result("pw-short", "short")
        self.assertEqual((second["power_limit"], second["profiled"]),
                         (first["power_limit"], False), log)

    def test_a_limit_outside_these_gpus_range_is_profiled_again(self):
        """A stored choice made on other GPUs (500 W where these stop at 300 W) is not forced:
        the run profiles again and the new choice replaces it."""
        self.srv.register({"job_id": "pw-6", "job_id_prefix": "pw", "batch_sizes": [64],
                           "default_batch_size": 64, "target_metric": 0.9, "max_epochs": 5,
                           "max_power": 300, "number_of_gpus": 1, "gpu_model": "Fake A100"})
        status, _ = self.srv.request("POST", "/jobs/pw-6/power", {
            "batch_size": 64, "power_limit": 500,
            "measurements": [{"power_limit": 500, "samples_per_s": 10, "power": 400}]})
        self.assertEqual(status, 200)
        run, log = self.result("pw-6")
        self.assertEqual((run["power_limit"], run["profiled"]), (200, True), log)
        self.assertIn("outside the GPUs' range", log)
        (profile,) = self.srv.request("GET", "/jobs/pw-6")[1]["power_profiles"]
        self.assertEqual(profile["power_limit"], 200)

    def test_exception_restores(self):
        rc, out, err = self.finish(self.train("pw-2", "raise"))
        self.assertNotEqual(rc, 0)
        self.assertIn("the loss diverged", err)
        self.assertEqual(self.limit(), 280)
        with open(self.env["BSO_POWER_RECORD"]) as f:
            self.assertEqual(f.read(), "")

    def test_sigterm_restores(self):
        proc = self.train("pw-3", "hang")
        self.assertEqual(proc.stdout.readline().strip(), "PROFILING")
        self.assertNotEqual(self.limit(), 280)
        proc.send_signal(signal.SIGTERM)
        rc, _, err = self.finish(proc)
        self.assertEqual(rc, -signal.SIGTERM, err)
        self.assertEqual(self.limit(), 280)

    def test_restore_power_after_sigkill(self):
        proc = self.train("pw-4", "hang")
        self.assertEqual(proc.stdout.readline().strip(), "PROFILING")
        proc.kill()
        self.finish(proc)
        left = self.limit()
        self.assertNotEqual(left, 280)  # nothing could run: the limit stays
        gpus = lambda: subprocess.run([CLI, "gpus", "--restore-power"], env=self.env,
                                      capture_output=True, text=True, timeout=60)
        out = gpus()
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("power limit back to 280 W", out.stdout)
        self.assertEqual(self.limit(), 280)
        out = gpus()
        self.assertEqual((out.returncode, out.stdout.strip()),
                         (0, "no power limit left behind to restore"))
        out = subprocess.run([CLI, "gpus", "--restore"], env=self.env, capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--restore-power", out.stderr)

    def test_without_permission_the_batch_size_is_still_optimised(self):
        self.gpu("setlimit=denied")
        run, log = self.result("pw-5")
        self.assertEqual((run["power_limit"], run["profiled"], run["seen"]), (None, False, []))
        self.assertIn("CAP_SYS_ADMIN", log)
        self.assertIn("batch size only", log)
        job = self.srv.request("GET", "/jobs/pw-5")[1]
        self.assertEqual((job["trials"]["succeeded"], job["power_profiles"]), (1, []))

    def test_bad_input(self):
        self.srv.register({"job_id": "bad-1", "job_id_prefix": "bad", "batch_sizes": [8, 16],
                           "default_batch_size": 8, "max_power": 300, "number_of_gpus": 1,
                           "gpu_model": "A100"})
        good = {"batch_size": 8, "measurements": [
            {"power_limit": 300, "samples_per_s": 100, "power": 250},
            {"power_limit": 200, "samples_per_s": 90, "power": 170}]}
        status, body = self.srv.request("POST", "/jobs/bad-1/power", good)
        self.assertEqual(status, 200, body)
        self.assertEqual(body["power_limit"], 200)  # the server chose: 0.2333 vs 0.2389 J/sample
        for bad, want in [
                ({}, 422),
                (dict(good, measurements=[]), 422),
                (dict(good, measurements=[{"power_limit": -5, "samples_per_s": 1, "power": 1}]),
                 422),
                (dict(good, measurements=[{"power_limit": 300}]), 422),
                (dict(good, measurements=good["measurements"] * 2), 422),
                (dict(good, batch_size="x"), 422),
                (dict(good, batch_size=32), 400),
                (dict(good, power_limit=250), 400)]:
            with self.subTest(bad=bad):
                status, body = self.srv.request("POST", "/jobs/bad-1/power", bad)
                self.assertEqual(status, want, body)
                self.assertTrue(body.get("detail") or body.get("message"), body)
        status, body = self.srv.request("POST", "/jobs/nope/power", good)
        self.assertEqual(status, 404, body)


if __name__ == "__main__":
    unittest.main()
