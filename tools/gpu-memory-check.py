#!/usr/bin/env python3
"""A real CUDA out-of-memory under bso.torch's MemoryScaler and ControlledStep.

    python3 tools/gpu-memory-check.py [--cap-gib 4] [--steps 120]

The process is capped at --cap-gib of the GPU (torch.cuda.set_per_process_memory_fraction),
a small convolutional net trains on 128x128 images, and the scaler doubles the batch from 16
until a step runs out of memory. Checks that the step is retried (the run goes on), that the
scaler then closes in on the edge with a few failures instead of one per cooldown, and prints
the sizes it went through. Part of tools/gpu-check.sh; needs an NVIDIA GPU.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import bso.torch as bt  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cap-gib", type=float, default=4.0)
    ap.add_argument("--steps", type=int, default=120)
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    torch.manual_seed(0)
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(min(1.0, args.cap_gib * 2**30 / total))
    net = nn.Sequential(nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                        nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)).cuda()
    sgd = torch.optim.SGD(net.parameters(), lr=0.01)
    # min_gain below zero: grow on memory alone, so that the run meets the cap.
    scaler = bt.MemoryScaler(16, max_size=4096, patience=5, cooldown=30, min_gain=-1)
    step = bt.ControlledStep(scaler, net, sgd, nn.functional.cross_entropy)
    n, sizes, began = 16, [16], time.time()
    for _ in range(args.steps):
        x = torch.randn(n, 3, 128, 128, device="cuda")
        y = torch.randint(0, 10, (n,), device="cuda")
        n = step.step((x, y))
        if n != sizes[-1]:
            sizes.append(n)
    torch.cuda.synchronize()
    print("cap %.1f GiB; %d steps in %.1f s; sizes %s; out-of-memory %d; final %d; loss %.3f"
          % (args.cap_gib, args.steps, time.time() - began, sizes, step.ooms, n, step.loss))
    ok = 1 <= step.ooms <= 4 and n < 4096 and step.loss == step.loss
    print("memory check", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
