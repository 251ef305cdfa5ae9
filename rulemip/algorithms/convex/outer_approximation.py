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

The loop itself — stop rules, the master-gap schedule, the history record, the HiGHS
near-limit guard — is the one of :mod:`rulemip.algorithms.convex.oa_loop`; this class is its
single-ν master (:class:`~rulemip.algorithms.convex.oa_loop.MasterAdapter`). The same loop on a
master that is a whole linear model with its own objective (several epigraph columns, e.g.
the tangent-cut master of a model with loss terms, ``docs/explanation/interval_cover.md``
§5) is :func:`~rulemip.algorithms.convex.oa_loop.run_rows`; the options and the result are
:mod:`rulemip.algorithms.convex.oa_options`. Seed cuts → relaxation → integer OA is
:mod:`rulemip.algorithms.convex.oa_relaxation`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.algorithms.convex.oa_loop import (
    CutRows,
    MasterLoop,
    RebuiltMaster,
    RowSeparation,
    Separation,
    run_rows,
)
from rulemip.algorithms.convex.oa_options import (
    MasterGapSchedule,
    OAIteration,
    OAOptions,
    OAResult,
    check_options,
)
from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.model.mip_model import MIPModel
from rulemip.solvers.base import (
    PERSISTENT_MASTER_NEEDS,
    PersistentSolver,
    resolve_backend,
)
from rulemip.solvers.result import Limit, SolveOptions, TerminationReason

FloatArray = NDArray[np.float64]

_SMALL_COEF = 1e-9  # HiGHS drops matrix entries below this; we relax them away ourselves
_BOUND_MARGIN = 1e-8  # relative safety margin on master bounds (solver tolerances)


class ConvexOracle(Protocol):
    """A convex function on the z block: value and a (sub)gradient."""

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]: ...


class OuterApproximation:
    """Outer approximation on a persistent single-ν master (module docstring).

    Parameters
    ----------
    oracle : convex q on the z block (:class:`ConvexOracle`).
    feasible : model holding the z block (columns ``z_block``) and the feasibility rows;
        its objective is ignored.
    z_block : name of the variable block q is a function of.
    options : :class:`~rulemip.algorithms.convex.oa_options.OAOptions`.
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
        check_options(self.options)
        sf = feasible.to_standard_form()
        self._zcols = np.asarray(feasible.var(z_block).ids, dtype=np.int64).ravel()
        self._n0 = sf.n_cols
        self._col_lb = sf.col_lower[self._zcols].astype(float)
        self._col_ub = sf.col_upper[self._zcols].astype(float)
        self._zint = sf.integrality[self._zcols].astype(bool) & (not self.options.relax)
        backend = resolve_backend(self.options.solver, PERSISTENT_MASTER_NEEDS,
                                  outer_approximation=False)[0]
        self.backend_name = backend.name
        self._backend_version = backend.version()
        base = dataclasses.replace(sf, c=np.zeros(sf.n_cols), Q=None, offset=0.0,
                                   loss_terms=())
        self._master: PersistentSolver = backend.persistent(base)
        self._nu = self._n0
        self._master.add_columns(np.array([1.0]), np.array([-math.inf]),
                                np.array([math.inf]), np.array([False]))
        if self.options.relax:
            self._master.set_integrality(np.zeros(self._n0 + 1, dtype=bool))
        self.integer = np.zeros(0, dtype=bool)  # no LP warm-up: ``relax`` is the LP loop
        self.lower_bound_hint = float(lower_bound_hint)
        self._scale: float | None = None
        self._cut_rhs: list[float] = []
        self._cut_coef: list[FloatArray] = []
        self._cut_points: list[FloatArray] = []
        self._seen: set[bytes] = set()
        self._ub = math.inf
        self._z_best: FloatArray | None = None
        self._t_start = time.perf_counter()
        self._budget = self.options.clock()

    # ------------------------------------------------------------------ cuts
    @property
    def master(self) -> PersistentSolver:
        return self._master

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

    # ------------------------------------------------------------------ the adapter
    def master_start(self) -> FloatArray | None:
        """The incumbent with its smallest ν, for a master with integer columns."""
        if self._z_best is None or not self._zint.any():
            return None
        start = np.full(self._master.n_cols, np.nan)
        start[self._zcols] = self._z_best
        start[self._nu] = self._nu_at(self._z_best) + 1e-9
        return start

    def bound(self, dual: float, options: OAOptions) -> float:
        """The master's bound in units of q, less a margin for its feasibility tolerances
        (HiGHS: 1e-7 on rows, 1e-6 on integrality; observed overshoots were ~1e-9
        relative), capped at a quarter of the requested tolerance."""
        assert self._scale is not None
        db = dual * self._scale
        margin = min(_BOUND_MARGIN * max(abs(db), self._scale),
                     0.25 * (options.abs_tol + options.rel_tol * abs(db)))
        return db - margin

    def separate(self, x: FloatArray, *, relaxed: bool, clock: Budget) -> Separation:
        """The cut at the master's (rounded) point when it is new, and at the heuristic's
        points from it."""
        zh = self._round(x[self._zcols])
        if self._key(zh) in self._seen:
            return Separation(0, False)
        self.add_cut_at(zh)
        n_heuristic = 0
        if self.heuristic is not None and not clock.expired():
            for z in self.heuristic(zh):
                self.add_cut_at(z)
                n_heuristic += 1
        return Separation(1 + n_heuristic, True, n_heuristic)

    # ------------------------------------------------------------------ main loop
    def run(self) -> OAResult:
        """Iterate masters and cuts until the bounds meet or a limit is hit
        (:class:`~rulemip.algorithms.convex.oa_loop.MasterLoop`)."""
        if not self._cut_rhs:
            self._t_start = time.perf_counter()
            self._budget = self.options.clock()
        loop = MasterLoop(self, self.options, lower_bound_hint=self.lower_bound_hint,
                          clock=self._budget, t0=self._t_start, remaining=self._remaining)
        if not self._cut_rhs:
            z0, why = self._feasible_point()
            if z0 is None:
                if why is TerminationReason.INFEASIBLE:
                    return self._result(loop, why, None)
                loop.notes.append(f"no feasible point found ({why.value}).")
                return self._result(loop, TerminationReason.NO_SOLUTION_FOUND, None,
                                    decided=True)
            self.add_cut_at(z0)
        term, limit = loop.run()
        return self._result(loop, term, limit)

    def _result(self, loop: MasterLoop, term: TerminationReason, limit: Limit | None,
                decided: bool = False) -> OAResult:
        res = loop.result(term, limit, z=self.incumbent, cut_points=tuple(self._cut_points),
                          backend=self.backend_name, backend_version=self._backend_version)
        if decided:  # no feasible point: the time limit is named, as before
            return dataclasses.replace(res, termination=term, limit=Limit.TIME)
        return res

    def _remaining(self) -> float | None:
        return self._budget.remaining()

    def _round(self, z: FloatArray) -> FloatArray:
        out = np.asarray(z, dtype=float).copy()
        out[self._zint] = np.rint(out[self._zint])
        return np.clip(out, self._col_lb, self._col_ub)

    def _feasible_point(self) -> tuple[FloatArray | None, TerminationReason]:
        """Any point of Z (a master solve with ν fixed to 0)."""
        self._master.set_col_bounds(np.array([self._nu]), np.array([0.0]), np.array([0.0]))
        res = self._master.solve(SolveOptions(time_limit=self._remaining(),
                                             threads=self.options.threads,
                                             seed=self.options.seed))
        self._master.set_col_bounds(np.array([self._nu]), np.array([-math.inf]),
                                   np.array([math.inf]))
        if res.x is None:
            return None, res.termination
        return self._round(res.x[self._zcols]), res.termination


def outer_approximation(oracle: ConvexOracle, feasible: MIPModel, *,
                        warm_starts: tuple[FloatArray, ...] | list[FloatArray] = (),
                        options: OAOptions | None = None, z_block: str = "z",
                        lower_bound_hint: float = -math.inf) -> OAResult:
    """Functional form: cuts at every warm start, then :meth:`OuterApproximation.run`."""
    oa = OuterApproximation(oracle, feasible, z_block, options, lower_bound_hint)
    for z in warm_starts:
        oa.add_cut_at(np.asarray(z, dtype=float))
    return oa.run()


__all__ = ["ConvexOracle", "CutRows", "MasterGapSchedule", "OAIteration", "OAOptions",
           "OAResult", "OuterApproximation", "RebuiltMaster",
           "RowSeparation", "outer_approximation", "run_rows"]
