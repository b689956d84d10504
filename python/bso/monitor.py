"""Energy measurement windows over libbso's monitor (NVML counter or sampled power, RAPL, or a
labelled estimate)."""
import ctypes
import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

from . import _native as N
from .exceptions import BSOConfigError


@dataclass
class Measurement:
    """What one window measured. total_energy is the job's energy in joules: the GPUs', else
    the CPU packages' (RAPL), else an estimate; `source` says which, and `estimated` is true
    only for the estimate. utilization: the GPUs' mean busy share over the window in percent
    (NVML), or None where it is not reported."""
    time: float
    total_energy: float
    source: str
    estimated: bool
    gpu_energy: Dict[int, float] = field(default_factory=dict)
    gpu_source: Dict[int, str] = field(default_factory=dict)
    cpu_energy: float = 0.0
    cpu_source: str = "none"
    utilization: Optional[float] = None


@dataclass
class GPU:
    index: int
    name: str
    uuid: str
    max_power_limit_w: float
    power_limit_w: float
    source: str


def _source(code):
    return N.SOURCES[code] if 0 <= code < len(N.SOURCES) else "none"


class EnergyMonitor:
    """Measures time and energy between begin_window(name) and end_window(name).

    gpu_indices picks NVML GPUs (default: CUDA_VISIBLE_DEVICES, else all); assumed_power_w
    (or BSO_ASSUMED_POWER_W) is used, labelled as an estimate, only when nothing can be
    measured. Raises BSOConfigError when nothing can be measured and no power is declared.
    """

    def __init__(self, gpu_indices: Optional[Sequence[int]] = None, cpu: bool = True,
                 assumed_power_w: Optional[float] = None, sample_ms: int = 50):
        opt = N.MonitorOptions()
        N.lib.bso_monitor_options_init(ctypes.byref(opt))
        if gpu_indices is not None:
            self._idx = (ctypes.c_int * len(gpu_indices))(*gpu_indices)
            opt.gpus = ctypes.cast(self._idx, ctypes.POINTER(ctypes.c_int))
            opt.n_gpus = len(gpu_indices)
        opt.cpu = cpu
        opt.assumed_power_w = float(assumed_power_w or 0)
        opt.sample_ms = sample_ms
        handle = ctypes.c_void_p()
        err = ctypes.create_string_buffer(512)
        rc = N.lib.bso_monitor_new(ctypes.byref(opt), ctypes.byref(handle), err, len(err))
        if rc != 0:
            raise BSOConfigError(err.value.decode())
        self._m = handle
        self.gpus: List[GPU] = []
        for i in range(N.lib.bso_monitor_gpu_count(self._m)):
            g = N.GpuInfo()
            N.lib.bso_monitor_gpu(self._m, i, ctypes.byref(g))
            self.gpus.append(GPU(g.index, g.name.decode(), g.uuid.decode(), g.max_power_limit_w,
                                 g.power_limit_w, _source(g.source)))

    @property
    def gpu_indices(self) -> List[int]:
        return [g.index for g in self.gpus]

    @property
    def max_power_w(self) -> float:
        """Each GPU's largest power limit in whole watts, summed (Zeus's max_power)."""
        return N.lib.bso_monitor_max_power_w(self._m)

    @property
    def source(self) -> str:
        return _source(N.lib.bso_monitor_source(self._m))

    @property
    def cpu_source(self) -> str:
        return _source(N.lib.bso_monitor_cpu_source(self._m))

    def begin_window(self, name: str) -> None:
        if N.lib.bso_monitor_begin(self._m, name.encode()) != 0:
            raise RuntimeError(N.lib.bso_monitor_errmsg(self._m).decode())

    def end_window(self, name: str) -> Measurement:
        out = N.Measurement()
        if N.lib.bso_monitor_end(self._m, name.encode(), ctypes.byref(out)) != 0:
            raise RuntimeError(N.lib.bso_monitor_errmsg(self._m).decode())
        return Measurement(
            time=out.time_s, total_energy=out.total_energy_j, source=_source(out.source),
            estimated=out.estimated,
            gpu_energy={self.gpus[i].index: out.gpu_energy_j[i] for i in range(out.n_gpus)},
            gpu_source={self.gpus[i].index: _source(out.gpu_source[i])
                        for i in range(out.n_gpus)},
            cpu_energy=out.cpu_energy_j, cpu_source=_source(out.cpu_source),
            utilization=None if math.isnan(out.utilization_pct) else out.utilization_pct)

    def close(self) -> None:
        if getattr(self, "_m", None):
            N.lib.bso_monitor_free(self._m)
            self._m = None

    def __del__(self):
        self.close()
