r"""Compiled kernels of the exact pair scan (docs/explanation/kbox_search.md §2).

Boxes are bitsets over the occupied grid cells (64 cells a word; the table's kernels are in
:mod:`rulemip.algorithms.kbox.table_kernel`). The kernels scan the pairs of boxes down a
trie of their restrictions (:func:`build_trie`), skipping every subtree whose correlation
with the first box is too weak to beat the incumbent (:func:`rho_range`,
:func:`needed_overlaps`, :func:`scan_pairs`), and score the survivors exactly from one
intersection count (:func:`pair_gain`). No Python runs per pair.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rulemip.algorithms.kbox.pair_bounds import (
    _cross,
    _may_beat,
    _node_needs,
    _norm,
    _tails,
    needed_overlaps,
    partner_weights,
    rho_range,
    weight_needs,
)
from rulemip.boosting.boxsearch.kernel import _cttz, _popcount

__all__ = ["build_trie", "child_index", "needed_overlaps", "pair_gain", "pair_value",
           "rho_range", "scan_pairs", "slab_overlaps"]

_ONE = np.uint64(1)
_ZERO = np.uint64(0)

#: a pair whose Gram determinant is below this share of ``K_a K_b`` is collinear (its two
#: centred columns are proportional: one box and its complement at λ = 0)
COLLINEAR_TOL = 1e-10


@njit(cache=True, inline="always")
def _inter(bits: np.ndarray, a: int, b: int, unit: float, weight: np.ndarray) -> float:
    """Weight of the cells covered by boxes a and b (:func:`_and_weight`)."""
    return _and_weight(bits[a], bits[b], unit, weight)


@njit(cache=True, inline="always")
def pair_gain(Sa: float, Ka: float, Sb: float, Kb: float, c: float) -> float:
    r"""Least-squares gain :math:`g^\top(G + \lambda I)^{-1} g` of two columns with sums
    ``Sa, Sb``, diagonal ``Ka, Kb`` (ridge included) and cross term ``c``; a collinear pair
    (determinant below :data:`COLLINEAR_TOL`) gains what its better column gains alone."""
    det = Ka * Kb - c * c
    if det <= COLLINEAR_TOL * Ka * Kb:
        ga = Sa * Sa / Ka
        gb = Sb * Sb / Kb
        return ga if ga > gb else gb
    return (Sa * Sa * Kb - 2.0 * Sa * Sb * c + Sb * Sb * Ka) / det


@njit(cache=True)
def pair_value(bits: np.ndarray, S: np.ndarray, K: np.ndarray, N: np.ndarray, a: int,
               b: int, W: float, centred: bool, unit: float, weight: np.ndarray) -> float:
    """Gain of the pair of distinct boxes (a, b) (the scan's own scoring, for one pair)."""
    nab = _inter(bits, a, b, unit, weight)
    return pair_gain(S[a], K[a], S[b], K[b], _cross(nab, N[a], N[b], W, centred))


@njit(cache=True, nogil=True)
def slab_overlaps(bits: np.ndarray, a: int, slabs: np.ndarray, unit: float,
                  weight: np.ndarray, out: np.ndarray) -> None:
    """``out[i]``: the weight of box a's cells inside slab i."""
    for i in range(slabs.shape[0]):
        out[i] = _and_weight(bits[a], slabs[i], unit, weight)


@njit(cache=True, inline="always")
def _and_weight(x: np.ndarray, y: np.ndarray, unit: float, weight: np.ndarray) -> float:
    """Weight of the cells in both bitsets: a popcount when every cell weighs ``unit``
    (> 0), else the weights of the common cells summed."""
    nw = x.shape[0]
    if unit > 0.0:
        c = _ZERO
        for w in range(nw):
            c += _popcount(x[w] & y[w])
        return unit * float(c)
    s = 0.0
    for w in range(nw):
        v = x[w] & y[w]
        while v != _ZERO:
            s += weight[w * 64 + int(_cttz(v))]
            v &= v - _ONE
    return s


@njit(cache=True, nogil=True)
def _first_ge(z: np.ndarray, lo: int, hi: int, v: float) -> int:
    """First position in z[lo:hi] (ascending) with z >= v."""
    while lo < hi:
        mid = (lo + hi) // 2
        if z[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _first_gt(z: np.ndarray, lo: int, hi: int, v: float) -> int:
    """First position in z[lo:hi] (ascending) with z > v."""
    while lo < hi:
        mid = (lo + hi) // 2
        if z[mid] <= v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _score(bits: np.ndarray, a: int, b: int, Sa: float, Ka: float, Na: float, S: np.ndarray,
           K: np.ndarray, N: np.ndarray, za: float, zb: float, Tl: float, Dl: float,
           Tsum: float, depth: int, W: float, centred: bool, unit: float,
           weight: np.ndarray, Gp: float, state: np.ndarray, best: np.ndarray,
           counts: np.ndarray) -> None:
    """Partner b with every slab on the path (``Tl``, ``Dl``, ``Tsum`` over its ``depth``
    slabs): its own correlation bounds, then, if it may beat the incumbent, its exact
    gain."""
    Nb = N[b]
    if za * za < Gp:
        # distinct covers of equal weight share at most N_a - unit
        off = unit if (unit > 0.0 and Nb == Na) else 0.0
        n_hi = min(min(Na, Nb) - off, Tl)
        n_lo = max(0.0, Na + Nb - W, Nb - Dl, Tsum - (depth - 1) * Na)
        root = math.sqrt(Ka * K[b])
        if not _may_beat(za, zb, zb, _cross(n_lo, Na, Nb, W, centred) / root,
                         _cross(n_hi, Na, Nb, W, centred) / root, Gp):
            return
    counts[0] += 1
    nab = _inter(bits, a, b, unit, weight)
    gain = pair_gain(Sa, Ka, S[b], K[b], _cross(nab, Na, Nb, W, centred))
    lo = min(a, b)
    hi = max(a, b)
    # ties go to the least pair of positions: the same optimum whatever the scan order
    if gain > state[0] or (gain == state[0] and (best[0] < 0 or lo < best[0]
                                                 or (lo == best[0] and hi < best[1]))):
        state[0] = gain
        best[0] = lo
        best[1] = hi


@njit(cache=True)
def region_weights(node_iv: np.ndarray, node_depth: np.ndarray, slabs: np.ndarray,
                   unit: float, weight: np.ndarray) -> np.ndarray:
    """The weight of each trie node's region (the intersection of the slabs on its path;
    the root's: every cell)."""
    n = node_iv.shape[0]
    out = np.empty(n)
    max_depth = 0
    for i in range(n):
        max_depth = max(max_depth, node_depth[i])
    region = np.empty((max_depth + 1, slabs.shape[1]), dtype=np.uint64)
    region[0, :] = ~_ZERO
    for i in range(n):
        d = node_depth[i]
        if d > 0:
            for w in range(slabs.shape[1]):
                region[d, w] = region[d - 1, w] & slabs[node_iv[i], w]
        out[i] = _and_weight(region[d], region[d], unit, weight)
    return out


@njit(cache=True)
def child_index(node_iv: np.ndarray, node_depth: np.ndarray, n_slabs: int) -> np.ndarray:
    """The trie's first two levels looked up by slab: row 0 holds the depth-one node of
    each slab (−1: none), row 1 + s the depth-two node below slab s's node of each slab."""
    child = np.full((n_slabs + 1, n_slabs), -1, dtype=np.int64)
    s1 = -1
    for i in range(node_iv.shape[0]):
        d = node_depth[i]
        if d == 1:
            s1 = node_iv[i]
            child[0, s1] = i
        elif d == 2:
            child[1 + s1, node_iv[i]] = i
    return child


@njit(cache=True, nogil=True)
def scan_pairs(bits: np.ndarray, N: np.ndarray, S: np.ndarray, K: np.ndarray,
               z: np.ndarray, rank: np.ndarray, last_slab: np.ndarray, a_order: np.ndarray,
               r0: int, r1: int, node_iv: np.ndarray, node_depth: np.ndarray,
               node_skip: np.ndarray, node_box: np.ndarray, node_run: np.ndarray,
               node_rng: np.ndarray, slabs: np.ndarray, slab_w: np.ndarray,
               child: np.ndarray, node_sk: np.ndarray, node_w: np.ndarray, W: float,
               lam: float,
               centred: bool, unit: float, weight: np.ndarray, state: np.ndarray,
               best: np.ndarray, counts: np.ndarray) -> None:
    r"""Scan the pairs (a, b) for the boxes a at ranks ``r0..r1-1`` of ``a_order`` and
    every partner b of larger rank (each unordered pair once).

    Boxes are identified by their position. ``K`` is :math:`V + \lambda` (V the centred or
    raw column norm), ``z`` = :math:`S/\sqrt K`, ``rank`` orders the boxes by decreasing
    :math:`|z|`. Partners hang in a trie over their restrictions (slabs: one feature's run
    of groups), in depth-first order: node i adds slab ``node_iv[i]`` at depth
    ``node_depth[i]``, its subtree ends before node ``node_skip[i]``, it is box
    ``node_box[i]`` (or −1); the boxes one slab below it without boxes below them are the
    run ``node_run[i, 0] .. node_run[i, 1] - 1`` of positions, sorted by z (their last
    slab: ``last_slab``); ``node_rng[i]`` = (N_min, N_max, z_min, z_max) over its subtree
    and ``node_rng[i, 4:6]`` the N range of its run. Every box b below a node lies inside
    the node's region R, the intersection of the slabs on its path (a bitset, one AND per
    node), so with :math:`T_R` the weight of a inside R and :math:`D_R` that of R ∖ a,

    .. math:: \max(0, N_a + N_b - W, N_b - D_R) \le n_{ab} \le \min(N_a, N_b, T_R);

    a node's own box is R itself (:math:`n_{ab} = T_R`), and a run member R ∩ s (s its
    last slab, :math:`T_s` the weight of a inside s) also has
    :math:`T_R + T_s - N_a \le n_{ab} \le T_s` and :math:`N_b - n_{ab} \le |s| - T_s`.
    These bound the correlation ρ of a with every box below (:func:`rho_range`), and the
    gain :math:`(z_a^2 - 2\rho z_a z_b + z_b^2)/(1-\rho^2)` is convex in ρ and
    :math:`z_b`: a subtree none of whose corners reaches the incumbent is skipped, and in
    a run only the two tails in z beyond the roots at the ends of the ρ range are looked
    at (docs/explanation/kbox_search.md §2). Survivors are scored exactly from their
    intersection weight.

    A weak first box needs a near-copy (:func:`needed_overlaps`): a node whose slab holds
    too little of a and of its complement is skipped by its slab alone, so only the
    *open* slabs (those that may hold a near-copy) can start a surviving node. ``child``
    (:func:`child_index`; shape (0, 0): none) finds the trie's first two levels by slab:
    when a has fewer open slabs than a node has nodes below it, the node's children are
    looked up among the open slabs instead of walked — the same nodes survive, in the
    same order.

    ``state = [G*, margin]``: the incumbent's gain and an absolute slack: a partner stays a
    candidate while its bound reaches :math:`G^*(1 - 10^{-9}) - \mathrm{margin}` (round-off
    never prunes a pair that beats the incumbent); updated in place with ``best = [a, b]``
    and ``counts = [scored pairs, nodes visited, run members checked by their own
    slabs]``.
    """
    n_nodes = node_iv.shape[0]
    n_slabs = slabs.shape[0]
    max_depth = 0
    for i in range(n_nodes):
        if node_depth[i] > max_depth:
            max_depth = node_depth[i]
    T = np.empty(n_slabs)
    open_slabs = np.empty(n_slabs, dtype=np.int64)
    Tp = np.empty(max_depth + 2)
    Dp = np.empty(max_depth + 2)
    region = np.empty((max_depth + 2, bits.shape[1]), dtype=np.uint64)
    region[0, :] = ~_ZERO
    has_index = child.shape[0] == n_slabs + 1
    n_visited = 0
    n_checked = 0
    for ra in range(r0, r1):
        a = a_order[ra]
        za = z[a]
        Ka = K[a]
        Na = N[a]
        Sa = S[a]
        za_abs = abs(za)
        # a weak box helps only a partner nearly equal to it or to its complement: of
        # nearly its weight, holding nearly all of a or of a's complement
        Gp = state[0] * (1.0 - 1e-9) - state[1]
        lo1, hi1, lo2, hi2 = partner_weights(za, Gp, Na, Ka, W, lam, centred, unit)
        if lo1 > hi1 and lo2 > hi2:
            continue  # no box of any weight can be its partner
        n_need, m_need = weight_needs(za, Gp, Na, Ka, W, lam, centred, lo1, hi1, lo2, hi2)
        # per node: what a partner below it must share with a (or with a's complement)
        # to reach the incumbent (_node_needs); the roots sqrt(K) at the node's weight
        # ends are the node's (node_sk), at the ends of [lo1, hi1] and [lo2, hi2] here
        alpha = Na / W if centred else 0.0
        ska = math.sqrt(Ka)
        Ga = Gp  # the incumbent when a starts: its needs stay valid as it grows
        below = za * za < Ga
        sga = math.sqrt(Ga - za * za) if below else 0.0
        edge = 1.0 - 2.0 * za * za / Ga if below else 0.0
        sk_lo1 = math.sqrt(max(_norm(max(lo1, 0.0), W, lam, centred), 0.0))
        sk_hi1 = math.sqrt(max(_norm(min(hi1, W), W, lam, centred), 0.0))
        sk_lo2 = math.sqrt(max(_norm(max(lo2, 0.0), W, lam, centred), 0.0))
        sk_hi2 = math.sqrt(max(_norm(min(hi2, W), W, lam, centred), 0.0))
        slab_overlaps(bits, a, slabs, unit, weight, T)
        Tp[0] = Na
        Dp[0] = W - Na
        n_open = 0
        if has_index:
            for s in range(n_slabs):
                if T[s] >= n_need or slab_w[s] - T[s] >= m_need:
                    open_slabs[n_open] = s
                    n_open += 1
        indexed = has_index and n_open < n_slabs
        # the nodes go by segments [i, end) of the depth-first order: the whole trie, or
        # (indexed) the root, each depth-one node of an open slab, and below it either
        # its whole subtree or the subtrees of its children of open slabs
        i = 0
        end = 1 if indexed else n_nodes
        g1 = 0  # next open slab for a depth-one node
        g2 = -1  # next open slab for a child of the depth-one node of slab s1 (-1: none)
        s1 = -1
        while True:
            if i >= end:
                if not indexed:
                    break
                found = False
                while 0 <= g2 < n_open:
                    j = child[1 + s1, open_slabs[g2]]
                    g2 += 1
                    if j >= 0:
                        i = j
                        end = node_skip[j]
                        found = True
                        break
                if found:
                    continue
                g2 = -1
                while g1 < n_open:
                    s = open_slabs[g1]
                    g1 += 1
                    if child[0, s] >= 0:
                        i = child[0, s]
                        end = i + 1
                        s1 = s
                        found = True
                        break
                if found:
                    continue
                break
            d = node_depth[i]
            n_visited += 1
            keep = True
            sl = node_iv[i]
            # cheap first: the parent's region and the new slab, each an upper end
            if d > 0 and min(Tp[d - 1], T[sl]) < n_need and \
                    min(Dp[d - 1], slab_w[sl] - T[sl]) < m_need:
                keep = False
            zlo = max(node_rng[i, 2], -za_abs)
            zhi = min(node_rng[i, 3], za_abs)
            need1 = 0.0
            need2 = 0.0
            if keep and (node_rng[i, 1] < lo1 or node_rng[i, 0] > hi1) and \
                    (node_rng[i, 1] < lo2 or node_rng[i, 0] > hi2):
                keep = False  # no partner's weight below
            if keep and zlo <= zhi and below:
                need1, need2 = _node_needs(za, zlo, zhi, Ga, sga, edge, node_rng[i, 0],
                                           node_rng[i, 1], node_sk[i, 0], node_sk[i, 1],
                                           lo1, hi1, lo2, hi2, sk_lo1, sk_hi1, sk_lo2,
                                           sk_hi2, alpha, ska, centred, W)
                if d > 0:
                    # upper ends of a's weight in the region and of the region's outside
                    # a: a ∩ R is a's part in the parent's region and in the slab
                    t_lo = max(0.0, Tp[d - 1] + T[sl] - Na)
                    if min(Tp[d - 1], T[sl], node_w[i]) < need1 and \
                            min(Dp[d - 1], slab_w[sl] - T[sl], node_w[i] - t_lo) < need2:
                        keep = False
            if keep and zlo > zhi:
                keep = False
            if keep and d > 0:
                # the node's region (its slabs' intersection): a's exact weight in it
                for w in range(region.shape[1]):
                    region[d, w] = region[d - 1, w] & slabs[sl, w]
                Tp[d] = _and_weight(region[d], bits[a], unit, weight)
                Dp[d] = node_w[i] - Tp[d]
                if Tp[d] < need1 and Dp[d] < need2:
                    keep = False
            Gp = state[0] * (1.0 - 1e-9) - state[1]
            if keep and za * za < Gp:
                r_lo, r_hi = rho_range(Na, Ka, node_rng[i, 0], node_rng[i, 1], Tp[d], Dp[d],
                                       W, lam, centred)
                if not _may_beat(za, zlo, zhi, r_lo, r_hi, Gp):
                    keep = False
            if not keep:
                if i == 0:
                    break  # no partner anywhere
                i = node_skip[i]
                continue
            b = node_box[i]
            if b >= 0 and rank[b] > ra:
                _score(bits, a, b, Sa, Ka, Na, S, K, N, za, z[b], Tp[d], Dp[d], Tp[d], 1, W,
                       centred, unit, weight, Gp, state, best, counts)
            lo = node_run[i, 0]
            hi = node_run[i, 1]
            n0 = node_rng[i, 4]
            n1 = node_rng[i, 5]
            if (n1 < lo1 or n0 > hi1) and (n1 < lo2 or n0 > hi2):
                hi = lo  # no run member has a partner's weight
            if hi > lo:
                Gp = state[0] * (1.0 - 1e-9) - state[1]
                t_lo = za_abs  # candidates: z_b <= t_lo or z_b >= t_hi, |z_b| <= |z_a|
                t_hi = za_abs
                if za * za < Gp:
                    r_lo, r_hi = rho_range(Na, Ka, node_rng[i, 4], node_rng[i, 5], Tp[d],
                                           Dp[d], W, lam, centred)
                    if r_hi < 1.0 - 1e-12 and r_lo > -1.0 + 1e-12:
                        m1, p1 = _tails(za, r_lo, Gp)
                        m2, p2 = _tails(za, r_hi, Gp)
                        t_lo = min(max(m1, m2), za_abs)
                        t_hi = max(min(p1, p2), t_lo)
                p = _first_ge(z, lo, hi, -za_abs)
                q = _first_gt(z, p, hi, t_lo)
                u = _first_ge(z, q, hi, t_hi)
                v = _first_gt(z, u, hi, za_abs)
                for part in range(2):
                    t0 = p if part == 0 else u
                    t1 = q if part == 0 else v
                    for bb in range(t0, t1):
                        if rank[bb] <= ra:
                            continue
                        nb = N[bb]
                        if (nb < lo1 or nb > hi1) and (nb < lo2 or nb > hi2):
                            continue
                        sl = last_slab[bb]
                        if min(Tp[d], T[sl]) < n_need and \
                                min(Dp[d], slab_w[sl] - T[sl]) < m_need:
                            continue
                        n_checked += 1
                        _score(bits, a, bb, Sa, Ka, Na, S, K, N, za, z[bb],
                               min(Tp[d], T[sl]), min(Dp[d], slab_w[sl] - T[sl]),
                               Tp[d] + T[sl], 2, W, centred, unit, weight,
                               state[0] * (1.0 - 1e-9) - state[1], state, best, counts)
            if indexed and d == 1:
                # below a depth-one node: its subtree walked, or its children looked up
                # among the open slabs after s1, whichever visits fewer nodes
                if node_skip[i] - i - 1 <= n_open - g1:
                    end = node_skip[i]
                    i += 1
                else:
                    g2 = g1
                    i = end
                continue
            i += 1
    counts[1] += n_visited
    counts[2] += n_checked


@njit(cache=True)
def build_trie(paths: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                           np.ndarray]:
    """The trie of the boxes' restriction lists. ``paths`` (boxes × L, −1 padded) is
    sorted lexicographically (a prefix before its extensions). Returns ``(iv, depth, skip,
    box, parent)`` per node in depth-first order; node 0 is the root (no restriction)."""
    B, L = paths.shape
    cap = B * L + 1
    iv = np.full(cap, -1, dtype=np.int64)
    depth = np.zeros(cap, dtype=np.int64)
    box = np.full(cap, -1, dtype=np.int64)
    parent = np.full(cap, -1, dtype=np.int64)
    stack = np.zeros(L + 1, dtype=np.int64)  # node at each depth of the current path
    cur = np.full(L + 1, -2, dtype=np.int64)  # slab at each depth of the current path
    n = 1
    for b in range(B):
        t = 0
        while t < L and paths[b, t] >= 0:
            if cur[t + 1] != paths[b, t]:
                iv[n] = paths[b, t]
                depth[n] = t + 1
                parent[n] = stack[t]
                stack[t + 1] = n
                cur[t + 1] = paths[b, t]
                for u in range(t + 2, L + 1):
                    cur[u] = -2
                n += 1
            t += 1
        for u in range(t + 1, L + 1):
            cur[u] = -2
        box[stack[t]] = b
    skip = np.full(n, n, dtype=np.int64)
    open_nodes = np.zeros(L + 2, dtype=np.int64)
    top = 0
    for j in range(n):
        while top > 0 and depth[open_nodes[top - 1]] >= depth[j]:
            skip[open_nodes[top - 1]] = j
            top -= 1
        open_nodes[top] = j
        top += 1
    return iv[:n].copy(), depth[:n].copy(), skip, box[:n].copy(), parent[:n].copy()
