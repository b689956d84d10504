"""ctypes bindings to libbso (include/bso/client.h, monitor.h, power.h, probe.h, accumulate.h).

The library is found through BSO_LIBRARY (a path), then beside this package, then the system's
library path.
"""
import ctypes
import ctypes.util
import os

_HERE = os.path.dirname(os.path.abspath(__file__))

MAX_GPUS = 32
SOURCES = ["none", "nvml-counter", "nvml-power", "rapl", "estimate"]


def _find():
    tried = []
    env = os.environ.get("BSO_LIBRARY")
    if env:
        return env, tried
    for name in ("libbso.so", "libbso.so.0"):
        path = os.path.join(_HERE, name)
        tried.append(path)
        if os.path.exists(path):
            return path, tried
    found = ctypes.util.find_library("bso")
    return (found or "libbso.so.0"), tried


def load():
    path, tried = _find()
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "cannot load libbso (%s). Set BSO_LIBRARY to the path of libbso.so, or install it "
            "(looked in: %s, then the system library path)" % (e, ", ".join(tried) or path)
        ) from None


class ReportAnswer(ctypes.Structure):
    _fields_ = [("stop_train", ctypes.c_bool), ("converged", ctypes.c_bool),
                ("message", ctypes.c_char * 512)]


class RunProgress(ctypes.Structure):
    _fields_ = [("samples", ctypes.c_int64), ("mean_batch_size", ctypes.c_double)]


class AccumPlan(ctypes.Structure):
    _fields_ = [("micro_batch", ctypes.c_int64), ("steps", ctypes.c_int64)]


class ProbeSearch(ctypes.Structure):  # include/bso/probe.h
    _fields_ = [("sizes", ctypes.c_int64 * 256), ("n", ctypes.c_size_t), ("fit", ctypes.c_long),
                ("unfit", ctypes.c_long), ("pending", ctypes.c_long), ("tries", ctypes.c_int)]


class GpuInfo(ctypes.Structure):
    _fields_ = [("index", ctypes.c_int), ("name", ctypes.c_char * 96),
                ("uuid", ctypes.c_char * 96), ("max_power_limit_w", ctypes.c_double),
                ("power_limit_w", ctypes.c_double), ("source", ctypes.c_int)]


class MonitorOptions(ctypes.Structure):
    _fields_ = [("gpus", ctypes.POINTER(ctypes.c_int)), ("n_gpus", ctypes.c_size_t),
                ("cpu", ctypes.c_bool), ("assumed_power_w", ctypes.c_double),
                ("sample_ms", ctypes.c_int)]


class Measurement(ctypes.Structure):
    _fields_ = [("time_s", ctypes.c_double), ("total_energy_j", ctypes.c_double),
                ("source", ctypes.c_int), ("estimated", ctypes.c_bool),
                ("n_gpus", ctypes.c_size_t), ("gpu_energy_j", ctypes.c_double * MAX_GPUS),
                ("gpu_source", ctypes.c_int * MAX_GPUS), ("cpu_energy_j", ctypes.c_double),
                ("cpu_source", ctypes.c_int), ("utilization_pct", ctypes.c_double)]


POWER_MAX_LIMITS = 16


class PowerOptions(ctypes.Structure):  # include/bso/power.h
    _fields_ = [("eta", ctypes.c_double), ("max_power_w", ctypes.c_double),
                ("n_limits", ctypes.c_int), ("warmup_s", ctypes.c_double),
                ("window_s", ctypes.c_double), ("min_steps", ctypes.c_int)]


class PowerPoint(ctypes.Structure):
    _fields_ = [("limit_w", ctypes.c_double), ("samples_per_s", ctypes.c_double),
                ("power_w", ctypes.c_double)]


class PowerResult(ctypes.Structure):
    _fields_ = [("n", ctypes.c_size_t), ("points", PowerPoint * POWER_MAX_LIMITS),
                ("chosen", ctypes.c_size_t), ("limit_w", ctypes.c_double),
                ("max_power_w", ctypes.c_double), ("eta", ctypes.c_double)]


lib = load()
_p = ctypes.c_void_p
_s = ctypes.c_char_p
_i64 = ctypes.c_int64
for name, res, args in [
    ("bso_strerror", _s, [ctypes.c_int]),
    ("bso_client_new", ctypes.c_int, [_s, ctypes.POINTER(_p)]),
    ("bso_client_free", None, [_p]),
    ("bso_client_set_timeout_ms", None, [_p, ctypes.c_long]),
    ("bso_client_set_retries", None, [_p, ctypes.c_int]),
    ("bso_client_set_token", ctypes.c_int, [_p, _s]),
    ("bso_client_set_cacert", ctypes.c_int, [_p, _s]),
    ("bso_client_errmsg", _s, [_p]),
    ("bso_client_http_status", ctypes.c_int, [_p]),
    ("bso_client_register", ctypes.c_int, [_p, _s, ctypes.c_char_p, ctypes.POINTER(ctypes.c_bool)]),
    ("bso_client_next", ctypes.c_int, [_p, _s, ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    ("bso_client_report", ctypes.c_int, [_p, _s, _i64, _i64, ctypes.c_double, ctypes.c_double,
                                         ctypes.c_double, _i64, _s, ctypes.POINTER(ReportAnswer)]),
    ("bso_client_report_progress", ctypes.c_int,
     [_p, _s, _i64, _i64, ctypes.c_double, ctypes.c_double, ctypes.c_double, _i64, _s,
      ctypes.POINTER(RunProgress), ctypes.POINTER(ReportAnswer)]),
    ("bso_client_end_trial", ctypes.c_int, [_p, _s, _i64, _i64]),
    ("bso_client_delete", ctypes.c_int, [_p, _s]),
    ("bso_client_get", ctypes.c_int, [_p, _s]),
    ("bso_client_post", ctypes.c_int, [_p, _s, _s]),
    ("bso_probe_search_init", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_i64),
                                             ctypes.c_size_t]),
    ("bso_probe_search_next", _i64, [ctypes.c_void_p]),
    ("bso_probe_search_record", ctypes.c_int, [ctypes.c_void_p, _i64, ctypes.c_bool]),
    ("bso_probe_search_largest", _i64, [ctypes.c_void_p]),
    ("bso_accum_plan", ctypes.c_int, [_i64, _i64, _i64, ctypes.POINTER(AccumPlan),
                                      ctypes.POINTER(_i64), ctypes.POINTER(_i64)]),
    ("bso_client_body", _s, [_p]),
    ("bso_energy_source_name", _s, [ctypes.c_int]),
    ("bso_monitor_options_init", None, [ctypes.POINTER(MonitorOptions)]),
    ("bso_monitor_new", ctypes.c_int, [ctypes.POINTER(MonitorOptions), ctypes.POINTER(_p),
                                       ctypes.c_char_p, ctypes.c_size_t]),
    ("bso_monitor_free", None, [_p]),
    ("bso_monitor_errmsg", _s, [_p]),
    ("bso_monitor_gpu_count", ctypes.c_size_t, [_p]),
    ("bso_monitor_gpu", ctypes.c_int, [_p, ctypes.c_size_t, ctypes.POINTER(GpuInfo)]),
    ("bso_monitor_max_power_w", ctypes.c_double, [_p]),
    ("bso_monitor_source", ctypes.c_int, [_p]),
    ("bso_monitor_cpu_source", ctypes.c_int, [_p]),
    ("bso_monitor_begin", ctypes.c_int, [_p, _s]),
    ("bso_monitor_end", ctypes.c_int, [_p, _s, ctypes.POINTER(Measurement)]),
    ("bso_power_options_init", None, [ctypes.POINTER(PowerOptions)]),
    ("bso_power_tuner_new", ctypes.c_int, [_p, ctypes.POINTER(PowerOptions), ctypes.POINTER(_p),
                                           ctypes.c_char_p, ctypes.c_size_t]),
    ("bso_power_tuner_free", None, [_p]),
    ("bso_power_tuner_start", ctypes.c_int, [_p]),
    ("bso_power_tuner_step", ctypes.c_int, [_p, ctypes.c_double]),
    ("bso_power_tuner_finish", ctypes.c_int, [_p]),
    ("bso_power_tuner_apply", ctypes.c_int, [_p, ctypes.c_double]),
    ("bso_power_tuner_state", ctypes.c_int, [_p]),
    ("bso_power_tuner_errmsg", _s, [_p]),
    ("bso_power_tuner_limits", ctypes.c_size_t, [_p, ctypes.POINTER(ctypes.c_double),
                                                 ctypes.c_size_t]),
    ("bso_power_tuner_result", ctypes.c_int, [_p, ctypes.POINTER(PowerResult)]),
    ("bso_power_state_name", _s, [ctypes.c_int]),
    ("bso_power_restore", ctypes.c_int, []),
]:
    fn = getattr(lib, name)
    fn.restype = res
    fn.argtypes = args
