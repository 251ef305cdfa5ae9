"""Up-front check of a ``solver`` name, before any work is spent on a fit or a sweep.

:func:`check_solver_name` accepts ``"auto"``, a registered backend name that is installed, or
``"pyomo:NAME"`` with a Pyomo solver ``NAME`` that Pyomo can call. Anything else raises a
:mod:`rulemip.exceptions` error naming the option and the fix (the install hint of the
backend, or the Pyomo solvers to use). Pyomo's own logging of an unknown solver name is
silenced while checking, so no foreign traceback reaches the user.
"""

from __future__ import annotations

import logging
from typing import Any

from rulemip.exceptions import BackendUnavailableError, InvalidParameterError


def check_solver_name(solver: Any, option: str = "solver") -> str:
    """Return ``solver`` if it names a usable backend (see module), else raise."""
    from rulemip.solvers import backend_names, get_backend

    if not isinstance(solver, str) or not solver.strip():
        raise InvalidParameterError(
            f"`{option}` must be 'auto' or one of {backend_names()}; got {solver!r}.")
    if solver == "auto":
        return solver
    base, _, sub = solver.partition(":")
    if base not in backend_names():
        raise InvalidParameterError(
            f"`{option}` must be 'auto' or one of {backend_names()} (or 'pyomo:NAME' for a "
            f"Pyomo solver); got {solver!r}.")
    pyomo_log = logging.getLogger("pyomo")
    level = pyomo_log.level
    pyomo_log.setLevel(logging.CRITICAL + 1)
    try:
        get_backend(solver)
    except BackendUnavailableError as exc:
        if base == "pyomo" and sub:
            try:
                get_backend("pyomo")
            except BackendUnavailableError:
                raise exc from None
            raise BackendUnavailableError(
                f"`{option}` {solver!r}: Pyomo is installed but cannot call a solver named "
                f"{sub!r} (unknown to Pyomo's SolverFactory or its executable is not on the "
                "PATH); use 'pyomo' (its first available solver) or a solver Pyomo can call, e.g. "
                "'pyomo:appsi_highs', or install that solver.") from None
        raise
    finally:
        pyomo_log.setLevel(level)
    return solver
