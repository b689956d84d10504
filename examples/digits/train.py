#!/usr/bin/env python3
"""Trains a small CNN on scikit-learn's bundled digits data to a target validation accuracy,
with its batch size chosen by BSO. Run it again and again (a recurring job): BSO explores batch
sizes, prunes the bad ones, then keeps choosing the cheapest by Thompson sampling.

    bso-server &                                   # in another terminal
    BSO_LIBRARY=build/release/libbso.so BSO_ASSUMED_POWER_W=65 \
        /usr/bin/python3 examples/digits/train.py --job-id digits-1

On a machine without an NVIDIA GPU the energy comes from RAPL when readable, else from the
declared power (labelled as an estimate). --world-size 2 trains data-parallel in two processes
(gloo; NCCL on GPUs). Started by a launcher that sets RANK and WORLD_SIZE (Kubeflow's
PyTorchJob, torchrun: deploy/kubeflow/), it runs as that one rank. --adapt memory|ramp|noise changes the batch size during the run, starting from (ramp:
growing to) the size BSO chose, with the learning rate following by the square-root rule. The
script prints one JSON line per process with what happened, and exits 0 when the
run converged, 3 when BSO stopped it without converging.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

import bso  # noqa: E402

BATCH_SIZES = [16, 32, 64, 128, 512]

# Objects a data-parallel worker must not destroy before it exits (see worker()).
_KEEP_ALIVE = []


def data():
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    g = torch.Generator().manual_seed(0)  # the same split every run
    order = torch.randperm(len(y), generator=g)
    split = int(0.8 * len(y))
    return (x[order[:split]], y[order[:split]]), (x[order[split:]], y[order[split:]])


def model():
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 2 * 2, 10))


def accuracy(net, x, y):
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


def adapt_controller(kind, start, largest):
    """--adapt: the batch size changes during the run, from the size the server chose (ramp:
    up to it, from the smallest job size)."""
    if kind is None:
        return None
    import bso.torch as bt
    if kind == "ramp":
        return bt.RampSchedule(min(start, BATCH_SIZES[0]), start, over_samples=2000)
    if kind == "memory":
        return bt.MemoryScaler(start, max_size=max(start, largest), patience=10)
    return bt.NoiseScaleScaler(start, max_size=max(start, largest), every=5, warmup=5,
                               smoothing=0.9)


def pick_device(name):
    """--device: cpu, cuda (this process's GPU: LOCAL_RANK under a launcher), or auto."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda":
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return torch.device(name)


def run(rank, world_size, args):
    torch.set_num_threads(1)
    device = pick_device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(device)  # NCCL's collectives use the current device
    if world_size > 1:
        import torch.distributed as dist
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank,
                                world_size=world_size)
        import bso.torch as bso_torch
    spec = bso.JobSpec(job_id=args.job_id, job_id_prefix=args.job_id.split("-")[0],
                       batch_sizes=BATCH_SIZES, default_batch_size=64,
                       target_metric=args.target, max_epochs=args.max_epochs,
                       mab_seed=args.seed)
    monitor = bso.EnergyMonitor()
    opt = bso.BatchSizeOptimizer(monitor, args.server, spec, rank=rank, world_size=world_size)
    batch_size = (bso_torch.broadcast_batch_size(opt) if world_size > 1
                  else opt.get_batch_size())
    (xt, yt), (xv, yv) = data()
    shard = torch.arange(rank, len(yt), world_size)  # this rank's part of the training data
    xt, yt, xv, yv = xt[shard].to(device), yt[shard].to(device), xv.to(device), yv.to(device)
    torch.manual_seed(opt.trial_number)  # each recurrence starts from another init
    net = model().to(device)
    if world_size > 1:
        net = nn.parallel.DistributedDataParallel(
            net, device_ids=[device.index] if device.type == "cuda" else None)
        _KEEP_ALIVE.append(net)
    sgd = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    per_rank = max(1, batch_size // world_size)
    result = {"rank": rank, "job_id": opt.job_id, "trial": opt.trial_number,
              "batch_size": batch_size, "converged": False}
    import bso.torch as bt
    sampler = bt.ResizableBatchSampler(
        torch.utils.data.RandomSampler(range(len(yt))), per_rank)
    ctrl = adapt_controller(args.adapt, per_rank, max(1, BATCH_SIZES[-1] // world_size))
    coupling = bt.LRCoupling(sgd, per_rank, "sqrt",
                             say=lambda line: print(line, file=sys.stderr)) if ctrl else None
    # ramp and memory go through ControlledStep (timing, memory, out-of-memory retries).
    stepper = (bt.ControlledStep(ctrl, net, sgd, nn.functional.cross_entropy)
               if args.adapt in ("ramp", "memory") else None)
    steps = samples = 0
    status = 0
    opt.on_train_begin()
    try:
        for epoch in range(args.max_epochs):
            for idx in sampler:
                idx = torch.tensor(idx, device=device)
                if args.adapt == "noise":
                    _, small, sq_small, sq_big = bt.noise_scale_step(
                        net, sgd, nn.functional.cross_entropy, (xt[idx], yt[idx]),
                        max(1, len(idx) // 4))
                    measured = dict(small=small, grad_sq_small=sq_small, grad_sq_big=sq_big)
                elif stepper is not None:
                    n = stepper.step((xt[idx], yt[idx]))
                else:
                    began = time.perf_counter()
                    sgd.zero_grad()
                    nn.functional.cross_entropy(net(xt[idx]), yt[idx]).backward()
                    sgd.step()
                    measured = dict(seconds=time.perf_counter() - began)
                steps, samples = steps + 1, samples + len(idx)
                if ctrl is not None:  # rank 0 decides; every rank takes the same size
                    if stepper is None:
                        n = ctrl.observe(samples=len(idx), **measured)
                    n = bt.sync_batch_size(n)
                    if n != sampler.batch_size:
                        sampler.set_batch_size(n)
                        coupling.apply(n)
            result["steps"] = steps
            result["mean_batch_size"] = round(samples / steps * world_size, 1)
            acc = accuracy(net, xv, yv)
            result["epochs"], result["accuracy"] = epoch + 1, acc
            if ctrl is not None:  # the server keeps how the batch size moved in this run
                opt.on_evaluate(acc, samples=samples * world_size,
                                mean_batch_size=samples / steps * world_size)
            else:
                opt.on_evaluate(acc)
            if opt.training_finished:
                result["converged"] = True
                break
    except bso.BSOTrainFailError as e:
        result["error"] = str(e)
        status = 3
    result.update(time=opt.running_time, energy=opt.consumed_energy, source=opt.energy_source)
    # One write per line: under PIPE_BUF it is atomic, so ranks sharing stdout never interleave.
    sys.stdout.flush()
    os.write(1, (json.dumps(result) + "\n").encode())
    return status


def worker(rank, world_size, args):
    # torch 1.13 can deadlock tearing down a gloo process group: its destructor joins a thread
    # that waits for the GIL the destroying thread holds. So the model and the group are kept
    # alive; the exit handlers (which end an unfinished trial) run here, and the process leaves
    # without finalizing.
    import atexit
    import traceback
    status = 1
    try:
        status = run(rank, world_size, args)
    except BaseException:
        traceback.print_exc()
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", default=os.environ.get("BSO_SERVER_URL", "http://127.0.0.1:8000"))
    p.add_argument("--job-id", default=os.environ.get("BSO_JOB_ID", "digits-1"))
    p.add_argument("--target", type=float, default=0.95, help="validation accuracy to reach")
    p.add_argument("--max-epochs", type=int, default=15)
    p.add_argument("--seed", type=int, default=None, help="the bandit's seed (mab_seed)")
    p.add_argument("--world-size", type=int, default=1)
    p.add_argument("--device", default="cpu",
                   help="cpu, cuda to train on the GPU, or auto (cuda when there is one)")
    p.add_argument("--adapt", choices=["memory", "ramp", "noise"], default=None,
                   help="change the batch size during the run (bso.torch's controllers)")
    args = p.parse_args()
    # One process of a launcher (Kubeflow's training operator, torchrun): it set RANK,
    # WORLD_SIZE, MASTER_ADDR and MASTER_PORT, and started the other ranks itself.
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if args.world_size == 1 and launched > 1:
        worker(int(os.environ["RANK"]), launched, args)
    if args.world_size == 1:
        return run(0, 1, args)
    import torch.multiprocessing as mp
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29500 + os.getpid() % 1000))
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=worker, args=(r, args.world_size, args))
             for r in range(args.world_size)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join()
    return max(proc.exitcode for proc in procs)


if __name__ == "__main__":
    sys.exit(main())
