"""One error hierarchy for the whole package.

Every error a user can trigger derives from :class:`RulemipError` *and* from the builtin
exception a Python programmer would expect (``ValueError`` for bad values, ``ImportError``
for a missing optional backend, ...), so ``except ValueError`` keeps working.
Messages follow the house form: "`n_rules` must be a positive integer; got -3." plus a
remedy when there is one.
"""

from __future__ import annotations


class RulemipError(Exception):
    """Base class of every error raised by rulemip."""


class InvalidDataError(RulemipError, ValueError):
    """The data cannot be used: NaN/inf, wrong shapes, empty, labels unfit for the loss."""


class InvalidParameterError(RulemipError, ValueError, TypeError):
    """A parameter has the wrong type or value."""


class FormulationError(RulemipError, ValueError):
    """A formulation cannot be built or decoded (e.g. an infeasible request)."""


class BackendUnavailableError(RulemipError, ImportError):
    """A requested solver backend is not installed; the message carries the install hint."""


class UnsupportedCapabilityError(RulemipError, TypeError):
    """The chosen backend lacks a capability the model needs (quadratic objective, ...)."""


class SolverError(RulemipError, RuntimeError):
    """The solver failed in a way that is not a limit (crash, numerical breakdown)."""


class CertificateError(RulemipError, ValueError):
    """A certificate is malformed or its claims do not hold for the data."""


class SolveLimitWarning(UserWarning):
    """A solve stopped at a limit (time, nodes, interruption); the incumbent is returned."""


class HeuristicBoundWarning(UserWarning):
    """A result rests on a bound that is not proved (e.g. the ogb prefix bound)."""
