r"""The three-box gain and its bounds (docs/explanation/kbox_search.md §6).

Three boxes a, b, c with normalized sums :math:`z = S/\sqrt K` and correlations
:math:`\rho_{xy} = c_{xy}/\sqrt{K_x K_y}` (:math:`c_{xy}` the cross term of the pair
kernel, :func:`rulemip.algorithms.kbox.pair_kernel.pair_gain`) gain
:math:`v^\top R^{-1} v`, v = (z_a, z_b, z_c), R the 3 × 3 matrix of the ρ's with unit
diagonal (the ridge is inside K). For a fixed pair (a, b) the Schur form is

.. math:: g(a, b, c) = g_2 + \frac{t^2}{s},\quad t = z_c - r^\top u,\quad
          s = 1 - r^\top R_2^{-1} r,

with :math:`R_2 = \begin{pmatrix}1 & \rho_{ab}\\ \rho_{ab} & 1\end{pmatrix}`,
:math:`u = R_2^{-1}(z_a, z_b)`, :math:`g_2 = (z_a, z_b) u` the pair's gain and
r = (ρ_ac, ρ_bc). This is the matrix-fractional function of (v, R) — jointly convex in
(z_c, r) where R ≻ 0, i.e. where s > 0 — and s is concave in r. So over a rectangle of
(ρ_ac, ρ_bc) whose four corners have s > 0, s > 0 everywhere on it, and over the product
with a range of z_c the gain is largest at one of the eight corners (:func:`may_complete`;
for a run sorted by z, :func:`tails3`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rulemip.algorithms.kbox.pair_kernel import COLLINEAR_TOL, pair_gain

__all__ = ["LINK", "SPAN_TOL", "may_complete", "offer", "schur", "tails3", "triple_gain"]

#: a pair whose correlation reaches this in absolute value is *linked*: its third boxes
#: of every rank are searched; an unlinked pair's only if one may complete it with both of
#: its correlations within ±LINK (< 1/2, so that every such triple's R is positive
#: definite); docs/explanation/kbox_search.md §6
LINK = 0.49

#: a third box whose Schur complement s (its squared distance, normalized, from the span
#: of the pair) is below this lies in that span: the triple gains what the pair gains
SPAN_TOL = 1e-10

@njit(cache=True, inline="always")
def schur(rac: float, rbc: float, rab: float, det2: float) -> float:
    r""":math:`s = 1 - r^\top R_2^{-1} r`."""
    return 1.0 - (rac * rac - 2.0 * rab * rac * rbc + rbc * rbc) / det2


@njit(cache=True, inline="always")
def triple_gain(za: float, zb: float, zc: float, rab: float, rac: float, rbc: float
                ) -> float:
    r"""Gain :math:`v^\top R^{-1} v` of three columns with normalized sums z and
    correlations ρ (module docstring). A collinear pair (a, b) or a third column in the
    span of the other two gains what the best pair among them gains (the span is the
    same); the caller scores the collinear pairs themselves."""
    det2 = 1.0 - rab * rab
    if det2 <= COLLINEAR_TOL:
        g_ac = pair_gain(za, 1.0, zc, 1.0, rac)
        g_bc = pair_gain(zb, 1.0, zc, 1.0, rbc)
        return g_ac if g_ac > g_bc else g_bc
    u1 = (za - rab * zb) / det2
    u2 = (zb - rab * za) / det2
    g2 = za * u1 + zb * u2
    s = schur(rac, rbc, rab, det2)
    if s <= SPAN_TOL:
        return g2
    t = zc - rac * u1 - rbc * u2
    return g2 + t * t / s


@njit(cache=True, inline="always")
def may_complete(g2: float, u1: float, u2: float, rab: float, det2: float,
                 ac_lo: float, ac_hi: float, bc_lo: float, bc_hi: float,
                 zlo: float, zhi: float, Gp: float) -> bool:
    r"""Whether some third box with :math:`z_c \in [z_{lo}, z_{hi}]`,
    :math:`\rho_{ac} \in [ac_{lo}, ac_{hi}]` and :math:`\rho_{bc} \in [bc_{lo},
    bc_{hi}]` may complete the pair (gain g2, :math:`u = R_2^{-1}(z_a, z_b)`) to a gain of
    at least Gp. When every corner of the ρ rectangle has s > 0 the gain is convex on the
    whole box and its maximum is at one of the eight corners; otherwise the rectangle
    reaches the span of the pair, where the gain has no finite bound, and the answer is
    yes."""
    if zlo > zhi:
        return False
    for i in range(4):
        rac = ac_lo if i < 2 else ac_hi
        rbc = bc_lo if (i & 1) == 0 else bc_hi
        s = schur(rac, rbc, rab, det2)
        if s <= SPAN_TOL:
            return True
        p = rac * u1 + rbc * u2
        t1 = zlo - p
        t2 = zhi - p
        t = t1 * t1 if t1 * t1 > t2 * t2 else t2 * t2
        if g2 + t / s >= Gp:
            return True
    return False


@njit(cache=True, inline="always")
def tails3(g2: float, u1: float, u2: float, rab: float, det2: float, ac_lo: float,
            ac_hi: float, bc_lo: float, bc_hi: float, Gp: float) -> tuple[float, float]:
    r"""An interval of :math:`z_c` on which every corner of the ρ rectangle gains less
    than Gp (so, by convexity in r, the whole rectangle does): corner k reaches Gp
    exactly when :math:`|z_c - p_k| \ge \sqrt{(G_p - g_2) s_k}`, so the interval is the
    intersection of the four open intervals around the :math:`p_k = r_k^\top u`. Empty
    (``lo >= hi``) when a corner has s ≤ 0 or the pair alone reaches Gp."""
    need = Gp - g2
    if need <= 0.0:
        return 0.0, 0.0
    lo = -math.inf
    hi = math.inf
    for i in range(4):
        rac = ac_lo if i < 2 else ac_hi
        rbc = bc_lo if (i & 1) == 0 else bc_hi
        s = schur(rac, rbc, rab, det2)
        if s <= SPAN_TOL:
            return 0.0, 0.0
        p = rac * u1 + rbc * u2
        r = math.sqrt(need * s)
        lo = max(lo, p - r)
        hi = min(hi, p + r)
    return lo, hi


@njit(cache=True, inline="always")
def offer(gain: float, p: int, q: int, r: int, state: np.ndarray, best: np.ndarray
           ) -> None:
    """Keep the multiset of positions {p, q, r} if it gains more than the incumbent, or as
    much with a lexicographically smaller sorted triple (the same optimum whatever the
    scan order)."""
    lo = min(p, q, r)
    hi = max(p, q, r)
    mid = p + q + r - lo - hi
    if gain > state[0] or (gain == state[0] and (
            best[0] < 0 or lo < best[0] or (lo == best[0] and (
                mid < best[1] or (mid == best[1] and hi < best[2]))))):
        state[0] = gain
        best[0] = lo
        best[1] = mid
        best[2] = hi
