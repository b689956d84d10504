"""Probe which batch sizes fit a device and what each costs per sample (PyTorch).

    report = bso.probe.probe(model, optimizer, make_batch, [16, 32, ..., 4096], loss_fn,
                             monitor=monitor)            # or memory_budget_bytes= on a CPU
    print(report.table())
    client.post("/jobs/%s/profile" % job_id, report.profile(device="A100"))

The search for the largest size that fits is libbso's (include/bso/probe.h): doubling from the
smallest candidate, then bisecting, never trying a size whose outcome is implied. Every size up
to that one is then measured for a few real training steps: samples/s, peak memory and, with a
monitor, joules per sample. Out-of-memory is caught and cleaned up (torch.cuda's on a GPU; on a
CPU a size "does not fit" when its measured peak memory passes memory_budget_bytes). The
model's parameters and buffers, the optimizer's state, the gradients and the random state are
put back afterwards, bit for bit: probing leaves no trace on training.
"""
import copy
import ctypes
import dataclasses
import threading
import time
from typing import Callable, List, Optional, Sequence

import torch

from . import _native as N
from .exceptions import BSOConfigError
from .microbatch import default_oom_errors


@dataclasses.dataclass
class ProbeResult:
    batch_size: int
    feasible: bool
    tried: bool                       # False: implied by the search, not run
    samples_per_s: Optional[float] = None
    joules_per_sample: Optional[float] = None
    peak_memory_bytes: Optional[int] = None
    error: str = ""
    utilization: Optional[float] = None  # the GPUs' busy share (%) over the measured steps


@dataclasses.dataclass
class ProbeReport:
    results: List[ProbeResult]
    largest: int                      # the largest size that fits; 0 when none does
    search_tries: int                 # sizes the feasibility search ran
    input_bound: bool = False         # samples/s stopped growing while the device idled
    utilization: Optional[float] = None  # the device's busy share (%), when known

    def profile(self, device: str = "") -> dict:
        """The body of POST /jobs/ID/profile."""
        return {"device": device, "batch_sizes": [
            {"batch_size": r.batch_size, "feasible": r.feasible,
             "samples_per_s": r.samples_per_s, "joules_per_sample": r.joules_per_sample,
             "peak_memory_bytes": r.peak_memory_bytes} for r in self.results]}

    def table(self) -> str:
        rows = ["%10s %8s %12s %12s %14s" % ("BATCH SIZE", "FITS", "SAMPLES/S", "J/SAMPLE",
                                             "PEAK MEMORY")]
        best = max((r.samples_per_s or 0) for r in self.results) or 1.0
        for r in self.results:
            fits = ("yes" if r.feasible else "no") + ("" if r.tried else "*")
            sps = "%.1f" % r.samples_per_s if r.samples_per_s else "-"
            jps = "%.4g" % r.joules_per_sample if r.joules_per_sample else "-"
            mem = "%.1f MiB" % (r.peak_memory_bytes / 2 ** 20) if r.peak_memory_bytes else "-"
            bar = "#" * int(30 * (r.samples_per_s or 0) / best)
            rows.append("%10d %8s %12s %12s %14s  %s" % (r.batch_size, fits, sps, jps, mem, bar))
        rows.append("(* implied by the search, not run; bars: samples/s)")
        if self.input_bound:
            rows.append("samples/s stops growing with the batch size while the device is busy "
                        "only %.0f%% of the time: the input pipeline, not the batch size, is the "
                        "bottleneck" % self.utilization)
        return "\n".join(rows)


class _RssPeak:
    """The process's peak resident memory above its level at start, sampled every ms (on a
    CPU, PyTorch's large buffers come and go with mmap, so RSS follows them)."""

    def __init__(self):
        self.base = self._rss()
        self.peak = self.base
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def _run(self):
        while not self._stop.wait(0.001):
            self.peak = max(self.peak, self._rss())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def used(self) -> int:
        return self.peak - self.base


class _Saved:
    """Everything training state a probe could touch, to put back bit for bit."""

    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer
        self.params = copy.deepcopy(model.state_dict())
        self.opt = copy.deepcopy(optimizer.state_dict())
        self.grads = [None if p.grad is None else p.grad.detach().clone()
                      for p in model.parameters()]
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        self.training = model.training

    def restore(self):
        self.model.load_state_dict(self.params)
        self.optimizer.load_state_dict(self.opt)
        for p, g in zip(self.model.parameters(), self.grads):
            p.grad = None if g is None else g.clone()
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
        self.model.train(self.training)


def probe(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
          make_batch: Callable[[int], Sequence[torch.Tensor]], batch_sizes: Sequence[int],
          loss_fn: Callable[..., torch.Tensor], *, steps: int = 3, warmup: int = 1,
          min_time_s: float = 1.0, max_steps: int = 10000, monitor=None, memory_budget_bytes: Optional[int] = None,
          oom_errors: Optional[tuple] = None,
          memory_used: Optional[Callable[[], int]] = None,
          utilization: Optional[Callable[[], float]] = None,
          clock: Callable[[], float] = time.perf_counter) -> ProbeReport:
    """Probes batch_sizes (see the module's text). make_batch(n) returns (inputs, *rest) for n
    samples, on the model's device; loss_fn(output, *rest) is the training loss. monitor (a
    bso.EnergyMonitor) adds joules per sample. oom_errors: the exceptions that mean
    out-of-memory (default torch's). memory_used, for tests: the bytes the last step used,
    instead of measuring them. The device's busy share in percent comes from the monitor's
    NVML readings over the largest fitting size's steps; without them, from utilization() (a
    hook; default on CUDA: torch.cuda.utilization()). With it, a throughput that stops growing
    while the device idles is reported as input-bound. Each size is measured for at least
    `steps` steps and `min_time_s` seconds (at most max_steps): on a fast GPU three steps take
    a few milliseconds, less than NVML's energy counter and utilisation need to move (seen on
    an H100: 0 J and a false "input-bound" at every size but the largest). clock, for tests: the
    time in seconds."""
    sizes = sorted(set(int(b) for b in batch_sizes))
    if not sizes or sizes[0] <= 0 or len(sizes) > 256:
        raise BSOConfigError("batch_sizes must be 1 to 256 positive sizes")
    if steps < 1 or warmup < 0 or min_time_s < 0 or max_steps < steps:
        raise BSOConfigError("steps must be >= 1, warmup >= 0, min_time_s >= 0 and "
                             "max_steps >= steps")
    errors = oom_errors or default_oom_errors()
    on_cuda = next(model.parameters()).is_cuda
    saved = _Saved(model, optimizer)
    measured = {}

    def run(bs: int) -> ProbeResult:
        model.train()
        try:
            batch = make_batch(bs)
            if on_cuda:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            peak = _RssPeak() if not on_cuda and memory_used is None else None
            if peak:
                peak.__enter__()
            try:
                done = 0  # measured steps
                for k in range(warmup + max_steps):
                    if k == warmup:
                        if on_cuda:
                            torch.cuda.synchronize()
                        if monitor is not None:
                            monitor.begin_window("bso-probe")
                        start = clock()
                    elif k > warmup and done >= steps and clock() - start >= min_time_s:
                        break  # (the GPU may trail the clock by its queue: synced below)
                    optimizer.zero_grad(set_to_none=True)
                    loss_fn(model(batch[0]), *batch[1:]).backward()
                    optimizer.step()
                    done += k >= warmup
                if on_cuda:
                    torch.cuda.synchronize()
                elapsed = clock() - start
                window = monitor.end_window("bso-probe") if monitor else None
                energy = window.total_energy if window else None
            finally:
                if peak:
                    peak.__exit__(None, None, None)
            used = (torch.cuda.max_memory_allocated() if on_cuda
                    else memory_used() if memory_used else peak.used)
            samples = bs * done
            result = ProbeResult(bs, True, True, samples / elapsed,
                                 energy / samples if energy else None, int(used),
                                 utilization=window.utilization if window else None)
            if memory_budget_bytes is not None and not on_cuda and used > memory_budget_bytes:
                result.feasible = False
                result.error = "peak memory %d bytes over the budget of %d" % (
                    used, memory_budget_bytes)
            return result
        except errors as e:  # out of memory: clean up and call it infeasible
            optimizer.zero_grad(set_to_none=True)
            if on_cuda:
                torch.cuda.empty_cache()
            return ProbeResult(bs, False, True, error=str(e).splitlines()[0][:200])
        finally:
            saved.restore()  # every size starts from the same state

    search = N.ProbeSearch()
    arr = (ctypes.c_int64 * len(sizes))(*sizes)
    if N.lib.bso_probe_search_init(ctypes.byref(search), arr, len(sizes)) != 0:
        raise BSOConfigError("bad batch sizes: %r" % (batch_sizes,))
    try:
        while True:
            bs = N.lib.bso_probe_search_next(ctypes.byref(search))
            if bs <= 0:
                break
            measured[bs] = run(bs)
            N.lib.bso_probe_search_record(ctypes.byref(search), bs, measured[bs].feasible)
        largest = N.lib.bso_probe_search_largest(ctypes.byref(search))
        tries = len(measured)
        for bs in sizes:  # the rest of the table: sizes that fit are measured too
            if bs not in measured:
                measured[bs] = run(bs) if bs <= largest else ProbeResult(bs, False, False)
    finally:
        saved.restore()
    results = [measured[bs] for bs in sizes]
    # How busy the device was at the largest size that fits: the monitor's NVML readings over
    # its steps, else the hook, else torch's reading now.
    busy = next((r.utilization for r in reversed(results)
                 if r.feasible and r.utilization is not None), None)
    if busy is None and (utilization is not None or on_cuda):
        try:
            busy = float((utilization or torch.cuda.utilization)())
        except Exception:  # no NVML behind torch: unknown
            busy = None
    return ProbeReport(results, largest, tries,
                       busy is not None and busy < 50 and _flat(results), busy)


def _flat(results: List[ProbeResult]) -> bool:
    """Whether doubling the batch size stopped raising samples/s (by 10% or more) at the
    largest sizes that fit."""
    fit = [r for r in results if r.feasible and r.samples_per_s]
    pairs = [(a, b) for a in fit for b in fit if b.batch_size >= 2 * a.batch_size]
    if len(fit) < 3 or not pairs:
        return False
    a, b = max(pairs, key=lambda p: (p[1].batch_size, p[0].batch_size))
    return b.samples_per_s < 1.1 * a.samples_per_s
