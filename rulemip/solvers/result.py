"""The result contract of every solve (after OR-Tools MathOpt's ``SolveResult``).

``solve()`` never raises when a limit is hit: it returns a result whose ``termination`` is
``FEASIBLE`` (incumbent, limit hit) or ``NO_SOLUTION_FOUND`` and whose ``limit`` names the
limit. The gap is computed by rulemip with one formula (:func:`relative_gap`), the
backend's own figure is kept in ``raw_gap``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from rulemip.budget import Budget

GAP_DENOMINATOR_FLOOR = 1e-10


class TerminationReason(StrEnum):
    """Why a solve ended."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"  # an incumbent, but optimality not proved (a limit, or a heuristic)
    NO_SOLUTION_FOUND = "no_solution_found"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    NUMERICAL_ERROR = "numerical_error"
    ERROR = "error"


class Limit(StrEnum):
    """Which limit stopped a solve early (``None`` on the result when none did)."""

    TIME = "time"
    NODE = "node"
    ITERATION = "iteration"
    GAP = "gap"  # stopped at the requested relative gap, not at a zero gap
    INTERRUPTED = "interrupted"
    OTHER = "other"


def budget_limit(budget: Budget) -> Limit:
    """The limit an expired :class:`~rulemip.budget.Budget` reached: ``Limit.NODE`` for its
    work limit (the deterministic one), ``Limit.TIME`` for its deadline."""
    return Limit.NODE if budget.stop_reason() == "work" else Limit.TIME


@dataclass(frozen=True)
class ObjectiveBounds:
    """``primal`` (best feasible objective, +inf if none) and ``dual`` (valid lower bound,
    -inf if none) of a minimization."""

    primal: float = math.inf
    dual: float = -math.inf


def relative_gap(primal: float, dual: float) -> float:
    """rulemip's one gap formula: ``(UB - LB) / max(|UB|, 1e-10)``; ``inf`` when either
    bound is unknown, 0 when ``LB >= UB``."""
    if not (math.isfinite(primal) and math.isfinite(dual)):
        return math.inf
    return max(0.0, primal - dual) / max(abs(primal), GAP_DENOMINATOR_FLOOR)


@dataclass(frozen=True)
class SolveOptions:
    """Options every backend honours (where it cannot, it says so in ``SolveResult.notes``).

    ``mip_gap`` is the relative gap at which a MIP solve may stop (then the result is
    ``OPTIMAL`` only if the gap is within ``optimality_tol``); ``iteration_limit`` caps the
    simplex (LP) iterations of the whole solve — every LP of presolve, the root, cuts,
    heuristics and nodes — where the backend can count them (the result then has
    ``Limit.ITERATION``; a work limit passes it, :meth:`rulemip.budget.Budget.iteration_limit`);
    ``callback`` receives
    progress dicts ``{"time", "primal", "dual", "gap", "nodes"}`` where the backend can
    report them.
    """

    time_limit: float | None = None
    mip_gap: float = 1e-6
    threads: int | None = None
    seed: int = 0
    node_limit: int | None = None
    iteration_limit: int | None = None
    verbose: bool = False
    optimality_tol: float = 1e-6
    callback: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"time_limit": self.time_limit, "mip_gap": self.mip_gap,
                "threads": self.threads, "seed": self.seed, "node_limit": self.node_limit,
                "iteration_limit": self.iteration_limit,
                "optimality_tol": self.optimality_tol, "extra": dict(self.extra)}


@dataclass(frozen=True)
class SolveResult:
    """What a backend returns.

    ``x`` holds the values of all columns of the solved model (``None`` when no solution).
    """

    termination: TerminationReason
    bounds: ObjectiveBounds = field(default_factory=ObjectiveBounds)
    limit: Limit | None = None
    x: NDArray[np.float64] | None = None
    wall_time: float = 0.0
    nodes: int | None = None
    iterations: int | None = None
    backend: str = ""
    backend_version: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    raw_status: str = ""
    raw_gap: float | None = None
    notes: tuple[str, ...] = ()

    @property
    def gap(self) -> float:
        """Relative gap by :func:`relative_gap`."""
        return relative_gap(self.bounds.primal, self.bounds.dual)

    @property
    def objective(self) -> float:
        return self.bounds.primal

    @property
    def has_solution(self) -> bool:
        return self.x is not None

    @property
    def is_optimal(self) -> bool:
        return self.termination is TerminationReason.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        def num(v: float | None) -> Any:
            if v is None:
                return None
            return v if math.isfinite(v) else str(v)

        return {"termination": self.termination.value,
                "limit": None if self.limit is None else self.limit.value,
                "primal": num(self.bounds.primal), "dual": num(self.bounds.dual),
                "gap": num(self.gap), "raw_gap": num(self.raw_gap),
                "wall_time": self.wall_time, "nodes": self.nodes,
                "iterations": self.iterations, "backend": self.backend,
                "backend_version": self.backend_version, "options": self.options,
                "raw_status": self.raw_status, "notes": list(self.notes)}
