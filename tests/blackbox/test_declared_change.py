"""A change the user declares: POST /jobs/ID/changed and `bso changed JOB` say that a job changed
(new data, a new model version), as does registering it again with another "data_version".
What it learnt is kept; the next run at each size it knows decides whether the change matters
there, so a rise that one run alone could never prove is found at once, while a job that was
not told takes it for noise. The declaration survives a restart, shows in GET /jobs/ID and
`bso show`, and bad requests get clear errors. Runs on SQLite and on PostgreSQL."""
import json
import os
import subprocess
import unittest

from harness import Server

CLI = os.environ.get("BSO_CLI_BIN", "bso")

SIZES = [16, 32, 64, 128]
EPOCHS = {16: 8, 32: 9, 64: 10, 128: 16}   # epochs to the target
PER_EPOCH = {16: 40, 32: 25, 64: 15, 128: 12}  # seconds an epoch
RISEN = {**EPOCHS, 64: 13}             # the change: 64, the best, needs 1.3x the epochs


def spec(job_id, policy="bso"):
    return {"job_id": job_id, "job_id_prefix": "dc", "batch_sizes": SIZES,
            "default_batch_size": 64, "target_metric": 0.9, "max_epochs": 20, "max_power": 300,
            "number_of_gpus": 1, "gpu_model": "V100", "mab_seed": 3, "policy": policy}


def recur(srv, job_id, epochs=EPOCHS):
    """One recurrence (energy 0, cost = 150 x time). Returns each run's (batch size, trial
    number)."""
    return srv.recur(job_id, epochs, PER_EPOCH, max_epochs=20)


def cli(srv, *args):
    return subprocess.run([CLI, "--server", "http://127.0.0.1:%d" % srv.port, *args],
                          capture_output=True, text=True, timeout=60)


class DeclaredChange(unittest.TestCase):
    def learn(self, srv, job_id, recurrences=12):
        self.assertEqual(srv.register(spec(job_id))[0], 201)
        for _ in range(recurrences):
            recur(srv, job_id)
        return srv.request("GET", "/jobs/" + job_id)[1]

    def test_the_next_run_that_shows_it_finds_it(self):
        with Server() as srv:
            told, untold = self.learn(srv, "dc-told"), self.learn(srv, "dc-untold")
            # Deterministic runs: both jobs learnt alike and sit at 64.
            self.assertEqual(told["batch_size_stats"], untold["batch_size_stats"])
            reached = {s["batch_size"] for s in told["batch_size_stats"] if s["successes"]}
            self.assertIn(64, reached)
            status, job = srv.request("POST", "/jobs/dc-told/changed")
            self.assertEqual(status, 200, job)
            last = srv.request("GET", "/jobs/dc-told/trials?limit=1000")[1]["trials"][-1]
            self.assertEqual(job["change_declared_at_trial"], last["trial_number"])
            self.assertIsNone(job["change_detected_at_trial"])
            # Nothing is forgotten: the same runs, each size that reached close to its alarm.
            for s, before in zip(job["batch_size_stats"], told["batch_size_stats"]):
                self.assertEqual((s["runs"], s["successes"], s["mean_epochs"]),
                                 (before["runs"], before["successes"], before["mean_epochs"]))
                if s["batch_size"] in reached:
                    self.assertGreaterEqual(s["change_evidence"], 0.5)
                else:
                    self.assertEqual(s["change_evidence"], 0)
            srv.restart()  # the declaration is in the database
            self.assertEqual(
                srv.request("GET", "/jobs/dc-told")[1]["change_declared_at_trial"],
                last["trial_number"])
            # The job changed: 64 now needs 13 epochs (1.3x). The told job's first run, at 64,
            # raises the alarm; the untold job's same run is within what one run may surprise.
            for job_id in ("dc-told", "dc-untold"):
                runs = recur(srv, job_id, RISEN)
                self.assertEqual(runs[0][0], 64)
            told = srv.request("GET", "/jobs/dc-told")[1]
            untold = srv.request("GET", "/jobs/dc-untold")[1]
            self.assertEqual(told["change_detected_at_trial"], last["trial_number"] + 1)
            self.assertIsNone(told["change_declared_at_trial"])  # spent on its alarm
            self.assertIsNone(untold["change_detected_at_trial"])
            self.assertIsNone(untold["change_declared_at_trial"])
            # `bso show` says what happened to each.
            out = cli(srv, "show", "dc-told")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("the job changed: found at trial %d" % (last["trial_number"] + 1),
                          out.stdout)

    def test_a_change_that_does_not_matter_costs_nothing(self):
        """Told, but nothing changed: the next runs are as before, no alarm, nothing
        forgotten, and `bso show` says the declaration is still open."""
        with Server() as srv:
            before = self.learn(srv, "dc-same")
            self.assertEqual(cli(srv, "changed", "dc-same").returncode, 0)
            for _ in range(3):
                self.assertEqual([bs for bs, _ in recur(srv, "dc-same")], [64])
            job = srv.request("GET", "/jobs/dc-same")[1]
            self.assertIsNone(job["change_detected_at_trial"])
            self.assertIsNotNone(job["change_declared_at_trial"])
            stats = {s["batch_size"]: s for s in job["batch_size_stats"]}
            old = {s["batch_size"]: s for s in before["batch_size_stats"]}
            self.assertEqual(stats[64]["successes"], old[64]["successes"] + 3)
            self.assertEqual(stats[128]["successes"], old[128]["successes"])
            out = cli(srv, "show", "dc-same")
            self.assertIn("its user says (`bso changed`, or a new data version)", out.stdout)
            self.assertNotIn("the job may be changing", out.stdout)

    def test_another_data_version_at_registration_is_a_change(self):
        """A job registered with "data_version" (Zeus's clients register every run): the first
        version is recorded, the same again changes nothing, another is a declared change; the
        version is stored apart from the spec (Zeus's echo of it unchanged, no conflict), and a
        bad one gets a 422 that names the field. Under the zeus policy it is only recorded."""
        with Server() as srv:
            self.assertEqual(srv.register({**spec("dc-v"), "data_version": "2026-11-01"})[0], 201)
            for _ in range(6):
                recur(srv, "dc-v")
            job = srv.request("GET", "/jobs/dc-v")[1]
            self.assertEqual(job["data_version"]["version"], "2026-11-01")
            since = job["data_version"]["since"]
            status, echo = srv.register({**spec("dc-v"), "data_version": "2026-11-01"})
            self.assertEqual(status, 200)
            self.assertNotIn("data_version", echo)
            self.assertEqual(srv.register(spec("dc-v"))[0], 200)  # no version: nothing said
            job = srv.request("GET", "/jobs/dc-v")[1]
            self.assertIsNone(job["change_declared_at_trial"])
            self.assertEqual(job["data_version"], {"version": "2026-11-01", "since": since})
            srv.restart()
            self.assertEqual(srv.register({**spec("dc-v"), "data_version": "2026-11-02"})[0], 200)
            self.assertTrue(srv.wait_for_line("registered with data version 2026-11-02"))
            job = srv.request("GET", "/jobs/dc-v")[1]
            self.assertEqual(job["data_version"]["version"], "2026-11-02")
            self.assertIsNotNone(job["change_declared_at_trial"])
            out = cli(srv, "show", "dc-v")
            self.assertIn("data version 2026-11-02 (since ", out.stdout)
            self.assertIn("its user says (`bso changed`, or a new data version)", out.stdout)
            # The new data needs 1.3x the epochs at 64: its next run finds it.
            recur(srv, "dc-v", RISEN)
            self.assertEqual(srv.request("GET", "/jobs/dc-v")[1]["change_detected_at_trial"],
                             job["change_declared_at_trial"] + 1)
            for bad in ("", 7, "x" * 256, ["a"]):
                status, body = srv.register({**spec("dc-v"), "data_version": bad})
                self.assertEqual(status, 422, bad)
                self.assertEqual(body["detail"][0]["loc"], ["body", "data_version"])
            self.assertEqual(srv.register({**spec("dc-z", policy="zeus"),
                                           "data_version": "a"})[0], 201)
            self.assertEqual(srv.register({**spec("dc-z", policy="zeus"),
                                           "data_version": "b"})[0], 200)
            job = srv.request("GET", "/jobs/dc-z")[1]
            self.assertEqual(job["data_version"]["version"], "b")
            self.assertIsNone(job["change_declared_at_trial"])

    def test_cli_and_errors(self):
        with Server() as srv:
            self.learn(srv, "dc-cli", recurrences=4)
            out = cli(srv, "changed", "dc-cli")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertRegex(out.stdout, r"dc-cli changed: the next run at each of the \d batch "
                                         r"sizes it knows decides whether the change matters")
            out = cli(srv, "--json", "changed", "dc-cli")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIsNotNone(json.loads(out.stdout)["change_declared_at_trial"])
            # A job that has learnt nothing yet: nothing to re-check, not an error.
            self.assertEqual(srv.register(spec("dc-new"))[0], 201)
            out = cli(srv, "changed", "dc-new")
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("has not reached the target at any batch size yet", out.stdout)
            # Unknown job: 404; a zeus-policy job: 400, saying what to do instead.
            self.assertEqual(srv.request("POST", "/jobs/dc-nope/changed"),
                             (404, {"message": "Unknown job(dc-nope)."}))
            self.assertEqual(srv.register(spec("dc-zeus", policy="zeus"))[0], 201)
            status, body = srv.request("POST", "/jobs/dc-zeus/changed")
            self.assertEqual(status, 400)
            self.assertIn("runs the zeus policy", body["message"])
            self.assertIn("reset", body["message"])
            for job_id in ("dc-nope", "dc-zeus"):
                out = cli(srv, "changed", job_id)
                self.assertNotEqual(out.returncode, 0)
                self.assertIn(job_id, out.stderr)
            out = cli(srv, "changed")
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("usage", out.stderr)


if __name__ == "__main__":
    unittest.main()
