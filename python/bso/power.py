"""GPU power limits tuned with the batch size (libbso's tuner, include/bso/power.h).

During the first epoch of a batch size the job has not profiled, PowerTuner steps the
monitor's GPUs through a few power limits, measures throughput (from the steps you report) and
power at each, and keeps the limit of least cost per sample,
(eta * power + (1 - eta) * max_power) / throughput. Original limits come back when the tuner
is closed, at exit, and on SIGTERM and other fatal signals; `bso gpus --restore-power` puts back
what a killed process left. Setting limits needs root or CAP_SYS_ADMIN: without it the tuner is
"off" and says why, and training goes on untouched.

BatchSizeOptimizer(..., optimize_power=True) drives it for you; on its own:

    tuner = PowerTuner(monitor, eta=0.5)
    tuner.start()
    for batch in loader:
        train_step(batch)
        tuner.step(len(batch))       # "profiling" until "done" (or "off")
    tuner.result()                   # the per-limit table and the chosen limit
    tuner.close()                    # the original limits again
"""
import ctypes
from typing import List, Optional

from . import _native as N
from .exceptions import BSOConfigError, BSORuntimeError
from .monitor import EnergyMonitor

PROFILING, DONE, OFF = "profiling", "done", "off"


class PowerTuner:
    """n_limits limits from the top of the GPUs' range down; warmup_s skipped after each change;
    at least window_s and min_steps measured per limit. max_power_w: the job's max_power on
    these GPUs (default: the monitor's). Raises BSOConfigError when no GPU's power is measured
    by NVML (nothing to tune)."""

    def __init__(self, monitor: EnergyMonitor, eta: float = 0.5, *,
                 max_power_w: Optional[float] = None, n_limits: int = 5, warmup_s: float = 1.0,
                 window_s: float = 3.0, min_steps: int = 3):
        opt = N.PowerOptions()
        N.lib.bso_power_options_init(ctypes.byref(opt))
        opt.eta = eta
        opt.max_power_w = float(max_power_w or 0)
        opt.n_limits = n_limits
        opt.warmup_s = warmup_s
        opt.window_s = window_s
        opt.min_steps = min_steps
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = N.lib.bso_power_tuner_new(monitor._m, ctypes.byref(opt), ctypes.byref(handle), err,
                                       len(err))
        if rc != 0:
            raise BSOConfigError(err.value.decode())
        self._t = handle
        self._monitor = monitor  # it must outlive the tuner

    def _state(self, rc: int) -> str:
        if rc < 0:
            raise BSORuntimeError(N.lib.bso_power_tuner_errmsg(self._t).decode())
        return N.lib.bso_power_state_name(rc).decode()

    @property
    def state(self) -> str:
        return self._state(N.lib.bso_power_tuner_state(self._t))

    @property
    def message(self) -> str:
        """Why the tuner is off, or why its last call failed."""
        return N.lib.bso_power_tuner_errmsg(self._t).decode()

    @property
    def limits(self) -> List[float]:
        buf = (ctypes.c_double * N.POWER_MAX_LIMITS)()
        n = N.lib.bso_power_tuner_limits(self._t, buf, N.POWER_MAX_LIMITS)
        return list(buf[:n])

    def start(self) -> str:
        return self._state(N.lib.bso_power_tuner_start(self._t))

    def apply(self, limit_w: float) -> str:
        """Sets a limit known from an earlier run, without profiling."""
        return self._state(N.lib.bso_power_tuner_apply(self._t, float(limit_w)))

    def finish(self) -> str:
        """Ends profiling early (the run ends): the cheapest of the limits measured so far when
        there are at least two ("done"), else the original limits back ("off")."""
        return self._state(N.lib.bso_power_tuner_finish(self._t))

    def step(self, samples: float) -> str:
        return self._state(N.lib.bso_power_tuner_step(self._t, float(samples)))

    def result(self) -> Optional[dict]:
        """{"power_limit", "measurements": [{"power_limit", "samples_per_s", "power"}...]}
        once profiling is done, else None."""
        r = N.PowerResult()
        if N.lib.bso_power_tuner_result(self._t, ctypes.byref(r)) != 0:
            return None
        return {"power_limit": r.limit_w, "eta": r.eta, "max_power": r.max_power_w,
                "measurements": [{"power_limit": p.limit_w, "samples_per_s": p.samples_per_s,
                                  "power": p.power_w} for p in r.points[:r.n]]}

    def close(self) -> None:
        """Puts the original limits back."""
        if getattr(self, "_t", None):
            N.lib.bso_power_tuner_free(self._t)
            self._t = None

    def __del__(self):
        self.close()


def restore_all() -> int:
    """Puts back every limit this process changed; returns how many GPUs."""
    return N.lib.bso_power_restore()
