"""--durability full on a disk whose fsync fails: the requests whose commit cannot reach the
disk fail with 503, and none of their writes remain; the server goes on once the disk is back."""
import os
import subprocess
import tempfile
import threading
import unittest

import harness
from harness import Server

LIB = os.environ.get("BSO_FAILING_FSYNC_LIB")
# A sanitizer runtime must come first in LD_PRELOAD when the server is built with one.
RUNTIMES = os.environ.get("BSO_SANITIZER_RUNTIMES", "")


@unittest.skipIf(not LIB, "the failing-fsync library is built by ctest")
class FailingDisk(unittest.TestCase):
    def test_start_on_a_failing_disk(self):
        """It once crashed here (closing a connection it never had)."""
        with tempfile.TemporaryDirectory() as d:
            flag = os.path.join(d, "fail")
            open(flag, "w").close()
            env = dict(os.environ, LD_PRELOAD=(RUNTIMES + " " + LIB).strip(),
                       BSO_FAIL_FSYNC_FLAG=flag)
            for _ in range(5):  # the crash depended on the stack's contents
                out = subprocess.run([harness.BIN, "--database", "sqlite:///%s/b.db" % d,
                                      "--durability", "full", "--port", "0"], env=env,
                                     capture_output=True, text=True, timeout=60)
                self.assertEqual(out.returncode, 1, out.stderr)
                self.assertIn("disk I/O error", out.stderr)

    def test_group_commit_failure_loses_nothing_acknowledged(self):
        with tempfile.TemporaryDirectory() as d:
            flag = os.path.join(d, "fail")
            env = {"LD_PRELOAD": (RUNTIMES + " " + LIB).strip(), "BSO_FAIL_FSYNC_FLAG": flag}
            with Server(args=["--durability", "full", "--threads", "8"], env=env) as srv:
                self.assertEqual(srv.register(harness.fake_job("test-disk"))[0], 201)
                status, t = srv.predict("test-disk")
                self.assertEqual((status, t["trial_number"]), (200, 1))

                open(flag, "w").close()  # the disk starts failing
                answers = []

                def ask():
                    answers.append(srv.predict("test-disk")[0])

                threads = [threading.Thread(target=ask) for _ in range(8)]
                for th in threads:
                    th.start()
                for th in threads:
                    th.join()
                self.assertEqual(answers, [503] * 8)
                os.remove(flag)  # the disk is back

                status, t = srv.predict("test-disk")
                self.assertEqual((status, t["trial_number"]), (200, 2))
                trials = srv.request("GET", "/jobs/test-disk/trials")[1]["trials"]
                self.assertEqual([x["trial_number"] for x in trials], [1, 2])
                srv.restart()  # what was acknowledged is on disk; nothing else is
                trials = srv.request("GET", "/jobs/test-disk/trials")[1]["trials"]
                self.assertEqual([x["trial_number"] for x in trials], [1, 2])


if __name__ == "__main__":
    unittest.main()
