#!/usr/bin/env python3
"""Fixed batch sizes against batch sizes that change during the run (issue #19), with real
PyTorch training to a target validation accuracy.

    /usr/bin/python3 bench/adaptive.py [--seeds 10] [--tasks digits,teacher] [--device cpu]

Two tasks: scikit-learn's bundled digits (a small CNN) and a generated one (an MLP learning a
random teacher network's labels, 20,000 samples). Each is trained from seed 1..N with every
fixed candidate size and with the three controllers of bso.torch (RampSchedule from the
smallest size to the default, MemoryScaler and NoiseScaleScaler from the smallest size), the
learning rate following the batch size by --lr-rule from the rate tuned at the default size.
Validation every --eval-every epochs (a quarter); a run that has not reached the target after --max-epochs
epochs counts as failed. Prints, per task and configuration, the medians over seeds of the
seconds, samples and energy estimate (seconds x --watts: no meter is read) to the target, and
how the controllers compare with the best and the median fixed size.
"""
import argparse
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.utils.data import DataLoader, RandomSampler, TensorDataset  # noqa: E402

import bso.torch as bt  # noqa: E402


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(d.target, dtype=torch.int64)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    cut = int(0.8 * len(y))
    return dict(
        train=(x[order[:cut]], y[order[:cut]]), val=(x[order[cut:]], y[order[cut:]]),
        model=lambda: nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 2 * 2, 10)),
        sizes=[16, 32, 64, 128, 256], default=64, lr=0.05, target=0.95)


def teacher():
    g = torch.Generator().manual_seed(0)
    n, d = 24000, 64
    x = torch.randn(n, d, generator=g)
    w1, w2 = torch.randn(d, 128, generator=g), torch.randn(128, 10, generator=g)
    y = (torch.tanh(x @ w1 / 8) @ w2).argmax(1)
    return dict(
        train=(x[:20000], y[:20000]), val=(x[20000:], y[20000:]),
        model=lambda: nn.Sequential(nn.Linear(d, 256), nn.ReLU(), nn.Linear(256, 10)),
        sizes=[32, 64, 128, 256, 512, 1024], default=128, lr=0.05, target=0.72)


TASKS = {"digits": digits, "teacher": teacher}


def accuracy(net, x, y):
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


def controller(kind, task, train_n, args):
    sizes, smallest = task["sizes"], task["sizes"][0]
    if kind == "ramp":
        return bt.RampSchedule(smallest, task["default"], over_samples=train_n, sizes=sizes)
    if kind == "memory":
        return bt.MemoryScaler(smallest, max_size=sizes[-1], sizes=sizes, patience=10)
    if kind == "noise":
        return bt.NoiseScaleScaler(smallest, max_size=sizes[-1], sizes=sizes, every=5,
                                   warmup=5, smoothing=0.9)
    return None


def train(task, config, seed, args):
    """Seconds, samples and whether it reached the target."""
    torch.manual_seed(seed)
    xt, yt = task["train"]
    xv, yv = task["val"]
    dev = torch.device(args.device)
    xv, yv = xv.to(dev), yv.to(dev)
    net = task["model"]().to(dev)
    sgd = torch.optim.SGD(net.parameters(), lr=task["lr"], momentum=0.9)
    loss_fn = nn.functional.cross_entropy
    ctrl = controller(config, task, len(yt), args)
    start_size = ctrl.batch_size if ctrl else int(config)
    coupling = bt.LRCoupling(sgd, task["default"], args.lr_rule, say=lambda _: None)
    coupling.apply(start_size)
    data = TensorDataset(xt, yt)
    sampler = bt.ResizableBatchSampler(
        RandomSampler(data, generator=torch.Generator().manual_seed(seed)), start_size)
    loader = bt.ResizableLoader(DataLoader(data, batch_sampler=sampler))
    every = max(1, int(args.eval_every * len(yt)))
    samples, next_eval, began = 0, every, time.perf_counter()
    for _ in range(args.max_epochs):
        for x, y in loader:
            x, y = x.to(dev), y.to(dev)
            t0 = time.perf_counter()
            if config == "noise":
                _, small, sq_small, sq_big = bt.noise_scale_step(
                    net, sgd, loss_fn, (x, y), max(1, len(y) // 4))
                measured = dict(small=small, grad_sq_small=sq_small, grad_sq_big=sq_big)
            else:
                sgd.zero_grad(set_to_none=True)
                loss_fn(net(x), y).backward()
                sgd.step()
                measured = dict(seconds=time.perf_counter() - t0)
            samples += len(y)
            if ctrl is not None:
                n = ctrl.observe(samples=len(y), **measured)
                if n != loader.batch_size:
                    loader.set_batch_size(n)
                    coupling.apply(n)
            if samples >= next_eval:
                next_eval += every
                if accuracy(net, xv, yv) >= task["target"]:
                    return time.perf_counter() - began, samples, True
    return time.perf_counter() - began, samples, False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--tasks", default="digits,teacher")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lr-rule", default="sqrt", choices=bt.LRCoupling.RULES)
    ap.add_argument("--eval-every", type=float, default=0.25,
                    help="epochs between validations")
    ap.add_argument("--max-epochs", type=int, default=20)
    ap.add_argument("--watts", type=float, default=65.0, help="for the energy estimate")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    for name in args.tasks.split(","):
        if name not in TASKS:
            sys.exit("unknown task %r (one of %s)" % (name, ", ".join(TASKS)))
        task = TASKS[name]()
        configs = [str(s) for s in task["sizes"]] + ["ramp", "memory", "noise"]
        print("\n%s: target %.2f, %d seeds, lr rule %s, %s" % (
            name, task["target"], args.seeds, args.lr_rule, args.device))
        print("%-8s %10s %10s %12s %7s" % ("config", "seconds", "samples", "joules(est)",
                                         "failed"))
        medians = {}
        for config in configs:
            runs = [train(task, config, seed, args) for seed in range(1, args.seeds + 1)]
            # A failed run counts with what it spent (a lower bound on reaching).
            secs = statistics.median(r[0] for r in runs)
            samples = statistics.median(r[1] for r in runs)
            failed = sum(1 for r in runs if not r[2])
            medians[config] = secs
            print("%-8s %10.3f %10d %12.1f %7d" % (config, secs, samples, secs * args.watts,
                                                 failed))
        fixed = sorted(medians[str(s)] for s in task["sizes"])
        best, middle = fixed[0], statistics.median(fixed)
        for kind in ("ramp", "memory", "noise"):
            print("%-8s %.2fx the best fixed size's seconds, %.2fx the median fixed size's" % (
                kind, medians[kind] / best, medians[kind] / middle))
    return 0


if __name__ == "__main__":
    sys.exit(main())
