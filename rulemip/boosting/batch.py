r"""Batched prefix sums for the rule search: many covers at once (docs/explanation/boosting.md,
[OGB] eq. (10)).

The search of :mod:`rulemip.boosting.search` needs, for every node (a cover
:math:`I \subseteq \{1..n\}`) that it expands,

- its **children**: for every feature ``j`` the covered points in the order of
  :math:`x_j` (:math:`\sigma_j = \mathrm{filter}(\varphi_j, I)`, [OGB] Alg. 2) and the
  cumulative sums :math:`C_{j,i} = \sum_{l \le i} s_{\sigma_j(l)}` of the per-point
  statistics ``s`` (prefix value problem); the ``x_j <= t`` refinements are the prefixes
  ending where the threshold group changes, the ``x_j > t`` ones the complementary
  suffixes (total minus prefix);
- its **prefix-greedy bound**: the same cumulative sums along the order of the bound key
  (:math:`g_\perp` for ogb, :math:`g` for gb, :math:`g/h` for xgb) and the maximum of the
  objective over all prefixes and suffixes.

Doing this one node at a time costs a few hundred microseconds of interpreter overhead
per node, which dominates branch-and-bound (thousands of small covers per round). Here a
batch of ``B`` covers is handled with one boolean mask ``M`` (``B x n``): the covered
points in a global order ``φ`` are ``nonzero(M[:, φ])`` (row-major, so in order within
every row — sorted once per fit, restricted by a mask, never re-sorted); their statistics
are scattered into a zero-padded ``(B, m_max, c)`` array and summed cumulatively along
the middle axis. Adding the zero padding at the end of a row leaves every partial sum
bitwise unchanged, so the prefix sums are **exactly** those of the one-cover-at-a-time
computation (``np.cumsum`` over the gathered rows), and so are the values and bounds
derived from them. Batches are cut so that the padded array stays below
``max_elements`` numbers; covers are grouped by size to keep the padding small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

#: default bound on the size of one padded ``(B, m_max, c)`` block
MAX_ELEMENTS: int = 1 << 21


def _sub_batches(sizes: IntArray, width: int, max_elements: int) -> list[IntArray]:
    """Split node indices, grouped by cover size, into blocks with
    ``len(block) * max(size) * width <= max_elements`` (at least one node per block) and
    ``max(size) <= 2 * min(size) + 32`` (little zero padding)."""
    order = np.argsort(sizes, kind="stable")
    blocks: list[IntArray] = []
    start = 0
    for stop in range(1, len(order) + 1):
        if stop == len(order) or \
                (stop + 1 - start) * int(sizes[order[stop]]) * width > max_elements or \
                sizes[order[stop]] > 2 * sizes[order[start]] + 32:
            blocks.append(order[start:stop])
            start = stop
    return blocks


def _runs_by_key(key: IntArray) -> IntArray:
    """The permutation that sorts ``key`` when every key value forms one contiguous run
    (equal to a stable argsort, in O(len) instead of a sort)."""
    if len(key) == 0:
        return np.zeros(0, np.intp)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    lens = np.diff(np.r_[starts, len(key)])
    run_order = np.argsort(key[starts], kind="stable")
    first = starts[run_order]
    ln = lens[run_order]
    offs = np.repeat(first - (np.cumsum(ln) - ln), ln)
    return np.asarray(np.arange(len(key)) + offs, dtype=np.intp)


def _mask(idxs: Sequence[IntArray], n: int) -> NDArray[np.bool_]:
    M = np.zeros((len(idxs), n), dtype=bool)
    lens = np.fromiter((len(i) for i in idxs), dtype=np.intp, count=len(idxs))
    M[np.repeat(np.arange(len(idxs)), lens), np.concatenate(idxs)] = True
    return M


def ordered_covers(M: NDArray[np.bool_], order: IntArray
                   ) -> tuple[IntArray, IntArray, IntArray]:
    """The covered points of every row of ``M`` in the order ``order``.

    Returns flat arrays ``(row, pos, point)``, row-major: ``point`` runs through
    :math:`\\mathrm{filter}(\\varphi, I_b)` for ``b = 0, 1, ...``, and ``pos`` is the
    position within its row.
    """
    row, col = np.nonzero(M[:, order])
    counts = np.bincount(row, minlength=M.shape[0])
    starts = np.cumsum(counts) - counts
    pos = np.arange(len(row)) - starts[row]
    return row, pos, order[col]


def padded_cumsum(row: IntArray, pos: IntArray, rows: FloatArray, n_rows: int
                  ) -> FloatArray:
    """``C[b, i] = rows[row == b][: i + 1].sum(axis=0)`` as a ``(n_rows, m_max, c)`` array,
    by a sequential cumulative sum over zero-padded rows (bitwise equal to ``np.cumsum``
    of each row's entries; positions beyond a row's length repeat its total)."""
    m_max = int(pos.max()) + 1 if len(pos) else 1
    P = np.zeros((n_rows, m_max, rows.shape[1]))
    P[row, pos] = rows
    np.cumsum(P, axis=1, out=P)
    return P


@dataclass(frozen=True)
class Refinements:
    """All single-proposition refinements of a batch of covers.

    Entry ``k`` belongs to cover ``node[k]``; it is ``x_j <= t[a_up[k]]`` with
    ``j = feature[k]`` (covering the first ``pos[k] + 1`` covered points in the order of
    ``x_j``) or, complementarily, ``x_j > t[a_lo[k]]``; ``prefix[k]`` is the sum of the
    statistic rows over the first of these two covers. Entries are sorted by
    ``(node, feature, pos)``; ``counts[b]`` is the number of entries of cover ``b``.
    """

    node: IntArray
    feature: IntArray
    pos: IntArray
    a_up: IntArray
    a_lo: IntArray
    prefix: FloatArray
    counts: IntArray
    up_ok: NDArray[np.bool_] | None = None
    lo_ok: NDArray[np.bool_] | None = None


def _closure_preserving(groups: NDArray[np.int64], rows: IntArray, d: int, row: IntArray,
                        pos: IntArray, pts: IntArray, closures: NDArray[np.int64],
                        cut: IntArray) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    r"""Which refinements are prefix-preserving closure extensions (LCM's ppc test).

    Row ``rows[r] = b * d + j`` lists cover ``b`` in the order of feature ``j``. The
    ``x_j <= t`` child at position ``p`` (a prefix) keeps the closure of its parent on the
    features ``j' < j`` iff the prefix reaches, for every ``j' < j``, a point with the
    parent's smallest and one with its largest group of ``x_{j'}``; the ``x_j > t`` child
    (the suffix from ``p + 1``) likewise. The smallest group of ``x_j`` itself stays in
    every prefix. O(d) per covered point and row, vectorized over the block.
    """
    big = np.iinfo(np.intp).max
    cov = rows[row] // d
    H = groups[:, pts]                                                   # (d, E)
    is_min = H == closures[cov, 0, :].T
    is_max = H == closures[cov, 1, :].T
    starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    first = np.maximum(np.minimum.reduceat(np.where(is_min, pos, big), starts, axis=1),
                       np.minimum.reduceat(np.where(is_max, pos, big), starts, axis=1))
    last = np.minimum(np.maximum.reduceat(np.where(is_min, pos, -1), starts, axis=1),
                      np.maximum.reduceat(np.where(is_max, pos, -1), starts, axis=1))
    feat = rows[row[starts]] % d
    earlier = np.arange(d)[:, None] < feat[None, :]                      # j' < j
    need_up = np.where(earlier, first, -1).max(axis=0)
    need_lo = np.where(earlier, last, big).min(axis=0)
    # row index -> run index (every row of a block is non-empty)
    run = np.cumsum(np.r_[True, row[1:] != row[:-1]]) - 1
    rc, p = run[cut], pos[cut]
    return p >= need_up[rc], p + 1 <= need_lo[rc]


def batch_refinements(orders: IntArray, groups: NDArray[np.int64], idxs: Sequence[IntArray],
                      stats: FloatArray, max_elements: int = MAX_ELEMENTS,
                      first_feature: IntArray | None = None,
                      closures: NDArray[np.int64] | None = None) -> Refinements:
    """Refinements of every cover in ``idxs`` that strictly shrink it.

    Parameters
    ----------
    orders : (d, n) stable argsort of every feature.
    groups : (d, n) threshold group of every point (non-decreasing along ``orders[j]``).
    idxs : the covers (index arrays).
    stats : (n, c) statistics whose prefix sums are wanted.
    first_feature : (len(idxs),) only features ``j >= first_feature[b]`` are refined for
        cover ``b`` (the canonical order of branch-and-bound); None: all features.
    closures : (len(idxs), 2, d) smallest / largest threshold group of every cover per
        feature; when given, ``up_ok`` / ``lo_ok`` of the result flag the refinements
        that are prefix-preserving closure extensions (:func:`_closure_preserving`).

    Returns
    -------
    :class:`Refinements`. A refinement exists between consecutive covered points
    ``σ_j(i)``, ``σ_j(i+1)`` of different groups: ``a_up`` is the group of ``σ_j(i)`` and
    ``a_lo`` the group of ``σ_j(i+1)`` minus one, the cut points nearest the cover.
    """
    d, n = orders.shape
    c = stats.shape[1]
    sizes = np.fromiter((len(i) for i in idxs), dtype=np.intp, count=len(idxs))
    parts: list[tuple[IntArray, ...]] = []
    prefixes: list[FloatArray] = []
    oks: list[tuple[NDArray[np.bool_], NDArray[np.bool_]]] = []
    width = c * d if closures is None else (c + 2 * d) * d
    for block in _sub_batches(sizes, width, max_elements):
        M = _mask([idxs[b] for b in block], n)
        # rows (cover, feature): the cover in the order of the feature, row-major, so the
        # entries come out sorted by (cover, feature, position)
        R = M[:, orders].reshape(len(block) * d, n)
        rows = np.arange(len(block) * d, dtype=np.intp)
        if first_feature is not None:
            rows = np.flatnonzero((np.arange(d)[None, :]
                                   >= first_feature[block][:, None]).ravel())
            R = R[rows]
        row, pos, pts = ordered_covers(R, np.arange(n, dtype=np.intp))
        feat = rows[row] % d
        pts = orders[feat, pts]
        grp = groups[feat, pts]
        cut = np.flatnonzero((row[1:] == row[:-1]) & (grp[1:] != grp[:-1]))
        if len(cut) == 0:
            continue
        C = padded_cumsum(row, pos, stats[pts], len(rows))
        r, p = row[cut], pos[cut]
        rg = rows[r]
        parts.append((block[rg // d], (rg % d).astype(np.intp), p, grp[cut].astype(np.intp),
                      (grp[cut + 1] - 1).astype(np.intp)))
        prefixes.append(C[r, p])
        if closures is not None:
            oks.append(_closure_preserving(groups, rows, d, row, pos, pts, closures[block],
                                           cut))
    if not parts:
        empty = np.zeros(0, np.intp)
        none = None if closures is None else np.zeros(0, bool)
        return Refinements(empty, empty, empty, empty, empty, np.zeros((0, c)),
                           np.zeros(len(idxs), np.intp), none, none)
    node, feature, pos, a_up, a_lo = (np.concatenate(x) for x in zip(*parts, strict=True))
    prefix = np.concatenate(prefixes)
    # blocks hold whole covers and run by (cover, feature, pos): reordering the runs of
    # equal cover restores the caller's cover order
    srt = _runs_by_key(node)
    up_ok = lo_ok = None
    if closures is not None:
        up_ok = np.concatenate([u for u, _ in oks])[srt]
        lo_ok = np.concatenate([lo for _, lo in oks])[srt]
    return Refinements(node[srt], feature[srt], pos[srt], a_up[srt], a_lo[srt], prefix[srt],
                       np.bincount(node, minlength=len(idxs)).astype(np.intp), up_ok, lo_ok)


def batch_greedy_bounds(key_order: IntArray, idxs: Sequence[IntArray], stats: FloatArray,
                        from_sums: Callable[[FloatArray], FloatArray],
                        max_elements: int = MAX_ELEMENTS) -> FloatArray:
    r"""Prefix-greedy bound of every cover: with :math:`\sigma` = the cover in the order
    ``key_order`` and :math:`C_i = \sum_{l \le i} s_{\sigma(l)}`, the maximum of
    ``from_sums`` over all prefixes :math:`C_i` and all suffixes :math:`C_m - C_{i-1}`
    (both sort directions). Equals :meth:`RoundObjective.bound` cover by cover, exactly;
    ``from_sums`` must map the zero vector to 0 (true for every objective here)."""
    n = len(key_order)
    out = np.zeros(len(idxs))
    sizes = np.fromiter((len(i) for i in idxs), dtype=np.intp, count=len(idxs))
    for block in _sub_batches(sizes, stats.shape[1], max_elements):
        M = _mask([idxs[b] for b in block], n)
        row, pos, pts = ordered_covers(M, key_order)
        C = padded_cumsum(row, pos, stats[pts], len(block))
        # suffixes: C_m - C_{i-1} for i = 2..m, i.e. total - C[:, i] for i < m - 1 (the
        # rest is 0), and the whole cover C_m, which is also the last prefix
        suffix = C[:, -1:, :] - C
        out[block] = np.maximum(from_sums(C).max(axis=1), from_sums(suffix).max(axis=1))
    out[sizes == 0] = 0.0
    return out



def _group_closure_preserving(G: NDArray[np.int16], cover_sizes: IntArray,
                              closures: NDArray[np.int64], first: IntArray | None = None
                              ) -> tuple[IntArray, IntArray]:
    r""":func:`_closure_preserving` in terms of threshold groups (no sorting).

    ``G`` (d, T): the group of every point of a block of covers (concatenated, cover by
    cover, ``cover_sizes`` points each); ``closures`` (B, 2, d) their closures. Returns
    ``need_up`` and ``need_lo`` (B, d): the ``x_j <= t`` child covering the groups
    ``<= a`` of feature ``j`` keeps the closure on every feature ``j' < j`` iff
    ``a >= need_up[b, j]`` (it still holds a point with the smallest and one with the
    largest group of ``x_{j'}``), the ``x_j > t`` child covering the groups ``>= a`` iff
    ``a <= need_lo[b, j]``. Only features ``j >= first[b]`` are computed (the others
    are never refined). O(m·d²/2) per cover of m points (every cover has a point in
    its closure's extreme groups, so no reduction runs over an empty set).
    """
    d = G.shape[0]
    big = np.iinfo(np.int16).max
    starts = np.cumsum(cover_sizes) - cover_sizes
    cov = np.repeat(np.arange(len(cover_sizes)), cover_sizes)
    hits = [G == closures[cov, side, :].T for side in (0, 1)]    # (d, T): min / max group
    need_up = np.full((len(cover_sizes), d), -1, np.int64)
    need_lo = np.full((len(cover_sizes), d), big, np.int64)
    if first is None:
        first = np.zeros(len(cover_sizes), np.intp)
    for j in range(max(1, int(first.min())), d):   # refined feature j; j' in 0..j-1
        sel = first <= j
        if sel.all():
            st, Gj = starts, G[j]
            sub = [hit[:j] for hit in hits]
        else:                                      # only the covers refined in j
            pts = sel[cov]
            sz = cover_sizes[sel]
            st, Gj = np.cumsum(sz) - sz, G[j, pts]
            sub = [hit[:j, pts] for hit in hits]
        for h in sub:
            lo_hit = np.minimum.reduceat(np.where(h, Gj, big), st, axis=1)   # (j, B')
            hi_hit = np.maximum.reduceat(np.where(h, Gj, -1), st, axis=1)
            need_up[sel, j] = np.maximum(need_up[sel, j], lo_hit.max(axis=0))
            need_lo[sel, j] = np.minimum(need_lo[sel, j], hi_hit.min(axis=0))
    return need_up, need_lo


def batch_group_refinements(groups_flat: IntArray, d: int, n_groups: int,
                            idxs: Sequence[IntArray], stats: FloatArray,
                            max_elements: int = MAX_ELEMENTS,
                            first_feature: IntArray | None = None,
                            closures: NDArray[np.int64] | None = None) -> Refinements:
    r"""The refinements of :func:`batch_refinements` from per-group sums (few thresholds).

    For every cover ``b``, feature ``j`` and threshold group ``a`` the sum of the
    statistics and the number of covered points with :math:`x_j` in group ``a`` are
    accumulated by one weighted ``bincount`` per statistic over the keys
    ``(b, j, a)`` — O(m·d) per statistic and cover, no sorting; the prefix sum of
    refinement ``x_j <= t_a`` is then the cumulative sum over the groups ``<= a``.
    ``groups_flat[i, j] = j * n_groups + group_j(x_i)``. The entries equal those of
    :func:`batch_refinements` except for floating-point rounding (the same numbers summed
    in another order); ``pos`` is the group index ``a_up``. ``first_feature`` and
    ``closures`` as there (the closure test by :func:`_group_closure_preserving`).
    """
    c = stats.shape[1]
    width = d * n_groups
    sizes = np.fromiter((len(i) for i in idxs), dtype=np.intp, count=len(idxs))
    blocks = _sub_batches(np.ones(len(idxs), np.intp), width * (c + 1), max_elements // 4)
    if closures is not None:   # the closure test holds (d, T) arrays: blocks by points
        blocks = _sub_batches(sizes, 2 * d, max_elements)
    parts: list[tuple[IntArray, ...]] = []
    prefixes: list[FloatArray] = []
    oks: list[tuple[NDArray[np.bool_], NDArray[np.bool_]]] = []
    for block in blocks:
        pts = np.concatenate([idxs[b] for b in block])
        # only the features some cover of the block is refined in: j >= j0
        j0 = 0 if first_feature is None else int(first_feature[block].min())
        dd = d - j0
        if dd <= 0:
            continue
        wb = dd * n_groups
        rep = np.repeat(np.arange(len(block)) * wb - j0 * n_groups, sizes[block])
        keys = (groups_flat[pts, j0:] + rep[:, None]).ravel()             # (T * dd,)
        size = len(block) * wb
        cnt = np.bincount(keys, minlength=size).reshape(len(block), dd, n_groups)
        S = np.empty((len(block), dd, n_groups, c))
        W = stats[pts]
        for s in range(c):
            w = np.repeat(W[:, s], dd)
            S[..., s] = np.bincount(keys, weights=w, minlength=size).reshape(
                len(block), dd, n_groups)
        r, j, g = np.nonzero(cnt)
        same = (r[1:] == r[:-1]) & (j[1:] == j[:-1])
        if first_feature is not None:
            same &= j[:-1] + j0 >= first_feature[block][r[:-1]]
        nxt = np.flatnonzero(same)
        if len(nxt) == 0:
            continue
        C = np.cumsum(S, axis=2)
        rr, jl, aa = r[nxt], j[nxt], g[nxt]
        jj = jl + j0
        parts.append((block[rr], jj.astype(np.intp), aa.astype(np.intp), aa.astype(np.intp),
                      (g[nxt + 1] - 1).astype(np.intp)))
        prefixes.append(C[rr, jl, aa])
        if closures is not None:
            Gb = (groups_flat[pts] - np.arange(d) * n_groups).T.astype(np.int16)
            need_up, need_lo = _group_closure_preserving(
                Gb, sizes[block], closures[block],
                None if first_feature is None else first_feature[block])
            oks.append((aa >= need_up[rr, jj], g[nxt + 1] <= need_lo[rr, jj]))
    if not parts:
        empty = np.zeros(0, np.intp)
        none = None if closures is None else np.zeros(0, bool)
        return Refinements(empty, empty, empty, empty, empty, np.zeros((0, c)),
                           np.zeros(len(idxs), np.intp), none, none)
    node, feature, pos, a_up, a_lo = (np.concatenate(x) for x in zip(*parts, strict=True))
    prefix = np.concatenate(prefixes)
    srt = np.argsort(node, kind="stable")
    up_ok = lo_ok = None
    if closures is not None:
        up_ok = np.concatenate([u for u, _ in oks])[srt]
        lo_ok = np.concatenate([lo for _, lo in oks])[srt]
    return Refinements(node[srt], feature[srt], pos[srt], a_up[srt], a_lo[srt], prefix[srt],
                       np.bincount(node, minlength=len(idxs)).astype(np.intp), up_ok, lo_ok)
