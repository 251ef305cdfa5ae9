r"""Node bounds of the exact box search: the largest value of any row set between a node's
inner and outer cover, or a valid upper bound of it (docs/explanation/box_search.md, "The
bound (proof)", where every bound here is proved).

**Ratio family** (``F(G, H) = |G| / sqrt(D(H))``, ``D = c0 + c1 H + c2 H²`` positive and
concave: gradient sum, gradient boosting, XGBoost, the ridge gain): ``F²`` is convex in the
summed statistics, whose values over the row sets between the covers form a zonotope with
the prefixes and suffixes of the undecided rows in key order as vertices, so
:func:`ratio_bound` is the exact maximum (one pass, :func:`_scan`).

**Orthogonal boosting** (:func:`ogb_bound`): the smallest of (i) ``AG/(A + εG)``, (ii) the
zonotope pass with the basis sums at their largest magnitude, (iii) the bound by the number
of undecided rows in the set (:func:`_size_bound`, equal row weights) and (iv) the chord
bound (:func:`_chord_bound`), the costly one, only for nodes (i)–(iii) leave above the
pruning threshold.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rulemip._numba_cache import guard_kernel_cache
from rulemip.boosting.boxsearch.words import (
    FILES,
    P_C0,
    P_C1,
    P_C2,
    P_CINT,
    P_EPS,
    P_GNORM,
    P_TINY,
    P_W0,
    _cttz,
    undecided_rows,
)

__all__ = ["ogb_bound", "ogb_value", "ratio_bound", "ratio_value"]

guard_kernel_cache(__file__, *FILES)


@njit(cache=True)
def ratio_value(G: float, H: float, c0: float, c1: float, c2: float, tiny: float) -> float:
    """``|G| / sqrt(D(H))`` (0 where ``D <= tiny``)."""
    D = c0 + c1 * H + c2 * H * H
    if tiny < D:
        return abs(G) / np.sqrt(D)
    return 0.0


@njit(cache=True)
def ogb_value(s: np.ndarray, c: int, eps: float, cint: float) -> float:
    """Orthogonal boosting's value from the sums ``s[:c]``: the basis columns that are
    constant (the intercept) enter through ``cint · W²``, the others as sums."""
    par = cint * s[1] * s[1]
    for k in range(2, c):
        par += s[k] * s[k]
    perp = s[1] - par
    if perp < 0.0:
        perp = 0.0
    return abs(s[0]) / (np.sqrt(perp) + eps)


@njit(cache=True)
def _scan(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
          s_un: np.ndarray, c0: float, c1: float, c2: float, tiny: float) -> float:
    """The largest ratio value over the prefixes and suffixes (in key order) of the
    undecided rows added to the inner cover (the zonotope bound)."""
    W = outer.shape[0]
    g0, h0 = s_in[0], s_in[1]
    gu, hu = s_un[0], s_un[1]
    gp = 0.0
    hp = 0.0
    best2 = 0.0                         # squared values: no square root per row
    for w in range(W):
        x = outer[w] & ~inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            gp += S[r, 0]
            hp += S[r, 1]
            g = g0 + gp                 # the inner cover and the prefix through r
            h = h0 + hp
            D = c0 + h * (c1 + c2 * h)
            if tiny < D and g * g > best2 * D:
                best2 = g * g / D
            g = g0 + gu - gp            # the inner cover and the rows after r
            h = h0 + hu - hp
            D = c0 + h * (c1 + c2 * h)
            if tiny < D and g * g > best2 * D:
                best2 = g * g / D
    return np.sqrt(best2)


@njit(cache=True)
def ratio_bound(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
                s_un: np.ndarray, params: np.ndarray, v_in: float, v_out: float,
                thr: float) -> float:
    """The ratio family's node bound. First the cheap bound ``A / sqrt(D_min)`` (``A`` the
    larger one-signed sum between the covers, ``D_min`` the smaller of ``D`` at the two
    ends of the weight range, ``D`` being concave): exact for the gradient sum, and enough
    where it is at most the pruning threshold ``thr``; else the exact zonotope pass."""
    c0, c1, c2, tiny = params[P_C0], params[P_C1], params[P_C2], params[P_TINY]
    c = s_in.shape[0]
    w_in = s_in[1]
    w_out = s_in[1] + s_un[1]
    d_min = min(c0 + w_in * (c1 + c2 * w_in), c0 + w_out * (c1 + c2 * w_out))
    if d_min > tiny:
        A = max(s_in[0] + s_un[c], -(s_in[0] + s_un[2 * c]), 0.0)
        cheap = A / np.sqrt(d_min)
        if (c1 == 0.0 and c2 == 0.0) or cheap <= thr:
            return max(v_in, v_out, cheap)
    return max(v_in, v_out, _scan(outer, inner, S, s_in, s_un, c0, c1, c2, tiny))


@njit(cache=True)
def ogb_bound(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
              s_un: np.ndarray, params: np.ndarray, thr: float) -> float:
    r"""A valid bound of orthogonal boosting's value over the row sets between the covers.

    The smallest of: (i) ``AG/(A + εG)`` with ``A`` the largest one-signed sum of
    ``w g_⊥`` (module :mod:`rulemip.boosting.objectives`). (ii) With ``C ≥ Σ_k N_k²`` over
    the non-constant basis columns (each ``|N_k|`` at most its largest one-signed sum) and
    the constant columns exact (``c_int W²``), ``‖q_⊥‖² ≥ D(W) = W - c_int W² - C`` and
    ``(sqrt(max(R, 0)) + ε)² ≥ D(W) + ε²``; ``D + ε²`` is concave in ``W``, so where it is
    positive on the node's weight range the zonotope scan of the ratio family with
    ``c0 = ε² - C, c1 = 1, c2 = -c_int`` bounds the value. At the first round of a model
    with an intercept (``C = 0``) this is the exact ridge-gain bound with ``λ = ε²``.
    (iii) With equal row weights, :func:`_size_bound` (tight for small row sets, where (ii)
    fails). (iv) The chord bound :func:`_chord_bound` (tight where the basis sums vary
    little over the node), computed only when (i)–(iii) leave the node above the pruning
    threshold ``thr``."""
    c = S.shape[1]
    eps = params[P_EPS]
    A = max(s_in[0] + s_un[c], -(s_in[0] + s_un[2 * c]), 0.0)
    if A <= 0.0:
        return 0.0
    G = params[P_GNORM]
    b2 = A * G / (A + eps * G) * (1.0 + 1e-9) if np.isfinite(G) else A / eps
    C = 0.0
    for k in range(2, c):
        t = max(s_in[k] + s_un[c + k], -(s_in[k] + s_un[2 * c + k]))
        C += t * t
    cint = params[P_CINT]
    c0 = eps * eps - C
    w_in = s_in[1]
    w_out = s_in[1] + s_un[1]
    equal_weights = params[P_W0] > 0.0
    rows = undecided_rows(outer, inner) if equal_weights else np.empty(0, np.int64)
    if equal_weights:
        b2 = min(b2, _size_bound(rows, inner, S, s_in, params, C, s_in, -np.inf))
    if min(c0 + w_in - cint * w_in * w_in, c0 + w_out - cint * w_out * w_out) > 0.0:
        b1 = _scan(outer, inner, S, s_in, s_un, c0, 1.0, -cint, 0.0)
        b1 = max(b1, ratio_value(s_in[0], w_in, c0, 1.0, -cint, 0.0),
                 ratio_value(s_in[0] + s_un[0], w_out, c0, 1.0, -cint, 0.0)) * (1.0 + 1e-9)
        b2 = min(b1, b2)
    if b2 <= thr:
        return b2
    if not equal_weights:
        rows = undecided_rows(outer, inner)
    return min(b2, _chord_bound(rows, inner, S, s_in, s_un, params, C, thr))


@njit(cache=True)
def _chord_bound(rows: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
                 s_un: np.ndarray, params: np.ndarray, C: float, thr: float) -> float:
    r"""Orthogonal boosting's chord bound (iv) over the row sets between the covers
    (``inf`` where it does not apply); ``rows``: the undecided rows in key order.

    Over the node every basis sum lies in its range, ``N_k ∈ [lo_k, hi_k]`` (the one-signed
    sums between the covers), and the weight ``W ∈ [W_in, W_out]``. A square lies below
    its chord on an interval: ``N_k² ≤ (lo_k + hi_k) N_k − lo_k hi_k`` and
    ``c_int W² ≤ c_int ((W_in + W_out) W − W_in W_out)``. So
    ``‖q_⊥‖² + ε² ≥ K + H`` with the constant ``K = ε² + c_int W_in W_out + Σ_k lo_k hi_k``
    and the additive statistic ``H = Σ_{i∈S} h_i``,
    ``h_i = (1 − c_int (W_in + W_out)) w_i − Σ_k (lo_k + hi_k) w_i o_{k,i}``.
    Where ``K + H > 0`` on the whole zonotope ``Z`` of the sums ``(G, H)`` of the row sets
    between the covers, the value is at most ``|G| / sqrt(K + H)``, and ``G² / (K + H)`` is
    convex there, so its maximum over ``Z`` is at a vertex. The rows whose ``h_i`` is
    negative (or zero with ``g_i < 0``) are moved into the base point with their generator
    negated; then every generator has ``h ≥ 0`` and the vertices are the base point plus
    the prefixes and suffixes of the generators sorted by ``g/h`` decreasing. ``K + H`` is
    smallest at the base point: where it is positive there, the bound is the largest value
    over those ``2u + 2`` points (``u`` undecided rows, one sort).

    With equal row weights the chord also enters the size bound as a third denominator
    (:func:`_size_bound` with ``kn``), computed only where the first chord bound does not
    apply or leaves the node above ``thr``. The smaller of the two is returned."""
    c = S.shape[1]
    u = rows.shape[0]
    eps = params[P_EPS]
    cint = params[P_CINT]
    w_in = s_in[1]
    w_out = s_in[1] + s_un[1]
    alpha = 1.0 - cint * (w_in + w_out)
    k0 = eps * eps + cint * w_in * w_out
    h0 = alpha * w_in
    scale = w_out * (1.0 + cint * w_out)
    coef = np.zeros(c)
    for k in range(2, c):
        lo = s_in[k] + s_un[2 * c + k]
        hi = s_in[k] + s_un[c + k]
        coef[k] = lo + hi
        k0 += lo * hi
        h0 -= coef[k] * s_in[k]
        scale += (abs(lo) + abs(hi)) ** 2
    gv = np.empty(u)
    hv = np.empty(u)
    key = np.empty(u)
    bg = s_in[0]
    bh = h0
    for i in range(u):
        r = rows[i]
        g = S[r, 0]
        h = alpha * S[r, 1]
        for k in range(2, c):
            h -= coef[k] * S[r, k]
        if h < 0.0 or (h == 0.0 and g < 0.0):
            bg += g
            bh += h
            g = -g
            h = -h
        gv[i] = g
        hv[i] = h
        key[i] = -g / h if h > 0.0 else -np.inf
    # rounding: the sums above carry errors far below 1e-10 of their magnitudes
    slack = 1e-10 * (scale + 1.0)
    den0 = k0 + bh - slack
    kn = k0 - eps * eps - cint * w_in * w_out - slack
    equal_weights = params[P_W0] > 0.0
    if not den0 > 0.0:
        if equal_weights:
            return _size_bound(rows, inner, S, s_in, params, C, coef, kn)
        return np.inf
    order = _argsort(key)
    tg = 0.0
    th = 0.0
    for i in range(u):
        tg += gv[i]
        th += hv[i]
    best2 = max(bg * bg / den0, (bg + tg) * (bg + tg) / (den0 + th))
    pg = 0.0
    ph = 0.0
    for t in range(u):
        i = order[t]
        pg += gv[i]
        ph += hv[i]
        g = bg + pg
        v = g * g / (den0 + ph)
        if v > best2:
            best2 = v
        g = bg + tg - pg
        v = g * g / (den0 + th - ph)
        if v > best2:
            best2 = v
    b = np.sqrt(best2) * (1.0 + 1e-9)
    if b <= thr or not equal_weights:
        return b
    return min(b, _size_bound(rows, inner, S, s_in, params, C, coef, kn))


@njit(cache=True)
def _size_bound(rows: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
                params: np.ndarray, C: float, coef: np.ndarray, kn: float) -> float:
    r"""Orthogonal boosting's bound (iii) by the number ``p`` of undecided rows in the set
    (all row weights equal to ``w0``); ``rows``: the undecided rows in key order.

    For every set with ``p`` undecided rows: ``G`` is at most the inner sum plus the ``p``
    largest undecided ``w g_⊥`` (a prefix in key order), or at least the inner sum plus the
    ``p`` smallest (a prefix in reverse order); and with ``W = W_in + p w0``, ``‖q_⊥‖²`` is
    at least each of ``W (1 - c_int W - T_in - p w0 τ_max)`` (Cauchy–Schwarz on every
    non-constant basis column, ``N_k² ≤ W Σ_{i∈S} w_i o_{k,i}²``, with the row leverages
    ``τ_i = Σ_k o_{k,i}²``: ``T_in`` their weighted sum over the inner cover, ``τ_max``
    their largest undecided value), ``W - c_int W² - C`` (as in (ii)) and, with the chord
    (``kn = Σ_k lo_k hi_k`` less the rounding slack; ``-inf``: without it, ``coef``
    unused), ``W - c_int W² + kn - V_in - top_p(v)`` where ``v_i = Σ_k coef_k w_i o_{k,i}``
    (``coef_k = lo_k + hi_k``; ``V_in`` over the inner cover, ``top_p`` the sum of the
    ``p`` largest undecided). The value is at most ``|G| / (sqrt(max(R_lo, 0)) + ε)``;
    the bound is the largest over ``p`` and both signs."""
    c = S.shape[1]
    u = rows.shape[0]
    eps = params[P_EPS]
    cint = params[P_CINT]
    w0 = params[P_W0]
    chord = kn > -np.inf
    t_in = 0.0
    v_in = 0.0
    for w in range(inner.shape[0]):
        x = inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            for k in range(2, c):
                t_in += S[r, k] * S[r, k] / w0          # w_i o_{k,i}^2
                if chord:
                    v_in += coef[k] * S[r, k]
    tau_max = 0.0
    neg_v = np.empty(u if chord else 0)
    for i in range(u):
        r = rows[i]
        tau = 0.0
        v = 0.0
        for k in range(2, c):
            tau += S[r, k] * S[r, k]
            if chord:
                v += coef[k] * S[r, k]
        tau /= w0 * w0
        if tau > tau_max:
            tau_max = tau
        if chord:
            neg_v[i] = -v
    top = np.zeros(u + 1 if chord else 1)   # top[p]: the sum of the p largest v (chord)
    if chord:
        order = _argsort(neg_v)              # -v increasing: v decreasing
        for p in range(u):
            top[p + 1] = top[p] - neg_v[order[p]]
    base = kn - v_in
    w_in = s_in[1]
    p0 = np.int64(0)       # not the literal 0: one compiled _size_value, not two
    best = max(_size_value(s_in[0], w_in, p0, t_in, tau_max, w0, cint, C, eps, base - top[0]),
               _size_value(-s_in[0], w_in, p0, t_in, tau_max, w0, cint, C, eps, base - top[0]))
    up = s_in[0]            # the largest w g first (key order)
    down = -s_in[0]         # the smallest first (reverse order)
    for p in range(1, u + 1):
        up += S[rows[p - 1], 0]
        down -= S[rows[u - p], 0]
        wp = w_in + p * w0
        chord_p = base - top[p] if chord else base
        best = max(best, _size_value(up, wp, p, t_in, tau_max, w0, cint, C, eps, chord_p),
                   _size_value(down, wp, p, t_in, tau_max, w0, cint, C, eps, chord_p))
    return best * (1.0 + 1e-9)


@njit(cache=True)
def _size_value(g: float, wp: float, p: int | np.integer, t_in: float, tau_max: float, w0: float,
                cint: float, C: float, eps: float, chord: float) -> float:
    """``g / (sqrt(max(R_lo, 0)) + ε)`` for a one-signed sum ``g`` (0 when not positive),
    ``R_lo`` the largest lower bound of :func:`_size_bound` at weight ``wp`` (``chord``:
    ``kn - V_in - top_p``, ``-inf`` without the chord)."""
    if g <= 0.0:
        return 0.0
    base = wp - cint * wp * wp
    r_lo = max(wp * (1.0 - cint * wp - t_in - p * w0 * tau_max), base - C, base + chord)
    return g / (np.sqrt(max(r_lo, 0.0)) + eps)


@njit(cache=True)
def _argsort(a: np.ndarray) -> np.ndarray:
    """Indices that sort ``a`` increasing (ties in any order): a quicksort on a copy of the
    keys carrying the indices (median of three, insertion sort below 16, the smaller part
    first so the stack holds at most ``log2 n`` ranges). One small function to compile
    where numba's ``argsort`` instantiates four."""
    n = a.shape[0]
    key = a.copy()
    idx = np.empty(n, np.int64)
    for i in range(n):
        idx[i] = i
    stack = np.empty(128, np.int64)
    sp = 0
    lo = 0
    hi = n - 1
    while True:
        while hi - lo > 16:
            mid = (lo + hi) >> 1
            if key[mid] < key[lo]:
                _swap(key, idx, mid, lo)
            if key[hi] < key[lo]:
                _swap(key, idx, hi, lo)
            if key[hi] < key[mid]:
                _swap(key, idx, hi, mid)
            p = key[mid]
            i = lo
            j = hi
            while i <= j:
                while key[i] < p:
                    i += 1
                while key[j] > p:
                    j -= 1
                if i <= j:
                    _swap(key, idx, i, j)
                    i += 1
                    j -= 1
            if j - lo < hi - i:           # the larger part waits on the stack
                stack[sp] = i
                stack[sp + 1] = hi
                hi = j
            else:
                stack[sp] = lo
                stack[sp + 1] = j
                lo = i
            sp += 2
        for i in range(lo + 1, hi + 1):   # insertion sort of a short range
            k = key[i]
            t = idx[i]
            j = i - 1
            while j >= lo and key[j] > k:
                key[j + 1] = key[j]
                idx[j + 1] = idx[j]
                j -= 1
            key[j + 1] = k
            idx[j + 1] = t
        if sp == 0:
            return idx
        sp -= 2
        lo = stack[sp]
        hi = stack[sp + 1]


@njit(cache=True, inline="always")
def _swap(key: np.ndarray, idx: np.ndarray, i: int, j: int) -> None:
    key[i], key[j] = key[j], key[i]
    idx[i], idx[j] = idx[j], idx[i]
