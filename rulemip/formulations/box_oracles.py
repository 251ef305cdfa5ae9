r"""Value-and-gradient oracles of the box-selection CIP (docs/explanation/box_selection.md) and its
candidate boxes.

For multiplicities :math:`z \in \{0..k\}^B` of the candidate boxes (columns
:math:`q_b` of the reduced data, weights :math:`W_p`, :math:`D = \mathrm{diag}(W)`) the
convex function minimized by the CIP is the regularized risk of the best weights,

.. math:: R(z) = \frac{1}{W}\Big(\min_{\beta_0, \beta}\; \sum_p W_p\, l(f_p, y_p)
          + \lambda \sum_{b: z_b > 0} \frac{\beta_b^2}{z_b} + C\Big),
          \qquad f = \beta_0 \mathbf 1 + \sum_b \beta_b q_b ,

(:math:`\beta_b = 0` where :math:`z_b = 0`; :math:`\beta_0` only with an intercept; C the
constant of the cell reduction). ``z_b`` identical rules of box b with weights summing to
:math:`\beta_b` have least ridge :math:`\beta_b^2/z_b` (equal split), so :math:`R(z)` is
the optimal :math:`R_\lambda` of the ensemble "``z_b`` copies of box ``b``".

Duality gives convexity and the gradient in one stroke: with :math:`a_p = W_p\,
\partial l(f_p, y_p)/\partial f` at the optimal fit,

.. math:: \min_{\beta}(\dots) = \max_{a:\ \mathbf 1^\top a = 0}\; -\sum_p W_p\,
          l_p^*(a_p/W_p) - \sum_b z_b \frac{(q_b^\top a)^2}{4\lambda},

a maximum of functions affine in z (the constraint only with an intercept), hence
:math:`\partial R/\partial z_b = -(q_b^\top a)^2/(4\lambda W)`, and the tangent plane at any
:math:`z^h \ge 0` (boundary included) underestimates :math:`R` on the whole orthant. For
squared loss :math:`a = -2 D r` with the residual r and this is
:math:`-(q_b^\top D r)^2/(\lambda W)` — the :math:`-(\gamma/2)(q_b^\top r)^2` for the
loss :math:`\tfrac12(f-y)^2`, rescaled to :math:`l = (f - y)^2` and :math:`R_\lambda`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.losses import get_loss

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_SUPPORT_TOL = 1e-12  # z_b below this counts as 0 (relaxed masters give tiny positives)

#: relative margin against round-off of the box searches' pruning tests and bounds
#: (enumeration, :mod:`~rulemip.algorithms.krule.box_bnb`): it multiplies :func:`risk_unit`
ROUNDING_MARGIN = 1e-9
#: floor of :func:`risk_unit` relative to the risk of the model without rules
RISK_UNIT_FLOOR = 1e-9


def risk_unit(value: float, empty_risk: float) -> float:
    r"""What relative margins and tolerances on a risk multiply:
    :math:`\max(|R|, 10^{-9} R_0)` with ``empty_risk`` :math:`R_0` the risk of the model
    without rules (the data's scale; a positive floor besides). No absolute unit:
    multiplying y by c multiplies every risk, bound and this unit by :math:`c^2` (``reg``
    is scale-free, the weights scale with y), so a search proves at the same relative gap
    for every scale of y. The old unit :math:`\max(1, |R|)` made a margin of 1e-9 worth
    a relative gap of 0.2 at risks near 5e-9 (docs/explanation/box_selection.md,
    "Tolerances")."""
    return max(abs(float(value)), RISK_UNIT_FLOOR * abs(float(empty_risk)), 1e-300)


# ---------------------------------------------------------------------- candidate boxes
@dataclass(frozen=True)
class CandidateBoxes:
    """Distinct candidate boxes over threshold groups.

    ``lower[b, j] <= group <= upper[b, j]`` on every feature; ``cover[c, b]`` whether box b
    covers cell c. Among boxes with the same cover the one with the fewest restricted
    features, then fewest propositions, is kept.
    """

    lower: IntArray
    upper: IntArray
    cover: NDArray[np.bool_]
    n_groups: IntArray

    @property
    def n_boxes(self) -> int:
        return int(self.lower.shape[0])

    def key_index(self) -> dict[bytes, int]:
        """Map from the packed cover vector to the box index."""
        packed = np.packbits(self.cover, axis=0)
        return {packed[:, b].tobytes(): b for b in range(self.n_boxes)}


def enumerate_boxes(groups: IntArray, n_groups: IntArray, *, max_rule_length: int | None = None,
                    drop_full: bool = True) -> CandidateBoxes:
    """All boxes (runs of consecutive groups per feature) with distinct covers of the cells.

    Parameters
    ----------
    groups : (n_cells, d) group index of each occupied cell.
    n_groups : (d,) number of groups per feature (cut points + 1).
    max_rule_length : at most this many restricted features per box (``None``: any).
    drop_full : drop the box covering every cell (collinear with the intercept).

    Boxes are built feature by feature; partial boxes with equal covers are merged at every
    step (keeping the dominant one), which is exact because equal partial covers have equal
    covers under every extension.
    """
    n_cells, d = groups.shape
    cover = np.ones((n_cells, 1), dtype=bool)
    lower = np.zeros((1, 0), dtype=np.int64)
    upper = np.zeros((1, 0), dtype=np.int64)
    n_restr = np.zeros(1, dtype=np.int64)
    n_props = np.zeros(1, dtype=np.int64)
    for j in range(d):
        g = int(n_groups[j])
        a, b = np.triu_indices(g)
        gj = groups[:, j]
        memb = (gj[:, None] >= a[None, :]) & (gj[:, None] <= b[None, :])  # cells × intervals
        full = (a == 0) & (b == g - 1)
        props = (a > 0).astype(np.int64) + (b < g - 1).astype(np.int64)
        nb, ni = cover.shape[1], len(a)
        new_cover = (cover[:, :, None] & memb[:, None, :]).reshape(n_cells, nb * ni)
        new_restr = (n_restr[:, None] + (~full)[None, :]).ravel()
        new_props = (n_props[:, None] + props[None, :]).ravel()
        new_lower = np.concatenate([np.repeat(lower, ni, axis=0),
                                    np.tile(a, nb)[:, None]], axis=1)
        new_upper = np.concatenate([np.repeat(upper, ni, axis=0),
                                    np.tile(b, nb)[:, None]], axis=1)
        ok = new_cover.any(axis=0)
        if max_rule_length is not None:
            ok &= new_restr <= max_rule_length
        idx = np.flatnonzero(ok)
        # keep one representative per cover: fewest restricted features, then propositions
        order = idx[np.lexsort((new_props[idx], new_restr[idx]))]
        packed = np.packbits(new_cover[:, order], axis=0)
        _, first = np.unique(packed.T, axis=0, return_index=True)
        keep = np.sort(order[first])
        cover, n_restr, n_props = new_cover[:, keep], new_restr[keep], new_props[keep]
        lower, upper = new_lower[keep], new_upper[keep]
    if drop_full:
        nonfull = ~cover.all(axis=0)
        cover, lower, upper = cover[:, nonfull], lower[nonfull], upper[nonfull]
    return CandidateBoxes(lower, upper, np.ascontiguousarray(cover),
                          np.asarray(n_groups, dtype=np.int64))


# ---------------------------------------------------------------------- oracles
class SquaredBoxOracle:
    r"""Exact :math:`R(z)` and gradient for squared loss (module docstring).

    Only the selected columns enter a linear system (size ≤ k, plus the intercept handled
    by weighted centering), the gradient for all B boxes is one product :math:`Q^\top(Dr)`.
    """

    def __init__(self, Q: FloatArray, y: FloatArray, weight: FloatArray, reg: float,
                 fit_intercept: bool, constant: float, total_weight: float) -> None:
        self.Q = np.asarray(Q, dtype=float)
        self.w = np.asarray(weight, dtype=float)
        self.reg = float(reg)
        self.fit_intercept = fit_intercept
        self.constant = float(constant)
        self.W = float(total_weight)
        self.y = np.asarray(y, dtype=float)
        if fit_intercept:
            sw = float(self.w.sum())
            self.ymean = float(self.w @ self.y) / sw
            self.col_mean = (self.w @ self.Q) / sw
        else:
            self.ymean = 0.0
            self.col_mean = np.zeros(self.Q.shape[1])
        self.yc = self.y - self.ymean
        self.n_evals = 0
        self._gram: tuple[FloatArray, FloatArray] | None = None

    def fit(self, z: FloatArray) -> tuple[IntArray, FloatArray, float]:
        """Support S, weights :math:`\\beta_S` and intercept of the optimal fit at ``z``."""
        S = np.flatnonzero(np.asarray(z) > _SUPPORT_TOL)
        Qs = self.Q[:, S] - self.col_mean[S]
        if len(S):
            A = Qs.T @ (Qs * self.w[:, None]) + np.diag(self.reg / np.asarray(z)[S])
            rhs = Qs.T @ (self.w * self.yc)
            beta = np.linalg.solve(A, rhs)
        else:
            beta = np.zeros(0)
        intercept = self.ymean - float(self.col_mean[S] @ beta) if self.fit_intercept else 0.0
        return S, beta, intercept

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]:
        self.n_evals += 1
        z = np.asarray(z, dtype=float)
        S, beta, _ = self.fit(z)
        r = self.yc - (self.Q[:, S] - self.col_mean[S]) @ beta
        a = self.w * r
        val = float(a @ r) + self.reg * float(np.sum(beta * beta / z[S]))
        c = self.Q.T @ a - self.col_mean * float(a.sum())
        grad = -(c * c) / (self.reg * self.W)
        return (val + self.constant) / self.W, grad

    def gram(self) -> tuple[FloatArray, FloatArray]:
        """Weighted Gram matrix of the centered columns and their products with y (cached)."""
        if self._gram is None:
            Qc = self.Q - self.col_mean
            WQ = Qc * self.w[:, None]
            self._gram = (Qc.T @ WQ, WQ.T @ self.yc)
        return self._gram

    def single_box_values(self) -> FloatArray:
        """:math:`R(e_b)` for every box b at once (closed form of a one-column ridge fit)."""
        Qc = self.Q - self.col_mean
        num = (Qc.T @ (self.w * self.yc)) ** 2
        den = (Qc * Qc).T @ self.w + self.reg
        base = float(self.w @ (self.yc * self.yc))
        return (base - num / den + self.constant) / self.W


class ConvexBoxOracle:
    r""":math:`R(z)` and gradient for logistic / Poisson loss by one convex refit on the
    selected columns (perspective penalty :math:`\lambda\beta_b^2/z_b`, obtained by scaling
    column b by :math:`\sqrt{z_b}` and a plain ridge), gradient by the dual formula."""

    def __init__(self, Q: FloatArray, y: FloatArray, weight: FloatArray, reg: float,
                 fit_intercept: bool, constant: float, total_weight: float,
                 loss: str) -> None:
        self.Q = np.asarray(Q, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.w = np.asarray(weight, dtype=float)
        self.reg = float(reg)
        self.fit_intercept = fit_intercept
        self.constant = float(constant)
        self.W = float(total_weight)
        self.loss = get_loss(loss)
        self.n_evals = 0

    def fit(self, z: FloatArray) -> tuple[IntArray, FloatArray, float]:
        """Damped Newton on the (≤ k+1)-dimensional refit, run to machine precision (the
        gradient formula needs the stationarity conditions, e.g. Σ a = 0, to hold)."""
        S = np.flatnonzero(np.asarray(z) > _SUPPORT_TOL)
        sq = np.sqrt(np.asarray(z, dtype=float)[S])
        cols = self.Q[:, S] * sq
        A = np.column_stack([np.ones(len(self.y)), cols]) if self.fit_intercept else cols
        pen = np.full(A.shape[1], self.reg)
        if self.fit_intercept:
            pen[0] = 0.0
        if A.shape[1] == 0:
            return S, np.zeros(0), 0.0
        lo, w, y = self.loss, self.w, self.y
        c = np.zeros(A.shape[1])
        if self.fit_intercept:
            c[0] = lo.best_constant(y, w)

        def obj(cc: FloatArray) -> float:
            return float(w @ lo.value(A @ cc, y) + pen @ (cc * cc))

        cur = obj(c)
        gtol = 1e-13 * max(1.0, float(w.sum()))
        for _ in range(100):
            f = A @ c
            g = A.T @ (w * lo.gradient(f, y)) + 2.0 * pen * c
            if float(np.max(np.abs(g))) <= gtol:
                break
            H = A.T @ (A * (w * lo.hessian(f, y))[:, None]) + np.diag(2.0 * pen)
            H += np.eye(len(c)) * 1e-14 * max(1.0, float(np.trace(H)))
            step = np.linalg.solve(H, g)
            if float(g @ step) <= 1e-8 * max(1.0, abs(cur)):
                # quadratic-convergence region: full steps, no line search on round-off
                c = c - step
                cur = obj(c)
                continue
            t = 1.0
            while t > 1e-16:
                cand = c - t * step
                val = obj(cand)
                if val <= cur - 1e-4 * t * float(g @ step) or val <= cur:
                    break
                t *= 0.5
            if t <= 1e-16:
                break
            c, cur = cand, val
        b0 = float(c[0]) if self.fit_intercept else 0.0
        theta = c[1:] if self.fit_intercept else c
        return S, np.asarray(theta) * sq, b0

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]:
        self.n_evals += 1
        z = np.asarray(z, dtype=float)
        S, beta, b0 = self.fit(z)
        f = b0 + self.Q[:, S] @ beta
        data = float(self.w @ self.loss.value(f, self.y))
        val = data + self.reg * float(np.sum(beta * beta / z[S]))
        a = self.w * self.loss.gradient(f, self.y)
        c = self.Q.T @ a
        grad = -(c * c) / (4.0 * self.reg * self.W)
        return (val + self.constant) / self.W, grad


# ---------------------------------------------------------------------- combinatorial bounds
def _weighted_sse_columns(cw: FloatArray, cs: FloatArray, cq: FloatArray, rows: int,
                          cols: IntArray) -> FloatArray:
    """``T[a, j]`` = weighted SSE of ``v[a:cols[j]+1]`` around its weighted mean, for
    ``a < rows`` (inf where ``a > cols[j]``), from the prefix sums of w, w·v, w·v²."""
    a = np.arange(rows)[:, None]
    b = np.asarray(cols)[None, :]
    sw = cw[b + 1] - cw[a]
    s1 = cs[b + 1] - cs[a]
    s2 = cq[b + 1] - cq[a]
    with np.errstate(invalid="ignore", divide="ignore"):
        T = np.where(b >= a, np.maximum(s2 - s1 * s1 / np.where(sw > 0, sw, 1.0), 0.0), np.inf)
    return np.asarray(T, dtype=float)


def segmentation_bound(v: FloatArray, w: FloatArray, n_segments: int,
                       block: int = 512) -> float:
    r"""Least weighted SSE of a fit to ``v`` (in the given order) that is constant on at
    most ``n_segments`` contiguous runs — exact dynamic programming, O(S·n²) time; the
    segment costs are computed from prefix sums ``block`` columns at a time, so memory is
    O(n·block), not O(n²)."""
    n = len(v)
    if n_segments >= n:
        return 0.0
    cw = np.concatenate([[0.0], np.cumsum(w)])
    cs = np.concatenate([[0.0], np.cumsum(w * v)])
    cq = np.concatenate([[0.0], np.cumsum(w * v * v)])
    best = _weighted_sse_columns(cw, cs, cq, 1, np.arange(n))[0]  # one segment 0..b
    for _ in range(n_segments - 1):
        # new[b] = min_{a<=b} best[a-1] + T[a, b]
        prev = np.concatenate([[0.0], best[:-1]])
        new = np.empty(n)
        for lo in range(0, n, block):
            cols = np.arange(lo, min(n, lo + block))
            rows = int(cols[-1]) + 1
            T = _weighted_sse_columns(cw, cs, cq, rows, cols)
            new[cols] = np.min(prev[:rows, None] + T, axis=0)
        best = new
    return float(best[-1])


# ---------------------------------------------------------------------- exact enumeration
def n_supports(n_boxes: int, k: int) -> int:
    """Number of supports (sets of at most k distinct boxes)."""
    from math import comb

    return sum(comb(n_boxes, s) for s in range(min(k, n_boxes) + 1))


def _compositions(total: int, parts: int) -> list[tuple[int, ...]]:
    """All tuples of ``parts`` positive integers with sum ≤ ``total``."""
    if parts == 0:
        return [()]
    out: list[tuple[int, ...]] = []
    for first in range(1, total - parts + 2):
        out.extend((first, *rest) for rest in _compositions(total - first, parts - 1))
    return out


def _squared_tangent_bound(oracle: SquaredBoxOracle, combos: NDArray[np.int64],
                           k: int) -> FloatArray:
    """Lower bound on R over all z with support S (1 ≤ z_b ≤ k−s+1, Σ z ≤ k): the tangent
    at the continuous point m·1_S (m = k/s) minimized over that polytope. With
    ``(G_SS + λ/m) β = h_S`` the gradient is ``−λ β_b² /(m² W)`` (q̃_bᵀDr = λβ_b/m); the
    linear minimum puts every spare unit on the most negative coordinate."""
    s = combos.shape[1]
    m = k / s
    gram, h = oracle.gram()
    A = gram[combos[:, :, None], combos[:, None, :]] + np.eye(s)[None] * (oracle.reg / m)
    rhs = h[combos]
    beta = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    base = float(oracle.w @ (oracle.yc * oracle.yc))
    val = (np.maximum(base - np.einsum("ms,ms->m", rhs, beta), 0.0) + oracle.constant) / oracle.W
    g = -oracle.reg * beta * beta / (m * m * oracle.W)
    return np.asarray(val + g.sum(axis=1) * (1.0 - m) + (k - s) * g.min(axis=1), dtype=float)


def _squared_support_values(oracle: SquaredBoxOracle, combos: NDArray[np.int64],
                            mult: float | FloatArray) -> FloatArray:
    """:math:`R(z)` for the z with support ``combos[i]`` and multiplicities ``mult`` (a
    number, or one row per support) — batched, from the Gram matrix of the centered
    columns."""
    m, s = combos.shape
    base = float(oracle.w @ (oracle.yc * oracle.yc))
    if s == 0:
        return np.full(m, (base + oracle.constant) / oracle.W)
    gram, h = oracle.gram()
    inv_mult = 1.0 / np.broadcast_to(np.asarray(mult, dtype=float), (m, s))
    A = gram[combos[:, :, None], combos[:, None, :]]
    A = A + oracle.reg * inv_mult[:, :, None] * np.eye(s)[None]
    rhs = h[combos]
    beta = np.linalg.solve(A, rhs[:, :, None])[:, :, 0]
    vals = base - np.einsum("ms,ms->m", rhs, beta)
    return (np.maximum(vals, 0.0) + oracle.constant) / oracle.W


def enumerate_optimum(oracle: SquaredBoxOracle | ConvexBoxOracle, n_boxes: int, k: int,
                      budget: Budget | None = None, chunk: int = 20_000
                      ) -> tuple[FloatArray, float, float, bool]:
    r"""Exact :math:`\min\{R(z) : z \in \{0..k\}^B, \sum z \le k\}` by enumerating supports.

    For a support S (|S| = s) every feasible z with that support has
    :math:`1_S \le z \le (k - s + 1) 1_S`, and R is non-increasing in z (its gradient is
    ≤ 0), so :math:`R((k-s+1)1_S)` is a lower bound and :math:`R(1_S)` an upper bound for
    all of them (for squared loss also the tangent at the continuous point (k/s)·1_S,
    minimized over those z, is used). Supports whose bound reaches the incumbent are
    pruned; the others
    have all their multiplicity vectors evaluated. Returns ``(z*, R(z*), lower bound,
    complete)``; ``complete`` is False when ``budget`` (the fit's
    :class:`~rulemip.budget.Budget`; None: unlimited) stopped the enumeration — the lower
    bound is then ``-inf``. The clock is read once per block of ``chunk`` supports for
    squared loss (vectorized closed forms) and once per support otherwise (each evaluation
    is a refit).
    """
    import itertools

    clock = Budget.coerce(budget, None)
    best_z = np.zeros(n_boxes)
    best = oracle.value_and_gradient(best_z)[0]
    empty_risk = best  # the model without rules: the unit's floor (risk_unit)
    pending: list[tuple[tuple[int, ...], float]] = []
    pruned_floor = math.inf  # least lower bound of a support pruned before full evaluation
    squared = isinstance(oracle, SquaredBoxOracle)
    for s in range(1, min(k, n_boxes) + 1):
        it = itertools.combinations(range(n_boxes), s)
        while True:
            block = list(itertools.islice(it, chunk))
            if not block:
                break
            if clock.expired():
                return best_z, best, -np.inf, False
            if squared:
                clock.charge(len(block))    # a support evaluated is a unit of work
            combos = np.asarray(block, dtype=np.int64)
            if squared:
                assert isinstance(oracle, SquaredBoxOracle)
                ub = _squared_support_values(oracle, combos, 1.0)
                lb = _squared_support_values(oracle, combos, float(k - s + 1))
                if s < k:
                    lb = np.maximum(lb, _squared_tangent_bound(oracle, combos, k))
            else:
                ub = np.empty(len(block))
                lb = np.empty(len(block))
                for i, S in enumerate(block):
                    if clock.expired():
                        # every evaluation is a refit: check the clock per support
                        return best_z, best, -np.inf, False
                    clock.charge()
                    z = np.zeros(n_boxes)
                    z[list(S)] = 1.0
                    ub[i] = oracle.value_and_gradient(z)[0]
                    z[list(S)] = float(k - s + 1)
                    lb[i] = oracle.value_and_gradient(z)[0]
            i_best = int(np.argmin(ub))
            if ub[i_best] < best:
                best = float(ub[i_best])
                best_z = np.zeros(n_boxes)
                best_z[list(block[i_best])] = 1.0
            if s < k:
                margin = ROUNDING_MARGIN * risk_unit(best, empty_risk)
                open_ = lb < best - margin
                pending.extend((block[i], float(lb[i])) for i in np.flatnonzero(open_))
                if not np.all(open_):  # pruned supports keep their exact lower bound
                    pruned_floor = min(pruned_floor, float(lb[~open_].min()))
    # refine supports that might hold a better multiplicity vector
    margin = ROUNDING_MARGIN * risk_unit(best, empty_risk)
    by_size: dict[int, list[tuple[tuple[int, ...], float]]] = {}
    for S, lb_s in pending:
        by_size.setdefault(len(S), []).append((S, lb_s))
    for s, items in sorted(by_size.items()):
        supports = np.asarray([S for S, _ in items], dtype=np.int64)
        lbs = np.asarray([v for _, v in items])
        live = np.arange(len(lbs))
        for comp in _compositions(k, s):
            if max(comp) == 1:
                continue
            if clock.expired():
                return best_z, best, -np.inf, False
            live = np.flatnonzero(lbs < best - margin)
            if len(live) == 0:
                break
            if squared:
                clock.charge(len(live))
                assert isinstance(oracle, SquaredBoxOracle)
                vals = _squared_support_values(oracle, supports[live],
                                               np.asarray(comp, dtype=float))
            else:
                vals = np.empty(len(live))
                for i, row in enumerate(supports[live]):
                    if clock.expired():
                        return best_z, best, -np.inf, False
                    clock.charge()
                    z = np.zeros(n_boxes)
                    z[row] = comp
                    vals[i] = oracle.value_and_gradient(z)[0]
            i_best = int(np.argmin(vals))
            if vals[i_best] < best:
                best = float(vals[i_best])
                best_z = np.zeros(n_boxes)
                best_z[supports[live[i_best]]] = comp
                margin = ROUNDING_MARGIN * risk_unit(best, empty_risk)
        # supports that left the live set skipped some multiplicity vectors: their
        # lower bound is what is proved for them (live ones were evaluated in full)
        dropped = np.setdiff1d(np.arange(len(lbs)), live)
        if dropped.size:
            pruned_floor = min(pruned_floor, float(lbs[dropped].min()))
    # every support was either evaluated in full (values >= best) or pruned with its
    # exact lower bound, so min(best, least pruned bound) is proved — pruning used a
    # margin of 1e-9 of risk_unit(best) against rounding (relative: at any scale of y it
    # costs the gap at most 1e-9), but the bound does not pay it when nothing was
    # pruned within the margin (k = 1, or supports far above the optimum)
    return best_z, best, min(best, pruned_floor), True
