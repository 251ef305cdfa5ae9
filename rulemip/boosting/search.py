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

    @classmethod
    def build(cls, X: FloatArray, max_thresholds: int | None = None) -> SearchSpace:
        X = np.asarray(X, dtype=float)
        ths = candidate_thresholds(X, max_thresholds)
        G = threshold_groups(X, ths)
        orders = np.argsort(X, axis=0, kind="stable").T.astype(np.intp)
        n, d = X.shape
        ranks = np.empty((n, d), dtype=np.intp)
        for j in range(d):
            ranks[orders[j], j] = np.arange(n)
        # points with equal x share a group; sort ties by group is implied by sorting by x
        return cls(X, tuple(ths), np.ascontiguousarray(G.T), np.ascontiguousarray(orders),
                   ranks)

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
    lo_a: NDArray[np.int64]     # lower threshold index per feature (-1 none)
    hi_a: NDArray[np.int64]     # upper threshold index per feature (-1 none)
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


def _expand(space: SearchSpace, obj: RoundObjective, node: _Node,
            max_len: int | None) -> _Children | None:
    """Values (and cheap bounds) of all refinements of ``node`` — one cumsum per stat."""
    m = len(node.idx)
    if m < 2:
        return None
    subs = space.sorted_covers(node.idx)                     # (d, m)
    grp = np.take_along_axis(space.groups_t, subs, axis=1)   # (d, m), non-decreasing
    jj, pp = np.nonzero(grp[:, 1:] != grp[:, :-1])
    if len(jj) == 0:
        return None
    C = np.cumsum(obj.stats[subs], axis=1)                   # (d, m, c)
    up = C[jj, pp]
    lo = C[jj, -1] - up
    a_up = grp[jj, pp]
    a_lo = grp[jj, pp + 1] - 1
    len_up = node.length + (node.hi_a[jj] < 0)
    len_lo = node.length + (node.lo_a[jj] < 0)
    if obj.bound_stats is not None:
        B = np.cumsum(obj.bound_stats[subs], axis=1)
        bu = B[jj, pp]
        bl = B[jj, -1] - bu
        bnd = np.concatenate([obj.bound_from_sums(bu), obj.bound_from_sums(bl)])
    else:
        bnd = np.full(2 * len(jj), np.inf)
    ch = _Children(node, np.concatenate([jj, jj]).astype(np.int64),
                   np.concatenate([np.ones(len(jj), bool), np.zeros(len(jj), bool)]),
                   np.concatenate([a_up, a_lo]).astype(np.int64),
                   np.concatenate([obj.from_sums(up), obj.from_sums(lo)]), bnd,
                   np.concatenate([len_up, len_lo]).astype(np.int64))
    if max_len is not None:
        keep = ch.length <= max_len
        if not keep.all():
            ch = _select(ch, keep)
    return ch


def _select(ch: _Children, keep: Any) -> _Children:
    return _Children(ch.parent, ch.feature[keep], ch.upper_side[keep], ch.a[keep],
                     ch.value[keep], ch.bound[keep], ch.length[keep])


def _materialize(space: SearchSpace, ch: _Children, k: int) -> _Node:
    p = ch.parent
    j, a = int(ch.feature[k]), int(ch.a[k])
    gj = space.groups_t[j, p.idx]
    lo_a, hi_a = p.lo_a, p.hi_a
    if ch.upper_side[k]:
        idx = p.idx[gj <= a]
        hi_a = hi_a.copy()
        hi_a[j] = a
    else:
        idx = p.idx[gj > a]
        lo_a = lo_a.copy()
        lo_a[j] = a
    return _Node(idx, lo_a, hi_a, int(ch.length[k]), float(ch.value[k]))


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
    width = math.inf if search == "bnb" else (1 if search == "greedy"
                                               else check_positive_int(beam_width, "beam_width"))
    max_len = check_positive_int(max_rule_length, "max_rule_length", allow_none=True)
    d, n = space.d, space.n
    root = _Node(np.arange(n, dtype=np.intp), np.full(d, -1, np.int64),
                 np.full(d, -1, np.int64), 0, obj.value(slice(None)) if allow_empty else -np.inf)
    state = _State(root if allow_empty else None, float(root.value))
    seen: set[bytes] = {_key(root.idx)}
    level: Any = iter([root])
    while True:
        batches: list[_Children] = []
        for node in level:
            if node is not root and obj.bound(node.idx) <= state.best_val:
                continue
            ch = _expand(space, obj, node, max_len)
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
        level = _next_level(space, batches, width, state, seen)
    best, best_val = state.best, state.best_val
    if best is None:
        return None
    lower, upper = space.box(best.lo_a, best.hi_a)
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
                seen: set[bytes]) -> Iterator[_Node]:
    """Yield the next level lazily, children in order of decreasing value: beam — the
    best ``width`` distinct covers; bnb — every distinct cover whose cheap bound still
    beats the incumbent at the time it is reached (covers are computed only then)."""
    b_id = np.concatenate([np.full(len(b.value), i) for i, b in enumerate(batches)])
    pos = np.concatenate([np.arange(len(b.value)) for b in batches])
    vals = np.concatenate([b.value for b in batches])
    bnds = np.concatenate([b.bound for b in batches])
    order = np.argsort(-vals, kind="stable")
    taken = 0
    for r in order:
        if width == math.inf and bnds[r] <= state.best_val:
            continue
        node = _materialize(space, batches[int(b_id[r])], int(pos[r]))
        key = _key(node.idx)
        if key in seen:
            continue
        seen.add(key)
        yield node
        taken += 1
        if taken >= width:
            return
