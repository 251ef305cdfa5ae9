r"""HiGHS backend (``highspy``): LP, MILP, continuous convex QP; persistent masters.

HiGHS solves

.. math::
    \min\; c^\top x + \tfrac12 x^\top Q x + c_0 \quad\text{s.t.}\quad
    \ell^{row} \le A x \le u^{row},\ \ell \le x \le u,\ x_j \in \mathbb{Z}\ (j \in I)

with ``Q = 0`` whenever ``I`` is non-empty: HiGHS has **no MIQP**. A model with a quadratic
objective *and* integer columns raises :class:`~rulemip.exceptions.UnsupportedCapabilityError`
(declared once in :attr:`HighsBackend.unsupported_combinations`), as do
indicator constraints and separable loss terms — formulations reach those through big-M
rows or the outer-approximation driver.

Status rules (docs/explanation/solving.md): ``OPTIMAL`` only when HiGHS finished and rulemip's
relative gap is
within ``optimality_tol``; HiGHS stopping at ``mip_rel_gap = options.mip_gap`` above that
is ``FEASIBLE`` with ``Limit.GAP``. HiGHS's absolute gap criterion (``mip_abs_gap``,
default ``1e-6`` in HiGHS) is set to 0 so that it cannot end a solve whose relative gap is
still open; pass ``extra={"mip_abs_gap": ...}`` to change it. The dual bound of a MIP is
HiGHS's ``mip_dual_bound`` (valid at any stop); that of an LP/QP is its optimal objective,
and ``-inf`` when an LP stops early. HiGHS runs with ``mip_feasibility_tolerance = 1e-7``
(default 1e-6; equal to its ``primal_feasibility_tolerance``; 1e-9 made OA masters end in
"Solve error"), so that its dual bound is off by about 1e-7 per unit of objective weight;
rulemip lowers claimed bounds by that (:func:`rulemip.solvers.status.bound_slack`,
docs/explanation/solving.md).

``options.callback`` is called with a progress dict at every improving MIP solution
(HiGHS's ``kCallbackMipImprovingSolution``) and once at the end of every solve; if it
returns ``True`` the MIP is interrupted at HiGHS's next interrupt check
(``Limit.INTERRUPTED``). ``options.extra`` is passed to HiGHS as raw options
(``setOptionValue``).

Time limits: besides HiGHS's own ``time_limit``, every solve with a finite limit
subscribes a watchdog (:class:`_Watchdog`) to HiGHS's interrupt callbacks
(``cbSimplexInterrupt``, ``cbIpmInterrupt``, and ``cbMipInterrupt`` for a MIP), which
interrupts the solve once the limit plus a grace of min(5 %, 0.5 s) has passed; the result
is then ``Limit.TIME`` with a note. So a solve ends within max(10 %, 2 s) of its limit even
where HiGHS does not check its own (one master ran 17.2 s on an 8.1 s limit, issue 30).
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

from rulemip.exceptions import InvalidParameterError, SolverError
from rulemip.model.standard_form import StandardForm
from rulemip.solvers._common import (
    Progress,
    check_model,
    check_options,
    check_start,
    finished_status,
    limit_status,
    make_result,
    reject,
)
from rulemip.solvers.base import Capability, check_supported, module_available
from rulemip.solvers.result import Limit, SolveOptions, SolveResult, TerminationReason

__all__ = ["HighsBackend", "HighsPersistent"]

_INT32_MAX = 2**31 - 1


@functools.lru_cache(maxsize=1)
def _version() -> str:
    try:
        return importlib.metadata.version("highspy")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - source builds
        import highspy

        return str(highspy.Highs().version())


class HighsPersistent:
    """A model loaded once into a ``highspy.Highs`` object; grows and re-solves warm.

    Rows and columns are appended with HiGHS's ``addRows`` / ``addCols``, bounds, costs and
    integrality changed in place, so an LP re-solve starts from the previous simplex basis
    and a MIP re-solve may reuse the previous solution as its start.
    """

    def __init__(self, model: StandardForm) -> None:
        import highspy

        model = check_model(model)
        check_supported(HighsBackend(), model)
        self._hs = highspy
        self._h = highspy.Highs()
        self._h.setOptionValue("output_flag", False)
        self._c = np.asarray(model.c, dtype=float).copy()
        self._offset = float(model.offset)
        self._integer = np.asarray(model.integrality, dtype=bool).copy()
        self._has_q = model.has_quadratic
        self._load(model)

    # ------------------------------------------------------------------ loading
    def _load(self, model: StandardForm) -> None:
        hs = self._hs
        lp = hs.HighsLp()
        n, m = model.n_cols, model.n_rows
        lp.num_col_ = n
        lp.num_row_ = m
        lp.col_cost_ = np.asarray(model.c, dtype=float)
        lp.col_lower_ = np.asarray(model.col_lower, dtype=float)
        lp.col_upper_ = np.asarray(model.col_upper, dtype=float)
        lp.row_lower_ = np.asarray(model.row_lower, dtype=float)
        lp.row_upper_ = np.asarray(model.row_upper, dtype=float)
        lp.offset_ = float(model.offset)
        A = sp.csc_matrix(model.A, shape=(m, n))
        A.sum_duplicates()
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.num_col_ = n
        lp.a_matrix_.num_row_ = m
        lp.a_matrix_.start_ = A.indptr.astype(np.int32)
        lp.a_matrix_.index_ = A.indices.astype(np.int32)
        lp.a_matrix_.value_ = A.data.astype(float)
        if self._integer.any():
            lp.integrality_ = [hs.HighsVarType.kInteger if b else hs.HighsVarType.kContinuous
                               for b in self._integer]
        hm = hs.HighsModel()
        hm.lp_ = lp
        if self._has_q:
            assert model.Q is not None
            # HiGHS takes the lower triangle of Q, column-wise; objective ½xᵀQx + cᵀx
            low = sp.tril(sp.csc_matrix(model.Q), format="csc")
            low.sum_duplicates()
            hess = hs.HighsHessian()
            hess.dim_ = n
            hess.format_ = hs.HessianFormat.kTriangular
            hess.start_ = low.indptr.astype(np.int32)
            hess.index_ = low.indices.astype(np.int32)
            hess.value_ = low.data.astype(float)
            hm.hessian_ = hess
        self._check(self._h.passModel(hm), "passModel")

    def _check(self, status: Any, what: str) -> None:
        if status == self._hs.HighsStatus.kError:
            raise SolverError(f"HiGHS {what} failed (status {status}).")

    # ------------------------------------------------------------------ protocol
    @property
    def n_rows(self) -> int:
        return int(self._h.getNumRow())

    @property
    def n_cols(self) -> int:
        return int(self._h.getNumCol())

    @property
    def highs(self) -> Any:
        """The underlying ``highspy.Highs`` object (for HiGHS-specific tweaks)."""
        return self._h

    def add_rows(self, A: sp.spmatrix, lower: NDArray[np.float64],
                 upper: NDArray[np.float64]) -> None:
        """Append rows ``lower <= A x <= upper`` (``A``: rows × current columns)."""
        A = sp.csr_matrix(A)
        if A.shape[1] != self.n_cols:
            raise InvalidParameterError(
                f"`A` must have {self.n_cols} columns (one per model column); got {A.shape[1]}.")
        m = A.shape[0]
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (m,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (m,)).copy()
        if m == 0:
            return
        A.sum_duplicates()
        self._check(self._h.addRows(m, lo, hi, int(A.nnz), A.indptr.astype(np.int32),
                                    A.indices.astype(np.int32), A.data.astype(float)),
                    "addRows")

    def delete_rows(self, rows: NDArray[np.int64]) -> None:
        """Remove rows by index (e.g. inactive cuts); later rows shift down."""
        idx = np.unique(np.asarray(rows, dtype=np.int64).ravel())
        if len(idx) == 0:
            return
        if idx[0] < 0 or idx[-1] >= self.n_rows:
            raise InvalidParameterError(f"`rows` must lie in [0, {self.n_rows}).")
        self._check(self._h.deleteRows(len(idx), idx.astype(np.int32)), "deleteRows")

    def add_columns(self, c: NDArray[np.float64], lower: NDArray[np.float64],
                    upper: NDArray[np.float64], integer: NDArray[np.bool_],
                    A_cols: sp.spmatrix | None = None) -> None:
        """Append columns (objective ``c``, bounds, integrality; ``A_cols``: rows × new)."""
        c_arr = np.asarray(c, dtype=float).ravel()
        k = len(c_arr)
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (k,)).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (k,)).copy()
        ints = np.broadcast_to(np.asarray(integer, dtype=bool), (k,)).copy()
        if k == 0:
            return
        if self._has_q and ints.any():
            raise reject("highs", "integer columns in a model with a quadratic objective",
                         "HiGHS has no MIQP.")
        if A_cols is None:
            A = sp.csc_matrix((self.n_rows, k))
        else:
            A = sp.csc_matrix(A_cols)
            if A.shape != (self.n_rows, k):
                raise InvalidParameterError(
                    f"`A_cols` must have shape ({self.n_rows}, {k}); got {A.shape}.")
        A.sum_duplicates()
        first = self.n_cols
        self._check(self._h.addCols(k, c_arr, lo, hi, int(A.nnz), A.indptr.astype(np.int32),
                                    A.indices.astype(np.int32), A.data.astype(float)),
                    "addCols")
        self._c = np.concatenate([self._c, c_arr])
        self._integer = np.concatenate([self._integer, ints])
        if ints.any():
            idx = np.arange(first, first + k, dtype=np.int32)
            self._check(self._h.changeColsIntegrality(k, idx, ints.astype(np.uint8)),
                        "changeColsIntegrality")

    def set_col_bounds(self, cols: NDArray[np.int64], lower: NDArray[np.float64],
                       upper: NDArray[np.float64]) -> None:
        idx = np.asarray(cols, dtype=np.int64).ravel()
        lo = np.broadcast_to(np.asarray(lower, dtype=float), idx.shape).copy()
        hi = np.broadcast_to(np.asarray(upper, dtype=float), idx.shape).copy()
        if len(idx) and (idx.min() < 0 or idx.max() >= self.n_cols):
            raise InvalidParameterError(f"`cols` must lie in [0, {self.n_cols}).")
        self._check(self._h.changeColsBounds(len(idx), idx.astype(np.int32), lo, hi),
                    "changeColsBounds")

    def set_objective(self, c: NDArray[np.float64], offset: float = 0.0) -> None:
        """Replace the linear objective (all columns) and the constant."""
        c_arr = np.asarray(c, dtype=float).ravel()
        if c_arr.shape != (self.n_cols,):
            raise InvalidParameterError(
                f"`c` must have one entry per column ({self.n_cols}); got {c_arr.shape[0]}.")
        n = self.n_cols
        self._check(self._h.changeColsCost(n, np.arange(n, dtype=np.int32), c_arr),
                    "changeColsCost")
        self._check(self._h.changeObjectiveOffset(float(offset)), "changeObjectiveOffset")
        self._c = c_arr.copy()
        self._offset = float(offset)

    def set_integrality(self, integer: NDArray[np.bool_]) -> None:
        """Relax (``False``) or restore (``True``) integrality column by column."""
        ints = np.asarray(integer, dtype=bool).ravel()
        if ints.shape != (self.n_cols,):
            raise InvalidParameterError(
                f"`integer` must have one entry per column ({self.n_cols}); got {ints.shape[0]}.")
        if self._has_q and ints.any():
            raise reject("highs", "integer columns with a quadratic objective",
                         "HiGHS has no MIQP.")
        n = self.n_cols
        self._check(self._h.changeColsIntegrality(n, np.arange(n, dtype=np.int32),
                                                  ints.astype(np.uint8)),
                    "changeColsIntegrality")
        self._integer = ints.copy()

    # ------------------------------------------------------------------ solving
    def _apply_options(self, opts: SolveOptions) -> list[str]:
        h = self._h
        notes: list[str] = []
        h.resetOptions()
        h.setOptionValue("output_flag", bool(opts.verbose))
        h.setOptionValue("time_limit",
                         math.inf if opts.time_limit is None else float(opts.time_limit))
        h.setOptionValue("mip_rel_gap", float(opts.mip_gap))
        h.setOptionValue("mip_abs_gap", 0.0)
        # the dual bound holds only within the feasibility tolerances; at HiGHS's defaults
        # (1e-6 for MIP rows) a Poisson bound lay 7.3e-7 above the optimum (issue 22):
        # rulemip lowers reported bounds by tolerance x objective weight (bound_slack)
        h.setOptionValue("mip_feasibility_tolerance", 1e-7)
        h.setOptionValue("random_seed", int(opts.seed) % (_INT32_MAX + 1))
        if opts.node_limit is not None:
            h.setOptionValue("mip_max_nodes", int(min(opts.node_limit, _INT32_MAX)))
        if opts.iteration_limit is not None:
            h.setOptionValue("simplex_iteration_limit",
                             int(min(opts.iteration_limit, _INT32_MAX)))
        if opts.threads is not None:
            h.setOptionValue("threads", int(opts.threads))
        for key, value in opts.extra.items():
            status = h.setOptionValue(str(key), value)
            if status != self._hs.HighsStatus.kOk:
                raise InvalidParameterError(
                    f"HiGHS rejected option {key!r}={value!r} in `extra`; see the HiGHS "
                    "option list (https://ergo-code.github.io/HiGHS/stable/options/).")
        return notes

    def _set_start(self, start: NDArray[np.float64]) -> None:
        hs = self._hs
        known = ~np.isnan(start)
        if known.all():
            sol = hs.HighsSolution()
            sol.col_value = start.tolist()
            sol.value_valid = True
            status = self._h.setSolution(sol)
        else:
            idx = np.flatnonzero(known).astype(np.int32)
            status = self._h.setSolution(len(idx), idx, start[known].astype(float))
        self._check(status, "setSolution")

    def solve(self, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        """Solve the current model (warm: basis / previous solution kept by HiGHS)."""
        opts = check_options(options)
        x0 = check_start(start, self.n_cols)
        notes = self._apply_options(opts)
        if x0 is not None:
            self._set_start(x0)
        h = self._h
        progress = Progress(opts.callback)
        watch = _Watchdog(opts.time_limit, progress)
        hooks = [h.cbSimplexInterrupt, h.cbIpmInterrupt]
        if self._integer.any():
            hooks.append(h.cbMipInterrupt)
        subscribed: list[tuple[Any, Any]] = []
        if progress and self._integer.any():
            def on_improving(event: Any) -> None:
                out = event.data_out
                progress.report(float(out.objective_function_value),
                                float(out.mip_dual_bound), int(out.mip_node_count),
                                float(out.running_time))

            h.cbMipImprovingSolution.subscribe(on_improving)
            subscribed.append((h.cbMipImprovingSolution, on_improving))
        if watch.needed:
            subscribed.extend(watch.subscribe(hooks))
        t0 = time.perf_counter()
        watch.start()
        try:
            run_status = h.run()
            if (run_status == self._hs.HighsStatus.kError and opts.threads is not None
                    and h.getModelStatus() == self._hs.HighsModelStatus.kNotset):
                # HiGHS's global thread pool was started with another size: rebuild it
                self._hs.Highs.resetGlobalScheduler(True)
                notes.append(f"HiGHS thread pool restarted with {opts.threads} threads.")
                run_status = h.run()
        finally:
            for hook, fn in subscribed:
                hook.unsubscribe(fn)
        wall = time.perf_counter() - t0
        if run_status == self._hs.HighsStatus.kError:
            notes.append("HiGHS run() returned an error status.")
        if watch.fired:
            notes.append(f"stopped by rulemip's deadline check ({opts.time_limit:.3g} s) "
                         "through HiGHS's interrupt callbacks")
        result = self._result(opts, wall, notes, progress, timed_out=watch.fired)
        if progress:
            progress.report(result.bounds.primal, result.bounds.dual, result.nodes, wall)
        return result

    def _result(self, opts: SolveOptions, wall: float, notes: list[str],
                progress: Progress, *, timed_out: bool = False) -> SolveResult:
        hs = self._hs
        h = self._h
        MS = hs.HighsModelStatus
        status = h.getModelStatus()
        info = h.getInfo()
        raw = h.modelStatusToString(status)
        is_mip = bool(self._integer.any())
        has_sol = int(info.primal_solution_status) == int(hs.kSolutionStatusFeasible)
        x = np.asarray(h.getSolution().col_value, dtype=float) if has_sol else None
        primal = float(info.objective_function_value) if has_sol else math.inf
        dual = -math.inf
        if is_mip:
            db = float(info.mip_dual_bound)
            dual = db if not math.isnan(db) else -math.inf
        nodes = int(info.mip_node_count) if is_mip else None
        iters = sum(max(0, int(v)) for v in (info.simplex_iteration_count,
                                             info.ipm_iteration_count,
                                             info.qp_iteration_count))
        raw_gap = float(info.mip_gap) if is_mip else None
        limit: Limit | None = None
        if status == MS.kOptimal:
            if not has_sol:
                term = TerminationReason.NUMERICAL_ERROR
                notes.append("HiGHS reported optimal without a feasible primal solution.")
            elif is_mip:
                term, limit = finished_status(primal, dual, opts)
            else:
                term, dual = TerminationReason.OPTIMAL, primal
        elif status == MS.kModelEmpty:
            term = TerminationReason.OPTIMAL
            x = np.zeros(0)
            primal = dual = self._offset
        elif status == MS.kInfeasible:
            term, x, primal, dual = TerminationReason.INFEASIBLE, None, math.inf, math.inf
        elif status == MS.kUnbounded:
            term, x, primal, dual = TerminationReason.UNBOUNDED, None, -math.inf, -math.inf
        elif status == MS.kUnboundedOrInfeasible:
            term = self._infeasible_or_unbounded(opts, wall, notes)
            x = None
            primal, dual = ((math.inf, math.inf) if term is TerminationReason.INFEASIBLE
                            else (-math.inf, -math.inf))
        elif status in (MS.kTimeLimit, MS.kIterationLimit, MS.kSolutionLimit, MS.kInterrupt,
                        MS.kHighsInterrupt, MS.kMemoryLimit, MS.kObjectiveBound,
                        MS.kObjectiveTarget, MS.kUnknown):
            if status == MS.kTimeLimit:
                which = Limit.TIME
            elif status == MS.kIterationLimit:
                which = Limit.ITERATION
            elif status == MS.kSolutionLimit:
                which = Limit.NODE if opts.node_limit is not None else Limit.OTHER
            elif status in (MS.kInterrupt, MS.kHighsInterrupt):
                which = Limit.TIME if timed_out else Limit.INTERRUPTED
            else:
                which = Limit.OTHER
            if progress.interrupt:
                which = Limit.INTERRUPTED
            if status == MS.kUnknown and not has_sol:
                term, limit = TerminationReason.NUMERICAL_ERROR, None
            else:
                term, limit = limit_status(has_sol, which)
        elif status in (MS.kSolveError, MS.kPresolveError, MS.kPostsolveError):
            term, x, primal, dual = TerminationReason.NUMERICAL_ERROR, None, math.inf, -math.inf
        else:  # kNotset, kLoadError, kModelError
            term, x, primal, dual = TerminationReason.ERROR, None, math.inf, -math.inf
        if term not in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            x = None
        return make_result(term, primal=primal, dual=dual, limit=limit, x=x, wall_time=wall,
                           nodes=nodes, iterations=iters, backend="highs",
                           backend_version=_version(), options=opts, raw_status=raw,
                           raw_gap=raw_gap, notes=notes)

    def _infeasible_or_unbounded(self, opts: SolveOptions, wall: float,
                                 notes: list[str]) -> TerminationReason:
        """HiGHS's presolve said "infeasible or unbounded": decide by a feasibility solve
        (zero objective). A feasible model whose relaxation is unbounded is unbounded
        (rational data)."""
        hs = self._hs
        probe = hs.Highs()
        probe.setOptionValue("output_flag", False)
        hm = self._h.getModel()
        lp = hm.lp_
        lp.col_cost_ = np.zeros(lp.num_col_)
        hm.lp_ = lp
        hm.hessian_ = hs.HighsHessian()
        probe.passModel(hm)
        limit = None if opts.time_limit is None else max(opts.time_limit - wall, 0.0)
        if limit is not None:
            probe.setOptionValue("time_limit", limit)
        watch = _Watchdog(limit, Progress(None))
        hooks = [probe.cbSimplexInterrupt, probe.cbIpmInterrupt, probe.cbMipInterrupt]
        subscribed = watch.subscribe(hooks) if watch.needed else []
        watch.start()
        try:
            probe.run()
        finally:
            for hook, fn in subscribed:
                hook.unsubscribe(fn)
        st = probe.getModelStatus()
        if st == hs.HighsModelStatus.kOptimal:
            notes.append("presolve reported infeasible-or-unbounded; a feasibility solve "
                         "found a feasible point, so the model is unbounded.")
            return TerminationReason.UNBOUNDED
        if st == hs.HighsModelStatus.kInfeasible:
            return TerminationReason.INFEASIBLE
        notes.append("HiGHS could not decide between infeasible and unbounded.")
        return TerminationReason.ERROR


class _Watchdog:
    """The time limit enforced from HiGHS's interrupt callbacks.

    HiGHS checks its own ``time_limit`` only at some points of a solve; solves were seen
    to run 17.2 s on an 8.1 s limit (issue 30). Subscribed to ``cbSimplexInterrupt``,
    ``cbIpmInterrupt`` and (MIP) ``cbMipInterrupt`` — called by every simplex and
    interior-point iteration and at HiGHS's MIP interrupt checks — :meth:`on_interrupt`
    asks HiGHS to stop once the deadline ``start + time_limit + min(5 % of it, 0.5 s)``
    has passed (the grace lets HiGHS stop by its own limit where it checks it; the
    target is max(10 %, 2 s)), or once the progress callback asked for an interrupt. The
    solve then ends with a limit as at HiGHS's own time limit, and its dual bound stays
    valid. Reading the clock at every check costs nothing measurable
    (docs/howto/backends.md)."""

    def __init__(self, time_limit: float | None, progress: Progress) -> None:
        self.limit = time_limit if time_limit is not None and math.isfinite(time_limit) \
            else None
        self.progress = progress
        self.deadline = math.inf
        self.fired = False

    @property
    def needed(self) -> bool:
        return self.limit is not None or bool(self.progress)

    def subscribe(self, hooks: list[Any]) -> list[tuple[Any, Any]]:
        """Subscribe :meth:`on_interrupt` to each of HiGHS's callback ``hooks``; the pairs
        to unsubscribe after the run."""
        for hook in hooks:
            hook.subscribe(self.on_interrupt)
        return [(hook, self.on_interrupt) for hook in hooks]

    def start(self) -> None:
        if self.limit is not None:
            self.deadline = time.perf_counter() + self.limit + min(_GRACE * self.limit,
                                                                    _GRACE_MAX)

    def on_interrupt(self, event: Any) -> None:
        if self.progress.interrupt:
            event.interrupt()
            return
        if self.fired or time.perf_counter() >= self.deadline:
            self.fired = True
            event.interrupt()


#: the watchdog's deadline is the limit plus min(_GRACE × limit, _GRACE_MAX) seconds
_GRACE = 0.05
_GRACE_MAX = 0.5


class HighsBackend:
    """rulemip's default backend: HiGHS through ``highspy`` (see the module docstring)."""

    name = "highs"
    capabilities = frozenset({Capability.LP, Capability.INTEGER,
                              Capability.QUADRATIC_OBJECTIVE, Capability.PERSISTENT,
                              Capability.MIP_START, Capability.DUAL_BOUND})
    #: capability sets HiGHS cannot combine: a quadratic objective only without integers
    unsupported_combinations: tuple[frozenset[Capability], ...] = (
        frozenset({Capability.INTEGER, Capability.QUADRATIC_OBJECTIVE}),)
    install_hint = "pip install 'highspy>=1.13,<1.15'"

    def available(self) -> bool:
        return module_available("highspy")

    def version(self) -> str:
        return _version()

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        """Load ``model`` into a fresh HiGHS instance and solve it."""
        opts = check_options(options)
        t0 = time.perf_counter()
        solver = HighsPersistent(model)
        load = time.perf_counter() - t0
        if opts.time_limit is not None and load > 0:
            opts = _with_time_limit(opts, max(opts.time_limit - load, 0.0))
        res = solver.solve(opts, start)
        return _replace_wall(res, res.wall_time + load, check_options(options))

    def persistent(self, model: StandardForm) -> HighsPersistent:
        """Load ``model`` for repeated solves (outer-approximation masters)."""
        return HighsPersistent(model)


def _with_time_limit(opts: SolveOptions, limit: float) -> SolveOptions:
    from dataclasses import replace

    return replace(opts, time_limit=limit)


def _replace_wall(res: SolveResult, wall: float, opts: SolveOptions) -> SolveResult:
    from dataclasses import replace

    return replace(res, wall_time=wall, options=opts.to_dict())
