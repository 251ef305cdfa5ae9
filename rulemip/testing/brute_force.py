"""Brute-force optima of the k-rule problem for tiny instances (test oracles).

Independent of the cell reduction and of the CIP's oracles: boxes are enumerated on the
*original* rows (every run of consecutive threshold groups per feature), deduplicated by
query vector, and every multiset of at most k distinct boxes (repetition allowed — with a
ridge, two copies of a box split its weight and lower the penalty) is refitted with
:func:`rulemip.refit.fit_weights` on the full data. Only for n ≤ ~20, B ≤ ~60, k ≤ 3.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.data.thresholds import candidate_thresholds
from rulemip.refit import fit_weights

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class BruteForceOptimum:
    """The best multiset of boxes, its risk and the number of multisets tried."""

    risk: float
    boxes: tuple[tuple[tuple[float, float], ...], ...]  # per rule, per feature (lower, upper)
    n_boxes: int
    n_evaluated: int


def distinct_boxes(X: FloatArray, thresholds: Sequence[FloatArray], fit_intercept: bool,
                   max_rule_length: int | None = None
                   ) -> tuple[list[tuple[tuple[float, float], ...]], FloatArray]:
    """Boxes ``lower < x <= upper`` over the cut points with distinct, non-empty query
    vectors on ``X`` (the all-covering one dropped with an intercept); returns the boxes
    and the n × B query matrix."""
    n, d = X.shape
    per_feature: list[list[tuple[float, float]]] = []
    for j in range(d):
        cuts = [-math.inf, *np.asarray(thresholds[j], dtype=float).tolist(), math.inf]
        per_feature.append([(cuts[a], cuts[b]) for a in range(len(cuts))
                            for b in range(a + 1, len(cuts))])
    seen: dict[bytes, int] = {}
    boxes: list[tuple[tuple[float, float], ...]] = []
    cols: list[NDArray[np.bool_]] = []
    for box in itertools.product(*per_feature):
        restricted = sum(1 for lo, hi in box if not (math.isinf(lo) and math.isinf(hi)))
        if max_rule_length is not None and restricted > max_rule_length:
            continue
        q = np.ones(n, dtype=bool)
        for j, (lo, hi) in enumerate(box):
            q &= (X[:, j] > lo) & (X[:, j] <= hi)
        if not q.any() or (fit_intercept and q.all()):
            continue
        key = np.packbits(q).tobytes()
        if key in seen:
            continue
        seen[key] = len(boxes)
        boxes.append(box)
        cols.append(q)
    Q = np.column_stack(cols).astype(float) if cols else np.zeros((n, 0))
    return boxes, Q


def brute_force_optimum(X: FloatArray, y: FloatArray, n_rules: int, loss: str = "squared",
                        reg: float = 1e-3, fit_intercept: bool = True,
                        thresholds: Sequence[FloatArray] | None = None,
                        max_thresholds: int | None = None,
                        sample_weight: FloatArray | None = None,
                        max_rule_length: int | None = None) -> BruteForceOptimum:
    """Minimum of :math:`R_\\lambda` over all ensembles of at most ``n_rules`` boxes."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    ths = list(thresholds) if thresholds is not None else \
        candidate_thresholds(X, max_thresholds)
    boxes, Q = distinct_boxes(X, ths, fit_intercept, max_rule_length)
    best = math.inf
    best_set: tuple[int, ...] = ()
    count = 0
    for size in range(n_rules + 1):
        for combo in itertools.combinations_with_replacement(range(len(boxes)), size):
            res = fit_weights(Q[:, list(combo)], y, loss, reg, fit_intercept,
                              sample_weight=sample_weight)
            count += 1
            if res.risk < best:
                best, best_set = float(res.risk), combo
    return BruteForceOptimum(best, tuple(boxes[b] for b in best_set), len(boxes), count)


def _antichains(node: int, children: list[list[int]]) -> list[list[int]]:
    """Every set of nodes in the subtree of ``node`` with no node above another."""
    out: list[list[int]] = [[node]]
    below: list[list[int]] = [[]]
    for c in children[node]:
        below = [a + b for a in below for b in _antichains(c, children)]
    return out + below


def brute_force_pruning(nodes: Any, value: Any, cost: FloatArray,
                        budget: float | None = None, lam: float = 0.0
                        ) -> tuple[float, FloatArray]:
    r"""Exact :math:`\min\{q(z) + \lambda\, a^\top z\}` of tree pruning ([PRUNE] (1), (4))
    over every feasible selection, for tiny ensembles.

    Feasible: no node selected together with one of its descendants (the correct (1a) of
    docs/explanation/tree_pruning.md) — within each tree an antichain of the node forest — and,
    with ``budget``,
    :math:`a^\top z \le K` (1b). ``nodes`` is a
    :class:`~rulemip.formulations.node_matrix.NodeMatrix`, ``value(z)`` the convex q,
    ``cost`` the attribute vector a. Returns ``(optimum, z*)`` (first minimizer found).
    """
    parent = np.asarray(nodes.parent)
    m = len(parent)
    children: list[list[int]] = [[] for _ in range(m)]
    roots: list[int] = []
    for j in range(m):
        (children[int(parent[j])] if parent[j] >= 0 else roots).append(j)
    per_root = [_antichains(r, children) for r in roots]
    a = np.asarray(cost, dtype=float)
    best, best_z = math.inf, np.zeros(m)
    for combo in itertools.product(*per_root):
        z = np.zeros(m)
        z[[i for part in combo for i in part]] = 1.0
        c = float(a @ z)
        if budget is not None and c > budget + 1e-9:
            continue
        v = float(value(z)) + lam * c
        if v < best:
            best, best_z = v, z
    return best, best_z
