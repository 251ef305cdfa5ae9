r"""The 2^k-levels bound, fast: optimal 1-d weighted k-means by a divide-and-conquer DP.

A k-rule ensemble takes at most :math:`2^k` distinct values on the rows, so no k-rule
model has a lower weighted SSE than the best fit to :math:`v` (the cell means, with weights
:math:`w`) by a function with at most :math:`L = 2^k` distinct values — the 1-d weighted
k-means optimum (docs/explanation/box_selection.md, "levels bound"). Its clusters are
contiguous in sorted order, so with :math:`C(a, b)` the weighted SSE of the sorted values
:math:`v_a..v_b` around their weighted mean,

.. math::  D_\ell(b) = \min\Big(D_{\ell-1}(b),\; \min_{1 \le a \le b}
           D_{\ell-1}(a - 1) + C(a, b)\Big), \qquad D_1(b) = C(0, b)

(the first term keeps *at most* ℓ levels). The interval cost of weighted squared error
satisfies the quadrangle inequality
:math:`C(a, c) + C(b, d) \le C(a, d) + C(b, c)` for :math:`a \le b \le c \le d` (Wu, "Optimal
quantization by matrix searching", J. Algorithms 1991), so an optimal split point
:math:`a^*(b)` can be chosen nondecreasing in :math:`b`, and each layer is computed by
divide and conquer in :math:`O(m \log m)` instead of :math:`O(m^2)`: :math:`O(L\, m \log m)`
in all. ``tests/unit/formulations/test_levels.py`` checks it against the quadratic DP and against
exhaustive assignments.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

from rulemip.budget import Budget

FloatArray = NDArray[np.float64]


@njit(cache=True)
def _interval_sse(cw: FloatArray, cs: FloatArray, cq: FloatArray, a: int, b: int) -> float:
    """Weighted SSE of sorted values a..b (inclusive) around their mean; 0 when a > b."""
    if a > b:
        return 0.0
    sw = cw[b + 1] - cw[a]
    if sw <= 0.0:
        return 0.0
    s1 = cs[b + 1] - cs[a]
    val = cq[b + 1] - cq[a] - s1 * s1 / sw
    return val if val > 0.0 else 0.0


@njit(cache=True)
def _levels_dc(v: FloatArray, w: FloatArray, n_levels: int) -> float:
    """Least weighted SSE with at most ``n_levels`` levels; ``v`` sorted ascending."""
    m = v.shape[0]
    cw = np.zeros(m + 1)
    cs = np.zeros(m + 1)
    cq = np.zeros(m + 1)
    for i in range(m):
        cw[i + 1] = cw[i] + w[i]
        cs[i + 1] = cs[i] + w[i] * v[i]
        cq[i + 1] = cq[i] + w[i] * v[i] * v[i]
    prev = np.empty(m)
    for b in range(m):
        prev[b] = _interval_sse(cw, cs, cq, 0, b)
    new = np.empty(m)
    # explicit stack of (lo, hi, opt_lo, opt_hi) sub-problems
    stack = np.empty((4 * (int(math.log2(m + 1)) + 4) * 2, 4), dtype=np.int64)
    for _layer in range(1, n_levels):
        stack[0, 0] = 0
        stack[0, 1] = m - 1
        stack[0, 2] = 1
        stack[0, 3] = m
        top = 1
        while top > 0:
            top -= 1
            lo = stack[top, 0]
            hi = stack[top, 1]
            olo = stack[top, 2]
            ohi = stack[top, 3]
            if lo > hi:
                continue
            mid = (lo + hi) // 2
            best = np.inf
            best_a = olo
            last = ohi if ohi < mid else mid
            for a in range(olo, last + 1):
                val = prev[a - 1] + _interval_sse(cw, cs, cq, a, mid)
                if val < best:
                    best = val
                    best_a = a
            new[mid] = best
            stack[top, 0] = lo
            stack[top, 1] = mid - 1
            stack[top, 2] = olo
            stack[top, 3] = best_a
            top += 1
            stack[top, 0] = mid + 1
            stack[top, 1] = hi
            stack[top, 2] = best_a
            stack[top, 3] = ohi
            top += 1
        for b in range(m):
            prev[b] = new[b] if new[b] < prev[b] else prev[b]
    return prev[m - 1]


def levels_bound(cell_values: FloatArray, cell_weights: FloatArray, n_levels: int) -> float:
    r"""Least weighted SSE of any fit to ``cell_values`` taking at most ``n_levels``
    distinct values (the exact 1-d weighted k-means optimum; 0 when ``n_levels`` ≥ the
    number of values). Values are centred first, so the prefix sums lose no precision to
    a large mean."""
    v = np.asarray(cell_values, dtype=float)
    w = np.asarray(cell_weights, dtype=float)
    m = len(v)
    if n_levels < 1:
        raise ValueError("n_levels must be >= 1")
    if m == 0 or n_levels >= m:
        return 0.0
    order = np.argsort(v, kind="stable")
    vs = v[order]
    ws = w[order]
    W = float(ws.sum())
    centre = float(ws @ vs) / W if W > 0 else 0.0
    return float(_levels_dc(np.ascontiguousarray(vs - centre), np.ascontiguousarray(ws),
                            int(n_levels)))


def levels_work(n_values: int, n_levels: int) -> float:
    """Operations of :func:`levels_bound` (about L·m·log₂ m), for callers that cap work."""
    if n_levels >= n_values or n_values < 2:
        return 0.0
    return float(n_levels) * n_values * max(1.0, math.log2(n_values))


# ---------------------------------------------------------------------- logistic loss
def _logistic_cell_terms(w_pos: FloatArray, w_neg: FloatArray, lo: float, hi: float
                         ) -> tuple[float, float]:
    r""":math:`G(lo, hi) = \sum_c \min_{f \in [lo, hi]} h_c(f)` with
    :math:`h_c(f) = W_c^+ \log(1 + e^{-f}) + W_c^- \log(1 + e^{f})`, and its derivative in
    ``lo`` at fixed width (the minimizer of :math:`h_c` is :math:`\log(W_c^+/W_c^-)`, clipped
    to the interval)."""
    with np.errstate(divide="ignore"):
        star = np.log(w_pos) - np.log(w_neg)   # ±inf for cells with one label
    f = np.clip(star, lo, hi)
    val = float(np.sum(w_pos * np.logaddexp(0.0, -f) + w_neg * np.logaddexp(0.0, f)))
    sig = 0.5 * (1.0 + np.tanh(0.5 * f))       # the sigmoid, without overflow
    dh = -w_pos * (1.0 - sig) + w_neg * sig     # h_c'(f): 0 where f = star
    return val, float(np.sum(dh))


def _min_over_shift(w_pos: FloatArray, w_neg: FloatArray, width: float,
                    lo_range: tuple[float, float] | None) -> float:
    r"""A valid lower bound on :math:`\min_{lo} G(lo, lo + width)` (``lo_range`` bounds
    ``lo``; None: free). :math:`G` is convex in ``lo``; bisection on the derivative brackets
    the minimizer in :math:`[a, b]` and the two tangents there bound :math:`G` from below
    everywhere, so their intersection is a lower bound, not an estimate."""
    def at(lo: float) -> tuple[float, float]:
        return _logistic_cell_terms(w_pos, w_neg, lo, lo + width)

    if lo_range is None:
        a, b = -width - 1.0, 1.0
        va, ga = at(a)
        for _ in range(200):
            if ga <= 0.0:
                break
            a = 2.0 * a - 1.0
            va, ga = at(a)
        vb, gb = at(b)
        for _ in range(200):
            if gb >= 0.0:
                break
            b = 2.0 * b + 1.0
            vb, gb = at(b)
        if ga > 0.0 or gb < 0.0:
            return 0.0  # one label only: the infimum is approached at infinity, and is ≥ 0
    else:
        a, b = lo_range
        va, ga = at(a)
        vb, gb = at(b)
        if ga >= 0.0:
            return va
        if gb <= 0.0:
            return vb
    for _ in range(60):
        if b - a <= 1e-12 * max(1.0, abs(a), abs(b)):
            break
        c = 0.5 * (a + b)
        vc, gc = at(c)
        if gc == 0.0:
            return vc
        if gc < 0.0:
            a, va, ga = c, vc, gc
        else:
            b, vb, gb = c, vc, gc
    if ga == gb:
        return min(va, vb)
    x = (vb - va + ga * a - gb * b) / (ga - gb)
    return max(0.0, min(va + ga * (x - a), min(va, vb)))


def logistic_levels_bound(w_pos: FloatArray, w_neg: FloatArray, n_rules: int, reg: float,
                          fit_intercept: bool, n_grid: int = 64,
                          budget: Budget | None = None) -> float:
    r"""A valid lower bound on :math:`\sum_i w_i l(y_i f(x_i)) + \lambda\|\beta\|^2` over
    every k-rule ensemble :math:`f = \beta_0 + \sum_j \beta_j 1_{B_j}` constant on cells,
    for the logistic loss (docs/explanation/box_selection.md, "levels bound, logistic").

    Every value of ``f`` lies in :math:`[lo, hi] = [\beta_0 - N, \beta_0 + P]` with
    :math:`P = \sum_j \beta_j^+`, :math:`N = \sum_j \beta_j^-`, so the data term is at least
    :math:`G(lo, hi) = \sum_c \min_{f\in[lo,hi]} h_c(f)`; by Cauchy–Schwarz
    :math:`\lambda\|\beta\|^2 \ge \lambda s^2 / k` with :math:`s = P + N = hi - lo`. Hence
    the bound :math:`\min_{s \ge 0} \lambda s^2/k + m(s)` with
    :math:`m(s) = \min_{lo} G(lo, lo + s)` (``lo ∈ [-s, 0]`` without an intercept).
    :math:`m` is nonincreasing, so on a grid :math:`s_0 < s_1 < \dots`,
    :math:`\lambda s_t^2/k + m(s_{t+1})` bounds every :math:`s \in [s_t, s_{t+1}]`, and
    :math:`s > S = \sqrt{k\, m(0)/\lambda}` costs more than :math:`s = 0`. Without a ridge
    the bound is the cells' own :math:`\sum_c \min_f h_c(f)` (the limit :math:`s\to\infty`).
    Weighted sums, not divided by the total weight.

    ``budget`` (None: unlimited) is asked between two evaluations of :math:`m` (each
    O(cells), tens of milliseconds on 100 000 cells): the grid is evaluated coarse first
    (every 8th point), and any grid covering :math:`[0, S]` gives a valid bound, so a
    spent budget returns the bound of the points evaluated — 0 (losses are nonnegative)
    before the coarse grid is complete."""
    w_pos = np.asarray(w_pos, dtype=float)
    w_neg = np.asarray(w_neg, dtype=float)
    k = int(n_rules)

    def m_of(s: float) -> float:
        return _min_over_shift(w_pos, w_neg, s, None if fit_intercept else (-s, 0.0))

    if reg <= 0.0:
        both = (w_pos > 0) & (w_neg > 0)
        wp, wn = w_pos[both], w_neg[both]
        return float(np.sum(wp * np.log1p(wn / wp) + wn * np.log1p(wp / wn)))
    spent = (lambda: False) if budget is None else budget.expired
    m0 = m_of(0.0)
    s_max = math.sqrt(k * m0 / reg)
    full = np.linspace(0.0, s_max, n_grid + 1)
    phi: dict[int, float] = {}          # grid index -> phi, the coarse grid first
    coarse = sorted({*range(0, n_grid + 1, max(1, n_grid // 8)), n_grid})
    rest = [i for i in range(n_grid + 1) if i not in set(coarse)]
    for pos, i in enumerate(coarse + rest):
        if spent():
            if pos < len(coarse):
                return 0.0      # the coarse grid is not complete: only the trivial bound
            break
        t = float(full[i])
        phi[i] = reg * t * t / k + m_of(t)
    idx = sorted(phi)
    grid = [float(full[i]) for i in idx]
    phis = [phi[i] for i in idx]
    for _ in range(6):    # refine around the binding interval (only raises the bound)
        if spent():
            break
        t = int(np.argmin(_convex_interval_bounds(grid, phis, reg / k)))
        new = list(np.linspace(grid[t], grid[t + 1], 9)[1:-1])
        grid[t + 1:t + 1] = new
        phis[t + 1:t + 1] = [reg * u * u / k + m_of(float(u)) for u in new]
    lows = _convex_interval_bounds(grid, phis, reg / k)
    return max(0.0, float(min(lows)))


def _convex_interval_bounds(grid: list[float], phis: list[float], ridge: float
                            ) -> FloatArray:
    r"""Lower bounds of the convex :math:`\varphi(s) = r s^2 + m(s)` (``ridge`` = r, ``m``
    nonincreasing) on each grid interval :math:`[s_t, s_{t+1}]`, from its values at the
    grid points: the larger of the monotone bound :math:`r s_t^2 + m(s_{t+1})` and the
    secants of the neighbouring intervals extended into this one (a convex function lies
    above every secant outside the secant's own interval). The values are themselves lower
    bounds computed to about 1e-12; a relative 1e-9 is given back for the extrapolation."""
    T = len(grid) - 1
    ms = [p - ridge * t * t for t, p in zip(grid, phis, strict=True)]   # m(s_t)
    out = np.empty(T)
    for t in range(T):
        a, b = grid[t], grid[t + 1]
        best = ridge * a * a + ms[t + 1]
        left = right = None
        if t >= 1 and grid[t] > grid[t - 1]:
            sl = (phis[t] - phis[t - 1]) / (grid[t] - grid[t - 1])
            left = (sl, phis[t] - sl * a)           # valid for s >= a
        if t + 2 <= T and grid[t + 2] > grid[t + 1]:
            sr = (phis[t + 2] - phis[t + 1]) / (grid[t + 2] - grid[t + 1])
            right = (sr, phis[t + 1] - sr * b)      # valid for s <= b
        if left is not None and right is not None:
            # min over [a, b] of the max of two lines
            cand = [a, b]
            if left[0] != right[0]:
                x = (right[1] - left[1]) / (left[0] - right[0])
                if a < x < b:
                    cand.append(x)
            sec = min(max(left[0] * x + left[1], right[0] * x + right[1]) for x in cand)
            best = max(best, sec)
        elif left is not None:
            best = max(best, min(left[0] * a + left[1], left[0] * b + left[1]))
        elif right is not None:
            best = max(best, min(right[0] * a + right[1], right[0] * b + right[1]))
        out[t] = best - 1e-9 * (1.0 + abs(best))
    return out
