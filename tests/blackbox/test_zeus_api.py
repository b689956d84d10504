"""Every behaviour of Zeus's own test_server.py, plus the extra cases of the reference spec's
section 7, against the real bso-server over HTTP."""
import random
import unittest

from harness import Server, fake_job


class ZeusServerSuite(unittest.TestCase):
    def setUp(self):
        self.srv = Server(env={"BSO_DEFAULT_POLICY": "zeus"}).__enter__()  # Zeus clients, Zeus decisions

    def tearDown(self):
        self.srv.__exit__(None, None, None)

    def test_register_job(self):
        job = fake_job("test-reg")
        status, body = self.srv.register(job)
        self.assertEqual(status, 201)
        self.assertEqual(body["job_id"], "test-reg")
        self.assertEqual(body["batch_sizes"], [32, 64, 256, 512, 1024, 2048, 4096])
        self.assertEqual(body["max_power"], 3000.0)
        self.assertNotIn("seed", body)  # unknown fields are ignored
        self.assertEqual(self.srv.register(job)[0], 200)
        # Order of batch sizes and 0.5 vs 0.50 do not matter.
        same = dict(job, batch_sizes=list(reversed(job["batch_sizes"])), eta_knob=0.50)
        self.assertEqual(self.srv.register(same)[0], 200)
        status, body = self.srv.register(dict(job, default_batch_size=512))
        self.assertEqual(status, 409)
        self.assertEqual(body["message"], "JobSpec doesn't match with existing jobSpec. Use a "
                                          "new job_id for different configuration")
        # BSO also names what differs, with both values.
        self.assertEqual(body["differences"], [{"field": "default_batch_size",
                                                "registered": 1024, "sent": 512}])
        status, body = self.srv.register(dict(job, eta_knob=0.25, beta_knob=None,
                                              batch_sizes=[32, 1024]))
        self.assertEqual(status, 409)
        self.assertEqual(body["differences"], [
            {"field": "batch_sizes", "registered": [32, 64, 256, 512, 1024, 2048, 4096],
             "sent": [32, 1024]},
            {"field": "eta_knob", "registered": 0.5, "sent": 0.25},
            {"field": "beta_knob", "registered": 2.0, "sent": None}])

    def test_generated_job_id(self):
        job = fake_job()
        del job["job_id"]
        status, body = self.srv.register(job)
        self.assertEqual(status, 201)
        self.assertRegex(body["job_id"], r"^test-[0-9a-f]{8}$")
        status, again = self.srv.register(job)
        self.assertEqual(status, 201)
        self.assertNotEqual(again["job_id"], body["job_id"])

    def test_register_job_validation_error(self):
        cases = [
            ({"default_batch_size": 128}, "__root__",
             "Default BS(128) not in batch_sizes([32, 64, 256, 512, 1024, 2048, 4096])."),
            ({"default_batch_size": 0}, "default_batch_size", "ensure this value is greater than 0"),
            ({"max_epochs": 0}, "max_epochs", "ensure this value is greater than 0"),
            ({"batch_sizes": []}, "batch_sizes", "Batch Sizes = [] is empty"),
            ({"eta_knob": 1.1}, "eta_knob", "eta_knob should be in range [0,1]"),
            ({"beta_knob": 0}, "beta_knob", "Invalid beta_knob(0.0). To disable early stop, set "
                                            "beta_knob = None to disable or positive value."),
        ]
        for change, field, msg in cases:
            with self.subTest(change=change):
                status, body = self.srv.register(dict(fake_job("test-v"), **change))
                self.assertEqual(status, 422)
                self.assertEqual(len(body["detail"]), 1, body)
                self.assertEqual(body["detail"][0]["loc"], ["body", field])
                self.assertEqual(body["detail"][0]["msg"], msg)
        # Nothing was registered by any of them.
        self.assertEqual(self.srv.request("GET", "/jobs")[1]["jobs"], [])

    def test_predict(self):
        self.srv.register(fake_job("test-p"))
        self.assertEqual(self.srv.predict("test-p"),
                         (200, {"job_id": "test-p", "batch_size": 1024, "trial_number": 1}))
        # Trial 1 is in flight: the next request trains concurrently at the default.
        self.assertEqual(self.srv.predict("test-p"),
                         (200, {"job_id": "test-p", "batch_size": 1024, "trial_number": 2}))

    def test_report(self):
        self.srv.register(fake_job("test-r"))
        self.srv.predict("test-r")
        self.srv.predict("test-r")
        status, body = self.srv.report("test-r", 1024, 1, 14.438, 3000.123, 0.55, 98)
        self.assertEqual((status, body["stop_train"], body["converged"]), (200, True, True))
        self.assertEqual(body["message"], "Train succeeded")
        # 48000 > 2 * 23157.0615: early-stopped, not converged.
        status, body = self.srv.report("test-r", 1024, 2, 30, 6000, 0.55, 2)
        self.assertEqual(status, 200)
        self.assertEqual(body, {
            "stop_train": True, "converged": False,
            "message": "Batch Size(1024) exceeded the cost upper bound: current cost(48000.0) >"
                       "\n                    beta_knob(2.0)*min_cost(23157.0615)"})

    def test_exploration_stage(self):
        """Two pruning rounds with a concurrent request after every exploration: the walk goes
        down then up from the anchor, 1024 and 512 always converge and 512 is cheapest, other
        sizes fail at random."""
        rnd = random.Random(7)
        self.srv.register(fake_job("test-e"))
        sizes = [32, 64, 256, 512, 1024, 2048, 4096]
        # All within beta (2) times the cheapest, so only the chosen failures prune.
        cost = {32: 5900, 64: 5800, 256: 5500, 512: 3000, 1024: 5000, 2048: 5600, 4096: 5700}
        candidates, anchor, number = sizes, 1024, 0
        for _ in range(2):
            down = [b for b in candidates if b <= anchor][::-1]
            up = [b for b in candidates if b > anchor]
            survivors = []
            for direction in (down, up):
                for bs in direction:
                    status, t = self.srv.predict("test-e")
                    number += 1
                    self.assertEqual((status, t["batch_size"], t["trial_number"]),
                                     (200, bs, number))
                    status, c = self.srv.predict("test-e")  # concurrent
                    number += 1
                    self.assertEqual(c["trial_number"], number)
                    converge = bs in (512, 1024) or rnd.random() < 0.5
                    _, r = self.srv.report("test-e", bs, t["trial_number"], cost[bs] / 1500, 0,
                                           0.9 if converge else 0.1, 1 if converge else 100)
                    self.assertEqual(r["converged"], converge)
                    self.srv.end_trial("test-e", c["batch_size"], c["trial_number"])
                    if not converge:
                        break
                    survivors.append(bs)
            anchor = min(survivors, key=lambda b: cost[b])
            self.assertEqual(anchor, 512)
            candidates = sorted(survivors)
        status, t = self.srv.predict("test-e")
        self.assertEqual(status, 200)
        self.assertIn(t["batch_size"], candidates)
        arms = [a["batch_size"] for a in self.srv.request("GET", "/jobs/test-e")[1]["arms"]]
        self.assertEqual(arms, candidates)
        self.assertTrue(self.srv.wait_for_line("Construct MAB for test-e with arms ["))

    def test_mab_stage(self):
        self.srv.register(fake_job("test-m"))
        for _ in range(50):
            status, t = self.srv.predict("test-m")
            self.assertEqual(status, 200)
            status, c = self.srv.predict("test-m")
            self.assertEqual(status, 200)
            status, r = self.srv.report("test-m", t["batch_size"], t["trial_number"], 10, 100,
                                        0.9, 1)
            self.assertEqual((status, r["converged"]), (200, True))
            self.srv.end_trial("test-m", c["batch_size"], c["trial_number"])
        job = self.srv.request("GET", "/jobs/test-m")[1]
        self.assertEqual(job["stage"], "MAB")
        # Identical costs: zero variance, infinite precision (written as null).
        self.assertTrue(all(a["param_precision"] is None for a in job["arms"]))

    def test_end_trial(self):
        self.srv.register(fake_job("test-t"))
        _, t = self.srv.predict("test-t")
        self.assertEqual(self.srv.end_trial("test-t", 1024, t["trial_number"]), (200, None))
        status, t2 = self.srv.predict("test-t")
        self.assertEqual((status, t2["batch_size"]), (200, 1024))  # the failed one again
        self.srv.report("test-t", 1024, t2["trial_number"], 10, 10, 0.9, 1)
        self.assertEqual(self.srv.end_trial("test-t", 1024, t2["trial_number"]), (200, None))
        status, body = self.srv.end_trial("test-t", 1024, 99)
        self.assertEqual(status, 404)
        self.assertEqual(body["message"], "Could not find the trial: job_id='test-t' "
                                          "batch_size=1024 trial_number=99")

    def test_delete_job(self):
        self.srv.register(fake_job("test-d"))
        self.srv.predict("test-d")
        self.assertEqual(self.srv.delete("test-d"), (200, None))
        self.assertEqual(self.srv.register(fake_job("test-d"))[0], 201)
        self.assertEqual(self.srv.predict("test-d")[1]["trial_number"], 1)  # trials went too
        self.assertEqual(self.srv.delete("test-d"), (200, None))
        self.assertEqual(self.srv.delete("UNKNOWN"), (404, {"message": "No job was deleted."}))

    # ---- the extra cases of section 7 ----

    def test_failed_trial_reissue_and_report_on_failed(self):
        self.srv.register(fake_job("test-f"))
        _, t = self.srv.predict("test-f")
        self.srv.end_trial("test-f", 1024, 1)
        status, body = self.srv.report("test-f", 1024, 1, 1, 1, 0.9, 1)
        self.assertEqual((status, body), (400, {
            "message": "Trial(1) is already reported but converged is not set."}))
        self.assertEqual(self.srv.predict("test-f")[1]["batch_size"], 1024)

    def test_already_reported(self):
        self.srv.register(fake_job("test-ar"))
        self.srv.predict("test-ar")
        self.srv.report("test-ar", 1024, 1, 10, 10, 0.1, 100)
        status, body = self.srv.report("test-ar", 1024, 1, 1, 1, 0.9, 1)
        self.assertEqual((status, body), (200, {
            "stop_train": True, "converged": False,
            "message": "Result for this trial(1) is already reported."}))

    def test_cost_bound_boundary(self):
        self.srv.register(dict(fake_job("test-cb"), max_power=1000, eta_knob=0.5))
        self.srv.predict("test-cb")
        self.srv.predict("test-cb")
        self.srv.report("test-cb", 1024, 1, 1.0, 0, 0.9, 1)  # cost 500
        # cost exactly 2 * 500 keeps training; one more joule stops.
        self.assertEqual(self.srv.report("test-cb", 1024, 2, 2.0, 0, 0.1, 1)[1]["stop_train"],
                         False)
        _, body = self.srv.report("test-cb", 1024, 2, 2.0, 2, 0.1, 1)
        self.assertEqual((body["stop_train"], body["converged"]), (True, False))

    def test_beta_null_never_early_stops(self):
        self.srv.register(dict(fake_job("test-bn"), beta_knob=None))
        self.srv.predict("test-bn")
        self.srv.predict("test-bn")
        self.srv.report("test-bn", 1024, 1, 1.0, 0, 0.9, 1)
        _, body = self.srv.report("test-bn", 1024, 2, 1e6, 1e9, 0.1, 99)
        self.assertFalse(body["stop_train"])
        _, body = self.srv.report("test-bn", 1024, 2, 1e6, 1e9, 0.1, 100)
        self.assertEqual(body["message"], "Train failed to converge within max_epoch(100)")

    def test_all_pruned(self):
        # 512 fails (the down list ends), then 1024 fails (the up list ends): nothing survives.
        job = dict(fake_job("test-ap"), batch_sizes=[512, 1024], default_batch_size=512)
        self.srv.register(job)
        for bs in (512, 1024):
            _, t = self.srv.predict("test-ap")
            self.assertEqual(t["batch_size"], bs)
            self.srv.report("test-ap", bs, t["trial_number"], 1, 1, 0.1, 100)
        for _ in range(2):
            status, body = self.srv.predict("test-ap")
            self.assertEqual((status, body["message"]), (409,
                "No converged batch sizes has observed. Reconfigure batch_sizes and "
                "re-launch the job."))
            self.assertIn("/reset", body["hint"])  # BSO's addition: the way out
        # Reset: the job explores again from its default, trial numbers go on.
        status, job = self.srv.request("POST", "/jobs/test-ap/reset")
        self.assertEqual((status, job["stage"], job["min_cost"]), (200, "Pruning", None))
        self.assertEqual(job["trials"]["total"], 2)  # numbering continues
        status, t = self.srv.predict("test-ap")
        self.assertEqual((status, t["batch_size"], t["trial_number"]), (200, 512, 3))
        _, trials = self.srv.request("GET", "/jobs/test-ap/trials")
        self.assertEqual([x["trial_number"] for x in trials["trials"]], [3])
        self.assertEqual(self.srv.request("POST", "/jobs/absent/reset")[0], 404)
        self.assertEqual(self.srv.request("GET", "/jobs/test-ap/reset")[0], 404)

    def test_late_concurrent_report(self):
        job = dict(fake_job("test-lc"), batch_sizes=[1024, 2048], num_pruning_rounds=1,
                   window_size=0)
        self.srv.register(job)
        _, e = self.srv.predict("test-lc")
        _, c = self.srv.predict("test-lc")  # concurrent, left pending
        self.srv.report("test-lc", 1024, e["trial_number"], 1, 1, 0.9, 1)
        _, e2 = self.srv.predict("test-lc")
        self.srv.report("test-lc", 2048, e2["trial_number"], 1, 1, 0.1, 100)
        self.assertEqual(self.srv.predict("test-lc")[0], 200)  # the switch to MAB
        status, body = self.srv.report("test-lc", 1024, c["trial_number"], 1, 1, 0.9, 1)
        self.assertEqual((status, body), (400, {
            "message": "Cannot update an arm since this trial is not issued from MAB stage."}))

    def test_unknown_job_and_trial(self):
        self.assertEqual(self.srv.predict("nope"), (400, {
            "message": "Unknown job(nope). Please register the job first"}))
        self.assertEqual(self.srv.report("nope", 32, 1, 1, 1, 0.1, 1),
                         (400, {"message": "Unknown job nope"}))
        self.srv.register(fake_job("test-u"))
        self.assertEqual(self.srv.report("test-u", 32, 1, 1, 1, 0.1, 1), (400, {
            "message": "Unknown trial job_id='test-u' batch_size=32 trial_number=1 time=1.0 "
                       "energy=1.0 metric=0.1 current_epoch=1"}))


if __name__ == "__main__":
    unittest.main()


class Leases(unittest.TestCase):
    """A trial whose client vanished (no report, no end) is failed when its lease runs out and
    its batch size is issued again; Zeus would wait for it forever."""

    def test_waiting_trial_expires(self):
        with Server(args=["--lease-floor", "1", "--lease-default", "1"]) as srv:
            srv.register(fake_job("test-lease"))
            _, t = srv.predict("test-lease")
            self.assertTrue(srv.wait_for_line("past its lease", timeout=10), srv.lines[-5:])
            _, trials = srv.request("GET", "/jobs/test-lease/trials")
            self.assertEqual(trials["trials"][0]["status"], "Failed")
            _, again = srv.predict("test-lease")
            self.assertEqual((again["batch_size"], again["trial_number"]),
                             (t["batch_size"], t["trial_number"] + 1))
            # A late report for the expired trial is refused as for any failed trial.
            status, _ = srv.report("test-lease", t["batch_size"], t["trial_number"], 1, 1, 0.9, 1)
            self.assertEqual(status, 400)
