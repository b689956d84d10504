"""Gradient accumulation (issue #9, item 3) and adaptive micro-batching (item 4) with real
PyTorch on the CPU: exact plans, the same gradients as one big batch, out-of-memory retries
that leave the same weights as a run without them, and the learning-rate rules."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402

import bso  # noqa: E402
import bso.accumulate  # noqa: E402
import bso.torch  # noqa: E402


class Plans(unittest.TestCase):
    def test_plans(self):
        self.assertEqual(bso.accumulate.plan(1024, 96), (64, 16))
        self.assertEqual(bso.accumulate.plan(48, 64), (48, 1))
        self.assertEqual(bso.accumulate.plan(97, 64, min_micro=1), (1, 97))
        with self.assertRaises(bso.BSOConfigError) as e:
            bso.accumulate.plan(97, 64)
        self.assertIn("96 or 98", str(e.exception))
        with self.assertRaises(bso.BSOConfigError):
            bso.accumulate.plan(0, 64)


class FakeOOM(RuntimeError):
    """Stands for torch.cuda.OutOfMemoryError on this GPU-less machine."""


class Net(torch.nn.Module):
    """A small MLP whose forward fails like an out-of-memory while `limit` is below its
    micro-batch, and counts its forward passes in a buffer."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.Tanh(),
                                        torch.nn.Linear(32, 3))
        self.register_buffer("forwards", torch.zeros((), dtype=torch.int64))
        self.limit = None

    def forward(self, x):
        self.forwards += 1
        out = self.body(x)
        if self.limit is not None and x.shape[0] > self.limit:
            raise FakeOOM("CUDA out of memory (simulated)")  # after part of the work, as real
        return out


def data(seed, n=96):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 10, generator=g), torch.randint(0, 3, (n,), generator=g)


def fresh(seed=0):
    torch.manual_seed(seed)
    net = Net().double()
    return net, torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)


LOSS = torch.nn.functional.cross_entropy


class Accumulation(unittest.TestCase):
    def test_same_gradients_as_one_batch(self):
        x, y = data(1)
        x = x.double()
        for micro in (96, 32, 7, 1):  # 7: a smaller last micro-batch
            with self.subTest(micro=micro):
                net, opt = fresh()
                loss = bso.torch.accumulate_step(net, opt, LOSS, (x, y), micro, step=False)
                grads = [p.grad.clone() for p in net.parameters()]
                ref, _ = fresh()
                full = LOSS(ref(x), y)
                full.backward()
                self.assertAlmostEqual(loss, float(full), places=10)
                for g, r in zip(grads, (p.grad for p in ref.parameters())):
                    torch.testing.assert_close(g, r, rtol=1e-10, atol=1e-12)

    def test_steps_match_one_big_batch(self):
        net, opt = fresh()
        ref, ref_opt = fresh()
        for s in range(5):
            x, y = data(10 + s)
            bso.torch.accumulate_step(net, opt, LOSS, (x.double(), y), 20)
            ref_opt.zero_grad()
            LOSS(ref(x.double()), y).backward()
            ref_opt.step()
        for a, b in zip(net.parameters(), ref.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-11)

    def test_errors(self):
        net, opt = fresh()
        with self.assertRaises(ValueError):
            bso.torch.accumulate_step(net, opt, LOSS, data(1), 0)


class Adaptive(unittest.TestCase):
    def run_steps(self, limits, **kw):
        """20 steps of 96 samples; limits[i] is the memory limit (samples) during step i."""
        net, opt = fresh()
        batcher = bso.torch.AdaptiveMicroBatcher(net, opt, LOSS, 64, oom_errors=(FakeOOM,),
                                                 **kw)
        sizes = []
        for s in range(20):
            net.limit = limits.get(s)
            x, y = data(100 + s)
            batcher.step((x.double(), y))
            sizes.append(batcher.micro_batch)
        net.limit = None
        return net, batcher, sizes

    def test_same_weights_as_without_ooms(self):
        plain, plain_batcher, _ = self.run_steps({})
        self.assertEqual(plain_batcher.ooms, 0)
        limits = {s: 20 for s in range(3, 6)}  # memory for 20 samples during steps 3..5
        squeezed, b, sizes = self.run_steps(limits, grow_after=4)
        self.assertEqual(b.ooms, 2)            # 64 -> 32 -> 16
        self.assertEqual(sizes[3], 16)
        self.assertGreaterEqual(b.grown, 2)    # and back up to 64
        self.assertEqual(sizes[-1], 64)
        for p, q in zip(plain.parameters(), squeezed.parameters()):
            torch.testing.assert_close(p, q, rtol=1e-9, atol=1e-11)

    def test_failed_attempts_leave_no_trace(self):
        net, opt = fresh()
        batcher = bso.torch.AdaptiveMicroBatcher(net, opt, LOSS, 64, oom_errors=(FakeOOM,))
        net.limit = 40  # the 64-sample attempt fails once; 32 + 32 + 32 succeed
        x, y = data(5)
        batcher.step((x.double(), y))
        self.assertEqual(batcher.micro_batch, 32)
        self.assertEqual(int(net.forwards), 3)  # the failed forward was rolled back

    def test_gives_up_at_the_floor(self):
        net, opt = fresh()
        batcher = bso.torch.AdaptiveMicroBatcher(net, opt, LOSS, 64, min_micro=16,
                                                 oom_errors=(FakeOOM,))
        net.limit = 8
        x, y = data(6)
        before = [p.detach().clone() for p in net.parameters()]
        with self.assertRaises(FakeOOM):
            batcher.step((x.double(), y))
        self.assertEqual(batcher.micro_batch, 16)
        for p, q in zip(before, net.parameters()):
            self.assertTrue(torch.equal(p, q))  # no step was taken

    def test_no_growth_without_headroom(self):
        _, b, sizes = self.run_steps({3: 40}, grow_after=2, headroom=lambda: False)
        self.assertEqual((b.ooms, b.grown, sizes[-1]), (1, 0, 32))


class LearningRate(unittest.TestCase):
    def test_rules(self):
        self.assertAlmostEqual(bso.torch.scale_lr(0.1, 512, 256), 0.2)
        self.assertAlmostEqual(bso.torch.scale_lr(0.1, 1024, 256, rule="sqrt"), 0.2)
        self.assertAlmostEqual(bso.torch.scale_lr(0.1, 64, 256, rule="sqrt"), 0.05)
        with self.assertRaises(ValueError):
            bso.torch.scale_lr(0.1, 64, 256, rule="cubic")
        with self.assertRaises(ValueError):
            bso.torch.scale_lr(0.1, 0, 256)


if __name__ == "__main__":
    unittest.main()
