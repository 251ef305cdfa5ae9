r"""Rule search: greedy, beam and branch-and-bound over boxes ([OGB] Algorithm 2, SPEC §1).

The query language: conjunctions of propositions ``x_j <= t`` and ``x_j > t`` with ``t``
among the candidate thresholds of feature ``j`` (:mod:`rulemip.data.thresholds`), i.e.
boxes ``lower_j < x_j <= upper_j``. Search is breadth first from the empty query; the
children of ``q`` are all refinements :math:`q' = q \cdot 1(s x_j \le s t)` that strictly
shrink the cover. Each level keeps the ``w`` best children by objective value:
``w = 1`` greedy, finite ``w`` beam, ``w = ∞`` branch-and-bound. A node is expanded only
when it is not redundant (its cover was not seen before — the covered index set is hashed)
and when ``bnd(q) > best``.

Implementation (all hot loops vectorized, nodes batched):

- Each feature is argsorted once per fit (:class:`SearchSpace`); the points of a cover
  in the order of feature ``j`` are obtained by filtering that order by a boolean mask of
  the cover — never by re-sorting.
- Nodes are taken from a level ``CHUNK`` at a time and handled in one batch
  (:mod:`rulemip.boosting.batch`): their prefix-greedy bounds (cumulative sums along the
  bound-key order, zero-padded per cover) and all their children for all features and
  both directions — per-group sums by ``bincount`` when every feature has few threshold
  groups (``GROUPED_MAX``), otherwise cumulative sums along the presorted feature orders,
  bitwise equal to the one-cover computation. The ``x_j <= t`` child covering the first
  ``i`` points of the order has the prefix sum, the ``x_j > t`` child the complementary
  suffix sum; only positions where the threshold group changes are children. The chunk
  is then scanned in level order with the sequential pruning rule (see
  :func:`find_rule`), so the batch changes the cost, not the nodes expanded.
- Children are not materialized when generated: a child is (parent, feature, side,
  threshold index) plus its value and a cheap admissible bound; its cover is computed
  only when it is taken from the next level, from the parent's cover in O(|parent|).
  Candidates of a level are filtered by length and sorted by value in one vectorized
  step.
- The threshold of a refinement is the candidate cut point next to the covered points
  (``x_j <= t_a`` with ``a`` the largest covered group; ``x_j > t_{a-1}`` with ``a`` the
  smallest), so the box hugs the training cover.

Certification: the result is the exact maximizer over the query language (respecting
``max_rule_length``) only for branch-and-bound with an admissible bound (gs, gb, xgb);
``SearchResult.certified`` says so. ogb's prefix-greedy bound is a heuristic, so an ogb
branch-and-bound result is **not** certified.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice, check_positive_int
from rulemip.boosting.batch import (
    Refinements,
    batch_greedy_bounds,
    batch_group_refinements,
    batch_refinements,
)
from rulemip.boosting.objectives import RoundObjective
from rulemip.data.thresholds import candidate_thresholds, threshold_groups

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

SEARCHES: tuple[str, ...] = ("greedy", "beam", "bnb")


@dataclass(frozen=True)
class SearchSpace:
    """Per-fit precomputation: thresholds, threshold groups, per-feature orders and ranks.

    Attributes
    ----------
    thresholds : list of d sorted arrays of cut points.
    groups_t : (d, n) threshold group of every point (``groups_t[j, i] = #{t < x_ij}``).
    orders : (d, n) argsort of each feature (stable).
    ranks : (n, d) position of point i in the order of feature j.
    """

    X: FloatArray
    thresholds: tuple[FloatArray, ...]
    groups_t: NDArray[np.int64]
    orders: IntArray
    ranks: IntArray
    gmax: int
    groups_flat: IntArray

    #: group-sum (one-hot matmul) path when every feature has at most this many groups
    GROUPED_MAX: int = 64

    @classmethod
    def build(cls, X: FloatArray, max_thresholds: int | None = None,
              thresholds: Any = None) -> SearchSpace:
        """``thresholds`` (one sorted array per feature) overrides ``max_thresholds``."""
        X = np.asarray(X, dtype=float)
        ths = (candidate_thresholds(X, max_thresholds) if thresholds is None
               else [np.unique(np.asarray(t, dtype=float)) for t in thresholds])
        G = threshold_groups(X, ths)
        orders = np.argsort(X, axis=0, kind="stable").T.astype(np.intp)
        n, d = X.shape
        ranks = np.empty((n, d), dtype=np.intp)
        for j in range(d):
            ranks[orders[j], j] = np.arange(n)
        gmax = max(len(t) for t in ths) + 1
        flat = np.ascontiguousarray(G + gmax * np.arange(d)[None, :], dtype=np.intp)
        return cls(X, tuple(ths), np.ascontiguousarray(G.T), np.ascontiguousarray(orders),
                   ranks, gmax, flat)

    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    def sorted_covers(self, idx: IntArray) -> IntArray:
        """(d, m): the covered indices ``idx`` in the order of every feature."""
        m, n, d = len(idx), self.n, self.d
        if 8 * m >= n:
            mask = np.zeros(n, dtype=bool)
            mask[idx] = True
            return np.asarray(self.orders[mask[self.orders]].reshape(d, m), dtype=np.intp)
        pos = np.argsort(self.ranks[idx], axis=0)
        return np.ascontiguousarray(idx[pos].T)

    def refinements(self, idx: IntArray, mats: list[FloatArray]
                    ) -> tuple[IntArray, IntArray, IntArray, list[FloatArray]]:
        """All single-proposition refinements of the cover ``idx`` that shrink it (one
        cover at a time: the reference for the batched
        :func:`rulemip.boosting.batch.batch_refinements` used by the search).

        Returns ``(feature, a_up, a_lo, prefix)``: refinement ``k`` is ``x_j <= t[a_up]``
        (cover: the points of the groups ``<= a_up``) or ``x_j > t[a_lo]`` (the other
        points); ``prefix[s][k]`` is the sum of the rows of ``mats[s]`` over the first of
        these two covers (the second's is the total minus it). Few groups: group sums by a
        one-hot matrix product; many: cumulative sums along the presorted orders.
        """
        m, d = len(idx), self.d
        if self.gmax <= self.GROUPED_MAX and m * d * self.gmax <= 2_000_000:
            gi = self.groups_flat[idx]                                   # (m, d)
            E = np.zeros((m, d * self.gmax))
            E[np.arange(m)[:, None], gi] = 1.0
            cnt = np.bincount(gi.ravel(), minlength=d * self.gmax).reshape(d, self.gmax)
            oj, oa = np.nonzero(cnt)
            k = np.flatnonzero(oj[1:] == oj[:-1])
            jj, a_up, a_lo = oj[k], oa[k], oa[k + 1] - 1
            prefix = []
            for M in mats:
                C = np.cumsum((E.T @ M[idx]).reshape(d, self.gmax, M.shape[1]), axis=1)
                prefix.append(C[jj, a_up])
            return jj, a_up, a_lo, prefix
        subs = self.sorted_covers(idx)                                   # (d, m)
        grp = np.take_along_axis(self.groups_t, subs, axis=1)            # non-decreasing
        jj, pp = np.nonzero(grp[:, 1:] != grp[:, :-1])
        prefix = [np.cumsum(M[subs], axis=1)[jj, pp] for M in mats]
        return jj, grp[jj, pp], grp[jj, pp + 1] - 1, prefix

    def box(self, lo_a: NDArray[np.int64], hi_a: NDArray[np.int64]
            ) -> tuple[FloatArray, FloatArray]:
        """Threshold indices (-1 = none) to float bounds ``lower < x <= upper``."""
        lower = np.array([self.thresholds[j][a] if a >= 0 else -math.inf
                          for j, a in enumerate(lo_a)], dtype=float)
        upper = np.array([self.thresholds[j][a] if a >= 0 else math.inf
                          for j, a in enumerate(hi_a)], dtype=float)
        return lower, upper


@dataclass(frozen=True)
class SearchResult:
    """The best query found.

    Attributes
    ----------
    lower, upper : (d,) box ``lower_j < x_j <= upper_j`` (±inf where unrestricted); the
        finite bounds are candidate thresholds.
    query : (n,) boolean query vector on the training data.
    value : its objective value.
    length : number of propositions (finite bounds).
    certified : True only for branch-and-bound with an admissible bound: ``value`` is then
        the maximum over the query language (ogb: always False — heuristic bound).
    n_expanded, n_children : nodes expanded and children evaluated (search effort).
    """

    lower: FloatArray
    upper: FloatArray
    query: NDArray[np.bool_]
    value: float
    length: int
    certified: bool
    n_expanded: int
    n_children: int


@dataclass
class _Node:
    idx: IntArray               # covered points, sorted ascending
    box: NDArray[np.int64]      # (2d,) threshold index of lower (first d) / upper bounds
    length: int
    value: float
    cheap: float = math.inf     # cheap admissible bound of the cover (inf: none)


@dataclass
class _Children:
    """The children of a batch of expanded nodes (child ``k`` refines
    ``parents[parent[k]]``), in expansion order: node by node, for each node its
    ``x_j <= t`` children by (feature, position), then its ``x_j > t`` children."""

    parents: list[_Node]
    parent: IntArray
    feature: NDArray[np.int64]
    upper_side: NDArray[np.bool_]   # True: x_j <= t_a ; False: x_j > t_a
    a: NDArray[np.int64]
    value: FloatArray
    bound: FloatArray
    length: NDArray[np.int64]


def _select(ch: _Children, keep: Any) -> _Children:
    return _Children(ch.parents, ch.parent[keep], ch.feature[keep], ch.upper_side[keep],
                     ch.a[keep], ch.value[keep], ch.bound[keep], ch.length[keep])


def _expand(space: SearchSpace, obj: RoundObjective, kernel: _Kernel, nodes: list[_Node],
            max_len: int | None, tighten: bool) -> _Children:
    """Values (and cheap bounds) of all refinements of all ``nodes`` from the batched
    prefix sums of ``kernel`` (:mod:`rulemip.boosting.batch`).

    With ``tighten=False`` a bound that is already present is not moved: such a child's
    cover is that of a box with the same propositions reached along another path, so
    complete searches (bnb) skip it without losing any cover.
    """
    d = space.d
    cs = obj.stats.shape[1]
    ref = kernel([nd.idx for nd in nodes])
    K = len(ref.node)
    starts = np.cumsum(ref.counts) - ref.counts
    slot_up = np.arange(K) + starts[ref.node]          # node-major: ups, then lows
    slot_lo = slot_up + ref.counts[ref.node]
    parent = np.empty(2 * K, np.intp)
    parent[slot_up] = ref.node
    parent[slot_lo] = ref.node
    feature = np.empty(2 * K, np.int64)
    feature[slot_up] = ref.feature
    feature[slot_lo] = ref.feature
    upper_side = np.zeros(2 * K, bool)
    upper_side[slot_up] = True
    a = np.empty(2 * K, np.int64)
    a[slot_up] = ref.a_up
    a[slot_lo] = ref.a_lo
    boxes = np.array([nd.box for nd in nodes], dtype=np.int64).reshape(len(nodes), 2 * d)
    free = np.where(upper_side, boxes[parent, d + feature], boxes[parent, feature]) < 0
    length = np.array([nd.length for nd in nodes], np.int64)[parent] + free
    sums = np.empty((2 * K, cs))
    sums[slot_up] = ref.prefix[:, :cs]
    tot = np.array([obj.stats[nd.idx].sum(axis=0) for nd in nodes]).reshape(len(nodes), cs)
    sums[slot_lo] = tot[ref.node] - ref.prefix[:, :cs]
    value = obj.from_sums(sums)
    if obj.bound_stats is not None:
        cb = obj.bound_stats.shape[1]
        bsum = np.empty((2 * K, cb))
        bsum[slot_up] = ref.prefix[:, cs:]
        btot = np.array([obj.bound_stats[nd.idx].sum(axis=0) for nd in nodes]
                        ).reshape(len(nodes), cb)
        bsum[slot_lo] = btot[ref.node] - ref.prefix[:, cs:]
        bnd = obj.bound_from_sums(bsum)
    else:
        bnd = np.full(2 * K, np.inf)
    ch = _Children(nodes, parent, feature, upper_side, a, value, bnd, length)
    keep = np.ones(2 * K, dtype=bool)
    if max_len is not None:
        keep &= length <= max_len
    if not tighten:
        keep &= free
    if not keep.all():
        ch = _select(ch, keep)
    return ch


def _child_box(ch: _Children, k: int, d: int) -> NDArray[np.int64]:
    box = ch.parents[int(ch.parent[k])].box.copy()
    j = int(ch.feature[k])
    box[j + d if ch.upper_side[k] else j] = ch.a[k]
    return box


def _materialize(space: SearchSpace, ch: _Children, k: int,
                 box: NDArray[np.int64] | None = None) -> _Node:
    p = ch.parents[int(ch.parent[k])]
    j, a = int(ch.feature[k]), int(ch.a[k])
    gj = space.groups_t[j, p.idx]
    idx = p.idx[gj <= a] if ch.upper_side[k] else p.idx[gj > a]
    if box is None:
        box = _child_box(ch, k, space.d)
    return _Node(idx, box, int(ch.length[k]), float(ch.value[k]), float(ch.bound[k]))


def _key(idx: IntArray) -> bytes:
    return idx.tobytes()


#: nodes taken from a level at a time (their bounds and children are computed batched)
CHUNK: int = 128
#: per-group sums (bincount) when every feature has at most this many threshold groups
GROUPED_MAX: int = 64

_Kernel = Callable[[list[IntArray]], Refinements]


def _make_kernel(space: SearchSpace, obj: RoundObjective, grouped: bool | None = None
                 ) -> _Kernel:
    """Prefix sums of ``[stats | bound_stats]`` for the refinements of a batch of covers:
    per-group sums (few thresholds) or cumulative sums along the presorted feature orders
    (bitwise equal to the one-cover computation). ``grouped`` forces the choice (None:
    grouped iff at most ``GROUPED_MAX`` groups per feature)."""
    mats = obj.stats if obj.bound_stats is None else np.hstack([obj.stats, obj.bound_stats])
    if grouped is None:
        grouped = space.gmax <= GROUPED_MAX
    if grouped:
        return lambda idxs: batch_group_refinements(space.groups_flat, space.d, space.gmax,
                                                    idxs, mats)
    return lambda idxs: batch_refinements(space.orders, space.groups_t, idxs, mats)


def _bounds(obj: RoundObjective, nodes: list[_Node]) -> FloatArray:
    """``obj.bound`` of every node's cover (batched prefix greedy; exactly equal)."""
    if obj.bound_key is None:
        return np.array([obj.bound(nd.idx) for nd in nodes], dtype=float)
    assert obj._key_order is not None
    return batch_greedy_bounds(obj._key_order, [nd.idx for nd in nodes], obj.stats,
                               obj.from_sums)


def find_rule(space: SearchSpace, obj: RoundObjective, *, search: str = "bnb",
              beam_width: int = 5, max_rule_length: int | None = None,
              allow_empty: bool = False, grouped: bool | None = None) -> SearchResult | None:
    """Maximize ``obj`` over the boxes of ``space`` ([OGB] Algorithm 2).

    Parameters
    ----------
    search : ``"greedy"`` (w = 1), ``"beam"`` (w = ``beam_width``) or ``"bnb"`` (w = ∞,
        branch-and-bound).
    max_rule_length : maximum number of propositions per rule (None = unlimited).
    allow_empty : the empty query (covering everything) is itself a candidate — the
        setting without an intercept (SPEC §0 ``fit_intercept=False``).
    grouped : force (True) or forbid (False) the per-group (bincount) path for the
        children's prefix sums; None chooses by size (few thresholds: grouped). The two
        paths differ only by floating-point rounding.

    Returns
    -------
    The best query, or ``None`` when no candidate exists (no thresholds and
    ``allow_empty=False``).

    Notes
    -----
    Nodes are taken from a level ``CHUNK`` at a time; their bounds and children are
    computed in one batch, then the chunk is scanned in level order with exactly the
    sequential rule: a node is expanded iff its cheap bound (bnb) and its bound exceed
    the incumbent *as updated by the nodes before it*, and the incumbent is updated by
    each expanded node's best child. The batch only saves interpreter overhead; the nodes
    expanded and the query returned are those of the one-node-at-a-time search.
    """
    check_choice(search, "search", SEARCHES)
    width: float = math.inf
    if search != "bnb":
        width = 1.0 if search == "greedy" else float(check_positive_int(beam_width, "beam_width")
                                                     or 1)
    max_len = check_positive_int(max_rule_length, "max_rule_length", allow_none=True)
    d, n = space.d, space.n
    root = _Node(np.arange(n, dtype=np.intp), np.full(2 * d, -1, np.int64), 0,
                 obj.value(np.arange(n, dtype=np.intp)) if allow_empty else -np.inf)
    tighten = search != "bnb"
    state = _State(root if allow_empty else None, float(root.value))
    seen: set[bytes] = {_key(root.idx)}
    level: Iterator[_Node] = iter([root])
    kernel = _make_kernel(space, obj, grouped)
    while True:
        batches: list[_Children] = []
        while True:
            chunk = list(itertools.islice(level, CHUNK))
            if not chunk:
                break
            ch = _scan(space, obj, kernel, chunk, root, state, max_len, tighten)
            if ch is not None and len(ch.value):
                batches.append(ch)
        if not batches:
            break
        level = _next_level(space, batches, width, state, seen,
                            math.inf if (tighten or max_len is None) else max_len)
    best, best_val = state.best, state.best_val
    if best is None:
        return None
    lower, upper = space.box(best.box[:d], best.box[d:])
    q = np.zeros(n, dtype=bool)
    q[best.idx] = True
    return SearchResult(lower, upper, q, float(best_val), int(best.length),
                        bool(search == "bnb" and obj.admissible), state.n_expanded,
                        state.n_children)


@dataclass
class _State:
    best: _Node | None
    best_val: float
    n_expanded: int = 0
    n_children: int = 0


def _scan(space: SearchSpace, obj: RoundObjective, kernel: _Kernel, chunk: list[_Node],
          root: _Node, state: _State, max_len: int | None, tighten: bool) -> _Children | None:
    """Expand the nodes of ``chunk`` in order (see :func:`find_rule`, Notes); returns the
    children that survive their cheap bound against the incumbent after their parent."""
    complete = not tighten
    inner = [nd for nd in chunk if nd is not root]
    bnd = dict(zip((id(nd) for nd in inner), _bounds(obj, inner).tolist(), strict=True)) \
        if inner else {}
    best0 = state.best_val

    def pruned(nd: _Node, best: float) -> bool:
        if nd is root:
            return False
        if complete and (nd.cheap <= best or (max_len is not None and nd.length >= max_len)):
            return True
        return bnd[id(nd)] <= best

    live = [nd for nd in chunk if not pruned(nd, best0)]
    if not live:
        return None
    ch = _expand(space, obj, kernel, live, max_len, tighten)
    counts = np.bincount(ch.parent, minlength=len(live))
    ends = np.cumsum(counts)
    seg_max = np.full(len(live), -np.inf)
    nz = counts > 0
    if nz.any():
        seg_max[nz] = np.maximum.reduceat(ch.value, (ends - counts)[nz])
    thr = np.full(len(live), np.inf)
    for b, nd in enumerate(live):
        if pruned(nd, state.best_val):
            continue
        state.n_expanded += 1
        if counts[b] == 0:
            continue
        state.n_children += int(counts[b])
        if seg_max[b] > state.best_val:
            s = int(ends[b] - counts[b])
            k = s + int(np.argmax(ch.value[s:ends[b]]))
            state.best_val = float(ch.value[k])
            state.best = _materialize(space, ch, k)
        thr[b] = state.best_val
    return _select(ch, ch.bound > thr[ch.parent])


def _next_level(space: SearchSpace, batches: list[_Children], width: float, state: _State,
                seen: set[bytes], stop_len: float) -> Iterator[_Node]:
    """Yield the next level lazily, children in order of decreasing value: beam — the
    best ``width`` distinct covers; bnb — every distinct cover whose cheap bound still
    beats the incumbent at the time it is reached (covers are computed only then) and
    that can still be refined (length below ``stop_len``; without tightening, a node of
    maximal length has no children, and its value was counted when it was generated)."""
    b_id = np.concatenate([np.full(len(b.value), i) for i, b in enumerate(batches)])
    pos = np.concatenate([np.arange(len(b.value)) for b in batches])
    vals = np.concatenate([b.value for b in batches])
    bnds = np.concatenate([b.bound for b in batches])
    lens = np.concatenate([b.length for b in batches])
    complete = width == math.inf
    # candidates in order of decreasing value (stable); the length test is static, so it
    # is applied to the whole level at once
    cand = np.flatnonzero(lens < stop_len) if complete else np.arange(len(vals))
    order = cand[np.argsort(-vals[cand], kind="stable")]
    seen_boxes: set[bytes] = set()  # same box => same cover; skips most duplicates cheaply
    taken = 0
    for r in (order.tolist() if complete else order):
        if complete and bnds[r] <= state.best_val:
            continue
        ch, k = batches[int(b_id[r])], int(pos[r])
        box = _child_box(ch, k, space.d)
        bkey = box.tobytes()
        if bkey in seen_boxes:
            continue
        seen_boxes.add(bkey)
        node = _materialize(space, ch, k, box)
        key = _key(node.idx)
        if key in seen:
            continue
        seen.add(key)
        yield node
        taken += 1
        if taken >= width:
            return
