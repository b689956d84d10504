"""Training steps over micro-batches, for PyTorch (imported through bso.torch).

* accumulate_step: one optimizer step over an effective batch, in micro-batches, with the same
  gradients as one big batch (each micro-batch's mean loss weighted by its share; the last
  micro-batch may be smaller).
* AdaptiveMicroBatcher: the same, shrinking the micro-batch on out-of-memory (the step is
  retried from scratch: no sample is lost, no gradient counted twice) and growing it again
  after a stretch of steps with memory to spare. The effective batch size, and so the
  optimisation the server measures, never changes.
* ControlledStep: a step for a batch size that changes during the run (bso/adapt.py): it
  measures the step for the controller, splits a batch larger than fits into micro-batches,
  and retries a step that runs out of memory (smaller, under a MemoryScaler).
* scale_lr: the linear and square-root rules for a learning rate tuned at another batch size.
"""
import math
import time
from typing import Callable, Optional, Sequence, Tuple, Type

import torch


def scale_lr(lr: float, batch_size: int, reference_batch_size: int,
             rule: str = "linear") -> float:
    """The learning rate for batch_size given one tuned at reference_batch_size: "linear"
    (Goyal et al.) or "sqrt" (Krizhevsky; often better for adaptive optimizers)."""
    if batch_size <= 0 or reference_batch_size <= 0:
        raise ValueError("batch sizes must be positive")
    ratio = batch_size / reference_batch_size
    if rule == "linear":
        return lr * ratio
    if rule == "sqrt":
        return lr * math.sqrt(ratio)
    raise ValueError("rule must be 'linear' or 'sqrt', not %r" % (rule,))


def _split(batch: Sequence[torch.Tensor], start: int, stop: int) -> Tuple[torch.Tensor, ...]:
    return tuple(t[start:stop] for t in batch)


def accumulate_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    loss_fn: Callable[..., torch.Tensor], batch: Sequence[torch.Tensor],
                    micro_batch: int, step: bool = True,
                    after_micro: Optional[Callable[[int, float], None]] = None) -> float:
    """One optimizer step over `batch` (tensors whose first dimension is the effective batch:
    inputs first, then what loss_fn takes besides the output, e.g. targets), computed in
    micro-batches of at most micro_batch samples. loss_fn(output, *rest) must return the mean
    over its samples. Returns the batch's mean loss. Gradients are zeroed first.
    after_micro(samples, share), if given, runs after each micro-batch's backward pass."""
    if micro_batch <= 0:
        raise ValueError("micro_batch must be positive")
    n = batch[0].shape[0]
    optimizer.zero_grad(set_to_none=True)
    total = 0.0
    for start in range(0, n, micro_batch):
        part = _split(batch, start, min(start + micro_batch, n))
        share = part[0].shape[0] / n
        loss = loss_fn(model(part[0]), *part[1:]) * share
        loss.backward()
        total += float(loss.detach())
        if after_micro is not None:
            after_micro(part[0].shape[0], share)
    if step:
        optimizer.step()
    return total


def default_oom_errors() -> Tuple[Type[BaseException], ...]:
    """The exceptions torch raises for out-of-memory (RuntimeError where it has none)."""
    errors = [getattr(torch.cuda, "OutOfMemoryError", None), getattr(torch, "OutOfMemoryError",
                                                                      None)]
    return tuple(e for e in errors if e is not None) or (RuntimeError,)


def cuda_memory_fraction() -> Optional[float]:
    """The peak memory PyTorch allocated on the current CUDA device since its peak was last
    reset (torch.cuda.reset_peak_memory_stats), as a fraction of the device; None without
    CUDA. What MemoryScaler's watermarks compare with."""
    if not torch.cuda.is_available():
        return None
    dev = torch.cuda.current_device()
    total = torch.cuda.get_device_properties(dev).total_memory
    return torch.cuda.max_memory_allocated(dev) / total


def _cuda_headroom(fraction: float) -> bool:
    used = cuda_memory_fraction()
    return used is None or used < fraction


class _Snapshot:
    """What a step that runs out of memory must put back before it is retried: the model's
    buffers (e.g. batch-norm statistics), the random state, and no gradient."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.buffers = [b.detach().clone() for b in model.buffers()]
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None

    def restore(self, optimizer: torch.optim.Optimizer) -> None:
        optimizer.zero_grad(set_to_none=True)  # the failed attempt's part
        with torch.no_grad():
            for b, saved in zip(self.model.buffers(), self.buffers):
                b.copy_(saved)
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
            torch.cuda.empty_cache()


class AdaptiveMicroBatcher:
    """Keeps the effective batch size fixed while the micro-batch follows the memory: halved
    on out-of-memory (down to min_micro, then the error is raised), doubled back (up to
    max_micro) after grow_after steps in a row without one, when headroom() says there is
    memory to spare (default: on CUDA, the step's peak below 80% of the device; on CPU,
    always). The model's buffers (e.g. batch-norm statistics) and the random state are
    restored before a retry, so a step that hit out-of-memory leaves no trace."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 loss_fn: Callable[..., torch.Tensor], micro_batch: int, *,
                 max_micro: Optional[int] = None, min_micro: int = 1, grow_after: int = 50,
                 oom_errors: Optional[Tuple[Type[BaseException], ...]] = None,
                 headroom: Optional[Callable[[], bool]] = None):
        if micro_batch < min_micro or min_micro < 1:
            raise ValueError("need 1 <= min_micro <= micro_batch")
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.micro_batch = micro_batch
        self.max_micro = max_micro or micro_batch
        self.min_micro = min_micro
        self.grow_after = grow_after
        self.oom_errors = oom_errors or default_oom_errors()
        self.headroom = headroom or (lambda: _cuda_headroom(0.8))
        self.ooms = 0
        self.grown = 0
        self._calm = 0

    def step(self, batch: Sequence[torch.Tensor]) -> float:
        """One optimizer step over the effective batch; the batch's mean loss."""
        snapshot = _Snapshot(self.model)
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        while True:
            try:
                loss = accumulate_step(self.model, self.optimizer, self.loss_fn, batch,
                                       self.micro_batch, step=False)
                break
            except self.oom_errors:
                snapshot.restore(self.optimizer)
                if self.micro_batch <= self.min_micro:
                    raise
                self.micro_batch = max(self.min_micro, self.micro_batch // 2)
                self.ooms += 1
                self._calm = 0
        self.optimizer.step()
        self._calm += 1
        if (self._calm >= self.grow_after and self.micro_batch < self.max_micro
                and self.headroom()):
            self.micro_batch = min(self.max_micro, self.micro_batch * 2)
            self.grown += 1
            self._calm = 0
        return loss


class ControlledStep:
    """Training steps for a batch size that changes during the run (bso/adapt.py): step(batch)
    runs one optimizer step over the batch the loader gave and returns the controller's next
    batch size. It times the step and reads its memory (memory(), default
    cuda_memory_fraction: None on a CPU) for the controller. A batch larger than max_micro
    (what fits: the probe's largest size) is trained in micro-batches of at most max_micro,
    with the gradients of the whole batch. A step that runs out of memory is retried on the
    same batch after its model buffers and random state are put back (no sample lost, no
    gradient counted twice): with a MemoryScaler the batch size shrinks and the retry is cut
    into micro-batches of the new size; with other controllers the batch size is theirs to keep
    and only the micro-batch halves (then stays, as max_micro). Raises the out-of-memory error
    when one sample does not fit."""

    def __init__(self, controller, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 loss_fn: Callable[..., torch.Tensor], *, max_micro: Optional[int] = None,
                 oom_errors: Optional[Tuple[Type[BaseException], ...]] = None,
                 memory: Optional[Callable[[], Optional[float]]] = None):
        if max_micro is not None and max_micro < 1:
            raise ValueError("max_micro must be positive")
        self.controller = controller
        self.model, self.optimizer, self.loss_fn = model, optimizer, loss_fn
        self.max_micro = max_micro
        self.oom_errors = oom_errors or default_oom_errors()
        self.memory = memory or cuda_memory_fraction
        self.ooms = 0
        self.loss = float("nan")  # the last step's mean loss

    def step(self, batch: Sequence[torch.Tensor], **measured) -> int:
        """One step over batch; measured (e.g. loss) goes to the controller as well."""
        n = batch[0].shape[0]
        micro = min(n, self.max_micro or n)
        snapshot = _Snapshot(self.model)
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()
        began, failed = time.perf_counter(), False
        while True:
            try:
                self.loss = accumulate_step(self.model, self.optimizer, self.loss_fn, batch,
                                            micro, step=False)
                break
            except self.oom_errors:
                snapshot.restore(self.optimizer)
                if micro <= 1:
                    raise
                self.ooms += 1
                failed = True
                shrink = getattr(self.controller, "out_of_memory", None)
                smaller = shrink() if shrink is not None else micro // 2
                micro = max(1, min(smaller, micro // 2))
                if shrink is None:
                    self.max_micro = micro  # what failed does not fit: stay below it
        self.optimizer.step()
        if failed:  # the retry's timing and memory say nothing of the size: count it only
            return self.controller.observe(samples=n, loss=self.loss, **measured)
        return self.controller.observe(samples=n, seconds=time.perf_counter() - began,
                                       memory=self.memory(), loss=self.loss, **measured)
