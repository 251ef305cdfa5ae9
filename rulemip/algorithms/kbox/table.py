r"""The boxes of a short-rule language as bitsets over the grid cells
(docs/explanation/kbox_search.md §1).

A box restricts at most ``L`` features (``max_rule_length``), each to a run of
consecutive threshold groups ``[lo, hi]`` other than the whole line. Its cover is the set
of occupied cells inside it (docs/explanation/box_selection.md §1: every rule over the
candidate thresholds is constant on cells). The table holds one box per distinct cover —
the first met in order of fewest restricted features — with the sums the searches need:

* :math:`N_b = \sum_{c \in b} W_c`, the box's weight;
* :math:`S_b = \sum_{c \in b} W_c (\bar y_c - \bar y)` with an intercept (centred), or
  :math:`\sum_{c\in b} W_c \bar y_c` without;
* :math:`V_b = N_b (W - N_b)/W` (centred) or :math:`N_b`, the squared norm of the box's
  (centred) indicator column, and :math:`K_b = V_b + \lambda`.

Duplicates are found by a 64-bit hash of the cover and confirmed bit by bit, so two
different covers are never merged.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.kbox import table_kernel as kk
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.cells import CellReduction
from rulemip.formulations.sizes import kbox_table_bytes
from rulemip.rules.language import Language

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]



def pack_columns(member: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """Bitsets of the columns of a (cells × sets) membership matrix: one row of
    ⌈cells/64⌉ little-endian words per set."""
    n_cells, n_sets = member.shape
    nw = max((n_cells + 63) // 64, 1)
    padded = np.zeros((nw * 64, n_sets), dtype=bool)
    padded[:n_cells] = member
    packed = np.packbits(padded.T, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view(np.uint64).reshape(n_sets, nw)


@dataclass(frozen=True)
class FeatureIntervals:
    """The restricting intervals of every feature with distinct, proper covers."""

    bits: NDArray[np.uint64]  #: (intervals, words)
    offset: IntArray          #: first interval of feature j
    count: IntArray           #: number of intervals of feature j
    lo: IntArray              #: lowest group of the interval
    hi: IntArray              #: highest group of the interval
    all_mask: NDArray[np.uint64]  #: the occupied cells


def feature_intervals(groups: IntArray, n_groups: Sequence[int]) -> FeatureIntervals:
    """Runs of consecutive groups per feature covering some but not every cell, one per
    distinct cover (the shortest run kept)."""
    n_cells, d = groups.shape
    bits, lo, hi, offset, count = [], [], [], [], []
    start = 0
    for j in range(d):
        g = int(n_groups[j])
        a, b = np.triu_indices(g)
        member = (groups[:, j][:, None] >= a[None, :]) & (groups[:, j][:, None] <= b[None, :])
        n_in = member.sum(axis=0)
        proper = (n_in > 0) & (n_in < n_cells)
        idx = np.flatnonzero(proper)
        idx = idx[np.argsort(b[idx] - a[idx], kind="stable")]  # shortest run first
        packed = pack_columns(member[:, idx])
        _, first = np.unique(packed, axis=0, return_index=True)
        keep = idx[np.sort(first)]
        bits.append(pack_columns(member[:, keep]))
        lo.append(a[keep])
        hi.append(b[keep])
        offset.append(start)
        count.append(len(keep))
        start += len(keep)
    all_mask = pack_columns(np.ones((n_cells, 1), dtype=bool))[0]
    nw = len(all_mask)
    return FeatureIntervals(
        np.ascontiguousarray(np.concatenate(bits) if bits else np.zeros((0, nw), np.uint64)),
        np.asarray(offset, dtype=np.int64), np.asarray(count, dtype=np.int64),
        np.concatenate(lo).astype(np.int64) if lo else np.zeros(0, np.int64),
        np.concatenate(hi).astype(np.int64) if hi else np.zeros(0, np.int64), all_mask)


def feature_subsets(count: IntArray, max_len: int, with_empty: bool
                    ) -> tuple[IntArray, IntArray, IntArray]:
    """``(subsets, sizes, starts)``: the feature subsets of size ≤ ``max_len`` (size 0 only
    ``with_empty``) in order of size, padded with −1, and the first raw box of each
    (``starts[-1]`` raw boxes in all: the product of the interval counts per subset)."""
    feats = [j for j in range(len(count)) if count[j] > 0]
    width = max(max_len, 1)
    rows: list[tuple[int, ...]] = []
    for size in range(0 if with_empty else 1, max_len + 1):
        rows.extend(itertools.combinations(feats, size))
    subsets = np.full((len(rows), width), -1, dtype=np.int64)
    sizes = np.zeros(len(rows), dtype=np.int64)
    starts = np.zeros(len(rows) + 1, dtype=np.int64)
    for s, row in enumerate(rows):
        subsets[s, :len(row)] = row
        sizes[s] = len(row)
        starts[s + 1] = starts[s] + math.prod(int(count[f]) for f in row)
    return subsets, sizes, starts


def count_raw_boxes(count: IntArray, max_len: int, with_empty: bool) -> int:
    """Raw boxes of :func:`feature_subsets` (elementary symmetric sums, no listing)."""
    e = [1] + [0] * max_len
    for c in count:
        for t in range(max_len, 0, -1):
            e[t] += int(c) * e[t - 1]
    return sum(e[0 if with_empty else 1:])


@dataclass(frozen=True)
class BoxTable:
    """Distinct boxes of a language (module docstring).

    ``features[b]``, ``lo[b]``, ``hi[b]``: the restricted features of box b (−1 padded)
    with their group runs; ``slab[b]`` the same restrictions as rows of ``slabs`` (the
    bitsets of one feature's runs, weights ``slab_weight``); ``bits[b]`` its cover;
    ``N``, ``S``, ``V`` its sums.
    """

    bits: NDArray[np.uint64]
    features: IntArray
    lo: IntArray
    hi: IntArray
    slab: IntArray
    slabs: NDArray[np.uint64]
    slab_weight: FloatArray
    N: FloatArray
    S: FloatArray
    V: FloatArray
    n_raw: int
    centred: bool
    #: cell means :math:`\bar y_c`, and :math:`\sum_c W_c(\bar y_c - \bar y)^2` (or
    #: :math:`\sum_c W_c \bar y_c^2` without intercept): the risk of no rule, before the
    #: within-cell constant
    ybar: FloatArray
    base: float

    @property
    def n_boxes(self) -> int:
        return int(self.bits.shape[0])

    def bounds(self, b: int, thresholds: Sequence[FloatArray]) -> tuple[list[float],
                                                                         list[float]]:
        """``(lower, upper)`` cut-point values of box b per feature (±inf: unrestricted);
        group g of feature j is :math:`t_{j,g-1} < x_j \\le t_{j,g}`."""
        lower = [-math.inf] * len(thresholds)
        upper = [math.inf] * len(thresholds)
        for f, a, u in zip(self.features[b], self.lo[b], self.hi[b], strict=True):
            if f < 0:
                continue
            t = thresholds[f]
            lower[f] = float(t[a - 1]) if a > 0 else -math.inf
            upper[f] = float(t[u]) if u < len(t) else math.inf
        return lower, upper

    def find(self, cover: NDArray[np.bool_]) -> int:
        """Index of the box with this cover of the cells, or −1."""
        key = pack_columns(cover[:, None])[0]
        hit = np.flatnonzero((self.bits == key[None, :]).all(axis=1))
        return int(hit[0]) if len(hit) else -1


def language_size(cells: CellReduction, language: Language) -> tuple[int, FeatureIntervals]:
    """Raw boxes of ``language`` over ``cells`` (before duplicate covers are merged) and
    the intervals."""
    n_groups = [len(t) + 1 for t in cells.thresholds]
    iv = feature_intervals(cells.groups, n_groups)
    cap, d = language.max_rule_length, cells.groups.shape[1]
    L = d if cap is None else min(cap, d)
    return count_raw_boxes(iv.count, L, not language.fit_intercept), iv


def build_box_table(cells: CellReduction, language: Language, *,
                    max_bytes: int | None = None) -> BoxTable:
    """Every distinct box of ``language`` over ``cells`` — at most its
    ``max_rule_length`` restricted features; with its intercept, not the all-covering box
    (module docstring). Refused with :class:`~rulemip.exceptions.InvalidParameterError`
    when its worst-case memory (:func:`~rulemip.formulations.sizes.kbox_table_bytes`)
    exceeds ``max_bytes``."""
    d = cells.groups.shape[1]
    fit_intercept = language.fit_intercept
    L = d if language.max_rule_length is None else min(int(language.max_rule_length), d)
    n_raw, iv = language_size(cells, language)
    need = kbox_table_bytes(n_raw, cells.n_cells)
    if max_bytes is not None and need > max_bytes:
        raise InvalidParameterError(
            f"the k-box search would enumerate {n_raw:.3g} boxes "
            f"({need / 2**30:.3g} GiB at most, more than the "
            f"{max_bytes / 2**30:.3g} GiB allowed); use a smaller `max_rule_length` or "
            "`max_thresholds`, or engine='cg'.")
    subsets, sizes, starts = feature_subsets(iv.count, L, not fit_intercept)
    args = (iv.bits, iv.offset, iv.count, subsets, sizes, starts, iv.all_mask)
    h1, ok = kk.raw_hashes(*args, fit_intercept)
    kept = np.flatnonzero(ok)
    order = kept[np.argsort(h1[kept], kind="stable")]  # raw order within equal hashes
    del kept
    rep = kk.confirm_duplicates(*args, order, h1)
    del h1, ok
    raw = np.sort(order[rep])
    del order, rep
    bits = kk.box_bits(*args, raw)
    # decode raw indices into (feature, lo, hi) per restricted feature
    s = np.searchsorted(starts, raw, side="right") - 1
    r = raw - starts[s]
    width = subsets.shape[1]
    features = np.full((len(raw), width), -1, dtype=np.int64)
    lo = np.zeros((len(raw), width), dtype=np.int64)
    hi = np.zeros((len(raw), width), dtype=np.int64)
    slab = np.full((len(raw), width), -1, dtype=np.int64)
    for t in range(width):
        f = subsets[s, t]
        has = f >= 0
        c = np.where(has, iv.count[np.maximum(f, 0)], 1)
        i = r % c
        r = r // c
        row = iv.offset[np.maximum(f, 0)] + i
        features[:, t] = f
        slab[:, t] = np.where(has, row, -1)
        lo[:, t] = np.where(has, iv.lo[np.minimum(row, len(iv.lo) - 1)], 0)
        hi[:, t] = np.where(has, iv.hi[np.minimum(row, len(iv.hi) - 1)], 0)
    weight = cells.cell_weight
    ybar = np.bincount(cells.point_cell, weights=cells.weight * cells.y,
                       minlength=cells.n_cells) / np.where(weight > 0, weight, 1.0)
    W = float(weight.sum())
    centre = float(weight @ ybar) / W if fit_intercept else 0.0
    N, S = kk.box_stats(bits, weight, weight * (ybar - centre))
    V = N * (W - N) / W if fit_intercept else N.copy()
    slab_weight, _ = kk.box_stats(iv.bits, weight, weight)
    base = float(weight @ (ybar - centre) ** 2)
    return BoxTable(bits, features, lo, hi, slab, iv.bits, slab_weight, N, S, V, n_raw,
                    fit_intercept, ybar, base)
