"""BSO: the batch size optimizer for recurring training jobs. Python client over libbso.

Zeus users: `from bso import BatchSizeOptimizer, JobSpec, EnergyMonitor` replaces
`from zeus...batch_size import BatchSizeOptimizer, JobSpec` and `ZeusMonitor`.
"""
from .client import Client
from .exceptions import (BSOBadOperationError, BSOConfigError, BSOError, BSONoBatchSizeError,
                         BSOOperationOrderError, BSORuntimeError, BSOTrainFailError,
                         BSOUnreachableError,
                         ZeusBSOBadOperationError,
                         ZeusBSOConfigError, ZeusBSOOperationOrderError, ZeusBSORuntimError,
                         ZeusBSOTrainFailError)
from .monitor import EnergyMonitor, Measurement
from .optimizer import BatchSizeOptimizer
from .power import PowerTuner
from .spec import JobSpec

ZeusMonitor = EnergyMonitor

__all__ = ["BatchSizeOptimizer", "Client", "EnergyMonitor", "JobSpec", "Measurement", "PowerTuner",
           "ZeusMonitor", "BSOError", "BSORuntimeError", "BSOTrainFailError", "BSOConfigError",
           "BSOOperationOrderError", "BSOBadOperationError", "BSOUnreachableError",
           "BSONoBatchSizeError",
           "ZeusBSORuntimError",
           "ZeusBSOTrainFailError", "ZeusBSOConfigError", "ZeusBSOOperationOrderError",
           "ZeusBSOBadOperationError"]
__version__ = "0.1.0"
