#!/usr/bin/env python3
"""Trains an MLP to a target validation accuracy on a generated classification task (a fixed
random "teacher" network labels Gaussian inputs), with its batch size chosen by BSO. Unlike the
digits example it is large enough to keep a data-centre GPU busy, so its energy, power-limit
profiling and device probe mean something there; on a CPU use a small --width.

    bso-server &
    BSO_LIBRARY=build/release/libbso.so python3 examples/synthetic/train.py --device cuda \
        --job-id synthetic-1 [--optimize-power] [--probe]

Prints one JSON line with what happened; exits 0 when the run converged, 3 when BSO stopped it
without converging.
"""
import argparse
import json
import logging
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import bso  # noqa: E402
import bso.probe  # noqa: E402

BATCH_SIZES = [64, 128, 256, 512, 1024, 2048, 4096]
FEATURES, CLASSES = 128, 16


def data(n_train, device, label_noise=0.0):
    """The same task every run: the labelling function and the samples come from fixed
    seeds. label_noise replaces that share of the training labels (not the validation
    labels) with random classes, as data that drifted noisier would: the same target then
    takes more epochs."""
    g = torch.Generator().manual_seed(0)
    linear = torch.randn(FEATURES, CLASSES, generator=g)
    bent = torch.randn(FEATURES, CLASSES, generator=g)
    x = torch.randn(n_train + n_train // 5, FEATURES, generator=g)
    y = (x @ linear + torch.tanh(x @ bent)).argmax(1)
    if label_noise > 0:
        noisy = torch.rand(n_train, generator=g) < label_noise
        y[:n_train][noisy] = torch.randint(0, CLASSES, (int(noisy.sum()),), generator=g)
    x, y = x.to(device), y.to(device)
    return (x[:n_train], y[:n_train]), (x[n_train:], y[n_train:])


def model(width, depth, device):
    layers, d = [], FEATURES
    for _ in range(depth):
        layers += [nn.Linear(d, width), nn.ReLU()]
        d = width
    return nn.Sequential(*layers, nn.Linear(d, CLASSES)).to(device)


def optimizer(net, batch_size):
    """Adam, its step growing with the square root of the batch (the usual rule for adaptive
    methods)."""
    return torch.optim.Adam(net.parameters(), lr=1e-3 * (batch_size / 256) ** 0.5)


def train_epoch(net, opt, xt, yt, batch_size, after_step=None):
    """One pass over the training samples in a random order; after_step(samples) after each
    optimizer step."""
    order = torch.randperm(len(yt), device=xt.device)
    for i in range(0, len(yt), batch_size):
        idx = order[i:i + batch_size]
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
        opt.step()
        if after_step is not None:
            after_step(len(idx))


def accuracy(net, x, y):
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default=os.environ.get("BSO_SERVER_URL", "http://127.0.0.1:8000"))
    p.add_argument("--job-id", default=os.environ.get("BSO_JOB_ID", "synthetic-1"))
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--samples", type=int, default=200_000, help="training samples")
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--target", type=float, default=0.88)
    p.add_argument("--max-epochs", type=int, default=12)
    p.add_argument("--seed", type=int, default=None, help="the bandit's seed (mab_seed)")
    p.add_argument("--label-noise", type=float, default=0.0,
                   help="share of training labels replaced at random (data that drifted)")
    p.add_argument("--optimize-power", action="store_true", help="tune the GPU power limit too")
    p.add_argument("--probe", action="store_true",
                   help="probe which sizes fit and their rates first, and post the profile")
    p.add_argument("--probe-only", action="store_true",
                   help="probe and post the profile, then exit without training (so that the "
                        "first training run starts as cold as later ones)")
    p.add_argument("--transfer-from", default=None, metavar="JOB",
                   help="a new job starts from what this job learnt on other hardware")
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    device = torch.device(args.device)
    spec = bso.JobSpec(job_id=args.job_id, job_id_prefix=args.job_id.split("-")[0],
                       batch_sizes=BATCH_SIZES, default_batch_size=256,
                       target_metric=args.target, max_epochs=args.max_epochs,
                       mab_seed=args.seed, transfer_from=args.transfer_from)
    monitor = bso.EnergyMonitor()
    opt = bso.BatchSizeOptimizer(monitor, args.server, spec, optimize_power=args.optimize_power)
    if not 0 <= args.label_noise < 1:
        p.error("--label-noise must be in [0, 1)")
    (xt, yt), (xv, yv) = data(args.samples, device, args.label_noise)
    result = {"job_id": opt.job_id, "device": str(device), "source": monitor.source}
    if args.probe or args.probe_only:
        net = model(args.width, args.depth, device)
        sgd = torch.optim.Adam(net.parameters(), lr=1e-3)
        report = bso.probe.probe(net, sgd, lambda n: (xt[:n], yt[:n]), BATCH_SIZES,
                                 nn.functional.cross_entropy, monitor=monitor)
        print(report.table(), file=sys.stderr)
        gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        opt.post_profile(report, device=gpu)
        result["probe"] = [dict(batch_size=r.batch_size, fits=r.feasible,
                                samples_per_s=r.samples_per_s,
                                joules_per_sample=r.joules_per_sample) for r in report.results]
        if args.probe_only:
            print(json.dumps(result), flush=True)
            return 0
    batch_size = opt.get_batch_size()
    torch.manual_seed(opt.trial_number)  # each recurrence starts from another init
    net = model(args.width, args.depth, device)
    sgd = optimizer(net, batch_size)
    result.update(trial=opt.trial_number, batch_size=batch_size, converged=False)

    def tuner_step(samples):
        if device.type == "cuda":
            torch.cuda.synchronize()  # the tuner times finished work
        opt.on_step(samples)

    status = 0
    opt.on_train_begin()
    try:
        for epoch in range(args.max_epochs):
            train_epoch(net, sgd, xt, yt, batch_size,
                        tuner_step if args.optimize_power else None)
            acc = accuracy(net, xv, yv)
            if device.type == "cuda":
                torch.cuda.synchronize()
            result["epochs"], result["accuracy"] = epoch + 1, acc
            opt.on_evaluate(acc)
            if opt.training_finished:
                result["converged"] = True
                break
    except bso.BSOTrainFailError as e:
        result["error"] = str(e)
        status = 3
    result.update(time=opt.running_time, energy=opt.consumed_energy, source=opt.energy_source,
                  power_limit=opt.power_limit, power_profile=opt.power_profile)
    print(json.dumps(result), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
