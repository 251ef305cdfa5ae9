r"""Branch and bound over boxes for the squared-loss box-selection CIP
(docs/explanation/box_selection.md).

Problem: :math:`\min\{R(z) : z \in \{0..k\}^B,\ \sum_b z_b \le k\}` with the convex
:math:`R` of :mod:`rulemip.formulations.box_oracles` (squared loss).

Nodes
-----
A node is ``(F, E)``: every box of F is selected (:math:`z_b \ge 1`), every box of E is
excluded (:math:`z_b = 0`), the rest U is free, and the node holds only the points with
**at least one unit on U** (:math:`\sum_{b \in U} z_b \ge 1`). The points with support
exactly F are evaluated exactly when F is created (every composition of k into |F|
positive parts: R is non-increasing in every coordinate, so Σz = k is enough). Branching
on a free box b splits a node into ``(F ∪ {b}, E)`` (after evaluating support F ∪ {b})
and ``(F, E ∪ {b})``; together with the evaluated support this partitions the node's
integer points, so the search is exact.

Node bound (proof)
------------------
Integer points of a node satisfy :math:`1 \le z_b \le k - |F| + 1` on F,
:math:`0 \le z_b \le k - |F|` on U, :math:`z_E = 0`, :math:`\sum z \le k`,
:math:`\sum_U z \ge 1`; call this polytope P. R is convex on :math:`z \ge 0` (its
tangent planes are dual functions, module docstring of ``box_oracles``), so for any
:math:`\bar z \in P`,
:math:`\min_P R \ge R(\bar z) + \min_{v \in P} \nabla R(\bar z)^\top (v - \bar z)`
(the Frank–Wolfe dual bound). The inner minimum is a linear program over P solved
exactly by a greedy rule (:func:`_lmo`); the iterations are
:func:`rulemip.algorithms.convex.frank_wolfe.frank_wolfe_bound`. Every Frank–Wolfe iterate gives a
valid bound;
the node keeps the best one, less a relative margin of 1e-9 for round-off, and the larger
of it and its parent's bound. Nodes whose bound reaches the incumbent (within
``rel_tol``) are pruned; the reported lower bound is the least bound of the pruned and
open nodes (and of the incumbent).

Tolerances
----------
Both are relative, in the units of the status rule (:func:`rulemip.solvers.promote`), so
the search proves at the user's ``mip_gap`` for every scale of y (y → c·y multiplies every
risk and bound by c², ``reg`` being scale-free): a node is pruned when its bound reaches
``best − rel_tol·max(|best|, 1e-10)`` (the denominator of
:func:`~rulemip.solvers.relative_gap`), and the round-off margin of a Frank–Wolfe bound is
``1e-9·max(|R(z)|, u)`` with ``u`` the incumbent's
:func:`~rulemip.formulations.box_oracles.risk_unit`
(``frank_wolfe_bound(..., unit=u)``). A margin only lowers a bound. With
the former absolute unit ``max(1, |R|)`` a risk below about 1e-3 could not be proved
optimal (measured: y scaled by 1e-4, risk 4.3e-9, bound 3.6e-9, gap 0.18 where the same
instance unscaled closes at 3e-16).

Strength: this is the perspective (continuous) relaxation of the node, so it still
weakens as λ → 0 against the box weights (measured: 20 000 nodes where enumeration needs
0.1 s on a 92-box instance with a tiny ridge); what makes it work at moderate λ is that
fixing z_b ≥ 1 removes the relaxation's gain on selected boxes and the caps
``k − |F|`` on free boxes shrink as F grows (docs/benchmarks/exact.md §7).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.convex.frank_wolfe import frank_wolfe_bound
from rulemip.algorithms.local.box_swaps import local_search
from rulemip.budget import Budget
from rulemip.formulations.box_oracles import SquaredBoxOracle, _compositions, risk_unit
from rulemip.solvers.result import GAP_DENOMINATOR_FLOOR

FloatArray = NDArray[np.float64]

#: under a work limit, share of the work the starting local search gets (with a time limit
#: it gets ``search_time`` seconds instead; docs/architecture.md, "Time shares")
LOCAL_SEARCH_WORK_SHARE: float = 0.1
BoolArray = NDArray[np.bool_]

__all__ = ["BnBResult", "branch_and_bound"]


@dataclass(frozen=True)
class BnBResult:
    """Best point, its exact value, a proved lower bound, and the search effort."""

    z: FloatArray
    value: float
    lower_bound: float
    complete: bool
    nodes: int
    leaves: int
    wall_time: float


class _Evaluator:
    r""":math:`R(z)` and its gradient through the n×n system
    :math:`M = \lambda D^{-1} + \tilde Q_S \mathrm{diag}(z_S) \tilde Q_S^\top` (Woodbury):
    value :math:`\lambda \tilde y^\top M^{-1} \tilde y`, residual
    :math:`r = \lambda D^{-1} M^{-1} \tilde y` — cheap when the support S is large."""

    def __init__(self, oracle: SquaredBoxOracle) -> None:
        self.Qc = oracle.Q - oracle.col_mean
        self.y = oracle.yc
        self.w = oracle.w
        self.reg = oracle.reg
        self.W = oracle.W
        self.C = oracle.constant
        self.base = np.diag(self.reg / self.w)

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]:
        S = np.flatnonzero(z > 1e-12)
        Qs = self.Qc[:, S]
        M = self.base + (Qs * z[S]) @ Qs.T
        u = np.linalg.solve(M, self.y)
        val = self.reg * float(self.y @ u)
        c = self.Qc.T @ (self.reg * u)
        return (val + self.C) / self.W, -(c * c) / (self.reg * self.W)


def _lmo(g: FloatArray, lo: FloatArray, up: FloatArray, k: int, free: BoolArray | None
         ) -> FloatArray:
    """Exact minimizer of gᵀv over {lo ≤ v ≤ up, Σv ≤ k, Σ_free v ≥ 1} (``free`` a mask,
    None: no covering row) for g ≤ 0: one unit on the best free box (any optimum can move
    its free mass there), then the budget greedily on the most negative coordinates."""
    v = lo.copy()
    budget = k - float(lo.sum())
    if free is not None:
        idx = np.flatnonzero(free)
        b = int(idx[np.argmin(g[idx])])
        v[b] += 1.0
        budget -= 1.0
    for b in np.argsort(g, kind="stable"):
        if budget <= 1e-12 or g[b] >= 0.0:
            break
        add = min(up[b] - v[b], budget)
        if add > 0:
            v[b] += add
            budget -= add
    return v


def _support_leaf(ev: _Evaluator, F: tuple[int, ...], B: int, k: int
                  ) -> tuple[float, FloatArray]:
    """Exact best point with support exactly F (every composition of k into |F| parts)."""
    best, best_z = np.inf, np.zeros(B)
    idx = list(F)
    for comp in _compositions(k, len(F)):
        if sum(comp) != k and len(F) > 0:
            continue
        z = np.zeros(B)
        z[idx] = comp
        v = ev.value_and_gradient(z)[0]
        if v < best:
            best, best_z = v, z
    return best, best_z


def branch_and_bound(oracle: SquaredBoxOracle, n_boxes: int, k: int, *,
                     budget: Budget | None = None, rel_tol: float = 1e-6,
                     lower_bound_hint: float = -np.inf, incumbent: FloatArray | None = None,
                     search_time: float = 2.0, fw_iters: int = 60,
                     seed: int = 0) -> BnBResult:
    """Exact best point by best-first branch and bound (module docstring).

    ``budget`` is the fit's :class:`~rulemip.budget.Budget` (None: unlimited;
    ``search_time`` seconds of it at most go to the starting local search); when it
    stops the search, ``complete`` is False and ``lower_bound`` is the least bound of the
    open and pruned nodes (still valid). ``lower_bound_hint`` is a valid bound known
    beforehand (e.g. the combinatorial bounds), used as a floor.
    """
    t0 = time.perf_counter()  # wall time for the report; the deadline is ``clock``'s
    clock = Budget.coerce(budget, None)
    B = n_boxes
    ev = _Evaluator(oracle)
    z0 = np.zeros(B) if incumbent is None else np.asarray(incumbent, dtype=float)
    # under a work limit the local search gets a tenth of the work, not seconds
    ls = local_search(oracle, z0, k, max_kicks=max(B, 1), seed=seed, target=lower_bound_hint,
                      budget=clock.fraction(LOCAL_SEARCH_WORK_SHARE) if clock.deterministic
                      else clock.within(search_time))
    best_z, best = ls.z, ls.value
    leaves = 0

    empty_risk = ev.value_and_gradient(np.zeros(B))[0]

    def prune_level() -> float:  # the relative gap of rulemip.solvers.relative_gap
        return best - rel_tol * max(abs(best), GAP_DENOMINATOR_FLOOR)

    counter = itertools.count()
    root_lo, root_up = np.zeros(B), np.full(B, float(k))
    free_root = np.ones(B, dtype=bool)
    start = _lmo(ev.value_and_gradient(np.full(B, k / max(B, 1)))[1], root_lo, root_up, k,
                 free_root) if B else np.zeros(0)
    heap: list[tuple[float, int, tuple[int, ...], frozenset[int], FloatArray]] = []
    pruned_min = np.inf
    nodes = 0
    if B:
        heapq.heappush(heap, (lower_bound_hint, next(counter), (), frozenset(), start))
    complete = True
    while heap:
        if clock.expired():
            complete = False
            break
        parent_bound, _, F, E, zw = heapq.heappop(heap)
        if parent_bound >= prune_level():
            pruned_min = min(pruned_min, parent_bound)
            continue
        nodes += 1
        clock.charge()                      # a node is a unit of work
        s = len(F)
        lo = np.zeros(B)
        up = np.full(B, float(k - s))
        if s:
            lo[list(F)] = 1.0
            up[list(F)] = float(k - s + 1)
        if E:
            up[list(E)] = 0.0
        free = up > 0
        free[list(F)] = False
        if not free.any():
            continue
        z = np.clip(zw, lo, up)
        if z.sum() > k + 1e-12 or z[free].sum() < 1.0 - 1e-12:
            z = _lmo(ev.value_and_gradient(z)[1], lo, up, k, free)
        # margins in the incumbent's risk unit: relative at every scale of y
        fw_bound, z = frank_wolfe_bound(
            ev.value_and_gradient, functools.partial(_lmo, lo=lo, up=up, k=k, free=free),
            z, threshold=prune_level(), max_iter=fw_iters, unit=risk_unit(best, empty_risk))
        bound = max(fw_bound, parent_bound)
        if bound >= prune_level():
            pruned_min = min(pruned_min, bound)
            continue
        cand = np.flatnonzero(free)
        b = int(cand[np.argmax(z[cand])])
        if z[b] <= 1e-12:
            g = ev.value_and_gradient(z)[1]
            b = int(cand[np.argmin(g[cand])])
        F2 = tuple(sorted((*F, b)))
        v, zl = _support_leaf(ev, F2, B, k)
        leaves += 1
        if v < best:
            best, best_z = v, zl
        if len(F2) < k:
            heapq.heappush(heap, (bound, next(counter), F2, E, z))
        heapq.heappush(heap, (bound, next(counter), F, E | {b}, z))
    open_min = min((h[0] for h in heap), default=np.inf)
    lb = min(best, pruned_min, open_min)
    lb = max(lb, min(lower_bound_hint, best))
    value = oracle.value_and_gradient(best_z)[0]
    return BnBResult(best_z, float(value), float(min(lb, value)), complete, nodes, leaves,
                     time.perf_counter() - t0)
