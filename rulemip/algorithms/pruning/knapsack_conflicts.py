"""Knapsack with a conflict graph for the rounding step of [PRUNE] Alg. 4 (App. D).

Maximize Σ ζ_i z_i over z ∈ {0,1}^m with z_i + z_j ≤ 1 for every conflicting pair and
(budgeted) Σ a_i z_i ≤ K, or (penalized) maximize Σ (ζ_i − λ a_i) z_i.  In tree pruning,
the conflict graph is the comparability graph of a forest (node ~ every ancestor), which
is chordal ([PRUNE] Prop. 4); its maximal cliques are the root-to-leaf paths, and the
forest itself is a clique tree.  The DP runs over that forest:

    f_i(c) = max( ζ_i·1{a_i ≤ c},  max_{c_1+..+c_k = c} Σ_children f_j(c_j) )

(select i and nothing below it, or combine the children), exact for integer costs and
O(m K²).  The FPTAS scales profits ``ζ'_i = ⌊ζ_i / μ⌋`` with μ = ε·ζ_max/m and runs the
dual DP (minimum cost per profit level), returning a solution of value ≥ (1 − ε)·OPT.
The structure is verified (``nx.is_chordal`` and the forest-closure property), not assumed.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
from numpy.typing import NDArray

from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.formulations.forest import Forest

__all__ = ["forest_knapsack", "forest_knapsack_fptas", "forest_penalized",
           "verify_forest_conflicts"]


def verify_forest_conflicts(parent: NDArray[np.int64], pairs: NDArray[np.int64]) -> None:
    """Check that ``pairs`` is exactly the ancestor/descendant relation of ``parent`` and
    that the conflict graph is chordal; raise InvalidDataError otherwise."""
    m = len(parent)
    expect = set()
    for j in range(m):
        p = parent[j]
        while p >= 0:
            expect.add((int(p), j))
            p = parent[p]
    got = {(int(i), int(j)) for i, j in np.asarray(pairs).reshape(-1, 2)}
    if got != expect:
        raise InvalidDataError("conflict pairs are not the transitive closure of the forest")
    g = nx.Graph()
    g.add_nodes_from(range(m))
    g.add_edges_from(got)
    if not nx.is_chordal(g):
        raise InvalidDataError("conflict graph is not chordal")


def _children(parent: NDArray[np.int64]) -> tuple[list[list[int]], list[int], list[int]]:
    """Children lists, roots and a post-order (children before parents) of the forest."""
    forest = Forest(parent)
    return forest.children, [int(r) for r in forest.roots], forest.post_order


def forest_knapsack(profit: NDArray[np.float64], cost: NDArray[np.int64], capacity: int,
                    parent: NDArray[np.int64]) -> tuple[float, NDArray[np.float64]]:
    """Exact budgeted DP (integer costs ≥ 0). Returns (value, z)."""
    profit = np.asarray(profit, float)
    cost = np.asarray(cost)
    if np.any(cost < 0) or not np.allclose(cost, np.round(cost)):
        raise InvalidParameterError("cost must be non-negative integers")
    cost = np.round(cost).astype(int)
    C = int(capacity)
    if C < 0:
        raise InvalidParameterError("capacity must be >= 0")
    ch, roots, post = _children(np.asarray(parent))
    m = len(profit)
    f: list[NDArray[np.float64]] = [np.zeros(0)] * m
    choice: dict[int, tuple[bool, list[NDArray[np.int64]]]] = {}

    def combine(ids: list[int]) -> tuple[NDArray[np.float64], list[NDArray[np.int64]]]:
        acc = np.zeros(C + 1)
        splits = []
        for j in ids:
            # new[c] = max_{t<=c} acc[c-t] + f_j[t]
            cand = np.full((C + 1, C + 1), -np.inf)
            for t in range(C + 1):
                cand[t:, t] = acc[: C + 1 - t] + f[j][t]
            arg = np.argmax(cand, axis=1)
            acc = cand[np.arange(C + 1), arg]
            splits.append(arg)
        return acc, splits

    for i in post:
        acc, splits = combine(ch[i])
        sel = np.full(C + 1, -np.inf)
        if profit[i] > 0:
            sel[cost[i]:] = profit[i]
        take = sel > acc
        f[i] = np.where(take, sel, acc)
        choice[i] = (take, splits)  # type: ignore[assignment]
    total, rsplits = combine(roots)
    z = np.zeros(m)

    def back(ids: list[int], splits: list[NDArray[np.int64]], c: int) -> None:
        for j, arg in zip(reversed(ids), reversed(splits), strict=True):
            t = int(arg[c])
            take, sp_j = choice[j]
            if take[t]:  # type: ignore[index]
                z[j] = 1.0
            else:
                back(ch[j], sp_j, t)
            c -= t

    back(roots, rsplits, C)
    return float(total[C]), z


def forest_penalized(profit: NDArray[np.float64], parent: NDArray[np.int64]
                     ) -> tuple[float, NDArray[np.float64]]:
    """Exact penalized problem max Σ p_i z_i (p_i = ζ_i − λ a_i) over antichains: the
    forest DP :meth:`rulemip.formulations.forest.Forest.max_antichain`."""
    return Forest(parent).max_antichain(profit)


def forest_knapsack_fptas(profit: NDArray[np.float64], cost: NDArray[np.float64],
                          capacity: float, parent: NDArray[np.int64], eps: float
                          ) -> tuple[float, NDArray[np.float64]]:
    """FPTAS: value ≥ (1 − eps)·OPT, by min-cost DP over scaled profit levels."""
    if not 0 < eps < 1:
        raise InvalidParameterError("eps must be in (0, 1)")
    profit = np.asarray(profit, float)
    cost = np.asarray(cost, float)
    m = len(profit)
    ok = (profit > 0) & (cost <= capacity + 1e-12)
    if not ok.any():
        return 0.0, np.zeros(m)
    mu = eps * profit[ok].max() / m
    sp_ = np.where(ok, np.floor(profit / mu), 0).astype(int)
    P = int(sp_.sum())
    ch, roots, post = _children(np.asarray(parent))
    g: list[NDArray[np.float64]] = [np.zeros(0)] * m
    memo: dict[int, tuple[NDArray[np.bool_], list[NDArray[np.int64]]]] = {}

    def combine(ids: list[int]) -> tuple[NDArray[np.float64], list[NDArray[np.int64]]]:
        acc = np.full(P + 1, np.inf)
        acc[0] = 0.0
        splits = []
        for j in ids:
            cand = np.full((P + 1, P + 1), np.inf)
            for t in range(P + 1):
                if np.isfinite(g[j][t]):
                    cand[t:, t] = acc[: P + 1 - t] + g[j][t]
            arg = np.argmin(cand, axis=1)
            acc = cand[np.arange(P + 1), arg]
            splits.append(arg)
        return acc, splits

    for i in post:
        acc, splits = combine(ch[i])
        sel = np.full(P + 1, np.inf)
        if ok[i]:
            sel[sp_[i]] = cost[i]
        take = sel < acc
        g[i] = np.where(take, sel, acc)
        memo[i] = (take, splits)
    total, rs = combine(roots)
    best = int(np.max(np.flatnonzero(total <= capacity + 1e-9)))
    z = np.zeros(m)

    def back(ids: list[int], splits: list[NDArray[np.int64]], p: int) -> None:
        for j, arg in zip(reversed(ids), reversed(splits), strict=True):
            t = int(arg[p])
            take, sj = memo[j]
            if take[t]:
                z[j] = 1.0
            else:
                back(ch[j], sj, t)
            p -= t

    back(roots, rs, best)
    return float(profit @ z), z
