"""What every outer-approximation run is told and what it reports: the one options class
(:class:`OAOptions`), the one master-gap schedule (:class:`MasterGapSchedule`), the one
history record (:class:`OAIteration`) and the result (:class:`OAResult`).

The loop that reads them is :mod:`rulemip.algorithms.convex.oa_loop`; its masters are the single
epigraph variable ν of :class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation`
or a whole linear model separated by cut rows (tangent cuts).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.solvers.base import SolverBackend
from rulemip.solvers.result import Limit, TerminationReason, relative_gap

FloatArray = NDArray[np.float64]
GapRule = Callable[[float, float], float]


@dataclass(frozen=True)
class MasterGapSchedule:
    r"""The relative gap each master is solved to (its dual bound is a lower bound at any
    gap, so a loose master still proves a bound; a master incumbent below U is progress).

    * ``factor`` ``None``: every master at ``floor``;
    * otherwise ``max(floor, min(cap, factor·outer gap))`` (``start`` while the outer gap
      is unknown; the first master at ``start`` unless ``from_bounds``); ``monotone``:
      never looser than the previous master;
    * a master that returns a point the loop has seen (no new cut) proves
      ``LB ≥ U − gap·|U|``: the next master is ten times tighter;
    * ``rule``: a caller's own ``gap(U, LB)``, asked before every master.
    """

    floor: float
    factor: float | None = None
    cap: float = math.inf
    start: float | None = None
    from_bounds: bool = False
    monotone: bool = False
    rule: GapRule | None = None

    @classmethod
    def of(cls, gap: MasterGapSchedule | GapRule) -> MasterGapSchedule:
        """A schedule as it is, or a caller's ``gap(U, LB)`` rule as one."""
        return gap if isinstance(gap, MasterGapSchedule) else cls(floor=0.0, rule=gap)

    def _target(self, ub: float, lb: float) -> float:
        assert self.factor is not None
        outer = relative_gap(ub, lb)
        if not math.isfinite(outer):
            return self.floor if self.start is None else self.start
        return max(self.floor, min(self.cap, self.factor * outer))

    def first(self, ub: float, lb: float) -> float:
        """The gap of the first master of a run."""
        if self.rule is not None:
            return float(self.rule(ub, lb))
        if self.factor is None:
            return self.floor
        if self.start is not None and not self.from_bounds:
            return self.start
        return self._target(ub, lb)

    def next(self, current: float, ub: float, lb: float, new_point: bool) -> float:
        """The gap of the next master, after one at ``current`` (``new_point``: it gave a
        point the loop had not seen)."""
        if self.rule is not None:
            return float(self.rule(ub, lb))
        if self.factor is None:
            return self.floor
        if not new_point:
            return max(self.floor, current / 10.0)
        target = self._target(ub, lb)
        return min(current, target) if self.monotone else target


@dataclass(frozen=True)
class OAOptions:
    """Options of every outer-approximation run (:mod:`rulemip.algorithms.convex.oa_loop`).

    Stopping rule ``U − LB ≤ abs_tol + rel_tol·|U|``; the other stop rules: ``max_iter``
    integer masters, ``stall_rounds`` integer masters in a row without a rise of the lower
    bound (``None``: no such rule), and — for masters whose cuts are separated as rows —
    a master point with no violated cut. ``lp_rounds`` rounds of Kelley's method on the
    master's LP relaxation come first (stopped when no cut is violated or the LP value
    rose by less than 1e-6 relative). ``master_gap`` is the schedule of the masters' gaps
    (:class:`MasterGapSchedule` or a rule ``gap(U, LB)``); ``None``: the adaptive schedule
    of ``adaptive_master_gap``/``master_gap_from_bounds``/``gap_factor`` (start at 0.1, or
    at ``gap_factor`` × the outer gap with ``master_gap_from_bounds``, at least
    ``rel_tol/2``). ``master_extra`` goes to every master's backend.
    """

    #: the fit's clock (:class:`rulemip.budget.Budget`; None: unlimited): the run's time
    #: and work
    budget: Budget | None = None
    abs_tol: float = 1e-6
    rel_tol: float = 1e-6
    max_iter: int = 10_000
    relax: bool = False
    #: backend name, or a backend already resolved once for the whole fit
    solver: str | SolverBackend = "auto"
    threads: int | None = None
    seed: int = 0
    callback: Callable[[dict[str, Any]], None] | None = None
    adaptive_master_gap: bool = True
    master_extra: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: adaptive schedule only: start at ``gap_factor`` × the outer gap (capped at 0.1)
    #: instead of 0.1 — for callers that start with a tight heuristic incumbent
    master_gap_from_bounds: bool = False
    gap_factor: float = 0.25
    master_gap: MasterGapSchedule | GapRule | None = None
    lp_rounds: int = 0
    stall_rounds: int | None = None
    verbose: bool = False
    optimality_tol: float = 0.0

    def schedule(self) -> MasterGapSchedule:
        """The master-gap schedule these options describe."""
        if self.master_gap is not None:
            return MasterGapSchedule.of(self.master_gap)
        floor = max(self.rel_tol / 2.0, 1e-9)
        if not self.adaptive_master_gap:
            return MasterGapSchedule(floor)
        return MasterGapSchedule(floor, factor=self.gap_factor, cap=0.1, start=0.1,
                                 from_bounds=self.master_gap_from_bounds, monotone=True)

    def clock(self) -> Budget:
        """The run's clock: ``budget``, or an unlimited one."""
        return Budget.coerce(self.budget, None)


def check_options(opts: OAOptions) -> None:
    if not (opts.abs_tol >= 0 and opts.rel_tol >= 0):
        raise InvalidParameterError("`abs_tol` and `rel_tol` must be >= 0.")
    if not (isinstance(opts.max_iter, int) and opts.max_iter >= 1):
        raise InvalidParameterError(f"`max_iter` must be a positive integer; got {opts.max_iter}.")


@dataclass(frozen=True)
class OAIteration:
    """One master of a run, as recorded in ``OAResult.history`` (as a dict) and passed to
    the callback: ``phase`` ``"lp"`` (Kelley warm-up) or ``"mip"``, the bounds after it,
    the cuts it added (``cuts``; ``heuristic_cuts`` of them at points of the heuristic)
    and the master's own time, gap and status."""

    iteration: int
    phase: str
    time: float
    ub: float
    lb: float
    cuts: int
    n_cuts: int
    master_time: float
    master_gap: float
    master_status: str
    heuristic_cuts: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["gap"] = relative_gap(self.ub, self.lb)
        return out


@dataclass(frozen=True)
class OAResult:
    """What an outer-approximation run returns (bounds valid, docs/explanation/solving.md)."""

    z: FloatArray | None
    value: float
    lower_bound: float
    gap: float
    termination: TerminationReason
    limit: Limit | None
    iterations: int
    n_cuts: int
    wall_time: float
    history: tuple[dict[str, Any], ...]
    cut_points: tuple[FloatArray, ...]
    backend: str = ""
    backend_version: str = ""
    notes: tuple[str, ...] = ()
    #: the loop's own stopping test ``U − LB ≤ abs_tol + rel_tol·|U|`` held (the status
    #: itself is decided by :func:`rulemip.solvers.status.promote`)
    converged: bool = False
    #: branch-and-bound nodes of the integer masters and the number of master solves
    #: (LP rounds included)
    nodes: int = 0
    master_solves: int = 0


__all__ = ["MasterGapSchedule", "OAIteration", "OAOptions", "OAResult",
           "check_options"]
