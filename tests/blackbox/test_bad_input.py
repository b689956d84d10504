"""Malformed requests get a clear 4xx (never a 500 with internals) and change nothing."""
import http.client
import json
import socket
import time
import unittest

from harness import Server, fake_job


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server(args=["--max-body-kib", "64"]).__enter__()
        cls.srv.register(fake_job("test-b"))
        cls.srv.predict("test-b")

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)

    def expect(self, method, path, body, status, headers=None):
        before = self.srv.snapshot("test-b")
        got, data = self.srv.request(method, path, body, headers)
        self.assertEqual(got, status, data)
        self.assertEqual(self.srv.snapshot("test-b"), before, "the request changed state")
        return data

    def test_json_depth(self):
        # Here, not among the Limits: their three connections per client would race the
        # server's forgetting of the connections those tests just closed.
        body = '{"job_id": ' + "[" * 20 + "]" * 20 + "}"
        status, data = self.srv.request("POST", "/report", body)
        self.assertEqual(status, 422, data)
        self.assertIn("nested deeper than 16", data["detail"][0]["msg"])
        # Brackets inside strings are not nesting.
        status, data = self.srv.request("POST", "/report", {"job_id": "[" * 40})
        self.assertEqual(status, 422)
        self.assertNotIn("nested", json.dumps(data))

    def test_register_bad_bodies(self):
        good = fake_job("test-new")
        cases = [
            ("not json", 422, "value_error.jsondecode"),
            ("[1, 2]", 422, "type_error.dict"),
            ("", 422, "value_error.missing"),
            (dict(good, batch_sizes=[32, 32, 1024]), 422, "value_error"),
            (dict(good, batch_sizes=[-32, 1024]), 422, "value_error"),
            (dict(good, batch_sizes="32,1024"), 422, "type_error.list"),
            (dict(good, batch_sizes=[32, "x"]), 422, "type_error.integer"),
            (dict(good, max_power="lots"), 422, "type_error.float"),
            (dict(good, higher_is_better_metric="maybe"), 422, "type_error.bool"),
            (dict(good, gpu_model=["A100"]), 422, "type_error.str"),
            (dict(good, gpu_model="x" * 129), 422, "value_error.any_str.max_length"),
            (dict(good, job_id="test-" + "x" * 300), 422, "value_error.any_str.max_length"),
            (dict(good, batch_sizes=list(range(1, 300)), default_batch_size=1), 422,
             "value_error.list.max_items"),
            (dict(good, num_pruning_rounds=0), 422, "value_error.number.not_ge"),
            (dict(good, window_size=1), 422, "value_error"),
            (dict(good, max_power=None), 422, "type_error.none.not_allowed"),
            ({k: v for k, v in good.items() if k != "gpu_model"}, 422, "value_error.missing"),
        ]
        for body, status, type_ in cases:
            with self.subTest(body=str(body)[:80]):
                data = self.expect("POST", "/jobs", body, status)
                self.assertIn(type_, [d["type"] for d in data["detail"]])
        # Loose coercion, as pydantic v1 does it, is accepted.
        status, data = self.srv.register(dict(good, default_batch_size="1024", max_epochs=7.9,
                                              higher_is_better_metric="yes"))
        self.assertEqual(status, 201, data)
        self.assertEqual((data["default_batch_size"], data["max_epochs"]), (1024, 7))

    def test_wrong_content_type(self):
        data = self.expect("POST", "/jobs", fake_job("test-ct"), 422,
                           headers={"Content-Type": "text/plain"})
        self.assertEqual(data["detail"][0]["msg"], "value is not a valid dict")
        # JSON types and curl's default form type are read as JSON.
        for ct in ("application/json", "application/json; charset=utf-8",
                   "application/vnd.api+json", "application/x-www-form-urlencoded"):
            with self.subTest(ct=ct):
                status, _ = self.srv.request("POST", "/jobs", fake_job("test-ct"),
                                             {"Content-Type": ct})
                self.assertIn(status, (200, 201))

    def test_oversized_body_is_answered_not_reset(self):
        """A body of some megabytes over the limit is read to its end and thrown away, so the
        client, still sending when the limit is known, reads its 413 instead of a reset."""
        for size in (2 * 10 ** 6, 8 * 10 ** 6):
            for attempt in range(3):
                conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=30)
                conn.request("POST", "/jobs", body=b"{" + b" " * size + b"}",
                             headers={"Content-Type": "application/json"})
                resp = conn.getresponse()
                data = json.loads(resp.read())
                self.assertEqual(resp.status, 413)
                self.assertIn("too large", data["message"])
                conn.close()

    def test_oversized_body(self):
        data = self.expect("POST", "/jobs", "{" + " " * 70000 + "}", 413)
        self.assertIn("too large", data["message"])
        # The connection-level check on Content-Length answers without reading the body.
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=10)
        conn.putrequest("POST", "/report")
        conn.putheader("Content-Length", str(10 ** 9))
        conn.endheaders()
        resp = conn.getresponse()
        self.assertEqual(resp.status, 413)
        conn.close()

    def test_report_bad_bodies(self):
        base = {"job_id": "test-b", "batch_size": 1024, "trial_number": 1, "time": 1.0,
                "energy": 1.0, "metric": 0.1, "current_epoch": 1}
        cases = [
            (dict(base, time=-1), "time"),
            (dict(base, energy=-5), "energy"),
            (dict(base, time="NaN"), "time"),
            (dict(base, metric="inf"), "metric"),
            (dict(base, trial_number=0), "trial_number"),
            (dict(base, batch_size=-1), "batch_size"),
            (dict(base, current_epoch=-1), "current_epoch"),
            ({k: v for k, v in base.items() if k != "metric"}, "metric"),
            (dict(base, job_id=None), "job_id"),
            (dict(base, samples=10), "mean_batch_size"),
            (dict(base, mean_batch_size=8), "samples"),
            (dict(base, samples=-1, mean_batch_size=8), "samples"),
            (dict(base, samples=10, mean_batch_size=0), "mean_batch_size"),
            (dict(base, samples=10, mean_batch_size="big"), "mean_batch_size"),
        ]
        for body, field in cases:
            with self.subTest(field=field, body=body):
                data = self.expect("POST", "/report", body, 422)
                self.assertEqual(data["detail"][0]["loc"], ["body", field])
        # Finite numbers whose cost overflows are refused too.
        data = self.expect("POST", "/report", dict(base, time=1e308, energy=1e308), 400)
        self.assertIn("overflow", data["message"])

    def test_targets_that_do_not_decode_to_utf8(self):
        # A NUL ended a job id early (test-b%00x addressed test-b, DELETE included), and bytes
        # that are not UTF-8 were a 503 on PostgreSQL: both are a 400 before any routing.
        for target in ("/jobs?job_id=test-b%00x", "/jobs/test-b%00x", "/jobs/%FF",
                       "/jobs/batch_size?job_id=%C0%AF", "/jobs?after=%ED%A0%80",
                       "/jobs/%E2%82", "/jobs/test-b%F4%90%80%80/reset"):
            for method in ("GET", "DELETE", "POST"):
                with self.subTest(target=target, method=method):
                    data = self.expect(method, target, {} if method == "POST" else None, 400)
                    self.assertIn("UTF-8 without NUL", data["message"])
        # Escapes that decode cleanly, and % signs that are not escapes, are ids as ever.
        self.assertEqual(self.expect("GET", "/jobs/test-%62", None, 200)["job_id"], "test-b")
        self.assertIn("Unknown job(50%)", self.expect("GET", "/jobs/50%", None, 404)["message"])

    def test_query_and_routing_errors(self):
        data = self.expect("GET", "/jobs/batch_size", None, 422)
        self.assertEqual(data["detail"][0]["loc"], ["query", "job_id"])
        self.expect("DELETE", "/jobs", None, 422)
        self.assertEqual(self.expect("GET", "/nope", None, 404), {"detail": "Not Found"})
        self.assertEqual(self.expect("PUT", "/jobs", None, 405), {"detail": "Method Not Allowed"})
        self.expect("GET", "/jobs?limit=0", None, 422)
        self.expect("GET", "/jobs?limit=abc", None, 422)
        self.expect("GET", "/jobs/test-b/trials?after=-1", None, 422)
        self.assertEqual(self.expect("GET", "/jobs/absent", None, 404),
                         {"message": "Unknown job(absent)."})
        self.expect("PATCH", "/trials", {"job_id": "test-b", "batch_size": "x"}, 422)

    def test_floods_of_parameters_and_headers(self):
        # Found by fuzzing: a few hundred query parameters used to leave libmicrohttpd unable
        # to answer, and the connection hung until the idle timeout.
        for path in ("/jobs/batch_size?job_id=test-b" + "&" * 300, "/jobs?" + "a=1&" * 50):
            with self.subTest(path=path[:30]):
                data = self.expect("GET", path, None, 414)
                self.assertIn("query parameters", data["message"])
        self.expect("GET", "/jobs/batch_size?job_id=absent&a=1&b=2", None, 400)  # Zeus: 400
        # Too many headers: 431 and the connection closes, promptly.
        conn = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=5)
        conn.putrequest("GET", "/jobs")
        for i in range(400):
            conn.putheader("X-Filler-%d" % i, "y")
        conn.endheaders()
        self.assertEqual(conn.getresponse().status, 431)
        conn.close()



class RepeatedReports(unittest.TestCase):
    """A client that did not get an answer sends the same report again: the same decision
    comes back and nothing changes (bso policy, progress and final reports)."""

    def test_same_decision_nothing_changes(self):
        with Server() as srv:
            self.assertEqual(srv.register(dict(fake_job("test-again"), policy="bso"))[0], 201)
            _, t = srv.predict("test-again")
            bs, n = t["batch_size"], t["trial_number"]
            progress = (bs, n, 10.0, 2000.0, 0.2, 1)
            final = (bs, n, 30.0, 6000.0, 0.9, 3)
            for report in (progress, final):
                first = srv.report("test-again", *report)
                before = (srv.request("GET", "/jobs/test-again")[1],
                          srv.request("GET", "/jobs/test-again/trials")[1])
                again = srv.report("test-again", *report)
                after = (srv.request("GET", "/jobs/test-again")[1],
                         srv.request("GET", "/jobs/test-again/trials")[1])
                self.assertEqual((first[0], again[0]), (200, 200))
                self.assertEqual((first[1]["stop_train"], first[1]["converged"]),
                                 (again[1]["stop_train"], again[1]["converged"]), report)
                self.assertEqual(before, after, report)
            self.assertTrue(again[1]["stop_train"] and again[1]["converged"])

if __name__ == "__main__":
    unittest.main()


class Limits(unittest.TestCase):
    """Each documented limit answers (4xx) or closes the connection; none hangs."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server(args=["--request-timeout", "1", "--timeout", "2",
                               "--max-connections-per-client", "3"]).__enter__()

    @classmethod
    def tearDownClass(cls):
        cls.srv.__exit__(None, None, None)

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.srv.port), timeout=10)

    @staticmethod
    def read_all(sock):
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        return data

    def test_slow_headers_get_408(self):
        s = self.connect()
        s.sendall(b"GET /jobs HTTP/1.1\r\n")
        time.sleep(1.3)  # past --request-timeout 1, within the idle timeout of 2
        s.sendall(b"Host: x\r\n\r\n")
        answer = self.read_all(s)
        s.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 408"), answer[:80])
        self.assertIn(b"too long to arrive", answer)

    def test_slow_body_closes(self):
        s = self.connect()
        start = time.monotonic()
        s.sendall(b"POST /report HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: 100\r\n\r\n" + b" " * 10)
        closed = False
        for _ in range(8):  # a trickle every 0.5 s keeps the idle timeout away
            time.sleep(0.5)
            try:
                s.sendall(b" ")
            except OSError:
                closed = True
                break
            s.settimeout(0.01)
            try:
                if s.recv(4096) == b"":
                    closed = True
                    break
            except socket.timeout:
                pass
            except ConnectionResetError:
                closed = True
                break
        s.close()
        self.assertTrue(closed, "a trickling body kept its connection")
        self.assertLess(time.monotonic() - start, 3.5)

    def test_idle_connection_closed(self):
        s = self.connect()
        start = time.monotonic()
        s.sendall(b"GET /jobs HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        self.assertEqual(self.read_all(s), b"")
        s.close()
        self.assertLess(time.monotonic() - start, 6)

    def test_connections_per_client(self):
        time.sleep(0.5)  # the other tests' connections are closed and forgotten by now
        held = [self.connect() for _ in range(3)]
        for s in held:  # each is served
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(s.recv(4096).startswith(b"HTTP/1.1 200"))
        extra = self.connect()
        try:  # the server may have closed it already
            extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        except OSError:
            pass
        self.assertEqual(self.read_all(extra), b"", "a fourth connection was served")
        extra.close()
        held.pop().close()
        time.sleep(0.2)
        status, _ = self.srv.request("GET", "/healthz")
        self.assertEqual(status, 200)
        for s in held:
            s.close()
