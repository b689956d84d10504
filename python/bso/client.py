"""A thin client for a BSO server over libbso (one reused connection, bounded retries)."""
import ctypes
import json
import re
import urllib.parse
from typing import Any, Optional, Tuple

from . import _native as N
from .exceptions import BSONoBatchSizeError, BSORuntimeError, BSOUnreachableError

BSO_ENET = -10  # bso/error.h: the server could not be reached


def shown_url(url: str) -> str:
    """url (or a comma-separated list of them) as logs show it: credentials in it
    (http://TOKEN@host) hidden, as libbso does."""
    return ",".join(re.sub(r"^(\s*[A-Za-z][A-Za-z0-9+.-]*://)[^/?#,]*@", r"\1***@", part)
                    for part in url.split(","))


class Client:
    """token: the API token (default: BSO_TOKEN); cacert: a PEM file of CA certificates for an
    https:// server (default: BSO_CACERT, else the system's)."""

    def __init__(self, server_url: str, timeout_s: float = 10.0, retries: int = 3,
                 token: Optional[str] = None, cacert: Optional[str] = None):
        handle = ctypes.c_void_p()
        if N.lib.bso_client_new(server_url.encode(), ctypes.byref(handle)) != 0:
            raise BSORuntimeError("cannot create a client for %r" % shown_url(server_url))
        self._c = handle
        N.lib.bso_client_set_timeout_ms(self._c, int(timeout_s * 1000))
        N.lib.bso_client_set_retries(self._c, retries)
        if token is not None and N.lib.bso_client_set_token(self._c, token.encode()) != 0:
            raise BSORuntimeError("the token cannot be sent (line breaks?)")
        if cacert is not None:
            N.lib.bso_client_set_cacert(self._c, cacert.encode())

    def _check(self, rc: int) -> None:
        if rc == BSO_ENET:
            raise BSOUnreachableError(N.lib.bso_client_errmsg(self._c).decode())
        if rc != 0:
            raise BSORuntimeError(N.lib.bso_client_errmsg(self._c).decode())

    def body(self) -> Any:
        return json.loads(N.lib.bso_client_body(self._c).decode() or "null")

    def register(self, spec: dict) -> Tuple[str, bool]:
        job_id = ctypes.create_string_buffer(256)
        created = ctypes.c_bool()
        self._check(N.lib.bso_client_register(self._c, json.dumps(spec).encode(), job_id,
                                              ctypes.byref(created)))
        return job_id.value.decode(), created.value

    def next(self, job_id: str) -> Tuple[int, int]:
        """A batch size and trial number for a new run. BSONoBatchSizeError when the server has
        none for it (409)."""
        bs, n = ctypes.c_int64(), ctypes.c_int64()
        rc = N.lib.bso_client_next(self._c, job_id.encode(), ctypes.byref(bs), ctypes.byref(n))
        if rc != 0 and N.lib.bso_client_http_status(self._c) == 409:
            raise BSONoBatchSizeError(N.lib.bso_client_errmsg(self._c).decode())
        self._check(rc)
        return bs.value, n.value

    def next_with_power(self, job_id: str) -> Tuple[int, int, Optional[float]]:
        """next(), and the power limit an earlier run chose for that batch size (None when it
        has not been profiled)."""
        bs, number = self.next(job_id)
        limit = self.body().get("power_limit")
        return bs, number, float(limit) if limit is not None else None

    def post_power(self, job_id: str, batch_size: int, profile: dict,
                   device: str = "") -> dict:
        """Stores a power profile (PowerTuner.result()) of batch_size: POST /jobs/ID/power."""
        body = {"batch_size": batch_size, "power_limit": profile["power_limit"],
                "device": device, "measurements": profile["measurements"]}
        return self.post("/jobs/%s/power" % urllib.parse.quote(job_id, safe=""), body)

    def report(self, job_id: str, batch_size: int, trial: int, time_s: float, energy_j: float,
               metric: float, epoch: int, energy_source: Optional[str] = None,
               samples: Optional[int] = None, mean_batch_size: Optional[float] = None) -> dict:
        """POST /report. samples and mean_batch_size (together): what a run whose batch
        size changes has done so far; the server keeps them with the trial."""
        out = N.ReportAnswer()
        label = energy_source.encode() if energy_source else None
        if (samples is None) != (mean_batch_size is None):
            raise ValueError("samples and mean_batch_size go together")
        progress = (ctypes.byref(N.RunProgress(int(samples), float(mean_batch_size)))
                    if samples is not None else None)
        self._check(N.lib.bso_client_report_progress(
            self._c, job_id.encode(), batch_size, trial, time_s, energy_j, metric, epoch, label,
            progress, ctypes.byref(out)))
        return {"stop_train": out.stop_train, "converged": out.converged,
                "message": out.message.decode()}

    def end_trial(self, job_id: str, batch_size: int, trial: int) -> None:
        self._check(N.lib.bso_client_end_trial(self._c, job_id.encode(), batch_size, trial))

    def delete(self, job_id: str) -> None:
        self._check(N.lib.bso_client_delete(self._c, job_id.encode()))

    def changed(self, job_id: str) -> Any:
        """Says that the job changed (new data, a new model version): POST /jobs/ID/changed.
        Returns the job as GET /jobs/ID answers it."""
        return self.post("/jobs/%s/changed" % job_id)

    def transfer(self, job_id: str, from_job: str) -> Any:
        """Starts job `job_id` (the same workload on other hardware) from what job `from_job`
        learnt of each batch size's epochs: POST /jobs/ID/transfer, as `bso transfer FROM ID`.
        Returns the job as GET /jobs/ID answers it."""
        return self.post("/jobs/%s/transfer" % job_id, {"from": from_job})

    def post(self, path: str, body: Any = None) -> Any:
        text = json.dumps(body).encode() if body is not None else None
        self._check(N.lib.bso_client_post(self._c, path.encode(), text))
        return self.body()

    def get(self, path: str) -> Any:
        self._check(N.lib.bso_client_get(self._c, path.encode()))
        return self.body()

    def close(self) -> None:
        if getattr(self, "_c", None):
            N.lib.bso_client_free(self._c)
            self._c = None

    def __del__(self):
        self.close()
