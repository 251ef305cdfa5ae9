"""The tree start of the local phase stops with the fit's budget (issue 38, items 7–8).

``threshold_tree_rules`` scanned every candidate threshold of every feature per split
without asking the budget: 1.1 s per call on friedman1 5 000 × 10, after the budget of
a gap study was spent.
"""

from __future__ import annotations

import numpy as np

from rulemip.algorithms.local.multi_start import threshold_tree_rules
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.rules.problem import KRuleProblem


def _problem() -> KRuleProblem:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = 2.0 * (X[:, 0] > 0) - 1.0 * (X[:, 1] > 0.5) + rng.normal(scale=0.1, size=200)
    return KRuleProblem.of(Dataset.from_arrays(X, y), 2, thresholds=candidate_thresholds(X, 6))


def test_a_spent_budget_grows_no_leaf_and_a_fresh_one_changes_nothing() -> None:
    problem = _problem()
    free = threshold_tree_rules(problem, 3)
    assert len(free) == 2
    fresh = threshold_tree_rules(problem, 3, budget=Budget.from_time_limit(60.0))
    assert [r.conditions for r in fresh] == [r.conditions for r in free]
    spent = Budget.from_time_limit(None, work_limit=1)
    spent.charge(1)
    assert threshold_tree_rules(problem, 3, budget=spent) == []


def _reference_split(X, y, w, rows, lo, hi, thresholds):
    """The split search as it was: every threshold's left sums over a mask, O(n m)."""
    best = (0.0, -1, 0.0)
    wy, ww = w[rows] * y[rows], w[rows]
    total_s, total_w = float(wy.sum()), float(ww.sum())
    for j in range(X.shape[1]):
        xj = X[rows, j]
        for t in thresholds[j]:
            if not lo[j] < t < hi[j]:
                continue
            left = xj <= t
            wl = float(ww[left].sum())
            wr = total_w - wl
            if wl <= 0 or wr <= 0:
                continue
            sl = float(wy[left].sum())
            gain = sl * sl / wl + (total_s - sl) ** 2 / wr - total_s * total_s / total_w
            if gain > best[0] * (1 + 1e-12) + 1e-15:
                best = (gain, j, float(t))
    return best


def test_the_first_split_is_the_scan_over_every_threshold() -> None:
    """The cumulative-sum split search (O(n log n) a feature; issue 38: with every
    midpoint of 100 000 rows the mask per threshold ran a minute past a spent budget)
    picks the split of the threshold-by-threshold scan, on weighted data with ties."""
    for seed in range(12):
        rng = np.random.default_rng(seed)
        n, d = int(rng.integers(5, 60)), int(rng.integers(1, 4))
        X = rng.integers(0, 6, size=(n, d)).astype(float)
        y = rng.normal(size=n) + (X[:, 0] > 2)
        w = rng.uniform(0.5, 2.0, n)
        ths = candidate_thresholds(X, None)
        problem = KRuleProblem.of(Dataset.from_arrays(X, y, sample_weight=w), 1,
                                  thresholds=ths)
        rules = threshold_tree_rules(problem, 2)
        _, j, t = _reference_split(X, y, problem.dataset.weights, np.ones(n, bool),
                                   np.full(d, -np.inf), np.full(d, np.inf), ths)
        if j < 0:
            assert rules == []
            continue
        (cond,) = rules[0].conditions
        assert cond.feature == j and t in (cond.lower, cond.upper)
