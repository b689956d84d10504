"""A drift measured in real training on a GPU, replayed through the real server: the runs of
tools/gpu-drift-check.sh on an H200 (gpu_drift_h200.json: each trial's batch size, epochs, outcome,
seconds and joules), reported epoch by epoch at their measured rates. The server must hand out
the sizes it handed out on the GPU, say how far 2048's surprising run went towards an alarm, and
find the change when 2048's next run is stopped for its cost (docs/policy.md, "A drift in real
training")."""
import json
import os
import unittest

from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))


class DriftReplay(unittest.TestCase):
    def test_gpu_drift_is_found_at_the_stop_that_confirms_it(self):
        with open(os.path.join(HERE, "gpu_drift_h200.json")) as f:
            recorded = json.load(f)
        job_id = recorded["spec"]["job_id"]
        with Server() as srv:
            self.assertEqual(srv.register(recorded["spec"])[0], 201)
            evidence = []
            for k, run in enumerate(recorded["trials"][:9], 1):
                status, t = srv.predict(job_id)
                self.assertEqual(status, 200, t)
                # Only the sizes the GPU ran have measurements: a policy change that hands out
                # another in these nine trials needs a new recording (tools/gpu-drift-check.sh).
                self.assertEqual((t["trial_number"], t["batch_size"]), (k, run["batch_size"]),
                                 "the policy now decides otherwise than on the GPU")
                for e in range(1, recorded["spec"]["max_epochs"] + 1):
                    share = e / run["epochs"]
                    status, a = srv.report(job_id, t["batch_size"], k, run["time"] * share,
                                           run["energy"] * share,
                                           0.9 if run["reached"] and e >= run["epochs"] else 0.5,
                                           e)
                    self.assertEqual(status, 200, a)
                    if a["stop_train"]:
                        break
                self.assertEqual((e, a["converged"]), (run["epochs"], run["reached"]))
                job = srv.request("GET", "/jobs/" + job_id)[1]
                evidence.append({s["batch_size"]: s["change_evidence"]
                                 for s in job["batch_size_stats"]}[2048])
                found = job["change_detected_at_trial"]
                self.assertEqual(found, 9 if k == 9 else None, "after trial %d" % k)
            # Trial 7, the first noisy run (6 epochs where 2048 needed 2-3), took 2048 most of
            # the way; trial 8 ran elsewhere; trial 9, stopped at beta after 7, confirmed it.
            self.assertTrue(0.5 < evidence[6] < 1 and evidence[7] == evidence[6], evidence)
            self.assertEqual(evidence[8], 0)  # the sums start again with the change


if __name__ == "__main__":
    unittest.main()
