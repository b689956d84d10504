"""The Python package against the real server: Zeus's test_client.py cases (with a scripted
monitor, as Zeus mocks its own), GPU configuration from the fake NVML, validation, order errors,
and ending a trial at exit."""
import os
import subprocess
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import bso  # noqa: E402
import harness  # noqa: E402
from harness import Server  # noqa: E402


class ScriptedMonitor:
    """Zeus's test mock: every window takes 37.248 s and 17132.96 J."""
    gpus = [bso.monitor.GPU(0, "Tesla V100", "GPU-x", 300.0, 250.0, "nvml-counter")] * 4
    max_power_w = 1200.0
    source = "nvml-counter"

    def begin_window(self, name):
        pass

    def end_window(self, name):
        return bso.Measurement(time=37.248, total_energy=17132.96, source=self.source,
                               estimated=False)


def spec(**kw):
    base = dict(job_id="test-client", job_id_prefix="test", default_batch_size=1024,
                batch_sizes=[32, 64, 256, 512, 1024, 4096, 2048], max_epochs=100, policy="zeus")
    base.update(kw)
    return bso.JobSpec(**base)


class FlakyServer:
    """A local HTTP server that answers 503 a given number of times per path, then 200, and
    counts the requests it got."""

    def __init__(self, failures):
        import http.server
        import threading
        self.failures = dict(failures)
        self.hits = {}
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def handle_one(self):
                path = self.path.split("?")[0]
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                outer.hits[path] = outer.hits.get(path, 0) + 1
                if outer.failures.get(path, 0) > 0:
                    outer.failures[path] -= 1
                    body, status = b'{"message":"busy"}', 503
                elif path == "/report":
                    body, status = b'{"stop_train":false,"converged":false,"message":"go on"}', 200
                else:
                    body, status = b'{"job_id":"j","batch_size":8,"trial_number":1}', 200
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = handle_one

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Retries(unittest.TestCase):
    def test_idempotent_calls_are_retried_and_others_are_not(self):
        flaky = FlakyServer({"/report": 2, "/jobs/batch_size": 1, "/trials": 5})
        try:
            c = bso.Client(flaky.url, retries=3)
            # A report may be repeated safely: two 503s, then success.
            self.assertEqual(c.report("j", 8, 1, 1.0, 1.0, 0.5, 1)["message"], "go on")
            self.assertEqual(flaky.hits["/report"], 3)
            # Asking for a batch size creates a trial: one 503 is final.
            with self.assertRaises(bso.BSORuntimeError) as e:
                c.next("j")
            self.assertIn("HTTP 503: busy", str(e.exception))
            self.assertEqual(flaky.hits["/jobs/batch_size"], 1)
            # Retries are bounded: 1 try + 3 retries, then the error.
            with self.assertRaises(bso.BSORuntimeError):
                c.end_trial("j", 8, 1)
            self.assertEqual(flaky.hits["/trials"], 4)
        finally:
            flaky.close()


def closed_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nobody listens there once the socket is closed


class Unreachable(unittest.TestCase):
    """A server that cannot be reached never blocks training (unless told to fail)."""

    def url(self):
        return "http://127.0.0.1:%d" % closed_port()

    def test_falls_back_to_the_default_batch_size(self):
        with self.assertLogs("bso", "WARNING") as logs:
            opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url(), spec(max_epochs=5))
        self.assertIn("unreachable", logs.output[0])
        self.assertTrue(opt.offline)
        self.assertEqual(opt.get_batch_size(), 1024)
        opt.on_train_begin()
        opt.on_evaluate(0.1)
        self.assertFalse(opt.training_finished)
        opt.on_evaluate(0.7)  # the target (0.5) is reached: stop, converged
        self.assertTrue(opt.training_finished)

    def test_offline_run_out_of_epochs_fails(self):
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url(), spec(max_epochs=2))
        opt.get_batch_size()
        opt.on_train_begin()
        opt.on_evaluate(0.1)
        with self.assertRaises(bso.BSOTrainFailError):
            opt.on_evaluate(0.2)

    def test_fail_instead(self):
        with self.assertRaises(bso.BSOUnreachableError):
            bso.BatchSizeOptimizer(ScriptedMonitor(), self.url(), spec(), on_unreachable="fail")
        os.environ["BSO_ON_UNREACHABLE"] = "fail"
        try:
            with self.assertRaises(bso.BSOUnreachableError):
                bso.BatchSizeOptimizer(ScriptedMonitor(), self.url(), spec())
        finally:
            del os.environ["BSO_ON_UNREACHABLE"]
        with self.assertRaises(bso.BSOConfigError):
            bso.BatchSizeOptimizer(ScriptedMonitor(), self.url(), spec(), on_unreachable="later")


class PythonClient(unittest.TestCase):
    def setUp(self):
        self.srv = Server().__enter__()
        self.url = "http://127.0.0.1:%d" % self.srv.port

    def tearDown(self):
        self.srv.__exit__(None, None, None)

    def test_register(self):
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())
        self.assertEqual(opt.job_id, "test-client")
        job = self.srv.request("GET", "/jobs/test-client")[1]["spec"]
        self.assertEqual((job["max_power"], job["number_of_gpus"], job["gpu_model"]),
                         (1200.0, 4, "Tesla V100"))
        bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())  # again: same job
        with self.assertRaises(bso.BSORuntimeError) as e:
            bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(default_batch_size=512))
        self.assertIn("409", str(e.exception))
        self.assertIn("(default_batch_size: registered 1024, sent 512)", str(e.exception))

    def test_no_batch_size_for_now(self):
        """A bso job that never reached its target (max_epochs 2; the runs end at 0.1) is
        refused a size after two runs of each size (409): Client.next raises
        BSONoBatchSizeError, a BSORuntimeError, with the server's message, and the next request
        gets a size again (the third pass)."""
        c = bso.Client(self.url)
        c.register({"job_id": "never", "job_id_prefix": "never", "batch_sizes": [32, 64],
                    "default_batch_size": 64, "target_metric": 0.9, "max_epochs": 2,
                    "max_power": 300, "number_of_gpus": 1, "gpu_model": "V100",
                    "policy": "bso"})
        for _ in range(4):
            bs, n = c.next("never")
            for e in (1, 2):
                self.srv.report("never", bs, n, 10.0 * e, 0.0, 0.1, e)
        with self.assertRaises(bso.BSONoBatchSizeError) as e:
            c.next("never")
        self.assertIsInstance(e.exception, bso.BSORuntimeError)
        self.assertIn("the next request starts another pass over the sizes", str(e.exception))
        self.assertIn(c.next("never")[0], (32, 64))

    def test_batch_sizes(self):
        """1024 converges on the 3rd evaluation; the next run gets 512, which is early-stopped
        (raises) before epoch 90; the next gets 2048."""
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())
        self.assertEqual(opt.get_batch_size(), 1024)
        opt.on_train_begin()
        for metric in (0.3, 0.4, 0.6):
            opt.on_evaluate(metric)
        self.assertTrue(opt.training_finished)
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())
        self.assertEqual(opt.get_batch_size(), 512)
        opt.on_train_begin()
        with self.assertRaises(bso.ZeusBSOTrainFailError) as e:  # Zeus's name works too
            for _ in range(90):
                opt.on_evaluate(0.3)
        self.assertIn("cost upper bound", str(e.exception))
        self.assertLess(opt.cur_epoch, 90)
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())
        self.assertEqual(opt.get_batch_size(), 2048)
        trials = self.srv.request("GET", "/jobs/test-client/trials")[1]["trials"]
        self.assertEqual([t["energy_source"] for t in trials[:2]], ["nvml-counter"] * 2)

    def test_bso_policy_by_default(self):
        """Without a policy the server's default (bso) runs the job: after 1024 converges in 3
        epochs, the next run probes 2048 (larger batches are assumed cheaper per epoch). It
        costs as much per epoch here, so finishing it (about 4.2 epochs expected) would cost
        more than a fresh run of 1024: stopped after its first epoch."""
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy=None))
        self.assertEqual(self.srv.request("GET", "/jobs/test-client")[1]["spec"]["policy"], "bso")
        self.assertEqual(opt.get_batch_size(), 1024)
        opt.on_train_begin()
        for metric in (0.3, 0.4, 0.6):
            opt.on_evaluate(metric)
        self.assertTrue(opt.training_finished)
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy=None))
        self.assertEqual(opt.get_batch_size(), 2048)
        opt.on_train_begin()
        with self.assertRaises(bso.BSOTrainFailError) as e:
            opt.on_evaluate(0.3)
        self.assertIn("more to go", str(e.exception))
        stats = self.srv.request("GET", "/jobs/test-client")[1]["batch_size_stats"]
        self.assertEqual({s["batch_size"]: s["status"] for s in stats if s["runs"]},
                         {1024: "good", 2048: "passed"})

    def test_transfer_from(self):
        """JobSpec(transfer_from=...) starts a new job from another's epochs (the server says
        where from); the first job converged at 1024 in three epochs."""
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy="bso"))
        opt.get_batch_size()
        opt.on_train_begin()
        for metric in (0.3, 0.4, 0.6):
            opt.on_evaluate(metric)
        moved = spec(policy="bso", job_id="test-moved", transfer_from="test-client")
        self.assertEqual(moved.to_dict()["transfer_from"], "test-client")
        self.assertNotIn("transfer_from", spec().to_dict())
        bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, moved)
        job = self.srv.request("GET", "/jobs/test-moved")[1]
        self.assertEqual(job["transferred_from"]["job_id"], "test-client")
        prior = {s["batch_size"]: s["prior_epochs"] for s in job["batch_size_stats"]}
        self.assertAlmostEqual(prior[1024], 3, delta=0.5)
        with self.assertRaises(bso.BSORuntimeError) as e:
            bso.BatchSizeOptimizer(ScriptedMonitor(), self.url,
                                   spec(job_id="test-other", transfer_from="test-nope"))
        self.assertIn("Unknown job(test-nope)", str(e.exception))
        # A job registered on its own takes the same epochs later through Client.transfer.
        bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy="bso", job_id="test-late"))
        client = bso.Client(self.url)
        job = client.transfer("test-late", "test-client")
        self.assertEqual(job["transferred_from"]["job_id"], "test-client")
        prior = {s["batch_size"]: s["prior_epochs"] for s in job["batch_size_stats"]}
        self.assertAlmostEqual(prior[1024], 3, delta=0.5)
        with self.assertRaises(bso.BSORuntimeError) as e:
            client.transfer("test-late", "test-late")
        self.assertIn("itself", str(e.exception))

    def test_declare_change(self):
        """BatchSizeOptimizer.declare_change() says that the job changed (POST
        /jobs/ID/changed): 1024, the one size that reached, is watched, and the server says since
        when; a zeus-policy job refuses it with the server's message; other ranks post nothing."""
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy="bso"))
        opt.get_batch_size()
        opt.on_train_begin()
        for metric in (0.3, 0.4, 0.6):
            opt.on_evaluate(metric)
        job = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy="bso")) \
            .declare_change()
        self.assertEqual(job["change_declared_at_trial"], 1)
        self.assertIsNone(job["change_detected_at_trial"])
        evidence = {s["batch_size"]: s["change_evidence"] for s in job["batch_size_stats"]}
        self.assertGreaterEqual(evidence[1024], 0.5)
        self.assertEqual(evidence[512], 0)
        self.assertIsNone(bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy="bso"),
                                                 rank=1).declare_change())
        zeus = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url,
                                      spec(policy="zeus", job_id="test-zeus"))
        with self.assertRaises(bso.BSORuntimeError) as e:
            zeus.declare_change()
        self.assertIn("zeus policy", str(e.exception))

    def test_data_version(self):
        """JobSpec(data_version=...) or BSO_DATA_VERSION: the job registers with the version of
        its data; a run with another one declares the change (the server says since when)."""
        self.assertNotIn("data_version", spec().to_dict())
        with self.assertRaises(bso.BSOConfigError):
            spec(data_version="")
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url,
                                     spec(policy="bso", data_version="snap-1"))
        opt.get_batch_size()
        opt.on_train_begin()
        for metric in (0.3, 0.4, 0.6):
            opt.on_evaluate(metric)
        job = self.srv.request("GET", "/jobs/test-client")[1]
        self.assertEqual(job["data_version"]["version"], "snap-1")
        self.assertIsNone(job["change_declared_at_trial"])
        old = os.environ.get("BSO_DATA_VERSION")
        os.environ["BSO_DATA_VERSION"] = "snap-2"
        try:
            bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(policy="bso"))
        finally:
            if old is None:
                del os.environ["BSO_DATA_VERSION"]
            else:
                os.environ["BSO_DATA_VERSION"] = old
        job = self.srv.request("GET", "/jobs/test-client")[1]
        self.assertEqual(job["data_version"]["version"], "snap-2")
        self.assertEqual(job["change_declared_at_trial"], 1)

    def test_batch_size_over_time(self):
        """A run whose batch size changes reports its samples and mean batch size; the trial
        shows one point per epoch, with each epoch's own batch size, and keeps them once the run
        ends. A repeated epoch adds nothing, and a run that reports none shows none."""
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())
        bs = opt.get_batch_size()
        opt.on_train_begin()
        # Epoch 1: 10 steps of bs / 2; epoch 2: 5 steps of bs; epoch 3: 4 steps of 2 bs.
        plan = [(10, bs // 2), (5, bs), (4, 2 * bs)]
        samples = steps = 0
        for (n, size), metric in zip(plan, (0.3, 0.4, 0.6)):
            samples, steps = samples + n * size, steps + n
            opt.on_evaluate(metric, samples=samples, mean_batch_size=samples / steps)
        self.assertTrue(opt.training_finished)
        client = bso.Client(self.url)
        client.report("test-client", bs, 1, 9, 9, 0.6, 2, samples=1, mean_batch_size=1)
        trial = self.srv.request("GET", "/jobs/test-client/trials")[1]["trials"][0]
        self.assertEqual(trial["status"], "Succeeded")
        self.assertEqual([p["epoch"] for p in trial["progress"]], [1, 2, 3])
        self.assertEqual([round(p["batch_size"]) for p in trial["progress"]],
                         [size for _, size in plan])
        self.assertEqual(trial["samples"], samples)
        self.assertAlmostEqual(trial["mean_batch_size"], samples / steps)
        self.assertEqual([p["samples"] for p in trial["progress"]],
                         [5 * bs, 10 * bs, 18 * bs])
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec())
        opt.get_batch_size()
        opt.on_train_begin()
        opt.on_evaluate(0.3)
        trial = self.srv.request("GET", "/jobs/test-client/trials")[1]["trials"][1]
        self.assertEqual((trial["samples"], trial["mean_batch_size"], trial["progress"]),
                         (None, None, []))
        with self.assertRaises(ValueError):
            opt.on_evaluate(0.3, samples=10)

    def test_several_server_urls(self):
        """BSO_SERVER_URL may list several servers: one that cannot be reached is passed over
        at once (even without retries), and its messages name the server that failed."""
        dead = "http://127.0.0.1:1"
        c = bso.Client("%s, %s/" % (dead, self.url), retries=0)
        self.assertEqual(c.get("/healthz")["status"], "ok")
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), "%s,%s" % (dead, self.url), spec())
        self.assertEqual(opt.get_batch_size(), 1024)
        opt.on_train_begin()
        for metric in (0.3, 0.4, 0.6):
            opt.on_evaluate(metric)
        self.assertTrue(opt.training_finished)
        with self.assertRaises(bso.BSORuntimeError) as e:
            bso.Client("%s,http://127.0.0.1:2" % dead, retries=0).get("/jobs")
        self.assertIn("http://127.0.0.1:2/jobs", str(e.exception))
        with self.assertRaises(bso.BSORuntimeError):
            bso.Client(" , ")

    @unittest.skipUnless(harness.PG_URL, "replicas share a PostgreSQL database")
    def test_replica_failover_mid_run(self):
        """Two replicas, no load balancer: the run registers and gets its batch size from the
        first, which then stops; its reports go to the second, and the trial ends stored once."""
        database = self.srv.database
        other = Server(database=database).__enter__()
        self.addCleanup(other.__exit__, None, None, None)
        urls = "%s,http://127.0.0.1:%d" % (self.url, other.port)
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), urls, spec())
        bs = opt.get_batch_size()
        opt.on_train_begin()
        opt.on_evaluate(0.3)
        self.srv.stop()
        for metric in (0.4, 0.6):
            opt.on_evaluate(metric)
        self.assertTrue(opt.training_finished)
        trials = other.request("GET", "/jobs/test-client/trials")[1]["trials"]
        self.assertEqual([(t["trial_number"], t["batch_size"], t["status"], t["converged"])
                          for t in trials], [(1, bs, "Succeeded", True)])
        self.srv.start()  # for tearDown

    def test_converge_fail(self):
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(beta_knob=None))
        opt.get_batch_size()
        opt.on_train_begin()
        with self.assertRaises(bso.BSOTrainFailError) as e:
            for _ in range(100):
                opt.on_evaluate(0.3)
        self.assertIn("max_epoch(100)", str(e.exception))
        self.assertEqual(opt.cur_epoch, 100)
        opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(beta_knob=None))
        self.assertEqual(opt.get_batch_size(), 2048)

    def test_failure_says_when_the_target_is_out_of_reach(self):
        """A bso job whose target no size reaches within max_epochs: the failures say to launch
        again until every size failed, then that the target is out of reach."""
        job = spec(job_id="test-reach", batch_sizes=[32, 64], default_batch_size=64, max_epochs=3,
                   policy="bso")
        messages = []
        for _ in range(2):
            opt = bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, job)
            opt.get_batch_size()
            opt.on_train_begin()
            with self.assertRaises(bso.BSOTrainFailError) as e:
                for _ in range(3):
                    opt.on_evaluate(0.1)
            messages.append(str(e.exception))
        self.assertIn("Launch the job again", messages[0])
        self.assertIn("No batch size has reached the target since the job started (2 trials)",
                      messages[1])
        self.assertIn("raise max_epochs", messages[1])
        # Each ran to max_epochs without reaching: a miss apiece.
        stats = self.srv.request("GET", "/jobs/test-reach")[1]["batch_size_stats"]
        self.assertEqual({s["batch_size"]: (s["runs"], s["successes"], s["misses"]) for s in stats},
                         {32: (1, 0, 1), 64: (1, 0, 1)})

    def test_ranks_and_order(self):
        ranks = [bso.BatchSizeOptimizer(ScriptedMonitor(), self.url, spec(), rank=r)
                 for r in range(4)]
        for r in ranks[1:]:
            with self.assertRaises(bso.BSOBadOperationError):
                r.get_batch_size()
        with self.assertRaises(bso.BSOOperationOrderError):
            ranks[0].on_evaluate(0.5)

    def test_job_spec_validation(self):
        for bad in (dict(batch_sizes=[]), dict(default_batch_size=128), dict(eta_knob=2),
                    dict(beta_knob=0), dict(batch_sizes=[32, 32, 1024]), dict(window_size=1),
                    dict(job_id="other-1"), dict(num_pruning_rounds=0), dict(policy="greedy"),
                    dict(transfer_from=""), dict(transfer_from=7)):
            with self.subTest(bad=bad), self.assertRaises(bso.BSOConfigError):
                spec(**bad)
        self.assertEqual(spec(batch_sizes=[1024, 32]).batch_sizes, [32, 1024])

    def test_gpu_config_from_fake_nvml_or_assumed_power(self):
        script = os.path.join(self.srv.tmp.name, "nvml.txt")
        with open(script, "w") as f:
            f.write('gpu name="NVIDIA A100-SXM4-40GB" max_mw=400000\n' * 2)
        env = dict(os.environ, BSO_NVML_LIBRARY=os.environ["BSO_FAKE_NVML_LIB"],
                   BSO_FAKE_NVML=script, BSO_POWERCAP_ROOT="/nonexistent")
        env.pop("BSO_ASSUMED_POWER_W", None)
        code = textwrap.dedent("""
            import sys, bso
            m = bso.EnergyMonitor()
            opt = bso.BatchSizeOptimizer(m, sys.argv[1], bso.JobSpec(job_id="nv-1",
                job_id_prefix="nv", batch_sizes=[8, 16], default_batch_size=8))
            print(m.source)
        """)
        run = lambda e: subprocess.run([sys.executable, "-c", code, self.url], env=e,
                                       capture_output=True, text=True, timeout=60,
                                       cwd=os.path.join(HERE, "..", "..", "python"))
        out = run(env)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip(), "nvml-counter")
        job = self.srv.request("GET", "/jobs/nv-1")[1]["spec"]
        self.assertEqual((job["max_power"], job["number_of_gpus"], job["gpu_model"]),
                         (800.0, 2, "NVIDIA A100-SXM4-40GB"))
        # No GPU and nothing declared: a clear error.
        env["BSO_FAKE_NVML"] = "/nonexistent"
        out = run(env)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("BSO_ASSUMED_POWER_W", out.stderr)

    def test_trial_ended_at_exit(self):
        code = textwrap.dedent("""
            import sys, bso
            opt = bso.BatchSizeOptimizer(bso.EnergyMonitor(), sys.argv[1], bso.JobSpec(
                job_id="exit-1", job_id_prefix="exit", batch_sizes=[8, 16], default_batch_size=8))
            opt.get_batch_size()
            raise SystemExit("crashed before reporting")
        """)
        env = dict(os.environ, BSO_ASSUMED_POWER_W="50")
        out = subprocess.run([sys.executable, "-c", code, self.url], env=env, text=True,
                             capture_output=True, timeout=60,
                             cwd=os.path.join(HERE, "..", "..", "python"))
        self.assertNotEqual(out.returncode, 0)
        trials = self.srv.request("GET", "/jobs/exit-1/trials")[1]["trials"]
        self.assertEqual([t["status"] for t in trials], ["Failed"])
        # ...so the next run gets the same batch size again.
        self.assertEqual(self.srv.predict("exit-1")[1]["batch_size"], 8)


if __name__ == "__main__":
    unittest.main()
