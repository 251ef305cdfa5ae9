r"""Compiled kernel of the exact box search: branch and bound over threshold ranges.

The question every exact path asks (docs/explanation/box_search.md): which box
``a_j <= g_j(x) <= b_j`` (``g_j`` the threshold group of feature ``j``, 0..m_j) maximizes a
gain ``F`` of the additive statistics of the rows it covers?

**Rows and masks.** Rows are permuted once per search into the *key order* of the bound
(decreasing ``s_0 / s_1``, see below) and packed as bits of 64-bit words. For every
feature and group ``b`` the prefix mask ``LE[j, b]`` holds the rows with ``g_j <= b``; the
cover of a box is the AND of ``2d`` masks (``d·n/64`` words).

**Nodes.** A node is four ranges per feature, ``a ∈ [alo, ahi]``, ``b ∈ [blo, bhi]`` (4d
integers): the set of boxes with those bounds. Its *outer* box ``(alo, bhi)`` contains the
cover of every box of the node and its *inner* box ``(ahi, blo)`` is contained in every
one. Rows of the outer but not the inner cover are *undecided*.

**Bound.** For ``F(G, H) = |G| / sqrt(D(H))`` with ``D(H) = c0 + c1 H + c2 H^2 > 0``
concave (gradient sum: ``D ≡ 1``; gradient boosting ``D = W``; XGBoost ``D = H + 2λ``;
the ridge gain ``D = λ + W - W²/W_tot``), ``F²`` is convex in the summed statistics
``(G, H)``. The statistics of the row sets between the inner and the outer cover form a
translated zonotope whose vertices are the prefixes and suffixes of the undecided rows in
the order of ``s_0/s_1``; a convex function attains its maximum over the zonotope at a
vertex. So the maximum of ``F`` over all row sets between the covers — the node bound — is
the best of ``2u + 2`` prefix/suffix values, computed in one pass over the undecided rows
in key order (rows are stored in that order). Orthogonal boosting uses the valid bound
``AG/(A + εG)`` with ``A`` the largest one-signed sum between the covers (module
:mod:`rulemip.boosting.objectives`).

**Branching.** A node's ranges whose undecided rows are empty are collapsed to the bound
with the fewest propositions (same covers); among the others, the range with the most
undecided outer rows is split where half of them fall on each side.

**Search.** Best first on the bound (a binary heap over a pool of node slots); when the
pool cannot grow (the memory budget) new children go to a depth-first stack, whose depth
is bounded by the number of range halvings, so memory never exceeds the budget. The inner
and outer boxes of every evaluated node are incumbent candidates. A node is pruned when its
bound is at most ``best + rtol·|best|``; the kernel returns after ``max_evals``
evaluations so that the caller can check its clock, report progress and grow the pool.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

__all__ = ["MODE_OGB", "MODE_RATIO", "ST_DONE", "ST_EVALS", "ST_GROW", "build_masks",
           "evaluate", "init_root", "run"]

MODE_RATIO = 0   #: F = |G| / sqrt(D(H))
MODE_OGB = 1     #: F = |S0| / (sqrt(max(S1 - c_int S1^2 - sum_k S_k^2, 0)) + eps)

ST_DONE = 0      #: heap and stack are empty: the search is complete
ST_EVALS = 1     #: the evaluation budget of this call is spent
ST_GROW = 2      #: the pool is full and may grow

# ctr layout (int64)
C_HEAP, C_FREE, C_DFS, C_EVALS, C_EXPANDED, C_PEAK = 0, 1, 2, 3, 4, 5
# fstate layout (float64)
F_BEST, F_PRUNED = 0, 1
# params layout (float64)
P_C0, P_C1, P_C2, P_TINY, P_EPS, P_GNORM, P_RTOL, P_CINT, P_W0 = 0, 1, 2, 3, 4, 5, 6, 7, 8
# iparams layout (int64)
# I_MAX_LEN caps the restricted features of a box (``max_rule_length``), I_MAX_PROPS its
# propositions (``max_propositions``, an interval counts two); -1: no cap
I_MODE, I_ALLOW_EMPTY, I_MAX_LEN, I_CAN_GROW, I_RESERVE, I_MAX_PROPS = 0, 1, 2, 3, 4, 5


def _popcount_typing(typingctx: Any, x: Any) -> Any:
    """LLVM ``ctpop`` on a 64-bit word (the number of set bits)."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])

    return sig, codegen


def _cttz_typing(typingctx: Any, x: Any) -> Any:
    """LLVM ``cttz`` on a 64-bit word (the index of the lowest set bit)."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


def _ctlz_typing(typingctx: Any, x: Any) -> Any:
    """LLVM ``ctlz`` on a 64-bit word (the number of leading zero bits)."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


_popcount: Any = intrinsic(_popcount_typing)
_ctlz: Any = intrinsic(_ctlz_typing)
_cttz: Any = intrinsic(_cttz_typing)


@njit(cache=True)
def build_masks(G: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(LE, off, valid)``: prefix masks ``LE[off[j] + b]`` (rows with ``g_j <= b``,
    ``b = 0..m_j``) and the mask of real rows, for groups ``G`` (n, d) in key order."""
    n, d = G.shape
    W = (n + 63) // 64
    off = np.zeros(d + 1, np.int64)
    for j in range(d):
        off[j + 1] = off[j] + m[j] + 1
    LE = np.zeros((off[d], W), np.uint64)
    for i in range(n):
        w = i >> 6
        bit = np.uint64(1) << np.uint64(i & 63)
        for j in range(d):
            LE[off[j] + G[i, j], w] |= bit
    for j in range(d):
        for b in range(1, m[j] + 1):
            for w in range(W):
                LE[off[j] + b, w] |= LE[off[j] + b - 1, w]
    valid = np.zeros(W, np.uint64)
    for i in range(n):
        valid[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
    return LE, off, valid


@njit(cache=True, inline="always")
def _ratio_value(G: float, H: float, c0: float, c1: float, c2: float, tiny: float) -> float:
    D = c0 + c1 * H + c2 * H * H
    if tiny < D:
        return abs(G) / np.sqrt(D)
    return 0.0


@njit(cache=True)
def _ogb_value(s: np.ndarray, c: int, eps: float, cint: float) -> float:
    """Orthogonal boosting's value from the sums ``s[:c]``: the basis columns that are
    constant (the intercept) enter through ``cint · W²``, the others as sums."""
    par = cint * s[1] * s[1]
    for k in range(2, c):
        par += s[k] * s[k]
    perp = s[1] - par
    if perp < 0.0:
        perp = 0.0
    return abs(s[0]) / (np.sqrt(perp) + eps)


@njit(cache=True, inline="always")
def _and_box(x: Any, LE: np.ndarray, off: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             w: int) -> Any:
    """Word ``w`` of ``x`` AND the cover of the box ``lo_j <= g_j <= hi_j``."""
    for j in range(lo.shape[0]):
        if lo[j] > 0:
            x &= ~LE[off[j] + lo[j] - 1, w]
        x &= LE[off[j] + hi[j], w]
        if x == 0:
            break
    return x


@njit(cache=True)
def _count(x: np.ndarray, LE: np.ndarray, row: int) -> int:
    """|x ∩ LE[row]|"""
    c = 0
    for w in range(x.shape[0]):
        c += _popcount(x[w] & LE[row, w])
    return c


@njit(cache=True)
def evaluate(R: np.ndarray, LE: np.ndarray, off: np.ndarray, m: np.ndarray,
             valid: np.ndarray, S: np.ndarray, params: np.ndarray, iparams: np.ndarray,
             outer: np.ndarray, inner: np.ndarray, s_in: np.ndarray, s_un: np.ndarray,
             split: np.ndarray, cand: np.ndarray, thr: float) -> float:
    """Evaluate the node ``R`` (4, d) in place (module docstring).

    Collapses ranges without undecided rows, writes the split choice to ``split``
    (feature, side 0 = lower / 1 = upper, cut ``s``: children ``[lo, s]`` and
    ``[s+1, hi]``; feature -1 = leaf), the incumbent candidates to ``cand`` (value of the
    outer box, of the inner box, and a flag each: 1 = a valid candidate; the inner box is
    ``(ahi, blo)``; ``cand[4] = j + 1`` when the outer box is the all-covering box and a
    same-cover non-empty box moves the lower bound of feature ``j`` up by one), and
    returns the node bound (``-1`` for a node without boxes of allowed length). A node
    whose cheap bound is already at most ``thr`` (the pruning threshold) gets that
    bound without the exact scan."""
    d = R.shape[1]
    W = valid.shape[0]
    mode = iparams[I_MODE]
    max_len = iparams[I_MAX_LEN]
    c0, c1, c2 = params[P_C0], params[P_C1], params[P_C2]
    tiny, eps = params[P_TINY], params[P_EPS]
    cand[0] = 0.0
    cand[1] = 0.0
    cand[2] = 0.0
    cand[3] = 0.0
    cand[4] = 0.0
    split[0] = -1
    # ---- length: restricted features and propositions every box of the node has
    max_props = iparams[I_MAX_PROPS]
    forced = 0
    forced_props = 0
    for j in range(d):
        lo_bound = R[0, j] > 0
        hi_bound = R[3, j] < m[j]
        if lo_bound or hi_bound:
            forced += 1
        forced_props += int(lo_bound) + int(hi_bound)
        if R[0, j] > R[3, j]:
            return -1.0                      # every box of the node is empty... or a > b
    if (max_len >= 0 and forced > max_len) or (max_props >= 0 and forced_props > max_props):
        return -1.0
    # ---- outer cover
    n_out = 0
    for w in range(W):
        o = _and_box(valid[w], LE, off, R[0], R[3], w)
        outer[w] = o
        n_out += _popcount(o)
    # ---- collapse ranges without undecided rows; remember a same-cover move
    alt = -1
    best_cnt = 0
    for j in range(d):
        # lower side: undecided rows have alo <= g_j <= ahi - 1
        if R[1, j] > R[0, j]:
            cnt = _count(outer, LE, off[j] + R[1, j] - 1)
            if cnt == 0:
                if alt < 0:
                    alt = j
                R[1, j] = R[0, j]
            elif cnt > best_cnt:
                best_cnt = cnt
                split[0] = j
                split[1] = 0
        # upper side: undecided rows have blo + 1 <= g_j <= bhi
        if R[3, j] > R[2, j]:
            cnt = n_out - _count(outer, LE, off[j] + R[2, j])
            if cnt == 0:
                R[2, j] = R[3, j]
            elif cnt > best_cnt:
                best_cnt = cnt
                split[0] = j
                split[1] = 1
    # ---- the cut: half of the undecided rows of the chosen range on each side
    if split[0] >= 0:
        j = split[0]
        if split[1] == 0:
            lo, hi = R[0, j], R[1, j] - 1          # s in [alo, ahi - 1]
            base = 0
        else:
            lo, hi = R[2, j], R[3, j] - 1          # s in [blo, bhi - 1]
            base = _count(outer, LE, off[j] + R[2, j])
        half = (best_cnt + 1) // 2
        while lo < hi:                             # smallest s with count >= half
            mid = (lo + hi) // 2
            if _count(outer, LE, off[j] + mid) - base >= half:
                hi = mid
            else:
                lo = mid + 1
        split[2] = lo
    # ---- inner cover and the sums
    c = S.shape[1]
    for k in range(c):
        s_in[k] = 0.0
    for k in range(3 * c):
        s_un[k] = 0.0                  # sums, then positive and negative parts
    inner_box = True
    for j in range(d):
        if R[1, j] > R[2, j]:
            inner_box = False
    for w in range(W):
        o = outer[w]
        if o == 0:
            inner[w] = np.uint64(0)
            continue
        i = _and_box(o, LE, off, R[1], R[2], w) if inner_box else np.uint64(0)
        inner[w] = i
        x = i
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            for k in range(c):
                s_in[k] += S[r, k]
        x = o & ~i
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            for k in range(c):
                v = S[r, k]
                s_un[k] += v
                if v > 0:
                    s_un[c + k] += v
                else:
                    s_un[2 * c + k] += v
    # ---- candidates: the outer box (fewest propositions) and the inner box
    trivial = True
    for j in range(d):
        if R[0, j] > 0 or R[3, j] < m[j]:
            trivial = False
    if mode == MODE_RATIO:
        v_in = _ratio_value(s_in[0], s_in[1], c0, c1, c2, tiny)
        v_out = _ratio_value(s_in[0] + s_un[0], s_in[1] + s_un[1], c0, c1, c2, tiny)
    else:
        for k in range(c):
            s_un[k] += s_in[k]
        v_out = _ogb_value(s_un, c, eps, params[P_CINT])
        for k in range(c):
            s_un[k] -= s_in[k]
        v_in = _ogb_value(s_in, c, eps, params[P_CINT])
    cand[0] = v_out
    if not trivial or iparams[I_ALLOW_EMPTY] == 1:
        cand[2] = 1.0
    elif alt >= 0:
        cand[2] = 1.0
        cand[4] = alt + 1.0
    if inner_box:
        in_len = 0
        in_props = 0
        in_trivial = True
        for j in range(d):
            lo_bound = R[1, j] > 0
            hi_bound = R[2, j] < m[j]
            if lo_bound or hi_bound:
                in_trivial = False
                in_len += 1
                in_props += int(lo_bound) + int(hi_bound)
        if (max_len < 0 or in_len <= max_len) and (max_props < 0 or in_props <= max_props) \
                and (not in_trivial or iparams[I_ALLOW_EMPTY] == 1):
            cand[1] = v_in
            cand[3] = 1.0
    if split[0] < 0:                               # leaf: every box has the same cover
        return v_out if cand[2] > 0 else -1.0
    # ---- bound
    if mode == MODE_OGB:
        return _ogb_bound(outer, inner, S, s_in, s_un, params, thr)
    # the one-signed sums over the smallest D (D is concave: at an end of the weight
    # range) bound every row set; exact for the gradient sum (D constant)
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
def _ogb_bound(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
               s_un: np.ndarray, params: np.ndarray, thr: float) -> float:
    r"""A valid bound of orthogonal boosting's value over the row sets between the covers.

    Two bounds, the smaller is returned. (i) ``AG/(A + εG)`` with ``A`` the largest
    one-signed sum of ``w g_⊥`` (module :mod:`rulemip.boosting.objectives`). (ii) With
    ``C ≥ Σ_k N_k²`` over the non-constant basis columns (each ``|N_k|`` at most its
    largest one-signed sum) and the constant columns exact (``c_int W²``),
    ``‖q_⊥‖² ≥ D(W) = W - c_int W² - C`` and ``(sqrt(max(R, 0)) + ε)² ≥ D(W) + ε²``;
    ``D + ε²`` is concave in ``W``, so where it is positive on the node's weight range
    the zonotope scan of the ratio family with ``c0 = ε² - C, c1 = 1, c2 = -c_int``
    bounds the value. At the first round of a model with an intercept (``C = 0``) this is
    the exact ridge-gain bound with ``λ = ε²``. (iii) With equal row weights,
    :func:`_ogb_size_bound` (tight for small row sets, where (ii) fails). (iv) The chord
    bound :func:`_ogb_chord_bound` (tight where the basis sums vary little over the node),
    computed only when (i)–(iii) leave the node above the pruning threshold ``thr``."""
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
    if params[P_W0] > 0.0:
        b2 = min(b2, _ogb_size_bound(outer, inner, S, s_in, s_un, params, C))
    if min(c0 + w_in - cint * w_in * w_in, c0 + w_out - cint * w_out * w_out) > 0.0:
        b1 = _scan(outer, inner, S, s_in, s_un, c0, 1.0, -cint, 0.0)
        b1 = max(b1, _ratio_value(s_in[0], w_in, c0, 1.0, -cint, 0.0),
                 _ratio_value(s_in[0] + s_un[0], w_out, c0, 1.0, -cint, 0.0)) * (1.0 + 1e-9)
        b2 = min(b1, b2)
    if b2 <= thr:
        return b2
    return min(b2, _ogb_chord_bound(outer, inner, S, s_in, s_un, params, C, thr))


@njit(cache=True)
def _ogb_chord_bound(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
                     s_un: np.ndarray, params: np.ndarray, C: float, thr: float) -> float:
    r"""Orthogonal boosting's chord bound over the row sets between the covers (``inf``
    where it does not apply).

    Over the node every basis sum lies in its range, ``N_k ∈ [lo_k, hi_k]`` (the one-signed
    sums between the covers), and the weight ``W ∈ [W_in, W_out]``. A square lies below
    its chord on an interval: ``N_k² ≤ (lo_k + hi_k) N_k − lo_k hi_k`` and
    ``c_int W² ≤ c_int ((W_in + W_out) W − W_in W_out)``. So
    ``‖q_⊥‖² + ε² ≥ K + H`` with the constant ``K = ε² + c_int W_in W_out + Σ_k lo_k hi_k``
    and the additive statistic ``H = Σ_{i∈S} h_i``,
    ``h_i = (1 − c_int (W_in + W_out)) w_i − Σ_k (lo_k + hi_k) w_i o_{k,i}``.
    Where ``K + H > 0`` on the whole zonotope ``Z`` of the sums ``(G, H)`` of the row sets
    between the covers, the value is at most ``|G| / sqrt(K + H)`` (as
    ``(sqrt(R) + ε)² ≥ R + ε²``), and ``G² / (K + H)`` is convex there, so its maximum
    over ``Z`` is at a vertex. The rows whose ``h_i`` is negative (or zero with
    ``g_i < 0``) are moved into the base point with their generator negated; then every
    generator has ``h ≥ 0`` and the vertices are the base point plus the prefixes and
    suffixes of the generators sorted by ``g/h`` decreasing. ``K + H`` is smallest at the
    base point: where it is positive there, the bound is the largest value over those
    ``2u + 2`` points (``u`` undecided rows, one sort).

    With equal row weights ``w0`` the chord also sharpens the size bound
    (:func:`_ogb_size_bound`): for sets with ``p`` undecided rows ``W = W_in + p w0`` is
    exact, ``Σ_k (lo_k + hi_k) N_k ≤ V_in + (the p largest undecided v_i)`` with
    ``v_i = Σ_k (lo_k + hi_k) w_i o_{k,i}``, so ``‖q_⊥‖² ≥ W − c_int W² + Σ_k lo_k hi_k −
    V_in − top_p(v)``; the denominator at ``p`` is the largest of this, the leverage and
    the (ii) lower bounds (a second sort, computed only where the first chord bound does
    not apply or leaves the node above ``thr``). The smaller of the two is returned."""
    c = S.shape[1]
    W = outer.shape[0]
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
    u = 0
    for w in range(W):
        u += _popcount(outer[w] & ~inner[w])
    gv = np.empty(u)
    hv = np.empty(u)
    key = np.empty(u)
    bg = s_in[0]
    bh = h0
    i = 0
    for w in range(W):
        x = outer[w] & ~inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
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
            i += 1
    # rounding: the sums above carry errors far below 1e-10 of their magnitudes
    slack = 1e-10 * (scale + 1.0)
    den0 = k0 + bh - slack
    kn = k0 - eps * eps - cint * w_in * w_out - slack
    if not den0 > 0.0:
        if params[P_W0] > 0.0:
            return _chord_size_bound(outer, inner, S, s_in, params, C, coef, kn)
        return np.inf
    order = np.argsort(key)
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
    if b <= thr or not params[P_W0] > 0.0:
        return b
    return min(b, _chord_size_bound(outer, inner, S, s_in, params, C, coef, kn))


@njit(cache=True)
def _chord_size_bound(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
                      params: np.ndarray, C: float, coef: np.ndarray, kn: float) -> float:
    """The size bound of :func:`_ogb_size_bound` with the chord lower bound
    ``W − c_int W² + kn − V_in − top_p(v)`` (``kn = Σ_k lo_k hi_k`` less the rounding
    slack) as a third denominator (:func:`_ogb_chord_bound`)."""
    c = S.shape[1]
    W = outer.shape[0]
    eps = params[P_EPS]
    cint = params[P_CINT]
    w0 = params[P_W0]
    t_in = 0.0
    tau_max = 0.0
    v_in = 0.0
    u = 0
    for w in range(W):
        u += _popcount(outer[w] & ~inner[w])
        x = inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            for k in range(2, c):
                t_in += S[r, k] * S[r, k] / w0
                v_in += coef[k] * S[r, k]
    vv = np.empty(u)
    i = 0
    for w in range(W):
        x = outer[w] & ~inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            tau = 0.0
            v = 0.0
            for k in range(2, c):
                tau += S[r, k] * S[r, k]
                v += coef[k] * S[r, k]
            tau /= w0 * w0
            if tau > tau_max:
                tau_max = tau
            vv[i] = -v
            i += 1
    vv.sort()                      # -v increasing: v decreasing
    top = np.empty(u + 1)          # top[p]: the sum of the p largest v
    top[0] = 0.0
    for p in range(u):
        top[p + 1] = top[p] - vv[p]
    w_in = s_in[1]
    best = max(_chord_size_value(s_in[0], w_in, 0, t_in, tau_max, w0, cint, C, eps,
                                 kn - v_in - top[0]),
               _chord_size_value(-s_in[0], w_in, 0, t_in, tau_max, w0, cint, C, eps,
                                 kn - v_in - top[0]))
    g = s_in[0]
    p = 0
    for w in range(W):
        x = outer[w] & ~inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            g += S[r, 0]
            p += 1
            v = _chord_size_value(g, w_in + p * w0, p, t_in, tau_max, w0, cint, C, eps,
                                  kn - v_in - top[p])
            if v > best:
                best = v
    g = -s_in[0]
    p = 0
    for w in range(W - 1, -1, -1):
        x = outer[w] & ~inner[w]
        while x:
            b = np.int64(63) - np.int64(_ctlz(x))
            r = (w << 6) + b
            x &= ~(np.uint64(1) << np.uint64(b))
            g -= S[r, 0]
            p += 1
            v = _chord_size_value(g, w_in + p * w0, p, t_in, tau_max, w0, cint, C, eps,
                                  kn - v_in - top[p])
            if v > best:
                best = v
    return best * (1.0 + 1e-9)


@njit(cache=True, inline="always")
def _chord_size_value(g: float, wp: float, p: int, t_in: float, tau_max: float, w0: float,
                      cint: float, C: float, eps: float, chord: float) -> float:
    """:func:`_size_value` with the chord denominator ``wp − c_int wp² + chord`` too."""
    if g <= 0.0:
        return 0.0
    base = wp - cint * wp * wp
    r_lo = max(wp * (1.0 - cint * wp - t_in - p * w0 * tau_max), base - C, base + chord)
    return g / (np.sqrt(max(r_lo, 0.0)) + eps)


@njit(cache=True)
def _ogb_size_bound(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
                    s_un: np.ndarray, params: np.ndarray, C: float) -> float:
    r"""Orthogonal boosting's bound by the number ``p`` of undecided rows in the set (all
    row weights equal to ``w0``).

    For every set with ``p`` undecided rows: ``G`` is at most the inner sum plus the ``p``
    largest undecided ``w g_⊥`` (a prefix in key order), or at least the inner sum plus the
    ``p`` smallest (a prefix in reverse order); and with ``W = W_in + p w0``,
    ``‖q_⊥‖² ≥ max(W (1 - c_int W - T_in - p w0 τ_max), W - c_int W² - C)``: the first by
    Cauchy–Schwarz on every non-constant basis column, ``N_k² ≤ W Σ_{i∈S} w_i o_{k,i}²``,
    with the row leverages ``τ_i = Σ_k o_{k,i}²`` (``T_in`` their weighted sum over the
    inner cover, ``τ_max`` their largest undecided value), the second as in (ii). The value
    is at most ``|G| / (sqrt(max(R_lo, 0)) + ε)``; the bound is the largest over ``p`` and
    both signs."""
    c = S.shape[1]
    W = outer.shape[0]
    eps = params[P_EPS]
    cint = params[P_CINT]
    w0 = params[P_W0]
    t_in = 0.0
    tau_max = 0.0
    for w in range(W):
        x = inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            for k in range(2, c):
                t_in += S[r, k] * S[r, k] / w0          # w_i o_{k,i}^2
        x = outer[w] & ~inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            tau = 0.0
            for k in range(2, c):
                tau += S[r, k] * S[r, k]
            tau /= w0 * w0
            if tau > tau_max:
                tau_max = tau
    w_in = s_in[1]
    # side 0: the largest w g first (key order); side 1: the smallest first (reverse)
    best = _size_value(s_in[0], w_in, 0, t_in, tau_max, w0, cint, C, eps)
    best = max(best, _size_value(-s_in[0], w_in, 0, t_in, tau_max, w0, cint, C, eps))
    g = s_in[0]
    p = 0
    for w in range(W):
        x = outer[w] & ~inner[w]
        while x:
            r = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            g += S[r, 0]
            p += 1
            v = _size_value(g, w_in + p * w0, p, t_in, tau_max, w0, cint, C, eps)
            if v > best:
                best = v
    g = -s_in[0]
    p = 0
    for w in range(W - 1, -1, -1):
        x = outer[w] & ~inner[w]
        while x:
            b = np.int64(63) - np.int64(_ctlz(x))
            r = (w << 6) + b
            x &= ~(np.uint64(1) << np.uint64(b))
            g -= S[r, 0]
            p += 1
            v = _size_value(g, w_in + p * w0, p, t_in, tau_max, w0, cint, C, eps)
            if v > best:
                best = v
    return best * (1.0 + 1e-9)


@njit(cache=True, inline="always")
def _size_value(g: float, wp: float, p: int, t_in: float, tau_max: float, w0: float,
                cint: float, C: float, eps: float) -> float:
    """``g / (sqrt(max(R_lo, 0)) + ε)`` for a one-signed sum ``g`` (0 when not positive),
    ``R_lo`` the lower bound of :func:`_ogb_size_bound` at weight ``wp``."""
    if g <= 0.0:
        return 0.0
    r_lo = max(wp * (1.0 - cint * wp - t_in - p * w0 * tau_max), wp - cint * wp * wp - C)
    return g / (np.sqrt(max(r_lo, 0.0)) + eps)


@njit(cache=True)
def _scan(outer: np.ndarray, inner: np.ndarray, S: np.ndarray, s_in: np.ndarray,
          s_un: np.ndarray, c0: float, c1: float, c2: float, tiny: float) -> float:
    """The largest ratio value over the prefixes and suffixes (in key order) of the
    undecided rows added to the inner cover (module docstring: the zonotope bound)."""
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
def _heap_push(heap: np.ndarray, n: int, key: np.ndarray, slot: int) -> int:
    i = n
    heap[i] = slot
    kv = key[slot]
    while i > 0:
        p = (i - 1) >> 1
        if key[heap[p]] >= kv:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = slot
    return n + 1


@njit(cache=True)
def _heap_pop(heap: np.ndarray, n: int, key: np.ndarray) -> int:
    top = heap[0]
    n -= 1
    if n > 0:
        last = heap[n]
        kv = key[last]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and key[heap[c + 1]] > key[heap[c]]:
                c += 1
            if key[heap[c]] <= kv:
                break
            heap[i] = heap[c]
            i = c
        heap[i] = last
    return top


@njit(cache=True)
def _offer(cand: np.ndarray, R: np.ndarray, fstate: np.ndarray, best_box: np.ndarray) -> None:
    """Take the node's candidates that beat the incumbent (strictly: ties keep the first
    found, so the result does not depend on floating-point noise in the order)."""
    d = R.shape[1]
    if cand[2] > 0 and cand[0] > fstate[F_BEST]:
        fstate[F_BEST] = cand[0]
        for j in range(d):
            best_box[0, j] = R[0, j]
            best_box[1, j] = R[3, j]
        if cand[4] > 0:
            best_box[0, int(cand[4]) - 1] += 1
    if cand[3] > 0 and cand[1] > fstate[F_BEST]:
        fstate[F_BEST] = cand[1]
        for j in range(d):
            best_box[0, j] = R[1, j]
            best_box[1, j] = R[2, j]


@njit(cache=True)
def _threshold(fstate: np.ndarray, rtol: float) -> float:
    b = fstate[F_BEST]
    if not np.isfinite(b):
        return b
    return b + rtol * abs(b)


@njit(cache=True)
def init_root(pool: np.ndarray, bound: np.ndarray, splits: np.ndarray, heap: np.ndarray,
              free: np.ndarray, ctr: np.ndarray, fstate: np.ndarray, best_box: np.ndarray,
              LE: np.ndarray, off: np.ndarray, m: np.ndarray, valid: np.ndarray,
              S: np.ndarray, params: np.ndarray, iparams: np.ndarray) -> None:
    """Put the root (every box) in slot 0 and evaluate it; the free list holds the rest."""
    d = pool.shape[2]
    cap = pool.shape[0]
    W = valid.shape[0]
    for j in range(d):
        pool[0, 0, j] = 0
        pool[0, 1, j] = m[j]
        pool[0, 2, j] = 0
        pool[0, 3, j] = m[j]
    for s in range(cap - 1):
        free[s] = cap - 1 - s
    ctr[C_FREE] = cap - 1
    ctr[C_HEAP] = 0
    ctr[C_DFS] = 0
    outer = np.empty(W, np.uint64)
    inner = np.empty(W, np.uint64)
    s_in = np.empty(S.shape[1])
    s_un = np.empty(3 * S.shape[1])
    cand = np.empty(5)
    b = evaluate(pool[0], LE, off, m, valid, S, params, iparams, outer, inner, s_in, s_un,
                 splits[0], cand, _threshold(fstate, params[P_RTOL]))
    ctr[C_EVALS] += 1
    _offer(cand, pool[0], fstate, best_box)
    bound[0] = b
    if splits[0, 0] >= 0 and b > _threshold(fstate, params[P_RTOL]):
        ctr[C_HEAP] = _heap_push(heap, 0, bound, 0)
    else:
        free[ctr[C_FREE]] = 0
        ctr[C_FREE] += 1
        if b > fstate[F_PRUNED]:
            fstate[F_PRUNED] = b


@njit(cache=True)
def run(pool: np.ndarray, bound: np.ndarray, splits: np.ndarray, heap: np.ndarray,
        free: np.ndarray, dfs: np.ndarray, ctr: np.ndarray, fstate: np.ndarray,
        best_box: np.ndarray, LE: np.ndarray, off: np.ndarray, m: np.ndarray,
        valid: np.ndarray, S: np.ndarray, params: np.ndarray, iparams: np.ndarray,
        max_evals: int) -> int:
    """Continue the search for at most ``max_evals`` node evaluations; returns a status
    ``ST_*``. State lives in the arrays (a later call resumes)."""
    d = pool.shape[2]
    W = valid.shape[0]
    rtol = params[P_RTOL]
    reserve = iparams[I_RESERVE]
    outer = np.empty(W, np.uint64)
    inner = np.empty(W, np.uint64)
    s_in = np.empty(S.shape[1])
    s_un = np.empty(3 * S.shape[1])
    cand = np.empty(5)
    evals = 0
    while evals < max_evals:
        # ---- next node: the depth-first stack first, then the best of the heap
        if ctr[C_DFS] > 0:
            ctr[C_DFS] -= 1
            slot = dfs[ctr[C_DFS]]
        elif ctr[C_HEAP] > 0:
            slot = _heap_pop(heap, ctr[C_HEAP], bound)
            ctr[C_HEAP] -= 1
        else:
            return ST_DONE
        if bound[slot] <= _threshold(fstate, rtol):
            if bound[slot] > fstate[F_PRUNED]:
                fstate[F_PRUNED] = bound[slot]
            free[ctr[C_FREE]] = slot
            ctr[C_FREE] += 1
            continue
        if ctr[C_FREE] == 0:     # only when the pool may grow (else the reserve holds)
            ctr[C_HEAP] = _heap_push(heap, ctr[C_HEAP], bound, slot)
            return ST_GROW
        depth_first = iparams[I_CAN_GROW] == 0 and ctr[C_FREE] <= reserve
        # ---- branch: child 0 in a new slot, child 1 in the parent's slot
        ctr[C_FREE] -= 1
        other = free[ctr[C_FREE]]
        j, side, cut = splits[slot, 0], splits[slot, 1], splits[slot, 2]
        for r in range(4):
            for jj in range(d):
                pool[other, r, jj] = pool[slot, r, jj]
        if side == 0:
            pool[other, 1, j] = cut              # a in [alo, s]
            pool[slot, 0, j] = cut + 1           # a in [s+1, ahi]
        else:
            pool[other, 3, j] = cut              # b in [blo, s]
            pool[slot, 2, j] = cut + 1           # b in [s+1, bhi]
        ctr[C_EXPANDED] += 1
        kept0 = -1
        kept1 = -1
        for child in (other, slot):
            b = evaluate(pool[child], LE, off, m, valid, S, params, iparams, outer, inner,
                         s_in, s_un, splits[child], cand, _threshold(fstate, rtol))
            evals += 1
            ctr[C_EVALS] += 1
            _offer(cand, pool[child], fstate, best_box)
            bound[child] = b
            if splits[child, 0] >= 0 and b > _threshold(fstate, rtol):
                if child == other:
                    kept0 = child
                else:
                    kept1 = child
            else:
                free[ctr[C_FREE]] = child
                ctr[C_FREE] += 1
                if b > fstate[F_PRUNED]:
                    fstate[F_PRUNED] = b
        # ---- queue the survivors (depth first: the better one on top)
        if depth_first:
            if kept0 >= 0 and kept1 >= 0 and bound[kept0] > bound[kept1]:
                kept0, kept1 = kept1, kept0
            for s in (kept0, kept1):
                if s >= 0:
                    dfs[ctr[C_DFS]] = s
                    ctr[C_DFS] += 1
        else:
            for s in (kept0, kept1):
                if s >= 0:
                    ctr[C_HEAP] = _heap_push(heap, ctr[C_HEAP], bound, s)
        used = pool.shape[0] - ctr[C_FREE]
        if used > ctr[C_PEAK]:
            ctr[C_PEAK] = used
    return ST_EVALS


@njit(cache=True)
def open_bound(bound: np.ndarray, heap: np.ndarray, dfs: np.ndarray, ctr: np.ndarray) -> float:
    """The largest bound of an open node (-inf when none)."""
    b = -np.inf
    if ctr[C_HEAP] > 0:
        b = bound[heap[0]]
    for i in range(ctr[C_DFS]):
        if bound[dfs[i]] > b:
            b = bound[dfs[i]]
    return b

