"""The dashboard and /metrics against a real bso-server filled by a seeded simulation, with API
tokens on: headless Chromium (Debian's) driven by playwright-core (tests/ui/dashboard.mjs)
checks that the jobs list shows every job, that each job page draws its charts with the right
number of points, tags the sizes whose runs diverged and warns where the target is out of
reach, that navigation works and that a browser without a token is refused; /metrics is
parsed and checked against the same workload. Screenshots are kept in BSO_UI_ARTIFACTS
(default: a temporary directory)."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest
import urllib.request

from harness import BIN, Server

SIM = os.environ.get("BSO_SIM_BIN", "bso-sim")
CLI = os.environ.get("BSO_CLI_BIN", "bso")
HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.environ.get("BSO_TRACES") or os.path.join(HERE, "..", "..", "..", "shared", "traces")
MODULES = os.environ.get("BSO_WEB_MODULES", "")
CHROMIUM = os.environ.get("BSO_CHROMIUM", "/usr/bin/chromium")
# In CI the browser test must run; elsewhere it is skipped where chromium or npm are missing.
REQUIRED = os.environ.get("CI") == "true"
HAVE_BROWSER = os.path.exists(CHROMIUM) and os.path.isdir(os.path.join(MODULES, "playwright-core"))


def parse_metrics(text):
    """{(name, frozenset(labels)): value} from Prometheus text format."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
        assert m, "bad metrics line: %r" % line
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


@unittest.skipUnless(os.path.exists(os.path.join(TRACES, "summary_train.csv")),
                     "the shared traces are not beside the repository")
class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().__enter__()
        out = subprocess.run([BIN, "token", "create", "--tenant", "ops", "--admin", "--database",
                              cls.srv.database], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        cls.token = out.stdout.strip()
        cls.url = "http://127.0.0.1:%d" % cls.srv.port
        env = dict(os.environ, BSO_TOKEN=cls.token)
        with tempfile.TemporaryDirectory() as d:
            # squad's runs profile power limits (--power jit posts them, as clients do).
            for workload in ("squad", "librispeech", "cifar100"):
                out = subprocess.run([SIM, "--traces", TRACES, "--gpu", "v100", "--workload",
                                      workload, "--policy", "bso,zeus", "--seeds", "3",
                                      "--power", "jit" if workload == "squad" else "max",
                                      "--recurrences", "12", "--server", cls.url,
                                      "--keep-jobs", "yes", "--out", d],
                                     capture_output=True, text=True, timeout=600, env=env)
                assert out.returncode == 0, out.stderr
        # One bso job starts from another's epochs (bso transfer): its page says where from.
        bso_jobs = sorted(j["job_id"] for j in cls.get("/jobs")["jobs"] if "-bso-" in j["job_id"])
        req = urllib.request.Request(cls.url + "/jobs/%s/transfer" % bso_jobs[0], method="POST",
                                     data=json.dumps({"from": bso_jobs[1]}).encode())
        req.add_header("Authorization", "Bearer " + cls.token)
        with urllib.request.urlopen(req, timeout=30) as r:
            assert json.loads(r.read())["transferred_from"]["job_id"] == bso_jobs[1]
        # Two runs whose batch size changed while they trained (3 and 4 epochs).
        spec = {"job_id": "adapt-demo", "job_id_prefix": "adapt", "batch_sizes": [32, 64, 128],
                "default_batch_size": 64, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 10,
                "policy": "zeus", "beta_knob": None}  # no early stop: every epoch reports
        cls.call("POST", "/jobs", spec)
        for sizes in ([32, 48, 64], [64, 96, 128, 128]):
            t = cls.get("/jobs/batch_size?job_id=adapt-demo")
            samples = steps = 0
            for epoch, size in enumerate(sizes, 1):
                samples, steps = samples + 20 * size, steps + 20
                cls.call("POST", "/report", {
                    "job_id": "adapt-demo", "batch_size": t["batch_size"],
                    "trial_number": t["trial_number"], "time": 10.0 * epoch,
                    "energy": 900.0 * epoch, "metric": 0.95 if epoch == len(sizes) else 0.5,
                    "current_epoch": epoch, "samples": samples,
                    "mean_batch_size": samples / steps})
        # A bso job whose probe at 128 ran to max_epochs though 64 reached in 5 epochs (128
        # needs at most about 10): the run diverged, and the size table says so.
        spec = {"job_id": "diverged-demo", "job_id_prefix": "diverged", "batch_sizes":
                [32, 64, 128], "default_batch_size": 64, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 20, "policy": "bso"}
        cls.call("POST", "/jobs", spec)
        for size_reaches in ({64: 5}, {}):
            t = cls.get("/jobs/batch_size?job_id=diverged-demo")
            cls.report_run(t, "diverged-demo", size_reaches.get(t["batch_size"], 99),
                    100.0 if t["batch_size"] == 64 else 50.0, 20)
        # The same job moved to other hardware (transfer_from): 128, which ran out of epochs
        # there and never reached, starts failed here, and the size table says where.
        spec = dict(spec, job_id="moved-demo", job_id_prefix="moved", gpu_model="H100",
                    transfer_from="diverged-demo")
        cls.call("POST", "/jobs", spec)
        t = cls.get("/jobs/batch_size?job_id=moved-demo")
        assert cls.report_run(t, "moved-demo", 5, 40.0, 20)["converged"]
        # A bso job whose target no size reaches within its max_epochs (3): after both sizes
        # failed, its page warns that the target is out of reach, and that the job, which never
        # trained, starts another pass over its sizes at the next request.
        spec = {"job_id": "unreachable-demo", "job_id_prefix": "unreachable",
                "batch_sizes": [32, 64], "default_batch_size": 64, "max_power": 300,
                "number_of_gpus": 1, "gpu_model": "A100", "target_metric": 0.9,
                "max_epochs": 3, "policy": "bso"}
        cls.call("POST", "/jobs", spec)
        for _ in range(2):
            t = cls.get("/jobs/batch_size?job_id=unreachable-demo")
            a = cls.report_run(t, "unreachable-demo", 99, 60.0, 3)
            assert a["stop_train"] and not a["converged"]
        # A bso job whose best size, 64 (5 or 6 epochs), then needs 10: not yet a change found,
        # but its page says one is building at 64.
        spec = {"job_id": "drift-demo", "job_id_prefix": "drift", "batch_sizes": [32, 64, 128],
                "default_batch_size": 64, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 20, "policy": "bso"}
        cls.call("POST", "/jobs", spec)
        at_64 = 0
        while at_64 < 9:
            t = cls.get("/jobs/batch_size?job_id=drift-demo")
            need = (5 + at_64 % 2 if at_64 < 8 else 10) if t["batch_size"] == 64 else 12
            at_64 += t["batch_size"] == 64
            cls.report_run(t, "drift-demo", need, 30.0, 20)
        # A bso job whose user said it changed (POST /jobs/ID/changed): its page says so, and
        # not that a change is building (the declaration is why its sizes are close to one).
        spec = dict(spec, job_id="declared-demo", job_id_prefix="declared", data_version="v1")
        cls.call("POST", "/jobs", spec)
        for _ in range(3):
            t = cls.get("/jobs/batch_size?job_id=declared-demo")
            cls.report_run(t, "declared-demo", 5, 30.0, 20)
        cls.call("POST", "/jobs/declared-demo/changed", {})
        cls.jobs = []
        for j in cls.get("/jobs")["jobs"]:
            job = cls.get("/jobs/" + j["job_id"])
            bso = job["spec"].get("policy") == "bso"
            cls.jobs.append({"job_id": j["job_id"], "trials": j["trials"],
                             "stage": ("Thompson sampling" if job["stage"] == "MAB" else "search")
                                      if bso else job["stage"],
                             "batch_sizes": len(job["spec"]["batch_sizes"]),
                             "default_batch_size": job["spec"]["default_batch_size"],
                             "power_profiles": len(job["power_profiles"]),
                             "origin": (job["transferred_from"] or {}).get("job_id"),
                             "carried": sum(1 for b in job.get("batch_size_stats", [])
                                            if job["transferred_from"] and b["runs"] == 0
                                            and b["status"] == "failed"),
                             "inherited": sum(1 for b in job.get("batch_size_stats", [])
                                              if job["transferred_from"] and b["prior_epochs"]
                                              and b["mean_epochs"] is None),
                             "diverged": sum(1 for b in job.get("batch_size_stats", [])
                                             if b["diverged"]),
                             "out_of_reach": job.get("target_out_of_reach") is not None,
                             "next_pass_after": (job.get("target_out_of_reach")
                                                 or {}).get("next_pass_after"),
                             "declared": job.get("change_declared_at_trial"),
                             "data_version": (job.get("data_version") or {}).get("version"),
                             "building": None if job.get("change_declared_at_trial") else max(
                                 [(b["change_evidence"], b["batch_size"])
                                  for b in job.get("batch_size_stats", [])
                                  if b["change_evidence"] > 0.5] or [(0, None)])[1],
                             "screenshot": j["job_id"] == "adapt-demo",
                             "progress_points": sum(len(p) for p in [
                                 t["progress"] for t in
                                 cls.get("/jobs/%s/trials" % j["job_id"])["trials"]
                                 if t["progress"]][-5:])})
        assert any(j["power_profiles"] for j in cls.jobs), "no job profiled power limits"
        assert sum(1 for j in cls.jobs if j["origin"]) == 2
        assert [j["carried"] for j in cls.jobs if j["job_id"] == "moved-demo"] == [1]
        assert [j["diverged"] for j in cls.jobs if j["job_id"] == "diverged-demo"] == [1]
        assert [j["job_id"] for j in cls.jobs if j["out_of_reach"]] == ["unreachable-demo"]
        assert [(j["job_id"], j["next_pass_after"]) for j in cls.jobs if j["out_of_reach"]] == [
            ("unreachable-demo", 0)]
        assert [(j["job_id"], j["building"]) for j in cls.jobs if j["building"]] == [
            ("drift-demo", 64)]
        assert [j["job_id"] for j in cls.jobs if j["declared"]] == ["declared-demo"]
        assert [j["data_version"] for j in cls.jobs if j["data_version"]] == ["v1"]

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)

    @classmethod
    def report_run(cls, t, job_id, reach, per_epoch, max_epochs):
        """Reports trial t (a GET /jobs/batch_size answer) epoch by epoch, per_epoch seconds
        an epoch and no energy, reaching the target at epoch `reach`, until the server stops
        it or max_epochs; returns the last answer."""
        for epoch in range(1, max_epochs + 1):
            a = cls.call("POST", "/report", {
                "job_id": job_id, "batch_size": t["batch_size"],
                "trial_number": t["trial_number"], "time": per_epoch * epoch, "energy": 0.0,
                "metric": 0.95 if epoch >= reach else 0.1, "current_epoch": epoch})
            if a["stop_train"]:
                break
        return a

    @classmethod
    def call(cls, method, path, body):
        req = urllib.request.Request(cls.url + path, method=method,
                                     data=json.dumps(body).encode())
        req.add_header("Authorization", "Bearer " + cls.token)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())

    @classmethod
    def get(cls, path, token=True, raw=False):
        req = urllib.request.Request(cls.url + path)
        if token:
            req.add_header("Authorization", "Bearer " + cls.token)
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read().decode()
            return (r, body) if raw else json.loads(body)

    def test_browser(self):
        if not HAVE_BROWSER:
            if REQUIRED:
                self.fail("chromium or playwright-core is missing (%s, %s)" % (CHROMIUM, MODULES))
            self.skipTest("no chromium or playwright-core here")
        self.assertEqual(len(self.jobs), 12)
        self.assertEqual([j["progress_points"] for j in self.jobs if j["progress_points"]], [7])
        out_dir = os.environ.get("BSO_UI_ARTIFACTS") or tempfile.mkdtemp(prefix="bso-ui-")
        os.makedirs(out_dir, exist_ok=True)
        expected = os.path.join(out_dir, "expected.json")
        with open(expected, "w") as f:
            json.dump({"jobs": self.jobs}, f)
        # The self-contained report of one job, opened from its file by the browser test.
        report = os.path.join(out_dir, "report.html")
        job = self.jobs[-1]["job_id"]
        out = subprocess.run([CLI, "--server", self.url, "--token", self.token, "report", job,
                              "--html", report], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(report) as f:
            html = f.read()
        self.assertNotRegex(html, r'(src|href)="(https?:)?//')  # nothing loaded from elsewhere
        node = shutil.which("node") or "node"
        out = subprocess.run([node, os.path.join(HERE, "..", "ui", "dashboard.mjs"), self.url,
                              expected, out_dir, self.token], capture_output=True, text=True,
                             timeout=600, env=dict(os.environ, BSO_WEB_MODULES=MODULES,
                                                   BSO_REPORT_FILE=report, BSO_REPORT_JOB=job))
        print(out.stdout[-3000:], out.stderr[-3000:])
        self.assertEqual(out.returncode, 0, out.stdout[-2000:] + out.stderr[-2000:])
        self.assertIn("all dashboard checks passed", out.stdout)
        for shot in ("refused.png", "jobs.png", "report.png"):
            self.assertGreater(os.path.getsize(os.path.join(out_dir, shot)), 5000)

    def test_static_files_are_served_without_a_token(self):
        r, body = self.get("/ui/", token=False, raw=True)
        self.assertTrue(r.headers["Content-Type"].startswith("text/html"))
        self.assertIn('src="app.js"', body)
        r, body = self.get("/ui/app.js", token=False, raw=True)
        self.assertTrue(r.headers["Content-Type"].startswith("text/javascript"))
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.get("/ui/../bso.db", token=False)
        self.assertEqual(e.exception.code, 404)
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.get("/jobs", token=False)  # the data itself needs the token
        self.assertEqual(e.exception.code, 401)

    def test_metrics(self):
        with self.assertRaises(urllib.error.HTTPError) as e:
            self.get("/metrics", token=False)
        self.assertEqual(e.exception.code, 401)
        r, text = self.get("/metrics", raw=True)
        self.assertTrue(r.headers["Content-Type"].startswith("text/plain; version=0.0.4"))
        m = parse_metrics(text)
        jobs = sum(v for (n, _), v in m.items() if n == "bso_jobs")
        self.assertEqual(jobs, len(self.jobs))
        trials = sum(j["trials"] for j in self.jobs)
        got = {dict(l)["status"]: v for (n, l), v in m.items() if n == "bso_trials"}
        self.assertEqual(sum(got.values()), trials)
        self.assertEqual(got["Dispatched"], 0)
        # Every trial was asked for and reported at least once over HTTP.
        key = ("bso_http_requests_total",
               frozenset({("route", "/jobs/batch_size"), ("method", "GET"), ("status", "200")}))
        self.assertGreaterEqual(m[key], trials)
        report = m[("bso_http_requests_total",
                    frozenset({("route", "/report"), ("method", "POST"), ("status", "200")}))]
        self.assertGreater(report, trials)
        # The histogram: cumulative buckets ending at the request count.
        lab = frozenset({("route", "/report"), ("method", "POST")})
        count = m[("bso_http_request_duration_seconds_count", lab)]
        self.assertEqual(count, report)
        buckets = sorted((float(dict(l)["le"]), v) for (n, l), v in m.items()
                         if n == "bso_http_request_duration_seconds_bucket"
                         and dict(l)["route"] == "/report")
        self.assertEqual(buckets[-1], (float("inf"), count))
        self.assertTrue(all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])))
        self.assertGreater(m[("bso_http_request_duration_seconds_sum", lab)], 0)
        self.assertEqual(m[("bso_db_errors_total", frozenset())], 0)
        self.assertIn(("bso_http_requests_total",
                       frozenset({("route", "/metrics"), ("method", "GET"), ("status", "401")})),
                      m)
        build = [l for (n, l) in m if n == "bso_build_info"]
        self.assertEqual(len(build), 1)
        version = self.get("/version")
        self.assertEqual(dict(build[0]), {"version": version["version"],
                                          "database": version["database"]})

    def test_request_id(self):
        req = urllib.request.Request(self.url + "/healthz", headers={"X-Request-Id": "trace-42"})
        with urllib.request.urlopen(req) as r:
            self.assertEqual(r.headers["X-Request-Id"], "trace-42")
        ids = set()
        for _ in range(3):
            with urllib.request.urlopen(self.url + "/healthz") as r:
                ids.add(r.headers["X-Request-Id"])
        self.assertEqual(len(ids), 3)
        self.assertTrue(all(re.fullmatch(r"[0-9a-f]{16}", i) for i in ids))
        # An id with characters a log could be confused by is replaced, not echoed.
        req = urllib.request.Request(self.url + "/healthz", headers={"X-Request-Id": "a b\"c"})
        with urllib.request.urlopen(req) as r:
            self.assertRegex(r.headers["X-Request-Id"], r"^[0-9a-f]{16}$")
        # Errors carry it too.
        req = urllib.request.Request(self.url + "/nope", headers={"X-Request-Id": "err-1"})
        with self.assertRaises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req)
        self.assertEqual(e.exception.headers["X-Request-Id"], "err-1")


if __name__ == "__main__":
    unittest.main()
