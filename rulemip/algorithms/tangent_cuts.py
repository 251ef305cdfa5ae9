r"""Tangent-cut outer approximation: convex objectives on MILP backends
(docs/explanation/interval_cover.md, docs/explanation/solving.md).

A :class:`~rulemip.model.StandardForm` may carry separable convex loss terms
:math:`s\sum_i w_i\, l(x_{c_i}, y_i)` and a convex quadratic :math:`\tfrac12 x^\top Q x`,
which a MILP solver (HiGHS, CBC) cannot take. The driver replaces every loss point by an
epigraph column :math:`\theta_i` (objective :math:`s w_i \theta_i`) and the quadratic by
epigraph columns :math:`\eta_j \ge \tfrac12 Q_{jj} x_j^2` (diagonal ``Q``) or one
:math:`\eta \ge \tfrac12 x^\top Q x`, and iterates on a *persistent* master:

1. solve the master MILP (first a few rounds of its LP relaxation, Kelley's method, which
   adds many cuts cheaply); its optimal value — or its dual bound when the master stopped
   at a limit — is a lower bound **LB** on the true optimum, because every tangent
   :math:`\theta_i \ge l(\hat f_i) + g(\hat f_i)(f_i - \hat f_i)` under-estimates the convex
   :math:`l` (so the master is a relaxation of the true problem);
2. evaluate the true objective at the master solution (and at a *polished* point — e.g. the
   same rule covers with refit weights — if the caller provides one): the best is the
   incumbent **UB**;
3. add tangents at the new points (one per loss point whose epigraph is violated) and
   re-solve, until :math:`UB - LB \le` ``abs_tol`` + ``mip_gap``·|UB|.

Initial tangents at a few values spanning each column's bounds (and at the loss minimizer)
keep the first master bounded; :math:`\theta \ge 0` holds anyway for deviance losses.
A time limit returns the incumbent with the last valid LB (a certified gap).

HiGHS 1.14 exposes ``kCallbackMipDefineLazyConstraints`` in its callback enum, but the
callback is never invoked (checked: a MIP run with it subscribed makes zero calls), so a
single branch-and-bound with lazily added tangents is not available; the driver iterates.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.exceptions import (
    InvalidParameterError,
    SolverError,
    UnsupportedCapabilityError,
)
from rulemip.losses import get_loss
from rulemip.model.standard_form import StandardForm
from rulemip.solvers.base import (
    Capability,
    SolverBackend,
    get_backend,
    required_capabilities,
    resolve_backend,
    supports,
)
from rulemip.solvers.result import (
    Limit,
    ObjectiveBounds,
    SolveOptions,
    SolveResult,
    TerminationReason,
    relative_gap,
)

FloatArray = NDArray[np.float64]
Polish = Callable[[FloatArray], FloatArray | None]

_INITIAL_SPAN = 4.0  # half-width of the initial tangent grid when a column is unbounded


@dataclass(frozen=True)
class TangentCutResult(SolveResult):
    """A :class:`SolveResult` plus the driver's history (one dict per iteration:
    ``iteration, phase ("lp"|"mip"), time, ub, lb, gap, cuts``) and counts."""

    history: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    n_cuts: int = 0
    master_solves: int = 0


class _Epigraph:
    """Bookkeeping of the epigraph columns and their cuts."""

    def __init__(self, model: StandardForm) -> None:
        self.n = model.n_cols
        cols, ys, coef, kinds, losses = [], [], [], [], []
        for term in model.loss_terms:
            get_loss(term.loss)  # validates the name
            cols.append(np.asarray(term.cols, dtype=np.int64))
            ys.append(np.asarray(term.y, dtype=float))
            coef.append(term.scale * np.asarray(term.weights, dtype=float))
            losses.extend([term.loss] * len(term.cols))
            kinds.append(np.zeros(len(term.cols), dtype=np.int64))
        self.loss_cols = np.concatenate(cols) if cols else np.empty(0, dtype=np.int64)
        self.loss_y = np.concatenate(ys) if ys else np.empty(0)
        self.loss_coef = np.concatenate(coef) if coef else np.empty(0)
        if np.any(self.loss_coef < 0):
            raise InvalidParameterError(
                "loss terms need non-negative scale × weights (a convex objective); got a "
                "negative coefficient.")
        self.loss_name = np.asarray(losses, dtype=object)
        self.Q = model.Q if model.has_quadratic else None
        self.q_diag: FloatArray | None = None
        self.q_cols = np.empty(0, dtype=np.int64)
        if self.Q is not None:
            Qc = sp.csr_matrix(self.Q)
            off = Qc - sp.diags(Qc.diagonal())
            if off.count_nonzero() == 0:
                d = Qc.diagonal()
                self.q_cols = np.flatnonzero(d != 0).astype(np.int64)
                self.q_diag = d[self.q_cols]
        self.n_loss = len(self.loss_cols)
        self.n_q = len(self.q_cols) if self.q_diag is not None else (
            1 if self.Q is not None else 0)
        self.n_epi = self.n_loss + self.n_q

    # values and tangents ------------------------------------------------------
    def loss_tangent(self, idx: NDArray[np.int64], f: FloatArray
                     ) -> tuple[FloatArray, FloatArray]:
        val = np.empty(len(idx))
        grad = np.empty(len(idx))
        for name in set(self.loss_name[idx].tolist()):
            sel = self.loss_name[idx] == name
            lo = get_loss(name)
            v, g = lo.tangent(f[sel], self.loss_y[idx][sel])
            val[sel], grad[sel] = v, g
        return val, grad

    def epi_values(self, x: FloatArray) -> FloatArray:
        """True values of every epigraph column at ``x`` (original columns)."""
        out = np.empty(self.n_epi)
        if self.n_loss:
            out[: self.n_loss], _ = self.loss_tangent(np.arange(self.n_loss),
                                                       x[self.loss_cols])
        if self.n_q:
            if self.q_diag is not None:
                out[self.n_loss:] = 0.5 * self.q_diag * x[self.q_cols] ** 2
            else:
                assert self.Q is not None
                out[self.n_loss] = 0.5 * float(x @ (self.Q @ x))
        return out

    def cuts(self, x: FloatArray, theta: FloatArray | None, rtol: float = 1e-9
             ) -> tuple[sp.csr_matrix, FloatArray]:
        """Rows ``θ_e - g_e x >= l(x̂) - g x̂`` for the epigraphs violated at ``x``
        (all of them when ``theta`` is None). Returns ``(A, lower)`` over n + n_epi cols."""
        true = self.epi_values(x)
        sel = np.arange(self.n_epi) if theta is None else np.flatnonzero(
            theta < true - rtol * np.maximum(1.0, np.abs(true)))
        rows, cols, vals, rhs = [], [], [], []
        r = 0
        for e in sel.tolist():
            if e < self.n_loss:
                c = int(self.loss_cols[e])
                v, g = self.loss_tangent(np.array([e]), x[[c]])
                rows += [r, r]
                cols += [self.n + e, c]
                vals += [1.0, -float(g[0])]
                rhs.append(float(v[0]) - float(g[0]) * float(x[c]))
            elif self.q_diag is not None:
                q = e - self.n_loss
                c = int(self.q_cols[q])
                a = float(self.q_diag[q])
                rows += [r, r]
                cols += [self.n + e, c]
                vals += [1.0, -a * float(x[c])]
                rhs.append(-0.5 * a * float(x[c]) ** 2)
            else:
                assert self.Q is not None
                gq = np.asarray(self.Q @ x).ravel()
                nz = np.flatnonzero(gq)
                rows += [r] * (1 + len(nz))
                cols += [self.n + e, *nz.tolist()]
                vals += [1.0, *(-gq[nz]).tolist()]
                rhs.append(-0.5 * float(x @ (self.Q @ x)))
            r += 1
        A = sp.csr_matrix((vals, (rows, cols)), shape=(r, self.n + self.n_epi))
        return A, np.asarray(rhs, dtype=float)

    def initial_points(self, model: StandardForm, n_points: int, n_geometric: int = 4
                       ) -> list[FloatArray]:
        """Column vectors whose tangents span every epigraph column's range."""
        lo, hi = model.col_lower, model.col_upper
        grids = np.zeros((n_points, self.n))
        for j in range(self.n):
            a, b = lo[j], hi[j]
            if math.isfinite(a) and math.isfinite(b):
                grids[:, j] = np.linspace(a, b, n_points)
            else:
                centre = a if math.isfinite(a) else (b if math.isfinite(b) else 0.0)
                sign = 1.0 if math.isfinite(a) else -1.0
                if not math.isfinite(a) and not math.isfinite(b):
                    grids[:, j] = np.linspace(-_INITIAL_SPAN, _INITIAL_SPAN, n_points)
                else:
                    grids[:, j] = centre + sign * np.linspace(0.0, 2 * _INITIAL_SPAN, n_points)
        pts = [grids[i] for i in range(n_points)]
        if self.n_loss:  # the loss minimizers (where finite) and the labels themselves
            # tangents accumulate where optima live: at the loss minimizer and at
            # geometrically shrinking offsets ± span·2^-i around it
            best = grids[0].copy()
            span = np.where(np.isfinite(hi - lo), 0.5 * (hi - lo), _INITIAL_SPAN)
            for e in range(self.n_loss):
                name, yv = self.loss_name[e], self.loss_y[e]
                c = self.loss_cols[e]
                target = yv if name == "squared" else (
                    math.log(yv) if name == "poisson" and yv > 0 else 0.0)
                best[c] = min(max(target, lo[c]), hi[c])
            pts.append(best)
            cols = np.unique(self.loss_cols)
            for i in range(1, n_geometric + 1):
                for sign in (-1.0, 1.0):
                    pt = best.copy()
                    pt[cols] = np.clip(best[cols] + sign * span[cols] * 2.0 ** -i,
                                       lo[cols], hi[cols])
                    pts.append(pt)
        return pts


def _extend(x: FloatArray, epi: _Epigraph) -> FloatArray:
    return np.concatenate([x, epi.epi_values(x)])


def master_model(model: StandardForm, epi: _Epigraph) -> StandardForm:
    """The model with its nonlinear terms replaced by epigraph columns (no cuts yet)."""
    n_epi = epi.n_epi
    c = np.concatenate([model.c, epi.loss_coef, np.ones(epi.n_q)])
    A = sp.hstack([model.A, sp.csr_matrix((model.n_rows, n_epi))], format="csr")
    names = tuple(model.col_names) + tuple(f"theta[{e}]" for e in range(epi.n_loss)) + \
        tuple(f"eta[{q}]" for q in range(epi.n_q))
    return replace(model, c=c, A=A,
                   col_lower=np.concatenate([model.col_lower, np.zeros(n_epi)]),
                   col_upper=np.concatenate([model.col_upper, np.full(n_epi, math.inf)]),
                   integrality=np.concatenate([model.integrality, np.zeros(n_epi, bool)]),
                   Q=None, col_names=names if model.col_names else (), loss_terms=())


def solve_with_tangent_cuts(model: StandardForm, backend: SolverBackend | str = "highs",
                            options: SolveOptions | None = None, *,
                            start: FloatArray | None = None, polish: Polish | None = None,
                            n_initial: int = 9, n_geometric: int = 4, lp_rounds: int = 30,
                            abs_tol: float = 1e-9, stall_rounds: int = 5,
                            adaptive_gap: bool = False,
                            budget: Budget | None = None) -> TangentCutResult:
    """Minimize ``model`` (with loss terms / a convex quadratic) on a MILP backend.

    Parameters
    ----------
    model : the model; its loss terms and ``Q`` become epigraph columns with tangent cuts.
    backend : a backend (object or name) with ``INTEGER``; ``PERSISTENT`` backends get
        the cuts added in place, others are re-solved from a rebuilt model (slower).
    options : time limit (whole run), ``mip_gap`` (stopping rule ``UB − LB ≤ abs_tol +
        mip_gap·|UB|``), threads, seed; ``callback`` gets ``{"time", "iteration", "ub",
        "lb", "gap"}`` after every master solve.
    start : a feasible point of ``model`` (warm start): first incumbent, tangents there.
    polish : maps a master solution to a feasible point at least as good (or ``None``).
    n_initial : tangents per column at evenly spaced values across its bounds.
    n_geometric : tangents at the loss minimizer ± half-range·2^-i, i = 1..n_geometric.
    lp_rounds : rounds of Kelley's method on the LP relaxation before the MILP masters.
    adaptive_gap : solve each MILP master only to a relative gap of a quarter of the current
        outer gap (at most 5 %, at least ``mip_gap``/10); its dual bound stays valid. Off
        by default: on 20 points, k = 3, it was slower (no certificate in 120 s vs 101 s).
    stall_rounds : stop when this many MILP masters in a row did not raise the lower bound
        (it then sits at the master solver's own tolerances).
    budget : the fit's :class:`~rulemip.budget.Budget`; the run ends at its deadline or
        after ``options.time_limit`` seconds, whichever is first.
    """
    opts = options if options is not None else SolveOptions()
    be = get_backend(backend) if isinstance(backend, str) else backend
    if Capability.INTEGER not in be.capabilities and model.is_mip:
        raise UnsupportedCapabilityError(f"backend {be.name!r} cannot solve MILP masters.")
    if n_initial < 2:
        raise InvalidParameterError(f"`n_initial` must be at least 2; got {n_initial}.")
    t0 = time.perf_counter()  # wall time for the report; the deadline is ``clock``'s
    clock = Budget.coerce(budget, opts.time_limit)
    epi = _Epigraph(model)
    n = model.n_cols
    base = master_model(model, epi)
    history: list[dict[str, Any]] = []
    rows_A: list[sp.csr_matrix] = []
    rows_lo: list[FloatArray] = []
    for pt in epi.initial_points(model, n_initial, n_geometric):
        A, lo = epi.cuts(pt, None)
        rows_A.append(A)
        rows_lo.append(lo)
    best_x: FloatArray | None = None
    ub = math.inf
    feas_tol = 1e-6

    def offer(x: FloatArray | None) -> bool:
        nonlocal best_x, ub
        if x is None or np.isnan(x).any():
            return False
        x = np.asarray(x, dtype=float)
        if model.max_violation(x) > feas_tol * max(1.0, float(np.max(np.abs(x)))):
            return False
        val = model.objective_value(x)
        if val < ub:
            ub, best_x = val, x.copy()
            return True
        return False

    if start is not None:
        st = np.asarray(start, dtype=float)
        if not np.isnan(st).any():
            offer(st)
            A, lo = epi.cuts(st, None)
            rows_A.append(A)
            rows_lo.append(lo)
    A0 = sp.vstack(rows_A, format="csr")
    lo0 = np.concatenate(rows_lo)
    persistent = None
    if Capability.PERSISTENT in be.capabilities:
        persistent = be.persistent(base)
        persistent.add_rows(A0, lo0, np.full(len(lo0), math.inf))
    cut_A, cut_lo = [A0], [lo0]
    n_cuts = len(lo0)
    lb = -math.inf
    it = 0
    solves = 0
    nodes = 0
    limit: Limit | None = None
    notes: list[str] = [f"tangent-cut outer approximation on {be.name}"
                        + ("" if persistent is not None else " (master rebuilt each round)")]
    integer = np.asarray(base.integrality, dtype=bool)

    remaining = clock.remaining

    def master_solve(relaxed: bool, x_start: FloatArray | None) -> SolveResult | None:
        """One master solve; None when the backend failed (noted: the incumbent and the
        bound of the masters solved so far stand)."""
        try:
            return _master_solve(relaxed, x_start)
        except SolverError as exc:
            notes.append(f"master solve {solves} failed ({exc}); stopped with the incumbent "
                         "and the bound of the masters solved before.")
            return None

    def _master_solve(relaxed: bool, x_start: FloatArray | None) -> SolveResult:
        nonlocal solves
        solves += 1
        rem = remaining()
        # a master only has to be solved as precisely as the outer gap needs: its dual
        # bound is a valid LB at any gap, and the gap tightens as UB - LB shrinks
        target = max(opts.mip_gap * 0.1, 1e-10)
        outer = relative_gap(ub, lb)
        if adaptive_gap and math.isfinite(outer):
            target = max(target, min(0.25 * outer, 0.05))
        mopts = SolveOptions(time_limit=rem, mip_gap=target,
                             threads=opts.threads, seed=opts.seed, verbose=opts.verbose,
                             optimality_tol=opts.optimality_tol)
        if persistent is not None:
            return persistent.solve(mopts, x_start)
        A = sp.vstack(cut_A, format="csr")
        lo = np.concatenate(cut_lo)
        sf = replace(base, A=sp.vstack([base.A, A], format="csr"),
                     row_lower=np.concatenate([base.row_lower, lo]),
                     row_upper=np.concatenate([base.row_upper, np.full(len(lo), math.inf)]),
                     row_names=(), integrality=np.zeros_like(integer) if relaxed else integer)
        return be.solve(sf, mopts, x_start)

    def add(A: sp.csr_matrix, lo: FloatArray) -> int:
        nonlocal n_cuts
        if A.shape[0] == 0:
            return 0
        if persistent is not None:
            persistent.add_rows(A, lo, np.full(len(lo), math.inf))
        cut_A.append(A)
        cut_lo.append(lo)
        n_cuts += len(lo)
        return len(lo)

    def record(phase: str, added: int) -> None:
        info = {"iteration": it, "phase": phase, "time": time.perf_counter() - t0,
                "ub": ub, "lb": lb, "gap": relative_gap(ub, lb), "cuts": added}
        history.append(info)
        if opts.callback is not None:
            opts.callback(dict(info))

    def converged() -> bool:
        return math.isfinite(ub) and ub - lb <= abs_tol + opts.mip_gap * abs(ub)

    # phase 1: Kelley on the LP relaxation (valid bounds, cheap cuts)
    if lp_rounds > 0 and model.is_mip:
        if persistent is not None:
            persistent.set_integrality(np.zeros_like(integer))
        prev = -math.inf
        for _ in range(lp_rounds):
            if remaining() == 0.0:
                break
            res = master_solve(True, None)
            if res is None or res.x is None:
                break
            it += 1
            val = res.bounds.primal
            lb = max(lb, float(res.bounds.dual))
            xh = np.asarray(res.x[:n], dtype=float)
            A, lo = epi.cuts(xh, np.asarray(res.x[n:], dtype=float))
            added = add(A, lo)
            record("lp", added)
            if added == 0 or val - prev <= 1e-6 * max(1.0, abs(val)):
                break
            prev = val
        if persistent is not None:
            persistent.set_integrality(integer)
    # phase 2: MILP masters
    termination = TerminationReason.FEASIBLE
    stalled = 0
    while True:
        if converged():
            termination = TerminationReason.OPTIMAL
            break
        if remaining() == 0.0:
            limit = Limit.TIME
            break
        x_start = _extend(best_x, epi) if best_x is not None else None
        lb_before = lb
        res = master_solve(False, x_start)
        if res is None:
            limit = Limit.OTHER
            break
        nodes += int(res.nodes or 0)
        it += 1
        if res.termination in (TerminationReason.INFEASIBLE,):
            termination = TerminationReason.INFEASIBLE
            break
        if res.termination not in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE) \
                and res.x is None and res.limit is None:
            termination = res.termination
            notes.append(f"master solve ended with {res.termination.value}: {res.raw_status}")
            break
        if math.isfinite(res.bounds.dual):
            lb = max(lb, float(res.bounds.dual))
        added = 0
        if res.x is not None:
            xh = np.asarray(res.x[:n], dtype=float)
            offer(xh)
            A, lo = epi.cuts(xh, np.asarray(res.x[n:], dtype=float))
            added += add(A, lo)
            if polish is not None:
                xp = polish(xh)
                if xp is not None:
                    offer(xp)
                    A, lo = epi.cuts(np.asarray(xp, dtype=float), None)
                    added += add(A, lo)
        record("mip", added)
        stalled = stalled + 1 if lb <= lb_before + 1e-12 * max(1.0, abs(lb)) else 0
        if stalled >= stall_rounds:
            notes.append(f"lower bound stalled for {stall_rounds} master solves (the "
                         "master's own tolerances); stopped at the gap reached.")
            break
        if res.limit is not None and res.limit is not Limit.GAP:
            limit = res.limit
            break
        if added == 0:
            # no epigraph is violated at the master solution: the master value is the true
            # objective there, so UB <= master value and LB is the master's dual bound;
            # another round would return the same master (stop, gap as it stands)
            break
    if converged():
        termination, limit = TerminationReason.OPTIMAL, None
    elif best_x is None:
        termination = TerminationReason.NO_SOLUTION_FOUND if termination is \
            TerminationReason.FEASIBLE else termination
    wall = time.perf_counter() - t0
    return TangentCutResult(
        termination=termination, bounds=ObjectiveBounds(ub, lb), limit=limit, x=best_x,
        wall_time=wall, nodes=nodes, iterations=it, backend=be.name,
        backend_version=be.version(), options=opts.to_dict(), raw_status="tangent_cuts",
        raw_gap=None, notes=tuple(notes), history=tuple(history), n_cuts=n_cuts,
        master_solves=solves)


class TangentCutBackend:
    """A MILP backend wrapped by the tangent-cut driver: takes loss terms and convex
    quadratics (the :class:`~rulemip.solvers.base.SolverBackend` protocol)."""

    def __init__(self, inner: SolverBackend | str = "highs", **driver_options: Any) -> None:
        self.inner = get_backend(inner) if isinstance(inner, str) else inner
        self.name = f"{self.inner.name}+tangent_cuts"
        self.capabilities = frozenset(set(self.inner.capabilities)
                                      | {Capability.NONLINEAR_LOSS,
                                         Capability.WIDE_EXP_LOSS,
                                         Capability.QUADRATIC_OBJECTIVE})
        self.install_hint = self.inner.install_hint
        self.driver_options = driver_options

    def available(self) -> bool:
        return self.inner.available()

    def version(self) -> str:
        return self.inner.version()

    def solve(self, model: StandardForm, options: SolveOptions | None = None,
              start: FloatArray | None = None) -> SolveResult:
        return solve_with_tangent_cuts(model, self.inner, options, start=start,
                                       **self.driver_options)

    def persistent(self, model: StandardForm) -> Any:
        raise UnsupportedCapabilityError("the tangent-cut driver is not persistent itself.")


# ---------------------------------------------------------------------- dispatch
def native_support(backend: SolverBackend, caps: set[Capability]) -> bool:
    """True when ``backend`` takes a model needing ``caps`` as it is
    (:func:`rulemip.solvers.base.supports`)."""
    return supports(backend, caps)


def solve_model(model: StandardForm, backend: SolverBackend, options: SolveOptions, *,
                start: FloatArray | None = None, polish: Polish | None = None
                ) -> SolveResult:
    """Solve ``model`` on ``backend`` natively when it can take it, otherwise by
    :func:`solve_with_tangent_cuts` (loss terms / quadratic with integers on a MILP)."""
    if native_support(backend, required_capabilities(model)):
        return backend.solve(model, options, start)
    return solve_with_tangent_cuts(model, backend, options, start=start, polish=polish)


__all__ = ["TangentCutBackend", "TangentCutResult", "master_model", "native_support",
           "resolve_backend", "solve_model", "solve_with_tangent_cuts"]
