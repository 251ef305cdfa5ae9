r"""CP-SAT backend (OR-Tools ``ortools.sat``): pure-integer linear models with indicators.

CP-SAT has **no continuous variables** and works on integers only, so it takes a
:class:`~rulemip.model.StandardForm` with

* every column integer with finite bounds (a continuous column, or an integer column with
  an infinite bound, raises :class:`~rulemip.exceptions.UnsupportedCapabilityError`; the
  backend lacks ``Capability.LP`` so ``select_backend`` never picks it for such models);
* linear rows, a linear objective and indicator constraints ``z = v ⇒ aᵀx (<=|>=|==) b``
  (``OnlyEnforceIf`` on the literal ``z`` or ``¬z``); no quadratic objective, no loss terms.

Exact integer scaling: every coefficient ``a`` is read as the shortest decimal that
prints as the same double (``repr``), and each row (each indicator, the objective) is
multiplied by the least common multiple ``m`` of its coefficients' denominators, giving
integer coefficients equal to ``m·a`` exactly. A row's bounds become
``⌈m·ℓ⌉ <= m·aᵀx <= ⌊m·u⌋``, which is the same set of integer points. A row whose ``m``
exceeds ``10^9`` or whose scaled coefficients exceed ``2^53`` is refused with
:class:`~rulemip.exceptions.UnsupportedCapabilityError` (round the data or use a MILP
backend). The objective is ``(scaled objective)/m + c_0``; ``primal`` is recomputed from
``x``, ``dual`` is CP-SAT's best objective bound divided by ``m`` (valid at any stop).

Options: ``time_limit`` → ``max_time_in_seconds``, ``threads`` → ``num_workers`` (CP-SAT's
default, all cores, when ``None``; its parallel portfolio is not deterministic, so use
``threads=1`` for runs reproducible by seed), ``seed`` → ``random_seed``, ``mip_gap`` →
``relative_gap_limit``; CP-SAT has no node limit (``node_limit`` is recorded in ``notes``).
A start becomes solution hints (``AddHint``). ``options.callback`` runs at every improving
solution; returning ``True`` calls ``StopSearch`` (``Limit.INTERRUPTED``).
``options.extra`` sets raw ``SatParameters`` fields.
"""

from __future__ import annotations

import functools
import importlib.metadata
import math
import time
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError, SolverError
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

__all__ = ["CpSatBackend", "scale_to_integers"]

#: largest multiplier used to make a row integral
MAX_SCALE = 10**9
#: largest scaled coefficient / bound magnitude accepted (exact in a double)
MAX_INTEGER = 2**53


@functools.lru_cache(maxsize=1)
def _version() -> str:
    try:
        return f"OR-Tools {importlib.metadata.version('ortools')} (CP-SAT)"
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source builds
        import ortools

        return f"OR-Tools {getattr(ortools, '__version__', 'unknown')} (CP-SAT)"


def _decimal(v: float) -> Fraction:
    return Fraction(repr(float(v)))


def scale_to_integers(values: NDArray[np.float64] | list[float], what: str
                      ) -> tuple[list[int], int]:
    """Integers ``m·a`` for the coefficients ``a`` (read as shortest decimals) and ``m``.

    Parameters
    ----------
    values : array of float
        The coefficients of one row (or of the objective).
    what : str
        How to name the row in an error.

    Returns
    -------
    (list of int, int)
        The scaled coefficients and the multiplier ``m`` (a positive integer).

    Raises
    ------
    UnsupportedCapabilityError
        When ``m`` would exceed :data:`MAX_SCALE` or a scaled value :data:`MAX_INTEGER`.
    """
    fracs = [_decimal(v) for v in np.asarray(values, dtype=float).tolist()]
    mult = 1
    for f in fracs:
        mult = math.lcm(mult, f.denominator)
        if mult > MAX_SCALE:
            raise reject("cpsat", f"the coefficient {float(f)!r} of {what} exactly",
                         f"its decimals need a scale factor above {MAX_SCALE:.0e}; round the "
                         "data to fewer decimals or use a MILP backend ('highs', 'scip').")
    ints = [int(f * mult) for f in fracs]
    if ints and max(abs(a) for a in ints) > MAX_INTEGER:
        raise reject("cpsat", f"{what} after integer scaling (a coefficient exceeds 2^53)",
                     "rescale the model or use a MILP backend ('highs', 'scip').")
    return ints, mult


def _scaled_bound(v: float, mult: int, upper: bool) -> int | None:
    if math.isinf(v):
        return None
    f = _decimal(v) * mult
    return math.floor(f) if upper else math.ceil(f)


def _check_supported(model: StandardForm) -> None:
    check_supported(CpSatBackend(), model)
    lb, ub = model.col_lower, model.col_upper
    bad = ~(np.isfinite(lb) & np.isfinite(ub))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        name = model.col_names[j] if j < len(model.col_names) else f"x{j}"
        raise reject("cpsat", f"the integer column {name!r} with an infinite bound",
                     "CP-SAT needs finite bounds on every column; set them "
                     "(MIPModel.set_bounds) or use a MILP backend.")
    if np.any(np.abs(lb) > MAX_INTEGER) or np.any(np.abs(ub) > MAX_INTEGER):
        raise reject("cpsat", "column bounds above 2^53 in magnitude",
                     "tighten the bounds or use a MILP backend.")


class _Loaded:
    """A StandardForm translated into one ``cp_model.CpModel``."""

    def __init__(self, model: StandardForm) -> None:
        from ortools.sat.python import cp_model

        _check_supported(model)
        self.cp = cp_model
        self.m = cp_model.CpModel()
        self.model = model
        lb = np.ceil(model.col_lower - 1e-9).astype(np.int64)
        ub = np.floor(model.col_upper + 1e-9).astype(np.int64)
        names = model.col_names
        self.vars: list[Any] = []
        for j in range(model.n_cols):
            name = names[j] if j < len(names) else f"x{j}"
            lo, hi = int(lb[j]), int(ub[j])
            if lo >= 0 and hi <= 1 and lo <= hi:
                v = self.m.new_bool_var(name)  # a literal, usable in OnlyEnforceIf
                if lo == hi:
                    self.m.add(v == lo)
            elif lo <= hi:
                v = self.m.new_int_var(lo, hi, name)
            else:  # no integer in [ℓ, u]: an empty column domain
                v = self.m.new_int_var(0, 0, name)
                self.m.add_bool_or([])
            self.vars.append(v)
        A = sp.csr_matrix(model.A)
        row_names = model.row_names
        for i in range(model.n_rows):
            s, e = A.indptr[i], A.indptr[i + 1]
            label = f"row {row_names[i] if i < len(row_names) else i!r}"
            self._add_linear(A.indices[s:e].tolist(), A.data[s:e].tolist(),
                             float(model.row_lower[i]), float(model.row_upper[i]), label,
                             None)
        for k, ind in enumerate(model.indicators):
            z = self.vars[ind.binary]
            if not (model.integrality[ind.binary] and lb[ind.binary] >= 0
                    and ub[ind.binary] <= 1):
                raise InvalidParameterError(
                    f"indicator {ind.name or k!r}: column {ind.binary} is not binary.")
            lit = z if ind.active_value == 1 else z.Not()
            ind_lo = ind.rhs if ind.sense in (">=", "==") else -math.inf
            ind_hi = ind.rhs if ind.sense in ("<=", "==") else math.inf
            self._add_linear(list(ind.cols), list(ind.vals), ind_lo, ind_hi,
                             f"indicator {ind.name or k!r}", lit)
        c = np.asarray(model.c, dtype=float)
        nz = np.flatnonzero(c)
        self.obj_scale = 1
        self.has_objective = len(nz) > 0
        if self.has_objective:
            coefs, self.obj_scale = scale_to_integers(c[nz], "the objective")
            self.m.minimize(cp_model.LinearExpr.weighted_sum(
                [self.vars[j] for j in nz.tolist()], coefs))
        err = self.m.validate()
        if err:
            raise reject("cpsat", "this model after integer scaling",
                         f"CP-SAT reports: {err.strip()}; rescale the model (smaller "
                         "bounds/coefficients) or use a MILP backend.")

    def _add_linear(self, cols: list[int], vals: list[float], lo: float, hi: float,
                    label: str, lit: Any) -> None:
        merged: dict[int, float] = {}
        for j, a in zip(cols, vals):
            merged[j] = merged.get(j, 0.0) + float(a)
        merged = {j: a for j, a in merged.items() if a != 0.0}
        if math.isinf(lo) and math.isinf(hi):
            return
        if merged:
            coefs, mult = scale_to_integers(list(merged.values()), label)
        else:
            coefs, mult = [], 1
        lo_i = _scaled_bound(lo, mult, upper=False)
        hi_i = _scaled_bound(hi, mult, upper=True)
        for b in (lo_i, hi_i):
            if b is not None and abs(b) > MAX_INTEGER:
                raise reject("cpsat", f"the bound of {label} after integer scaling",
                             "rescale the model or use a MILP backend.")
        infeasible = lo_i is not None and hi_i is not None and lo_i > hi_i
        if not merged:
            infeasible = infeasible or (lo_i is not None and lo_i > 0) or \
                (hi_i is not None and hi_i < 0)
        if infeasible:
            # no integer point satisfies the row: it holds only if its literal is off
            self.m.add_bool_or([] if lit is None else [lit.Not()])
            return
        if not merged:
            return
        expr = self.cp.LinearExpr.weighted_sum([self.vars[j] for j in merged], coefs)
        cp = self.cp
        ct = self.m.add_linear_constraint(expr, cp.INT_MIN if lo_i is None else lo_i,
                                          cp.INT_MAX if hi_i is None else hi_i)
        if lit is not None:
            ct.only_enforce_if(lit)

    def objective(self, scaled: float) -> float:
        return float(scaled) / self.obj_scale + float(self.model.offset)


class CpSatBackend:
    """Google OR-Tools CP-SAT for pure-integer models (see the module docstring)."""

    name = "cpsat"
    capabilities = frozenset({Capability.INTEGER, Capability.INDICATOR,
                              Capability.MIP_START, Capability.DUAL_BOUND})
    unsupported_combinations: tuple[frozenset[Capability], ...] = ()
    install_hint = "pip install 'ortools>=9.12,<9.16'"

    def available(self) -> bool:
        return module_available("ortools")

    def version(self) -> str:
        return _version()

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        """Translate ``model`` to CP-SAT, solve it and report a :class:`SolveResult`."""
        opts, sf, x0 = check_solve_args(model, options, start)
        t0 = time.perf_counter()
        loaded = _Loaded(sf)
        cp_model = loaded.cp
        notes: list[str] = []
        solver = cp_model.CpSolver()
        params = solver.parameters
        if opts.time_limit is not None:
            params.max_time_in_seconds = max(float(opts.time_limit)
                                             - (time.perf_counter() - t0), 0.0)
        if opts.threads is not None:
            params.num_workers = int(opts.threads)
        params.random_seed = int(opts.seed) % (2**31 - 1)
        params.relative_gap_limit = float(opts.mip_gap)
        params.log_search_progress = bool(opts.verbose)
        if opts.node_limit is not None:
            notes.append("CP-SAT has no node limit; `node_limit` ignored.")
        for key, value in opts.extra.items():
            try:
                setattr(params, str(key), value)
            except (AttributeError, TypeError, ValueError) as exc:
                raise InvalidParameterError(
                    f"CP-SAT rejected parameter {key!r}={value!r} in `extra`: {exc}; see "
                    "ortools/sat/sat_parameters.proto for the field names.") from exc
        if x0 is not None:
            lo, hi = sf.col_lower, sf.col_upper
            for j in np.flatnonzero(~np.isnan(x0)).tolist():
                v = round(float(x0[j]))
                if lo[j] - 1e-9 <= v <= hi[j] + 1e-9:
                    loaded.m.add_hint(loaded.vars[j], int(v))
        progress = Progress(opts.callback)
        callback = None
        if progress:
            base: Any = cp_model.CpSolverSolutionCallback

            class _OnSolution(base):  # type: ignore[misc,valid-type]
                def on_solution_callback(self) -> None:
                    if progress.report(loaded.objective(self.objective_value),
                                       loaded.objective(self.best_objective_bound),
                                       int(self.num_branches)):
                        self.stop_search()

            callback = _OnSolution()
        load = time.perf_counter() - t0
        status = solver.solve(loaded.m, callback)
        wall = time.perf_counter() - t0
        result = self._result(loaded, solver, status, opts, wall, load, notes, progress)
        if progress:
            progress.report(result.bounds.primal, result.bounds.dual, result.nodes, wall)
        return result

    def _result(self, loaded: _Loaded, solver: Any, status: Any, opts: SolveOptions,
                wall: float, load: float, notes: list[str], progress: Progress
                ) -> SolveResult:
        cp = loaded.cp
        raw = str(solver.status_name(status))
        has_sol = status in (cp.OPTIMAL, cp.FEASIBLE)
        x = None
        primal, dual = math.inf, -math.inf
        if has_sol:
            x = np.array(solver.values(loaded.vars), dtype=float)
            primal = loaded.model.objective_value(x)
        if loaded.has_objective:
            bound = float(solver.best_objective_bound)
            if math.isfinite(bound):
                dual = loaded.objective(bound)
        limit: Limit | None = None
        if status == cp.OPTIMAL:
            if not loaded.has_objective:
                dual = primal
            term, limit = finished_status(primal, dual, opts)
        elif status == cp.INFEASIBLE:
            term, x, primal, dual = TerminationReason.INFEASIBLE, None, math.inf, math.inf
        elif status in (cp.FEASIBLE, cp.UNKNOWN):
            if progress.interrupt:
                which = Limit.INTERRUPTED
            elif opts.time_limit is not None and wall >= 0.95 * opts.time_limit:
                which = Limit.TIME
            else:
                which = Limit.OTHER
            term, limit = limit_status(has_sol, which)
        else:  # MODEL_INVALID: validated before solving, so a CP-SAT internal problem
            raise SolverError(f"CP-SAT returned {raw} for a validated model.")
        return make_result(term, primal=primal, dual=dual, limit=limit, x=x, wall_time=wall,
                           nodes=int(solver.num_branches), iterations=None, backend="cpsat",
                           backend_version=_version(), options=opts, raw_status=raw,
                           raw_gap=None, notes=[*notes, f"model translation took {load:.3f}s"])
