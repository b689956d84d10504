"""Data-parallel helpers over torch.distributed (imported only when used).

    bso = BatchSizeOptimizer(monitor, url, spec, rank=rank, world_size=world_size)
    batch_size = bso.torch.broadcast_batch_size(bso)   # every rank gets rank 0's answer
    ...
    bso.on_evaluate(metric)   # every rank: energy is summed, time is the slowest rank's,
                              # and all ranks learn the stop decision together
"""
import torch
import torch.distributed as dist


def _on_backend(t: torch.Tensor) -> torch.Tensor:
    """t where the process group's collectives take it: NCCL only moves CUDA tensors (the
    process's current device, torch.cuda.set_device), gloo CPU ones."""
    if dist.get_backend() == "nccl":
        return t.to(torch.device("cuda", torch.cuda.current_device()))
    return t


def broadcast_batch_size(opt) -> int:
    """Rank 0 asks the server; every rank returns the same batch size and trial number, and
    learns the power limit known for it (whole watts; optimize_power)."""
    t = torch.zeros(3, dtype=torch.int64)
    if dist.get_rank() == 0:
        t[0] = opt.get_batch_size()
        t[1] = opt.trial_number
        t[2] = int(round(opt._known_power_limit or 0))
    t = _on_backend(t)
    dist.broadcast(t, src=0)
    t = t.cpu()
    opt.current_batch_size, opt.trial_number = int(t[0]), int(t[1])
    opt._known_power_limit = float(t[2]) if int(t[2]) > 0 else None
    return opt.current_batch_size


def combine_measurements(elapsed: float, energy: float):
    """The job's measurement: the slowest rank's time and every rank's energy."""
    t = _on_backend(torch.tensor([elapsed], dtype=torch.float64))
    e = _on_backend(torch.tensor([energy], dtype=torch.float64))
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    dist.all_reduce(e, op=dist.ReduceOp.SUM)
    return float(t.cpu()[0]), float(e.cpu()[0])


def share_answer(answer):
    """Rank 0's report answer, on every rank."""
    box = [answer]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def sync_batch_size(batch_size: int) -> int:
    """Rank 0's batch size on every rank (a controller decides on rank 0): the ranks then cut
    their shards into batches of the same size at the same step. Without an initialised
    process group, batch_size itself."""
    if not (dist.is_available() and dist.is_initialized()):
        return int(batch_size)
    t = _on_backend(torch.tensor([int(batch_size)], dtype=torch.int64))
    dist.broadcast(t, src=0)
    return int(t.cpu()[0])


# Micro-batching and accumulation (bso/microbatch.py), a batch size that changes during a run
# (bso/resize.py) and the controllers that change it (bso/adapt.py): `bso.torch.<name>`.
from .adapt import (BatchSizeController, LRCoupling, MemoryScaler, NoiseScale,  # noqa: E402,F401
                    NoiseScaleScaler, RampSchedule, noise_scale_step)
from .microbatch import (AdaptiveMicroBatcher, ControlledStep, accumulate_step,  # noqa: E402,F401
                         cuda_memory_fraction, scale_lr)
from .resize import ResizableBatchSampler, ResizableLoader  # noqa: E402,F401
