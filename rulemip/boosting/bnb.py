r"""Memory-bounded, time-bounded branch-and-bound over boxes ([OGB] Algorithm 2, w = ∞).

**Tree.** A box sets some of the ``2d`` *slots* (slot ``2j``: the lower bound of feature
``j``, slot ``2j + 1``: its upper bound) to candidate thresholds. A node is refined only in
the slots after the last slot it set (a set-enumeration tree), so every box is generated at
most once and no table of visited covers is needed; refinements that leave the cover
unchanged are never generated (the thresholds hug the cover), and such a refinement would
only repeat the covers of its parent's later slots (equal-coverage pruning). Every
distinct cover of a box on at most ``max_rule_length`` features (with at most
``max_propositions`` propositions) is reached by a box using a subset of its slots, so
within both caps (docs/explanation/boosting.md, "Branch-and-bound").

**Order and memory.** The children of every expansion batch form a *frame* (flat arrays
of their boxes, values and bounds, and the parents' covers), sorted by value. While the
frames fit in a quarter of ``max_memory`` the search is best first: a heap on the best
open value of every frame, and a batch of up to ``CHUNK`` nodes is filled from as many
frames as it takes (their children and bounds are computed batched,
:mod:`rulemip.boosting.batch`). Beyond a quarter it falls back to depth first:
``DEPTH_FIRST_CHUNK`` of the newest open nodes per batch, so the stack grows by at most
one frame of that many parents' children per level of a branch at most ``2d`` deep;
when the frames would exceed ``max_memory`` it stops with ``status="memory_limit"``. A
batch also stops growing once its covers hold so many points that evaluating their
children (``2 d |cover|`` each) would need more than a quarter of the budget.

**Pruning and certificate.** A child is kept only while its cheap admissible bound (a
function of additive statistics, free with its value) beats the incumbent; an expanded
node must also pass the objective's full bound. Both are admissible for gs, gb and xgb.
For ogb the full bound (prefix greedy over ``g_perp``) is a heuristic: the nodes it prunes
are remembered by their admissible cheap bound. At the end, or when a limit stops the
search, the returned ``bound`` is the maximum of the best value, the cheap bounds of all
open nodes and of all heuristically pruned nodes — a valid upper bound on every query of
the language; ``certified`` means ``bound <= value``.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rulemip.boosting.objectives import RoundObjective
from rulemip.boosting.space import (
    LengthCap,
    SearchSpace,
    _bounds,
    _Children,
    _expand,
    _Kernel,
    _materialize,
    _Node,
    _select,
)
from rulemip.budget import Budget

#: nodes expanded in one batch while memory allows (best first)
CHUNK: int = 256
#: siblings expanded in one batch after the fallback to depth first
DEPTH_FIRST_CHUNK: int = 8
#: default memory budget of the open-node store, bytes
DEFAULT_MAX_MEMORY: int = 512 * 2**20
#: seconds between two progress reports
PROGRESS_EVERY: float = 2.0

#: ``progress(n_expanded, best_value, bound)``
ProgressCallback = Callable[[int, float, float], None]


@dataclass
class _Frame:
    """Open children of one expansion batch, sorted by increasing priority; the entries
    ``[0, top)`` are still open (taken from the end)."""

    ch: _Children | None        # None once every entry was taken (arrays released)
    top: int
    nbytes: int
    seq: int
    in_heap: bool = True

    @property
    def children(self) -> _Children:
        assert self.ch is not None
        return self.ch

    def open_bound(self) -> float:
        return float(self.children.bound[: self.top].max()) if self.top else -math.inf

    def priority(self) -> float:
        return float(self.children.bound[self.top - 1])


def _frame(ch: _Children, seq: int) -> _Frame:
    order = np.argsort(ch.bound, kind="stable")
    ch = _select(ch, order)
    nbytes = sum(a.nbytes for a in (ch.parent, ch.feature, ch.upper_side, ch.a, ch.value,
                                    ch.bound, ch.length))
    nbytes += sum(nd.idx.nbytes + nd.box.nbytes + 200 for nd in ch.parents)
    return _Frame(ch, len(ch.value), nbytes, seq)


class _Frontier:
    """The open frames: best first (a heap on the priority of every frame's top entry)
    while they fit in a quarter of the budget, else depth first (the newest frame)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.frames: list[_Frame] = []          # in push order (depth first)
        self.heap: list[tuple[float, int, _Frame]] = []
        self.used = self.peak = 0
        self.seq = 0
        self.live = 0
        self.rejected: _Frame | None = None

    def push(self, ch: _Children) -> bool:
        """Add the children; False (nothing added) when they do not fit the budget."""
        fr = _frame(ch, self.seq)
        if self.used + fr.nbytes > self.budget:
            self.rejected = fr
            return False
        self.seq += 1
        self.live += 1
        self.frames.append(fr)
        heapq.heappush(self.heap, (-fr.priority(), fr.seq, fr))
        self.used += fr.nbytes
        self.peak = max(self.peak, self.used)
        return True

    def _drop(self, fr: _Frame) -> None:
        """Release an exhausted frame's arrays (the heap and the push-order list may
        still hold the empty shell until they are compacted)."""
        self.used -= fr.nbytes
        fr.nbytes = 0
        fr.ch = None
        self.live -= 1
        if len(self.frames) > 2 * self.live + 64:
            self.frames = [f for f in self.frames if f.top]
        if len(self.heap) > 2 * self.live + 64:
            self.heap = [e for e in self.heap if e[2].top]
            heapq.heapify(self.heap)

    def next_frame(self) -> _Frame | None:
        depth_first = 4 * self.used > self.budget
        while self.frames and self.frames[-1].top == 0:
            self.frames.pop()
        if depth_first:
            return self.frames[-1] if self.frames else None
        while self.heap:
            _, _, fr = heapq.heappop(self.heap)
            fr.in_heap = False
            if fr.top:
                return fr
        return None

    def release(self, fr: _Frame) -> None:
        """After entries were taken from ``fr``: re-queue it or free it."""
        if fr.top:
            if not fr.in_heap:
                fr.in_heap = True
                heapq.heappush(self.heap, (-fr.priority(), fr.seq, fr))
        elif fr.ch is not None:
            self._drop(fr)

    @property
    def depth_first(self) -> bool:
        return 4 * self.used > self.budget

    def open_bound(self) -> float:
        return max([f.open_bound() for f in self.frames if f.top], default=-math.inf)


def _closures(space: SearchSpace, nodes: list[_Node]) -> np.ndarray:
    """(len(nodes), 2, d): :func:`_closure` of every node's cover, batched."""
    cat = np.concatenate([nd.idx for nd in nodes])
    starts = np.cumsum([0] + [len(nd.idx) for nd in nodes[:-1]])
    G = space.groups_t[:, cat]
    return np.stack([np.minimum.reduceat(G, starts, axis=1).T,
                     np.maximum.reduceat(G, starts, axis=1).T], axis=1)


def _closure(space: SearchSpace, idx: np.ndarray) -> np.ndarray:
    """(2, d): the smallest and largest threshold group of the cover in every feature —
    the tightest box around it (its closure)."""
    G = space.groups_t[:, idx]
    return np.stack([G.min(axis=1), G.max(axis=1)])


@dataclass
class BnbOutcome:
    """What :func:`set_enumeration_search` hands back to :func:`rulemip.boosting.find_rule`."""

    best: _Node | None
    best_val: float
    bound: float
    status: str
    n_expanded: int
    n_children: int
    peak_bytes: int
    length_cut: bool = False    # a node beating the incumbent was not refined: too long


def set_enumeration_search(space: SearchSpace, obj: RoundObjective, kernel: _Kernel,
                           root: _Node, best: _Node | None, max_len: LengthCap | None, *,
                           budget: Budget | None = None, node_limit: int | None = None,
                           max_memory: int | None = None,
                           progress: ProgressCallback | None = None) -> BnbOutcome:
    """Maximize ``obj`` over the boxes below ``root`` (module docstring).

    Parameters
    ----------
    best : the incumbent (the root itself when the empty query is a candidate).
    budget : the fit's :class:`~rulemip.budget.Budget` (None: unlimited); the search
        stops with ``status="time_limit"`` (``"work_limit"``) when it is spent.
    node_limit : stop after this many expansions (None: unlimited).
    max_memory : budget in bytes of the open-node store (None: ``DEFAULT_MAX_MEMORY``).
    progress : called about every ``PROGRESS_EVERY`` seconds with (expanded, best, bound).
    """
    clock = Budget.coerce(budget, None)
    memory = DEFAULT_MAX_MEMORY if max_memory is None else int(max_memory)
    best_val = float(best.value) if best is not None else -math.inf
    heuristic_bound = -math.inf     # admissible bounds of heuristically pruned nodes
    n_expanded = n_children = 0
    frontier = _Frontier(memory)
    status = "optimal"
    last_report = time.perf_counter()
    closed = max_len is None or max_len.unlimited
    length_cut = False
    # one expansion batch makes up to 2 d |cover| children of ~8 (8 + 2 c) bytes each
    # while they are evaluated: keep that transient below a quarter of the budget
    n_cols = obj.stats.shape[1] + (0 if obj.bound_stats is None else obj.bound_stats.shape[1])
    batch_points = max(1, memory // (4 * 2 * space.d * 8 * (8 + 2 * n_cols)))
    if closed:
        root.closure = _closure(space, root.idx)
    pending = [root]
    while True:
        # ---- expand ``pending`` (already bound-checked), push their children
        if pending:
            ch = _expand(space, obj, kernel, pending, max_len, False, canonical=True)
            if obj.admissible:   # a child's subsets are its parent's: inherit its bound
                ch.bound = np.minimum(ch.bound, np.array([nd.cheap for nd in pending])[ch.parent])
            n_expanded += len(pending)
            clock.charge(len(pending))      # an expansion is a unit of work
            n_children += len(ch.value)
            if len(ch.value):
                k = int(np.argmax(ch.value))
                if ch.value[k] > best_val:
                    best_val = float(ch.value[k])
                    best = _materialize(space, ch, k)
                keep = ch.bound > best_val
                if max_len is not None:
                    length_cut = length_cut or bool(
                        (keep & max_len.at_cap(ch.n_features, ch.length)).any())
                    keep &= max_len.expandable(ch.n_features, ch.length)
                if keep.any() and not frontier.push(_select(ch, keep)):
                    assert frontier.rejected is not None
                    heuristic_bound = max(heuristic_bound, frontier.rejected.open_bound())
                    status = "memory_limit"
                    break
        pending = []
        # ---- limits
        now = time.perf_counter()  # progress reports only; the deadline is ``clock``'s
        if clock.expired():
            status = f"{clock.stop_reason()}_limit"
            break
        if node_limit is not None and n_expanded >= node_limit:
            status = "node_limit"
            break
        if progress is not None and now - last_report >= PROGRESS_EVERY:
            last_report = now
            progress(n_expanded, best_val, max(best_val, heuristic_bound,
                                               frontier.open_bound()))
        # ---- take the next siblings from the chosen frames (best first: from as many
        # frames as it takes to fill a batch; depth first: one node)
        chunk = DEPTH_FIRST_CHUNK if frontier.depth_first else CHUNK
        if node_limit is not None:
            chunk = max(1, min(chunk, node_limit - n_expanded))
        work = clock.work_left()
        if work is not None:
            chunk = max(1, min(chunk, work))
        nodes: list[_Node] = []
        n_points = 0
        exhausted = False
        while len(nodes) < chunk and n_points <= batch_points:
            fr = frontier.next_frame()
            if fr is None:
                exhausted = True
                break
            ch = fr.children
            while fr.top and len(nodes) < chunk and n_points <= batch_points:
                fr.top -= 1
                if ch.bound[fr.top] > best_val:
                    nodes.append(_materialize(space, ch, fr.top))
                    n_points += len(nodes[-1].idx)
            frontier.release(fr)
        if not nodes:
            if exhausted:
                break
            continue
        full = _bounds(obj, nodes)
        for nd, b in zip(nodes, full.tolist(), strict=True):
            if obj.admissible:
                nd.cheap = min(nd.cheap, b)
            if b > best_val:
                pending.append(nd)
            elif not obj.admissible:
                heuristic_bound = max(heuristic_bound, nd.cheap)
        if closed and pending:
            for nd, c in zip(pending, _closures(space, pending), strict=True):
                nd.closure = c
    open_bound = max(heuristic_bound, frontier.open_bound())
    if pending:  # stopped with nodes taken but not expanded
        open_bound = max(open_bound, max(nd.cheap for nd in pending))
    if status == "optimal" and open_bound > best_val * (1 + 1e-12) + 1e-300:
        status = "heuristic"
    return BnbOutcome(best, best_val, max(best_val, open_bound), status, n_expanded,
                      n_children, frontier.peak, length_cut)
