"""A batch size that changes during a run (issue #19) with real PyTorch on the CPU: the resizable
sampler (every sample once whatever the resizes, workers, exact mode, resume, two ranks over
gloo), the three controllers, the learning-rate coupling and the noise-scale measurement."""
import math
import os
import random
import socket
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.utils.data import (DataLoader, DistributedSampler, RandomSampler,  # noqa: E402
                              SequentialSampler, TensorDataset)

import bso.torch as bt  # noqa: E402


def dataset(n):
    return TensorDataset(torch.arange(n))


# Workers (and the Manager below) start from a fork server: a single-threaded process with
# torch imported. Forking the test process itself, which has threads (torch's, the previous
# loader's queue feeders), left a worker stuck in about one run in thirty under ASan (in 90
# runs; none in 120 without ASan): a child can inherit a lock another thread held at the fork.
# How the workers start does not change what the sampler does.
WORKER_START = mp.get_context("forkserver")
WORKER_START.set_forkserver_preload(["torch"])


def loader_for(n, batch_size, seed=None, workers=0, drop_last=False, **kw):
    if workers:
        kw.setdefault("multiprocessing_context", WORKER_START)
        kw.setdefault("timeout", 120)  # a stuck worker fails its test instead of the suite
    data = dataset(n)
    inner = (SequentialSampler(data) if seed is None
             else RandomSampler(data, generator=torch.Generator().manual_seed(seed)))
    sampler = bt.ResizableBatchSampler(inner, batch_size, drop_last=drop_last)
    return bt.ResizableLoader(DataLoader(data, batch_sampler=sampler, num_workers=workers, **kw))


def epoch(loader, resizes, exact=False):
    """One epoch; after the k-th batch the size becomes resizes[k] (when k is in it). Returns the
    batches' indices."""
    out = []
    for k, (x,) in enumerate(loader):
        out.append(x.tolist())
        if k in resizes:
            loader.set_batch_size(resizes[k], exact=exact)
    return out


class Sampler(unittest.TestCase):
    def test_every_sample_once_whatever_the_resizes(self):
        rnd = random.Random(5)
        for trial in range(40):
            n = rnd.randint(1, 300)
            workers = 2 if trial % 8 == 0 else 0
            seed = None if trial % 3 == 0 else trial
            loader = loader_for(n, rnd.randint(1, 64), seed=seed, workers=workers)
            resizes = {k: rnd.randint(1, 64) for k in range(0, 60, rnd.randint(1, 5))}
            got = epoch(loader, resizes, exact=trial % 2 == 1)
            flat = [i for b in got for i in b]
            self.assertEqual(sorted(flat), list(range(n)), (trial, n))
            if seed is None:
                self.assertEqual(flat, list(range(n)))
            # The order is the wrapped sampler's: the same seed gives the same epoch.
            again = epoch(loader_for(n, 7, seed=seed), {})
            self.assertEqual(flat, [i for b in again for i in b])

    def test_size_takes_effect_at_the_next_batch(self):
        loader = loader_for(100, 10)
        sizes = [len(b) for b in epoch(loader, {0: 25, 2: 5})]
        self.assertEqual(sizes[:5], [10, 25, 25, 5, 5])
        self.assertEqual(sum(sizes), 100)
        self.assertEqual(loader.batch_size, 5)

    def test_workers_prefetch_unless_exact(self):
        # Two workers prefetch 2 x 2 batches: a plain resize shows later, an exact one at once.
        plain = [len(b) for b in epoch(loader_for(400, 10, workers=2), {0: 20})]
        self.assertEqual(plain[1], 10)
        self.assertIn(20, plain)
        exact = [len(b) for b in epoch(loader_for(400, 10, workers=2), {0: 20}, exact=True)]
        self.assertEqual(exact[:3], [10, 20, 20])
        self.assertEqual(sum(exact), 400)

    def test_drop_last_drops_only_the_short_tail(self):
        got = epoch(loader_for(50, 8, drop_last=True), {1: 16})
        self.assertEqual([len(b) for b in got], [8, 8, 16, 16])  # 2 left: dropped
        self.assertEqual(len(set(i for b in got for i in b)), 48)

    def test_len_and_epochs(self):
        loader = loader_for(10, 4, seed=1)
        self.assertEqual(len(loader), 3)
        first = [i for b in epoch(loader, {}) for i in b]
        second = [i for b in epoch(loader, {}) for i in b]
        self.assertEqual(sorted(second), list(range(10)))
        self.assertNotEqual(first, second)  # a new epoch draws a new order

    def test_resume_mid_epoch(self):
        for workers in (0, 2):
            loader = loader_for(200, 12, seed=3, workers=workers)
            it = iter(loader)
            seen = [next(it)[0].tolist() for _ in range(4)]
            loader.set_batch_size(30, exact=True)
            seen.append(next(it)[0].tolist())
            state = loader.state_dict()
            rest = [x.tolist() for (x,) in it]
            resumed = loader_for(200, 99, seed=77, workers=workers)  # other seed and size
            resumed.load_state_dict(state)
            self.assertEqual(resumed.batch_size, 30)
            again = [x.tolist() for (x,) in resumed]
            self.assertEqual(again, rest, workers)
            self.assertEqual(sorted(i for b in seen + again for i in b), list(range(200)))

    def test_bad_input(self):
        with self.assertRaises(ValueError):
            bt.ResizableBatchSampler(SequentialSampler(range(5)), 0)
        s = bt.ResizableBatchSampler(SequentialSampler(range(5)), 2)
        for bad in (0, -3, 2.5, True, "8"):
            with self.assertRaises(ValueError):
                s.set_batch_size(bad)
        with self.assertRaises(ValueError):
            s.load_state_dict({"order": [0, 1], "position": 5, "batch_size": 2})
        with self.assertRaises(TypeError):
            bt.ResizableLoader(DataLoader(dataset(4), batch_size=2))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, port, n, out):
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%d" % port, rank=rank,
                            world_size=2)
    data = dataset(n)
    inner = DistributedSampler(data, num_replicas=2, rank=rank, shuffle=True, seed=11)
    sampler = bt.ResizableBatchSampler(inner, 8)
    loader = bt.ResizableLoader(DataLoader(data, batch_sampler=sampler))
    rnd = random.Random(rank)  # the ranks would disagree: rank 0's choice is shared
    steps = []
    for (x,) in loader:
        steps.append((len(x), x.tolist()))
        loader.set_batch_size(bt.sync_batch_size(rnd.randint(1, 20)))
    out[rank] = steps
    dist.destroy_process_group()


class DataParallel(unittest.TestCase):
    def test_two_ranks_same_sizes_disjoint_shards(self):
        n = 301
        with WORKER_START.Manager() as m:
            out = m.dict()
            mp.spawn(_rank, args=(_free_port(), n, out), nprocs=2, join=True)
            a, b = out[0], out[1]
        self.assertEqual([s for s, _ in a], [s for s, _ in b])  # same size at every step
        ia = [i for _, idx in a for i in idx]
        ib = [i for _, idx in b for i in idx]
        self.assertEqual(len(ia), len(set(ia)))
        self.assertEqual(set(ia) | set(ib), set(range(n)))
        # DistributedSampler pads the shorter shard with one repeat so both have 151.
        self.assertEqual(len(ia), 151)
        self.assertEqual(len(set(ia) & set(ib)), 1)


class Controllers(unittest.TestCase):
    def test_ramp_linear_and_steps(self):
        r = bt.RampSchedule(16, 256, over_samples=1000, multiple_of=16)
        self.assertEqual(r.batch_size, 16)
        self.assertEqual(r.size_at(500), 128 + 0)  # 16 + 0.5 * 240 = 136 -> 128
        self.assertEqual(r.size_at(10**6), 256)
        seen = []
        while r.samples < 1200:
            seen.append(r.observe(samples=r.batch_size))
        self.assertEqual(seen, sorted(seen))
        self.assertEqual(seen[-1], 256)
        s = bt.RampSchedule(32, 512, over_samples=400, mode="steps", n_steps=4)
        self.assertEqual([s.size_at(x) for x in (0, 99, 100, 200, 300, 400)],
                         [32, 32, 64, 128, 256, 512])
        j = bt.RampSchedule(32, 512, over_samples=400, sizes=[32, 48, 64, 128, 512])
        self.assertEqual(j.size_at(200), 128)  # 272 -> the job's size below it
        with self.assertRaises(ValueError):
            bt.RampSchedule(64, 32, 100)

    def test_memory_scaler_grows_stops_shrinks(self):
        # Throughput grows with the batch up to 128, then is flat; memory is 0.2 per 64.
        def rate(n):
            return 1000.0 * min(n, 128)

        m = bt.MemoryScaler(16, max_size=1024, patience=3, cooldown=5)
        for _ in range(60):
            n = m.batch_size
            m.observe(samples=n, seconds=n / rate(n), memory=0.2 * n / 64)
        self.assertEqual(m.batch_size, 128)  # 256 did not pay: back to 128, and stays
        self.assertEqual(m.max_size, 128)
        # Memory pressure: down at once, and no growth during the cooldown.
        self.assertEqual(m.observe(samples=128, memory=0.9), 64)
        for _ in range(5):
            self.assertEqual(m.observe(samples=64, memory=0.1), 64)
        # Out of memory: the size that failed is never tried again.
        o = bt.MemoryScaler(64, max_size=512, patience=1, cooldown=0)
        self.assertEqual(o.observe(samples=64, seconds=1e-3, memory=0.1), 128)
        self.assertEqual(o.observe(samples=128, oom=True), 64)
        for _ in range(10):
            o.observe(samples=o.batch_size, seconds=o.batch_size * 1e-5, memory=0.1)
        self.assertLess(o.batch_size, 128)
        self.assertEqual(o.ooms, 1)

    def test_noise_scale_recovers_a_known_scale(self):
        # Per-sample gradients g_i = G + noise, tr(Sigma) = d * sigma^2: B_simple = 64 / 4 = 16.
        gen = torch.Generator().manual_seed(0)
        d, sigma = 64, 1.0
        G = torch.full((d,), 0.25)  # |G|^2 = 4
        ns = bt.NoiseScale(smoothing=0.99)
        for _ in range(3000):
            per = G + sigma * torch.randn(256, d, generator=gen)
            small = per[:16].mean(0)
            big = per.mean(0)
            ns.update(16, float(small @ small), 256, float(big @ big))
        self.assertAlmostEqual(ns.b_simple, 16.0, delta=2.0)
        self.assertAlmostEqual(ns.adascale_gain(64, 64), 1.0)
        gain = ns.adascale_gain(256, 64)
        self.assertTrue(1.0 < gain < 4.0)

    def test_noise_scale_step_measures_both_points_exactly(self):
        torch.manual_seed(0)
        net = torch.nn.Linear(5, 2).double()
        sgd = torch.optim.SGD(net.parameters(), lr=0.1)
        x, y = torch.randn(40, 5).double(), torch.randint(0, 2, (40,))
        loss_fn = torch.nn.functional.cross_entropy

        def grad_sq(xs, ys):
            net.zero_grad()
            loss_fn(net(xs), ys).backward()
            return sum(float((p.grad ** 2).sum()) for p in net.parameters())

        want_small, want_big = grad_sq(x[:8], y[:8]), grad_sq(x, y)
        loss, small, got_small, got_big = bt.noise_scale_step(net, sgd, loss_fn, (x, y), 8,
                                                               step=False)
        self.assertEqual(small, 8)
        self.assertAlmostEqual(got_small, want_small, places=10)
        self.assertAlmostEqual(got_big, want_big, places=10)
        self.assertEqual(bt.noise_scale_step(net, sgd, loss_fn, (x, y), 64, step=False)[1], 0)

    def test_noise_scale_scaler_grows_toward_the_scale_never_down(self):
        c = bt.NoiseScaleScaler(32, max_size=1024, every=1, warmup=1, smoothing=0.0)
        # Measurements that say B_simple = 200: |G|^2 = 1, tr = 200.
        def point(n, small=8):
            return dict(small=small, grad_sq_small=1 + 200 / small, grad_sq_big=1 + 200 / n)
        sizes = [c.batch_size]
        for _ in range(8):
            sizes.append(c.observe(samples=c.batch_size, **point(c.batch_size)))
        self.assertEqual(sizes[:4], [32, 64, 128, 200])  # at most doubling, then the scale
        self.assertEqual(sizes[-1], 200)
        # Steps without a measurement decide nothing: one estimate grows the size once.
        d = bt.NoiseScaleScaler(32, max_size=1024, every=1, warmup=1, smoothing=0.0)
        self.assertEqual(d.observe(samples=32, **point(32)), 64)
        for _ in range(3):
            self.assertEqual(d.observe(samples=64), 64)
        # A noisier estimate below the size does not shrink it.
        self.assertEqual(c.observe(samples=200, small=8, grad_sq_small=1 + 50 / 8,
                                   grad_sq_big=1 + 50 / 200), 200)

    def test_lr_coupling_rules_and_log(self):
        net = torch.nn.Linear(2, 2)
        sgd = torch.optim.SGD([{"params": [net.weight], "lr": 0.1},
                               {"params": [net.bias], "lr": 0.01}])
        said = []
        c = bt.LRCoupling(sgd, 64, "linear", say=said.append)
        c.apply(256)
        self.assertAlmostEqual(sgd.param_groups[0]["lr"], 0.4)
        self.assertAlmostEqual(sgd.param_groups[1]["lr"], 0.04)
        self.assertEqual(said, ["batch size 64 -> 256: lr 0.1 -> 0.4 (linear)"])
        s = bt.LRCoupling(sgd, 256, "sqrt", say=said.append)
        s.apply(1024)
        self.assertAlmostEqual(sgd.param_groups[0]["lr"], 0.8)
        ns = bt.NoiseScale()
        ns.update(8, 1 + 200 / 8, 64, 1 + 200 / 64)  # B_simple 200
        a = bt.LRCoupling(sgd, 64, "adascale", noise=ns, say=said.append)
        a.apply(128)
        gain = (200 / 64 + 1) / (200 / 128 + 1)
        self.assertAlmostEqual(sgd.param_groups[0]["lr"], 0.8 * gain)
        for bad in (dict(rule="cubic"), dict(rule="adascale"), dict(base_batch_size=0)):
            kw = dict(optimizer=sgd, base_batch_size=64, rule="linear")
            kw.update(bad)
            with self.assertRaises(ValueError):
                bt.LRCoupling(**kw)


class FakeOOM(RuntimeError):
    pass


class Tight(torch.nn.Module):
    """A linear model that 'runs out of memory' on a micro-batch larger than fits, and counts
    its forward passes in a buffer (which a retried step must put back)."""

    def __init__(self, fits):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 3, dtype=torch.float64)
        self.fits = fits
        self.register_buffer("forwards", torch.zeros((), dtype=torch.int64))

    def forward(self, x):
        self.forwards += 1
        if x.shape[0] > self.fits:
            raise FakeOOM("CUDA out of memory (fake)")
        return self.lin(x)


def batch_of(n, seed=1):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, 4, generator=g, dtype=torch.float64),
            torch.randint(0, 3, (n,), generator=g))


class Steps(unittest.TestCase):
    """ControlledStep: the three techniques (gradual scaling, micro-batching under memory
    pressure, accumulation of a batch larger than fits) on one step function."""

    def reference(self, batch):
        """The weights after one plain SGD step on the whole batch."""
        net = Tight(fits=10 ** 9)
        sgd = torch.optim.SGD(net.parameters(), lr=0.5)
        sgd.zero_grad()
        torch.nn.functional.cross_entropy(net(batch[0]), batch[1]).backward()
        sgd.step()
        return net.lin.weight.detach()

    def stepper(self, ctrl, fits, **kw):
        net = Tight(fits)
        sgd = torch.optim.SGD(net.parameters(), lr=0.5)
        step = bt.ControlledStep(ctrl, net, sgd, torch.nn.functional.cross_entropy,
                                 oom_errors=(FakeOOM,), **kw)
        return net, step

    def test_memory_scaler_shrinks_and_retries_the_same_batch(self):
        scaler = bt.MemoryScaler(128, max_size=256, cooldown=3)
        net, step = self.stepper(scaler, fits=64, memory=lambda: None)
        batch = batch_of(128)
        self.assertEqual(step.step(batch), 64)
        # Nothing lost, nothing twice: the whole batch's gradient, and only the retry's two
        # forward passes left in the buffers.
        self.assertTrue(torch.allclose(net.lin.weight, self.reference(batch)))
        self.assertEqual(int(net.forwards), 2)
        self.assertEqual((scaler.ooms, step.ooms, scaler.steps, scaler.samples), (1, 1, 1, 128))
        self.assertEqual(scaler.max_size, 127)  # 128 is never tried again in this run
        self.assertEqual(step.step(batch_of(64, seed=2)), 64)  # the cooldown holds

    def test_after_out_of_memory_the_scaler_bisects_instead_of_retrying_the_edge(self):
        # 150 samples fit. Doubling from 16 fails at 256; growing back must then close in on
        # the edge between what fitted and what failed, and stop: not retry 255, 254, ... (one
        # out-of-memory per cooldown for the rest of the run, as first seen on an H100).
        scaler = bt.MemoryScaler(16, max_size=4096, patience=2, cooldown=3, min_gain=-1)
        net, step = self.stepper(scaler, fits=150, memory=lambda: None)
        sizes = [step.step(batch_of(scaler.batch_size, seed=k)) for k in range(200)]
        self.assertIn(128, sizes)
        self.assertNotIn(255, sizes)
        self.assertLessEqual(step.ooms, 4)  # 256, then at most a few halvings of 128..256
        self.assertEqual(sum(n > 150 for n in sizes), step.ooms)  # each too large size once
        tail = sizes[-100:]
        self.assertEqual(len(set(tail)), 1)  # settled
        self.assertGreaterEqual(tail[0], 128 + 128 // 8)  # above the last doubling, near 150
        # After an out-of-memory the retry goes back to the largest size that ran, not half.
        again = bt.MemoryScaler(16, max_size=4096, patience=1, cooldown=0, min_gain=-1)
        _, step = self.stepper(again, fits=100, memory=lambda: None)
        got = [step.step(batch_of(again.batch_size, seed=k)) for k in range(7)]
        # 128 fails: 64, then halfway 96; 112 fails: back to 96 (not 56); 104 would add < 1/8.
        self.assertEqual(got, [32, 64, 128, 96, 112, 96, 96])
        self.assertEqual(step.ooms, 2)

    def test_other_controllers_keep_their_size_and_halve_the_micro_batch(self):
        ramp = bt.RampSchedule(128, 128, over_samples=1)
        net, step = self.stepper(ramp, fits=40, memory=lambda: None)
        batch = batch_of(128)
        self.assertEqual(step.step(batch), 128)
        self.assertTrue(torch.allclose(net.lin.weight, self.reference(batch)))
        self.assertEqual((step.ooms, step.max_micro), (2, 32))  # 128 -> 64 -> 32
        self.assertEqual(int(net.forwards), 4)
        net.forwards.zero_()
        step.step(batch)  # later steps start at the micro-batch that fitted
        self.assertEqual((int(net.forwards), step.ooms), (4, 2))

    def test_a_batch_larger_than_fits_is_accumulated(self):
        ramp = bt.RampSchedule(256, 256, over_samples=1)
        net, step = self.stepper(ramp, fits=64, max_micro=64, memory=lambda: None)
        batch = batch_of(256)
        step.step(batch)
        self.assertEqual((int(net.forwards), step.ooms), (4, 0))
        self.assertTrue(torch.allclose(net.lin.weight, self.reference(batch)))

    def test_memory_readings_drive_the_scaler(self):
        readings = iter([0.1] * 4 + [0.95])
        scaler = bt.MemoryScaler(16, max_size=64, patience=2, cooldown=0, min_gain=-1)
        net, step = self.stepper(scaler, fits=10 ** 9, memory=lambda: next(readings))
        sizes = [step.step(batch_of(scaler.batch_size, seed=k)) for k in range(5)]
        self.assertEqual(sizes, [16, 32, 32, 64, 32])  # grows under low, shrinks above high
        self.assertIsNone(bt.cuda_memory_fraction() if not torch.cuda.is_available() else None)

    def test_one_sample_that_does_not_fit_is_raised(self):
        net, step = self.stepper(bt.MemoryScaler(4, max_size=4), fits=0, memory=lambda: None)
        with self.assertRaises(FakeOOM):
            step.step(batch_of(4))
        with self.assertRaises(ValueError):
            bt.ControlledStep(bt.MemoryScaler(4, max_size=4), net, None, None, max_micro=0)


if __name__ == "__main__":
    unittest.main()
