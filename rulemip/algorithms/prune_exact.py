"""Exact pruning of tree ensembles (Alg. 1 of [PRUNE]) and its greedy warm start.

``prune_exact`` solves CIP (2) ``min q(z)`` over the conflict/budget set by the shared
outer-approximation engine, with cuts first at z = 0 (whose gradient gives every node's
marginal gain −(γ/2)(M_iᵀy)²) and at a greedy solution; ``q ≥ 0`` is passed as a proved
lower bound for ν.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.outer_approximation import OAOptions, OAResult, outer_approximation
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.formulations.tree_pruning import TreePruningCIP, pruning_feasible_model

__all__ = ["greedy_prune", "prune_exact"]


def greedy_prune(oracle: TreePruningCIP, nodes: NodeMatrix, n_rules: float,
                 attribute: str = "rule") -> NDArray[np.float64]:
    """Greedy feasible selection: add the feasible node of largest gradient gain per cost,
    accepting it only if q decreases."""
    a = nodes.attribute(attribute)  # type: ignore[arg-type]
    m = nodes.n_nodes
    z = np.zeros(m)
    blocked = np.zeros(m, dtype=bool)
    used = 0.0
    val, g = oracle.value_and_gradient(z)
    while True:
        ok = (~blocked) & (z == 0) & (used + a <= n_rules + 1e-9) & (g < 0)
        if not ok.any():
            return z
        score = np.where(ok, -g / np.maximum(a, 1.0), -np.inf)
        i = int(np.argmax(score))
        z2 = z.copy()
        z2[i] = 1.0
        v2, g2 = oracle.value_and_gradient(z2)
        blocked[i] = True
        if v2 < val - 1e-12:
            z, val, g = z2, v2, g2
            used += a[i]
            blocked[nodes.descendants[i]] = True
            p = nodes.parent[i]
            while p >= 0:
                blocked[p] = True
                p = nodes.parent[p]


def prune_exact(nodes: NodeMatrix, y: NDArray[np.float64], n_rules: float, *,
                attribute: str = "rule", gamma: float = 1.0,
                options: OAOptions | None = None) -> tuple[OAResult, TreePruningCIP]:
    """Exact Alg. 1 on CIP (2); ``y`` is used as given (center it for an intercept)."""
    oracle = TreePruningCIP(nodes.M, y, gamma)
    feas = pruning_feasible_model(nodes, n_rules, attribute)
    z0 = np.zeros(nodes.n_nodes)
    zg = greedy_prune(oracle, nodes, n_rules, attribute)
    res = outer_approximation(oracle, feas, warm_starts=(z0, zg), options=options,
                              lower_bound_hint=0.0)
    return res, oracle
