r"""Tangent-cut outer approximation: convex objectives on MILP backends
(docs/explanation/interval_cover.md, docs/explanation/solving.md).

A :class:`~rulemip.model.StandardForm` may carry separable convex loss terms
:math:`s\sum_i w_i\, l(x_{c_i}, y_i)` and a convex quadratic :math:`\tfrac12 x^\top Q x`,
which a MILP solver (HiGHS, CBC) cannot take. The driver replaces every loss point by an
epigraph column :math:`\theta_i` (objective :math:`s w_i \theta_i`) and the quadratic by
epigraph columns :math:`\eta_j \ge \tfrac12 Q_{jj} x_j^2` (diagonal ``Q``) or one
:math:`\eta \ge \tfrac12 x^\top Q x`, and iterates on a *persistent* master — the loop is
:func:`~rulemip.algorithms.convex.oa_loop.run_rows`, this module
supplies its hooks (:class:`_TangentSeparation`, the master-gap schedule, the initial
tangents):

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
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.algorithms.convex.oa_loop import CutRows, run_rows
from rulemip.algorithms.convex.oa_options import MasterGapSchedule, OAOptions
from rulemip.budget import Budget
from rulemip.exceptions import (
    BackendUnavailableError,
    InvalidParameterError,
    UnsupportedCapabilityError,
)
from rulemip.losses import get_loss
from rulemip.model.standard_form import StandardForm
from rulemip.solvers.base import (
    Capability,
    SolverBackend,
    linear_master_needs,
    required_capabilities,
    resolve_backend,
    supports,
)
from rulemip.solvers.result import (
    ObjectiveBounds,
    SolveOptions,
    SolveResult,
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
        # one vectorized block per kind, rows in increasing epigraph order as before (a
        # Python loop over 75 000 loss epigraphs took seconds past the time limit)
        rows: list[Any] = []
        cols: list[Any] = []
        vals: list[Any] = []
        rhs: list[Any] = []
        ev = sel[sel < self.n_loss]
        if len(ev):
            c = self.loss_cols[ev]
            v, g = self.loss_tangent(ev, x[c])
            rows.append(np.repeat(np.arange(len(ev)), 2))
            cols.append(np.column_stack([self.n + ev, c]).ravel())
            vals.append(np.column_stack([np.ones(len(ev)), -g]).ravel())
            rhs.append(v - g * x[c])
        r = len(ev)
        eq = sel[sel >= self.n_loss]
        if len(eq) and self.q_diag is not None:
            q = eq - self.n_loss
            c = self.q_cols[q]
            a = self.q_diag[q]
            rows.append(r + np.repeat(np.arange(len(eq)), 2))
            cols.append(np.column_stack([self.n + eq, c]).ravel())
            vals.append(np.column_stack([np.ones(len(eq)), -a * x[c]]).ravel())
            rhs.append(-0.5 * a * x[c] ** 2)
            r += len(eq)
        elif len(eq):
            assert self.Q is not None
            gq = np.asarray(self.Q @ x).ravel()
            nz = np.flatnonzero(gq)
            rows.append(np.full(1 + len(nz), r))
            cols.append(np.concatenate([[self.n + int(eq[0])], nz]))
            vals.append(np.concatenate([[1.0], -gq[nz]]))
            rhs.append(np.array([-0.5 * float(x @ (self.Q @ x))]))
            r += 1
        if rows:
            A = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                      np.concatenate(cols))),
                              shape=(r, self.n + self.n_epi))
            return A, np.concatenate(rhs).astype(float)
        return sp.csr_matrix((0, self.n + self.n_epi)), np.zeros(0)

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


class _TangentSeparation:
    """The tangent-cut hooks of :func:`~rulemip.algorithms.convex.oa_loop.run_rows`
    (:class:`~rulemip.algorithms.convex.oa_loop.RowSeparation`): master points are
    ``(x, θ)``; the cuts at ``x`` are tangents of the epigraphs ``θ`` violates."""

    def __init__(self, model: StandardForm, epi: _Epigraph, polish: Polish | None,
                 feas_tol: float = 1e-6) -> None:
        self.model = model
        self.epi = epi
        self._polish = polish
        self.feas_tol = feas_tol

    def separate(self, x: FloatArray) -> CutRows:
        n = self.model.n_cols
        return CutRows(*self.epi.cuts(x[:n], x[n:]))

    def point(self, x: FloatArray) -> FloatArray:
        return np.asarray(x[: self.model.n_cols], dtype=float)

    def value(self, p: FloatArray) -> float | None:
        """The model's objective at ``p``, ``None`` beyond the feasibility tolerance."""
        if self.model.max_violation(p) > self.feas_tol * max(1.0, float(np.max(np.abs(p)))):
            return None
        return float(self.model.objective_value(p))

    def cuts_at(self, p: FloatArray) -> CutRows:
        return CutRows(*self.epi.cuts(p, None))

    def master_start(self, p: FloatArray) -> FloatArray:
        return _extend(p, self.epi)

    def polish(self, p: FloatArray) -> FloatArray | None:
        return None if self._polish is None else self._polish(p)


def _master_gap_schedule(mip_gap: float, adaptive: bool) -> MasterGapSchedule:
    """Each master's relative gap: a tenth of ``mip_gap`` (at least 1e-10); with
    ``adaptive``, a quarter of the current outer gap when larger (at most 5 %)."""
    return MasterGapSchedule(max(mip_gap * 0.1, 1e-10), factor=0.25 if adaptive else None,
                             cap=0.05)


def resolve_master(solver: SolverBackend | str, needs: set[Capability]) -> SolverBackend:
    """The master backend of tangent cuts for a model needing ``needs``: a backend object
    as given; a name resolved once by :func:`~rulemip.solvers.base.resolve_backend` for
    the linear master (:func:`~rulemip.solvers.base.linear_master_needs`); ``"auto"``
    prefers a MILP backend that takes rows in place (``PERSISTENT``)."""
    if not isinstance(solver, str):
        return solver
    master = set(linear_master_needs(needs))
    if solver == "auto":
        try:
            return resolve_backend(solver, master | {Capability.PERSISTENT},
                                   outer_approximation=False)[0]
        except BackendUnavailableError:
            pass
    return resolve_backend(solver, master, outer_approximation=False)[0]


def solve_with_tangent_cuts(model: StandardForm, backend: SolverBackend | str = "auto",
                            options: SolveOptions | None = None, *,
                            start: FloatArray | None = None, polish: Polish | None = None,
                            n_initial: int = 9, n_geometric: int = 4, lp_rounds: int = 30,
                            abs_tol: float = 1e-9, stall_rounds: int = 5,
                            adaptive_gap: bool = False,
                            budget: Budget | None = None) -> TangentCutResult:
    """Minimize ``model`` (with loss terms / a convex quadratic) on a MILP backend, by
    :func:`~rulemip.algorithms.convex.oa_loop.run_rows` with tangent-cut hooks.

    Parameters
    ----------
    model : the model; its loss terms and ``Q`` become epigraph columns with tangent cuts.
    backend : a backend (object or name; ``"auto"`` resolves a MILP master, persistent
        first) with ``INTEGER``; ``PERSISTENT`` backends get the cuts added in place,
        others are re-solved from a rebuilt model (slower).
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
        after ``options.time_limit`` seconds, whichever is first. ``options.node_limit``
        is a work limit of the run (masters and their nodes: the deterministic limit).
    """
    opts = options if options is not None else SolveOptions()
    clock = Budget.coerce(budget, opts.time_limit)
    if opts.node_limit is not None:
        clock = clock.with_work(int(opts.node_limit))
    be = resolve_master(backend, required_capabilities(model))
    if Capability.INTEGER not in be.capabilities and model.is_mip:
        raise UnsupportedCapabilityError(f"backend {be.name!r} cannot solve MILP masters.")
    if n_initial < 2:
        raise InvalidParameterError(f"`n_initial` must be at least 2; got {n_initial}.")
    epi = _Epigraph(model)
    rows = [epi.cuts(pt, None) for pt in epi.initial_points(model, n_initial, n_geometric)]
    st = None if start is None else np.asarray(start, dtype=float)
    if st is not None and np.isnan(st).any():
        st = None
    if st is not None:
        rows.append(epi.cuts(st, None))
    initial = CutRows(sp.vstack([A for A, _ in rows], format="csr"),
                      np.concatenate([lo for _, lo in rows]))
    persistent = Capability.PERSISTENT in be.capabilities
    note = f"tangent-cut outer approximation on {be.name}" + (
        "" if persistent else " (master rebuilt each round)")
    run = run_rows(
        _TangentSeparation(model, epi, polish), master_model(model, epi), be, initial,
        OAOptions(master_gap=_master_gap_schedule(opts.mip_gap, adaptive_gap),
                  rel_tol=opts.mip_gap, abs_tol=abs_tol, max_iter=1_000_000_000,
                  lp_rounds=lp_rounds if model.is_mip else 0, stall_rounds=stall_rounds,
                  budget=clock, threads=opts.threads,
                  seed=opts.seed, verbose=opts.verbose,
                  optimality_tol=opts.optimality_tol, callback=opts.callback),
        start=st)
    return TangentCutResult(
        termination=run.termination, bounds=ObjectiveBounds(run.value, run.lower_bound),
        limit=run.limit, x=run.z, wall_time=run.wall_time, nodes=run.nodes,
        iterations=run.iterations, backend=be.name, backend_version=run.backend_version,
        options=opts.to_dict(), raw_status="tangent_cuts", raw_gap=None,
        notes=(note, *run.notes), history=run.history, n_cuts=run.n_cuts,
        master_solves=run.master_solves)


class TangentCutBackend:
    """A MILP backend wrapped by the tangent-cut driver: takes loss terms and convex
    quadratics (the :class:`~rulemip.solvers.base.SolverBackend` protocol); ``"auto"``
    resolves the MILP master that takes rows in place."""

    def __init__(self, inner: SolverBackend | str = "auto", **driver_options: Any) -> None:
        self.inner = resolve_master(inner, {Capability.LP, Capability.INTEGER})
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
