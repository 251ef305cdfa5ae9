r"""SCIP backend (``pyscipopt``): MILP, convex MIQP, indicators, convex loss terms (MINLP).

A :class:`~rulemip.model.StandardForm` is loaded as follows (SCIP objectives are linear):

* columns → SCIP variables (``'I'`` for integer columns), rows → linear constraints
  ``ℓ <= aᵀx <= u``, ``c_0`` → the objective offset;
* a quadratic objective ``½xᵀQx`` → an epigraph variable ``t`` (objective coefficient 1)
  with the convex quadratic constraint ``½xᵀQx − t <= 0``;
* an indicator ``z = v ⇒ aᵀx (<=|>=|==) b`` → ``addConsIndicator`` (``activeone = v``); an
  equality becomes two indicators (``<=`` and ``>=``);
* a separable loss term ``s Σ_i w_i l(f_i, y_i)`` (``f_i = x[cols_i]``) → one epigraph
  variable ``θ_i`` per point with objective coefficient ``s·w_i`` and a convex constraint
  ``θ_i >= l(f_i, y_i)`` written so that SCIP recognises its convexity:

  - squared: ``(f_i − y_i)² − θ_i <= 0``;
  - logistic: ``log(1 + e^{u}) <= θ ⟺ e^{−θ} + e^{u − θ} <= 1`` with ``u = −y_i f_i``
    (a sum of exponentials of linear functions, so convex);
  - Poisson: ``e^{f_i} − y_i f_i + y_i log y_i − y_i − θ_i <= 0``.

The returned ``x`` holds the model columns only (never ``t``/``θ``). ``dual`` is SCIP's
dual bound of the epigraph model (same optimum, so a valid bound); with ``t``/``θ`` present
``primal`` is the objective of ``x`` recomputed exactly (SCIP's own epigraph value may sit
a tolerance below it), and SCIP runs with ``numerics/feastol = 1e-8`` and
``limits/gap = mip_gap / 2`` so that this recomputation does not reopen the gap (override
either through ``extra``).

Persistence: SCIP must leave the solving stage before its problem can change, so every
modification calls ``freeTransform()`` and the next solve re-presolves from scratch —
*persistent but re-presolving* (no warm start besides the previous incumbent, which is
passed back as a start when still feasible).

Limits: ``time_limit`` → ``limits/time``, ``mip_gap`` → ``limits/gap``, ``node_limit`` →
``limits/nodes``, ``iteration_limit`` → ``lp/iterlim`` (one LP) and an ``LPSOLVED`` event
that interrupts the solve once the LP iterations of all its LPs reach it
(``Limit.ITERATION``), ``seed`` → ``randomization/randomseedshift``. A watchdog thread
interrupts a solve still running ``1.1·time_limit + 2`` s after it started
(:func:`watchdog_delay`; the solve runs without the GIL), so that a plug-in that ignores
SCIP's clock cannot hold it far past the limit; the result then has ``Limit.TIME`` and a
note. The plug-ins that call an NLP solver (:data:`NLP_PLUGINS_OFF`: the subnlp, mpec,
nlpdiving, multistart, dualval and undercover heuristics, the nlobbt propagator, the
convexproj and gauge separators) are off. SCIP is single-threaded
(``threads`` is recorded in ``notes``). ``options.callback`` runs at every new best
solution (event ``BESTSOLFOUND``) and at the end; returning ``True`` calls
``interruptSolve()`` (``Limit.INTERRUPTED``). ``options.extra`` holds raw SCIP parameters.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError, SolverError
from rulemip.losses import get_loss
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
from rulemip.solvers.base import Capability, module_available
from rulemip.solvers.result import Limit, SolveOptions, SolveResult, TerminationReason
from rulemip.solvers.scip_load import LoadExpired, ScipLoader, _bound
from rulemip.solvers.scip_settings import (
    LIMIT_STATUS,
    NLP_PLUGINS_OFF,
    WATCHDOG_SLACK,
    Watchdog,
    scip_version,
    watchdog_delay,
)

# NLP_PLUGINS_OFF, WATCHDOG_SLACK and watchdog_delay stay importable from here
__all__ = ["NLP_PLUGINS_OFF", "WATCHDOG_SLACK", "ScipBackend", "ScipPersistent", "watchdog_delay"]

_LOSSES = ("squared", "logistic", "poisson")

class ScipPersistent(ScipLoader):
    """A model loaded into one ``pyscipopt.Model`` (see the module docstring).

    ``deadline`` (a :func:`time.perf_counter` value): loading a model is a Python loop over
    its columns and rows (seconds for a million rows); past the deadline it stops with
    :class:`~rulemip.solvers.scip_load.LoadExpired`, checked every
    :data:`~rulemip.solvers.scip_load.LOAD_CHECK_EVERY` items (:class:`ScipLoader`)."""

    def __init__(self, model: StandardForm, *, deadline: float | None = None) -> None:
        import pyscipopt

        model = check_model(model)
        for term in model.loss_terms:
            if term.loss not in _LOSSES:
                raise reject("scip", f"loss {term.loss!r}", f"supported losses are {_LOSSES}.")
        self._ps = pyscipopt
        from pyscipopt.scip import Expr, ExprCons, Term

        self._Expr, self._ExprCons, self._Term = Expr, ExprCons, Term
        self._m = pyscipopt.Model(model.name or "rulemip")
        self._m.hideOutput()
        self._offset = 0.0
        self._vars: list[Any] = []
        self._terms: list[Any] = []
        self._rows: list[Any] = []
        self._zero: Any = None
        self._integer = np.zeros(0, dtype=bool)
        self._c = np.zeros(0)
        self._Q = model.Q if model.has_quadratic else None
        self._loss_terms = model.loss_terms
        self._quad_t: Any = None
        self._thetas: list[list[Any]] = []
        self._progress: Progress | None = None
        self._dirty = False
        self._last_x: NDArray[np.float64] | None = None
        self._indicator_binaries: set[int] = set()
        self._deadline = deadline
        self._add_vars(model.c, model.col_lower, model.col_upper, model.integrality,
                       model.col_names)
        self._set_offset(float(model.offset))
        self._add_linear_rows(sp.csr_matrix(model.A), model.row_lower, model.row_upper,
                              model.row_names)
        if self._Q is not None:
            self._add_quadratic(self._Q)
        for k, ind in enumerate(model.indicators):
            self._add_indicator(ind, k)
        for k, term in enumerate(model.loss_terms):
            self._add_loss(term, k)
        self._deadline = None   # loaded: later edits (OA masters) are small
        self._m.attachEventHandlerCallback(self._on_best_solution,
                                           [pyscipopt.SCIP_EVENTTYPE.BESTSOLFOUND],
                                           name="rulemip_progress")
        #: the solve's LP iteration cap (``options.iteration_limit``) and whether it fired
        self._iteration_cap: int | None = None
        self._capped = False
        self._m.attachEventHandlerCallback(self._on_lp_solved,
                                           [pyscipopt.SCIP_EVENTTYPE.LPSOLVED],
                                           name="rulemip_iteration_cap")

    def _editable(self) -> None:
        if self._dirty:
            try:
                self._m.freeTransform()
            except Exception as exc:  # SCIP left in a stage it cannot free (failed solve)
                raise SolverError(f"SCIP cannot return to the problem stage after its last "
                                  f"solve ({exc}); build the model again.") from exc
            self._dirty = False

    # ------------------------------------------------------------------ protocol
    @property
    def n_rows(self) -> int:
        return len(self._rows)

    @property
    def n_cols(self) -> int:
        return len(self._vars)

    @property
    def scip(self) -> Any:
        """The underlying ``pyscipopt.Model``."""
        return self._m

    def add_rows(self, A: sp.spmatrix, lower: NDArray[np.float64],
                 upper: NDArray[np.float64]) -> None:
        A = sp.csr_matrix(A)
        if A.shape[1] != self.n_cols:
            raise InvalidParameterError(
                f"`A` must have {self.n_cols} columns (one per model column); got {A.shape[1]}.")
        m = A.shape[0]
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (m,))
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (m,))
        self._editable()
        self._add_linear_rows(A, lo, hi)

    def delete_rows(self, rows: NDArray[np.int64]) -> None:
        """Remove linear rows by index; later rows shift down."""
        idx = np.unique(np.asarray(rows, dtype=np.int64).ravel())
        if len(idx) and (idx[0] < 0 or idx[-1] >= self.n_rows):
            raise InvalidParameterError(f"`rows` must lie in [0, {self.n_rows}).")
        self._editable()
        for i in idx[::-1].tolist():
            self._m.delCons(self._rows.pop(i))

    def add_columns(self, c: NDArray[np.float64], lower: NDArray[np.float64],
                    upper: NDArray[np.float64], integer: NDArray[np.bool_],
                    A_cols: sp.spmatrix | None = None) -> None:
        c_arr = np.asarray(c, dtype=float).ravel()
        k = len(c_arr)
        lo = np.broadcast_to(np.asarray(lower, dtype=float), (k,))
        hi = np.broadcast_to(np.asarray(upper, dtype=float), (k,))
        ints = np.broadcast_to(np.asarray(integer, dtype=bool), (k,))
        if A_cols is not None:
            A = sp.csc_matrix(A_cols)
            if A.shape != (self.n_rows, k):
                raise InvalidParameterError(
                    f"`A_cols` must have shape ({self.n_rows}, {k}); got {A.shape}.")
        self._editable()
        first = self.n_cols
        self._add_vars(c_arr, lo, hi, ints)
        if A_cols is not None:
            coo = A.tocoo()
            for r, j, a in zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()):
                self._m.addConsCoeff(self._rows[r], self._vars[first + j], a)

    def set_col_bounds(self, cols: NDArray[np.int64], lower: NDArray[np.float64],
                       upper: NDArray[np.float64]) -> None:
        idx = np.asarray(cols, dtype=np.int64).ravel()
        lo = np.broadcast_to(np.asarray(lower, dtype=float), idx.shape)
        hi = np.broadcast_to(np.asarray(upper, dtype=float), idx.shape)
        if len(idx) and (idx.min() < 0 or idx.max() >= self.n_cols):
            raise InvalidParameterError(f"`cols` must lie in [0, {self.n_cols}).")
        self._editable()
        for j, a, b in zip(idx.tolist(), lo.tolist(), hi.tolist()):
            self._m.chgVarLb(self._vars[j], _bound(a))
            self._m.chgVarUb(self._vars[j], _bound(b))

    def set_objective(self, c: NDArray[np.float64], offset: float = 0.0) -> None:
        c_arr = np.asarray(c, dtype=float).ravel()
        if c_arr.shape != (self.n_cols,):
            raise InvalidParameterError(
                f"`c` must have one entry per column ({self.n_cols}); got {c_arr.shape[0]}.")
        self._editable()
        # PySCIPOpt has no chgVarObj: rebuild the objective (model columns + epigraphs);
        # setObjective(clear=True) also zeroes the offset
        self._m.setObjective(self._objective_expr(c_arr), clear=True)
        self._offset = 0.0
        self._c = c_arr.copy()
        self._set_offset(float(offset))

    def set_integrality(self, integer: NDArray[np.bool_]) -> None:
        """Make columns integer or continuous. The binary of an indicator constraint stays
        integer (SCIP's indicators need a binary variable; relaxing one made SCIP's
        presolve fail and left the model unusable), so a "relaxation" of a model with
        indicators keeps those binaries: its dual bound is still a valid bound of the
        model, at least as strong as the relaxation's."""
        ints = np.asarray(integer, dtype=bool).ravel()
        if ints.shape != (self.n_cols,):
            raise InvalidParameterError(
                f"`integer` must have one entry per column ({self.n_cols}); got {ints.shape[0]}.")
        ints = ints.copy()
        ints[sorted(self._indicator_binaries)] = True
        self._editable()
        for j in np.flatnonzero(ints != self._integer).tolist():
            self._m.chgVarType(self._vars[j], "I" if ints[j] else "C")
        self._integer = ints.copy()

    # ------------------------------------------------------------------ solving
    def _on_best_solution(self, model: Any, event: Any) -> None:
        progress = self._progress
        if progress is None:
            return
        sol = model.getBestSol()
        primal = model.getSolObjVal(sol) if sol is not None else math.inf
        if progress.report(primal, model.getDualbound(), model.getNNodes()):
            model.interruptSolve()

    def _on_lp_solved(self, model: Any, event: Any) -> None:
        """Interrupt the solve once its LP iterations reach ``options.iteration_limit``
        (SCIP's own ``lp/iterlim`` caps each LP, not their sum)."""
        cap = self._iteration_cap
        if cap is not None and not self._capped and model.getNLPIterations() >= cap:
            self._capped = True
            model.interruptSolve()

    def _apply_options(self, opts: SolveOptions) -> list[str]:
        m = self._m
        notes: list[str] = []
        m.resetParams()
        m.hideOutput(not opts.verbose)
        for key, value in NLP_PLUGINS_OFF.items():
            m.setParam(key, value)
        if opts.time_limit is not None:
            m.setParam("limits/time", float(opts.time_limit))
        if self._has_epigraph:
            # the reported primal is the true objective of x, which exceeds SCIP's epigraph
            # value by the tolerated violation of θ >= l(f): keep that below the gap
            m.setParam("numerics/feastol", 1e-8)
            m.setParam("limits/gap", 0.5 * float(opts.mip_gap))
        else:
            m.setParam("limits/gap", float(opts.mip_gap))
        if opts.node_limit is not None:
            m.setParam("limits/nodes", int(opts.node_limit))
        self._iteration_cap = opts.iteration_limit
        self._capped = False
        if opts.iteration_limit is not None:
            # one LP may not exceed the cap; the LPSOLVED event caps their sum
            m.setParam("lp/iterlim", max(int(opts.iteration_limit), 1))
        m.setParam("randomization/randomseedshift", int(opts.seed) % (2**31 - 1))
        if opts.threads is not None and opts.threads > 1:
            notes.append("SCIP solves with one thread; `threads` ignored.")
        for key, value in opts.extra.items():
            try:
                m.setParam(str(key), value)
            except (KeyError, LookupError, TypeError, ValueError) as exc:
                raise InvalidParameterError(
                    f"SCIP rejected parameter {key!r}={value!r} in `extra`: {exc}") from exc
        return notes

    def _aux_values(self, x: NDArray[np.float64]) -> list[tuple[Any, float]]:
        """Values of the epigraph columns implied by ``x`` (to complete a start)."""
        vals: list[tuple[Any, float]] = []
        if self._zero is not None:
            vals.append((self._zero, 0.0))
        if self._quad_t is not None:
            assert self._Q is not None
            vals.append((self._quad_t, 0.5 * float(x @ (self._Q @ x))))
        for term, thetas in zip(self._loss_terms, self._thetas):
            lv = np.asarray(get_loss(term.loss).value(x[term.cols], term.y), dtype=float)
            vals.extend(zip(thetas, lv.tolist()))
        return vals

    def _objective_expr(self, c: NDArray[np.float64]) -> Any:
        coefs: dict[Any, float] = {}
        for t, cj in zip(self._terms, c.tolist()):
            if cj != 0.0:
                coefs[t] = cj
        if self._quad_t is not None:
            coefs[self._Term(self._quad_t)] = 1.0
        for term, thetas in zip(self._loss_terms, self._thetas):
            w = np.asarray(term.weights, dtype=float) * float(term.scale)
            for theta, wi in zip(thetas, w.tolist()):
                coefs[self._Term(theta)] = wi
        return self._Expr(coefs)

    @property
    def _has_epigraph(self) -> bool:
        return self._quad_t is not None or bool(self._thetas)

    def _objective(self, x: NDArray[np.float64]) -> float:
        """``cᵀx + c_0 + ½xᵀQx + Σ loss terms`` — the objective of ``x`` itself."""
        val = float(self._c @ x) + self._offset
        if self._Q is not None:
            val += 0.5 * float(x @ (self._Q @ x))
        for term in self._loss_terms:
            val += term.value(x)
        return val

    def _set_start(self, start: NDArray[np.float64]) -> None:
        m = self._m
        known = ~np.isnan(start)
        if known.all():
            sol = m.createSol()
            for v, val in zip(self._vars, start.tolist()):
                m.setSolVal(sol, v, val)
            for v, val in self._aux_values(start):
                m.setSolVal(sol, v, val)
        else:
            sol = m.createPartialSol()
            for j in np.flatnonzero(known).tolist():
                m.setSolVal(sol, self._vars[j], float(start[j]))
        m.addSol(sol, free=True)

    def solve(self, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        opts = check_options(options)
        x0 = check_start(start, self.n_cols)
        self._editable()
        notes = self._apply_options(opts)
        if x0 is None and self._last_x is not None and len(self._last_x) == self.n_cols:
            x0 = self._last_x  # previous incumbent; SCIP discards it when infeasible
        if x0 is not None:
            self._set_start(x0)
        progress = Progress(opts.callback)
        self._progress = progress if progress else None
        t0 = time.perf_counter()
        watchdog = Watchdog(self._m, opts.time_limit)
        try:
            with watchdog:
                # without the GIL, so that the watchdog thread can run during the solve
                self._m.optimizeNogil()
        except Exception as exc:  # PySCIPOpt raises a bare Exception for SCIP errors
            raise SolverError(f"SCIP failed during the solve ({exc}); the model was left "
                              "as it is.") from exc
        finally:
            self._progress = None
            self._dirty = True
        wall = time.perf_counter() - t0
        if watchdog.fired:
            notes.append(f"SCIP ran {wall:.1f} s against a time limit of "
                         f"{opts.time_limit:.1f} s without stopping; the watchdog "
                         "interrupted it.")
        res = self._result(opts, wall, notes, progress, watchdog.fired)
        if res.x is not None:
            self._last_x = res.x
        if progress:
            progress.report(res.bounds.primal, res.bounds.dual, res.nodes, wall)
        return res

    def _result(self, opts: SolveOptions, wall: float, notes: list[str],
                progress: Progress, watchdog_fired: bool = False) -> SolveResult:
        m = self._m
        status = str(m.getStatus())
        has_sol = m.getNSols() > 0
        x = None
        primal, dual = math.inf, -math.inf
        if has_sol:
            sol = m.getBestSol()
            x = np.array([m.getSolVal(sol, v) for v in self._vars], dtype=float)
            primal = self._objective(x) if self._has_epigraph else float(m.getPrimalbound())
        db = float(m.getDualbound())
        if not math.isnan(db):
            dual = db
        limit: Limit | None = None
        if status in ("optimal", "gaplimit"):
            if not has_sol:
                term = TerminationReason.NUMERICAL_ERROR
            else:
                term, limit = finished_status(primal, dual, opts)
        elif status == "infeasible":
            term, x, primal, dual = TerminationReason.INFEASIBLE, None, math.inf, math.inf
        elif status == "unbounded":
            term, x, primal, dual = TerminationReason.UNBOUNDED, None, -math.inf, -math.inf
        elif status == "inforunbd":
            term = self._infeasible_or_unbounded(opts, notes)
            x = None
            primal, dual = ((math.inf, math.inf) if term is TerminationReason.INFEASIBLE
                            else (-math.inf, -math.inf))
        elif status in LIMIT_STATUS:
            which = (Limit.TIME if watchdog_fired
                     else Limit.ITERATION if self._capped
                     else Limit.INTERRUPTED if progress.interrupt else LIMIT_STATUS[status])
            term, limit = limit_status(has_sol, which)
        else:
            term = TerminationReason.FEASIBLE if has_sol else TerminationReason.ERROR
            limit = Limit.OTHER if has_sol else None
        if term not in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE):
            x = None
        try:
            iters: int | None = int(m.getNLPIterations())
        except Exception:  # pragma: no cover - stage without LP statistics
            iters = None
        return make_result(term, primal=primal, dual=dual, limit=limit, x=x, wall_time=wall,
                           nodes=int(m.getNNodes()), iterations=iters, backend="scip",
                           backend_version=scip_version(), options=opts, raw_status=status,
                           raw_gap=float(m.getGap()) if has_sol else None, notes=notes)

    def _infeasible_or_unbounded(self, opts: SolveOptions, notes: list[str]
                                 ) -> TerminationReason:
        """Decide SCIP's ``inforunbd`` by a feasibility solve with a zero objective."""
        m = self._m
        m.freeTransform()
        offset = self._offset
        m.setObjective(self._Expr({}), clear=True)
        try:
            m.optimize()
            st = str(m.getStatus())
            found = m.getNSols() > 0
        finally:
            m.freeTransform()
            m.setObjective(self._objective_expr(self._c), clear=True)
            self._offset = 0.0
            self._set_offset(offset)
        if st in ("optimal", "gaplimit") or found:
            notes.append("SCIP reported infeasible-or-unbounded; a feasibility solve found a "
                         "feasible point, so the model is unbounded.")
            return TerminationReason.UNBOUNDED
        if st == "infeasible":
            return TerminationReason.INFEASIBLE
        notes.append("SCIP could not decide between infeasible and unbounded.")
        return TerminationReason.ERROR


class ScipBackend:
    """SCIP through PySCIPOpt (see the module docstring)."""

    name = "scip"
    capabilities = frozenset({Capability.LP, Capability.INTEGER,
                              Capability.QUADRATIC_OBJECTIVE, Capability.INDICATOR,
                              Capability.NONLINEAR_LOSS, Capability.PERSISTENT,
                              Capability.MIP_START, Capability.DUAL_BOUND})
    unsupported_combinations: tuple[frozenset[Capability], ...] = ()
    install_hint = "pip install 'pyscipopt>=5.0,<7'"

    def available(self) -> bool:
        return module_available("pyscipopt")

    def version(self) -> str:
        return scip_version()

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: NDArray[np.float64] | None = None) -> SolveResult:
        from dataclasses import replace

        opts = check_options(options)
        t0 = time.perf_counter()
        deadline = None if opts.time_limit is None else t0 + float(opts.time_limit)
        try:
            solver = ScipPersistent(model, deadline=deadline)
        except LoadExpired:
            return make_result(TerminationReason.NO_SOLUTION_FOUND, limit=Limit.TIME,
                               wall_time=time.perf_counter() - t0, backend="scip",
                               backend_version=scip_version(), options=opts,
                               notes=[f"the time limit ({opts.time_limit:.3g} s) passed while "
                                      "the model was loaded into SCIP; not solved."])
        load = time.perf_counter() - t0
        run_opts = opts
        if opts.time_limit is not None:
            run_opts = replace(opts, time_limit=max(opts.time_limit - load, 0.0))
        res = solver.solve(run_opts, start)
        if res.termination is TerminationReason.ERROR and res.raw_status == "":
            raise SolverError("SCIP returned no status.")
        return replace(res, wall_time=res.wall_time + load, options=opts.to_dict())

    def persistent(self, model: StandardForm) -> ScipPersistent:
        return ScipPersistent(model)
