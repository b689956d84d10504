"""Controllers that change the batch size during a run, and the learning rate with it (through
bso.torch). Each observes the training steps and answers the batch size for the next one:

    ctrl = bso.torch.RampSchedule(start=32, target=opt.get_batch_size(), over_samples=50_000)
    lr = bso.torch.LRCoupling(optimizer, base_batch_size=ctrl.batch_size, rule="linear")
    for x, y in loader:                       # a ResizableLoader (bso/resize.py)
        loss = ...step...
        n = ctrl.observe(samples=len(x), loss=float(loss))
        if n != loader.batch_size:
            loader.set_batch_size(n)
            lr.apply(n)                       # logs "batch size 32 -> 48: lr 0.1 -> 0.15"

* RampSchedule: from a small batch to the target over a number of samples, linearly or in
  steps, as large-model training warms up its batch size.
* MemoryScaler: grows while memory use stays under a low watermark and throughput still grows;
  shrinks above a high watermark or on out-of-memory; holds for a while after each shrink; never
  beyond max_size (the largest size the probe found to fit).
* NoiseScaleScaler: grows toward the gradient noise scale B_simple = tr(Sigma) / |G|^2
  (McCandlish et al. 2018), estimated from the squared gradient norms of a micro-batch and of the
  whole batch (noise_scale_step measures both in one accumulated step).

A controller's sizes can be limited to a list (e.g. the job's batch sizes) or to multiples of a
number. Data parallel: decide on rank 0 and share with bso.torch.sync_batch_size.
"""
import logging
import math
from typing import Callable, Optional, Sequence

import torch

from .microbatch import accumulate_step


log = logging.getLogger("bso.adapt")


class BatchSizeController:
    """The interface: observe() one step, get the next batch size. batch_size is the current
    answer; changes counts the answers that differed from the one before."""

    def __init__(self, start: int, *, sizes: Optional[Sequence[int]] = None,
                 multiple_of: int = 1, min_size: int = 1, max_size: Optional[int] = None):
        if sizes is not None:
            sizes = sorted(set(int(s) for s in sizes))
            if not sizes or sizes[0] < 1:
                raise ValueError("sizes must be positive batch sizes")
        if multiple_of < 1 or min_size < 1 or (max_size is not None and max_size < min_size):
            raise ValueError("need multiple_of >= 1 and 1 <= min_size <= max_size")
        self.sizes, self.multiple_of = sizes, int(multiple_of)
        self.min_size, self.max_size = int(min_size), max_size
        self.samples = 0
        self.steps = 0
        self.changes = 0
        self.batch_size = self._allowed(start)

    def _allowed(self, n: float) -> int:
        """The allowed size nearest below n (the smallest allowed when none is)."""
        hi = self.max_size if self.max_size is not None else math.inf
        n = max(self.min_size, min(hi, n))
        if self.sizes is not None:
            fit = [s for s in self.sizes if self.min_size <= s <= hi]
            below = [s for s in fit if s <= n]
            return below[-1] if below else (fit[0] if fit else self.sizes[0])
        m = self.multiple_of
        return max(m, int(n // m) * m)

    def _step_up(self, n: int) -> int:
        """The next allowed size above n (n itself at the top)."""
        if self.sizes is not None:
            hi = self.max_size if self.max_size is not None else math.inf
            above = [s for s in self.sizes if n < s <= hi]
            return above[0] if above else n
        return self._allowed(n * 2)

    def _step_down(self, n: int) -> int:
        if self.sizes is not None:
            below = [s for s in self.sizes if self.min_size <= s < n]
            return below[-1] if below else n
        return self._allowed(max(self.min_size, n // 2))

    def _answer(self, n: int) -> int:
        if n != self.batch_size:
            self.changes += 1
            log.info("batch size %d -> %d after %d samples (%s)", self.batch_size, n,
                     self.samples, type(self).__name__)
        self.batch_size = n
        return n

    def observe(self, samples: int, **measured) -> int:
        """One training step of `samples` samples (with whatever the controller uses:
        loss, seconds, memory, oom, grad_sq_small/grad_sq_big/small); the next batch size."""
        if samples < 0:
            raise ValueError("samples must be >= 0")
        self.samples += int(samples)
        self.steps += 1
        return self._answer(self._decide(int(samples), **measured))

    def _decide(self, samples: int, **measured) -> int:
        raise NotImplementedError


class RampSchedule(BatchSizeController):
    """From `start` to `target` over `over_samples` samples: "linear" (rounded down to an
    allowed size) or "steps" (`n_steps` equal steps, geometric between start and target)."""

    def __init__(self, start: int, target: int, over_samples: int, *, mode: str = "linear",
                 n_steps: int = 4, **limits):
        if start < 1 or target < start or over_samples < 1:
            raise ValueError("need 1 <= start <= target and over_samples >= 1")
        if mode not in ("linear", "steps") or n_steps < 1:
            raise ValueError("mode is 'linear' or 'steps' (n_steps >= 1)")
        self.start, self.target, self.over = int(start), int(target), int(over_samples)
        self.mode, self.n_steps = mode, int(n_steps)
        super().__init__(start, **limits)

    def size_at(self, samples: int) -> int:
        f = min(1.0, samples / self.over)
        if self.mode == "linear":
            n = self.start + f * (self.target - self.start)
        else:
            k = min(self.n_steps, int(f * self.n_steps + 1e-9))
            n = self.start * (self.target / self.start) ** (k / self.n_steps)
        return self._allowed(n + 1e-9)

    def _decide(self, samples: int, **measured) -> int:
        return self.size_at(self.samples)


class MemoryScaler(BatchSizeController):
    """Grows (to the next allowed size, doubling by default) after `patience` steps in a row
    with memory under `low` (a fraction of the device), as long as the last growth raised
    throughput by at least `min_gain`; shrinks at once above `high` or on out-of-memory, and
    then does not grow for `cooldown` steps. After an out-of-memory it goes back to the largest
    size that ran, and later grows only halfway towards the smallest size that failed, until
    that step would add less than an eighth. observe(samples, seconds=, memory=, oom=)."""

    def __init__(self, start: int, max_size: int, *, low: float = 0.6, high: float = 0.85,
                 patience: int = 20, cooldown: int = 200, min_gain: float = 0.05, **limits):
        if not 0 < low < high <= 1:
            raise ValueError("need 0 < low < high <= 1")
        super().__init__(start, max_size=max_size, **limits)
        self.low, self.high = low, high
        self.patience, self.cooldown, self.min_gain = int(patience), int(cooldown), min_gain
        self._calm = 0  # steps in a row under the low watermark
        self._here = 0  # steps at the current size since it grew
        self._hold = 0
        self._rates = {}  # batch size -> samples per second, smoothed
        self._grew_from = None
        self._ran = 0  # the largest size that ran a step
        self._failed = None  # the smallest size that ran out of memory
        self.ooms = 0

    def out_of_memory(self) -> int:
        """The current size ran out of memory (a step to be retried, not one that counts):
        the smaller size to retry at, which then holds for `cooldown` steps."""
        return self._answer(self._shrink(oom=True))

    def _shrink(self, oom: bool) -> int:
        n = self.batch_size
        self._calm, self._hold, self._grew_from = 0, self.cooldown, None
        if oom:  # what failed does not fit: never again in this run
            self.ooms += 1
            self.max_size = max(self.min_size, min(self.max_size, n - 1))
            self._failed = n if self._failed is None else min(self._failed, n)
            if self.min_size <= self._ran < n:
                return self._ran  # known to run: halving would throw away more than failed
        return self._step_down(n)

    def _grow(self, n: int) -> int:
        """The size to grow to from n (n: stay). Below a size that ran out of memory, halfway
        to it: doubling again would retry the edge one sample below it, run after run."""
        up = self._step_up(n)
        if self._failed is None or up <= n:
            return up
        halfway = self._allowed((n + self._failed) / 2)
        if halfway >= up:
            return up
        return halfway if halfway - n >= n / 8 else n

    def _decide(self, samples: int, seconds: Optional[float] = None,
                memory: Optional[float] = None, oom: bool = False, **_) -> int:
        n = self.batch_size
        if oom or (memory is not None and memory > self.high):
            return self._shrink(oom)
        self._ran = max(self._ran, n)
        if seconds and seconds > 0:
            r, rate = self._rates.get(n), samples / seconds
            self._rates[n] = rate if r is None else 0.8 * r + 0.2 * rate
        if self._hold > 0:
            self._hold -= 1
            return n
        self._calm = self._calm + 1 if memory is None or memory < self.low else 0
        self._here += 1
        if self._grew_from is not None and self._here >= self.patience:
            before, now = self._rates.get(self._grew_from), self._rates.get(n)
            back, self._grew_from = self._grew_from, None
            if before and now and now < before * (1 + self.min_gain):
                # The larger batch does not pay: back to the last size that did, and stay.
                self.max_size, self._calm, self._here = back, 0, 0
                return back
        if self._calm >= self.patience and n < self.max_size:
            up = self._grow(n)
            if up > n:
                self._grew_from, self._calm, self._here = n, 0, 0
                return up
        return n


class NoiseScale:
    """The gradient noise scale B_simple = tr(Sigma) / |G|^2 from the squared norms of the
    mean gradient over a small batch (b samples) and a big one (B samples) of the same step:
    E|G_b|^2 = |G|^2 + tr(Sigma)/b, so |G|^2 and tr(Sigma) follow from the two, each smoothed
    by an exponential moving average before the ratio (the ratio of noisy estimates is biased)."""

    def __init__(self, smoothing: float = 0.95):
        if not 0 <= smoothing < 1:
            raise ValueError("smoothing must be in [0, 1)")
        self.smoothing = smoothing
        self.g2 = self.trace = None

    def update(self, small: int, grad_sq_small: float, big: int, grad_sq_big: float) -> None:
        if not 0 < small < big:
            raise ValueError("need 0 < small < big")
        g2 = (big * grad_sq_big - small * grad_sq_small) / (big - small)
        trace = (grad_sq_small - grad_sq_big) / (1 / small - 1 / big)
        a = self.smoothing
        self.g2 = g2 if self.g2 is None else a * self.g2 + (1 - a) * g2
        self.trace = trace if self.trace is None else a * self.trace + (1 - a) * trace

    @property
    def b_simple(self) -> float:
        """The estimate (NaN before one, inf where the gradient's own norm is lost in noise)."""
        if self.g2 is None:
            return math.nan
        if self.g2 <= 0:
            return math.inf
        return max(0.0, self.trace) / self.g2

    def adascale_gain(self, batch_size: int, base_batch_size: int) -> float:
        """AdaScale's gain (Johnson et al. 2020) for batch_size against the size the learning
        rate was tuned at: (s2 + m2) / (s2/S + m2), S = batch_size / base, s2 the gradient
        variance at the base size, m2 = |G|^2; from 1 (all signal) to S (all noise)."""
        b = self.b_simple
        scale = batch_size / base_batch_size
        if math.isnan(b):
            return 1.0
        if math.isinf(b):
            return scale
        s2 = b / base_batch_size  # in units of |G|^2
        return (s2 + 1) / (s2 / scale + 1)


class NoiseScaleScaler(BatchSizeController):
    """Grows the batch toward the measured noise scale: every `every` steps with a measurement,
    the next allowed size at or below the smoothed B_simple, never down, at most `max_growth`
    times the current size at once. observe(samples, small=, grad_sq_small=, grad_sq_big=)
    with the squared norms noise_scale_step returns."""

    def __init__(self, start: int, max_size: int, *, every: int = 10, smoothing: float = 0.95,
                 max_growth: float = 2.0, warmup: int = 5, **limits):
        super().__init__(start, max_size=max_size, **limits)
        self.noise = NoiseScale(smoothing)
        self.every, self.max_growth, self.warmup = int(every), float(max_growth), int(warmup)
        self._measured = 0

    def _decide(self, samples: int, small: Optional[int] = None,
                grad_sq_small: Optional[float] = None, grad_sq_big: Optional[float] = None,
                **_) -> int:
        n = self.batch_size
        # The big point is this step's batch (an epoch's last may be short of n); a step that
        # brought no measurement decides nothing, so one estimate grows the size once.
        if not (small and grad_sq_small is not None and grad_sq_big is not None
                and small < samples):
            return n
        self.noise.update(small, grad_sq_small, samples, grad_sq_big)
        self._measured += 1
        if self._measured < self.warmup or self._measured % self.every:
            return n
        want = min(self.noise.b_simple, n * self.max_growth)
        if not want > n:
            return n
        return max(n, self._allowed(want))


class LRCoupling:
    """Sets the optimizer's learning rates for a batch size by a rule, from the rates it had at
    base_batch_size: "linear", "sqrt", "adascale" (needs a NoiseScale) or "none"; logs each
    change (logger "bso.adapt"; `say` replaces it, e.g. print)."""

    RULES = ("linear", "sqrt", "adascale", "none")

    def __init__(self, optimizer: torch.optim.Optimizer, base_batch_size: int,
                 rule: str = "linear", noise: Optional[NoiseScale] = None,
                 say: Optional[Callable[[str], None]] = None):
        if rule not in self.RULES:
            raise ValueError("rule must be one of %s, not %r" % (", ".join(self.RULES), rule))
        if rule == "adascale" and noise is None:
            raise ValueError("the adascale rule needs a NoiseScale (e.g. NoiseScaleScaler.noise)")
        if base_batch_size < 1:
            raise ValueError("base_batch_size must be positive")
        self.optimizer, self.base, self.rule, self.noise = optimizer, base_batch_size, rule, noise
        self.base_lrs = [g["lr"] for g in optimizer.param_groups]
        self.say = say or log.info
        self.batch_size = base_batch_size

    def factor(self, batch_size: int) -> float:
        ratio = batch_size / self.base
        if self.rule == "linear":
            return ratio
        if self.rule == "sqrt":
            return math.sqrt(ratio)
        if self.rule == "adascale":
            return self.noise.adascale_gain(batch_size, self.base)
        return 1.0

    def apply(self, batch_size: int) -> float:
        """Sets the rates for batch_size; returns the first group's new rate."""
        old = self.optimizer.param_groups[0]["lr"]
        f = self.factor(batch_size)
        for g, lr in zip(self.optimizer.param_groups, self.base_lrs):
            g["lr"] = lr * f
        new = self.optimizer.param_groups[0]["lr"]
        if batch_size != self.batch_size or new != old:
            self.say("batch size %d -> %d: lr %.6g -> %.6g (%s)"
                     % (self.batch_size, batch_size, old, new, self.rule))
        self.batch_size = batch_size
        return new


def _grad_sq(params) -> float:
    return float(sum(float((p.grad.detach().double() ** 2).sum())
                     for p in params if p.grad is not None))


def noise_scale_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                     loss_fn: Callable[..., torch.Tensor], batch, micro_batch: int,
                     step: bool = True):
    """accumulate_step over `batch` in micro-batches of micro_batch samples, also reading the
    squared gradient norm of the first micro-batch alone (the accumulated gradient after it, over
    its share) and of the whole batch: the two points NoiseScale needs, for two norms. Returns
    (loss, small, grad_sq_small, grad_sq_big); small is 0 for a single micro-batch."""
    params = [p for p in model.parameters() if p.requires_grad]
    first = {}

    def read_first(samples: int, share: float) -> None:
        if not first and share < 1:
            first["small"], first["sq"] = samples, _grad_sq(params) / (share * share)

    total = accumulate_step(model, optimizer, loss_fn, batch, micro_batch, step=False,
                            after_micro=read_first)
    big_sq = _grad_sq(params)
    if step:
        optimizer.step()
    return total, first.get("small", 0), first.get("sq", math.nan), big_sq
