"""A job that never reached its target under the bso policy: two passes over its sizes, then
409s until the next pass opens (after one refused request, then two, then four), each 409
saying when; from the third pass the sizes closest to the target run first; the count of
refusals is stored (it survives a restart), and GET /jobs/ID and `bso show` say it. Runs on
SQLite and on PostgreSQL."""
import os
import subprocess
import unittest

from harness import Server

CLI = os.environ.get("BSO_CLI_BIN", "bso")

MAX_EPOCHS = 3
# The metric each size ends its runs at (the target is 0.9): 16 comes closest, 64 least.
FINAL = {16: 0.8, 32: 0.6, 64: 0.3}


def spec(job_id):
    return {"job_id": job_id, "job_id_prefix": "nt", "batch_sizes": sorted(FINAL),
            "default_batch_size": 32, "target_metric": 0.9, "max_epochs": MAX_EPOCHS,
            "max_power": 300, "number_of_gpus": 1, "gpu_model": "V100", "mab_seed": 1,
            "policy": "bso"}


class NeverTrained(unittest.TestCase):
    def run_one(self, srv, reach_at=None):
        """Asks for a size and runs it to max_epochs (reaching the target at epoch reach_at
        when given). Returns the size and whether it reached."""
        status, t = srv.predict("nt-job")
        self.assertEqual(status, 200, t)
        bs, n = t["batch_size"], t["trial_number"]
        for e in range(1, MAX_EPOCHS + 1):
            metric = 0.95 if reach_at and e >= reach_at else FINAL[bs] * e / MAX_EPOCHS
            status, a = srv.report("nt-job", bs, n, 10.0 * e, 0.0, metric, e)
            self.assertEqual(status, 200, a)
            if a["stop_train"]:
                break
        return bs, a["converged"]

    def refused(self, srv, runs, after):
        status, body = srv.predict("nt-job")
        self.assertEqual(status, 409, body)
        self.assertIn("No batch size reached the target within max_epochs (3) in %d runs of "
                      "each" % runs, body["message"])
        if after:
            self.assertIn("after %d more request" % after, body["message"])
        else:
            self.assertIn("the next request starts another pass", body["message"])
        self.assertIn("/reset", body["hint"])
        reach = srv.request("GET", "/jobs/nt-job")[1]["target_out_of_reach"]
        self.assertEqual(reach["next_pass_after"], after)
        show = subprocess.run([CLI, "--server", "http://127.0.0.1:%d" % srv.port, "show",
                               "nt-job"], capture_output=True, text=True, timeout=60)
        self.assertEqual(show.returncode, 0, show.stderr)
        if after:
            self.assertIn("its sizes run again after %d more request(s) for a batch size are "
                          "refused (%d so far)" % (after, reach["refused"]), show.stdout)
        else:
            self.assertIn("the next request for a batch size starts another pass", show.stdout)
        return reach["refused"]

    def test_passes_open_further_apart_and_the_count_is_stored(self):
        with Server() as srv:
            self.assertEqual(srv.register(spec("nt-job"))[0], 201)
            first = [self.run_one(srv)[0] for _ in range(3)]
            self.assertEqual(first, [32, 16, 64])  # the default, then smaller, then larger
            second = [self.run_one(srv)[0] for _ in range(3)]
            self.assertEqual(second, first)  # a run may miss by chance: the same order again
            self.assertEqual(self.refused(srv, 2, 0), 1)
            srv.restart()  # the refusal was stored: the third pass opens
            # From the third pass, with two runs of each, the closest to the target first.
            self.assertEqual([self.run_one(srv)[0] for _ in range(3)], [16, 32, 64])
            job = srv.request("GET", "/jobs/nt-job")[1]
            self.assertEqual(job["target_out_of_reach"]["refused"], 0)  # a run resets it
            self.assertEqual(self.refused(srv, 3, 1), 1)
            srv.restart()
            self.assertEqual(self.refused(srv, 3, 0), 2)
            # The fourth pass: 16 reaches this time, and the job trains from then on.
            self.assertEqual(self.run_one(srv, reach_at=2), (16, True))
            job = srv.request("GET", "/jobs/nt-job")[1]
            self.assertIsNone(job["target_out_of_reach"])
            status, t = srv.predict("nt-job")
            self.assertEqual(status, 200, t)

    def test_a_declared_change_opens_the_next_pass_at_once(self):
        with Server() as srv:
            self.assertEqual(srv.register(spec("nt-job"))[0], 201)
            for _ in range(6):  # two passes
                self.run_one(srv)
            self.refused(srv, 2, 0)
            for _ in range(3):  # the third
                self.run_one(srv)
            self.assertEqual(self.refused(srv, 3, 1), 1)
            # New data: what the runs showed was about the job before, so the sizes run again.
            status, job = srv.request("POST", "/jobs/nt-job/changed")
            self.assertEqual(status, 200, job)
            self.assertEqual(job["target_out_of_reach"]["next_pass_after"], 0)
            srv.restart()  # the declaration is stored with the sizes
            self.assertEqual(self.run_one(srv, reach_at=2), (16, True))


if __name__ == "__main__":
    unittest.main()
