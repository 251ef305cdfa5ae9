r"""Compiled kernels of the exact three-box scan (docs/explanation/kbox_search.md §6).

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
with a range of z_c the gain is largest at one of the eight corners (:func:`may_complete`).
A third box below a trie node lies inside the node's region, which bounds both of its
intersections (:func:`rulemip.algorithms.kbox.pair_kernel.rho_range`); a subtree whose
corners all stay below the incumbent is skipped. Survivors are scored exactly from their
two intersection weights (:func:`triple_gain`). No Python runs per triple.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rulemip.algorithms.kbox.correlations import (
    correlation,
    first_box_correlations,
    trie_parents,
)
from rulemip.algorithms.kbox.pair_kernel import (
    COLLINEAR_TOL,
    _and_weight,
    _cross,
    _first_ge,
    _first_gt,
    pair_gain,
    rho_range,
)

__all__ = ["best_third", "may_complete", "scan_triples", "triple_gain"]

#: a pair whose correlation reaches this in absolute value is *linked*: its third boxes
#: of every rank are searched; an unlinked pair's only if one may complete it with both of
#: its correlations within ±LINK (< 1/2, so that every such triple's R is positive
#: definite); docs/explanation/kbox_search.md §6
LINK = 0.45

#: a third box whose Schur complement s (its squared distance, normalized, from the span
#: of the pair) is below this lies in that span: the triple gains what the pair gains
SPAN_TOL = 1e-10


@njit(cache=True, inline="always")
def _schur(rac: float, rbc: float, rab: float, det2: float) -> float:
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
    s = _schur(rac, rbc, rab, det2)
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
        s = _schur(rac, rbc, rab, det2)
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
def _tails3(g2: float, u1: float, u2: float, rab: float, det2: float, ac_lo: float,
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
        s = _schur(rac, rbc, rab, det2)
        if s <= SPAN_TOL:
            return 0.0, 0.0
        p = rac * u1 + rbc * u2
        r = math.sqrt(need * s)
        lo = max(lo, p - r)
        hi = min(hi, p + r)
    return lo, hi


@njit(cache=True, inline="always")
def _offer(gain: float, p: int, q: int, r: int, state: np.ndarray, best: np.ndarray
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


@njit(cache=True, inline="always")
def _member_range(Tr: float, Dr: float, Ts: float, ws: float, Nx: float,
                  Nc: float, W: float, unit: float, same_weight: bool
                  ) -> tuple[float, float]:
    """Bounds on :math:`n_{xc}` for a run member c = R ∩ s (R the node's region, s its last
    slab; ``Tr``, ``Dr``: x's weight inside R and R's weight outside x; ``Ts``: x's weight
    inside s, ``ws`` the weight of s): x ∩ c lies in x ∩ R and in x ∩ s and contains
    their common part, c ∖ x lies in R ∖ x and in s ∖ x (docs/explanation/kbox_search.md
    §2)."""
    off = unit if (unit > 0.0 and same_weight) else 0.0
    hi = min(min(Nx, Nc) - off, Tr, Ts)
    lo = max(0.0, Nx + Nc - W, Nc - min(Dr, ws - Ts), Tr + Ts - Nx)
    return lo, max(hi, lo)


@njit(cache=True, inline="always")
def _score_third(bits: np.ndarray, a: int, b: int, c: int, ra: int, rb: int, Na: float,
                 Nb: float, Ka: float, Kb: float, rab: float,
                 det2: float, g2: float, u1: float, u2: float, N: np.ndarray,
                 K: np.ndarray, z: np.ndarray, rank: np.ndarray, W: float, centred: bool,
                 unit: float, weight: np.ndarray, state: np.ndarray, best: np.ndarray,
                 counts: np.ndarray) -> None:
    """The exact gain of the triple (a, b, c) from its two intersections with c."""
    counts[0] += 1
    Nc = N[c]
    Kc = K[c]
    rac = correlation(_and_weight(bits[a], bits[c], unit, weight), Na, Nc, W, centred, Ka, Kc)
    rbc = correlation(_and_weight(bits[b], bits[c], unit, weight), Nb, Nc, W, centred, Kb, Kc)
    s = _schur(rac, rbc, rab, det2)
    gain = g2
    if s > SPAN_TOL:
        t = z[c] - rac * u1 - rbc * u2
        gain = g2 + t * t / s
    _offer(gain, ra, rb, rank[c], state, best)


@njit(cache=True, inline="always")
def _clip(lo: float, hi: float, cap: float) -> tuple[float, float]:
    """The correlation range [lo, hi] cut to [−cap, cap] (empty: lo > hi)."""
    return max(lo, -cap), min(hi, cap)


@njit(cache=True, nogil=True)
def _check_member(bits: np.ndarray, a: int, b: int, c: int, ra: int, rb: int, Na: float,
                  Nb: float, Ka: float, Kb: float, rab: float, det2: float, g2: float,
                  u1: float, u2: float, cap_ac: float, cap_bc: float, rho_a: np.ndarray,
                  TBd: float,
                  DBd: float, Tsl: np.ndarray, s2: int, slab_w: np.ndarray, N: np.ndarray,
                  K: np.ndarray, z: np.ndarray, rank: np.ndarray, W: float, centred: bool,
                  unit: float, weight: np.ndarray, state: np.ndarray, best: np.ndarray,
                  counts: np.ndarray) -> None:
    """A run member c = R ∩ s2: its correlation with a exact (``rho_a``), with b bounded
    from R and its last slab s2 (:func:`_member_range`); beyond ±``cap_ac`` or ±``cap_bc``
    it is met from another pair; then, if it may still complete the pair to the
    incumbent, its exact gain."""
    Nc = N[c]
    Kc = K[c]
    root_b = math.sqrt(Kb * Kc)
    rac = rho_a[c]
    if rac < -cap_ac or rac > cap_ac:
        return
    lb, hb = _member_range(TBd, DBd, Tsl[b, s2], slab_w[s2], Nb, Nc, W, unit, Nb == Nc)
    ac_lo = rac
    ac_hi = rac
    bc_lo, bc_hi = _clip(_cross(lb, Nb, Nc, W, centred) / root_b,
                         _cross(hb, Nb, Nc, W, centred) / root_b, cap_bc)
    if ac_lo > ac_hi or bc_lo > bc_hi:
        return
    Gp = state[0] * (1.0 - 1e-9) - state[1]
    zc = z[c]
    if not may_complete(g2, u1, u2, rab, det2, ac_lo, ac_hi, bc_lo, bc_hi, zc, zc, Gp):
        return
    _score_third(bits, a, b, c, ra, rb, Na, Nb, Ka, Kb, rab, det2, g2, u1, u2, N, K, z,
                 rank, W, centred, unit, weight, state, best, counts)


@njit(cache=True, nogil=True)
def _third_boxes(bits: np.ndarray, N: np.ndarray, K: np.ndarray, z: np.ndarray,
                 rank: np.ndarray, last_slab: np.ndarray, a: int, b: int, ra: int, rb: int,
                 rab: float, det2: float, g2: float, u1: float, u2: float, linked: bool,
                 node_iv: np.ndarray, node_depth: np.ndarray, node_skip: np.ndarray,
                 node_box: np.ndarray, node_run: np.ndarray, node_rng: np.ndarray,
                 slabs: np.ndarray, slab_w: np.ndarray, Tsl: np.ndarray, W: float,
                 lam: float, centred: bool, unit: float, weight: np.ndarray,
                 rho_a: np.ndarray, sub_rng: np.ndarray, blk_rng: np.ndarray,
                 region: np.ndarray, work: np.ndarray, state: np.ndarray, best: np.ndarray,
                 counts: np.ndarray) -> None:
    r"""The third boxes of the pair (a, b) down the trie. A linked pair (:data:`LINK`)
    takes every third box c other than a and b such that (a, b) is the smallest linked
    pair of the triple in the order of ranks: c unlinked to a when c ranks before b, and
    to b too when c ranks before a. An unlinked pair takes only the c of larger rank than
    b (so :math:`|z_c| \le |z_b|`) unlinked to both: a triple with a linked pair is met
    from its smallest one. ``rho_a``: every box's correlation with a, ``sub_rng`` and
    ``blk_rng`` its range over each node's subtree and over its own box and run
    (:func:`~rulemip.algorithms.kbox.correlations.first_box_correlations`). ``region``
    and ``work`` are scratch arrays (the path's region bitsets; T and D of a and b and the
    region's weight per depth)."""
    Na, Nb, Ka, Kb = N[a], N[b], K[a], K[b]
    cap = 1.0 if linked else LINK
    zcap = math.inf if linked else abs(z[b])
    TB = work[2]
    DB = work[3]
    RW = work[4]
    TB[0] = Nb
    DB[0] = W - Nb
    RW[0] = W
    nw = bits.shape[1]
    n_nodes = node_iv.shape[0]
    visited = 0
    checked = 0
    i = 0
    while i < n_nodes:
        d = node_depth[i]
        visited += 1
        zlo = max(node_rng[i, 2], -zcap)
        zhi = min(node_rng[i, 3], zcap)
        if zlo > zhi:
            i = node_skip[i]
            continue
        sl = node_iv[i]
        if d == 1:
            TB[1] = Tsl[b, sl]
            RW[1] = slab_w[sl]
            for w in range(nw):
                region[1, w] = slabs[sl, w]
        elif d > 1:
            for w in range(nw):
                region[d, w] = region[d - 1, w] & slabs[sl, w]
            TB[d] = _and_weight(region[d], bits[b], unit, weight)
            RW[d] = _and_weight(region[d], region[d], unit, weight)
        DB[d] = RW[d] - TB[d]
        Gp = state[0] * (1.0 - 1e-9) - state[1]
        ac_lo = sub_rng[i, 0]  # exact over the subtree
        ac_hi = sub_rng[i, 1]
        bc_lo, bc_hi = rho_range(Nb, Kb, node_rng[i, 0], node_rng[i, 1], TB[d], DB[d], W,
                                 lam, centred)
        cap_ac = cap
        cap_bc = cap
        if linked:
            # every box below stronger than b (than a): its pair with a (and with b) is
            # smaller than (a, b), so an unlinked one (the linked ones meet it instead)
            zmin = 0.0 if zlo <= 0.0 <= zhi else min(abs(zlo), abs(zhi))
            if zmin > abs(z[b]):
                cap_ac = LINK
            if zmin > abs(z[a]):
                cap_bc = LINK
        ac_lo, ac_hi = _clip(ac_lo, ac_hi, cap_ac)
        bc_lo, bc_hi = _clip(bc_lo, bc_hi, cap_bc)
        if ac_lo > ac_hi or bc_lo > bc_hi or not may_complete(
                g2, u1, u2, rab, det2, ac_lo, ac_hi, bc_lo, bc_hi, zlo, zhi, Gp):
            i = node_skip[i]
            continue
        c = node_box[i]
        if c >= 0 and ((linked and c != a and c != b) or (not linked and rank[c] > rb)):
            _score_third(bits, a, b, c, ra, rb, Na, Nb, Ka, Kb, rab, det2, g2, u1, u2, N,
                         K, z, rank, W, centred, unit, weight, state, best, counts)
        lo = node_run[i, 0]
        hi = node_run[i, 1]
        if hi > lo:
            # the run's members (sorted by z) strictly between the tails gain less than
            # Gp at every corner of the run's ρ rectangle
            ac_lo = blk_rng[i, 0]  # exact over the node's own box and run
            ac_hi = blk_rng[i, 1]
            bc_lo, bc_hi = rho_range(Nb, Kb, node_rng[i, 4], node_rng[i, 5], TB[d], DB[d],
                                     W, lam, centred)
            ac_lo, ac_hi = _clip(ac_lo, ac_hi, cap_ac)
            bc_lo, bc_hi = _clip(bc_lo, bc_hi, cap_bc)
            t_lo, t_hi = _tails3(g2, u1, u2, rab, det2, ac_lo, ac_hi, bc_lo, bc_hi,
                                 state[0] * (1.0 - 1e-9) - state[1])
            p = _first_ge(z, lo, hi, -zcap)
            q = _first_gt(z, p, hi, min(t_lo, zcap))
            u = _first_ge(z, q, hi, max(t_hi, -zcap))
            v = _first_gt(z, u, hi, zcap)
            for part in range(2):
                c0 = p if part == 0 else u
                c1 = q if part == 0 else v
                for cc in range(c0, c1):
                    if linked:
                        if cc in (a, b):
                            continue
                    elif rank[cc] <= rb:
                        continue
                    checked += 1
                    cap_ac = cap
                    cap_bc = cap
                    if linked:  # a smaller linked pair (a, c) or (c, ·) meets it instead
                        rc = rank[cc]
                        cap_ac = LINK if rc < rb else 1.0
                        cap_bc = LINK if rc < ra else 1.0
                    _check_member(bits, a, b, cc, ra, rb, Na, Nb, Ka, Kb, rab, det2, g2,
                                  u1, u2, cap_ac, cap_bc, rho_a, TB[d], DB[d], Tsl,
                                  last_slab[cc], slab_w, N, K, z, rank, W, centred, unit,
                                  weight, state, best, counts)
        i += 1
    counts[1] += visited
    counts[2] += checked


@njit(cache=True, nogil=True)
def _third_flat(bits: np.ndarray, N: np.ndarray, K: np.ndarray, z: np.ndarray,
                rank: np.ndarray, a: int, b: int, ra: int, rb: int, rab: float, det2: float,
                g2: float, u1: float, u2: float, linked: bool, W: float, centred: bool,
                unit: float, weight: np.ndarray, rho_a: np.ndarray, state: np.ndarray,
                best: np.ndarray, counts: np.ndarray) -> None:
    """Every third box of the pair (a, b) scored exactly — one intersection with b each,
    ρ_ac read from ``rho_a`` — under the rules of :func:`_third_boxes` (which third boxes
    the pair takes). Used for linked pairs, whose third boxes of every rank leave the
    trie's z ranges nothing to cut: one intersection per box costs less than the walk's
    bounds there (diabetes k = 3, 3 cut points: 33 s of CPU against 44 s)."""
    Nb = N[b]
    Kb = K[b]
    zb_abs = abs(z[b])
    Gp = state[0] * (1.0 - 1e-9) - state[1]
    scored = 0
    for c in range(bits.shape[0]):
        if c in (a, b):
            continue
        rc = rank[c]
        rac = rho_a[c]
        if linked:
            if rc < rb and (rac <= -LINK or rac >= LINK):
                continue
        elif rc <= rb or rac <= -LINK or rac >= LINK:
            continue
        zc = z[c]
        rbc = correlation(_and_weight(bits[b], bits[c], unit, weight), Nb, N[c], W, centred, Kb,
                   K[c])
        if linked:
            if rc < ra and (rbc <= -LINK or rbc >= LINK):
                continue
        elif rbc <= -LINK or rbc >= LINK or abs(zc) > zb_abs:
            continue
        scored += 1
        s = _schur(rac, rbc, rab, det2)
        gain = g2
        if s > SPAN_TOL:
            t = zc - rac * u1 - rbc * u2
            gain = g2 + t * t / s
        if gain >= Gp:
            _offer(gain, ra, rb, rc, state, best)
            Gp = state[0] * (1.0 - 1e-9) - state[1]
    counts[0] += scored


@njit(cache=True, nogil=True)
def scan_triples(bits: np.ndarray, N: np.ndarray, S: np.ndarray, K: np.ndarray,
                 z: np.ndarray, rank: np.ndarray, last_slab: np.ndarray,
                 a_order: np.ndarray, r0: int, r1: int, node_iv: np.ndarray,
                 node_depth: np.ndarray, node_skip: np.ndarray, node_box: np.ndarray,
                 node_run: np.ndarray, node_rng: np.ndarray, slabs: np.ndarray,
                 slab_w: np.ndarray, Tsl: np.ndarray, W: float, lam: float, centred: bool,
                 unit: float, weight: np.ndarray, state: np.ndarray, best: np.ndarray,
                 counts: np.ndarray) -> None:
    r"""Scan the pairs (a, b) whose first box a is at ranks ``r0..r1-1`` of ``a_order``
    (decreasing :math:`|z|`) and b of larger rank, and the triples through them; every
    multiset of three boxes is met at least once.

    For every such pair the multisets {a, a, b} and {a, b, b} are scored exactly (two
    copies of a box: its ridge halved on the shared weight). A triple whose three
    correlations are all below :data:`LINK` in absolute value is met from its two
    strongest boxes (a, b): over :math:`|
ho_{ac}|, |
ho_{bc}| \le` LINK and
    :math:`|z_c| \le |z_b|` the Schur form is convex (every corner has s > 0 because
    LINK < 1/2), so one :func:`may_complete` test decides whether the pair needs its third
    boxes at all. A triple with a linked pair (:math:`|
ho| \ge` LINK) is met from that
    pair, whose third boxes of every rank are scored exactly (:func:`_third_flat`). An
    unlinked pair's third boxes are searched down the trie of the pair scan
    (:func:`_third_boxes`): a node's region bounds both
    intersections :math:`n_{ac}, n_{bc}`, hence (:func:`rho_range`) the correlations, and
    :func:`may_complete` decides whether the subtree may hold a third box reaching the
    incumbent. ``Tsl[x, s]``: box x's weight in slab s
    (:func:`~rulemip.algorithms.kbox.correlations.slab_overlap_matrix`).
    Collinear pairs (a, b) are skipped: every triple through them gains what one of its
    pairs gains, and the caller starts the incumbent at least at the proved best pair.

    ``state = [G*, margin]`` (the incumbent gain and an absolute round-off slack, as for
    pairs), ``best`` the ranks of the incumbent (sorted; −1: none), ``counts`` = [triples
    scored exactly, trie nodes visited, run members checked, pairs visited, pairs whose
    third boxes were searched].
    """
    n = a_order.shape[0]
    max_depth = 0
    for i in range(node_iv.shape[0]):
        if node_depth[i] > max_depth:
            max_depth = node_depth[i]
    region = np.empty((max_depth + 2, bits.shape[1]), dtype=np.uint64)
    work = np.empty((5, max_depth + 2))
    parent = trie_parents(node_depth)
    rho_a = np.empty(n)
    sub_rng = np.empty((node_iv.shape[0], 2))
    blk_rng = np.empty((node_iv.shape[0], 2))
    suffix = np.empty((n + 1, 2))
    half = 0.5 * lam
    n_pairs = 0
    n_searched = 0
    for ra in range(r0, r1):
        a = a_order[ra]
        za = z[a]
        Ka = K[a]
        Na = N[a]
        Sa = S[a]
        first_box_correlations(bits, N, K, a, W, centred, unit, weight, node_box, node_run,
                               parent, a_order, rho_a, sub_rng, blk_rng, suffix, LINK)
        for rb in range(ra + 1, n):
            b = a_order[rb]
            zb = z[b]
            Kb = K[b]
            n_pairs += 1
            cab = _cross(_and_weight(bits[a], bits[b], unit, weight), Na, N[b], W, centred)
            # {a, a, b} and {a, b, b}: two copies of one box share its weight (ridge λ/2)
            if Ka - half > 0.0:
                _offer(pair_gain(Sa, Ka - half, S[b], Kb, cab), ra, ra, rb, state, best)
            if Kb - half > 0.0:
                _offer(pair_gain(Sa, Ka, S[b], Kb - half, cab), ra, rb, rb, state, best)
            rab = cab / math.sqrt(Ka * Kb)
            det2 = 1.0 - rab * rab
            if det2 <= COLLINEAR_TOL:
                continue
            u1 = (za - rab * zb) / det2
            u2 = (zb - rab * za) / det2
            g2 = za * u1 + zb * u2
            linked = abs(rab) >= LINK
            if not linked:
                # the unlinked third boxes of larger rank: ρ_ac within their exact range
                ac_lo = suffix[rb + 1, 0]
                ac_hi = suffix[rb + 1, 1]
                zb_abs = abs(zb)
                if ac_lo > ac_hi or not may_complete(
                        g2, u1, u2, rab, det2, ac_lo, ac_hi, -LINK, LINK, -zb_abs, zb_abs,
                        state[0] * (1.0 - 1e-9) - state[1]):
                    continue
            n_searched += 1
            if linked:  # third boxes of every rank: the trie's z ranges do not help
                _third_flat(bits, N, K, z, rank, a, b, ra, rb, rab, det2, g2, u1, u2, linked,
                            W, centred, unit, weight, rho_a, state, best, counts)
                continue
            _third_boxes(bits, N, K, z, rank, last_slab, a, b, ra, rb, rab, det2, g2, u1,
                         u2, linked, node_iv, node_depth, node_skip, node_box, node_run,
                         node_rng, slabs, slab_w, Tsl, W, lam, centred, unit, weight,
                         rho_a, sub_rng, blk_rng, region, work, state, best, counts)
    counts[3] += n_pairs
    counts[4] += n_searched


@njit(cache=True, nogil=True)
def best_third(bits: np.ndarray, N: np.ndarray, K: np.ndarray, z: np.ndarray, a: int,
               b: int, W: float, centred: bool, unit: float, weight: np.ndarray
               ) -> tuple[float, int]:
    """The best third box for the pair of positions (a, b), every box scored exactly
    (a second copy of a or b included: its ridge is then halved); ``(gain, position)``."""
    Ka, Kb = K[a], K[b]
    rab = correlation(_and_weight(bits[a], bits[b], unit, weight), N[a], N[b], W, centred, Ka, Kb)
    best_g = -1.0
    best_c = -1
    for c in range(bits.shape[0]):
        Kc = K[c]
        if Kc <= 0.0:
            continue
        rac = correlation(_and_weight(bits[a], bits[c], unit, weight), N[a], N[c], W, centred,
                   Ka, Kc)
        rbc = correlation(_and_weight(bits[b], bits[c], unit, weight), N[b], N[c], W, centred,
                   Kb, Kc)
        g = triple_gain(z[a], z[b], z[c], rab, rac, rbc)
        if g > best_g:
            best_g = g
            best_c = c
    return best_g, best_c
