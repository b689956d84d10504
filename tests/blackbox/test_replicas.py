"""Several bso-server replicas on one PostgreSQL database (run with a test cluster, see
harness.py): clients spread over three replicas keep working when one is killed, and nothing
acknowledged is lost; a database outage gives 503s, and service comes back with the database."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import harness
from harness import Server, fake_job

BENCH = os.environ.get("BSO_BENCH_BIN", "bso-bench")
CLUSTER = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "pg-cluster.sh")


@unittest.skipUnless(harness.PG_URL, "needs a PostgreSQL test cluster")
class Replicas(unittest.TestCase):
    def test_kill_one_replica_mid_run(self):
        database = harness.fresh_database(None)
        replicas = [Server(database=database) for _ in range(3)]
        for r in replicas:
            r.start()
        try:
            bench = subprocess.Popen(
                [BENCH, "--duration", "6", "--jobs", "200", "--concurrency", "64", "--verify",
                 "--json"] + sum((["--url", "http://127.0.0.1:%d" % r.port] for r in replicas), []),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(3)
            replicas[1].proc.send_signal(signal.SIGKILL)  # no chance to finish anything
            out, err = bench.communicate(timeout=300)
        finally:
            for r in replicas:
                r.stop()
                r.tmp.cleanup()
        result = json.loads(out)
        # verify: unique contiguous trial numbers per job, every acknowledged final report
        # stored, stages and statistics that the stored trials add up to.
        self.assertEqual(result["verify_problems"], 0, err)
        self.assertGreater(result["requests"], 1000)
        # The requests in flight on the killed replica failed; the clients went on elsewhere.
        self.assertLess(result["errors"], 200, err)
        ends = result["endpoints"]["end_trial"]["latency_ms"]["count"]
        self.assertGreater(ends, 100)

    def test_replicas_migrate_at_once(self):
        """Replicas that start together on an empty database migrate it once, in turn."""
        database = harness.fresh_database(None)
        runs = [subprocess.Popen([harness.BIN, "migrate", "--database", database],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
        for p in runs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            self.assertIn("schema version 26", out)
            self.assertNotIn("password", out)
        with Server(database=database) as srv:
            self.assertEqual(srv.register(fake_job("test-migrated"))[0], 201)
            self.assertEqual(srv.request("GET", "/version")[1]["schema_version"], 26)

    def test_zeus_style_url(self):
        """Zeus's async driver URL (postgresql+asyncpg://) names the same database."""
        database = harness.fresh_database(None)
        with Server(database=database.replace("postgresql://", "postgresql+asyncpg://", 1)) as srv:
            self.assertEqual(srv.register(fake_job("test-asyncpg"))[0], 201)
        with Server(database=database) as srv:
            self.assertEqual(srv.request("GET", "/jobs/test-asyncpg")[0], 200)

    def test_more_threads_by_default(self):
        """Threads wait on the database's answers: four per CPU unless told otherwise."""
        database = harness.fresh_database(None)
        for args, want in (([], 4 * os.cpu_count()), (["--threads", "3"], 3)):
            proc = subprocess.Popen([harness.BIN, "--database", database, "--port", "0"] + args,
                                    stderr=subprocess.PIPE, text=True)
            try:
                line = proc.stderr.readline()
                while line and "listening on" not in line:
                    line = proc.stderr.readline()
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
            self.assertIn("%d threads" % want, line)

    def test_database_outage(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)  # the cluster runs as the postgres user
            cluster = os.path.join(d, "pg")
            url = subprocess.run([CLUSTER, "start", cluster], check=True, capture_output=True,
                                 text=True).stdout.strip()
            try:
                with Server(database=url) as srv:
                    self.assertEqual(srv.register(fake_job("test-outage"))[0], 201)
                    self.assertEqual(srv.predict("test-outage")[0], 200)
                    subprocess.run([CLUSTER, "down", cluster], check=True)
                    status, body = srv.predict("test-outage")
                    self.assertEqual(status, 503)
                    self.assertIn("database", body["message"])
                    self.assertEqual(srv.request("GET", "/readyz")[0], 503)
                    self.assertEqual(srv.request("GET", "/healthz")[0], 200)  # alive, not ready
                    subprocess.run([CLUSTER, "up", cluster], check=True)
                    deadline = time.time() + 30
                    while srv.request("GET", "/readyz")[0] != 200 and time.time() < deadline:
                        time.sleep(0.2)
                    self.assertEqual(srv.request("GET", "/readyz")[0], 200)
                    status, t = srv.predict("test-outage")
                    self.assertEqual((status, t["trial_number"]), (200, 2))
            finally:
                subprocess.run([CLUSTER, "stop", cluster])


if __name__ == "__main__":
    unittest.main()


@unittest.skipUnless(shutil.which("initdb") or os.path.isdir("/usr/lib/postgresql"),
                     "PostgreSQL is not installed")
class ClusterScript(unittest.TestCase):
    def test_a_cluster_under_a_private_directory(self):
        """scripts/pg-cluster.sh works wherever the checkout is: its DIR may sit under a
        directory only its owner can enter (a root checkout in a 0700 home), because the
        cluster's own files live where the postgres user reaches them."""
        with tempfile.TemporaryDirectory() as private:
            os.chmod(private, 0o700)
            where = os.path.join(private, "build", "pg")
            url = subprocess.run([CLUSTER, "start", where], capture_output=True, text=True,
                                 check=True, timeout=120).stdout.strip()
            try:
                env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD",)}
                out = subprocess.run(["psql", url, "-tAc", "SELECT 40 + 2"],
                                     capture_output=True, text=True, env=env, timeout=60)
                self.assertEqual(out.stdout.strip(), "42", out.stderr)
            finally:
                subprocess.run([CLUSTER, "stop", where], timeout=120)
            self.assertFalse(os.path.exists(where))
