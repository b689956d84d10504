"""BatchSizeOptimizer: the training-side half of BSO, with the methods and attributes of Zeus's
client so that porting a Zeus script is an import change.

    monitor = EnergyMonitor()
    bso = BatchSizeOptimizer(monitor, "http://server:8000", JobSpec(...))
    batch_size = bso.get_batch_size()
    bso.on_train_begin()
    for epoch in range(...):
        train(); bso.on_evaluate(validate())
        if bso.training_finished:
            break

Differences from Zeus's client, all deliberate: reports carry the energy figure's source; with
data parallelism (world_size > 1, see bso.torch) every rank learns the stop decision at the
same evaluation and the job's energy is summed over the ranks; a failed run ends its trial at
exit so the server can re-issue it; and a server that cannot be reached when the run starts
never blocks training: the run falls back to the job's default batch size, reports nothing, and
stops on its own at the target metric or max_epochs (on_unreachable="fail", or
BSO_ON_UNREACHABLE=fail, raises BSOUnreachableError instead).

optimize_power=True also learns each GPU's power limit with the batch size (bso.power): the
first run of a batch size profiles a few limits during its first epoch, counting the work
from on_step() calls (one per training step), and the server keeps the chosen limit, which
later runs of that size set at on_train_begin. Original limits come back when the run ends
(also on an exception or SIGTERM). Without permission to set limits, or without a GPU whose
power NVML measures, a warning says why and the run optimises the batch size only.
power_options: PowerTuner's keyword arguments (n_limits, warmup_s, window_s, min_steps).
"""
import atexit
import logging
import os
import urllib.parse
from typing import Optional

from .client import Client, shown_url
from .exceptions import (BSOBadOperationError, BSOConfigError, BSOOperationOrderError,
                         BSORuntimeError, BSOTrainFailError, BSOUnreachableError)
from .monitor import EnergyMonitor
from .power import DONE, OFF, PROFILING, PowerTuner
from .spec import JobSpec

log = logging.getLogger("bso")

WINDOW = "bso-trial"


class BatchSizeOptimizer:
    def __init__(self, monitor: EnergyMonitor, server_url: str, job: JobSpec, rank: int = 0,
                 world_size: int = 1, *, max_power: Optional[float] = None,
                 number_of_gpus: Optional[int] = None, gpu_model: Optional[str] = None,
                 client: Optional[Client] = None, on_unreachable: Optional[str] = None,
                 token: Optional[str] = None, cacert: Optional[str] = None,
                 optimize_power: bool = False, power_options: Optional[dict] = None):
        self.monitor = monitor
        self.server_url = server_url
        self.job = job
        self.rank = rank
        self.world_size = world_size
        self.cur_epoch = 0
        self.running_time = 0.0
        self.consumed_energy = 0.0
        self.energy_source = monitor.source
        self.training_finished = False
        self.trial_number = 0
        self.current_batch_size = 0
        self._ended = False
        self.optimize_power = optimize_power
        self.power_options = dict(power_options or {})
        self.power_limit: Optional[float] = None  # this run's limit once set (W per GPU)
        self.power_profile: Optional[dict] = None  # what this run's profiling measured
        self._known_power_limit: Optional[float] = None  # the server's, for this batch size
        self._tuner: Optional[PowerTuner] = None
        self._power_posted = False
        self.on_unreachable = on_unreachable or os.environ.get("BSO_ON_UNREACHABLE", "fallback")
        if self.on_unreachable not in ("fallback", "fail"):
            raise BSOConfigError("on_unreachable must be 'fallback' or 'fail', not %r"
                                 % self.on_unreachable)
        self.offline = False  # the server was unreachable: this run does without it
        self._client = client or Client(server_url, token=token, cacert=cacert)
        spec = job.to_dict()
        spec.update(self._gpu_config(max_power, number_of_gpus, gpu_model))
        try:
            self.job_id, created = self._client.register(spec)
        except BSOUnreachableError as e:
            self._go_offline(e)
            self.job_id = job.job_id or ""
            return
        self.job.job_id = self.job_id
        if rank == 0:
            log.info("BSO job %s (%s); export BSO_JOB_ID=%s to reuse it in later runs",
                     self.job_id, "registered" if created else "known", self.job_id)

    def _go_offline(self, why: Exception) -> None:
        if self.on_unreachable == "fail":
            raise why
        self.offline = True
        log.warning("BSO server %s is unreachable (%s): this run trains with the default batch "
                    "size %d and reports nothing", shown_url(self.server_url), why,
                    self.job.default_batch_size)

    def _gpu_config(self, max_power, number_of_gpus, gpu_model) -> dict:
        """max_power (W, all GPUs of the job), number_of_gpus, gpu_model: from NVML when there
        are GPUs, else from the arguments or BSO_ASSUMED_POWER_W."""
        gpus = self.monitor.gpus
        if gpus:
            config = {"max_power": self.monitor.max_power_w * self.world_size,
                      "number_of_gpus": len(gpus) * self.world_size,
                      "gpu_model": gpus[0].name}
        else:
            assumed = os.environ.get("BSO_ASSUMED_POWER_W")
            config = {"max_power": float(assumed) * self.world_size if assumed else None,
                      "number_of_gpus": self.world_size, "gpu_model": "cpu"}
        for key, value in (("max_power", max_power), ("number_of_gpus", number_of_gpus),
                           ("gpu_model", gpu_model)):
            if value is not None:
                config[key] = value
        if not config["max_power"] or config["max_power"] <= 0:
            raise BSOConfigError(
                "no GPU found: pass max_power= (watts), or set BSO_ASSUMED_POWER_W")
        return config

    def post_profile(self, report, device: Optional[str] = None) -> Optional[dict]:
        """Stores a device profile for this job (POST /jobs/ID/profile): `report` is what
        bso.probe.probe returned (or the request body itself). The sizes it finds unfit are
        never handed out, and each size's samples/s and J/sample stand in for its cost per
        epoch until runs measure it; a job moved to other hardware gets the new GPU's own
        rates in place of the old hardware's (docs/policy.md, "With a probe of the new
        hardware"). device defaults to the monitor's first GPU. Returns the server's answer;
        None on ranks other than 0 and offline (nothing is posted)."""
        if self.rank != 0 or self.offline:
            return None
        if device is None:
            device = self.monitor.gpus[0].name if self.monitor.gpus else ""
        body = report.profile(device=device) if hasattr(report, "profile") else report
        return self._client.post("/jobs/%s/profile" % self.job_id, body)

    def declare_change(self) -> Optional[dict]:
        """Tells the server that this job changed since its last run (new data, a new model
        version), before get_batch_size: the next run at each batch size the job knows decides
        whether the change matters there, and where it does the job explores again; nothing is
        forgotten until then (docs/policy.md, "When the user knows the job changed"). Returns
        the server's answer (the job); None on ranks other than 0 and offline."""
        if self.rank != 0 or self.offline:
            return None
        return self._client.changed(self.job_id)

    def get_batch_size(self) -> int:
        """The batch size of this run (asks the server once; rank 0 only)."""
        if self.rank != 0:
            raise BSOBadOperationError("Only rank 0 gpu can ask for a batch size.")
        if self.current_batch_size != 0:
            return self.current_batch_size
        self.cur_epoch = 0
        if not self.offline:
            try:
                bs, number, self._known_power_limit = self._client.next_with_power(self.job_id)
            except BSOUnreachableError as e:
                self._go_offline(e)
        if self.offline:
            self.current_batch_size = self.job.default_batch_size
            return self.current_batch_size
        if bs not in self.job.batch_sizes:
            raise BSORuntimeError("the server returned a batch size outside the job's: %d" % bs)
        self.current_batch_size, self.trial_number = bs, number
        atexit.register(self._end_trial_at_exit)
        return bs

    def on_train_begin(self) -> None:
        self.training_finished = False
        if self.optimize_power and self._tuner is None:
            self._begin_power()
        self.monitor.begin_window(WINDOW)

    def _begin_power(self) -> None:
        """Sets the limit the server knows for this batch size, or starts profiling. Never
        fails the run: without a tuner it goes on at the GPUs' present limits."""
        try:
            self._tuner = PowerTuner(self.monitor, self.job.eta_knob, **self.power_options)
            state = None
            if self._known_power_limit is not None:
                try:
                    state = self._tuner.apply(self._known_power_limit)
                except BSORuntimeError as e:  # chosen on other GPUs: outside this range
                    log.warning("%s: profiling this batch size again", e)
                    self._known_power_limit = None
            if state is None:
                state = self._tuner.start()
        except (BSOConfigError, BSORuntimeError) as e:
            log.warning("power limits are not tuned: %s", e)
            self._close_power()
            return
        if state == OFF:
            log.warning("power limits are not tuned: %s", self._tuner.message)
            self._close_power()
            return
        atexit.register(self._close_power)
        if state == DONE:
            self.power_limit = self._known_power_limit
            log.info("BSO power limit %g W per GPU (chosen by an earlier run at batch size %d)",
                     self.power_limit, self.current_batch_size)
        else:
            log.info("BSO profiling power limits %s W during the first epoch",
                     ", ".join("%g" % w for w in self._tuner.limits))

    def on_step(self, samples: Optional[float] = None) -> None:
        """Call after every training step when optimize_power is on: the profiling counts the
        work done (samples; default: this rank's share of the batch size)."""
        if self._tuner is None or self.power_limit is not None:
            return
        work = samples if samples is not None else self.current_batch_size / self.world_size
        try:
            state = self._tuner.step(work)
        except BSORuntimeError as e:
            log.warning("power profiling stopped: %s", e)
            self._close_power()
            return
        if state == DONE:
            self._take_profile()
            log.info("BSO power limit %g W per GPU chosen for batch size %d", self.power_limit,
                     self.current_batch_size)
        elif state == OFF:
            log.warning("power profiling stopped: %s", self._tuner.message)
            self._close_power()

    def _take_profile(self) -> None:
        """What the finished profiling measured, and the limit it set."""
        self.power_profile = self._tuner.result()
        self.power_limit = self.power_profile["power_limit"]

    def _finish_power(self) -> None:
        """The run ends while still profiling (epochs shorter than the profile): the limits
        measured so far decide, and later runs of this size get the choice without profiling."""
        if self._tuner is None or self.power_limit is not None:
            return
        try:
            state = self._tuner.finish()
        except BSORuntimeError as e:
            log.warning("power profiling stopped: %s", e)
            return
        if state == DONE:
            self._take_profile()
            log.info("BSO power limit %g W per GPU chosen for batch size %d from the %d limits "
                     "measured before the run ended", self.power_limit, self.current_batch_size,
                     len(self.power_profile["measurements"]))
            self._post_power()
        else:
            log.warning("power limits were not chosen: %s", self._tuner.message)

    def _post_power(self) -> None:
        """Hands the profile to the server once, so later runs of this size skip profiling."""
        if self.power_profile is None or self._power_posted or self.offline or self.rank != 0:
            return
        self._power_posted = True
        device = self.monitor.gpus[0].name if self.monitor.gpus else ""
        try:
            self._client.post_power(self.job_id, self.current_batch_size, self.power_profile,
                                    device)
        except BSORuntimeError as e:
            log.warning("the power profile was not stored: %s", e)

    def _close_power(self) -> None:
        """Puts the GPUs' original limits back."""
        if self._tuner is not None:
            self._tuner.close()
            self._tuner = None

    def _measure(self):
        m = self.monitor.end_window(WINDOW)
        self.energy_source = m.source
        return m.time, m.total_energy

    def on_evaluate(self, metric: float, samples: Optional[int] = None,
                    mean_batch_size: Optional[float] = None) -> None:
        """Reports this evaluation; sets training_finished when the server says stop, and raises
        BSOTrainFailError when the run stopped without converging. A run whose batch size
        changes while it trains also passes samples (processed so far in the run, all ranks)
        and mean_batch_size (their mean per optimizer step): the server keeps them with the
        trial, and `bso show` and the dashboard show the run's batch size over time."""
        if (samples is None) != (mean_batch_size is None):
            raise ValueError("samples and mean_batch_size go together")
        if self.current_batch_size == 0:
            raise BSOOperationOrderError("Call get_batch_size to set the batch size first")
        if self.training_finished:
            return
        self.cur_epoch += 1
        elapsed, energy = self._measure()
        if self._tuner is not None and self.power_limit is None and self.cur_epoch == 1:
            if self._tuner.state == PROFILING:
                log.info("power profiling goes on into the next epoch (call on_step() after "
                         "each training step)")
        self._post_power()
        if self.world_size > 1:
            from . import torch as bso_torch
            elapsed, energy = bso_torch.combine_measurements(elapsed, energy)
        self.running_time += elapsed
        self.consumed_energy += energy
        answer = None
        if self.offline:
            answer = self._decide_alone(float(metric))
        elif self.rank == 0:
            answer = self._client.report(self.job_id, self.current_batch_size, self.trial_number,
                                         self.running_time, self.consumed_energy, float(metric),
                                         self.cur_epoch, self.energy_source, samples,
                                         mean_batch_size)
        if self.world_size > 1:
            from . import torch as bso_torch
            answer = bso_torch.share_answer(answer)
        if not answer["stop_train"]:
            self.monitor.begin_window(WINDOW)
            return
        self.training_finished = True
        self._ended = True
        self._finish_power()
        self._close_power()
        if not answer["converged"]:
            raise BSOTrainFailError("Train failed: %s %s" % (answer["message"],
                                                             self._after_a_failure()))

    def _after_a_failure(self) -> str:
        """What to do after a run that did not converge: launch again, unless no batch size can
        reach the target any more (GET /jobs/ID: target_out_of_reach), which the operator must
        fix. A server that does not say (Zeus's, or unreachable now) gets the usual advice."""
        again = "Launch the job again: the server picks the next batch size."
        if self.offline or self.rank != 0:
            return again
        try:
            job = self._client.get("/jobs/%s" % urllib.parse.quote(self.job_id, safe=""))
            reach = job.get("target_out_of_reach") if isinstance(job, dict) else None
        except Exception:  # the failure is the news; advice is best effort
            return again
        if not isinstance(reach, dict):
            return again
        since = reach.get("since_trial")
        return ("No batch size has reached the target %s (%s trials), and none is expected to "
                "within max_epochs: raise max_epochs or check target_metric (runs launched now "
                "will most likely fail too)." % ("since trial %s" % since if since else
                                                 "since the job started", reach.get("trials")))

    def _decide_alone(self, metric: float) -> dict:
        """Without a server: stop at the target metric or at max_epochs, as the server would
        without its cost bound."""
        reached = (metric >= self.job.target_metric if self.job.higher_is_better_metric
                   else metric <= self.job.target_metric)
        stop = reached or self.cur_epoch >= self.job.max_epochs
        return {"stop_train": stop, "converged": reached,
                "message": "BSO server unreachable: decided by the client alone."}

    def _end_trial_at_exit(self) -> None:
        """A run that exits before its final report has failed: the server re-issues it."""
        if self.rank == 0 and not self._ended and self.trial_number:
            try:
                self._client.end_trial(self.job_id, self.current_batch_size, self.trial_number)
            except BSORuntimeError as e:
                log.warning("could not end trial %d: %s", self.trial_number, e)
