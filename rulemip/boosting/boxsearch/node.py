r"""One node of the exact box search: its covers, its branching choice, its incumbent
candidates and its bound (docs/explanation/box_search.md, "Nodes", "Branching").

A node is four ranges per feature, ``a ∈ [alo, ahi]``, ``b ∈ [blo, bhi]`` (``R`` (4, d)):
the boxes with those bounds. Its *outer* box ``(alo, bhi)`` contains the cover of every box
of the node, its *inner* box ``(ahi, blo)`` is contained in every one; rows of the outer but
not the inner cover are *undecided*. :func:`evaluate` runs the named steps in order.

The kernel's arrays travel as two tuples: ``prob = (LE, off, m, valid, S, params,
iparams)``, the problem (masks, groups per feature, statistics in key order, parameters),
and ``work = (outer, inner, s_in, s_un, cand)``, the scratch of one evaluation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rulemip._numba_cache import guard_kernel_cache
from rulemip.boosting.boxsearch.bounds import ogb_bound, ogb_value, ratio_bound, ratio_value
from rulemip.boosting.boxsearch.words import (
    FILES,
    I_ALLOW_EMPTY,
    I_MAX_LEN,
    I_MAX_PROPS,
    I_MODE,
    MODE_OGB,
    MODE_RATIO,
    P_C0,
    P_C1,
    P_C2,
    P_CINT,
    P_EPS,
    P_TINY,
    _and_box,
    _count,
    _cttz,
    _popcount,
    step,
)

__all__ = ["evaluate"]

guard_kernel_cache(__file__, *FILES)


@njit(cache=True)
def evaluate(R: np.ndarray, prob: Any, work: Any, split: np.ndarray, thr: float) -> float:
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
    LE, off, m, valid, S, params, iparams = prob
    outer, inner, s_in, s_un, cand = work
    for k in range(5):
        cand[k] = 0.0
    split[0] = -1
    if not _fits(R, m, iparams):
        return -1.0
    n_out = _outer_cover(R, LE, off, valid, outer)
    alt, best_cnt = _collapse_and_choose(R, LE, off, outer, n_out, split)
    if split[0] >= 0:
        split[2] = _median_cut(R, LE, off, outer, split, best_cnt)
    inner_box = _inner_sums(R, LE, off, S, outer, inner, s_in, s_un)
    v_in, v_out = _candidates(R, m, params, iparams, s_in, s_un, inner_box, alt, cand)
    if split[0] < 0:                               # leaf: every box has the same cover
        return v_out if cand[2] > 0 else -1.0
    if iparams[I_MODE] == MODE_OGB:
        return ogb_bound(outer, inner, S, s_in, s_un, params, thr)
    return ratio_bound(outer, inner, S, s_in, s_un, params, v_in, v_out, thr)


@step
def _fits(R: np.ndarray, m: np.ndarray, iparams: np.ndarray) -> bool:
    """Whether some box of the node is non-empty (``a <= b``) and within the caps: the
    features every box restricts and the propositions every box has."""
    max_len = iparams[I_MAX_LEN]
    max_props = iparams[I_MAX_PROPS]
    forced = 0
    forced_props = 0
    for j in range(R.shape[1]):
        lo_bound = R[0, j] > 0
        hi_bound = R[3, j] < m[j]
        if lo_bound or hi_bound:
            forced += 1
        forced_props += int(lo_bound) + int(hi_bound)
        if R[0, j] > R[3, j]:
            return False                     # every box of the node is empty... or a > b
    return not ((max_len >= 0 and forced > max_len)
                or (max_props >= 0 and forced_props > max_props))


@step
def _outer_cover(R: np.ndarray, LE: np.ndarray, off: np.ndarray, valid: np.ndarray,
                 outer: np.ndarray) -> int:
    """Write the outer box's cover to ``outer``; returns its number of rows."""
    n_out = 0
    for w in range(valid.shape[0]):
        o = _and_box(valid[w], LE, off, R[0], R[3], w)
        outer[w] = o
        n_out += _popcount(o)
    return n_out


@step
def _collapse_and_choose(R: np.ndarray, LE: np.ndarray, off: np.ndarray, outer: np.ndarray,
                         n_out: int, split: np.ndarray) -> tuple[int, int]:
    """Collapse every range without undecided rows to the value with the fewest bounds;
    choose the range with the most undecided rows to split (``split[:2]``). Returns
    ``(alt, count)``: the first feature whose lower range collapsed (a same-cover move of
    the all-covering box, -1 if none) and the chosen range's undecided rows."""
    alt = -1
    best_cnt = 0
    for j in range(R.shape[1]):
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
    return alt, best_cnt


@step
def _median_cut(R: np.ndarray, LE: np.ndarray, off: np.ndarray, outer: np.ndarray,
                split: np.ndarray, count: int) -> int:
    """The cut of the chosen range: the smallest that puts at least half of its ``count``
    undecided rows on the first side."""
    j = split[0]
    if split[1] == 0:
        lo, hi = R[0, j], R[1, j] - 1          # s in [alo, ahi - 1]
        base = 0
    else:
        lo, hi = R[2, j], R[3, j] - 1          # s in [blo, bhi - 1]
        base = _count(outer, LE, off[j] + R[2, j])
    half = (count + 1) // 2
    while lo < hi:                             # smallest s with count >= half
        mid = (lo + hi) // 2
        if _count(outer, LE, off[j] + mid) - base >= half:
            hi = mid
        else:
            lo = mid + 1
    return lo


@step
def _inner_sums(R: np.ndarray, LE: np.ndarray, off: np.ndarray, S: np.ndarray,
                outer: np.ndarray, inner: np.ndarray, s_in: np.ndarray,
                s_un: np.ndarray) -> bool:
    """Write the inner cover to ``inner``, the statistics' sums over it to ``s_in`` and over
    the undecided rows to ``s_un`` (sums, then positive parts, then negative parts).
    Returns whether the inner box is a box (``ahi <= blo`` on every feature)."""
    c = S.shape[1]
    for k in range(c):
        s_in[k] = 0.0
    for k in range(3 * c):
        s_un[k] = 0.0
    inner_box = True
    for j in range(R.shape[1]):
        if R[1, j] > R[2, j]:
            inner_box = False
    for w in range(outer.shape[0]):
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
    return inner_box


@step
def _candidates(R: np.ndarray, m: np.ndarray, params: np.ndarray, iparams: np.ndarray,
                s_in: np.ndarray, s_un: np.ndarray, inner_box: bool, alt: int,
                cand: np.ndarray) -> tuple[float, float]:
    """The incumbent candidates (``cand``, :func:`evaluate`): the outer box (the fewest
    propositions of the node) and the inner box where it is a box of allowed length.
    Returns the values ``(inner, outer)``."""
    c = s_in.shape[0]
    if iparams[I_MODE] == MODE_RATIO:
        c0, c1, c2, tiny = params[P_C0], params[P_C1], params[P_C2], params[P_TINY]
        v_in = ratio_value(s_in[0], s_in[1], c0, c1, c2, tiny)
        v_out = ratio_value(s_in[0] + s_un[0], s_in[1] + s_un[1], c0, c1, c2, tiny)
    else:
        for k in range(c):
            s_un[k] += s_in[k]
        v_out = ogb_value(s_un, c, params[P_EPS], params[P_CINT])
        for k in range(c):
            s_un[k] -= s_in[k]
        v_in = ogb_value(s_in, c, params[P_EPS], params[P_CINT])
    allow_empty = iparams[I_ALLOW_EMPTY] == 1
    cand[0] = v_out
    if not _all_covering(R[0], R[3], m) or allow_empty:
        cand[2] = 1.0
    elif alt >= 0:
        cand[2] = 1.0
        cand[4] = alt + 1.0
    if inner_box and _allowed(R[1], R[2], m, iparams, allow_empty):
        cand[1] = v_in
        cand[3] = 1.0
    return v_in, v_out


@step
def _all_covering(a: np.ndarray, b: np.ndarray, m: np.ndarray) -> bool:
    """Whether the box ``(a, b)`` has no bound (the empty rule)."""
    covering = True
    for j in range(a.shape[0]):
        if a[j] > 0 or b[j] < m[j]:
            covering = False
    return covering


@step
def _allowed(a: np.ndarray, b: np.ndarray, m: np.ndarray, iparams: np.ndarray,
             allow_empty: bool) -> bool:
    """Whether the box ``(a, b)`` is within the length caps (and not the empty rule unless
    that is allowed)."""
    max_len = iparams[I_MAX_LEN]
    max_props = iparams[I_MAX_PROPS]
    length = 0
    props = 0
    for j in range(a.shape[0]):
        lo_bound = a[j] > 0
        hi_bound = b[j] < m[j]
        if lo_bound or hi_bound:
            length += 1
            props += int(lo_bound) + int(hi_bound)
    return ((max_len < 0 or length <= max_len) and (max_props < 0 or props <= max_props)
            and (length > 0 or allow_empty))
