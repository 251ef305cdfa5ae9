r"""Outer approximation for convex integer programs ([PRUNE] Alg. 1, Duran–Grossmann/Kelley).

Solves :math:`\min\{q(z) : z \in Z\}` for a convex :math:`q` given by an oracle
(value and gradient) and a feasible set :math:`Z` given by a :class:`~rulemip.model.MIPModel`
(integer or relaxed columns, linear rows). The engine adds an epigraph column
:math:`\nu` and repeatedly solves the *master*

.. math:: \min\ \nu \quad\text{s.t.}\quad z \in Z,\quad
          \nu \ge q(z^h) + \nabla q(z^h)^\top (z - z^h)\ \ (h = 1..H),\quad \nu \ge L,

on one persistent solver (rows are appended, never rebuilt), evaluates :math:`q` at the
master's point and adds its cut, until the incumbent (upper bound U, best :math:`q(z^h)`)
and the master's bound (lower bound) meet: ``U − LB ≤ abs_tol + rel_tol·|U|``.

Validity: every cut underestimates the convex q on Z (first-order condition), so the
master is a relaxation of the problem and its optimal value — or, when the master itself
stops early, its dual bound — is a lower bound on :math:`\min_Z q` at every iteration;
:math:`L` (``lower_bound_hint``) must itself be a proved lower bound.

Numerics and speed (measured in ``docs/benchmarks/exact_cip.md``):

* objective scaling — ν is measured in units of the first cut's value, so the master's
  absolute tolerances are relative ones;
* tiny cut coefficients (below the solver's matrix threshold) are not dropped silently:
  each dropped term :math:`c_b z_b` is replaced by its maximum over the column bounds on
  the right-hand side, which keeps the cut valid;
* masters are solved only to a relative gap of a quarter of the current outer gap (at
  least ``rel_tol/2``): a master incumbent below U is enough to make progress, the bound
  then comes from the master's dual bound; when the master returns a point that already has
  a cut, its gap is tightened — this terminates because a repeated point proves
  ``LB ≥ U − gap_master·|U|``;
* the previous incumbent is passed to every master as a start (warm start);
* the master's bound is only as exact as its solver's feasibility tolerances (HiGHS:
  1e-7 on rows, 1e-6 on integrality), so the reported bound is the master's bound minus a
  relative margin of 1e-8 (observed overshoots were ~1e-9 relative), capped at a quarter
  of the requested tolerance so that convergence stays possible.

:meth:`OuterApproximation.run_rows` runs the same scheme on a master that is a whole linear
model with its own objective (several epigraph columns, e.g. the tangent-cut master of a
model with loss terms, ``docs/explanation/interval_cover.md`` §5): its
:class:`RowSeparation` hooks return violated cut *rows* at a master point, a warm-up of
Kelley rounds on the LP relaxation comes first, and backends without in-place rows get a
:class:`RebuiltMaster`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError, SolverError
from rulemip.model.mip_model import MIPModel
from rulemip.model.standard_form import StandardForm
from rulemip.solvers.base import (
    PERSISTENT_MASTER_NEEDS,
    Capability,
    PersistentSolver,
    SolverBackend,
    resolve_backend,
)
from rulemip.solvers.result import (
    GAP_DENOMINATOR_FLOOR,
    Limit,
    SolveOptions,
    SolveResult,
    TerminationReason,
    relative_gap,
)
from rulemip.solvers.status import promote

FloatArray = NDArray[np.float64]

_SMALL_COEF = 1e-9  # HiGHS drops matrix entries below this; we relax them away ourselves
_BOUND_MARGIN = 1e-8  # relative safety margin on master bounds (solver tolerances)
_OVERRUN_GRACE = 0.5  # seconds a master may exceed its limit before it counts as overrun


class ConvexOracle(Protocol):
    """A convex function on the z block: value and a (sub)gradient."""

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]: ...


@dataclass(frozen=True)
class OAOptions:
    """Options of :class:`OuterApproximation` (see module docstring)."""

    time_limit: float | None = None
    #: the fit's clock (:class:`rulemip.budget.Budget`); when given it bounds the run
    #: together with ``time_limit`` (whichever ends first)
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


@dataclass(frozen=True)
class OAResult:
    """What :meth:`OuterApproximation.run` returns (bounds valid, docs/explanation/solving.md)."""

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
    #: :meth:`OuterApproximation.run_rows` only: branch-and-bound nodes of the integer
    #: masters and the number of master solves (LP rounds included)
    nodes: int = 0
    master_solves: int = 0


def _check_options(opts: OAOptions) -> None:
    if opts.time_limit is not None and not opts.time_limit >= 0:
        raise InvalidParameterError(f"`time_limit` must be >= 0 or None; got {opts.time_limit}.")
    if not (opts.abs_tol >= 0 and opts.rel_tol >= 0):
        raise InvalidParameterError("`abs_tol` and `rel_tol` must be >= 0.")
    if not (isinstance(opts.max_iter, int) and opts.max_iter >= 1):
        raise InvalidParameterError(f"`max_iter` must be a positive integer; got {opts.max_iter}.")


class OuterApproximation:
    """Outer-approximation driver on a persistent master (module docstring).

    Parameters
    ----------
    oracle : convex q on the z block (:class:`ConvexOracle`).
    feasible : model holding the z block (columns ``z_block``) and the feasibility rows;
        its objective is ignored.
    z_block : name of the variable block q is a function of.
    options : :class:`OAOptions`.
    lower_bound_hint : a *proved* lower bound on min q (bounds ν below).
    heuristic : per-iteration hook: called with each new master point (while time is
        left), returns further feasible points (e.g. by local search); each gets a cut
        and may become the incumbent. Their number is ``heuristic_cuts`` in the history.
    """

    def __init__(self, oracle: ConvexOracle, feasible: MIPModel, z_block: str = "z",
                 options: OAOptions | None = None, lower_bound_hint: float = -math.inf,
                 heuristic: Callable[[FloatArray], Sequence[FloatArray]] | None = None
                 ) -> None:
        self.oracle = oracle
        self.heuristic = heuristic
        self.options = options if options is not None else OAOptions()
        _check_options(self.options)
        sf = feasible.to_standard_form()
        self._zcols = np.asarray(feasible.var(z_block).ids, dtype=np.int64).ravel()
        self._n0 = sf.n_cols
        self._col_lb = sf.col_lower[self._zcols].astype(float)
        self._col_ub = sf.col_upper[self._zcols].astype(float)
        self._zint = sf.integrality[self._zcols].astype(bool) & (not self.options.relax)
        backend = resolve_backend(self.options.solver, PERSISTENT_MASTER_NEEDS,
                                  outer_approximation=False)[0]
        self._backend_name = backend.name
        self._backend_version = backend.version()
        base = dataclasses.replace(sf, c=np.zeros(sf.n_cols), Q=None, offset=0.0,
                                   loss_terms=())
        self._master: PersistentSolver = backend.persistent(base)
        self._nu = self._n0
        self._master.add_columns(np.array([1.0]), np.array([-math.inf]),
                                 np.array([math.inf]), np.array([False]))
        if self.options.relax:
            self._master.set_integrality(np.zeros(self._n0 + 1, dtype=bool))
        self.lower_bound_hint = float(lower_bound_hint)
        self._scale: float | None = None
        self._cut_rhs: list[float] = []
        self._cut_coef: list[FloatArray] = []
        self._cut_points: list[FloatArray] = []
        self._seen: set[bytes] = set()
        self._ub = math.inf
        self._z_best: FloatArray | None = None
        self._t_start = time.perf_counter()
        self._budget = self._new_budget()
        self._overran = False

    # ------------------------------------------------------------------ cuts
    @property
    def upper_bound(self) -> float:
        return self._ub

    @property
    def incumbent(self) -> FloatArray | None:
        return None if self._z_best is None else self._z_best.copy()

    @property
    def n_cuts(self) -> int:
        return len(self._cut_rhs)

    def _fix_scale(self, value: float) -> None:
        if self._scale is None:
            self._scale = max(abs(value), 1e-8)
            if math.isfinite(self.lower_bound_hint):
                self._master.set_col_bounds(np.array([self._nu]),
                                            np.array([self.lower_bound_hint / self._scale]),
                                            np.array([math.inf]))

    def add_cut(self, value: float, grad: FloatArray, z: FloatArray,
                incumbent: bool = True) -> None:
        """Add the cut ``ν ≥ value + gradᵀ(z' − z)``; with ``incumbent`` (default) ``z`` is
        a feasible point with ``q(z) = value`` and may become the incumbent."""
        z = np.asarray(z, dtype=float).ravel()
        g = np.asarray(grad, dtype=float).ravel()
        if not (math.isfinite(value) and np.all(np.isfinite(g))):
            raise InvalidParameterError("a cut needs a finite value and gradient.")
        self._fix_scale(value)
        assert self._scale is not None
        s = self._scale
        coef = -g / s                      # row: ν + coefᵀ z ≥ rhs
        rhs = (value - float(g @ z)) / s
        small = (np.abs(coef) < _SMALL_COEF) & (coef != 0.0)
        if small.any():
            # relax c·z_b to its maximum over the bounds of z_b (keeps the cut valid)
            cs = coef[small]
            worst = np.maximum(cs * self._col_lb[small], cs * self._col_ub[small])
            rhs -= float(np.sum(worst))
            coef = coef.copy()
            coef[small] = 0.0
        nz = np.flatnonzero(coef)
        cols = np.concatenate([[self._nu], self._zcols[nz]])
        vals = np.concatenate([[1.0], coef[nz]])
        row = sp.csr_matrix((vals, (np.zeros(len(cols), dtype=np.int64), cols)),
                            shape=(1, self._master.n_cols))
        self._master.add_rows(row, np.array([rhs]), np.array([math.inf]))
        self._cut_rhs.append(rhs)
        self._cut_coef.append(coef)
        self._cut_points.append(z.copy())
        if incumbent:  # a point that is not a candidate incumbent must be re-evaluated
            self._seen.add(self._key(z))
        if incumbent and value < self._ub:
            self._ub = float(value)
            self._z_best = z.copy()

    def add_cut_at(self, z: FloatArray) -> float:
        """Evaluate the oracle at a feasible ``z``, add its cut, update the incumbent."""
        z = np.asarray(z, dtype=float).ravel()
        value, grad = self.oracle.value_and_gradient(z)
        self.add_cut(float(value), grad, z)
        return float(value)

    @staticmethod
    def _key(z: FloatArray) -> bytes:
        return np.round(z, 9).tobytes()

    def _nu_at(self, z: FloatArray) -> float:
        """Smallest ν (scaled) satisfying every cut at ``z``."""
        C = np.vstack(self._cut_coef)
        return float(np.max(np.asarray(self._cut_rhs) - C @ z))

    # ------------------------------------------------------------------ main loop
    def _new_budget(self) -> Budget:
        """The run's clock: ``time_limit`` from now, within the caller's ``budget``."""
        return Budget.coerce(self.options.budget, self.options.time_limit)

    def _remaining(self) -> float | None:
        return self._budget.remaining()

    def _expired(self) -> bool:
        return self._budget.expired()

    def _done(self, lb: float) -> bool:
        return self._ub - lb <= self.options.abs_tol + self.options.rel_tol * abs(self._ub)

    def run(self) -> OAResult:
        """Iterate masters and cuts until the bounds meet or a limit is hit."""
        opts = self.options
        if not self._cut_rhs:
            self._t_start = time.perf_counter()
            self._budget = self._new_budget()
        converged = False
        history: list[dict[str, Any]] = []
        notes: list[str] = []
        lb = self.lower_bound_hint
        term: TerminationReason | None = None
        limit: Limit | None = None
        if not self._cut_rhs:
            z0, why = self._feasible_point()
            if z0 is None:
                if why is TerminationReason.INFEASIBLE:
                    return self._result(why, None, lb, 0, history, notes)
                notes.append(f"no feasible point found ({why.value}).")
                return self._result(TerminationReason.NO_SOLUTION_FOUND, Limit.TIME, lb, 0,
                                    history, notes)
            self.add_cut_at(z0)
        floor = max(opts.rel_tol / 2.0, 1e-9)
        master_gap = floor
        if opts.adaptive_master_gap:
            master_gap = 0.1
            if opts.master_gap_from_bounds:
                master_gap = max(floor, min(0.1, opts.gap_factor * relative_gap(self._ub, lb)))
        it = 0
        last_master: float | None = None
        self._overran = False
        while True:
            if self._done(lb):
                converged = True
                break
            if it >= opts.max_iter:
                term, limit = TerminationReason.FEASIBLE, Limit.ITERATION
                break
            rem = self._remaining()
            if rem is not None and rem <= 0:
                term, limit = TerminationReason.FEASIBLE, Limit.TIME
                break
            work = self._budget.work_left()
            if work is not None and work <= 0:     # the deterministic limit
                term, limit = TerminationReason.FEASIBLE, Limit.NODE
                break
            it += 1
            assert self._scale is not None
            near_limit = self._near_limit(rem, last_master)
            start = None
            if self._z_best is not None and self._zint.any() and not near_limit:
                start = np.full(self._master.n_cols, np.nan)
                start[self._zcols] = self._z_best
                start[self._nu] = self._nu_at(self._z_best) + 1e-9
            extra = dict(opts.master_extra)
            if near_limit:
                extra.setdefault("presolve", "off")
            res = self._master.solve(SolveOptions(time_limit=None if rem is None else max(rem, 0.0),
                                                  mip_gap=master_gap,
                                                  threads=opts.threads, seed=opts.seed,
                                                  optimality_tol=0.0, node_limit=work,
                                                  extra=extra), start)
            # a master is a unit of work, and so is each of its branch-and-bound nodes
            self._budget.charge(1 + int(res.nodes or 0))
            if rem is not None and res.wall_time > rem + _OVERRUN_GRACE:
                self._overran = True
                notes.append(f"master {it} ran {res.wall_time:.1f} s on a {rem:.1f} s "
                             "limit; the masters near the limit run without presolve "
                             "and start.")
            last_master = res.wall_time
            if res.termination is TerminationReason.INFEASIBLE:
                term = TerminationReason.INFEASIBLE
                break
            dual = res.bounds.dual
            if math.isfinite(dual):
                # the master's bound holds up to its feasibility tolerances: keep a margin
                db = dual * self._scale
                margin = min(_BOUND_MARGIN * max(abs(db), self._scale),
                             0.25 * (opts.abs_tol + opts.rel_tol * abs(db)))
                lb = max(lb, db - margin)
            new_point = False
            n_heuristic = 0
            if res.x is not None:
                zh = self._round(res.x[self._zcols])
                if self._key(zh) not in self._seen:
                    self.add_cut_at(zh)
                    new_point = True
                    if self.heuristic is not None and not self._expired():
                        for z in self.heuristic(zh):
                            self.add_cut_at(z)
                            n_heuristic += 1
            entry = {"iteration": it, "time": time.perf_counter() - self._t_start,
                     "ub": self._ub, "lb": lb, "gap": relative_gap(self._ub, lb),
                     "n_cuts": self.n_cuts, "master_time": res.wall_time,
                     "master_gap": master_gap, "master_status": res.termination.value,
                     "heuristic_cuts": n_heuristic}
            history.append(entry)
            if opts.callback is not None:
                opts.callback(dict(entry))
            if res.x is None:
                if res.limit in (Limit.TIME, Limit.NODE) or self._expired():
                    term = TerminationReason.FEASIBLE
                    limit = Limit.NODE if res.limit is Limit.NODE else Limit.TIME
                    break
                term = TerminationReason.NUMERICAL_ERROR
                notes.append(f"master solve ended with {res.termination.value} "
                             f"({res.raw_status}) and no point.")
                break
            if opts.adaptive_master_gap:
                if new_point:
                    master_gap = max(floor, min(master_gap,
                                                opts.gap_factor * relative_gap(self._ub, lb)))
                else:
                    # a repeated point proves LB ≥ U − master_gap·|U|; tighten the master
                    master_gap = max(floor, master_gap / 10.0)
        if term is TerminationReason.INFEASIBLE:
            return self._result(term, None, math.inf, it, history, notes)
        if term is TerminationReason.NUMERICAL_ERROR:
            return self._result(term, limit, lb, it, history, notes, converged)
        # the status is decided by the one rule, at the loop's own tolerance
        # ``abs_tol + rel_tol·|U|`` written as a relative gap
        tol = opts.rel_tol + opts.abs_tol / max(abs(self._ub), GAP_DENOMINATOR_FLOOR) \
            if math.isfinite(self._ub) else opts.rel_tol
        verdict = promote(self._ub, lb, finished=converged, mip_gap=tol, limit=limit,
                          fallback_bound=self.lower_bound_hint)
        notes.extend(verdict.notes)
        return self._result(verdict.termination, verdict.limit, verdict.lower_bound, it,
                            history, notes, converged)

    @staticmethod
    def run_rows(hooks: RowSeparation, master: StandardForm, backend: SolverBackend,
                 initial: CutRows, options: RowOAOptions,
                 start: FloatArray | None = None) -> OAResult:
        """Outer approximation on a master that is a whole linear model (its own
        objective, several epigraph columns): ``initial`` rows first, then rounds of
        Kelley's method on the LP relaxation, then integer masters whose points are
        separated by ``hooks`` (:class:`RowSeparation`) until ``U − LB ≤ abs_tol +
        mip_gap·|U|``, a stop rule (:class:`RowOAOptions`) or a limit.

        Validity: every row under-estimates the convex objective, so each master is a
        relaxation and its dual bound a lower bound LB; U is the best true value of a
        feasible point (the start, master points, polished points). Backends with
        ``PERSISTENT`` get the rows in place, others a :class:`RebuiltMaster`.
        ``OAResult.z`` is the incumbent point, ``notes`` say why a run stopped early.
        """
        return _RowMasterRun(hooks, master, backend, initial, options, start).run()

    def _near_limit(self, remaining: float | None, last_master: float | None) -> bool:
        """Whether the next HiGHS master runs without presolve and without a start.

        Two HiGHS phases do not check the time limit on masters with many dense cut
        rows over thousands of integer columns (measured on a 209 x 2 967 master with
        620 000 nonzeros and coefficients up to 9e8, limit 0.84 s): presolve (7.2 s)
        and the root propagation of a start solution's cutoff (11.0 s); without both it
        solved to optimality in 0.9 s. Masters solved when less time is left than the
        previous master took, or after a master overran, skip both, so that the limit
        holds; the others keep them (they pay on most masters,
        ``docs/benchmarks/exact_cip.md``). The incumbent is the engine's own, so a
        master without a start loses no solution."""
        if self._backend_name != "highs" or remaining is None:
            return False
        return self._overran or (last_master is not None and remaining < last_master)

    def _round(self, z: FloatArray) -> FloatArray:
        out = np.asarray(z, dtype=float).copy()
        out[self._zint] = np.rint(out[self._zint])
        return np.clip(out, self._col_lb, self._col_ub)

    def _feasible_point(self) -> tuple[FloatArray | None, TerminationReason]:
        """Any point of Z (a master solve with ν fixed to 0)."""
        self._master.set_col_bounds(np.array([self._nu]), np.array([0.0]), np.array([0.0]))
        rem = self._remaining()
        res = self._master.solve(SolveOptions(time_limit=None if rem is None else max(rem, 0.0),
                                              threads=self.options.threads,
                                              seed=self.options.seed))
        self._master.set_col_bounds(np.array([self._nu]), np.array([-math.inf]),
                                    np.array([math.inf]))
        if res.x is None:
            return None, res.termination
        return self._round(res.x[self._zcols]), res.termination

    def _result(self, term: TerminationReason, limit: Limit | None, lb: float, it: int,
                history: list[dict[str, Any]], notes: list[str],
                converged: bool = False) -> OAResult:
        if term is TerminationReason.INFEASIBLE:
            lb_out, ub = math.inf, math.inf
        else:
            ub = self._ub
            lb_out = min(lb, ub) if math.isfinite(ub) else lb
        return OAResult(z=None if self._z_best is None else self._z_best.copy(), value=ub,
                        lower_bound=lb_out, gap=relative_gap(ub, lb_out), termination=term,
                        limit=limit, iterations=it, n_cuts=self.n_cuts,
                        wall_time=time.perf_counter() - self._t_start,
                        history=tuple(history), cut_points=tuple(self._cut_points),
                        backend=self._backend_name, backend_version=self._backend_version,
                        notes=tuple(notes), converged=converged)


def outer_approximation(oracle: ConvexOracle, feasible: MIPModel, *,
                        warm_starts: tuple[FloatArray, ...] | list[FloatArray] = (),
                        options: OAOptions | None = None, z_block: str = "z",
                        lower_bound_hint: float = -math.inf) -> OAResult:
    """Functional form: cuts at every warm start, then :meth:`OuterApproximation.run`."""
    oa = OuterApproximation(oracle, feasible, z_block, options, lower_bound_hint)
    for z in warm_starts:
        oa.add_cut_at(np.asarray(z, dtype=float))
    return oa.run()


# ---------------------------------------------------------------------- row masters
# The same engine on a master that is a whole linear model with its own objective (for
# example a model whose loss terms became epigraph columns, docs/explanation/solving.md):
# the hooks below separate cut *rows* at a master point instead of one cut on ν.


@dataclass(frozen=True)
class CutRows:
    """Cut rows ``A x ≥ lower`` over the master's columns (upper bounds are +∞)."""

    A: sp.csr_matrix
    lower: FloatArray

    def __len__(self) -> int:
        return int(self.A.shape[0])


class RowSeparation(Protocol):
    """Hooks of :meth:`OuterApproximation.run_rows` (Kelley / outer approximation on a
    master whose rows under-estimate a convex objective).

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


@dataclass(frozen=True)
class RowOAOptions:
    """Options of :meth:`OuterApproximation.run_rows`.

    Stopping rule ``U − LB ≤ abs_tol + mip_gap·|U|``; ``lp_rounds`` rounds of Kelley's
    method on the master's LP relaxation first (stopped early when no cut is violated or
    the LP value rose by less than 1e-6 relative); ``stall_rounds`` integer masters in a
    row without a rise of the lower bound stop the run (it then sits at the master
    solver's own tolerances); ``master_gap(U, LB)`` is the relative gap each master is
    solved to (its dual bound is a lower bound at any gap)."""

    master_gap: Callable[[float, float], float]
    mip_gap: float = 1e-4
    abs_tol: float = 1e-9
    lp_rounds: int = 30
    stall_rounds: int = 5
    budget: Budget | None = None
    time_limit: float | None = None
    threads: int | None = None
    seed: int = 0
    verbose: bool = False
    optimality_tol: float = 1e-6
    callback: Callable[[dict[str, Any]], None] | None = None


class RebuiltMaster:
    """A master for backends without in-place rows: the model is rebuilt with every
    cut and solved from scratch on each call (the :class:`PersistentSolver` calls the
    row engine makes: ``add_rows``, ``set_integrality``, ``solve``)."""

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


class _RowMasterRun:
    """One run of :meth:`OuterApproximation.run_rows`: the master, the incumbent, the
    bounds and the counters, and the two phases (LP warm-up, integer masters)."""

    def __init__(self, hooks: RowSeparation, master: StandardForm, backend: SolverBackend,
                 initial: CutRows, options: RowOAOptions,
                 start: FloatArray | None) -> None:
        self.t0 = time.perf_counter()  # wall time for the report; the deadline: ``clock``
        self.hooks = hooks
        self.backend = backend
        self.options = options
        self.clock = Budget.coerce(options.budget, options.time_limit)
        self.history: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.best: FloatArray | None = None
        self.ub = math.inf
        self.lb = -math.inf
        self.iterations = self.solves = self.nodes = 0
        if start is not None:
            self.offer(start)
        self.solver: PersistentSolver | RebuiltMaster = (
            backend.persistent(master) if Capability.PERSISTENT in backend.capabilities
            else RebuiltMaster(backend, master))
        self.solver.add_rows(initial.A, initial.lower, np.full(len(initial), math.inf))
        self.n_cuts = len(initial)
        self.integer = np.asarray(master.integrality, dtype=bool)

    # ------------------------------------------------------------------ bookkeeping
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
        self.solver.add_rows(rows.A, rows.lower, np.full(len(rows), math.inf))
        self.n_cuts += len(rows)
        return len(rows)

    def converged(self) -> bool:
        o = self.options
        return math.isfinite(self.ub) and self.ub - self.lb <= o.abs_tol + o.mip_gap * abs(self.ub)

    def record(self, phase: str, added: int) -> None:
        info = {"iteration": self.iterations, "phase": phase,
                "time": time.perf_counter() - self.t0, "ub": self.ub, "lb": self.lb,
                "gap": relative_gap(self.ub, self.lb), "cuts": added}
        self.history.append(info)
        if self.options.callback is not None:
            self.options.callback(dict(info))

    def solve_master(self, x_start: FloatArray | None) -> SolveResult | None:
        """One master solve at the scheduled gap; None when the backend failed (noted:
        the incumbent and the bound of the masters solved so far stand)."""
        o = self.options
        self.solves += 1
        mopts = SolveOptions(time_limit=self.clock.remaining(),
                             mip_gap=o.master_gap(self.ub, self.lb), threads=o.threads,
                             seed=o.seed, verbose=o.verbose, optimality_tol=o.optimality_tol,
                             node_limit=self.clock.work_left())
        try:
            res = self.solver.solve(mopts, x_start)
            # a master is a unit of work, and so is each of its branch-and-bound nodes
            self.clock.charge(1 + int(res.nodes or 0))
            return res
        except SolverError as exc:
            self.notes.append(f"master solve {self.solves} failed ({exc}); stopped with "
                              "the incumbent and the bound of the masters solved before.")
            return None

    # ------------------------------------------------------------------ phases
    def warm_up(self) -> None:
        """Kelley's method on the LP relaxation (valid bounds, cheap cuts), until no cut
        is violated or the LP value rose by less than 1e-6 relative."""
        if self.options.lp_rounds <= 0 or not self.integer.any():
            return
        self.solver.set_integrality(np.zeros_like(self.integer))
        prev = -math.inf
        for _ in range(self.options.lp_rounds):
            if self.clock.remaining() == 0.0 or self.clock.work_left() == 0:
                break
            res = self.solve_master(None)
            if res is None or res.x is None:
                break
            self.iterations += 1
            val = res.bounds.primal
            self.lb = max(self.lb, float(res.bounds.dual))
            added = self.add(self.hooks.separate(np.asarray(res.x, dtype=float)))
            self.record("lp", added)
            if added == 0 or val - prev <= 1e-6 * max(1.0, abs(val)):
                break
            prev = val
        self.solver.set_integrality(self.integer)

    def separate_point(self, x: FloatArray) -> int:
        """Offer the master point (and its polished point) and add their cuts."""
        p = self.hooks.point(x)
        self.offer(p)
        added = self.add(self.hooks.separate(x))
        polished = self.hooks.polish(p)
        if polished is not None:
            self.offer(polished)
            added += self.add(self.hooks.cuts_at(np.asarray(polished, dtype=float)))
        return added

    def integer_masters(self) -> tuple[TerminationReason, Limit | None]:
        """Integer masters until the bounds meet, a stop rule (stalled bound, no violated
        cut) or a limit; the loop's termination and limit."""
        stalled = 0
        while True:
            if self.converged():
                return TerminationReason.OPTIMAL, None
            if self.clock.remaining() == 0.0:
                return TerminationReason.FEASIBLE, Limit.TIME
            if self.clock.work_left() == 0:
                return TerminationReason.FEASIBLE, Limit.NODE
            x_start = self.hooks.master_start(self.best) if self.best is not None else None
            lb_before = self.lb
            res = self.solve_master(x_start)
            if res is None:
                return TerminationReason.FEASIBLE, Limit.OTHER
            self.nodes += int(res.nodes or 0)
            self.iterations += 1
            if res.termination is TerminationReason.INFEASIBLE:
                return TerminationReason.INFEASIBLE, None
            if res.termination not in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE) \
                    and res.x is None and res.limit is None:
                self.notes.append(f"master solve ended with {res.termination.value}: "
                                  f"{res.raw_status}")
                return res.termination, None
            if math.isfinite(res.bounds.dual):
                self.lb = max(self.lb, float(res.bounds.dual))
            added = 0 if res.x is None else self.separate_point(np.asarray(res.x, dtype=float))
            self.record("mip", added)
            lb = self.lb
            stalled = stalled + 1 if lb <= lb_before + 1e-12 * max(1.0, abs(lb)) else 0
            if stalled >= self.options.stall_rounds:
                self.notes.append(f"lower bound stalled for {self.options.stall_rounds} "
                                  "master solves (the master's own tolerances); stopped at "
                                  "the gap reached.")
                return TerminationReason.FEASIBLE, None
            if res.limit is not None and res.limit is not Limit.GAP:
                return TerminationReason.FEASIBLE, res.limit
            if added == 0:
                # no cut is violated at the master point: the master value is the true
                # objective there, so U <= master value and LB is the master's dual
                # bound; another round would return the same master (stop, gap as it is)
                return TerminationReason.FEASIBLE, None

    def run(self) -> OAResult:
        self.warm_up()
        termination, limit = self.integer_masters()
        lb = self.lb
        converged = self.converged()
        if converged:
            # the status is decided by the one rule, at the loop's own tolerance
            # ``abs_tol + mip_gap·|U|`` written as a relative gap
            o = self.options
            tol = o.mip_gap + o.abs_tol / max(abs(self.ub), GAP_DENOMINATOR_FLOOR)
            verdict = promote(self.ub, lb, finished=True, mip_gap=tol)
            termination, limit, lb = verdict.termination, verdict.limit, verdict.lower_bound
            self.notes.extend(verdict.notes)
        elif self.best is None and termination is TerminationReason.FEASIBLE:
            termination = TerminationReason.NO_SOLUTION_FOUND
        return OAResult(z=self.best, value=self.ub, lower_bound=lb,
                        gap=relative_gap(self.ub, lb), termination=termination, limit=limit,
                        iterations=self.iterations, n_cuts=self.n_cuts,
                        wall_time=time.perf_counter() - self.t0, history=tuple(self.history),
                        cut_points=(), backend=self.backend.name,
                        backend_version=self.backend.version(), notes=tuple(self.notes),
                        converged=converged, nodes=self.nodes, master_solves=self.solves)
