r"""Compiled kernels of the k-box search's table (docs/explanation/kbox_search.md §1).

Boxes are bitsets over the occupied grid cells (64 cells a word). The kernels enumerate
every box of at most ``L`` restricted features on the candidate thresholds, hashing each
cover (a 64-bit hash) so that duplicates can be found by sorting (:func:`raw_hashes`),
then check every duplicate bit by bit (:func:`confirm_duplicates`: a hash collision never
merges two different covers), and compute the sufficient statistics of each distinct box
(:func:`box_stats`). No Python runs per box.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from rulemip.boosting.boxsearch.kernel import _cttz

__all__ = ["box_bits", "box_stats", "confirm_duplicates", "raw_hashes"]

_P1 = np.uint64(0x9E3779B97F4A7C15)
_P2 = np.uint64(0xC2B2AE3D27D4EB4F)
_P3 = np.uint64(0x165667B19E3779F9)
_S29 = np.uint64(29)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)

@njit(cache=True, inline="always")
def _mix(h: np.uint64, w: np.uint64, p: np.uint64) -> np.uint64:
    h = (h ^ w) * p
    return h ^ (h >> _S29)


@njit(cache=True)
def _raw_box(ibits: np.ndarray, ioff: np.ndarray, icount: np.ndarray, subset: np.ndarray,
             size: int, r: int, out: np.ndarray) -> None:
    """Bits of raw box ``r`` of ``subset`` (mixed radix over the features' intervals)."""
    nw = out.shape[0]
    for w in range(nw):
        out[w] = ~_ZERO
    for t in range(size):
        f = subset[t]
        c = icount[f]
        i = r % c
        r //= c
        row = ioff[f] + i
        for w in range(nw):
            out[w] &= ibits[row, w]


@njit(cache=True)
def raw_hashes(ibits: np.ndarray, ioff: np.ndarray, icount: np.ndarray, subsets: np.ndarray,
               sizes: np.ndarray, starts: np.ndarray, all_mask: np.ndarray, drop_full: bool
               ) -> tuple[np.ndarray, np.ndarray]:
    """A 64-bit hash of every raw box's cover and whether it is kept (covers a cell; not
    every cell when ``drop_full``). Raw box ``starts[s] + r`` is the r-th interval
    combination of feature subset ``s`` (subsets in order of size, so a cover's first raw
    box restricts the fewest features)."""
    n_raw = starts[-1]
    nw = all_mask.shape[0]
    h1 = np.empty(n_raw, dtype=np.uint64)
    ok = np.zeros(n_raw, dtype=np.bool_)
    buf = np.empty(nw, dtype=np.uint64)
    for s in range(subsets.shape[0]):
        for r in range(starts[s + 1] - starts[s]):
            _raw_box(ibits, ioff, icount, subsets[s], sizes[s], r, buf)
            a = _P3
            nonempty = False
            full = True
            for w in range(nw):
                x = buf[w] & all_mask[w]
                if x != _ZERO:
                    nonempty = True
                if x != all_mask[w]:
                    full = False
                a = _mix(a, x, _P1)
            i = starts[s] + r
            h1[i] = _mix(a, _P2, _P2)
            ok[i] = nonempty and not (full and drop_full)
    return h1, ok


@njit(cache=True)
def _locate(starts: np.ndarray, i: int) -> int:
    """Subset of raw box ``i`` (binary search in ``starts``)."""
    lo, hi = 0, starts.shape[0] - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if starts[mid] <= i:
            lo = mid
        else:
            hi = mid
    return lo


@njit(cache=True)
def _bits_of(ibits: np.ndarray, ioff: np.ndarray, icount: np.ndarray, subsets: np.ndarray,
             sizes: np.ndarray, starts: np.ndarray, all_mask: np.ndarray, i: int,
             out: np.ndarray) -> None:
    s = _locate(starts, i)
    _raw_box(ibits, ioff, icount, subsets[s], sizes[s], i - starts[s], out)
    for w in range(out.shape[0]):
        out[w] &= all_mask[w]


@njit(cache=True)
def confirm_duplicates(ibits: np.ndarray, ioff: np.ndarray, icount: np.ndarray,
                       subsets: np.ndarray, sizes: np.ndarray, starts: np.ndarray,
                       all_mask: np.ndarray, order: np.ndarray, h1: np.ndarray
                       ) -> np.ndarray:
    """Representatives of the distinct covers. ``order`` lists the kept raw boxes sorted
    by (hash, raw index); within a run of equal hashes the first raw box represents every
    member whose bits equal its own — checked bit by bit, so a collision only adds a
    representative (at worst a duplicate box, never a lost one). Returns a flag per
    position of ``order``."""
    n = order.shape[0]
    nw = all_mask.shape[0]
    rep = np.zeros(n, dtype=np.bool_)
    a = np.empty(nw, dtype=np.uint64)
    b = np.empty(nw, dtype=np.uint64)
    p = 0
    while p < n:
        q = p + 1
        while q < n and h1[order[q]] == h1[order[p]]:
            q += 1
        rep[p] = True
        if q - p > 1:
            _bits_of(ibits, ioff, icount, subsets, sizes, starts, all_mask, order[p], a)
            for t in range(p + 1, q):
                _bits_of(ibits, ioff, icount, subsets, sizes, starts, all_mask, order[t], b)
                for w in range(nw):
                    if a[w] != b[w]:
                        rep[t] = True  # a collision: a different cover, kept
                        break
        p = q
    return rep


@njit(cache=True)
def box_bits(ibits: np.ndarray, ioff: np.ndarray, icount: np.ndarray, subsets: np.ndarray,
             sizes: np.ndarray, starts: np.ndarray, all_mask: np.ndarray, raw: np.ndarray
             ) -> np.ndarray:
    """Bits of the raw boxes ``raw`` (one row each)."""
    out = np.empty((raw.shape[0], all_mask.shape[0]), dtype=np.uint64)
    for t in range(raw.shape[0]):
        _bits_of(ibits, ioff, icount, subsets, sizes, starts, all_mask, raw[t], out[t])
    return out


@njit(cache=True)
def box_stats(bits: np.ndarray, weight: np.ndarray, wy: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """``(N, S)``: the weight :math:`\\sum_{c\\in b} W_c` and the sum
    :math:`\\sum_{c\\in b} W_c \\tilde y_c` of every box (``wy`` = :math:`W_c\\tilde y_c`)."""
    B, nw = bits.shape
    N = np.zeros(B)
    S = np.zeros(B)
    for i in range(B):
        n = 0.0
        s = 0.0
        for w in range(nw):
            x = bits[i, w]
            while x != _ZERO:
                c = w * 64 + int(_cttz(x))
                n += weight[c]
                s += wy[c]
                x &= x - _ONE
        N[i] = n
        S[i] = s
    return N, S
