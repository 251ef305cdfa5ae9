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

__all__ = ["CbcBackend"]


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
        for j in np.flatnonzero(sf.c).tolist():
            objective.SetCoefficient(xs[j], float(sf.c[j]))
        objective.SetOffset(float(sf.offset))
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
        result = self._result(sf, solver, xs, status, opts, wall, load, notes)
        if progress:
            progress.report(result.bounds.primal, result.bounds.dual, result.nodes, wall)
        return result

    def _result(self, sf: StandardForm, solver: Any, xs: list[Any], status: int,
                opts: SolveOptions, wall: float, load: float, notes: list[str]
                ) -> SolveResult:
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
            bound = float(solver.Objective().BestBound()) if is_mip else primal
            if math.isfinite(bound):
                dual = bound
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
