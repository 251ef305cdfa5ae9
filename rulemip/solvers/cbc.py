r"""CBC backend (COIN-OR Branch-and-Cut through OR-Tools' ``pywraplp``): LP and MILP.

OR-Tools ships CBC inside its linear-solver wrapper
(``pywraplp.Solver.CreateSolver("CBC")``; ortools 9.15 bundles Cbc 2.10), so this backend
needs only ``pip install ortools``. A :class:`~rulemip.model.StandardForm` is loaded as
``NumVar``/``IntVar`` columns, ``RowConstraint(ℓ, u)`` rows and a minimized objective with
offset ``c_0``. CBC takes no quadratic objective, indicator constraints or loss terms
(:class:`~rulemip.exceptions.UnsupportedCapabilityError`; formulations use big-M rows or
the outer-approximation driver).

Status rules (docs/explanation/solving.md): ``OPTIMAL`` when CBC reports optimal and rulemip's
relative gap
between the incumbent and CBC's best bound (``Objective().BestBound()``) is within
``optimality_tol``; a solve stopped by ``time_limit`` is ``FEASIBLE``/``NO_SOLUTION_FOUND``
with ``Limit.TIME`` (``pywraplp`` reports only "feasible"/"not solved", so the limit is
read from the elapsed time). ``primal`` is the objective of ``x`` recomputed exactly.

**The best bound within CBC's cutoff increment.** CBC prunes a node whose bound lies within
its *cutoff increment* of the incumbent — :data:`CUTOFF_INCREMENT`, 1e-5 absolute in the
units of the objective it is given (CbcModel's default; OR-Tools cannot change it) — and
then reports the incumbent's value as its best bound, which may thus lie above the optimum
by up to that much (issue 30: a logistic master at risk 0.62 with its bound 3.6e-6 above
the optimum HiGHS proved; the tangent-cut loop returned a model 1e-6 worse than the
brute-force optimum as ``optimal``). The objective is therefore handed to CBC multiplied by
``F = max(1, OBJECTIVE_TARGET / max|c|)`` (the increment shrinks to 1e-5/F in rulemip's
units; the same master then comes out within 2e-8 of HiGHS's), and the dual bound reported
is ``(best bound − CUTOFF_INCREMENT) / F``: valid whatever CBC pruned.

What the wrapper cannot pass to this CBC build is recorded in ``SolveResult.notes``
instead of being silently dropped: ``threads`` (the bundled CBC is built without threads),
``seed`` and ``extra`` (``SetSolverSpecificParametersAsString`` is not supported for CBC),
``node_limit``, and a MIP start (the CBC interface ignores ``SetHint``). The progress
callback is called once, at the end.
"""

from __future__ import annotations

import functools
import importlib.metadata
import math
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.model.standard_form import StandardForm
from rulemip.solvers._common import (
    Progress,
    check_solve_args,
    finished_status,
    limit_status,
    make_result,
    reject,
)
from rulemip.solvers.base import Capability, check_supported, module_available
from rulemip.solvers.result import Limit, SolveOptions, SolveResult, TerminationReason

__all__ = ["CUTOFF_INCREMENT", "OBJECTIVE_TARGET", "CbcBackend", "objective_factor"]

#: CBC's cutoff increment: a node whose bound is within this of the incumbent (absolute,
#: in the units of the objective CBC is given) is pruned (module docstring)
CUTOFF_INCREMENT = 1e-5
#: the largest objective coefficient CBC is given (smaller objectives are scaled up to it)
OBJECTIVE_TARGET = 1e3


def objective_factor(c: NDArray[np.float64]) -> float:
    """The factor ``F >= 1`` the objective is multiplied by before CBC sees it: its largest
    coefficient becomes :data:`OBJECTIVE_TARGET` (1 for an objective already that large or
    without coefficients)."""
    cmax = float(np.max(np.abs(c))) if len(c) else 0.0
    if not math.isfinite(cmax) or cmax <= 0.0:
        return 1.0
    return max(1.0, OBJECTIVE_TARGET / cmax)


@functools.lru_cache(maxsize=1)
def _cbc_solver_version() -> str | None:
    """CBC's version string, or ``None`` when this OR-Tools build has no CBC."""
    try:
        from ortools.linear_solver import pywraplp
    except ImportError:
        return None
    solver = pywraplp.Solver.CreateSolver("CBC")
    if solver is None:
        return None
    return str(solver.SolverVersion())


@functools.lru_cache(maxsize=1)
def _version() -> str:
    try:
        ort = importlib.metadata.version("ortools")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source builds
        ort = "unknown"
    return f"{_cbc_solver_version() or 'CBC'} (OR-Tools {ort})"


class CbcBackend:
    """CBC through OR-Tools' linear-solver wrapper (see the module docstring)."""

    name = "cbc"
    capabilities = frozenset({Capability.LP, Capability.INTEGER, Capability.DUAL_BOUND})
    unsupported_combinations: tuple[frozenset[Capability], ...] = ()
    install_hint = "pip install 'ortools>=9.12,<9.16'"

    def available(self) -> bool:
        return module_available("ortools") and _cbc_solver_version() is not None

    def version(self) -> str:
        return _version()

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        """Load ``model`` into a fresh CBC solver and solve it."""
        from ortools.linear_solver import pywraplp

        opts, sf, x0 = check_solve_args(model, options, start)
        check_supported(self, sf)
        t0 = time.perf_counter()
        solver = pywraplp.Solver.CreateSolver("CBC")
        if solver is None:  # pragma: no cover - checked by available()
            raise reject("cbc", "models in this environment",
                         f"this OR-Tools build has no CBC; `{self.install_hint}`.")
        inf = solver.infinity()

        def bnd(v: float) -> float:
            return -inf if v == -math.inf else (inf if v == math.inf else float(v))

        names = sf.col_names
        xs: list[Any] = []
        for j in range(sf.n_cols):
            name = names[j] if j < len(names) else f"x{j}"
            lo, hi = bnd(sf.col_lower[j]), bnd(sf.col_upper[j])
            xs.append(solver.IntVar(lo, hi, name) if sf.integrality[j]
                      else solver.NumVar(lo, hi, name))
        A = sp.csr_matrix(sf.A)
        rnames = sf.row_names
        for i in range(sf.n_rows):
            row = solver.RowConstraint(bnd(sf.row_lower[i]), bnd(sf.row_upper[i]),
                                       rnames[i] if i < len(rnames) else f"r{i}")
            s, e = A.indptr[i], A.indptr[i + 1]
            for j, a in zip(A.indices[s:e].tolist(), A.data[s:e].tolist()):
                row.SetCoefficient(xs[j], row.GetCoefficient(xs[j]) + float(a))
        objective = solver.Objective()
        factor = objective_factor(np.asarray(sf.c, dtype=float))
        for j in np.flatnonzero(sf.c).tolist():
            objective.SetCoefficient(xs[j], factor * float(sf.c[j]))
        objective.SetOffset(factor * float(sf.offset))
        objective.SetMinimization()
        notes: list[str] = []
        if opts.verbose:
            solver.EnableOutput()
        else:
            solver.SuppressOutput()
        if opts.time_limit is not None:
            remaining = max(float(opts.time_limit) - (time.perf_counter() - t0), 0.0)
            solver.SetTimeLimit(max(int(remaining * 1000), 1))
        if opts.threads is not None and opts.threads > 1:
            notes.append("the CBC bundled with OR-Tools is built without threads; "
                         "`threads` ignored.")
        if opts.seed:
            notes.append("OR-Tools passes no seed to CBC; `seed` ignored (CBC is "
                         "deterministic).")
        if opts.node_limit is not None:
            notes.append("OR-Tools passes no node limit to CBC; `node_limit` ignored.")
        if opts.extra:
            notes.append("OR-Tools cannot pass raw parameters to CBC; `extra` ignored.")
        if x0 is not None:
            notes.append("the OR-Tools CBC interface takes no MIP start; `start` ignored.")
        params = pywraplp.MPSolverParameters()
        params.SetDoubleParam(params.RELATIVE_MIP_GAP, float(opts.mip_gap))
        progress = Progress(opts.callback)
        load = time.perf_counter() - t0
        status = solver.Solve(params)
        wall = time.perf_counter() - t0
        result = self._result(sf, solver, xs, status, opts, wall, load, notes, factor)
        if progress:
            progress.report(result.bounds.primal, result.bounds.dual, result.nodes, wall)
        return result

    def _result(self, sf: StandardForm, solver: Any, xs: list[Any], status: int,
                opts: SolveOptions, wall: float, load: float, notes: list[str],
                factor: float = 1.0) -> SolveResult:
        from ortools.linear_solver import pywraplp

        S = pywraplp.Solver
        raw = {S.OPTIMAL: "OPTIMAL", S.FEASIBLE: "FEASIBLE", S.INFEASIBLE: "INFEASIBLE",
               S.UNBOUNDED: "UNBOUNDED", S.ABNORMAL: "ABNORMAL", S.NOT_SOLVED: "NOT_SOLVED",
               S.MODEL_INVALID: "MODEL_INVALID"}.get(status, str(status))
        is_mip = bool(sf.is_mip)
        has_sol = status in (S.OPTIMAL, S.FEASIBLE)
        x = None
        primal, dual = math.inf, -math.inf
        if has_sol:
            x = np.array([v.solution_value() for v in xs], dtype=float)
            primal = sf.objective_value(x)
            # CBC's best bound, in its objective's units, lowered by its cutoff increment
            # (it may have pruned within it); back to rulemip's units
            bound = (float(solver.Objective().BestBound()) - CUTOFF_INCREMENT) / factor \
                if is_mip else primal
            if math.isfinite(bound):
                dual = min(bound, primal)
        limit: Limit | None = None
        timed_out = opts.time_limit is not None and wall >= 0.95 * opts.time_limit
        if status == S.OPTIMAL:
            if is_mip:
                term, limit = finished_status(primal, dual, opts)
            else:
                term, dual = TerminationReason.OPTIMAL, primal
        elif status == S.INFEASIBLE:
            term, x, primal, dual = TerminationReason.INFEASIBLE, None, math.inf, math.inf
        elif status == S.UNBOUNDED:
            term, x, primal, dual = TerminationReason.UNBOUNDED, None, -math.inf, -math.inf
        elif status == S.FEASIBLE or (status == S.NOT_SOLVED and timed_out):
            term, limit = limit_status(has_sol, Limit.TIME if timed_out else Limit.OTHER)
        elif status == S.ABNORMAL:
            term, x, primal, dual = TerminationReason.NUMERICAL_ERROR, None, math.inf, -math.inf
        else:  # NOT_SOLVED without a limit, MODEL_INVALID
            term, x, primal, dual = TerminationReason.ERROR, None, math.inf, -math.inf
        return make_result(term, primal=primal, dual=dual, limit=limit, x=x, wall_time=wall,
                           nodes=int(solver.nodes()) if is_mip else None,
                           iterations=int(solver.iterations()), backend="cbc",
                           backend_version=_version(), options=opts, raw_status=raw,
                           notes=[*notes, f"model loading took {load:.3f}s"])
