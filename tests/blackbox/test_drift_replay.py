"""A drift measured in real training on a GPU, replayed through the real server: the runs of
tools/gpu-drift-check.sh on an H200 (gpu_drift_h200.json: each trial's batch size, epochs, outcome,
seconds and joules), reported epoch by epoch at their measured rates. Recorded with the policy of
2026-11-26, the server handed out 256, 512, 2048, 4096 and 2048 again, then 2048 on clean data,
where the policy now probes 1024 (docs/policy.md, "A drift in real training"): the per-step part
of an epoch's cost makes 1024, between the measured 512 and 2048, cheap enough an epoch to
repay a probe (the GPU measured it later, at 0.49 s an epoch against 2048's 0.53). The GPU never
ran 1024 on clean data, so the replay ends there until tools/gpu-drift-check.sh records the
runs again on a GPU; how far 2048's surprising run went towards an alarm and the change found
when its next run was stopped for its cost are left to the unit tests
(test_change_evidence_builds_before_the_alarm, test_run_stopped_for_its_cost_confirms_a_drift)."""
import json
import os
import unittest

from harness import Server

HERE = os.path.dirname(os.path.abspath(__file__))


class DriftReplay(unittest.TestCase):
    def test_gpu_runs_replayed_until_the_policy_probes_1024(self):
        with open(os.path.join(HERE, "gpu_drift_h200.json")) as f:
            recorded = json.load(f)
        job_id = recorded["spec"]["job_id"]
        with Server() as srv:
            self.assertEqual(srv.register(recorded["spec"])[0], 201)
            for k, run in enumerate(recorded["trials"][:5], 1):
                status, t = srv.predict(job_id)
                self.assertEqual(status, 200, t)
                # Only the sizes the GPU ran have measurements: a policy change that hands out
                # another in these trials needs a new recording (tools/gpu-drift-check.sh).
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
            stats = {s["batch_size"]: s for s in job["batch_size_stats"]}
            # 2048 is the best (2 and 3 epochs), 4096 was stopped at beta, 1024 never ran...
            self.assertEqual(job["min_cost_batch_size"], 2048)
            self.assertEqual(stats[1024]["runs"], 0)
            self.assertIsNone(job["change_detected_at_trial"])
            # ...and is the next probe: where the GPU ran 2048 a third time.
            status, t = srv.predict(job_id)
            self.assertEqual(status, 200, t)
            self.assertEqual((t["trial_number"], t["batch_size"]), (6, 1024))
            self.assertEqual(recorded["trials"][5]["batch_size"], 2048)


if __name__ == "__main__":
    unittest.main()
