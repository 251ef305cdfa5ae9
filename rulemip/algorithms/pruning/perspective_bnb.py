r"""Best-first branch and bound over node selections with the perspective bound
(:mod:`rulemip.algorithms.pruning.perspective`; docs/explanation/tree_pruning.md).

A branch-and-bound node is a status vector: every ensemble node free, fixed selected
(``IN``: its ancestors and descendants are then fixed ``OUT`` — the node/descendant rule
propagated down and up the tree) or fixed out. Its bound is
:math:`\max_\alpha L_Z(\alpha)` for Z the selections obeying the fixings, maximized by
:func:`~rulemip.algorithms.pruning.perspective.node_relaxation` from the parent's
Frank–Wolfe atoms that obey the fixings (a child first tries the parent's best α: one
dynamic program). Every selection the dynamic program returns is feasible, so the
vertices at the best α and the rounding of the relaxed point are incumbent candidates;
the warm starts (CBCD, relax-and-round, greedy with local search) seed the incumbent,
and the root starts from its support, so that α = the incumbent's residual is the first
bound.

Reduced-cost fixing: after a node's relaxation, every free node whose bound with it
selected (one top-down pass for all nodes) reaches the pruning threshold is fixed out, and
every node of the dual maximizer whose bound without it does is fixed in; the excluded
selections are closed with the least such bound. When the root's fixings leave at most
half of the nodes, the whole search continues on the problem restricted to those (its
dynamic programs and gains cost in proportion; on friedman1 100 trees of depth 5 at
γn = 1, 79 of 5 326 nodes are left).

Branching: the most fractional free node of the relaxed point (on friedman1 at γn = 10,
3 000 Frank–Wolfe iterations: bound 106.26 against 106.07 for the largest fractional
value; ``IN`` child first on ties). The proved bound at any moment is the least of the
open nodes' bounds, the bounds of nodes closed within the tolerance and the incumbent
value — valid when the search stops at a limit.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.pruning.perspective import (
    FREE,
    IN,
    OUT,
    NodeRelaxation,
    PerspectiveProblem,
    knapsack_dp,
    node_relaxation,
)
from rulemip.budget import Budget
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.solvers.result import Limit, budget_limit

__all__ = ["PerspectiveBnBResult", "perspective_bnb"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: atoms a child inherits at most (the heaviest of the parent's)
MAX_ATOMS = 64
_FRACTIONAL = 1e-6
#: nodes after which a new rounding is improved by the local search whatever its value
IMPROVE_EVERY = 3
#: the longest spacing of the periodic local search
MAX_IMPROVE_EVERY = 48
#: the root's fixings restrict the whole search to the nodes left when at most this
#: share of the nodes is left
RESTRICT_SHARE = 0.5


@dataclass
class PerspectiveBnBResult:
    """The search's record: the incumbent ``z`` (0/1) and its q ``value``, the proved
    ``lower_bound``, the root bound, ``finished`` (the tree was exhausted within the gap)
    or the ``limit`` that stopped it, nodes explored / left open, and ``history``
    (time, nodes, incumbent, bound) at every improvement."""

    z: FloatArray
    value: float
    lower_bound: float
    root_bound: float
    finished: bool
    limit: Limit | None
    nodes: int
    open_nodes: int
    wall_time: float
    iterations: int = 0
    history: list[tuple[float, int, float, float]] = field(default_factory=list)
    notes: tuple[str, ...] = ()


@dataclass(order=True)
class _Open:
    bound: float
    order: int
    status: NDArray[np.int8] = field(compare=False)
    atoms: list[IntArray] = field(compare=False)
    weights: FloatArray = field(compare=False)
    alpha: FloatArray = field(compare=False)


class _Search:
    """State of one branch and bound (module docstring)."""

    def __init__(self, problem: PerspectiveProblem, budget: Budget, mip_gap: float,
                 callback: Any, improve: Callable[[IntArray], IntArray] | None) -> None:
        self.p = problem  # the problem the relaxations see (restricted after the root)
        self.full = problem  # the original problem (the incumbents' indices)
        self.index = np.arange(problem.m)  # node k of ``p`` is node ``index[k]`` of ``full``
        self.improve = improve
        self.budget = budget
        self.mip_gap = mip_gap
        self.callback = callback
        self.best_value = math.inf
        self.best_S = np.zeros(0, dtype=np.int64)
        self.heap: list[_Open] = []
        self.floor = math.inf  # least bound of the nodes closed without exhausting them
        self.count = 0
        self.explored = 0
        self.iterations = 0
        self.t0 = time.perf_counter()
        self.history: list[tuple[float, int, float, float]] = []
        self.seen: set[bytes] = set()
        self.last_improve = -IMPROVE_EVERY
        self.improve_every = IMPROVE_EVERY  # doubles after each periodic local search
        # that does not improve the incumbent, back to IMPROVE_EVERY when one does
        self.root_done = False  # before the root's bound, only q ≥ 0 is proved
        self.notes: list[str] = []

    def threshold(self) -> float:
        return self.best_value - self.mip_gap * abs(self.best_value)

    def offer(self, S: IntArray) -> float:
        """Evaluate the selection ``S`` (feasible, indices of the original problem) and
        keep it if it improves; its q (``inf`` when it was met before)."""
        key = np.sort(S).tobytes()
        if key in self.seen:
            return math.inf
        self.seen.add(key)
        z = np.zeros(self.full.m)
        z[S] = 1.0
        value = self.full.cip.value(z)
        if value < self.best_value:
            self.best_value, self.best_S = value, np.sort(S)
            self.report()
        return value

    def lower_bound(self) -> float:
        if not self.root_done:
            return 0.0
        open_min = self.heap[0].bound if self.heap else math.inf
        return min(self.best_value, self.floor, open_min)

    def report(self, final: bool = False) -> None:
        lb, ub = self.lower_bound(), self.best_value
        t = time.perf_counter() - self.t0
        self.history.append((t, self.explored, ub, lb))
        if self.callback is not None:
            gap = (ub - lb) / max(abs(ub), 1e-12) if math.isfinite(ub) else math.inf
            self.callback({"time": t, "iteration": self.explored, "ub": ub, "lb": lb,
                           "gap": gap, "phase": "perspective", "final": final})

    def close(self, bound: float) -> None:
        """A node left without children: its subtree's optimum is at least ``bound``."""
        if bound < self.best_value:
            self.floor = min(self.floor, bound)

    def push(self, bound: float, status: NDArray[np.int8], atoms: list[IntArray],
             weights: FloatArray, alpha: FloatArray) -> None:
        self.count += 1
        heapq.heappush(self.heap, _Open(bound, self.count, status, atoms, weights, alpha))

    def heuristics(self, rel: NodeRelaxation, status: NDArray[np.int8]) -> None:
        """Incumbent candidates: the selection maximizing the dual's inner problem at
        the best α, and the rounding of the relaxed point by the same dynamic program
        (relax-and-round's rounding), improved by the local search when it is new and
        no farther above the incumbent than the incumbent is above the bound, or when
        :data:`IMPROVE_EVERY` nodes passed without one (run on every rounding, the local
        search took half the time at γn = 1; on none but the close ones, it missed the
        best selection known at γn = 10)."""
        p = self.p
        _, s = p.dual_bound(rel.alpha, status)
        self.offer(self.index[np.flatnonzero(s)])
        zeta = np.where(rel.z > 1e-9, rel.z, 0.0)
        _, s = knapsack_dp(zeta, p.cost, p.capacity, p.forest, status)
        S = self.index[np.flatnonzero(s)]
        value = self.offer(S)
        promising = value <= 2 * self.best_value - self.lower_bound()
        due = self.explored >= self.last_improve + self.improve_every
        if self.improve is not None and math.isfinite(value) and (promising or due):
            self.last_improve = self.explored
            before = self.best_value
            self.offer(np.asarray(self.improve(S), dtype=np.int64))
            if self.best_value < before:
                self.improve_every = IMPROVE_EVERY
            elif due and not promising:
                self.improve_every = min(2 * self.improve_every, MAX_IMPROVE_EVERY)

    def fix(self, status: NDArray[np.int8], rel: NodeRelaxation) -> NDArray[np.int8]:
        """Reduced-cost fixing at the node's best α
        (:meth:`~rulemip.algorithms.pruning.perspective.PerspectiveProblem.fix_by_bound`):
        the fixed nodes' subtrees are closed with their bound, and the atoms that use a
        fixed node dropped from ``rel``."""
        fixed, least = self.p.fix_by_bound(rel.alpha, status, self.threshold())
        self.close(least)
        if least < math.inf:
            keep = [k for k, S in enumerate(rel.atoms) if not np.any(fixed[S] == OUT)]
            rel.atoms = [rel.atoms[k] for k in keep]
            rel.weights = rel.weights[keep]
        return fixed

    def restrict(self, root: _Open, rel: NodeRelaxation) -> None:
        """After the root's fixings, continue on the problem restricted to the nodes not
        fixed out (:meth:`~rulemip.algorithms.pruning.perspective.PerspectiveProblem.
        restricted`) when at most :data:`RESTRICT_SHARE` of them are left: the dynamic
        programs and gains then cost in proportion to those. ``root`` and ``rel`` are
        mapped to the restricted indices."""
        keep = root.status != OUT
        if keep.sum() > RESTRICT_SHARE * self.p.m:
            return
        new_of = np.full(self.p.m, -1, dtype=np.int64)
        new_of[keep] = np.arange(int(keep.sum()))
        self.notes.append(f"restricted to {int(keep.sum())} of {self.p.m} nodes by the "
                          "root's fixings")
        self.p = self.p.restricted(keep)
        rel.alpha = self.p.dual_of(rel.alpha)
        self.index = self.index[keep]
        root.status = root.status[keep]
        rel.atoms = [new_of[S] for S in rel.atoms]
        rel.z = rel.z[keep]

    def branch(self, parent: _Open, rel: NodeRelaxation) -> None:
        """Two children on the most fractional free node (a free node in the point's
        support when it is integral); none when no free node is left — unless the point
        uses nodes fixed out since it was computed: then the node is queued again."""
        status = parent.status
        free = status == FREE
        frac = free & (rel.z > _FRACTIONAL) & (rel.z < 1.0 - _FRACTIONAL)
        cand = frac if frac.any() else free & (rel.z > _FRACTIONAL)
        if not cand.any():
            if np.any(rel.z[status == OUT] > _FRACTIONAL):  # on nodes fixed since: again
                self.push(rel.lower_bound, status, rel.atoms, rel.weights, rel.alpha)
            else:
                self.close(rel.lower_bound)
            return
        i = int(np.argmax(np.where(cand, np.minimum(rel.z, 1.0 - rel.z), -1.0)))
        order = np.argsort(-rel.weights)[:MAX_ATOMS]
        atoms = [rel.atoms[k] for k in order]
        weights = rel.weights[order]
        for side in (IN, OUT):
            child = (self.p.propagate(status, i) if side == IN
                     else np.where(np.arange(self.p.m) == i, np.int8(OUT), status))
            keep = [k for k, S in enumerate(atoms) if (i in S) == (side == IN)]
            self.push(rel.lower_bound, child.astype(np.int8), [atoms[k] for k in keep],
                      weights[keep] if keep else np.zeros(0), rel.alpha)


def perspective_bnb(nodes: NodeMatrix, y: FloatArray, max_cost: float, *,
                    attribute: str = "rule", gamma: float = 1.0,
                    budget: Budget | None = None, mip_gap: float = 1e-4,
                    warm_starts: list[IntArray] | None = None,
                    improve: Callable[[IntArray], IntArray] | None = None, callback: Any = None,
                    root_iterations: int = 3000, node_iterations: int = 300,
                    root_tol: float = 1e-4, node_tol: float = 1e-5,
                    node_gap_share: float = 0.1
                    ) -> PerspectiveBnBResult:
    r"""Best-first branch and bound for CIP (2) with the perspective bound (module
    docstring).

    Parameters
    ----------
    nodes, y, max_cost, attribute, gamma : CIP (2): candidate nodes, response (used as
        given), the budget :math:`\sum a_i z_i \le K` with integer costs, the ridge γ.
    budget : the clock (time and/or deterministic work: one unit per Frank–Wolfe
        iteration); mip_gap : nodes whose bound is within ``mip_gap·|U|`` of the
        incumbent U are pruned.
    warm_starts : selections (node indices, each feasible) to seed the incumbent.
    improve : a local search (a selection to a feasible selection) run on every new
        rounding of a node's relaxed point (at the root: relax-and-round, App. D).
    root_iterations, node_iterations : Frank–Wolfe iterations at the root / at a node.
    root_tol, node_tol : relative Frank–Wolfe gap at which a relaxation stops.
    node_gap_share : a node's relaxation also stops once its Frank–Wolfe gap is this
        share of the distance from its bound to the pruning threshold (100 / 5 trees at
        γn = 1, 20 CPU s: bound 271.90 against 271.77 with a fixed 1e-3 tolerance and 60
        iterations).
    """
    clock = budget if budget is not None else Budget.unlimited()
    p = PerspectiveProblem(nodes, y, max_cost, attribute, gamma)
    search = _Search(p, clock, float(mip_gap), callback, improve)
    search.offer(np.zeros(0, dtype=np.int64))
    for S in warm_starts or []:
        search.offer(np.asarray(S, dtype=np.int64))
    root_status = np.zeros(p.m, dtype=np.int8)
    root = _Open(0.0, 0, root_status, [search.best_S], np.ones(1), np.asarray(y, float))
    rel = node_relaxation(p, root_status, root.atoms, root.weights,
                          threshold=search.threshold(),
                          rel_tol=root_tol, max_iter=root_iterations, budget=clock,
                          lower_bound=0.0)
    search.iterations += rel.iterations
    search.explored = 1
    root_bound = rel.lower_bound
    search.heuristics(rel, root_status)
    if rel.lower_bound < search.threshold():
        root.status = search.fix(root_status, rel)
        search.restrict(root, rel)
        search.branch(root, rel)
    else:
        search.close(rel.lower_bound)
    search.root_done = True
    search.report()
    limit = None
    last_report = time.perf_counter()
    p = search.p  # restricted when the root's fixings left few nodes
    while search.heap:
        if clock.expired():
            limit = budget_limit(clock)
            break
        node = heapq.heappop(search.heap)
        if node.bound >= search.threshold():
            search.close(node.bound)
            continue
        bound, s = p.dual_bound(node.alpha, node.status)  # the parent's α: one DP
        bound = max(bound, node.bound)
        if bound >= search.threshold():
            search.close(bound)
            continue
        atoms, weights = node.atoms, node.weights
        if not atoms:
            atoms, weights = [np.flatnonzero(s)], np.ones(1)
        rel = node_relaxation(p, node.status, atoms, weights, threshold=search.threshold(),
                              rel_tol=node_tol, max_iter=node_iterations, budget=clock,
                              gap_share=node_gap_share,
                              lower_bound=bound, alpha=node.alpha)
        search.iterations += rel.iterations
        search.explored += 1
        search.heuristics(rel, node.status)
        if rel.stop == "limit":  # the relaxation was cut short: the node stays open
            search.push(rel.lower_bound, node.status, rel.atoms, rel.weights, rel.alpha)
            limit = budget_limit(clock)
            break
        if rel.lower_bound >= search.threshold():
            search.close(rel.lower_bound)
        else:
            node.bound = rel.lower_bound
            node.status = search.fix(node.status, rel)
            search.branch(node, rel)
        if time.perf_counter() - last_report >= 1.0:
            search.report()
            last_report = time.perf_counter()
    search.report(final=True)
    z = np.zeros(search.full.m)
    z[search.best_S] = 1.0
    return PerspectiveBnBResult(z=z, value=search.best_value,
                                lower_bound=search.lower_bound(), root_bound=root_bound,
                                finished=limit is None, limit=limit, nodes=search.explored,
                                open_nodes=len(search.heap),
                                wall_time=time.perf_counter() - search.t0,
                                iterations=search.iterations, history=search.history,
                                notes=tuple(search.notes))
