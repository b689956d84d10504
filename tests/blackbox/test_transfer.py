"""A job moving to other hardware: "transfer_from" at registration, POST /jobs/ID/transfer and
`bso transfer OLD NEW` start the new job from the old one's per-size epochs (a prior worth one
run) and the sizes that never reached there (failed), never from its costs per epoch or its
unfit sizes; clear errors for bad input; where a job came from shows in GET /jobs/ID and
`bso show`. Runs on SQLite and on PostgreSQL."""
import os
import subprocess
import unittest

from harness import Server

CLI = os.environ.get("BSO_CLI_BIN", "bso")

SIZES = [16, 32, 64, 128, 256]
EPOCHS = {16: 6, 32: 7, 64: 8, 128: 14, 256: 19}   # epochs to the target: the workload's
PER_EPOCH = {16: 300, 32: 180, 64: 100, 128: 50, 256: 45}  # seconds an epoch: the hardware's


def spec(job_id, gpu, **extra):
    s = {"job_id": job_id, "job_id_prefix": "tr", "batch_sizes": SIZES,
         "default_batch_size": 64, "target_metric": 0.9, "max_epochs": 30, "max_power": 300,
         "number_of_gpus": 1, "gpu_model": gpu, "mab_seed": 5, "policy": "bso"}
    s.update(extra)
    return s


def recur(srv, job_id, per_epoch, epochs=EPOCHS):
    """One recurrence (energy 0, so cost = 150 x time). Returns the sizes launched."""
    return [bs for bs, _ in srv.recur(job_id, epochs, per_epoch, max_epochs=30)]


class Transfer(unittest.TestCase):
    def learn(self, srv, job_id, recurrences=25):
        self.assertEqual(srv.register(spec(job_id, "V100"))[0], 201)
        for _ in range(recurrences):
            recur(srv, job_id, PER_EPOCH)
        return srv.request("GET", "/jobs/" + job_id)[1]

    def test_register_with_transfer_from(self):
        with Server() as srv:
            old = self.learn(srv, "tr-old")
            reached = {s["batch_size"]: s for s in old["batch_size_stats"] if s["successes"]}
            self.assertIn(128, reached)
            status, body = srv.register(spec("tr-new", "A100", transfer_from="tr-old"))
            self.assertEqual(status, 201, body)
            self.assertNotIn("transfer_from", body)  # Zeus's echo of the spec is unchanged
            new = srv.request("GET", "/jobs/tr-new")[1]
            self.assertEqual(new["transferred_from"]["job_id"], "tr-old")
            stats = {s["batch_size"]: s for s in new["batch_size_stats"]}
            # Epochs come over as a prior: the posterior mean where the old job reached (about
            # the size's epochs), nothing counted as a run here, no cost per epoch measured.
            for bs, s in reached.items():
                self.assertAlmostEqual(stats[bs]["prior_epochs"], EPOCHS[bs], delta=1.0)
            for s in stats.values():
                self.assertEqual(s["runs"], 0)
                self.assertIsNone(s["cost_per_epoch"])
                self.assertEqual(s["status"], "untried")
            self.assertEqual(new["transferred_from"]["batch_sizes"],
                             sum(1 for s in stats.values() if s["prior_epochs"] is not None))
            # Re-registering (a Zeus client does, every run) changes nothing.
            self.assertEqual(srv.register(spec("tr-new", "A100", transfer_from="tr-old"))[0], 200)
            # The new hardware is faster at every size. The first run goes where the old job's
            # epochs and costs point (128, the optimum), not to the default (64), so it costs
            # less than a fresh job's first run on that hardware; the job stays there.
            new_hw = {bs: t * 0.6 for bs, t in PER_EPOCH.items()}
            first = recur(srv, "tr-new", new_hw)
            self.assertEqual(first[0], 128)
            self.assertEqual(srv.register(spec("tr-fresh", "A100"))[0], 201)
            fresh_first = recur(srv, "tr-fresh", new_hw)
            self.assertEqual(fresh_first[0], 64)
            for _ in range(10):
                last = recur(srv, "tr-new", new_hw)
                recur(srv, "tr-fresh", new_hw)
            self.assertEqual(last, [128])

            def first_cost(job_id):
                trials = srv.request("GET", "/jobs/%s/trials?limit=1" % job_id)[1]["trials"]
                return trials[0]["cost"]
            self.assertLess(first_cost("tr-new"), first_cost("tr-fresh"))
            new = srv.request("GET", "/jobs/tr-new")[1]
            s128 = next(s for s in new["batch_size_stats"] if s["batch_size"] == 128)
            self.assertIsNone(s128["prior_epochs"])  # joined the size's runs once it reached
            self.assertAlmostEqual(s128["cost_per_epoch"], 150 * 30, places=3)

    def test_a_size_that_never_reached_there_starts_failed(self):
        # 256 needs more epochs than max_epochs (20) allows, on any hardware: the old job ran
        # it to max_epochs (it is the cheapest per epoch by far) and it never reached.
        epochs = {**EPOCHS, 256: 26}
        per_epoch = {**PER_EPOCH, 256: 20}
        with Server() as srv:
            self.assertEqual(srv.register(spec("tr-f-old", "V100", max_epochs=20))[0], 201)
            for _ in range(15):
                srv.recur("tr-f-old", epochs, per_epoch, max_epochs=20)
            old = {s["batch_size"]: s for s in
                   srv.request("GET", "/jobs/tr-f-old")[1]["batch_size_stats"]}
            self.assertEqual((old[256]["status"], old[256]["successes"]), ("failed", 0))
            self.assertGreaterEqual(old[256]["misses"], 1)
            status, body = srv.register(spec("tr-f-new", "A100", max_epochs=20,
                                             transfer_from="tr-f-old"))
            self.assertEqual(status, 201, body)
            new = {s["batch_size"]: s for s in
                   srv.request("GET", "/jobs/tr-f-new")[1]["batch_size_stats"]}
            # Failed with the old job's misses, though nothing ran here; the others untried.
            self.assertEqual((new[256]["status"], new[256]["runs"], new[256]["misses"]),
                             ("failed", 0, old[256]["misses"]))
            self.assertEqual({s["status"] for bs, s in new.items() if bs != 256}, {"untried"})
            out = subprocess.run([CLI, "--server", "http://127.0.0.1:%d" % srv.port, "show",
                                  "tr-f-new"], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("1 batch size failed with 0 runs: never reached in tr-f-old", out.stdout)
            # A job that allows more epochs than the old one may still reach there.
            self.assertEqual(srv.register(spec("tr-f-long", "A100", max_epochs=40,
                                               transfer_from="tr-f-old"))[0], 201)
            longer = {s["batch_size"]: s for s in
                      srv.request("GET", "/jobs/tr-f-long")[1]["batch_size_stats"]}
            self.assertEqual((longer[256]["status"], longer[256]["misses"]), ("untried", 0))

    def test_transfer_endpoint_and_cli(self):
        with Server() as srv:
            self.learn(srv, "tr-a", recurrences=15)
            self.assertEqual(srv.register(spec("tr-b", "A100"))[0], 201)
            url = "http://127.0.0.1:%d" % srv.port
            out = subprocess.run([CLI, "--server", url, "transfer", "tr-a", "tr-b"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("tr-b starts from tr-a's epochs", out.stdout)
            out = subprocess.run([CLI, "--server", url, "show", "tr-b"], capture_output=True,
                                 text=True, timeout=60)
            self.assertIn("transferred from tr-a", out.stdout)
            # Each size tr-a reached at shows its epochs there, in brackets, until tr-b's own
            # runs reach; the others show none.
            priors = {r["batch_size"]: r["prior_epochs"]
                      for r in srv.request("GET", "/jobs/tr-b")[1]["batch_size_stats"]}
            for bs, prior in priors.items():
                shown = r"\(%.2f\)" % prior if prior else r"-"
                self.assertRegex(out.stdout, r"\n\s+%d untried\s+0\s+0\s+0\s+%s\s" % (bs, shown))
            self.assertTrue(any(priors.values()))
            self.assertIn("min cost none yet", out.stdout)
            self.assertIn("(epochs): inherited from the job this one was transferred from",
                          out.stdout)
            status, body = srv.request("POST", "/jobs/tr-b/transfer", {"from": "tr-a"})
            self.assertEqual(status, 200, body)
            self.assertEqual(body["transferred_from"]["job_id"], "tr-a")
            # From a job that has learnt nothing yet: the new job starts afresh, and says so.
            self.assertEqual(srv.register(spec("tr-c", "H100"))[0], 201)
            out = subprocess.run([CLI, "--server", url, "transfer", "tr-c", "tr-b"],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("tr-c has not reached the target at any batch size yet", out.stdout)
            job = srv.request("GET", "/jobs/tr-b")[1]
            self.assertEqual(job["transferred_from"]["batch_sizes"], 0)
            # ...and what the transfer from tr-a gave is gone: no size keeps tr-a's epochs.
            self.assertEqual([r["prior_epochs"] for r in job["batch_size_stats"]],
                             [None] * len(SIZES))
            # A reset forgets the transfer with the rest of what the job learnt.
            srv.request("POST", "/jobs/tr-b/transfer", {"from": "tr-a"})
            self.assertEqual(srv.request("POST", "/jobs/tr-b/reset")[0], 200)
            job = srv.request("GET", "/jobs/tr-b")[1]
            self.assertIsNone(job["transferred_from"])
            self.assertEqual([r["prior_epochs"] for r in job["batch_size_stats"]],
                             [None] * len(SIZES))

    def test_bad_input(self):
        with Server() as srv:
            self.learn(srv, "tr-src", recurrences=3)
            zeus = dict(spec("tr-zeus", "V100"), policy="zeus")
            self.assertEqual(srv.register(zeus)[0], 201)
            for body, status, says in (
                    (spec("tr-x", "A100", transfer_from="tr-nope"), 400, "Unknown job(tr-nope)"),
                    (spec("tr-x", "A100", transfer_from="tr-zeus"), 400, "zeus policy"),
                    (spec("tr-x", "A100", transfer_from=""), 422, "transfer_from"),
                    (spec("tr-x", "A100", transfer_from=7), 422, "transfer_from")):
                got, answer = srv.register(body)
                self.assertEqual(got, status, answer)
                self.assertIn(says, str(answer))
            # Nothing was created by the failed registrations.
            self.assertEqual(srv.request("GET", "/jobs/tr-x")[0], 404)
            self.assertEqual(srv.register(spec("tr-y", "A100"))[0], 201)
            for path, body, status, says in (
                    ("/jobs/tr-y/transfer", {"from": "tr-y"}, 400, "itself"),
                    ("/jobs/tr-y/transfer", {"from": "tr-nope"}, 404, "Unknown job(tr-nope)"),
                    ("/jobs/tr-nope/transfer", {"from": "tr-src"}, 404, "Unknown job(tr-nope)"),
                    ("/jobs/tr-zeus/transfer", {"from": "tr-src"}, 400, "zeus policy"),
                    ("/jobs/tr-y/transfer", {}, 422, "from"),
                    ("/jobs/tr-y/transfer", "[1]", 422, "dict"),
                    ("/jobs/tr-y/transfer", {"from": "x" * 300}, 422, "from")):
                got, answer = srv.request("POST", path, body)
                self.assertEqual(got, status, (path, body, answer))
                self.assertIn(says, str(answer))
            out = subprocess.run([CLI, "--server", "http://127.0.0.1:%d" % srv.port, "transfer",
                                  "tr-nope", "tr-y"], capture_output=True, text=True,
                                 timeout=60)
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("Unknown job(tr-nope)", out.stderr)
            # Deleting the source leaves the transferred job and its record alone.
            self.assertEqual(srv.request("POST", "/jobs/tr-y/transfer", {"from": "tr-src"})[0],
                             200)
            self.assertEqual(srv.delete("tr-src")[0], 200)
            got = srv.request("GET", "/jobs/tr-y")[1]
            self.assertEqual(got["transferred_from"]["job_id"], "tr-src")


if __name__ == "__main__":
    unittest.main()
