"""The seeded golden scenarios of the reference spec (Appendix B) driven over HTTP: trials 1-51
choose exactly Zeus's batch sizes, also when the server restarts in the middle."""
import unittest

from harness import GOLDEN, Server, scenario_g, scenario_g_report


class GoldenOverHttp(unittest.TestCase):
    def run_scenario(self, window, seed, restart_at=()):
        with Server(env={"BSO_DEFAULT_POLICY": "zeus"}) as srv:
            status, job = srv.register(scenario_g(window, seed))
            self.assertEqual(status, 201)
            jid = job["job_id"]
            chosen = []
            for k in range(1, 52):
                if k in restart_at:
                    srv.restart()
                status, t = srv.predict(jid)
                self.assertEqual(status, 200, t)
                self.assertEqual(t["trial_number"], k)
                chosen.append(t["batch_size"])
                status, r = srv.report(jid, t["batch_size"], k, *scenario_g_report(k, t["batch_size"]))
                self.assertEqual(status, 200, r)
                self.assertTrue(r["stop_train"])
            self.assertEqual(",".join(map(str, chosen)), GOLDEN[(window, seed)])
            return srv.request("GET", "/jobs/" + jid)[1]

    def test_window0_seed42(self):
        job = self.run_scenario(0, 42)
        arm64 = [a for a in job["arms"] if a["batch_size"] == 64][0]
        self.assertEqual(arm64["param_mean"], -5069.230769230769)
        self.assertEqual(arm64["param_precision"], 0.00018969635918837243)
        self.assertEqual(arm64["num_observations"], 39)

    def test_window3_seed42_with_restarts(self):
        # Restarts during pruning, at the switch to MAB, and in the MAB stage.
        self.run_scenario(3, 42, restart_at=(5, 12, 30))

    def test_window0_seed1_with_restart(self):
        self.run_scenario(0, 1, restart_at=(20,))


if __name__ == "__main__":
    unittest.main()
