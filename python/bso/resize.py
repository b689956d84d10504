"""A batch size that changes during an epoch, for PyTorch's DataLoader (through bso.torch).

    sampler = ResizableBatchSampler(RandomSampler(data), batch_size=64)
    loader = ResizableLoader(DataLoader(data, batch_sampler=sampler, num_workers=2))
    for x, y in loader:
        ...
        loader.set_batch_size(128)           # from the next batch the loader draws
        loader.set_batch_size(128, exact=True)  # from the very next batch this loop sees

The sampler draws the epoch's order from the sampler it wraps (RandomSampler,
SequentialSampler, DistributedSampler...) once, at the start of the epoch, and cuts it into
batches as they are asked for, each of the size current at that moment: every sample of the
epoch comes exactly once whatever the resizes (with drop_last=False; drop_last drops the
epoch's last, short batch).

Prefetching: a DataLoader with num_workers > 0 asks its batch sampler for batches ahead of the
training loop (prefetch_factor x num_workers of them), so a plain set_batch_size reaches the loop
only after the batches already asked for. With num_workers=0 it reaches the next batch. The
ResizableLoader's exact mode throws the prefetched batches away (their samples are not lost:
the sampler rewinds to the first sample the loop has not seen) and starts the loader again
from there, at the cost of refilling the prefetch queue (and of restarting the workers unless
the DataLoader has persistent_workers=True).

Resume: state_dict() holds the epoch's order and how far the loop got; load_state_dict() makes
the next iteration yield exactly the batches that were still to come (at the batch size saved).
"""
import collections
from typing import Any, Dict, Iterator, List, Optional

from torch.utils.data import Sampler


class ResizableBatchSampler(Sampler):
    """Batches of indices from `sampler`, of a size that may change between any two batches."""

    def __init__(self, sampler, batch_size: int, drop_last: bool = False):
        _check_size(batch_size)
        self.sampler = sampler
        self.drop_last = bool(drop_last)
        self._batch_size = int(batch_size)
        self._order: Optional[List[int]] = None  # this epoch's indices, once it has begun
        self._drawn = 0       # samples handed to the DataLoader this epoch
        self._seen = 0        # samples the training loop received (see ResizableLoader)
        self._pending = collections.deque()  # sizes of batches drawn but not yet seen
        self._resume = False  # the next __iter__ continues the epoch instead of starting one

    @property
    def batch_size(self) -> int:
        """The size of the next batch to be drawn."""
        return self._batch_size

    def set_batch_size(self, batch_size: int) -> None:
        """From the next batch drawn on (see the module's note on prefetching)."""
        _check_size(batch_size)
        self._batch_size = int(batch_size)

    def __iter__(self) -> Iterator[List[int]]:
        if not self._resume or self._order is None:
            self._order = [int(i) for i in self.sampler]
            self._drawn = self._seen = 0
        self._resume = False
        self._pending.clear()
        order = self._order
        while self._drawn < len(order):
            size = min(self._batch_size, len(order) - self._drawn)
            if size < self._batch_size and self.drop_last:
                break
            batch = order[self._drawn:self._drawn + size]
            self._drawn += size
            self._pending.append(size)
            yield batch
        self._order = None  # the epoch is over: the next iteration draws a new order

    def __len__(self) -> int:
        """Batches in an epoch at the current batch size (fewer or more after resizes)."""
        n = len(self.sampler)
        if self.drop_last:
            return n // self._batch_size
        return (n + self._batch_size - 1) // self._batch_size

    # What the ResizableLoader tells the sampler.
    def _batch_seen(self) -> None:
        if self._pending:
            self._seen += self._pending.popleft()

    def _rewind_to_seen(self) -> None:
        """The next __iter__ goes on from the first sample the loop has not received."""
        if self._order is not None:
            self._drawn = self._seen
            self._pending.clear()
            self._resume = True

    def _position(self, exact: bool) -> int:
        return self._seen if exact else self._drawn

    def state_dict(self, _exact: bool = False) -> Dict[str, Any]:
        """The epoch's order and the position reached (samples drawn; through a
        ResizableLoader, samples the loop received), and the batch size."""
        return {"order": list(self._order) if self._order is not None else None,
                "position": self._position(_exact), "batch_size": self._batch_size,
                "drop_last": self.drop_last}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """The next iteration yields the batches that were still to come when state was saved."""
        order, position = state.get("order"), int(state.get("position", 0))
        if order is not None and not 0 <= position <= len(order):
            raise ValueError("position %d is outside the saved epoch of %d samples"
                             % (position, len(order)))
        self.set_batch_size(int(state["batch_size"]))
        self.drop_last = bool(state.get("drop_last", self.drop_last))
        self._order = [int(i) for i in order] if order is not None else None
        self._drawn = self._seen = position
        self._pending.clear()
        self._resume = order is not None


class ResizableLoader:
    """Iterates a DataLoader whose batch_sampler is a ResizableBatchSampler, keeping count of
    the samples the loop received: for exact resizes and exact mid-epoch checkpoints."""

    def __init__(self, loader):
        if not isinstance(getattr(loader, "batch_sampler", None), ResizableBatchSampler):
            raise TypeError("the DataLoader needs batch_sampler=ResizableBatchSampler(...)")
        self.loader = loader
        self.sampler: ResizableBatchSampler = loader.batch_sampler
        self._restart = False

    @property
    def batch_size(self) -> int:
        return self.sampler.batch_size

    def set_batch_size(self, batch_size: int, exact: bool = False) -> None:
        """From the next batch drawn; with exact, from the next batch this loop receives."""
        self.sampler.set_batch_size(batch_size)
        if exact:
            self.sampler._rewind_to_seen()
            self._restart = True

    def __iter__(self):
        while True:
            self._restart = False
            for batch in self.loader:
                self.sampler._batch_seen()
                yield batch
                if self._restart:
                    break  # the prefetched batches go; the sampler rewound to the loop
            else:
                return

    def __len__(self) -> int:
        return len(self.sampler)

    def state_dict(self) -> Dict[str, Any]:
        return self.sampler.state_dict(_exact=True)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        self.sampler.load_state_dict(state)


def _check_size(batch_size) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError("batch_size must be a positive integer, not %r" % (batch_size,))
