"""bso.probe with real PyTorch on the CPU (issue #9, item 1): the feasible set under a memory
budget (measured, and injected), the largest size found with few tries, out-of-memory caught,
the model and optimizer put back bit for bit, the input-bound warning, and the profile posted
to a real server."""
import os
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402

import bso  # noqa: E402
import bso.probe  # noqa: E402
from harness import Server, fake_job  # noqa: E402

SIZES = [8, 16, 32, 64, 128, 256, 512, 1024]
LOSS = torch.nn.functional.cross_entropy


class Wide(torch.nn.Module):
    """Cheap to run, costly in memory: 64 Ki floats of activations per sample."""

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(65536))
        self.head = torch.nn.Linear(64, 3)
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, x):
        self.seen += x.shape[0]
        h = torch.relu(x * self.scale)                 # (n, 65536)
        return self.head(h.view(x.shape[0], 1024, 64).mean(1))


def wide_batch(n):
    return torch.rand(n, 65536), torch.randint(0, 3, (n,))


class FakeOOM(RuntimeError):
    pass


class NoDevice:
    """A monitor of a machine without GPUs (the optimizer reads nothing else of it here)."""
    gpus = []
    max_power_w = 0.0
    source = "estimate"


class Probe(unittest.TestCase):
    def model(self):
        torch.manual_seed(3)
        m = Wide()
        return m, torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def test_budget_with_injected_memory_and_few_tries(self):
        torch.manual_seed(1)
        m = torch.nn.Linear(16, 3)
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        last = {}

        def batch(n):
            last["n"] = n
            return torch.rand(n, 16), torch.zeros(n, dtype=torch.long)
        sizes = [8 * k for k in range(1, 129)]  # 8, 16, ..., 1024: 128 candidates
        report = bso.probe.probe(m, opt, batch, sizes, LOSS, steps=1, warmup=0, min_time_s=0,
                                 memory_budget_bytes=300 * 1000,
                                 memory_used=lambda: last["n"] * 1000)
        self.assertEqual(report.largest, 296)
        self.assertEqual([r.feasible for r in report.results], [b <= 296 for b in sizes])
        self.assertLessEqual(report.search_tries, 14)  # doubling then bisecting, not 128
        self.assertFalse(report.results[-1].tried)      # 1024: implied by a smaller failure
        failed = [r for r in report.results if r.tried and not r.feasible]
        self.assertTrue(failed)
        self.assertIn("over the budget", failed[0].error)
        self.assertTrue(all(r.samples_per_s > 0 for r in report.results if r.feasible))

    def test_budget_with_measured_memory(self):
        m, opt = self.model()
        # 512 samples need over 128 MiB of activations; 16 need 4 MiB.
        report = bso.probe.probe(m, opt, wide_batch, [16, 512], LOSS, steps=1, warmup=0, min_time_s=0,
                                 memory_budget_bytes=64 * 2 ** 20)
        small, big = report.results
        self.assertTrue(small.feasible, small)
        self.assertFalse(big.feasible, big)
        self.assertGreater(big.peak_memory_bytes, 100 * 2 ** 20)
        self.assertLess(small.peak_memory_bytes, 64 * 2 ** 20)

    def test_out_of_memory_is_caught(self):
        m, opt = self.model()
        real_forward = m.forward
        def forward(x):
            if x.shape[0] > 100:
                real_forward(x)  # some work done, then the allocator gives up
                raise FakeOOM("CUDA out of memory. Tried to allocate 2.00 GiB")
            return real_forward(x)
        m.forward = forward
        batch = lambda n: (torch.rand(1, 65536).expand(n, -1), torch.zeros(n, dtype=torch.long))
        report = bso.probe.probe(m, opt, batch, [32, 64, 128, 256], LOSS, steps=1, warmup=0, min_time_s=0,
                                 oom_errors=(FakeOOM,))
        self.assertEqual(report.largest, 64)
        self.assertIn("out of memory", report.results[2].error)

    def test_state_restored_bit_for_bit(self):
        m, opt = self.model()
        for _ in range(2):  # momentum buffers and gradients exist before the probe
            opt.zero_grad()
            LOSS(m(wide_batch(4)[0]), torch.zeros(4, dtype=torch.long)).backward()
            opt.step()
        params = {k: v.clone() for k, v in m.state_dict().items()}
        momenta = [opt.state[p]["momentum_buffer"].clone() for p in m.parameters()]
        grads = [p.grad.clone() for p in m.parameters()]
        rng = torch.get_rng_state()
        bso.probe.probe(m, opt, wide_batch, [8, 16, 32], LOSS, steps=2, warmup=1)
        for k, v in m.state_dict().items():
            self.assertTrue(torch.equal(v, params[k]), k)
        for p, mo, g in zip(m.parameters(), momenta, grads):
            self.assertTrue(torch.equal(opt.state[p]["momentum_buffer"], mo))
            self.assertTrue(torch.equal(p.grad, g))
        self.assertTrue(torch.equal(torch.get_rng_state(), rng))
        self.assertEqual(float(m.seen), float(params["seen"]))  # buffers too

    def test_input_bound_warning(self):
        m, opt = self.model()
        real_forward = m.forward
        now = [0.0]

        def forward(x):  # each sample takes 2 ms (of a clock the probe reads): flat samples/s
            now[0] += 0.002 * x.shape[0]
            return real_forward(x)
        m.forward = forward
        batch = lambda n: (torch.rand(1, 65536).expand(n, -1), torch.zeros(n, dtype=torch.long))
        common = dict(steps=1, warmup=0, min_time_s=0, clock=lambda: now[0])
        idle = bso.probe.probe(m, opt, batch, [8, 16, 32, 64], LOSS, utilization=lambda: 20.0,
                               **common)
        self.assertAlmostEqual(idle.results[0].samples_per_s, 500.0)
        self.assertTrue(idle.input_bound)
        self.assertIn("input pipeline", idle.table())
        busy = bso.probe.probe(m, opt, batch, [8, 16, 32, 64], LOSS, utilization=lambda: 97.0,
                               **common)
        self.assertFalse(busy.input_bound)
        unknown = bso.probe.probe(m, opt, batch, [8, 16, 32, 64], LOSS, **common)
        self.assertFalse(unknown.input_bound)  # on a CPU, without a utilization: no claim
        # The monitor's own NVML readings over the steps (a fake NVML here), without a hook.
        for util, bound in ((20, True), (97, False)):
            with tempfile.TemporaryDirectory() as d:
                script = os.path.join(d, "nvml.txt")
                with open(script, "w") as f:
                    f.write("gpu util=%d power_mw=100000\n" % util)
                env = {"BSO_NVML_LIBRARY": os.environ["BSO_FAKE_NVML_LIB"],
                       "BSO_FAKE_NVML": script, "BSO_POWERCAP_ROOT": "/nonexistent"}
                saved = {k: os.environ.get(k) for k in env}
                os.environ.update(env)
                try:
                    mon = bso.EnergyMonitor(cpu=False)
                    report = bso.probe.probe(m, opt, batch, [8, 16, 32, 64], LOSS,
                                             monitor=mon, **common)
                    mon.close()
                finally:
                    for k, v in saved.items():
                        if v is None:
                            os.environ.pop(k, None)
                        else:
                            os.environ[k] = v
                self.assertEqual(report.utilization, util)
                self.assertEqual(report.results[-1].utilization, util)
                self.assertEqual(report.input_bound, bound)

    def test_measures_for_at_least_min_time(self):
        # On a fast GPU a few steps take milliseconds, too short for NVML's energy counter: each
        # size runs until min_time_s has passed (here each step takes 0.125 s of the clock).
        m, opt = self.model()
        real_forward = m.forward
        now, calls = [0.0], [0]

        def forward(x):
            now[0] += 0.125
            calls[0] += 1
            return real_forward(x)
        m.forward = forward
        report = bso.probe.probe(m, opt, wide_batch, [8], LOSS, steps=2, warmup=1,
                                 min_time_s=1.0, clock=lambda: now[0])
        self.assertEqual(calls[0], 1 + 8)  # the warm-up, then 8 steps of 0.125 s
        self.assertAlmostEqual(report.results[0].samples_per_s, 8 / 0.125)
        calls[0] = 0
        capped = bso.probe.probe(m, opt, wide_batch, [8], LOSS, steps=2, warmup=0,
                                 min_time_s=100.0, max_steps=5, clock=lambda: now[0])
        self.assertEqual(calls[0], 5)
        self.assertAlmostEqual(capped.results[0].samples_per_s, 8 / 0.125)
        with self.assertRaises(bso.BSOConfigError):
            bso.probe.probe(m, opt, wide_batch, [8], LOSS, steps=4, max_steps=3)

    def test_errors(self):
        m, opt = self.model()
        for sizes in ([], [0, 8], list(range(1, 300))):
            with self.assertRaises(bso.BSOConfigError):
                bso.probe.probe(m, opt, wide_batch, sizes, LOSS)

    def test_profile_reaches_the_server(self):
        m, opt = self.model()
        last = {}
        def batch(n):
            last["n"] = n
            return torch.rand(n, 65536), torch.zeros(n, dtype=torch.long)
        report = bso.probe.probe(m, opt, batch, [8, 16, 32, 64], LOSS, steps=1, warmup=0, min_time_s=0,
                                 memory_budget_bytes=20000, memory_used=lambda: last["n"] * 1000)
        with Server() as srv:
            spec = dict(fake_job("test-probe"), batch_sizes=[8, 16, 32, 64],
                        default_batch_size=32)
            srv.register(spec)
            c = bso.Client("http://127.0.0.1:%d" % srv.port)
            body = c.post("/jobs/test-probe/profile", report.profile(device="cpu"))
            self.assertEqual(body["unfit_batch_sizes"], [32, 64])
            self.assertEqual(len(body["profile"]), 4)
            _, t = srv.predict("test-probe")
            self.assertEqual(t["batch_size"], 16)  # the default does not fit: never dispatched
            c.close()

    def test_optimizer_posts_the_profile(self):
        """BatchSizeOptimizer.post_profile: the report reaches the job the optimizer registered
        (its unfit sizes never dispatched, the device named), on rank 0 only."""
        m, opt = self.model()
        last = {}

        def batch(n):
            last["n"] = n
            return torch.rand(n, 65536), torch.zeros(n, dtype=torch.long)
        report = bso.probe.probe(m, opt, batch, [8, 16, 32, 64], LOSS, steps=1, warmup=0,
                                 min_time_s=0, memory_budget_bytes=20000,
                                 memory_used=lambda: last["n"] * 1000)
        with Server() as srv:
            url = "http://127.0.0.1:%d" % srv.port
            spec = bso.JobSpec(job_id="test-post", job_id_prefix="test",
                               batch_sizes=[8, 16, 32, 64], default_batch_size=32, max_epochs=5)
            other = bso.BatchSizeOptimizer(NoDevice(), url, spec, rank=1, world_size=2,
                                           max_power=300)
            self.assertIsNone(other.post_profile(report))  # only rank 0 posts
            bso_opt = bso.BatchSizeOptimizer(NoDevice(), url, spec, rank=0, world_size=2,
                                             max_power=300)
            body = bso_opt.post_profile(report, device="test-cpu")
            self.assertEqual(body["unfit_batch_sizes"], [32, 64])
            self.assertEqual(bso_opt.get_batch_size(), 16)  # the default does not fit
            c = bso.Client(url)
            stored = c.get("/jobs/test-post")
            c.close()
            self.assertEqual({p["device"] for p in stored["profile"]}, {"test-cpu"})
            self.assertEqual(len(stored["profile"]), 4)


if __name__ == "__main__":
    unittest.main()
