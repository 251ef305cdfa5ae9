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
