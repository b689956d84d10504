"""POST /jobs/ID/profile (issue #9, item 2): a probe's measurements are stored per batch size,
sizes that do not fit are never dispatched under either policy (and `bso show` says so), a later
profile can bring them back, and bad profiles get clear 4xx answers."""
import json
import os
import subprocess
import unittest

from harness import Server, fake_job

CLI = os.environ.get("BSO_CLI_BIN", "bso")


def entry(bs, feasible=True, sps=1000.0, jps=0.5, peak=2 ** 30):
    return {"batch_size": bs, "feasible": feasible, "samples_per_s": sps,
            "joules_per_sample": jps, "peak_memory_bytes": peak}


class Profile(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)

    def job(self, job_id, policy):
        spec = dict(fake_job(job_id), batch_sizes=[16, 32, 64, 128], default_batch_size=64,
                    policy=policy, num_pruning_rounds=1)
        self.assertEqual(self.srv.register(spec)[0], 201)

    def profile(self, job_id, entries, device="Tesla V100"):
        return self.srv.request("POST", "/jobs/%s/profile" % job_id,
                                {"device": device, "batch_sizes": entries})

    def test_unfit_sizes_are_never_dispatched(self):
        # Zeus policy: the walk goes down from 64, then up; 128 does not fit.
        self.job("test-prof-z", "zeus")
        status, body = self.profile("test-prof-z", [entry(128, feasible=False, sps=None,
                                                          jps=None, peak=None), entry(64)])
        self.assertEqual(status, 200, body)
        self.assertEqual(body["unfit_batch_sizes"], [128])
        self.assertEqual([e["batch_size"] for e in body["profile"]], [64, 128])
        self.assertEqual(body["profile"][0]["device"], "Tesla V100")
        self.assertIsNone(body["profile"][1]["samples_per_s"])
        seen = []
        for _ in range(4):
            status, t = self.srv.predict("test-prof-z")
            self.assertEqual(status, 200, t)
            seen.append(t["batch_size"])
            self.srv.report("test-prof-z", t["batch_size"], t["trial_number"], 10, 100, 0.9, 1)
        self.assertNotIn(128, seen)
        self.assertEqual(seen[:3], [64, 32, 16])
        _, job = self.srv.request("GET", "/jobs/test-prof-z")
        self.assertEqual(job["unfit_batch_sizes"], [128])
        self.assertEqual(len(job["profile"]), 2)
        out = subprocess.run([CLI, "--server", "http://127.0.0.1:%d" % self.srv.port, "show",
                              "test-prof-z"], capture_output=True, text=True, timeout=60)
        self.assertIn("unfit (the device's profile says they do not fit", out.stdout)
        url = "http://127.0.0.1:%d" % self.srv.port
        out = subprocess.run([CLI, "--server", url, "probe", "test-prof-z"], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("SAMPLES/S", lines[0])
        self.assertRegex(lines[1], r"^\s+64\s+yes\s+1000\.0\s+0\.5000\s+1024\.0\s+#{20}")
        self.assertRegex(lines[2], r"^\s+128\s+no\s+-\s+-\s+-")
        out = subprocess.run([CLI, "--server", url, "--json", "probe", "test-prof-z"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(len(json.loads(out.stdout)), 2)

    def test_bso_policy_skips_an_unfit_default_until_it_fits(self):
        self.job("test-prof-b", "bso")
        self.assertEqual(self.profile("test-prof-b", [entry(64, feasible=False)])[0], 200)
        _, t = self.srv.predict("test-prof-b")
        self.assertEqual(t["batch_size"], 32)  # the default does not fit: the next one down
        self.srv.end_trial("test-prof-b", 32, t["trial_number"])
        # A new probe (say, on a bigger device) finds it fits after all.
        _, body = self.profile("test-prof-b", [entry(64)], device="A100-80GB")
        self.assertEqual(body["unfit_batch_sizes"], [])
        _, t = self.srv.predict("test-prof-b")
        self.assertEqual(t["batch_size"], 64)

    def test_profile_scales_the_bso_policys_estimates(self):
        self.job("test-prof-est", "bso")
        _, t = self.srv.predict("test-prof-est")
        self.assertEqual(t["batch_size"], 64)
        for epoch in (1, 2, 3):  # 10 s and 1000 J an epoch; reaches the target at epoch 3
            self.srv.report("test-prof-est", 64, t["trial_number"], 10.0 * epoch,
                            1000.0 * epoch, 0.9 if epoch == 3 else 0.1, epoch)
        def estimates():
            _, job = self.srv.request("GET", "/jobs/test-prof-est")
            return {s["batch_size"]: s["estimated_cost_per_epoch"]
                    for s in job["batch_size_stats"]}
        before = estimates()
        # 128 takes half the time and 80% of the energy per sample.
        status, _ = self.profile("test-prof-est", [entry(64, sps=100.0, jps=10.0),
                                                   entry(128, sps=200.0, jps=8.0)])
        self.assertEqual(status, 200)
        after = estimates()
        self.assertEqual(after[64], before[64])  # measured
        eta, max_power = 0.5, 3000.0             # fake_job's
        cps = lambda sps, jps: eta * jps + (1 - eta) * max_power / sps
        self.assertAlmostEqual(after[128], after[64] * cps(200, 8) / cps(100, 10), places=6)
        self.assertNotAlmostEqual(after[128], before[128], places=3)
        self.srv.restart()  # stored, not just cached
        self.assertAlmostEqual(estimates()[128], after[128], places=6)

    def test_bad_profiles(self):
        self.job("test-prof-bad", "zeus")
        out = subprocess.run([CLI, "--server", "http://127.0.0.1:%d" % self.srv.port, "probe",
                              "test-prof-bad"], capture_output=True, text=True, timeout=60)
        self.assertIn("no profile yet", out.stdout)
        cases = [
            ({"batch_sizes": [entry(64, sps=-1)]}, 422, "samples_per_s"),
            ({"batch_sizes": []}, 422, "batch_sizes"),
            ({"batch_sizes": "64"}, 422, "batch_sizes"),
            ({"batch_sizes": [{"batch_size": 64}]}, 422, "feasible"),
            ({"batch_sizes": [entry(0)]}, 422, "batch_size"),
            ({"batch_sizes": [entry(64, jps="inf")]}, 422, "joules_per_sample"),
            ({"batch_sizes": [entry(48)]}, 400, "not one of"),
        ]
        for body, status, text in cases:
            with self.subTest(body=body):
                got, data = self.srv.request("POST", "/jobs/test-prof-bad/profile", body)
                self.assertEqual(got, status, data)
                self.assertIn(text, str(data))
        self.assertEqual(self.srv.request("POST", "/jobs/absent/profile",
                                          {"batch_sizes": [entry(64)]})[0], 404)
        _, job = self.srv.request("GET", "/jobs/test-prof-bad")
        self.assertEqual((job["profile"], job["unfit_batch_sizes"]), ([], []))

    def test_cli_stores_a_profile(self):
        """bso probe JOB PROFILE.json (or - for standard input) stores a profile and prints what
        the server kept; a bad one is refused with the server's message, a missing file with
        the system's, and extra arguments are a usage error."""
        import tempfile
        self.job("test-prof-cli", "bso")
        url = "http://127.0.0.1:%d" % self.srv.port

        def cli(*args, stdin=None):
            return subprocess.run([CLI, "--server", url] + list(args), capture_output=True,
                                  text=True, timeout=60, input=stdin)
        body = {"device": "H200", "batch_sizes": [entry(64), entry(128, feasible=False, sps=None,
                                                                jps=None, peak=None)]}
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(body, f)
            f.flush()
            out = cli("probe", "test-prof-cli", f.name)
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("SAMPLES/S", lines[0])
        self.assertRegex(lines[1], r"^\s+64\s+yes\s+1000\.0\s+0\.5000\s+1024\.0\s+#{20}.*H200$")
        self.assertRegex(lines[2], r"^\s+128\s+no\s+-\s+-\s+-")
        _, job = self.srv.request("GET", "/jobs/test-prof-cli")
        self.assertEqual(job["unfit_batch_sizes"], [128])
        # Standard input, --json: the stored profile as the server answers it (64 fits again).
        out = cli("--json", "probe", "test-prof-cli", "-",
                  stdin=json.dumps({"device": "H200", "batch_sizes": [entry(128, sps=2000.0)]}))
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual({e["batch_size"]: e["feasible"] for e in json.loads(out.stdout)},
                         {64: True, 128: True})
        out = cli("probe", "test-prof-cli", "-", stdin='{"batch_sizes": [{"batch_size": 64}]}')
        self.assertEqual(out.returncode, 1)
        self.assertIn("422", out.stderr)
        self.assertIn("feasible", out.stderr)
        out = cli("probe", "test-prof-cli", "/nonexistent/profile.json")
        self.assertEqual(out.returncode, 1)
        self.assertIn("cannot read", out.stderr)
        out = cli("probe", "test-prof-cli", "a.json", "b.json")
        self.assertEqual(out.returncode, 2)
        self.assertIn("expected JOB", out.stderr)
        self.assertEqual(cli("probe", "absent", "-", stdin=json.dumps(body)).returncode, 1)


if __name__ == "__main__":
    unittest.main()
