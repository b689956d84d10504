"""Exceptions of the bso package. Each has the name of its Zeus counterpart as an alias, so a
Zeus script ported to bso keeps its except clauses."""


class BSOError(Exception):
    """Base of every bso error."""


class BSORuntimeError(BSOError):
    """The server could not be reached, or answered with an error."""


class BSOUnreachableError(BSORuntimeError):
    """The server could not be reached at all (no answer, no connection)."""


class BSONoBatchSizeError(BSORuntimeError):
    """The server has no batch size for this run (409): every size was pruned (zeus policy),
    or the job, which never reached its target, waits for its next pass over the sizes (bso
    policy). The message says which, and when the sizes run again; this run trains no model."""


class BSOTrainFailError(BSOError):
    """This run was stopped without converging (early-stopped, or out of epochs)."""


class BSOConfigError(BSOError, ValueError):
    """A job specification or GPU configuration is invalid."""


class BSOOperationOrderError(BSOError):
    """Calls came in the wrong order (e.g. on_evaluate before get_batch_size)."""


class BSOBadOperationError(BSOError):
    """An operation this process may not do (e.g. a non-zero rank asking for a batch size)."""


# Zeus's names (including its misspelling of the runtime error).
ZeusBSORuntimError = BSORuntimeError
ZeusBSOTrainFailError = BSOTrainFailError
ZeusBSOConfigError = BSOConfigError
ZeusBSOOperationOrderError = BSOOperationOrderError
ZeusBSOBadOperationError = BSOBadOperationError
