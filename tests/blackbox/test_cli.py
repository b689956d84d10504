"""The bso command against a real server and the fake NVML."""
import http.server
import json
import os
import re
import subprocess
import threading
import unittest

from harness import Server

CLI = os.environ.get("BSO_CLI_BIN", "bso")


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().__enter__()
        cls.url = "http://127.0.0.1:%d" % cls.srv.port

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)

    def bso(self, *args, env=None, stdin=None):
        e = dict(os.environ, BSO_SERVER_URL=self.url)
        e.update(env or {})
        return subprocess.run([CLI] + list(args), capture_output=True, text=True, env=e,
                              input=stdin, timeout=60)

    def test_job_lifecycle(self):
        spec = {"job_id": "cli job/1", "job_id_prefix": "cli", "batch_sizes": [16, 32, 64],
                "default_batch_size": 32, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "num_pruning_rounds": 1, "policy": "zeus"}
        out = self.bso("register", "-", stdin=json.dumps(spec))
        self.assertEqual((out.returncode, out.stdout), (0, "cli job/1 registered\n"), out.stderr)
        self.assertIn("already registered", self.bso("register", "-", stdin=json.dumps(spec)).stdout)
        costs = {32: (10, 1000), 16: (12, 900), 64: (9, 1500)}
        for _ in range(3):
            out = self.bso("--json", "next", "cli job/1")
            t = json.loads(out.stdout)
            tm, en = costs[t["batch_size"]]
            out = self.bso("report", "cli job/1", str(t["batch_size"]), str(t["trial_number"]),
                           str(tm), str(en), "0.9", "1", "estimate")
            self.assertEqual(out.stdout, "stop: converged. Train succeeded\n", out.stderr)
        self.assertEqual(self.bso("next", "cli job/1").returncode, 0)  # the bandit's first pick
        show = self.bso("show", "cli job/1").stdout
        self.assertIn("policy   zeus\nstage    MAB", show)
        self.assertRegex(show, r"best batch size so far: 32 ")  # cost 2000 beats 2100 and 2250
        self.assertRegex(show, r"\n\s+16\s+1\s+2250\.0\s+0 \(exact\)")
        trials = self.bso("trials", "cli job/1").stdout.splitlines()
        self.assertEqual(len(trials), 5)  # header and four trials
        self.assertRegex(trials[1], r"^\s+1\s+32 Exploration\s+Succeeded\s+10\.00\s+1000\.0\s+2000\.0 yes")
        self.assertIn("cli job/1", self.bso("jobs").stdout)
        body = json.loads(self.bso("--json", "trials", "cli job/1").stdout)
        self.assertEqual(body["trials"][0]["energy_source"], "estimate")
        self.assertEqual(len(body["trials"]), 4)
        self.assertEqual(self.bso("end", "cli job/1", "32", "99").returncode, 1)
        self.assertEqual(self.bso("delete", "cli job/1").stdout, "deleted\n")
        out = self.bso("show", "cli job/1")
        self.assertEqual(out.returncode, 1)
        self.assertIn("HTTP 404", out.stderr)

    def test_show_bso_job(self):
        """A bso-policy job (the server's default): `show` lists what it knows of each size."""
        spec = {"job_id": "cli-bso", "job_id_prefix": "cli", "batch_sizes": [16, 32, 64],
                "default_batch_size": 32, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100"}
        self.assertEqual(self.bso("register", "-", stdin=json.dumps(spec)).returncode, 0)
        per_epoch = {16: (12, 900), 32: (10, 1000), 64: (5, 800)}  # cost per epoch 2250, 2000, 1150
        sizes = []
        for _ in range(3):
            t = json.loads(self.bso("--json", "next", "cli-bso").stdout)
            sizes.append(t["batch_size"])
            tm, en = per_epoch[t["batch_size"]]
            out = self.bso("report", "cli-bso", str(t["batch_size"]), str(t["trial_number"]),
                           str(2 * tm), str(2 * en), "0.9", "2")
            self.assertEqual(out.returncode, 0, out.stderr)
        # The default, then one octave up (assumed cheaper per epoch), then the best so far.
        self.assertEqual(sizes, [32, 64, 64])
        show = self.bso("show", "cli-bso").stdout
        self.assertIn("policy   bso\nstage    Thompson sampling (MAB)", show)
        self.assertIn("min cost 2300.0 at batch size 64", show)
        row = [l for l in self.bso("jobs").stdout.splitlines() if l.startswith("cli-bso ")]
        self.assertEqual(row[0].split()[1:3], ["Thompson", "bso"])
        self.assertRegex(show, r"\n\s+32 good\s+1\s+1\s+0\s+2\.00\s+2000\.0\s+4000\.0\s+-\n")
        self.assertRegex(show, r"\n\s+64 good\s+2\s+2\s+0\s+2\.00\s+1150\.0\s+2300\.0\s+-\n")
        self.assertRegex(show, r"\n\s+16 untried\s+0\s+0\s+0\s+-\s+-\s+-\s+-\n")
        self.assertIn("best batch size so far: 64 (lowest expected cost 2300.0)", show)

    def test_show_size_whose_run_diverged(self):
        """A size whose run stopped past what the scaling laws allow (64 reached in 5 epochs, so
        128 needs at most about 10, yet ran 18 without reaching): GET /jobs/ID marks it
        diverged, `show` says so, and a later recurrence tries it again."""
        spec = {"job_id": "cli-div", "job_id_prefix": "cli", "batch_sizes": [16, 32, 64, 128, 256],
                "default_batch_size": 64, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 20, "policy": "bso"}
        self.assertEqual(self.srv.register(spec)[0], 201)
        per_epoch = {16: 300, 32: 180, 64: 100, 128: 50, 256: 45}

        def run(reach):
            status, t = self.srv.predict("cli-div")
            self.assertEqual(status, 200, t)
            bs = t["batch_size"]
            for e in range(1, 21):
                status, a = self.srv.report("cli-div", bs, t["trial_number"],
                                            per_epoch[bs] * e, 0.0,
                                            0.95 if reach.get(bs) and e >= reach[bs] else 0.1, e)
                self.assertEqual(status, 200, a)
                if a["stop_train"]:
                    return bs, e, a["converged"]
            self.fail("never stopped")

        self.assertEqual(run({64: 5}), (64, 5, True))
        bs, epochs, converged = run({})  # the first probe goes up, and never reaches
        self.assertEqual(bs, 128)
        self.assertFalse(converged)
        self.assertGreater(epochs, 15)
        stats = {s["batch_size"]: s for s in
                 self.srv.request("GET", "/jobs/cli-div")[1]["batch_size_stats"]}
        self.assertTrue(stats[128]["diverged"])
        self.assertFalse(stats[64]["diverged"])
        self.assertRegex(self.bso("show", "cli-div").stdout,
                         r"\n\s+128 diverged\s+1\s+0\s+%d\s" % (1 if epochs == 20 else 0))
        self.assertEqual(stats[128]["misses"], 1 if epochs == 20 else 0)
        # Later launches (64 and the smaller sizes reach; 256 does not) hand 128 out again.
        reach = {16: 4, 32: 4, 64: 5, 128: 8}
        launched = [run(reach)[0] for _ in range(8)]
        self.assertIn(128, launched)

    def test_show_says_when_a_change_is_building(self):
        """Runs at 64 that reached in 5 or 6 epochs, then one in 10: not yet enough to say the
        job changed, but GET /jobs/ID gives 64 its share of the evidence and `show` prints it
        (CHANGE column) and warns from half the alarm on."""
        spec = {"job_id": "cli-drift", "job_id_prefix": "cli", "batch_sizes": [32, 64, 128],
                "default_batch_size": 64, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 20, "policy": "bso"}
        self.assertEqual(self.srv.register(spec)[0], 201)
        epochs = {32: 12, 128: 12}  # dearer than 64 in time and in epochs

        def run(at_64):
            status, t = self.srv.predict("cli-drift")
            self.assertEqual(status, 200, t)
            need = at_64 if t["batch_size"] == 64 else epochs[t["batch_size"]]
            for e in range(1, 21):
                status, a = self.srv.report("cli-drift", t["batch_size"], t["trial_number"],
                                            30.0 * e, 0.0, 0.95 if e >= need else 0.1, e)
                self.assertEqual(status, 200, a)
                if a["stop_train"]:
                    return t["batch_size"]
            self.fail("never stopped")

        def evidence():
            job = self.srv.request("GET", "/jobs/cli-drift")[1]
            self.assertIsNone(job["change_detected_at_trial"])
            return {s["batch_size"]: s["change_evidence"] for s in job["batch_size_stats"]}

        runs_at_64 = 0
        for k in range(40):
            runs_at_64 += run(5 + runs_at_64 % 2) == 64
            if runs_at_64 >= 8:
                break
        self.assertGreaterEqual(runs_at_64, 8)
        self.assertLess(evidence()[64], 0.5)
        self.assertNotIn("may be changing", self.bso("show", "cli-drift").stdout)
        while run(10) != 64:
            pass
        share = evidence()
        self.assertTrue(0.5 < share[64] < 1, share)
        out = self.bso("show", "cli-drift").stdout
        self.assertIn("CHANGE", out)
        row = [line.split() for line in out.splitlines() if line.split()[:1] == ["64"]]
        self.assertEqual(row[0][-1], "%.0f%%" % (100 * share[64]))
        self.assertIn("the job may be changing: the runs at batch size 64 are %.0f%% of the way"
                      % (100 * share[64]), out)

    def test_show_warns_when_the_target_is_out_of_reach(self):
        """A job whose target stops being reachable within max_epochs: 64 reached once, then
        no run reaches. Each size runs to max_epochs once (none twice while another may
        reach); then GET /jobs/ID says since when the target is out of reach and `show` warns.
        The policy still hands out a size, and once one reaches again the warning goes."""
        spec = {"job_id": "cli-reach", "job_id_prefix": "cli", "batch_sizes": [32, 64, 128],
                "default_batch_size": 64, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 6, "policy": "bso"}
        self.assertEqual(self.srv.register(spec)[0], 201)

        def run(reach_at):
            status, t = self.srv.predict("cli-reach")
            self.assertEqual(status, 200, t)
            for e in range(1, 7):
                status, a = self.srv.report("cli-reach", t["batch_size"], t["trial_number"],
                                            60.0 * e, 0.0, 0.95 if reach_at and e >= reach_at
                                            else 0.1, e)
                self.assertEqual(status, 200, a)
                if a["stop_train"]:
                    return t["batch_size"], e, a["converged"]
            self.fail("never stopped")

        def out_of_reach():
            reach = self.srv.request("GET", "/jobs/cli-reach")[1]["target_out_of_reach"]
            listed = [j for j in self.srv.request("GET", "/jobs")[1]["jobs"]
                      if j["job_id"] == "cli-reach"]
            self.assertEqual([j["target_out_of_reach"] for j in listed], [reach])  # the list too
            self.assertEqual([j["policy"] for j in listed], ["bso"])
            return reach

        def listed_out_of_reach():
            rows = [line for line in self.bso("jobs").stdout.splitlines()
                    if line.startswith("cli-reach ")]
            self.assertEqual(len(rows), 1)
            self.assertEqual(rows[0].split()[2], "bso")  # JOB STAGE POLICY ...
            self.assertIn(rows[0].split()[1], ("search", "Thompson"))  # no pruning stage
            return "(target out of reach)" in rows[0]

        self.assertEqual(run(4), (64, 4, True))
        self.assertIsNone(out_of_reach())
        failed, trials = set(), 0
        while out_of_reach() is None:
            self.assertLess(trials, 6)
            bs, epochs, converged = run(0)
            trials += 1
            self.assertFalse(converged)
            if epochs == 6:  # ran to max_epochs (a probe passed over after one epoch did not)
                self.assertNotIn(bs, failed)
                failed.add(bs)
        self.assertEqual(failed, {32, 64, 128})
        self.assertEqual(out_of_reach(), {"since_trial": 1, "trials": trials, "refused": 0,
                                          "next_pass_after": None})  # it trained before
        self.assertIn("warning: no batch size reached the target since trial 1 (%d trials)"
                      % trials, self.bso("show", "cli-reach").stdout)
        self.assertTrue(listed_out_of_reach())
        self.assertIn(run(4)[0], failed)  # never given up
        self.assertIsNone(out_of_reach())
        self.assertNotIn("warning", self.bso("show", "cli-reach").stdout)
        self.assertFalse(listed_out_of_reach())

    def test_batch_size_over_time(self):
        """Runs that report their samples and mean batch size: `bso trials` and `bso show`
        print each epoch's batch size (a long run with its middle elided)."""
        spec = {"job_id": "cli-adapt", "job_id_prefix": "cli", "batch_sizes": [16, 32, 64],
                "default_batch_size": 32, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": "A100", "target_metric": 0.9, "max_epochs": 20}
        self.assertEqual(self.bso("register", "-", stdin=json.dumps(spec)).returncode, 0)
        t = json.loads(self.bso("--json", "next", "cli-adapt").stdout)
        samples = steps = 0
        for epoch, size in enumerate([16, 32, 48, 64, 64, 64, 64, 64, 96, 128], 1):
            samples, steps = samples + 10 * size, steps + 10
            out = self.bso("report", "cli-adapt", str(t["batch_size"]), str(t["trial_number"]),
                           str(epoch), str(100 * epoch), "0.95" if epoch == 10 else "0.5",
                           str(epoch), "--samples", str(samples),
                           "--mean-batch-size", repr(samples / steps))
            self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("stop: converged", out.stdout)
        alone = self.bso("report", "cli-adapt", "16", "1", "1", "1", "0.5", "1", "--samples", "9")
        self.assertEqual(alone.returncode, 2)
        self.assertIn("--samples and --mean-batch-size go together", alone.stderr)
        mean = "(mean %.1f)" % (samples / steps)
        trials = self.bso("trials", "cli-adapt").stdout
        self.assertIn("BATCH SIZE PER EPOCH", trials)
        self.assertIn("16 32 48 ... 64 64 96 128 " + mean, trials)
        show = self.bso("show", "cli-adapt").stdout
        self.assertIn("batch size during the latest runs (per epoch):", show)
        self.assertIn("trial %d (given %d, Succeeded): 16 32 48 ... 64 64 96 128 %s"
                      % (t["trial_number"], t["batch_size"], mean), show)

    def test_html_report_keeps_data_inside_its_script(self):
        """`bso report JOB --html`: a GPU model and a job id of "</script><!--<script>" stay
        data (every '<' of the inlined JSON written as \\u003c): the page's only "</script>"
        are its own closers, and the data reads back as it was."""
        odd = "</script><!--<script>"
        spec = {"job_id": "cli-html" + odd, "job_id_prefix": "cli", "batch_sizes": [16, 32],
                "default_batch_size": 16, "max_power": 300, "number_of_gpus": 1,
                "gpu_model": odd, "target_metric": 0.9, "max_epochs": 20}
        self.assertEqual(self.bso("register", "-", stdin=json.dumps(spec)).returncode, 0)
        out = self.bso("report", spec["job_id"], "--html", "-")
        self.assertEqual(out.returncode, 0, out.stderr)
        html = out.stdout
        self.assertEqual(html.count("</script>"), 3)  # uPlot, the data, app.js
        self.assertFalse("<!--<script" in html, "the inlined data reads as HTML")
        data = html[html.index("window.BSO_REPORT = ") + len("window.BSO_REPORT = "):]
        data = data[:data.index("};\n</script>") + 1]
        self.assertEqual(json.loads(data)["job"]["spec"]["gpu_model"], odd)

    def test_crashing_sizes_and_reset(self):
        """Runs that end without a report (out of memory) three times in a row make a size
        infeasible, under either policy; `bso show` says so; `bso reset` starts afresh."""
        for policy, first, then in (("zeus", 32, 64), ("bso", 32, 16)):
            job = "cli-crash-" + policy
            spec = {"job_id": job, "job_id_prefix": "cli", "batch_sizes": [16, 32, 64],
                    "default_batch_size": 32, "max_power": 300, "number_of_gpus": 1,
                    "gpu_model": "A100", "policy": policy}
            self.assertEqual(self.bso("register", "-", stdin=json.dumps(spec)).returncode, 0)
            for _ in range(3):
                t = json.loads(self.bso("--json", "next", job).stdout)
                self.assertEqual(t["batch_size"], first)
                out = self.bso("end", job, str(t["batch_size"]), str(t["trial_number"]))
                self.assertEqual(out.returncode, 0, out.stderr)
            shown = json.loads(self.bso("--json", "show", job).stdout)
            self.assertEqual(shown["infeasible_batch_sizes"], [first], policy)
            self.assertRegex(self.bso("show", job).stdout, r"infeasible .*: %d\n" % first)
            self.assertEqual(json.loads(self.bso("--json", "next", job).stdout)["batch_size"],
                             then)
            out = self.bso("reset", job)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("explores again", out.stdout)
            shown = json.loads(self.bso("--json", "show", job).stdout)
            self.assertEqual((shown["infeasible_batch_sizes"], shown["trials"]["succeeded"]),
                             ([], 0))
            t = json.loads(self.bso("--json", "next", job).stdout)
            self.assertEqual((t["batch_size"], t["trial_number"]), (first, 5))
        out = self.bso("reset", "no-such-job")
        self.assertEqual(out.returncode, 1)
        self.assertIn("404", out.stderr)

    def test_json_lists_every_page(self):
        # More jobs than one page of the read API holds (1000).
        for k in range(1005):
            self.srv.register(dict(job_id="page-%04d" % k, job_id_prefix="page",
                                   batch_sizes=[8], default_batch_size=8, max_power=100,
                                   number_of_gpus=1, gpu_model="X"))
        jobs = json.loads(self.bso("--json", "jobs").stdout)["jobs"]
        ids = [j["job_id"] for j in jobs if j["job_id"].startswith("page-")]
        self.assertEqual(ids, ["page-%04d" % k for k in range(1005)])
        table = self.bso("jobs").stdout.splitlines()
        self.assertEqual(sum(1 for l in table if l.startswith("page-")), 1005)

    def test_a_page_that_names_itself_next_ends_the_walk(self):
        # A server that does not page as ours does: every page says the same page comes next.
        class SamePage(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps({"jobs": [{"job_id": "loop"}], "next_after": "loop"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SamePage)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            url = "http://127.0.0.1:%d" % httpd.server_address[1]
            out = self.bso("jobs", env={"BSO_SERVER_URL": url})  # the old code asked forever
            self.assertEqual(out.returncode, 1)
            self.assertIn("as its own next page", out.stderr)
            self.assertEqual(out.stdout, "")
        finally:
            httpd.shutdown()
            httpd.server_close()

    def test_usage_errors(self):
        self.assertEqual(self.bso("help").returncode, 0)
        self.assertIn("measure", self.bso("help").stdout)
        out = self.bso("show")
        self.assertEqual(out.returncode, 2)
        self.assertIn("usage: bso", out.stderr)
        self.assertEqual(self.bso("frobnicate").returncode, 2)
        self.assertEqual(self.bso("--frob", "jobs").returncode, 2)
        out = self.bso("report", "j", "x", "1", "1", "1", "1", "1")
        self.assertEqual(out.returncode, 2)
        self.assertIn("BATCH_SIZE must be an integer", out.stderr)
        self.assertIn("usage: bso", self.bso("next", "--help").stdout)
        out = self.bso("register", "/nonexistent.json")
        self.assertEqual(out.returncode, 1)
        self.assertIn("cannot read", out.stderr)
        out = self.bso("jobs", env={"BSO_SERVER_URL": "http://127.0.0.1:1"})
        self.assertEqual(out.returncode, 1)
        self.assertIn("connect", out.stderr.lower())
        self.assertEqual(out.stdout, "")  # no table's header without its rows
        out = self.bso("trials", "no-such-job")
        self.assertEqual(out.returncode, 1)
        self.assertIn("404", out.stderr)
        self.assertEqual(out.stdout, "")

    def test_gpus_and_measure(self):
        script = os.path.join(self.srv.tmp.name, "nvml.txt")
        with open(script, "w") as f:
            f.write('gpu name="NVIDIA H100 80GB HBM3" max_mw=700000 power_mw=350000\n')
        env = {"BSO_NVML_LIBRARY": os.environ["BSO_FAKE_NVML_LIB"], "BSO_FAKE_NVML": script,
               "BSO_POWERCAP_ROOT": "/nonexistent"}
        out = self.bso("gpus", env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("NVIDIA H100 80GB HBM3", out.stdout)
        self.assertIn("energy will come from nvml-counter", out.stdout)
        info = json.loads(self.bso("--json", "gpus", env=env).stdout)
        self.assertEqual(info["max_power_w"], 700)
        out = self.bso("--json", "measure", "--", "sleep", "0.3", env=env)
        self.assertEqual(out.returncode, 0, out.stderr)
        m = json.loads(out.stderr)
        self.assertAlmostEqual(m["energy_j"], 350 * m["time_s"], delta=0.1 * 350 * m["time_s"])
        self.assertEqual((m["source"], m["estimated"]), ("nvml-counter", False))
        # The command's exit status passes through; without anything measurable it is an
        # error, unless a power is declared.
        out = self.bso("measure", "--", "sh", "-c", "exit 7",
                       env=dict(env, BSO_FAKE_NVML="/nonexistent", BSO_ASSUMED_POWER_W="40"))
        self.assertEqual(out.returncode, 7)
        self.assertRegex(out.stderr, r"estimate: declared power")
        out = self.bso("measure", "--", "true", env=dict(env, BSO_FAKE_NVML="/nonexistent"))
        self.assertEqual(out.returncode, 1)
        self.assertIn("BSO_ASSUMED_POWER_W", out.stderr)


if __name__ == "__main__":
    unittest.main()
