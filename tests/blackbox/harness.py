"""Starts the real bso-server binary on 127.0.0.1 and a free port, and talks HTTP to it.

Requests are sent the way Zeus's Python client sends them: JSON bodies with no Content-Type.
The binary comes from $BSO_SERVER_BIN (ctest sets it). With $BSO_TEST_POSTGRES_URL_FILE (a
file holding a PostgreSQL cluster's URL, as scripts/pg-cluster.sh prints it), every Server gets a
fresh database on that cluster instead of a SQLite file: the same tests then check the
PostgreSQL backend. Tests about SQLite itself are marked @sqlite_only.
"""
import itertools
import http.client
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
import time
import unittest

BIN = os.environ.get("BSO_SERVER_BIN", "bso-server")

_pg_file = os.environ.get("BSO_TEST_POSTGRES_URL_FILE")
PG_URL = open(_pg_file).read().strip() if _pg_file else None
_pg_names = itertools.count()

# A test that is about SQLite itself (its files, fsync, the file lock).
sqlite_only = unittest.skipIf(PG_URL, "about SQLite")


def fresh_database(tmpdir):
    """A new, empty database: a SQLite file in tmpdir, or a database on the test cluster."""
    if not PG_URL:
        return "sqlite:///%s/bso.db" % tmpdir
    name = "bso_%d_%d" % (os.getpid(), next(_pg_names))
    # psql must not inherit the sanitizer runtimes a test preloads for libbso (it hangs).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}
    subprocess.run(["psql", PG_URL, "-qc", "CREATE DATABASE %s" % name], check=True,
                   capture_output=True, env=env, timeout=60)
    return PG_URL.rsplit("/", 1)[0] + "/" + name


class Server:
    def __init__(self, database=None, args=(), env=None, cwd=None):
        self.tmp = tempfile.TemporaryDirectory(prefix="bso-bb-")
        self.database = database or fresh_database(self.tmp.name)
        self.args = list(args)
        self.env = dict(os.environ, **(env or {}))
        self.cwd = cwd or self.tmp.name
        self.proc = None
        self.lines = []
        self.port = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        rc = self.stop()
        self.tmp.cleanup()
        # A clean stop exits 0; sanitizer reports (leaks, races) make it non-zero.
        if rc not in (0, None) and exc[0] is None:
            raise AssertionError("bso-server exited with %s:\n%s" % (rc, "\n".join(self.lines[-30:])))

    def start(self):
        cmd = [BIN, "--port", "0", "--database", self.database, "--threads", "4"] + self.args
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     env=self.env, cwd=self.cwd, text=True)
        self.lines = []
        ready = threading.Event()

        def drain():
            try:
                for line in self.proc.stderr:
                    self.lines.append(line.rstrip("\n"))
                    m = re.search(r"listening on https?://[^:]+:(\d+)", line)
                    if m:
                        self.port = int(m.group(1))
                        ready.set()
            except ValueError:  # stderr closed by stop()
                pass
            ready.set()

        threading.Thread(target=drain, daemon=True).start()
        if not ready.wait(30) or self.port is None:
            self.proc.kill()
            raise RuntimeError("bso-server did not start:\n" + "\n".join(self.lines))

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode if self.proc else None
        time.sleep(0.05)  # let the drain thread take the last lines
        if self.proc and self.proc.stderr:
            self.proc.stderr.close()
        return rc

    def restart(self):
        assert self.stop() == 0
        self.start()

    def wait_for_line(self, text, timeout=10):
        """Whether a log line containing text arrives within timeout seconds (the log is read
        by a thread, so a line written just now may not be in self.lines yet)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in l for l in self.lines):
                return True
            time.sleep(0.01)
        return False

    def request(self, method, path, body=None, headers=None):
        """Returns (status, parsed JSON body or None)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            data = json.loads(raw) if raw else None
        except ValueError:
            data = raw
        return resp.status, data

    # Zeus's client calls.
    def register(self, spec):
        return self.request("POST", "/jobs", spec)

    def predict(self, job_id):
        return self.request("GET", "/jobs/batch_size?job_id=" + job_id)

    def report(self, job_id, bs, number, time_, energy, metric, epoch):
        return self.request("POST", "/report", {
            "job_id": job_id, "batch_size": bs, "trial_number": number, "time": time_,
            "energy": energy, "metric": metric, "current_epoch": epoch})

    def end_trial(self, job_id, bs, number):
        return self.request("PATCH", "/trials", {"job_id": job_id, "batch_size": bs,
                                                 "trial_number": number})

    def delete(self, job_id):
        return self.request("DELETE", "/jobs?job_id=" + job_id)

    def recur(self, job_id, epochs, per_epoch, max_epochs, launches=10):
        """One recurrence of job_id as a client runs it: runs are launched until one reaches
        the target (at most `launches`), each reported epoch by epoch until the server stops
        it: batch size bs reaches at epoch epochs[bs], per_epoch[bs] seconds an epoch, energy 0.
        Returns each run's (batch size, trial number)."""
        runs = []
        for _ in range(launches):
            status, t = self.predict(job_id)
            assert status == 200, t
            bs, n = t["batch_size"], t["trial_number"]
            runs.append((bs, n))
            for e in range(1, max_epochs + 1):
                status, a = self.report(job_id, bs, n, per_epoch[bs] * e, 0.0,
                                        0.95 if e >= epochs[bs] else 0.1, e)
                assert status == 200, a
                if a["stop_train"]:
                    break
            if a["converged"]:
                break
        return runs

    def snapshot(self, job_id):
        """Everything the read API says about a job, for before/after comparisons."""
        return (self.request("GET", "/jobs?limit=1000"),
                self.request("GET", "/jobs/" + job_id),
                self.request("GET", "/jobs/%s/trials?limit=1000" % job_id))


def fake_job(job_id="test-job"):
    """Zeus's helpers.get_fake_job + get_fake_job_config."""
    return {
        "job_id": job_id, "job_id_prefix": "test", "default_batch_size": 1024,
        "batch_sizes": [32, 64, 256, 512, 1024, 4096, 2048], "eta_knob": 0.5, "beta_knob": 2,
        "target_metric": 0.5, "higher_is_better_metric": True, "max_epochs": 100,
        "num_pruning_rounds": 2, "window_size": 5, "mab_prior_mean": 0,
        "mab_prior_precision": 0, "mab_seed": 123456, "mab_num_explorations": 2, "seed": 1,
        "max_power": 3000, "number_of_gpus": 4, "gpu_model": "A100",
    }


def scenario_g(window, seed, job_id=None):
    """The golden scenario G job of the reference spec, Appendix B."""
    spec = {
        "job_id_prefix": "g", "batch_sizes": [8, 16, 32, 64, 128, 256],
        "default_batch_size": 64, "eta_knob": 0.5, "beta_knob": 2.0, "target_metric": 0.5,
        "higher_is_better_metric": True, "max_epochs": 10, "num_pruning_rounds": 2,
        "mab_prior_mean": 0, "mab_prior_precision": 0, "mab_num_explorations": 2,
        "max_power": 1000, "number_of_gpus": 1, "gpu_model": "A100", "window_size": window,
        "mab_seed": seed,
    }
    if job_id:
        spec["job_id"] = job_id
    return spec


G_BASE = {8: 9000, 16: 5300, 32: 5000, 64: 5100, 128: 5400, 256: 8000}


def scenario_g_report(k, bs):
    cost = G_BASE[bs] + ((k * 37) % 11 - 5) * 150
    converges = bs != 8
    return cost / 500, 0.0, 0.9 if converges else 0.1, 1 if converges else 10


GOLDEN = {
    (0, 42): "64,32,16,8,128,256,16,32,64,128,256,64,16,64,64,64,64,64,64,64,64,64,64,64,64,64,"
             "16,64,64,64,64,64,64,64,64,64,64,64,64,64,64,16,64,64,64,64,64,64,64,64,64",
    (3, 42): "64,32,16,8,128,256,16,32,64,128,256,64,16,64,64,64,64,32,64,64,64,32,16,64,32,32,"
             "32,32,32,32,64,64,32,32,64,32,32,32,32,32,32,32,32,32,32,32,32,32,32,32,32",
    (0, 1): "64,32,16,8,128,256,16,32,64,128,256,16,64,16,16,16,64,64,16,16,64,16,64,64,16,64,"
            "16,16,16,64,16,64,64,64,64,64,64,64,16,64,64,16,16,64,16,16,64,64,64,64,64",
}
