"""Helpers shared by the backend modules: option checks, start vectors, status rules.

The status rules implement docs/explanation/solving.md once for every backend:

* ``OPTIMAL`` only when the solver finished *and* rulemip's relative gap
  ``(UB − LB)/max(|UB|, 1e-10)`` is at most ``options.optimality_tol``;
* a solver that stopped because its own gap criterion was met, with a rulemip gap above
  ``optimality_tol``, is ``FEASIBLE`` with ``Limit.GAP``;
* a limit (time, nodes, interruption) gives ``FEASIBLE`` when an incumbent exists and
  ``NO_SOLUTION_FOUND`` otherwise, with ``limit`` naming the limit.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float, check_positive_int
from rulemip.exceptions import InvalidParameterError, UnsupportedCapabilityError
from rulemip.model.standard_form import StandardForm, as_standard_form
from rulemip.solvers.result import (
    Limit,
    ObjectiveBounds,
    SolveOptions,
    SolveResult,
    TerminationReason,
    relative_gap,
)


def check_options(options: SolveOptions | None) -> SolveOptions:
    """Validate ``options`` (``None`` → defaults) and return them."""
    if options is None:
        return SolveOptions()
    if not isinstance(options, SolveOptions):
        raise InvalidParameterError(
            f"`options` must be a rulemip.solvers.SolveOptions; got {type(options).__name__}.")
    check_nonneg_float(options.time_limit, "time_limit", allow_none=True)
    check_nonneg_float(options.mip_gap, "mip_gap")
    check_nonneg_float(options.optimality_tol, "optimality_tol")
    check_positive_int(options.threads, "threads", allow_none=True)
    for name in ("node_limit", "iteration_limit"):
        value = getattr(options, name)
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, numbers.Integral) or value < 0):
            raise InvalidParameterError(
                f"`{name}` must be a non-negative integer or None; got {value!r}.")
    if isinstance(options.seed, bool) or not isinstance(options.seed, numbers.Integral) \
            or options.seed < 0:
        raise InvalidParameterError(
            f"`seed` must be a non-negative integer; got {options.seed!r}.")
    if options.callback is not None and not callable(options.callback):
        raise InvalidParameterError("`callback` must be callable or None.")
    if not isinstance(options.extra, dict):
        raise InvalidParameterError("`extra` must be a dict of backend options.")
    return options


def check_start(start: Any, n_cols: int) -> NDArray[np.float64] | None:
    """A MIP start as a float vector of length ``n_cols`` (``NaN`` = unknown value)."""
    if start is None:
        return None
    arr = np.asarray(start, dtype=float).ravel()
    if arr.shape != (n_cols,):
        raise InvalidParameterError(
            f"`start` must have one value per model column ({n_cols}); got {arr.shape[0]}.")
    if np.isinf(arr).any():
        raise InvalidParameterError("`start` must not contain infinite values (NaN = unknown).")
    return arr


def check_model(model: Any) -> StandardForm:
    """Accept a :class:`StandardForm` or anything with ``to_standard_form()``."""
    return as_standard_form(model)


def check_solve_args(model: Any, options: SolveOptions | None,
                     start: NDArray[np.float64] | None
                     ) -> tuple[SolveOptions, StandardForm, NDArray[np.float64] | None]:
    """The validated ``(options, model, start)`` of a one-shot ``solve`` call."""
    sf = check_model(model)
    return check_options(options), sf, check_start(start, sf.n_cols)


def reject(backend: str, what: str, remedy: str) -> UnsupportedCapabilityError:
    """The error for a model feature a backend cannot take."""
    return UnsupportedCapabilityError(f"solver {backend!r} cannot handle {what}; {remedy}")


def finished_status(primal: float, dual: float, options: SolveOptions,
                    ) -> tuple[TerminationReason, Limit | None]:
    """Status of a solve the solver reports as finished (its own gap criterion met)."""
    if relative_gap(primal, dual) <= options.optimality_tol:
        return TerminationReason.OPTIMAL, None
    return TerminationReason.FEASIBLE, Limit.GAP


def limit_status(has_solution: bool, limit: Limit) -> tuple[TerminationReason, Limit]:
    if has_solution:
        return TerminationReason.FEASIBLE, limit
    return TerminationReason.NO_SOLUTION_FOUND, limit


class Progress:
    """Wraps ``options.callback``: builds the progress dict, remembers an interrupt request.

    The callback receives ``{"time", "primal", "dual", "gap", "nodes"}``; returning
    ``True`` asks the solver to stop (``Limit.INTERRUPTED``) where the backend can.
    """

    def __init__(self, callback: Callable[[dict[str, Any]], Any] | None) -> None:
        self.callback = callback
        self.interrupt = False
        self.start = time.perf_counter()
        self.calls = 0

    def __bool__(self) -> bool:
        return self.callback is not None

    def report(self, primal: float, dual: float, nodes: int | None,
               elapsed: float | None = None) -> bool:
        if self.callback is None:
            return False
        t = time.perf_counter() - self.start if elapsed is None else float(elapsed)
        info = {"time": t, "primal": float(primal), "dual": float(dual),
                "gap": relative_gap(float(primal), float(dual)), "nodes": nodes}
        self.calls += 1
        if self.callback(info) is True:
            self.interrupt = True
        return self.interrupt


def make_result(termination: TerminationReason, *, primal: float = math.inf,
                dual: float = -math.inf, limit: Limit | None = None,
                x: NDArray[np.float64] | None = None, wall_time: float = 0.0,
                nodes: int | None = None, iterations: int | None = None, backend: str = "",
                backend_version: str = "", options: SolveOptions | None = None,
                raw_status: str = "", raw_gap: float | None = None,
                notes: tuple[str, ...] | list[str] = ()) -> SolveResult:
    """Build a :class:`SolveResult`, clipping a dual bound above the primal (numerical
    noise of a closed gap) to the primal."""
    if math.isfinite(primal) and math.isfinite(dual) and dual > primal:
        dual = primal
    return SolveResult(termination=termination, bounds=ObjectiveBounds(primal, dual),
                       limit=limit, x=x, wall_time=wall_time, nodes=nodes,
                       iterations=iterations, backend=backend, backend_version=backend_version,
                       options={} if options is None else options.to_dict(),
                       raw_status=raw_status, raw_gap=raw_gap, notes=tuple(notes))
