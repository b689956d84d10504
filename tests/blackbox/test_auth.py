"""API tokens and tenants: tokens made by `bso-server token`, stored hashed, checked on every
endpoint but the probes; each tenant sees only its own jobs, an admin sees all; revocation
takes effect within a second; a server others can reach refuses to start without tokens."""
import http.client
import os
import sqlite3
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from harness import BIN, PG_URL, Server, fake_job  # noqa: E402

CLI = os.environ.get("BSO_CLI_BIN", "bso")


def token_cmd(database, *args):
    return subprocess.run([BIN, "token", *args, "--database", database], capture_output=True,
                          text=True, timeout=60)


def create_token(database, tenant, admin=False):
    out = token_cmd(database, "create", "--tenant", tenant, *(["--admin"] if admin else []))
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class Tokens(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server().__enter__()
        db = cls.srv.database
        cls.a = create_token(db, "team-a")
        cls.b = create_token(db, "team-b")
        cls.admin = create_token(db, "ops", admin=True)

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)

    def call(self, method, path, body=None, token=None):
        headers = {"Authorization": "Bearer " + token} if token else {}
        return self.srv.request(method, path, body, headers)

    def test_tokens_are_shown_once_and_stored_hashed(self):
        self.assertRegex(self.a, r"^bso_[0-9a-f]{48}$")
        listing = token_cmd(self.srv.database, "list").stdout
        self.assertIn("team-a", listing)
        self.assertIn(self.a[:12], listing)
        self.assertNotIn(self.a, listing)
        if not PG_URL:
            path = self.srv.database[len("sqlite:///"):]
            rows = sqlite3.connect(path).execute("SELECT hash, hint FROM api_token").fetchall()
            self.assertGreaterEqual(len(rows), 3)
            for digest, hint in rows:
                self.assertRegex(digest, r"^[0-9a-f]{64}$")
                self.assertNotIn(digest, (self.a, self.b, self.admin))
                self.assertEqual(len(hint), 12)

    def test_every_endpoint_needs_a_token_but_probes(self):
        for method, path in [("GET", "/jobs"), ("POST", "/jobs"), ("GET", "/jobs/x"),
                             ("GET", "/jobs/batch_size?job_id=x"), ("POST", "/report"),
                             ("PATCH", "/trials"), ("DELETE", "/jobs?job_id=x"),
                             ("POST", "/jobs/x/changed")]:
            with self.subTest(path=path):
                status, data = self.call(method, path, {})
                self.assertEqual(status, 401, data)
                self.assertIn("Bearer", data["message"])
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        conn.request("GET", "/jobs")
        resp = conn.getresponse()
        self.assertEqual(resp.getheader("WWW-Authenticate"), 'Bearer realm="bso"')
        conn.close()
        status, data = self.call("GET", "/jobs", token="bso_" + "0" * 48)
        self.assertEqual((status, data["message"]),
                         (401, "The API token is not valid (unknown or revoked)."))
        self.assertEqual(self.call("GET", "/jobs", token="Basic abc")[0], 401)
        for path in ("/healthz", "/readyz", "/version"):
            self.assertEqual(self.call("GET", path)[0], 200)

    def test_tenants_see_only_their_jobs(self):
        status, _ = self.call("POST", "/jobs", fake_job("test-iso"), token=self.a)
        self.assertEqual(status, 201)
        # Its owner works with it.
        status, pred = self.call("GET", "/jobs/batch_size?job_id=test-iso", token=self.a)
        self.assertEqual(status, 200)
        status, job = self.call("GET", "/jobs/test-iso", token=self.a)
        self.assertEqual((status, job["tenant"]), (200, "team-a"))
        # Another tenant: as if the job did not exist, everywhere.
        self.assertEqual(self.call("GET", "/jobs/test-iso", token=self.b)[0], 404)
        self.assertEqual(self.call("GET", "/jobs/test-iso/trials", token=self.b)[0], 404)
        self.assertEqual(self.call("POST", "/jobs/test-iso/changed", {}, token=self.b)[0], 404)
        status, data = self.call("GET", "/jobs/batch_size?job_id=test-iso", token=self.b)
        self.assertEqual(status, 400)
        self.assertIn("Unknown job", data["message"])
        report = {"job_id": "test-iso", "batch_size": pred["batch_size"],
                  "trial_number": pred["trial_number"], "time": 1.0, "energy": 1.0,
                  "metric": 0.1, "current_epoch": 1}
        self.assertIn(self.call("POST", "/report", report, token=self.b)[0], (400, 404))
        self.assertIn(self.call("DELETE", "/jobs?job_id=test-iso", token=self.b)[0], (400, 404))
        ids = [j["job_id"] for j in self.call("GET", "/jobs", token=self.b)[1]["jobs"]]
        self.assertNotIn("test-iso", ids)
        status, data = self.call("POST", "/jobs", fake_job("test-iso"), token=self.b)
        self.assertEqual(status, 409)
        self.assertIn("taken", data["message"])
        # The admin sees every tenant's jobs.
        ids = [j["job_id"] for j in self.call("GET", "/jobs", token=self.admin)[1]["jobs"]]
        self.assertIn("test-iso", ids)
        self.assertEqual(self.call("GET", "/jobs/test-iso", token=self.admin)[0], 200)
        # And the job is intact after all that.
        status, job = self.call("GET", "/jobs/test-iso", token=self.a)
        self.assertEqual(job["trials"]["total"], 1)

    def test_revocation_takes_effect_within_a_second(self):
        db = self.srv.database
        temp = create_token(db, "team-c")
        self.assertEqual(self.call("GET", "/jobs", token=temp)[0], 200)
        ident = [line.split()[0] for line in token_cmd(db, "list", "--tenant", "team-c")
                 .stdout.splitlines()[1:]]
        self.assertEqual(len(ident), 1)
        out = token_cmd(db, "revoke", ident[0])
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("revoked 1 token", out.stdout)
        deadline = time.monotonic() + 3
        while self.call("GET", "/jobs", token=temp)[0] != 401:
            self.assertLess(time.monotonic(), deadline, "a revoked token still works")
            time.sleep(0.1)
        self.assertNotIn("active", token_cmd(db, "list", "--tenant", "team-c").stdout)
        self.assertNotEqual(token_cmd(db, "revoke", ident[0]).returncode, 0)  # nothing left

    def test_clients_send_the_token(self):
        import bso  # noqa: E402  (loads libbso)
        c = bso.client.Client("http://127.0.0.1:%d" % self.srv.port, token=self.a)
        job_id, created = c.register(dict(fake_job("test-py"), job_id="test-py"))
        self.assertEqual(job_id, "test-py")
        self.assertEqual(c.get("/jobs/test-py")["tenant"], "team-a")
        with self.assertRaises(bso.exceptions.BSORuntimeError) as e:
            bso.client.Client("http://127.0.0.1:%d" % self.srv.port, token="bso_bad",
                              retries=0).get("/jobs")
        self.assertIn("401", str(e.exception))
        # The CLI: --token, or BSO_TOKEN.
        url = "http://127.0.0.1:%d" % self.srv.port
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "BSO_TOKEN")}
        out = subprocess.run([CLI, "--server", url, "--token", self.b, "--json", "jobs"],
                             capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertNotIn("test-py", out.stdout)
        out = subprocess.run([CLI, "--server", url, "--json", "jobs"], capture_output=True,
                             text=True, env=dict(env, BSO_TOKEN=self.a), timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("test-py", out.stdout)
        out = subprocess.run([CLI, "--server", url, "jobs"], capture_output=True, text=True,
                             env=env, timeout=60)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("401", out.stderr)


    def test_zeus_client_with_the_token_in_its_url(self):
        """Zeus's client takes only a URL: with http://TOKEN@host it sends the token as HTTP
        Basic credentials, which the server accepts (as user name, or as password after an
        empty one). Driven with httpx as Zeus's client uses it. The token never reaches a log
        or a message."""
        import httpx
        host = "127.0.0.1:%d" % self.srv.port
        for userinfo in (self.a, self.a + ":x", ":" + self.a):
            with self.subTest(userinfo=userinfo.replace(self.a, "TOKEN")):
                url = "http://%s@%s" % (userinfo, host)
                job = fake_job("test-tok-%d" % len(userinfo))
                r = httpx.post(url + "/jobs", json=job, timeout=10)
                self.assertEqual(r.status_code, 201, r.text)
                r = httpx.get(url + "/jobs/batch_size", params={"job_id": job["job_id"]},
                              timeout=10)
                self.assertEqual(r.status_code, 200, r.text)
                trial = r.json()
                r = httpx.post(url + "/report", json=dict(trial, time=10.0, energy=100.0,
                                                          metric=0.9, current_epoch=1),
                               timeout=10)
                self.assertEqual((r.status_code, r.json()["converged"]), (200, True), r.text)
                r = httpx.patch(url + "/trials", json=trial, timeout=10)
                self.assertEqual(r.status_code, 200, r.text)
                tenant = self.call("GET", "/jobs/" + job["job_id"], token=self.admin)[1]["tenant"]
                self.assertEqual(tenant, "team-a")
        for bad in ("bso_nope", "bso_nope:x"):
            r = httpx.get("http://%s@%s/jobs" % (bad, host), timeout=10)
            self.assertEqual(r.status_code, 401)
        status, data = self.srv.request("GET", "/jobs", headers={"Authorization": "Basic !!"})
        self.assertEqual(status, 401)
        self.assertIn("Basic credentials with the token as user name", data["message"])
        # libbso (curl) sends the URL's credentials too; its messages hide them.
        import bso  # noqa: E402
        c = bso.client.Client("http://%s@%s" % (self.a, host))
        self.assertEqual(c.get("/jobs/test-tok-%d" % len(self.a))["tenant"], "team-a")
        with self.assertRaises(bso.exceptions.BSORuntimeError) as e:
            bso.client.Client("http://%s@127.0.0.1:1" % self.a, retries=0).get("/jobs")
        self.assertIn("http://***@127.0.0.1:1/jobs", str(e.exception))
        self.assertNotIn(self.a, str(e.exception))
        self.assertEqual(bso.client.shown_url("https://%s:pw@h:1/x" % self.a), "https://***@h:1/x")
        time.sleep(0.2)
        self.assertFalse([l for l in self.srv.lines if self.a in l])


class Exposure(unittest.TestCase):
    """Secure by default: a server bound to an address others can reach needs tokens."""

    def test_public_address_without_tokens_refuses_to_start(self):
        srv = Server(args=["--host", "0.0.0.0"])
        try:
            with self.assertRaises(RuntimeError) as e:
                srv.start()
            self.assertIn("bso-server token create", str(e.exception))
            self.assertEqual(srv.proc.wait(10), 1)
        finally:
            srv.tmp.cleanup()

    def test_public_address_with_tokens_or_insecure(self):
        with Server(args=["--host", "0.0.0.0", "--insecure-no-auth"]) as srv:
            self.assertTrue(any("--insecure-no-auth" in line for line in srv.lines))
            self.assertEqual(srv.register(fake_job("test-open"))[0], 201)  # a Zeus client
            token = create_token(srv.database, "t")
            time.sleep(1.2)
            self.assertEqual(srv.request("GET", "/jobs")[0], 200)  # still no tokens asked
            srv.stop()
            srv.args = ["--host", "0.0.0.0"]
            srv.start()  # tokens exist now: it starts, and asks for them
            self.assertEqual(srv.request("GET", "/jobs")[0], 401)
            status, data = srv.request("GET", "/jobs", headers={"Authorization": "Bearer " + token})
            self.assertEqual(status, 200)
            # A tenant does not see jobs registered without authentication; nobody owns them.
            self.assertEqual(data["jobs"], [])

    def test_loopback_without_tokens_serves_zeus_clients(self):
        with Server() as srv:
            self.assertEqual(srv.register(fake_job("test-zeus"))[0], 201)
            self.assertTrue(any("no API tokens yet" in line for line in srv.lines))
            create_token(srv.database, "t")
            deadline = time.monotonic() + 3
            while srv.request("GET", "/jobs")[0] != 401:  # the first token turns checks on
                self.assertLess(time.monotonic(), deadline)
                time.sleep(0.1)

    def test_token_command_errors(self):
        with Server() as srv:
            db = srv.database
            for args, text in [(["create"], "--tenant"), (["create", "--tenant", "a b"], "--tenant"),
                               (["revoke"], "ID or --tenant"), (["list", "--admin"], "--admin")]:
                out = token_cmd(db, *args)
                self.assertEqual(out.returncode, 2, args)
                self.assertIn(text, out.stderr)
            out = subprocess.run([BIN, "token"], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 2)
            self.assertIn("create, list or revoke", out.stderr)


if __name__ == "__main__":
    unittest.main()
