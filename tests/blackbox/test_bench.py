"""bso-bench against the real server (a short smoke run: correctness only, never timings), and
its --verify step against a server that loses trials."""
import http.server
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest

from harness import Server

BENCH = os.environ.get("BSO_BENCH_BIN", "bso-bench")
FILL = os.environ.get("BSO_BENCH_FILL_BIN", "bso-bench-fill")


def bench(*args):
    return subprocess.run([BENCH] + list(args), capture_output=True, text=True, timeout=120)


class FakeHandler(http.server.BaseHTTPRequestHandler):
    """What the fake servers below share: HTTP/1.1, quiet, JSON answers."""
    protocol_version = "HTTP/1.1"
    chunked = False

    def log_message(self, *a):
        pass

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        if not self.chunked:
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        for piece in (data[:5], data[5:]):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = True

    def body(self):
        n = int(self.headers.get("Content-Length", 0))
        return json.loads(self.rfile.read(n) or b"null")



class TrialKeeper(FakeHandler):
    """A fake server that keeps each job's trials (`trials`, under `lock`: a subclass's own):
    POST /jobs registers, a report marks its trial Succeeded and stops the run, PATCH ends."""
    trials, lock = None, None

    def do_POST(self):
        b = self.body()
        if self.path == "/jobs":
            self.trials.setdefault(b["job_id"], [])
            return self.answer(201, b)
        with self.lock:
            for t in self.trials[b["job_id"]]:
                if t["trial_number"] == b["trial_number"]:
                    t.update(status="Succeeded", time=b["time"])
        self.answer(200, {"stop_train": True, "converged": True, "message": "ok"})

    def do_PATCH(self):
        self.body()
        self.answer(200, None)


def verify_against(handler):
    """bso-bench --verify for a second, two jobs at once, against a fake server."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        return bench("--url", "http://127.0.0.1:%d" % httpd.server_address[1], "--duration", "1",
                     "--jobs", "2", "--concurrency", "2", "--verify")
    finally:
        httpd.shutdown()

class Bench(unittest.TestCase):
    def run_against_server(self, *extra, server_args=(), until_bandit=False):
        """The bench's JSON, and what the server then holds: its jobs' stages and every
        trial's convergence. With until_bandit, the bench runs again on the same jobs (up to
        five runs of 2 s) until one reached the bandit stage: how many recurrences 2 s hold
        depends on the machine (a sanitizer build on PostgreSQL may not finish pruning)."""
        with Server(args=list(server_args)) as srv:
            for _ in range(5):
                out = bench("--url", "http://127.0.0.1:%d" % srv.port, "--duration", "2",
                            "--jobs", "16", "--concurrency", "4", "--epochs", "6", "--verify",
                            "--json", "--server-pid", str(srv.proc.pid), *extra)
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                jobs = srv.request("GET", "/jobs")[1]["jobs"]
                if not until_bandit or "MAB" in {j["stage"] for j in jobs}:
                    break
            converged = [t["converged"] for j in jobs for t in
                         srv.request("GET", "/jobs/%s/trials?limit=1000" % j["job_id"])[1]["trials"]
                         if t["status"] == "Succeeded"]
            return json.loads(out.stdout), {j["stage"] for j in jobs}, converged

    def test_recurring_jobs_verify(self):
        for policy in ("bso", "zeus"):
            with self.subTest(policy=policy):
                r, stages, converged = self.run_against_server("--policy", policy,
                                                               until_bandit=True)
                # The workload makes the policy explore, stop runs early and reach the bandit.
                self.assertIn("MAB", stages)
                self.assertIn(False, converged)
                self.assertIn(True, converged)
                self.assertEqual((r["errors"], r["verify_problems"]), (0, 0))
                self.assertGreater(r["requests"], 0)
                self.assertEqual(set(r["endpoints"]), {"register", "predict", "report",
                                                       "end_trial"})
                self.assertEqual(r["endpoints"]["register"]["latency_ms"]["count"], 16)
                lat = r["latency_ms"]
                self.assertTrue(0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"]
                                <= lat["max"], lat)
                self.assertGreater(r["server_peak_rss_mb"], 0)
                self.assertGreater(r["server_cpu_s"], 0)

    def test_group_commit_verify(self):
        r = self.run_against_server("--concurrency", "8",
                                    server_args=["--durability", "full", "--threads", "8"])[0]
        self.assertEqual((r["errors"], r["verify_problems"]), (0, 0))
        self.assertGreater(r["requests"], 0)

    def test_many_batch_sizes(self):
        r, stages, _ = self.run_against_server("--sizes", "64", until_bandit=True)
        self.assertEqual((r["errors"], r["verify_problems"]), (0, 0))
        self.assertIn("MAB", stages)

    def test_policy_cpu(self):
        out = bench("--policy-cpu", "--sizes", "64", "--duration", "0.2", "--json")
        self.assertEqual(out.returncode, 0, out.stderr)
        r = json.loads(out.stdout)
        self.assertEqual(r["batch_sizes"], 64)
        kinds = {"predict_explore", "predict_bandit", "predict_changed", "report_explore",
                 "report_bandit", "report_changed"}
        for policy in ("zeus", "bso"):
            calls = r["policy_cpu_us"][policy]
            # Zeus's pruning stage over 64 sizes can outlast the recurrences before the change.
            self.assertLessEqual(set(calls), kinds)
            self.assertIn("predict_changed", calls)
            for c in calls.values():
                self.assertGreater(c["calls"], 0)
                self.assertTrue(0 < c["mean"] <= c["max"], c)
        self.assertEqual(set(r["policy_cpu_us"]["bso"]), kinds)
        # The jobs change half-way: the bso policy finds it in most of them, Zeus's never looks.
        bso, zeus = r["jobs"]["bso"], r["jobs"]["zeus"]
        self.assertGreater(bso["replayed"], 0)
        self.assertGreater(bso["changes_found"], bso["replayed"] // 2)
        self.assertEqual(zeus["changes_found"], 0)

    def test_fill_then_bench(self):
        """bso-bench-fill writes bso-bench's own jobs with history: the bench re-registers
        them unchanged (200, not 409), carries on from their last trial, and verifies."""
        with tempfile.TemporaryDirectory() as d:
            db = "sqlite:///%s/filled.db" % d
            out = subprocess.run([FILL, "--database", db, "--jobs", "12", "--trials-per-job",
                                  "30", "--epochs", "6"], capture_output=True, text=True,
                                 timeout=120)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("12 jobs, 360 trials", out.stderr)
            with Server(database=db) as srv:
                before = srv.request("GET", "/jobs/bench-000003/trials?limit=1000")[1]["trials"]
                self.assertEqual(len(before), 30)
                self.assertIn("MAB", {j["stage"] for j in srv.request("GET", "/jobs")[1]["jobs"]})
                out = bench("--url", "http://127.0.0.1:%d" % srv.port, "--duration", "1",
                            "--jobs", "12", "--concurrency", "3", "--epochs", "6", "--verify",
                            "--json")
                self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
                r = json.loads(out.stdout)
                self.assertEqual((r["errors"], r["verify_problems"]), (0, 0))
                after = srv.request("GET", "/jobs/bench-000003/trials?limit=1000")[1]["trials"]
                self.assertGreater(len(after), 30)
                self.assertEqual([t["trial_number"] for t in after], list(range(1, len(after) + 1)))
        out = subprocess.run([FILL, "--jobs", "3"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--database is required", out.stderr)

    def test_several_client_threads(self):
        r = self.run_against_server("--threads", "3", "--concurrency", "7")[0]
        self.assertEqual((r["errors"], r["verify_problems"]), (0, 0))
        self.assertGreater(r["endpoints"]["end_trial"]["latency_ms"]["count"], 0)

    def test_server_that_goes_away(self):
        """The server stops in the middle of the run: requests fail and are counted, the
        bench neither hangs nor crashes, and ends on time."""
        srv = Server()
        srv.__enter__()
        try:
            proc = subprocess.Popen([BENCH, "--url", "http://127.0.0.1:%d" % srv.port,
                                     "--duration", "2", "--jobs", "8", "--concurrency", "4",
                                     "--threads", "2", "--json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1)
        finally:
            srv.__exit__(None, None, None)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err)
        r = json.loads(out)
        self.assertGreater(r["errors"], 0)
        self.assertLess(r["errors"], 10000)  # failed connections are retried calmly
        self.assertGreater(r["requests"], 0)
        self.assertIn("first error", err)

    def test_chunked_answers_and_closed_connections(self):
        """A server that answers in chunks and closes every connection after one answer."""
        count = {"n": 0}

        class Chunky(FakeHandler):
            chunked = True

            def answer(self, status, body):
                super().answer(status, body)
                count["n"] += 1

            def do_POST(self):
                self.body()
                if self.path == "/jobs":
                    return self.answer(201, {})
                self.answer(200, {"stop_train": count["n"] % 3 == 0, "converged": False,
                                  "message": "ok"})

            def do_PATCH(self):
                self.body()
                self.answer(200, None)

            def do_GET(self):
                self.answer(200, {"job_id": "j", "batch_size": 64, "trial_number": count["n"]})

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Chunky)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        try:
            out = bench("--url", "http://127.0.0.1:%d" % httpd.server_address[1], "--duration",
                        "1", "--jobs", "2", "--concurrency", "2", "--json")
        finally:
            httpd.shutdown()
        self.assertEqual(out.returncode, 0, out.stderr)
        r = json.loads(out.stdout)
        self.assertEqual(r["errors"], 0, out.stderr)
        self.assertGreater(r["endpoints"]["report"]["latency_ms"]["count"], 0)
        self.assertGreater(r["endpoints"]["end_trial"]["latency_ms"]["count"], 0)

    def test_only_predict(self):
        r = self.run_against_server("--only", "predict")[0]
        self.assertEqual(set(r["endpoints"]), {"register", "predict"})
        self.assertEqual(r["verify_problems"], 0)

    def test_text_output(self):
        with Server() as srv:
            out = bench("--url", "http://127.0.0.1:%d" % srv.port, "--duration", "1", "--jobs",
                        "4", "--concurrency", "2")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertRegex(out.stdout, r"throughput\s+\d+ requests/s")
        self.assertRegex(out.stdout, r"\nall\s+\d+")

    def test_bad_usage(self):
        for args, why in ((["--jobs", "0", "--url", "http://x"], "--jobs"),
                          (["--url", "ftp://x"], "--url must be http"),
                          (["--duration", "soon", "--url", "http://x"], "--duration"),
                          (["--only", "delete", "--url", "http://x"], "--only"),
                          (["--sizes", "257", "--url", "http://x"], "--sizes"),
                          (["--threads", "0", "--url", "http://x"], "--threads"),
                          ([], "--url is required"), (["--frobnicate", "1"], "unknown option")):
            with self.subTest(args=args):
                out = bench(*args)
                self.assertEqual(out.returncode, 2)
                self.assertIn(why, out.stderr)
        out = bench("--url", "http://127.0.0.1:1", "--duration", "1")
        self.assertEqual(out.returncode, 1)
        self.assertIn("cannot reach", out.stderr)

    def test_verify_catches_a_server_that_loses_trials(self):
        """A fake server that hands out trial numbers 1, 2, 3... but stores every third trial
        nowhere: --verify must say so and exit 1."""
        trials, lock = {}, threading.Lock()

        class Lossy(TrialKeeper):
            def do_GET(self):
                m = re.match(r"/jobs/batch_size\?job_id=(.*)", self.path)
                if m:
                    if m.group(1) not in trials:
                        return self.answer(404, {"message": "Unknown job"})
                    with lock:
                        job = trials[m.group(1)]
                        n = job[-1]["trial_number"] + 1 if job else 1
                        job.append({"trial_number": n, "batch_size": 256, "status": "Dispatched",
                                    "time": None})
                        if n % 3 == 0:
                            job[-1]["lost"] = True
                    return self.answer(200, {"job_id": m.group(1), "batch_size": 256,
                                             "trial_number": n})
                m = re.match(r"/jobs/([^/?]*)$", self.path)
                if m:  # a stage and arm statistics that the trials do not add up to
                    return self.answer(200, {"job_id": m.group(1), "stage": "Pruning",
                                             "arms": [{"batch_size": 256, "num_results": 999}]})
                m = re.match(r"/jobs/(.*)/trials\?limit=\d+&after=(\d+)", self.path)
                if not m or m.group(1) not in trials:  # /healthz too: the bench asks, optionally
                    return self.answer(404, {"message": "Not found"})
                with lock:
                    rows = [t for t in trials[m.group(1)]
                            if t["trial_number"] > int(m.group(2)) and not t.get("lost")]
                self.answer(200, {"trials": rows, "next_after": None})

        Lossy.trials, Lossy.lock = trials, lock
        out = verify_against(Lossy)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("handed out but not stored", out.stderr)
        self.assertIn("arm results differ from a recount of its trials", out.stderr)
        self.assertIn("verify      FAILED", out.stdout)

    def test_verify_ends_on_pages_that_do_not_advance(self):
        """A fake server whose list of a job's trials always says that another page follows, and
        sends the same one: --verify says so and ends (it asked for that page forever)."""
        trials, lock = {}, threading.Lock()

        class Stuck(TrialKeeper):
            def do_GET(self):
                m = re.match(r"/jobs/batch_size\?job_id=(.*)", self.path)
                if m and m.group(1) in trials:
                    with lock:
                        n = len(trials[m.group(1)]) + 1
                        trials[m.group(1)].append({"trial_number": n, "batch_size": 256,
                                                   "status": "Succeeded", "time": 1.0})
                    return self.answer(200, {"job_id": m.group(1), "batch_size": 256,
                                             "trial_number": n})
                m = re.match(r"/jobs/(.*)/trials\?", self.path)
                if m and m.group(1) in trials:
                    with lock:
                        rows = list(trials[m.group(1)][:1])
                    return self.answer(200, {"trials": rows, "next_after": 1})
                self.answer(404, {"message": "Not found"})

        Stuck.trials, Stuck.lock = trials, lock
        out = verify_against(Stuck)
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("the next page of trials starts where this one did", out.stderr)


if __name__ == "__main__":
    unittest.main()
