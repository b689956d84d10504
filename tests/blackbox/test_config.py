"""Configuration: flags over environment over .env; Zeus's variables; help, version, migrate,
bad settings, read API pagination, and a clean stop on SIGTERM."""
import os
import signal
import subprocess
import tempfile
import unittest

from harness import BIN, Server, fake_job, sqlite_only


def run(args, env=None, cwd=None):
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, **(env or {})), cwd=cwd)


class Config(unittest.TestCase):
    def test_help_version_and_bad_flags(self):
        out = run(["--help"])
        self.assertEqual(out.returncode, 0)
        for word in ("--database", "BSO_DATABASE_URL", "ZEUS_BSO_DATABASE_URL", "--port",
                     "--log-format", "--threads", "--durability", "migrate"):
            self.assertIn(word, out.stdout)
        self.assertRegex(run(["--version"]).stdout, r"^bso-server \d+\.\d+\.\d+")
        bad = run(["--port", "99999"])
        self.assertEqual(bad.returncode, 2)
        self.assertIn("--port", bad.stderr)
        self.assertEqual(run(["--frobnicate"]).returncode, 2)
        self.assertEqual(run([], env={"BSO_LOG_FORMAT": "xml"}).returncode, 2)
        out = run(["--database", "mysql+asyncmy://u:p@db/Zeus", "--port", "0"])
        self.assertEqual(out.returncode, 1)
        self.assertIn("unsupported database URL", out.stderr)

    def test_migrate(self):
        with tempfile.TemporaryDirectory() as d:
            sql = run(["migrate", "--sql", "--database", "sqlite:///x.db"], cwd=d)
            self.assertEqual(sql.returncode, 0)
            self.assertIn("CREATE TABLE job", sql.stdout)
            self.assertFalse(os.path.exists(os.path.join(d, "x.db")))
            out = run(["migrate", "--database", "sqlite:///x.db"], cwd=d)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("schema version 26", out.stdout)
            self.assertTrue(os.path.exists(os.path.join(d, "x.db")))

    @sqlite_only
    def test_one_server_per_database(self):
        """A second server, or a migration, on a database a server is serving is refused
        (the first keeps jobs in memory); once it stops, the file is free again."""
        with Server() as srv:
            self.assertEqual(srv.register(fake_job("test-own"))[0], 201)
            for args in ([], ["migrate"]):
                out = run(args + ["--database", srv.database, "--port", "0"])
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertIn("in use by another bso-server", out.stderr)
            self.assertEqual(srv.request("GET", "/jobs/test-own")[0], 200)
            srv.stop()
            out = run(["migrate", "--database", srv.database])
            self.assertEqual(out.returncode, 0, out.stderr)
            srv.start()
            self.assertEqual(srv.request("GET", "/jobs/test-own")[0], 200)

    def test_cache_setting(self):
        self.assertIn("--cache-mb", run(["--help"]).stdout)
        for bad in ("-1", "lots"):
            out = run(["--cache-mb", bad, "--port", "0"])
            self.assertEqual(out.returncode, 2)
            self.assertIn("--cache-mb", out.stderr)
        with Server(args=["--cache-mb", "0"]) as srv:  # no cache: everything from SQLite
            self.assertEqual(srv.register(fake_job("test-nocache"))[0], 201)
            self.assertEqual(srv.predict("test-nocache")[0], 200)

    def test_precedence_and_zeus_variables(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, ".env"), "w") as f:
                f.write("# settings\nexport BSO_LOG_FORMAT=json\n"
                        "ZEUS_BSO_DATABASE_URL=sqlite+aiosqlite:///from-dotenv.db\n")
            # .env applies: JSON log lines, and Zeus's async URL is understood.
            srv = Server(database=None, cwd=d)
            srv.args = []
            srv.database = "sqlite+aiosqlite:///from-dotenv.db"
            with srv:
                self.assertTrue(srv.lines[0].startswith('{"ts":'), srv.lines[0])
                self.assertEqual(srv.register(fake_job("test-z"))[0], 201)
            self.assertTrue(os.path.exists(os.path.join(d, "from-dotenv.db")))
            # The environment beats .env; a flag beats the environment.
            out = run(["--port", "99999"], env={"BSO_PORT": "8001"}, cwd=d)
            self.assertIn("command line", out.stderr)
            out = run([], env={"BSO_PORT": "nope"}, cwd=d)
            self.assertEqual(out.returncode, 2)
            self.assertIn("BSO_PORT", out.stderr)
            with open(os.path.join(d, ".env"), "w") as f:
                f.write("BSO_PORT 8000\n")
            out = run([], cwd=d)
            self.assertEqual(out.returncode, 2)
            self.assertIn(".env:1", out.stderr)

    def test_default_policy(self):
        """New jobs without a policy get the server's default; a job keeps its own when the
        default changes, so clients that never send the field keep re-registering it."""
        with tempfile.TemporaryDirectory() as d:
            db = "sqlite:///%s/p.db" % d
            with Server(database=db, env={"BSO_DEFAULT_POLICY": "zeus"}) as srv:
                self.assertEqual(srv.register(fake_job("test-old"))[0], 201)
            with Server(database=db) as srv:  # the default is bso
                self.assertEqual(srv.register(fake_job("test-old"))[0], 200)
                self.assertEqual(srv.register(fake_job("test-new"))[0], 201)
                policy = lambda j: srv.request("GET", "/jobs/" + j)[1]["spec"]["policy"]
                self.assertEqual((policy("test-old"), policy("test-new")), ("zeus", "bso"))
                # The job list says each job's policy too.
                listed = {j["job_id"]: j["policy"] for j in srv.request("GET", "/jobs")[1]["jobs"]}
                self.assertEqual(listed, {"test-old": "zeus", "test-new": "bso"})
                self.assertEqual(srv.register(dict(fake_job("test-old"), policy="bso"))[0], 409)
                self.assertEqual(srv.register(dict(fake_job("test-old"), policy="zeus"))[0], 200)
        out = run(["--default-policy", "greedy"])
        self.assertEqual(out.returncode, 2)
        self.assertIn("expected bso or zeus", out.stderr)

    def test_read_api_and_clean_stop(self):
        with Server() as srv:
            for i in range(5):
                srv.register(fake_job("test-%d" % i))
            status, page = srv.request("GET", "/jobs?limit=2")
            self.assertEqual([j["job_id"] for j in page["jobs"]], ["test-0", "test-1"])
            status, page2 = srv.request("GET", "/jobs?limit=2&after=" + page["next_after"])
            self.assertEqual([j["job_id"] for j in page2["jobs"]], ["test-2", "test-3"])
            for _ in range(3):
                srv.predict("test-0")
            _, trials = srv.request("GET", "/jobs/test-0/trials?limit=2")
            self.assertEqual([t["trial_number"] for t in trials["trials"]], [1, 2])
            self.assertEqual(trials["next_after"], 2)
            _, rest = srv.request("GET", "/jobs/test-0/trials?after=2")
            self.assertEqual([t["trial_number"] for t in rest["trials"]], [3])
            self.assertIsNone(rest["next_after"])
            self.assertEqual(srv.request("GET", "/healthz"), (200, {"status": "ok"}))
            self.assertEqual(srv.request("GET", "/readyz"), (200, {"status": "ready"}))
            self.assertEqual(srv.request("GET", "/version")[1]["schema_version"], 26)
            self.assertEqual(srv.stop(signal.SIGINT), 0)
            self.assertIn("stopped", srv.lines[-1])


if __name__ == "__main__":
    unittest.main()
