"""Tiny instances are settled by closed form / bound, not by fixed heuristic budgets."""

import itertools

import numpy as np
import pytest

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.local.box_swaps import local_search
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.refit import fit_weights
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.testing.brute_force import distinct_boxes


def _one_feature(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 1))
    y = np.sin(3 * X[:, 0]) + rng.normal(scale=0.3, size=n)
    return X, (y - y.mean()) / y.std()


@pytest.mark.parametrize("engine", ["auto", "cip-bnb"])
@pytest.mark.parametrize("fit_intercept", [False, True])
def test_at_most_k_cells_is_settled_at_the_cell_means(engine, fit_intercept):
    X, y = _one_feature(40, 0)
    th = candidate_thresholds(X, 5)  # 6 cells <= k = 10
    problem = KRuleProblem.of(Dataset.from_arrays(X, y), 10, reg=1e-8, fit_intercept=fit_intercept,
                              thresholds=th)
    res = solve_exact(problem,
                      engine=engine, budget=Budget.from_time_limit(60))
    assert res.is_optimal and res.method == "bound" and res.iterations == 0
    groups = np.searchsorted(th[0], X[:, 0], side="left")
    within = sum(float(((y[groups == g] - y[groups == g].mean()) ** 2).sum())
                 for g in np.unique(groups)) / len(y)
    # the optimum is the per-cell mean fit (closed form), up to the tiny ridge
    assert res.risk == pytest.approx(within, rel=1e-6)
    assert res.lower_bound <= res.risk


def test_settled_value_matches_brute_force_with_fewer_rules_than_boxes():
    X, y = _one_feature(12, 1)
    th = candidate_thresholds(X, 2)  # 3 cells, k = 3
    problem = KRuleProblem.of(Dataset.from_arrays(X, y), 3, reg=1e-8, fit_intercept=False,
                              thresholds=th)
    res = solve_exact(problem,
                      budget=Budget.from_time_limit(30))
    _, Q = distinct_boxes(X, th, fit_intercept=False)
    best = min(fit_weights(Q[:, list(c)], y, "squared", 1e-8, False).risk
               for s in range(4) for c in itertools.combinations(range(Q.shape[1]), s))
    assert res.is_optimal
    assert res.risk == pytest.approx(best, rel=1e-7)


def test_more_cells_than_rules_is_not_settled_by_closed_form():
    X, y = _one_feature(40, 2)
    th = candidate_thresholds(X, 5)
    problem = KRuleProblem.of(Dataset.from_arrays(X, y), 3, reg=1e-8, fit_intercept=False,
                              thresholds=th)
    res = solve_exact(problem,
                      budget=Budget.from_time_limit(30))
    assert res.is_optimal and res.backend != "bound"


def test_local_search_stops_kicking_at_the_target():
    X, y = _one_feature(40, 0)
    prob = BoxSelectionCIP(Language(10, candidate_thresholds(X, 5), fit_intercept=False),
                           reg=1e-8).build(
        Dataset.from_arrays(X, y))
    free = local_search(prob.oracle, np.zeros(prob.n_boxes), 10,
                        max_kicks=20)
    stopped = local_search(prob.oracle, np.zeros(prob.n_boxes), 10,
                           max_kicks=20, target=np.inf)
    no_kicks = local_search(prob.oracle, np.zeros(prob.n_boxes), 10,
                            max_kicks=0)
    assert free.kicks == 20 and stopped.kicks == 0
    assert stopped.value == no_kicks.value and free.value <= stopped.value
