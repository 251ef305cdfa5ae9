r"""Rule search: greedy, beam and branch-and-bound over boxes ([OGB] Algorithm 2).

The query language: conjunctions of propositions ``x_j <= t`` and ``x_j > t`` with ``t``
among the candidate thresholds of feature ``j`` (:mod:`rulemip.data.thresholds`), i.e.
boxes ``lower_j < x_j <= upper_j`` (:mod:`rulemip.boosting.space`). The children of ``q``
are all refinements :math:`q' = q \cdot 1(s x_j \le s t)` that strictly shrink the cover.

- ``search="bnb"`` (w = ∞): the compiled range search
  (:mod:`rulemip.boosting.boxsearch.range_search`) with a per-rule certificate, whenever
  its prefix masks fit half the memory budget; beyond that, the set enumeration below.
- ``search="enumerate"`` (w = ∞): depth-first branch-and-bound in a set-enumeration tree
  over closed covers with bounded memory, time and node limits, and the same certificate
  (:mod:`rulemip.boosting.bnb`). It keeps no masks (memory grows with the open covers,
  not with the thresholds), at 1–40 ms a node against 15–200 µs for the compiled search
  (docs/benchmarks/box_search.md).
- ``search="greedy"`` (w = 1) and ``"beam"`` (finite w): breadth first; each level keeps
  the ``w`` best distinct covers (the covered index set is hashed) by objective value; a
  node is expanded only when ``bnd(q) > best``. Nodes are taken from a level ``CHUNK`` at
  a time and handled in one batch (:mod:`rulemip.boosting.batch`): their prefix-greedy
  bounds and all their children for all features and both directions; the chunk is then
  scanned in level order with the sequential pruning rule (see :func:`find_rule`), so the
  batch changes the cost, not the nodes expanded.

Certification: :attr:`SearchResult.bound` is always a valid upper bound on every query of
the language (respecting ``max_rule_length``, restricted features, and
``max_propositions``); ``certified`` (``status="optimal"``) means
the returned value reaches it. Greedy and beam report the admissible bound of the root.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice, check_positive_int
from rulemip.boosting.bnb import ProgressCallback, set_enumeration_search
from rulemip.boosting.boxsearch.range_search import box_search, mask_bytes
from rulemip.boosting.objectives import RoundObjective
from rulemip.boosting.space import (
    CHUNK,
    LengthCap,
    SearchResult,
    SearchSpace,
    _bounds,
    _child_box,
    _Children,
    _Kernel,
    _key,
    _make_kernel,
    _materialize,
    _Node,
    _select,
    expand_in_windows,
)
from rulemip.budget import Budget

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

SEARCHES: tuple[str, ...] = ("greedy", "beam", "bnb", "enumerate")
#: the exact searches: both return a certified optimum (or a valid bound when stopped)
EXACT_SEARCHES: tuple[str, ...] = ("bnb", "enumerate")



def find_rule(space: SearchSpace, obj: RoundObjective, *, search: str = "bnb",
              beam_width: int = 5, max_rule_length: int | None = None,
              max_propositions: int | None = None,
              allow_empty: bool = False, grouped: bool | None = None,
              node_limit: int | None = None,
              max_memory: int | None = None,
              progress: ProgressCallback | None = None,
              budget: Budget | None = None,
              scan_budget: Budget | None = None) -> SearchResult | None:
    """Maximize ``obj`` over the boxes of ``space`` ([OGB] Algorithm 2).

    Parameters
    ----------
    search : ``"greedy"`` (w = 1), ``"beam"`` (w = ``beam_width``), ``"bnb"`` (w = ∞, the
        compiled range search; the set enumeration when its masks would exceed half the
        memory budget) or ``"enumerate"`` (w = ∞, depth-first branch-and-bound over closed
        covers, :mod:`rulemip.boosting.bnb`: no masks, slower nodes).
    max_rule_length : at most this many restricted features per rule (None = unlimited);
        a two-sided interval ``a < x_j <= b`` is one feature, as rules are printed — the
        meaning of ``max_rule_length`` throughout rulemip.
    max_propositions : at most this many propositions ``x_j <= t`` / ``x_j > t`` per rule
        (an interval counts two; None = unlimited), the length of [OGB]/realkd; both caps
        hold when both are given.
    allow_empty : the empty query (covering everything) is itself a candidate — the
        setting without an intercept (``fit_intercept=False``).
    grouped : force (True) or forbid (False) the per-group (bincount) path for the
        children's prefix sums; None chooses by size (few thresholds: grouped). The two
        paths differ only by floating-point rounding.
    node_limit : at most this many node expansions (branch-and-bound; None = unlimited).
    max_memory : bytes for branch-and-bound's open nodes (None = 512 MiB); reaching it
        ends the search with ``status="memory_limit"``.
    progress : ``progress(n_expanded, best_value, bound)`` about every 2 s
        (branch-and-bound only; None = quiet).
    budget : the fit's :class:`~rulemip.budget.Budget` (None: unlimited). When its time
        or work is spent, branch-and-bound stops with its best query and
        ``status="time_limit"`` (``"work_limit"``); greedy and beam stop after the current
        level, or within an expansion between two windows of features.
    scan_budget : the budget within which greedy and beam (and the beam seeding the set
        enumeration) finish their first level — every single proposition — even when
        ``budget`` ends sooner (None: ``budget``): a booster gives each round a share of
        its time, and a share shorter than one scan of the features would make the
        round's rule the best of the first features only.

    Returns
    -------
    The best query with its certificate (``value``, a valid upper ``bound`` on every query
    of the language, ``status``, ``certified``), or ``None`` when no candidate exists (no
    thresholds and ``allow_empty=False``).

    Notes
    -----
    **Pricing oracle.** Column generation asks for the best rule under a gradient ``g``
    with a budget: ``find_rule(space, make_objective("gs", g), budget=b)`` returns
    ``value`` (the best :math:`|g^T q|` found) and ``bound`` (no query of the language
    has a larger value, proved also when the search was stopped) — no column prices out
    by more than ``bound``.

    Greedy and beam take nodes from a level ``CHUNK`` at a time; their bounds and
    children are computed in one batch, then the chunk is scanned in level order with
    exactly the sequential rule: a node is expanded iff its bound exceeds the incumbent
    *as updated by the nodes before it*. Their ``bound`` is the admissible bound of the
    root (valid, not tight).
    """
    check_choice(search, "search", SEARCHES)
    max_feats = check_positive_int(max_rule_length, "max_rule_length", allow_none=True)
    max_props = check_positive_int(max_propositions, "max_propositions", allow_none=True)
    max_len = LengthCap(max_feats, max_props)
    check_positive_int(node_limit, "node_limit", allow_none=True)
    check_positive_int(max_memory, "max_memory", allow_none=True)
    clock = Budget.coerce(budget, None)
    scan = clock if scan_budget is None else scan_budget
    if search == "bnb":
        memory = clock.search_memory(max_memory)
        if 2 * mask_bytes(space) <= memory:
            return box_search(space, obj, allow_empty=allow_empty, max_rule_length=max_feats,
                              max_propositions=max_props,
                              node_limit=node_limit, max_memory=memory, progress=progress,
                              budget=clock)
    # greedy, beam, enumerate, and a bnb whose masks would exceed half the memory budget
    # (every midpoint on very many rows): the set-enumeration search over open covers
    start = time.perf_counter()  # wall time for the report; the deadline is ``clock``'s
    d, n = space.d, space.n
    everything = np.arange(n, dtype=np.intp)
    root = _Node(everything, np.full(2 * d, -1, np.int64), 0,
                 obj.value(everything) if allow_empty else -np.inf)
    kernel = _make_kernel(space, obj, grouped)
    root_bound = _root_bound(obj, everything)
    root.cheap = root_bound
    if search in EXACT_SEARCHES:
        best, best_val, bound, status, n_exp, n_ch, peak = _deepening(
            space, obj, kernel, root, root if allow_empty else None, max_len, clock,
            node_limit, max_memory, progress, scan)
        bound = min(bound, max(root_bound, best_val))
    else:
        width = 1.0 if search == "greedy" else float(
            check_positive_int(beam_width, "beam_width") or 1)
        state = _State(root if allow_empty else None, float(root.value))
        status = _level_search(space, obj, kernel, root, state, width, max_len, clock, scan)
        best, best_val = state.best, state.best_val
        bound, n_exp, n_ch, peak = max(root_bound, best_val), state.n_expanded, \
            state.n_children, 0
    # one language with the compiled search: a box with propositions that covers every
    # row is a candidate even when the empty query is not; the set enumeration never
    # reaches it (a refinement keeping its parent's cover is pruned), so it is added here
    full = None if allow_empty else full_cover_box(space)
    if full is not None:
        full_val = float(obj.value(everything))
        bound = max(bound, full_val)
        if best is None or full_val > best_val:
            box = np.concatenate(full)
            best = _Node(everything, box, int(np.sum(box >= 0)), full_val)
            best_val = full_val
    if best is None:
        return None
    if status == "heuristic" and bound <= best_val * (1 + 1e-12):
        status = "optimal"
    lower, upper = space.box(best.box[:d], best.box[d:])
    q = np.zeros(n, dtype=bool)
    q[best.idx] = True
    return SearchResult(lower, upper, q, float(best_val), int(best.length),
                        status == "optimal", n_exp, n_ch, float(bound), status,
                        time.perf_counter() - start, int(peak))


def full_cover_box(space: SearchSpace) -> tuple[NDArray[np.int64], NDArray[np.int64]] | None:
    """A box of one proposition covering every row (``x_j > t`` with ``t`` below every
    value of feature j, or ``x_j <= t`` with ``t`` at or above every value), as threshold
    indices (lower, upper; -1 = none), or None when the thresholds give none (cut points
    made from the data never do)."""
    d = space.d
    for j, t in enumerate(space.thresholds):
        if not len(t):
            continue
        lo = np.full(d, -1, np.int64)
        hi = np.full(d, -1, np.int64)
        if int(space.groups_t[j].min()) >= 1:   # every x_j > t[0]
            lo[j] = 0
            return lo, hi
        if int(space.groups_t[j].max()) <= len(t) - 1:   # every x_j <= t[-1]
            hi[j] = len(t) - 1
            return lo, hi
    return None


#: rule lengths of the iterative-deepening stages before the full search
DEEPENING: tuple[int, ...] = (1, 2)
#: beam width of the search that seeds branch-and-bound over longer rules
SEED_BEAM_WIDTH: int = 5
#: share of the remaining time the seeding beam search may use
SEED_TIME_SHARE: float = 0.25


def _deepening(space: SearchSpace, obj: RoundObjective, kernel: _Kernel, root: _Node,
               best: _Node | None, max_len: LengthCap, clock: Budget,
               node_limit: int | None, max_memory: int | None,
               progress: ProgressCallback | None, scan: Budget
               ) -> tuple[_Node | None, float, float, str, int, int, int]:
    """Branch-and-bound by iterative deepening: a beam search of width
    :data:`SEED_BEAM_WIDTH` (when longer rules than the stages are allowed and there is
    no node limit; at most a quarter of the remaining time, checked between its
    levels), then exact
    searches over rules on 1, 2 features (:data:`DEEPENING`; within ``max_len``'s
    proposition cap), then within ``max_len``, each starting from the previous incumbent
    (a strong incumbent early prunes the long rules). A stage in which no node beating
    the incumbent was cut by its length is already exact for every length. No stage
    starts on a spent budget once there is an incumbent (each expands the root: every
    feature at once)."""
    F, P = max_len.features, max_len.propositions
    stages = [LengthCap(L, P) for L in DEEPENING
              if (F is None or F > L) and (P is None or P > L)]
    stages.append(max_len)
    n_exp = n_ch = peak = 0
    if node_limit is None and (F is None or DEEPENING[-1] < F) \
            and (P is None or DEEPENING[-1] < P):
        # a beam search's rule (cheap: w nodes per level) seeds the incumbent; not under
        # a node limit, which counts branch-and-bound expansions exactly
        state = _State(best, -math.inf if best is None else float(best.value))
        _level_search(space, obj, kernel, root, state, float(SEED_BEAM_WIDTH), max_len,
                      clock.fraction(SEED_TIME_SHARE), scan)
        best, n_exp, n_ch = state.best, state.n_expanded, state.n_children
    best_val = -math.inf if best is None else float(best.value)
    bound, status = math.inf, "node_limit"   # what is known if no stage runs to its end
    for stage_len in stages:
        left = None if node_limit is None else node_limit - n_exp
        if left is not None and left <= 0:
            break
        if best is not None and clock.expired():
            status = f"{clock.stop_reason()}_limit"
            break
        out = set_enumeration_search(space, obj, kernel, root, best, stage_len, budget=clock,
                               node_limit=left, max_memory=max_memory, progress=progress)
        best, best_val = out.best, out.best_val
        n_exp, n_ch = n_exp + out.n_expanded, n_ch + out.n_children
        peak = max(peak, out.peak_bytes)
        whole = stage_len == max_len or not out.length_cut   # the stage covered every length
        if out.status.endswith("_limit"):
            # a stopped short stage says nothing about the longer rules it never reached
            bound, status = (out.bound if whole else math.inf), out.status
            break
        if whole:
            bound, status = out.bound, out.status
            break
    return best, best_val, bound, status, n_exp, n_ch, peak


def _root_bound(obj: RoundObjective, everything: IntArray) -> float:
    """An admissible bound on every query: the cheap bound of the whole sample, and the
    full bound when it is admissible."""
    b = math.inf
    if obj.bound_stats is not None:
        b = float(obj.bound_from_sums(obj.bound_stats.sum(axis=0)))
    if obj.admissible:
        b = min(b, obj.bound(everything))
    return b


def _level_search(space: SearchSpace, obj: RoundObjective, kernel: _Kernel, root: _Node,
                  state: _State, width: float, max_len: LengthCap,
                  clock: Budget, scan: Budget | None = None) -> str:
    """Greedy / beam: level by level, the best ``width`` distinct covers of each level;
    the first level (the root's expansion) within ``scan`` (None: ``clock``), the others
    within ``clock``."""
    seen: set[bytes] = {_key(root.idx)}
    level: Iterator[_Node] = iter([root])
    level_clock = clock if scan is None else scan
    while True:
        batches: list[_Children] = []
        while True:
            chunk = list(itertools.islice(level, CHUNK))
            if not chunk:
                break
            ch = _scan(space, obj, kernel, chunk, root, state, max_len, level_clock)
            if ch is not None and len(ch.value):
                batches.append(ch)
            if state.cut:      # the budget ended an expansion: its rule is the best seen
                return f"{clock.stop_reason()}_limit"
        if not batches:
            return "heuristic"
        if clock.expired():
            return f"{clock.stop_reason()}_limit"
        level, level_clock = _next_level(space, batches, width, seen), clock


@dataclass
class _State:
    best: _Node | None
    best_val: float
    n_expanded: int = 0
    n_children: int = 0
    cut: bool = False      # an expansion stopped by the budget before its last feature


def _scan(space: SearchSpace, obj: RoundObjective, kernel: _Kernel, chunk: list[_Node],
          root: _Node, state: _State, max_len: LengthCap, clock: Budget
          ) -> _Children | None:
    """Expand the nodes of ``chunk`` in order (see :func:`find_rule`, Notes); returns the
    children that survive their cheap bound against the incumbent after their parent."""
    inner = [nd for nd in chunk if nd is not root]
    bnd = dict(zip((id(nd) for nd in inner), _bounds(obj, inner).tolist(), strict=True)) \
        if inner else {}
    best0 = state.best_val

    def pruned(nd: _Node, best: float) -> bool:
        if nd is root:
            return False
        return bnd[id(nd)] <= best

    live = [nd for nd in chunk if not pruned(nd, best0)]
    if not live:
        return None
    ch, complete = expand_in_windows(space, obj, kernel, live, max_len, True,
                                     clock.past_deadline)
    state.cut = state.cut or not complete
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
        clock.charge()                       # an expansion is a unit of work
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


def _next_level(space: SearchSpace, batches: list[_Children], width: float,
                seen: set[bytes]) -> Iterator[_Node]:
    """Yield the next level lazily: the best ``width`` distinct covers, children in order
    of decreasing value (covers are computed only when reached)."""
    b_id = np.concatenate([np.full(len(b.value), i) for i, b in enumerate(batches)])
    pos = np.concatenate([np.arange(len(b.value)) for b in batches])
    vals = np.concatenate([b.value for b in batches])
    order = np.argsort(-vals, kind="stable")
    seen_boxes: set[bytes] = set()  # same box => same cover; skips most duplicates cheaply
    taken = 0
    for r in order:
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
