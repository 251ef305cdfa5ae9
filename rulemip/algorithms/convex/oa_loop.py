r"""The one outer-approximation loop: masters, cuts, bounds and stop rules for every
master (Duran–Grossmann/Kelley; docs/explanation/solving.md).

A *master* is a persistent linear model (rows are appended, never rebuilt) whose rows
under-estimate a convex objective, so each master is a relaxation and its dual bound a
lower bound LB; the incumbent U is the best true value of a feasible point. What a cut
is and how a point is valued belongs to the master's :class:`MasterAdapter`:

* the single epigraph variable ν of
  :class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation` (one cut
  ``ν ≥ q(z^h) + ∇q(z^h)ᵀ(z − z^h)`` per new point, an optional heuristic);
* a whole linear model with its own objective whose cuts a :class:`RowSeparation`
  returns as rows (:func:`run_rows`; the tangent cuts of ``tangent_cuts.py``).

:class:`MasterLoop` runs either: ``lp_rounds`` of Kelley's method on the LP relaxation,
then integer masters at the gaps of the one :class:`~rulemip.algorithms.convex.oa_options.
MasterGapSchedule`, until ``U − LB ≤ abs_tol + rel_tol·|U|`` or a stop rule
(:class:`~rulemip.algorithms.convex.oa_options.OAOptions`: iterations, time, work, a stalled
bound, a master point without a violated cut, a master at its limit, a failed master),
with the one history record and the HiGHS near-limit guard (:class:`NearLimitGuard`) on
every master. The loop reports what it found; its status is the one rule
:func:`rulemip.solvers.status.loop_verdict` (:func:`~rulemip.solvers.status.promote` at the
loop's own tolerance).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.algorithms.convex.oa_options import OAIteration, OAOptions, OAResult
from rulemip.budget import Budget
from rulemip.exceptions import SolverError
from rulemip.model.standard_form import StandardForm
from rulemip.solvers.base import Capability, PersistentSolver, SolverBackend
from rulemip.solvers.result import (
    Limit,
    SolveOptions,
    SolveResult,
    TerminationReason,
    relative_gap,
)
from rulemip.solvers.status import loop_verdict

FloatArray = NDArray[np.float64]

_OVERRUN_GRACE = 0.5  # seconds a master may exceed its limit before it counts as overrun


@dataclass(frozen=True)
class CutRows:
    """Cut rows ``A x ≥ lower`` over the master's columns (upper bounds are +∞)."""

    A: sp.csr_matrix
    lower: FloatArray

    def __len__(self) -> int:
        return int(self.A.shape[0])


@dataclass(frozen=True)
class Separation:
    """What a master point gave: cuts added, whether the point was new to the loop (a
    repeated point adds no cut) and how many of the cuts came from a heuristic."""

    added: int
    new_point: bool
    heuristic: int = 0


class MasterAdapter(Protocol):
    """A master as :class:`MasterLoop` drives it."""

    backend_name: str
    integer: NDArray[np.bool_]

    @property
    def master(self) -> Any:
        """The persistent master (a ``PersistentSolver`` or a :class:`RebuiltMaster`)."""

    @property
    def upper_bound(self) -> float: ...

    @property
    def n_cuts(self) -> int: ...

    def master_start(self) -> FloatArray | None:
        """A master start from the incumbent (``None``: none)."""

    def bound(self, dual: float, options: OAOptions) -> float:
        """A lower bound on the problem from a master's dual bound."""

    def separate(self, x: FloatArray, *, relaxed: bool, clock: Budget) -> Separation:
        """Offer the point of a master solution ``x`` and add its cuts."""


class NearLimitGuard:
    """Whether the next HiGHS master may start.

    HiGHS does not check its time limit in every phase of a master with many dense cut
    rows over thousands of integer columns: presolve ran 7.2 s and the root propagation of
    a start solution's cutoff 11.0 s on a 0.84 s limit (a 209 × 2 967 master with 620 000
    nonzeros), and with presolve off the root of a 136 × 2 806 master (381 587 nonzeros)
    ran 2.8–4.3 s on a 0.4 s limit that it solved in 0.5 s with presolve on (issue 38: a
    default three-rule fit of the mixed table, 7–8 s on 5 s). No option set keeps every
    master within its limit, so a master is not started when less time is left than the
    previous master took, nor after a master overran: the loop ends at its time limit with
    its incumbent and bound, at most one master's time early."""

    def __init__(self, backend_name: str) -> None:
        self.applies = backend_name == "highs"
        self.overran = False
        self.last: float | None = None

    def near(self, remaining: float | None) -> bool:
        if not self.applies or remaining is None:
            return False
        return self.overran or (self.last is not None and remaining < self.last)

    def stop_note(self, remaining: float) -> str:
        """Why the loop stopped before a master (:meth:`near` was true)."""
        if self.overran:
            return "a master overran its time limit; no further master was started."
        return (f"{remaining:.2f} s left, less than the previous master took "
                f"({self.last or 0.0:.2f} s): no further master was started (HiGHS does "
                "not stop every master at its limit).")

    def observe(self, wall_time: float, remaining: float | None, solve: int,
                notes: list[str]) -> None:
        if remaining is not None and wall_time > remaining + _OVERRUN_GRACE:
            self.overran = True
            notes.append(f"master {solve} ran {wall_time:.1f} s on a {remaining:.1f} s "
                         "limit; no master is started after it.")
        self.last = wall_time


class MasterLoop:
    """One run of outer approximation on a master (module docstring)."""

    def __init__(self, adapter: MasterAdapter, options: OAOptions, *,
                 lower_bound_hint: float = -math.inf, cut_rows: bool = False,
                 clock: Budget | None = None, t0: float | None = None,
                 remaining: Callable[[], float | None] | None = None) -> None:
        self.t0 = time.perf_counter() if t0 is None else t0
        self.adapter = adapter
        self.options = options
        self.clock = options.clock() if clock is None else clock
        #: seconds left, asked once before each master (default: the clock's)
        self.remaining = self.clock.remaining if remaining is None else remaining
        self.hint = float(lower_bound_hint)
        self.lb = self.hint
        #: cuts are rows separated at the point (a point without a violated cut ends the
        #: run) rather than one cut per new point (a repeated point tightens the master)
        self.cut_rows = cut_rows
        self.schedule = options.schedule()
        self.guard = NearLimitGuard(adapter.backend_name)
        self.history: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.iterations = self.solves = self.nodes = 0

    # ------------------------------------------------------------------ bookkeeping
    def converged(self) -> bool:
        o, ub = self.options, self.adapter.upper_bound
        return math.isfinite(ub) and ub - self.lb <= o.abs_tol + o.rel_tol * abs(ub)

    def record(self, phase: str, sep: Separation, res: SolveResult, gap: float) -> None:
        entry = OAIteration(
            iteration=self.iterations, phase=phase, time=time.perf_counter() - self.t0,
            ub=self.adapter.upper_bound, lb=self.lb, cuts=sep.added,
            n_cuts=self.adapter.n_cuts, master_time=res.wall_time, master_gap=gap,
            master_status=res.termination.value, heuristic_cuts=sep.heuristic).to_dict()
        self.history.append(entry)
        if self.options.callback is not None:
            self.options.callback(dict(entry))

    def solve_master(self, gap: float, use_start: bool, rem: float | None
                     ) -> SolveResult | None:
        """One master at ``gap`` (the caller asked the near-limit guard); the clock is
        charged a unit per master, per branch-and-bound node and per
        :data:`~rulemip.budget.LP_ITERATIONS_PER_UNIT` simplex iterations
        (:meth:`~rulemip.budget.Budget.charge_solve`). ``None`` when the backend failed (noted:
        the incumbent and the bound of the masters solved so far stand)."""
        o = self.options
        self.solves += 1
        start = self.adapter.master_start() if use_start else None
        extra = dict(o.master_extra)
        mopts = SolveOptions(time_limit=rem, mip_gap=gap, threads=o.threads, seed=o.seed,
                             verbose=o.verbose, optimality_tol=o.optimality_tol,
                             node_limit=self.clock.work_left(),
                             iteration_limit=self.clock.iteration_limit(), extra=extra)
        try:
            res = self.adapter.master.solve(mopts, start)
        except SolverError as exc:
            self.notes.append(f"master solve {self.solves} failed ({exc}); stopped with "
                              "the incumbent and the bound of the masters solved before.")
            return None
        # a master is a unit of work, and so is each of its branch-and-bound nodes and
        # each LP_ITERATIONS_PER_UNIT of its simplex iterations
        self.clock.charge_solve(res.nodes, res.iterations)
        self.guard.observe(res.wall_time, rem, self.solves, self.notes)
        return res

    def raise_bound(self, res: SolveResult) -> None:
        dual = float(res.bounds.dual)
        if math.isfinite(dual):
            self.lb = max(self.lb, self.adapter.bound(dual, self.options))

    # ------------------------------------------------------------------ phases
    def warm_up(self) -> None:
        """Kelley's method on the LP relaxation (valid bounds, cheap cuts), until no cut
        is violated or the LP value rose by less than 1e-6 relative."""
        integer = self.adapter.integer
        if self.options.lp_rounds <= 0 or not integer.any():
            return
        self.adapter.master.set_integrality(np.zeros_like(integer))
        prev = -math.inf
        for _ in range(self.options.lp_rounds):
            rem = self.remaining()
            if rem == 0.0 or self.clock.work_left() == 0 or self.guard.near(rem):
                break
            res = self.solve_master(self.schedule.first(self.adapter.upper_bound, self.lb),
                                    use_start=False, rem=rem)
            if res is None or res.x is None:
                break
            self.iterations += 1
            val = res.bounds.primal
            self.raise_bound(res)
            sep = self.adapter.separate(np.asarray(res.x, dtype=float), relaxed=True,
                                        clock=self.clock)
            self.record("lp", sep, res, 0.0)
            if sep.added == 0 or val - prev <= 1e-6 * max(1.0, abs(val)):
                break
            prev = val
        self.adapter.master.set_integrality(integer)

    def integer_masters(self) -> tuple[TerminationReason, Limit | None]:
        """Integer masters until the bounds meet, a stop rule or a limit; the loop's
        termination and limit."""
        o = self.options
        gap = self.schedule.first(self.adapter.upper_bound, self.lb)
        stalled = it = 0
        while True:
            if self.converged():
                return TerminationReason.OPTIMAL, None
            if it >= o.max_iter:
                return TerminationReason.FEASIBLE, Limit.ITERATION
            rem = self.remaining()
            if rem is not None and rem <= 0:
                return TerminationReason.FEASIBLE, Limit.TIME
            work = self.clock.work_left()
            if work is not None and work <= 0:     # the deterministic limit
                return TerminationReason.FEASIBLE, Limit.NODE
            if rem is not None and self.guard.near(rem):
                self.notes.append(self.guard.stop_note(rem))
                return TerminationReason.FEASIBLE, Limit.TIME
            it += 1
            lb_before = self.lb
            res = self.solve_master(gap, use_start=True, rem=rem)
            if res is None:
                return TerminationReason.FEASIBLE, Limit.OTHER
            self.nodes += int(res.nodes or 0)
            self.iterations += 1
            if res.termination is TerminationReason.INFEASIBLE:
                return TerminationReason.INFEASIBLE, None
            self.raise_bound(res)
            sep = Separation(0, False) if res.x is None else self.adapter.separate(
                np.asarray(res.x, dtype=float), relaxed=False, clock=self.clock)
            self.record("mip", sep, res, gap)
            if res.x is None:
                if res.limit is not None or self.clock.expired():
                    lim = res.limit if res.limit in (Limit.NODE, Limit.TIME) else (
                        Limit.NODE if self.clock.work_left() == 0 else Limit.TIME)
                    return TerminationReason.FEASIBLE, lim
                bad = res.termination not in (TerminationReason.OPTIMAL,
                                              TerminationReason.FEASIBLE)
                self.notes.append(f"master solve ended with {res.termination.value} "
                                  f"({res.raw_status}) and no point.")
                return (res.termination if bad else TerminationReason.NUMERICAL_ERROR), None
            rounds = o.stall_rounds
            if rounds is not None:
                stalled = stalled + 1 if self.lb <= lb_before + 1e-12 * max(
                    1.0, abs(self.lb)) else 0
                if stalled >= rounds:
                    self.notes.append(f"lower bound stalled for {rounds} master "
                                      "solves (the master's own tolerances); stopped at the "
                                      "gap reached.")
                    return TerminationReason.FEASIBLE, None
            if self.cut_rows:
                if res.limit is not None and res.limit is not Limit.GAP:
                    return TerminationReason.FEASIBLE, res.limit
                if sep.added == 0:
                    # no cut is violated at the master point: the master value is the
                    # true objective there, so U <= master value and LB is the master's
                    # dual bound; another round would return the same master
                    return TerminationReason.FEASIBLE, None
            gap = self.schedule.next(gap, self.adapter.upper_bound, self.lb, sep.new_point)

    def run(self) -> tuple[TerminationReason, Limit | None]:
        """Both phases (LP warm-up, integer masters); the loop's termination and limit
        (:meth:`result` decides the status)."""
        self.warm_up()
        return self.integer_masters()

    def result(self, term: TerminationReason, limit: Limit | None, *,
               z: FloatArray | None, cut_points: tuple[FloatArray, ...] = (),
               backend: str = "", backend_version: str = "") -> OAResult:
        """The run's :class:`OAResult`: what the loop found (incumbent value, proved bound,
        ``converged`` or the limit that stopped it), with the status the one rule of
        :func:`rulemip.solvers.status.loop_verdict` gives it at the loop's own tolerance
        ``abs_tol + rel_tol·|U|`` (the loop decides nothing itself)."""
        o, ub = self.options, self.adapter.upper_bound
        converged = self.converged()
        lb = self.lb
        if term is TerminationReason.INFEASIBLE:
            ub = lb = math.inf
        elif term in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            verdict = loop_verdict(ub, lb, converged=converged, limit=limit,
                                   rel_tol=o.rel_tol, abs_tol=o.abs_tol,
                                   fallback_bound=self.hint)
            self.notes.extend(verdict.notes)
            term, limit, lb = verdict.termination, verdict.limit, verdict.lower_bound
        elif math.isfinite(ub):
            lb = min(lb, ub)
        return OAResult(z=z, value=ub, lower_bound=lb, gap=relative_gap(ub, lb),
                        termination=term, limit=limit, iterations=self.iterations,
                        n_cuts=self.adapter.n_cuts, wall_time=time.perf_counter() - self.t0,
                        history=tuple(self.history), cut_points=cut_points,
                        backend=backend, backend_version=backend_version,
                        notes=tuple(self.notes), converged=converged, nodes=self.nodes,
                        master_solves=self.solves)


# ---------------------------------------------------------------------- row masters
class RowSeparation(Protocol):
    """Hooks of :func:`run_rows` (Kelley / outer approximation on a master whose rows
    under-estimate a convex objective).

    ``separate(x)`` returns the cuts violated at a master point ``x`` (all master
    columns); ``point(x)`` the candidate point of the problem it encodes; ``value(p)`` the
    true objective at a point of the problem (``None`` when the point is infeasible);
    ``cuts_at(p)`` every cut at such a point; ``master_start(p)`` the master point a
    feasible ``p`` lifts to (a warm start); ``polish(p)`` a feasible point at least as
    good as ``p`` or ``None`` (a repair step; return ``None`` to skip it)."""

    def separate(self, x: FloatArray) -> CutRows: ...

    def point(self, x: FloatArray) -> FloatArray: ...

    def value(self, p: FloatArray) -> float | None: ...

    def cuts_at(self, p: FloatArray) -> CutRows: ...

    def master_start(self, p: FloatArray) -> FloatArray: ...

    def polish(self, p: FloatArray) -> FloatArray | None: ...


class RebuiltMaster:
    """A master for backends without in-place rows: the model is rebuilt with every
    cut and solved from scratch on each call (the :class:`PersistentSolver` calls the
    loop makes: ``add_rows``, ``set_integrality``, ``solve``)."""

    def __init__(self, backend: SolverBackend, model: StandardForm) -> None:
        self._backend = backend
        self._model = model
        self._integer = np.asarray(model.integrality, dtype=bool)
        self._A: list[sp.csr_matrix] = []
        self._lo: list[FloatArray] = []

    def add_rows(self, A: sp.spmatrix, lower: FloatArray, upper: FloatArray) -> None:
        self._A.append(sp.csr_matrix(A))
        self._lo.append(np.asarray(lower, dtype=float))

    def set_integrality(self, integer: NDArray[np.bool_]) -> None:
        self._integer = np.asarray(integer, dtype=bool)

    def solve(self, options: SolveOptions, start: FloatArray | None = None) -> SolveResult:
        base = self._model
        A = sp.vstack(self._A, format="csr")
        lo = np.concatenate(self._lo)
        sf = dataclasses.replace(
            base, A=sp.vstack([base.A, A], format="csr"),
            row_lower=np.concatenate([base.row_lower, lo]),
            row_upper=np.concatenate([base.row_upper, np.full(len(lo), math.inf)]),
            row_names=(), integrality=self._integer)
        return self._backend.solve(sf, options, start)


class RowMaster:
    """The :class:`MasterAdapter` of a master separated by :class:`RowSeparation` hooks:
    the incumbent is the best point offered (master points and their polished points)."""

    def __init__(self, hooks: RowSeparation, model: StandardForm, backend: SolverBackend,
                 initial: CutRows, start: FloatArray | None) -> None:
        self.hooks = hooks
        self.backend_name = backend.name
        self.best: FloatArray | None = None
        self.ub = math.inf
        if start is not None:
            self.offer(start)
        self._master: PersistentSolver | RebuiltMaster = (
            backend.persistent(model) if Capability.PERSISTENT in backend.capabilities
            else RebuiltMaster(backend, model))
        self._master.add_rows(initial.A, initial.lower, np.full(len(initial), math.inf))
        self._n_cuts = len(initial)
        self.integer = np.asarray(model.integrality, dtype=bool)

    @property
    def master(self) -> PersistentSolver | RebuiltMaster:
        return self._master

    @property
    def upper_bound(self) -> float:
        return self.ub

    @property
    def n_cuts(self) -> int:
        return self._n_cuts

    def offer(self, p: FloatArray | None) -> None:
        """Make a point of the problem the incumbent when it is feasible and better."""
        if p is None or np.isnan(p).any():
            return
        p = np.asarray(p, dtype=float)
        val = self.hooks.value(p)
        if val is not None and val < self.ub:
            self.ub, self.best = val, p.copy()

    def add(self, rows: CutRows) -> int:
        if len(rows) == 0:
            return 0
        self.master.add_rows(rows.A, rows.lower, np.full(len(rows), math.inf))
        self._n_cuts += len(rows)
        return len(rows)

    def master_start(self) -> FloatArray | None:
        return None if self.best is None else self.hooks.master_start(self.best)

    def bound(self, dual: float, options: OAOptions) -> float:
        return dual

    def separate(self, x: FloatArray, *, relaxed: bool, clock: Budget) -> Separation:
        if relaxed:
            added = self.add(self.hooks.separate(x))
            return Separation(added, added > 0)
        p = self.hooks.point(x)
        self.offer(p)
        added = self.add(self.hooks.separate(x))
        polished = self.hooks.polish(p)
        if polished is not None:
            self.offer(polished)
            added += self.add(self.hooks.cuts_at(np.asarray(polished, dtype=float)))
        return Separation(added, added > 0)


def run_rows(hooks: RowSeparation, master: StandardForm, backend: SolverBackend,
             initial: CutRows, options: OAOptions, start: FloatArray | None = None
             ) -> OAResult:
    """Outer approximation on a master that is a whole linear model (its own objective,
    several epigraph columns): ``initial`` rows first, then ``options.lp_rounds`` rounds
    of Kelley's method on the LP relaxation, then integer masters whose points are
    separated by ``hooks`` (:class:`RowSeparation`) until ``U − LB ≤ abs_tol +
    rel_tol·|U|``, a stop rule (:class:`~rulemip.algorithms.convex.oa_options.OAOptions`) or a
    limit.

    Validity: every row under-estimates the convex objective, so each master is a
    relaxation and its dual bound a lower bound LB; U is the best true value of a
    feasible point (the start, master points, polished points). Backends with
    ``PERSISTENT`` get the rows in place, others a :class:`RebuiltMaster`.
    ``OAResult.z`` is the incumbent point, ``notes`` say why a run stopped early.
    """
    t0 = time.perf_counter()
    adapter = RowMaster(hooks, master, backend, initial, start)
    loop = MasterLoop(adapter, options, cut_rows=True, t0=t0)
    term, limit = loop.run()
    return loop.result(term, limit, z=adapter.best, backend=backend.name,
                       backend_version=backend.version())


__all__ = ["CutRows", "MasterAdapter", "MasterLoop", "NearLimitGuard", "RebuiltMaster",
           "RowMaster", "RowSeparation", "Separation", "run_rows"]
