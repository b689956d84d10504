"""Jobs driven with reports at the edges of what the API accepts: never a 5xx, never a batch size
that is not the job's, never a statistic that is not a number.

Random jobs (both policies; windows; one to six sizes up to 2^62; a target metric higher or lower is
better; max_epochs from 1) get runs whose reports start at any epoch from 0 (which the API
allows), cost nothing at all or anything from 1e-12 to far past what a training run measures,
reach the target or not, stop reporting half-way, and now and then a transfer from another job,
a declared change, or device and power profiles whose measurements are nothing or huge. Fixed seeds: a failure here replays. Each of these once broke a job for
good: a run that reached at epoch 0 (the job then handed out batch size 0), a run at no cost
followed by one at some cost (every size's cost not a number, the store refusing each report
after it with a 503), and costs whose squares overflow (a Zeus arm's mean not a number, a 503 at
every prediction)."""
import math
import random
import unittest

from harness import Server

SIZES = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512, 1024, 4096, 2**40, 2**62]
# A run's cost per epoch (time in seconds; energy a multiple of it): nothing, tiny, ordinary,
# huge (a cost up to about 1e95 with the largest max_power, within BSO_MAX_COST), and past
# BSO_MAX_COST whatever the max_power (refused with a 400 that says so).
SCALES = [0, 0, 1e-12, 1, 1e6, 1e40, 1e85, 1e160]


def random_spec(rng, job_id):
    sizes = sorted(rng.sample(SIZES, rng.randint(1, 6)))
    spec = {"job_id": job_id, "job_id_prefix": "edge", "batch_sizes": sizes,
            "default_batch_size": rng.choice(sizes), "eta_knob": rng.choice([0, 0.5, 1]),
            "target_metric": 0.5, "higher_is_better_metric": rng.choice([True, False]),
            "max_epochs": rng.choice([1, 2, 5, 20]), "window_size": rng.choice([0, 0, 2, 3]),
            "max_power": rng.choice([1e-9, 300, 1e9]), "number_of_gpus": 1, "gpu_model": "x",
            "policy": rng.choice(["bso", "bso", "zeus"])}
    if rng.random() < 0.8:
        spec["beta_knob"] = rng.choice([1.0, 2.0])
    return spec


def numbers_in(value):
    """Every number in a parsed JSON value."""
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from numbers_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from numbers_in(v)


class EdgeReports(unittest.TestCase):
    def post_profiles(self, srv, rng, job_id, sizes):
        """A device profile and a power profile whose measurements are nothing, tiny, ordinary
        or huge: stored (200) or refused as malformed (422), never worse."""
        values = [0, 1e-300, 1e-9, 1, 1830.5, 1e12, 1e300]
        entries = []
        for b in rng.sample(sizes, rng.randint(1, len(sizes))):
            entry = {"batch_size": b, "feasible": rng.random() < 0.8}
            for field in ("samples_per_s", "joules_per_sample", "peak_memory_bytes"):
                if rng.random() < 0.7:
                    entry[field] = rng.choice(values)
            entries.append(entry)
        status, data = srv.request("POST", "/jobs/%s/profile" % job_id,
                                   {"device": "A100", "batch_sizes": entries})
        self.assertIn(status, (200, 422), data)
        limits = rng.sample([100, 150, 200, 250, 300], rng.randint(1, 5))
        body = {"batch_size": rng.choice(sizes), "device": "X",
                "measurements": [{"power_limit": pl, "samples_per_s": rng.choice(values),
                                  "power": rng.choice(values)} for pl in limits]}
        if rng.random() < 0.5:
            body["power_limit"] = rng.choice(limits)
        status, data = srv.request("POST", "/jobs/%s/power" % job_id, body)
        self.assertIn(status, (200, 400, 422), data)

    def drive(self, srv, seed, jobs):
        rng = random.Random(seed)
        for j in range(jobs):
            job_id = "edge-%d-%d" % (seed, j)
            spec = random_spec(rng, job_id)
            status, data = srv.register(spec)
            self.assertEqual(status, 201, data)
            if j > 0 and rng.random() < 0.2:
                status, data = srv.request("POST", "/jobs/%s/transfer" % job_id,
                                           {"from": "edge-%d-%d" % (seed, rng.randrange(j))})
                self.assertLess(status, 500, data)
            if rng.random() < 0.3:
                self.post_profiles(srv, rng, job_id, spec["batch_sizes"])
            for _ in range(rng.randint(1, 30)):
                status, trial = srv.predict(job_id)
                self.assertLess(status, 500, trial)
                if status != 200:
                    continue
                bs = trial["batch_size"]
                self.assertIn(bs, spec["batch_sizes"])
                scale = rng.choice(SCALES)
                energy_factor = rng.choice([0, 1, 100])
                last = rng.randint(0, spec["max_epochs"] + 1)
                reach_at = rng.choice([None, rng.randint(0, last)])
                for e in range(rng.randint(0, last), last + 1):
                    reached = reach_at is not None and e >= reach_at
                    metric = 0.9 if reached == spec["higher_is_better_metric"] else 0.1
                    status, d = srv.report(job_id, bs, trial["trial_number"], scale * e,
                                           scale * e * energy_factor, metric, e)
                    if status == 400:
                        self.assertIn("too large", d["message"])
                        break
                    self.assertEqual(status, 200, d)
                    if d["stop_train"]:
                        break
                if rng.random() < 0.05:
                    status, data = srv.request("POST", "/jobs/%s/changed" % job_id, {})
                    self.assertEqual(status, 200 if spec["policy"] == "bso" else 400, data)
            status, job = srv.request("GET", "/jobs/" + job_id)
            self.assertEqual(status, 200, job)
            for x in numbers_in(job):
                self.assertTrue(math.isfinite(x), (job_id, job))

    def test_random_jobs_at_the_edges(self):
        with Server() as srv:
            for seed in (1, 2, 3):
                with self.subTest(seed=seed):
                    self.drive(srv, seed, 40)


if __name__ == "__main__":
    unittest.main()
