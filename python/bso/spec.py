"""JobSpec: a job's settings with Zeus's field names, defaults and client-side validation."""
import math
import os
from dataclasses import asdict, dataclass, field
from typing import List, Optional

from .exceptions import BSOConfigError

MAX_BATCH_SIZES = 256


@dataclass
class JobSpec:
    job_id_prefix: str
    batch_sizes: List[int]
    default_batch_size: int
    job_id: Optional[str] = None
    eta_knob: float = 0.5
    beta_knob: Optional[float] = 2.0
    target_metric: float = 0.50
    higher_is_better_metric: bool = True
    max_epochs: int = 100
    num_pruning_rounds: int = 2
    window_size: int = 0
    mab_prior_mean: float = 0.0
    mab_prior_precision: float = 0.0
    mab_num_explorations: int = 2
    mab_seed: Optional[int] = None
    # "bso" or "zeus"; None leaves it to the server (its default for a new job, the job's own
    # policy for an existing one).
    policy: Optional[str] = None
    # A job id: a new job (the same workload on other hardware) starts from what that job
    # learnt of each batch size's epochs (docs/api.md, POST /jobs). Ignored for an existing job.
    transfer_from: Optional[str] = None
    # The version of the data this run trains on (a snapshot id, a date); None takes
    # BSO_DATA_VERSION from the environment, if set. Registered again with another one, the job
    # has changed: its next runs re-check what it learnt (docs/api.md, POST /jobs).
    data_version: Optional[str] = None

    def __post_init__(self):
        if self.data_version is None:
            self.data_version = os.environ.get("BSO_DATA_VERSION") or None
        errors = []
        if not self.batch_sizes:
            errors.append("Batch Sizes = [] is empty")
        else:
            self.batch_sizes = sorted(int(b) for b in self.batch_sizes)
            if len(self.batch_sizes) > MAX_BATCH_SIZES:
                errors.append("at most %d batch sizes are allowed" % MAX_BATCH_SIZES)
            if self.batch_sizes[0] <= 0:
                errors.append("every batch size must be greater than 0")
            if len(set(self.batch_sizes)) != len(self.batch_sizes):
                errors.append("batch sizes must be unique")
        if self.default_batch_size <= 0:
            errors.append("default_batch_size must be greater than 0")
        elif self.batch_sizes and self.default_batch_size not in self.batch_sizes:
            errors.append("Default BS(%d) not in batch_sizes(%s)." % (self.default_batch_size,
                                                                      self.batch_sizes))
        if not (0 <= self.eta_knob <= 1):
            errors.append("eta_knob should be in range [0,1]")
        if self.beta_knob is not None and not (self.beta_knob > 0 and math.isfinite(self.beta_knob)):
            errors.append("Invalid beta_knob(%r). To disable early stop, set beta_knob = None to "
                          "disable or positive value." % float(self.beta_knob))
        if self.max_epochs <= 0:
            errors.append("max_epochs must be greater than 0")
        if self.num_pruning_rounds < 1:
            errors.append("num_pruning_rounds must be at least 1")
        if self.window_size < 0:
            errors.append("window_size must be >= 0 (0: no window)")
        elif 0 < self.window_size < self.mab_num_explorations:
            errors.append("window_size must be 0 or at least mab_num_explorations")
        if self.mab_prior_precision < 0:
            errors.append("mab_prior_precision must be >= 0")
        if self.mab_num_explorations < 0:
            errors.append("mab_num_explorations must be >= 0")
        if self.mab_seed is not None and self.mab_seed < 0:
            errors.append("mab_seed must be >= 0")
        if self.transfer_from is not None and not (isinstance(self.transfer_from, str) and
                                                    0 < len(self.transfer_from) <= 255):
            errors.append("transfer_from must be a job id (1 to 255 characters) or None")
        if self.data_version is not None and not (isinstance(self.data_version, str) and
                                                   0 < len(self.data_version.encode()) <= 255):
            errors.append("data_version must be a string of 1 to 255 bytes or None")
        if self.policy not in (None, "bso", "zeus"):
            errors.append("policy must be \"bso\", \"zeus\" or None")
        if self.job_id is not None and not self.job_id.startswith(self.job_id_prefix):
            errors.append("Job_id(%s) does not start with prefix(%s)." % (self.job_id,
                                                                          self.job_id_prefix))
        if errors:
            raise BSOConfigError("invalid JobSpec: " + "; ".join(errors))

    def to_dict(self) -> dict:
        d = asdict(self)
        for key in ("policy", "transfer_from", "data_version"):
            if d[key] is None:
                del d[key]
        return d
