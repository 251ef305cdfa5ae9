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
in all. ``tests/unit/test_levels.py`` checks it against the quadratic DP and against
exhaustive assignments.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from numpy.typing import NDArray

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
        top = 0
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
