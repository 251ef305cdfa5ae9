r"""Rule search: greedy, beam and branch-and-bound over boxes ([OGB] Algorithm 2, SPEC §1).

The query language: conjunctions of propositions ``x_j <= t`` and ``x_j > t`` with ``t``
among the candidate thresholds of feature ``j`` (:mod:`rulemip.data.thresholds`), i.e.
boxes ``lower_j < x_j <= upper_j``. Search is breadth first from the empty query; the
children of ``q`` are all refinements :math:`q' = q \cdot 1(s x_j \le s t)` that strictly
shrink the cover. Each level keeps the ``w`` best children by objective value:
``w = 1`` greedy, finite ``w`` beam, ``w = ∞`` branch-and-bound. A node is expanded only
when it is not redundant (its cover was not seen before — the covered index set is hashed)
and when ``bnd(q) > best``.

Implementation (all hot loops vectorized):

- Each feature is argsorted once per fit (:class:`SearchSpace`); the points of a cover
  in the order of feature ``j`` are obtained by filtering that order by the cover (or,
  for small covers, by sorting the covered indices by their precomputed ranks).
- All children of a node for all features and both directions come from one cumulative
  sum of the objective's additive statistics along those orders (the prefix value
  problem, :mod:`rulemip.boosting.objectives`): the ``x_j <= t`` child covering the first
  ``i`` points of the order has the prefix sum, the ``x_j > t`` child the complementary
  suffix sum. Only positions where the threshold group changes are children.
- Children are not materialized when generated: a child is (parent, feature, side,
  threshold index) plus its value and a cheap admissible bound; its cover is computed
  only when it is expanded, from the parent's cover in O(|parent|).
- The threshold of a refinement is the candidate cut point next to the covered points
  (``x_j <= t_a`` with ``a`` the largest covered group; ``x_j > t_{a-1}`` with ``a`` the
  smallest), so the box hugs the training cover.

Certification: the result is the exact maximizer over the query language (respecting
``max_rule_length``) only for branch-and-bound with an admissible bound (gs, gb, xgb);
``SearchResult.certified`` says so. ogb's prefix-greedy bound is a heuristic, so an ogb
branch-and-bound result is **not** certified.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice, check_positive_int
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
        """All single-proposition refinements of the cover ``idx`` that shrink it.

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


@dataclass
class _Children:
    parent: _Node
    feature: NDArray[np.int64]
    upper_side: NDArray[np.bool_]   # True: x_j <= t_a ; False: x_j > t_a
    a: NDArray[np.int64]
    value: FloatArray
    bound: FloatArray
    length: NDArray[np.int64]


def _expand(space: SearchSpace, obj: RoundObjective, node: _Node, max_len: int | None,
            tighten: bool) -> _Children | None:
    """Values (and cheap bounds) of all refinements of ``node`` — one cumsum per stat.

    With ``tighten=False`` a bound that is already present is not moved: such a child's
    cover is that of a box with the same propositions reached along another path, so
    complete searches (bnb) skip it without losing any cover.
    """
    m = len(node.idx)
    if m < 2:
        return None
    d = space.d
    mats = [obj.stats] + ([obj.bound_stats] if obj.bound_stats is not None else [])
    jj, a_up, a_lo, prefix = space.refinements(node.idx, mats)
    if len(jj) == 0:
        return None
    lo_free = node.box[:d] < 0
    hi_free = node.box[d:] < 0
    up = prefix[0]
    lo = obj.stats[node.idx].sum(axis=0) - up
    K = len(jj)
    feature = np.concatenate([jj, jj]).astype(np.int64)
    upper_side = np.concatenate([np.ones(K, bool), np.zeros(K, bool)])
    a = np.concatenate([a_up, a_lo]).astype(np.int64)
    length = node.length + np.concatenate([hi_free[jj], lo_free[jj]]).astype(np.int64)
    value = np.concatenate([obj.from_sums(up), obj.from_sums(lo)])
    if obj.bound_stats is not None:
        bu = prefix[1]
        bl = obj.bound_stats[node.idx].sum(axis=0) - bu
        bnd = np.concatenate([obj.bound_from_sums(bu), obj.bound_from_sums(bl)])
    else:
        bnd = np.full(2 * K, np.inf)
    ch = _Children(node, feature, upper_side, a, value, bnd, length)
    keep = np.ones(2 * K, dtype=bool)
    if max_len is not None:
        keep &= length <= max_len
    if not tighten:
        keep &= np.concatenate([hi_free[jj], lo_free[jj]])
    if not keep.all():
        ch = _select(ch, keep)
    return ch


def _select(ch: _Children, keep: Any) -> _Children:
    return _Children(ch.parent, ch.feature[keep], ch.upper_side[keep], ch.a[keep],
                     ch.value[keep], ch.bound[keep], ch.length[keep])


def _child_box(ch: _Children, k: int, d: int) -> NDArray[np.int64]:
    box = ch.parent.box.copy()
    j = int(ch.feature[k])
    box[j + d if ch.upper_side[k] else j] = ch.a[k]
    return box


def _materialize(space: SearchSpace, ch: _Children, k: int,
                 box: NDArray[np.int64] | None = None) -> _Node:
    p = ch.parent
    j, a = int(ch.feature[k]), int(ch.a[k])
    gj = space.groups_t[j, p.idx]
    idx = p.idx[gj <= a] if ch.upper_side[k] else p.idx[gj > a]
    if box is None:
        box = _child_box(ch, k, space.d)
    return _Node(idx, box, int(ch.length[k]), float(ch.value[k]))


def _key(idx: IntArray) -> bytes:
    return idx.tobytes()


def find_rule(space: SearchSpace, obj: RoundObjective, *, search: str = "bnb",
              beam_width: int = 5, max_rule_length: int | None = None,
              allow_empty: bool = False) -> SearchResult | None:
    """Maximize ``obj`` over the boxes of ``space`` ([OGB] Algorithm 2).

    Parameters
    ----------
    search : ``"greedy"`` (w = 1), ``"beam"`` (w = ``beam_width``) or ``"bnb"`` (w = ∞,
        branch-and-bound).
    max_rule_length : maximum number of propositions per rule (None = unlimited).
    allow_empty : the empty query (covering everything) is itself a candidate — the
        setting without an intercept (SPEC §0 ``fit_intercept=False``).

    Returns
    -------
    The best query, or ``None`` when no candidate exists (no thresholds and
    ``allow_empty=False``).
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
    level: Any = iter([root])
    while True:
        batches: list[_Children] = []
        for node in level:
            if node is not root and (
                    (not tighten and max_len is not None and node.length >= max_len)
                    or obj.bound(node.idx) <= state.best_val):
                continue
            ch = _expand(space, obj, node, max_len, tighten)
            state.n_expanded += 1
            if ch is None or len(ch.value) == 0:
                continue
            state.n_children += len(ch.value)
            k = int(np.argmax(ch.value))
            if ch.value[k] > state.best_val:
                state.best_val = float(ch.value[k])
                state.best = _materialize(space, ch, k)
            ch = _select(ch, ch.bound > state.best_val)
            if len(ch.value):
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
    order = np.argsort(-vals, kind="stable")
    seen_boxes: set[bytes] = set()  # same box => same cover; skips most duplicates cheaply
    taken = 0
    lens = np.concatenate([b.length for b in batches])
    for r in order:
        if width == math.inf and (bnds[r] <= state.best_val or lens[r] >= stop_len):
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
