"""Crash safety: under bso-bench load the server is killed with SIGKILL at random moments and
started again on the same database and port; afterwards every report acknowledged as final is in
the database (bso-bench --verify), the jobs' statistics add up, and SQLite's integrity check
passes. BSO_CRASH_CYCLES sets the number of kills (a few here; `BSO_CRASH_CYCLES=50` for the full
run, see docs/operations.md)."""
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import time
import unittest

from harness import Server, sqlite_only

BENCH = os.environ.get("BSO_BENCH_BIN", "bso-bench")
CYCLES = int(os.environ.get("BSO_CRASH_CYCLES", "4"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@sqlite_only
class Crash(unittest.TestCase):
    def kill_under_load(self, durability, seed):
        rng = random.Random(seed)
        port = free_port()
        srv = Server(args=["--port", str(port), "--durability", durability])
        srv.start()
        kills = 0
        try:
            bench = subprocess.Popen(
                [BENCH, "--url", "http://127.0.0.1:%d" % port, "--jobs", "32", "--concurrency",
                 "16", "--duration", str(2 + CYCLES * 0.8), "--verify", "--json",
                 "--seed", str(seed)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            time.sleep(1)  # the jobs are registered
            for _ in range(CYCLES):
                time.sleep(rng.uniform(0.1, 0.6))
                srv.proc.send_signal(signal.SIGKILL)
                srv.proc.wait()
                srv.stop()  # collects what it logged
                kills += 1
                srv.start()  # same database, same port
            out, err = bench.communicate(timeout=300)
        finally:
            srv.stop()
        path = srv.database[len("sqlite:///"):]
        with sqlite3.connect(path) as db:
            self.assertEqual(db.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            trials = db.execute("SELECT count(*) FROM trial").fetchone()[0]
        srv.tmp.cleanup()
        result = json.loads(out)
        # Every trial handed out is stored, numbered 1, 2, 3...; every final report that was
        # acknowledged is stored; statistics equal a recount from the trials.
        self.assertEqual(result["verify_problems"], 0, err)
        self.assertEqual(kills, CYCLES)
        self.assertGreater(result["errors"], 0)  # the kills were felt
        self.assertGreater(result["endpoints"]["end_trial"]["latency_ms"]["count"], 50)
        self.assertGreater(trials, 100)

    def test_kills_durability_normal(self):
        self.kill_under_load("normal", 11)

    def test_kills_durability_full(self):
        self.kill_under_load("full", 12)


if __name__ == "__main__":
    unittest.main()
