"""Gradient accumulation plans (libbso's bso_accum_plan): an effective batch size as an exact
number of micro-batches that fit the device.

    micro, steps = bso.accumulate.plan(effective=1024, max_micro=96)   # (64, 16)
"""
import ctypes
from typing import Tuple

from . import _native as N
from .exceptions import BSOConfigError

BSO_ERANGE = -6  # bso/error.h


def plan(effective: int, max_micro: int, min_micro: int = 0) -> Tuple[int, int]:
    """(micro_batch, steps) with micro_batch * steps == effective and micro_batch <= max_micro,
    the fewest steps. min_micro (default: half of max_micro) is the smallest micro-batch worth
    using; when only smaller ones divide `effective`, BSOConfigError names the nearest
    effective sizes that do split."""
    out = N.AccumPlan()
    below, above = ctypes.c_int64(), ctypes.c_int64()
    rc = N.lib.bso_accum_plan(int(effective), int(max_micro), int(min_micro), ctypes.byref(out),
                              ctypes.byref(below), ctypes.byref(above))
    if rc == BSO_ERANGE:
        raise BSOConfigError(
            "batch size %d cannot be split exactly into micro-batches of %d to %d samples; "
            "the nearest that can: %s" % (
                effective, min_micro or (max_micro + 1) // 2, max_micro,
                " or ".join(str(v) for v in (below.value, above.value) if v > 0)))
    if rc != 0:
        raise BSOConfigError("no accumulation plan for batch size %r with micro-batches of at "
                             "most %r (both must be positive)" % (effective, max_micro))
    return out.micro_batch, out.steps
