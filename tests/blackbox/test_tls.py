"""HTTPS: bso-server with --tls-cert/--tls-key (a self-signed pair made here), clients that
verify the certificate (--cacert / BSO_CACERT / cacert=), and refusals without it."""
import http.client
import json
import os
import ssl
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from harness import BIN, Server, fake_job  # noqa: E402

CLI = os.environ.get("BSO_CLI_BIN", "bso")


def self_signed(directory, name="127.0.0.1"):
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=" + name,
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True, timeout=60)
    return cert, key


class Https(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory(prefix="bso-tls-")
        cls.cert, cls.key = self_signed(cls.dir.name)
        cls.srv = Server(args=["--tls-cert", cls.cert, "--tls-key", cls.key]).__enter__()
        cls.url = "https://127.0.0.1:%d" % cls.srv.port

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)
        cls.dir.cleanup()

    def https(self, method, path, body=None, cafile=None):
        ctx = ssl.create_default_context(cafile=cafile or self.cert)
        conn = http.client.HTTPSConnection("127.0.0.1", self.srv.port, context=ctx, timeout=10)
        conn.request(method, path, body=json.dumps(body) if body is not None else None)
        resp = conn.getresponse()
        data = json.loads(resp.read() or b"null")
        conn.close()
        return resp.status, data

    def test_verified_https(self):
        self.assertTrue(any("listening on https://" in line for line in self.srv.lines))
        status, _ = self.https("POST", "/jobs", fake_job("test-tls"))
        self.assertEqual(status, 201)
        status, job = self.https("GET", "/jobs/test-tls")
        self.assertEqual((status, job["job_id"]), (200, "test-tls"))

    def test_unverified_certificate_is_refused(self):
        with self.assertRaises(ssl.SSLCertVerificationError):
            ctx = ssl.create_default_context()  # the system's CAs do not know it
            conn = http.client.HTTPSConnection("127.0.0.1", self.srv.port, context=ctx,
                                               timeout=10)
            conn.request("GET", "/healthz")

    def test_plain_http_gets_no_answer(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        with self.assertRaises((http.client.HTTPException, ConnectionError, OSError)):
            conn.request("GET", "/healthz")
            conn.getresponse().read()
        conn.close()
        self.assertEqual(self.https("GET", "/healthz")[0], 200)  # and the server is fine

    def test_libbso_and_cli_verify(self):
        import bso  # noqa: E402
        c = bso.client.Client(self.url, cacert=self.cert)
        job_id, _ = c.register(dict(fake_job("test-tls-py"), job_id="test-tls-py"))
        self.assertEqual(c.get("/jobs/" + job_id)["job_id"], job_id)
        with self.assertRaises(bso.exceptions.BSORuntimeError) as e:
            bso.client.Client(self.url, retries=0).get("/healthz")
        self.assertRegex(str(e.exception).lower(), "certificate|ssl")
        env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "BSO_CACERT")}
        out = subprocess.run([CLI, "--server", self.url, "--cacert", self.cert, "--json", "jobs"],
                             capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("test-tls", out.stdout)
        out = subprocess.run([CLI, "--server", self.url, "--json", "jobs"], capture_output=True,
                             text=True, env=dict(env, BSO_CACERT=self.cert), timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        out = subprocess.run([CLI, "--server", self.url, "jobs"], capture_output=True, text=True,
                             env=env, timeout=60)
        self.assertNotEqual(out.returncode, 0)


class BadTlsSettings(unittest.TestCase):
    def run_server(self, *args):
        return subprocess.run([BIN, "--port", "0", "--database", "sqlite:///:memory:", *args],
                              capture_output=True, text=True, timeout=30)

    def test_errors(self):
        with tempfile.TemporaryDirectory() as d:
            cert, key = self_signed(d)
            other_cert, _ = self_signed(tempfile.mkdtemp(dir=d))  # a key that is not key
            junk = os.path.join(d, "junk.pem")
            with open(junk, "w") as f:
                f.write("not a certificate\n")
            cases = [
                (["--tls-cert", cert], 2, "go together"),
                (["--tls-cert", os.path.join(d, "absent.pem"), "--tls-key", key], 1,
                 "cannot read --tls-cert"),
                (["--tls-cert", junk, "--tls-key", key], 1, "not a PEM file"),
                (["--tls-cert", other_cert, "--tls-key", key], 1, "do not match"),
            ]
            for args, rc, text in cases:
                with self.subTest(args=args):
                    out = self.run_server(*args)
                    self.assertEqual(out.returncode, rc, out.stderr)
                    self.assertIn(text, out.stderr)


if __name__ == "__main__":
    unittest.main()
