r"""Search space and node primitives shared by the rule searches ([OGB] Algorithm 2).

- :class:`SearchSpace`: per-fit precomputation (thresholds, threshold groups, per-feature
  orders and ranks) of the query language — conjunctions of ``x_j <= t`` and ``x_j > t``,
  i.e. boxes ``lower_j < x_j <= upper_j`` with candidate thresholds ``t``;
- :class:`SearchResult`: the best query with its certificate (best value, valid upper
  bound on every query of the language, status);
- nodes and their children: a child is (parent, feature, side, threshold index) plus its
  value and a cheap admissible bound, computed in batches from prefix sums
  (:mod:`rulemip.boosting.batch`); its cover is materialized only when it is expanded,
  from the parent's cover in O(|parent|).

The threshold of a refinement is the candidate cut point next to the covered points
(``x_j <= t_a`` with ``a`` the largest covered group; ``x_j > t_{a-1}`` with ``a`` the
smallest), so the box hugs the training cover and every child strictly shrinks it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

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

#: spaces kept by :meth:`SearchSpace.build` (digest of the data and thresholds, space)
_CACHE: list[tuple[bytes, Any]] = []
_CACHE_SIZE = 2


def _space_key(X: FloatArray, thresholds: list[FloatArray]) -> bytes:
    """A digest of ``X`` (shape and values) and the thresholds: the space's identity."""
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(X.shape).encode())
    h.update(np.ascontiguousarray(X).view(np.uint8).data)
    for t in thresholds:
        h.update(repr(t.shape).encode())
        h.update(np.ascontiguousarray(t, dtype=float).view(np.uint8).data)
    return h.digest()


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
        """``thresholds`` (one sorted array per feature) overrides ``max_thresholds``.

        The last :data:`_CACHE_SIZE` spaces are kept by the digest of ``X`` and the
        thresholds (their arrays read-only): a fit builds the same space in up to six
        phases (boosting starts, the local phase, column generation), 0.45 s each on
        100 000 × 20 — time past a budget no phase could check (issue 38, item 8)."""
        X = np.asarray(X, dtype=float)
        ths = (candidate_thresholds(X, max_thresholds) if thresholds is None
               else [np.unique(np.asarray(t, dtype=float)) for t in thresholds])
        key = _space_key(X, ths)
        for k, space in _CACHE:
            if k == key:
                return space
        # a copy: the cached space must not change with the caller's array
        space = cls._build(np.array(X, dtype=float, copy=True), ths)
        for arr in (space.X, space.groups_t, space.orders, space.ranks, space.groups_flat,
                    *space.thresholds):
            arr.setflags(write=False)
        _CACHE.insert(0, (key, space))
        del _CACHE[_CACHE_SIZE:]
        return space

    @classmethod
    def _build(cls, X: FloatArray, ths: list[FloatArray]) -> SearchSpace:
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


#: statuses of a search result: how much of the language the value is proved for
STATUSES: tuple[str, ...] = ("optimal", "heuristic", "time_limit", "node_limit",
                             "memory_limit")


@dataclass(frozen=True)
class SearchResult:
    """The best query found, with its certificate.

    Attributes
    ----------
    lower, upper : (d,) box ``lower_j < x_j <= upper_j`` (±inf where unrestricted); the
        finite bounds are candidate thresholds.
    query : (n,) boolean query vector on the training data.
    value : its objective value (the best found).
    length : number of propositions (finite bounds; :attr:`n_features` counts the
        restricted features, the meaning of ``max_rule_length``).
    certified : ``value`` is proved to be the maximum over the query language (respecting
        ``max_rule_length`` and ``max_propositions``): ``bound <= value`` up to rounding.
    n_expanded, n_children : nodes expanded and children evaluated (search effort).
    bound : a valid upper bound on the objective of **every** query of the language —
        the best value found and the admissible bounds of everything left unexplored
        (``inf`` when nothing is known). ``bound - value`` is how far from exact a stopped
        or heuristic search is.
    status : ``"optimal"`` (certified), ``"heuristic"`` (complete with respect to a
        search that is not exact: greedy, beam, or branch-and-bound with ogb's heuristic
        prefix bound), or the limit that stopped branch-and-bound: ``"time_limit"``,
        ``"work_limit"`` (the budget's deterministic work limit), ``"node_limit"``,
        ``"memory_limit"``.
    elapsed : wall seconds spent in the search.
    peak_frontier_bytes : the largest size of the open-node store (branch-and-bound).
    """

    lower: FloatArray
    upper: FloatArray
    query: NDArray[np.bool_]
    value: float
    length: int
    certified: bool
    n_expanded: int
    n_children: int
    bound: float = math.inf
    status: str = "heuristic"
    elapsed: float = 0.0
    peak_frontier_bytes: int = 0

    @property
    def gap(self) -> float:
        """``bound - value`` (0 when certified; ``inf`` when no bound is known)."""
        return max(0.0, self.bound - self.value)

    @property
    def n_features(self) -> int:
        """Restricted features (a two-sided interval is one)."""
        return int((np.isfinite(self.lower) | np.isfinite(self.upper)).sum())

    @property
    def limit_reached(self) -> bool:
        """True when a time, node or memory limit stopped the search."""
        return self.status.endswith("_limit")


@dataclass(frozen=True)
class LengthCap:
    """The length caps of the rule language: at most ``features`` restricted features
    (``max_rule_length``: a two-sided interval ``a < x_j <= b`` is one feature, as rules
    are printed) and at most ``propositions`` finite bounds (``max_propositions``: the
    interval is two); ``None``: no cap. Both hold when both are set."""

    features: int | None = None
    propositions: int | None = None

    @property
    def unlimited(self) -> bool:
        return self.features is None and self.propositions is None

    def allows(self, n_features: NDArray[np.int64], n_props: NDArray[np.int64]
               ) -> NDArray[np.bool_]:
        """Which boxes of these lengths are in the language."""
        ok = np.ones(np.shape(n_props), dtype=bool)
        if self.features is not None:
            ok &= n_features <= self.features
        if self.propositions is not None:
            ok &= n_props <= self.propositions
        return ok

    def at_cap(self, n_features: NDArray[np.int64], n_props: NDArray[np.int64]
               ) -> NDArray[np.bool_]:
        """Boxes some of whose refinements the caps exclude (a new feature, or any new
        proposition)."""
        hit = np.zeros(np.shape(n_props), dtype=bool)
        if self.features is not None:
            hit |= n_features >= self.features
        if self.propositions is not None:
            hit |= n_props >= self.propositions
        return hit

    def expandable(self, n_features: NDArray[np.int64], n_props: NDArray[np.int64]
                   ) -> NDArray[np.bool_]:
        """Boxes that may still have a refinement in the language (a box at the feature
        cap may still bound its restricted features from the other side)."""
        ok = np.ones(np.shape(n_props), dtype=bool)
        if self.features is not None:
            ok &= n_features <= self.features
        if self.propositions is not None:
            ok &= n_props < self.propositions
        return ok


@dataclass
class _Node:
    idx: IntArray               # covered points, sorted ascending
    box: NDArray[np.int64]      # (2d,) threshold index of lower (first d) / upper bounds
    length: int
    value: float
    cheap: float = math.inf     # cheap admissible bound of the cover (inf: none)
    last: int = -1              # largest slot set (canonical order of branch-and-bound)
    closure: NDArray[np.int64] | None = None  # (2, d) min / max threshold group of the cover


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
    length: NDArray[np.int64]       # propositions
    n_features: NDArray[np.int64]   # restricted features


def _select(ch: _Children, keep: Any) -> _Children:
    return _Children(ch.parents, ch.parent[keep], ch.feature[keep], ch.upper_side[keep],
                     ch.a[keep], ch.value[keep], ch.bound[keep], ch.length[keep],
                     ch.n_features[keep])


def _cover_sums(stats: FloatArray, nodes: list[_Node]) -> FloatArray:
    """(len(nodes), c): the sum of ``stats`` over every node's cover (one ``reduceat``;
    covers are non-empty)."""
    sizes = np.fromiter((len(nd.idx) for nd in nodes), dtype=np.intp, count=len(nodes))
    cat = np.concatenate([nd.idx for nd in nodes])
    return np.add.reduceat(stats[cat], np.cumsum(sizes) - sizes, axis=0)


def _expand(space: SearchSpace, obj: RoundObjective, kernel: _Kernel, nodes: list[_Node],
            max_len: LengthCap | None, tighten: bool, canonical: bool = False,
            window: tuple[int, int] | None = None) -> _Children:
    """Values (and cheap bounds) of all refinements of all ``nodes`` from the batched
    prefix sums of ``kernel`` (:mod:`rulemip.boosting.batch`).

    With ``tighten=False`` a bound that is already present is not moved: such a child's
    cover is that of a box with the same propositions reached along another path, so
    complete searches skip it without losing any cover. With ``canonical=True`` a node
    is refined only in the slots (``2 j`` lower bound, ``2 j + 1`` upper bound of
    feature ``j``) after the last slot it set, so every box is generated exactly once
    (the set-enumeration tree of the branch-and-bound, :mod:`rulemip.boosting.bnb`).
    ``window=(j0, j1)``: only the refinements in features ``j0 <= j < j1``
    (:func:`expand_in_windows`).
    """
    d = space.d
    cs = obj.stats.shape[1]
    first = np.array([(nd.last + 1) // 2 for nd in nodes], np.intp) if canonical else None
    closures = None
    if canonical and all(nd.closure is not None for nd in nodes):
        closures = np.stack([nd.closure for nd in nodes])   # type: ignore[misc]
    ref = kernel([nd.idx for nd in nodes], first, closures, window)
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
    new_feature = (boxes[parent, feature] < 0) & (boxes[parent, d + feature] < 0)
    node_features = ((boxes[:, :d] >= 0) | (boxes[:, d:] >= 0)).sum(axis=1)
    n_features = node_features.astype(np.int64)[parent] + new_feature
    sums = np.empty((2 * K, cs))
    sums[slot_up] = ref.prefix[:, :cs]
    tot = _cover_sums(obj.stats, nodes)
    sums[slot_lo] = tot[ref.node] - ref.prefix[:, :cs]
    value = obj.from_sums(sums)
    if obj.bound_stats is not None:
        cb = obj.bound_stats.shape[1]
        bsum = np.empty((2 * K, cb))
        bsum[slot_up] = ref.prefix[:, cs:]
        btot = _cover_sums(obj.bound_stats, nodes)
        bsum[slot_lo] = btot[ref.node] - ref.prefix[:, cs:]
        bnd = obj.bound_from_sums(bsum)
    else:
        bnd = np.full(2 * K, np.inf)
    ch = _Children(nodes, parent, feature, upper_side, a, value, bnd, length, n_features)
    keep = np.ones(2 * K, dtype=bool)
    if max_len is not None:
        keep &= max_len.allows(n_features, length)
    if not tighten:
        keep &= free
    if canonical:
        last = np.array([nd.last for nd in nodes], np.int64)
        keep &= 2 * feature + upper_side > last[parent]
    if ref.up_ok is not None and ref.lo_ok is not None:
        ok = np.empty(2 * K, bool)
        ok[slot_up] = ref.up_ok
        ok[slot_lo] = ref.lo_ok
        keep &= ok
    if not keep.all():
        ch = _select(ch, keep)
    return ch


#: covered points × features one call of the expansion may scan before the budget is
#: asked again (:func:`expand_in_windows`; ~0.2 s of CPU on many thresholds)
WINDOW_ELEMENTS: int = 1 << 18


def expand_in_windows(space: SearchSpace, obj: RoundObjective, kernel: _Kernel,
                      nodes: list[_Node], max_len: LengthCap | None, tighten: bool,
                      expired: Callable[[], bool]) -> tuple[_Children, bool]:
    """:func:`_expand` (not canonical) in windows of features of at most
    :data:`WINDOW_ELEMENTS` covered points × features each, asking ``expired`` between
    them (an expansion of 100 000 rows × 20 features on every midpoint took 1.5 s of CPU).
    Returns the children of the windows scanned, in the order of the whole expansion
    (equal to it when every window was scanned), and whether every window was: the
    windows up to the first with a child are always scanned, so a search stopped at once
    still has a rule."""
    d = space.d
    points = sum(len(nd.idx) for nd in nodes)
    width = max(1, WINDOW_ELEMENTS // max(points, 1))
    if width >= d:
        return _expand(space, obj, kernel, nodes, max_len, tighten), True
    parts: list[_Children] = []
    for j0 in range(0, d, width):
        if any(len(p.value) for p in parts) and expired():
            break
        parts.append(_expand(space, obj, kernel, nodes, max_len, tighten,
                             window=(j0, min(j0 + width, d))))
    complete = len(parts) * width >= d
    fields = ("parent", "feature", "upper_side", "a", "value", "bound", "length",
              "n_features")
    cat = {f: np.concatenate([getattr(p, f) for p in parts]) for f in fields}
    # the whole expansion's order: node by node, its x_j <= t children, then its x_j > t
    # children, each by (feature, position) — the windows come in feature order
    order = np.argsort(2 * cat["parent"] + ~cat["upper_side"], kind="stable")
    return _Children(nodes, *(cat[f][order] for f in fields)), complete


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
    return _Node(idx, box, int(ch.length[k]), float(ch.value[k]), float(ch.bound[k]),
                 2 * j + int(ch.upper_side[k]))


def _key(idx: IntArray) -> bytes:
    return idx.tobytes()


#: nodes taken from a level at a time (their bounds and children are computed batched)
CHUNK: int = 128
#: per-group sums (bincount) when every feature has at most this many threshold groups
GROUPED_MAX: int = 64

#: ``kernel(covers, first_feature, closures, window)``: the refinements of the covers in
#: features ``j >= first_feature[b]`` (None: all) within ``window = (j0, j1)``
#: (``j0 <= j < j1``; None: every feature), flagged prefix-preserving when closures are
#: given (then without a window: the test looks at the features before ``j``)
_Kernel = Callable[[list[IntArray], IntArray | None, NDArray[np.int64] | None,
                    tuple[int, int] | None], Refinements]


def _make_kernel(space: SearchSpace, obj: RoundObjective, grouped: bool | None = None
                 ) -> _Kernel:
    """Prefix sums of ``[stats | bound_stats]`` for the refinements of a batch of covers:
    per-group sums (few thresholds) or cumulative sums along the presorted feature orders
    (bitwise equal to the one-cover computation). ``grouped`` forces the choice (None:
    grouped iff at most ``GROUPED_MAX`` groups per feature). A window of features gives
    the entries of those features exactly as the whole computation does (every
    ``(cover, feature)`` row is summed on its own), their feature indices absolute."""
    mats = obj.stats if obj.bound_stats is None else np.hstack([obj.stats, obj.bound_stats])
    if grouped is None:
        grouped = space.gmax <= GROUPED_MAX

    def kernel(idxs: list[IntArray], first: IntArray | None,
               closures: NDArray[np.int64] | None,
               window: tuple[int, int] | None = None) -> Refinements:
        j0, j1 = (0, space.d) if window is None else window
        if window is not None and closures is not None:
            raise ValueError("the closure test needs every feature: no window")
        sub_first = None if first is None else np.maximum(first - j0, 0)
        if grouped:
            flat = space.groups_flat if window is None else \
                space.groups_flat[:, j0:j1] - j0 * space.gmax
            ref = batch_group_refinements(flat, j1 - j0, space.gmax, idxs, mats,
                                          first_feature=sub_first, closures=closures)
        else:
            ref = batch_refinements(space.orders[j0:j1], space.groups_t[j0:j1], idxs, mats,
                                    first_feature=sub_first, closures=closures)
        return ref if j0 == 0 else replace(ref, feature=ref.feature + j0)
    return kernel


def _bounds(obj: RoundObjective, nodes: list[_Node]) -> FloatArray:
    """``obj.bound`` of every node's cover (batched prefix greedy; exactly equal)."""
    if obj.bound_key is None:
        return np.array([obj.bound(nd.idx) for nd in nodes], dtype=float)
    assert obj._key_order is not None
    return batch_greedy_bounds(obj._key_order, [nd.idx for nd in nodes], obj.stats,
                               obj.from_sums)

