"""Every search loop stops on the fit's :class:`~rulemip.budget.Budget` (issue 23, one clock).

A budget already spent must stop each loop at its first check — the result then says the
search is incomplete (or reports the time limit) while its bound stays valid — and an
unlimited budget must give the same answer as no budget at all.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.algorithms.krule.box_bnb import branch_and_bound
from rulemip.algorithms.krule.cell_bnb import solve_cell_bnb
from rulemip.algorithms.local.box_swaps import local_search
from rulemip.boosting import RuleBooster, SearchSpace, find_rule, make_objective
from rulemip.boosting.boxsearch.range_search import box_search
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.exceptions import SolveLimitWarning
from rulemip.formulations.box_oracles import enumerate_optimum
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem


def _spent() -> Budget:
    return Budget.from_time_limit(0.0)


def _data(seed: int = 0, n: int = 40, d: int = 2) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, d)).astype(float)
    y = np.where(X[:, 0] > 2, 1.0, -0.5) + 0.3 * rng.normal(size=n)
    return X, y


def _problem(k: int = 3):
    X, y = _data()
    ds = Dataset.from_arrays(X, y)
    prob = BoxSelectionCIP(Language(k, candidate_thresholds(X, 3)), reg=1e-3).build(ds)
    return ds, prob


def test_enumeration_stops_on_a_spent_budget_and_matches_without_one() -> None:
    _, prob = _problem()
    _, v, lb, complete = enumerate_optimum(prob.oracle, prob.n_boxes, 3)
    assert complete and lb <= v
    _, v2, lb2, complete2 = enumerate_optimum(prob.oracle, prob.n_boxes, 3,
                                              budget=Budget.unlimited())
    assert complete2 and v2 == v and lb2 == lb
    _, _, lb3, complete3 = enumerate_optimum(prob.oracle, prob.n_boxes, 3, budget=_spent())
    assert not complete3 and lb3 == -np.inf


def test_box_branch_and_bound_stops_on_a_spent_budget_with_a_valid_bound() -> None:
    _, prob = _problem()
    _, v, _, _ = enumerate_optimum(prob.oracle, prob.n_boxes, 3)
    res = branch_and_bound(prob.oracle, prob.n_boxes, 3, budget=_spent(), search_time=0.0)
    assert not res.complete and res.nodes == 0
    assert res.lower_bound <= v * (1 + 1e-9) <= res.value * (1 + 1e-9)
    # an unlimited budget completes (k = 2: 1 400 nodes in about 2 s; k = 3 took 50 s of the
    # default run for the same check)
    _, v2, _, _ = enumerate_optimum(prob.oracle, prob.n_boxes, 2)
    full = branch_and_bound(prob.oracle, prob.n_boxes, 2, budget=Budget.unlimited())
    assert full.complete and full.value == pytest.approx(v2, rel=1e-9)


def test_local_search_makes_no_kick_on_a_spent_budget() -> None:
    _, prob = _problem()
    out = local_search(prob.oracle, np.zeros(prob.n_boxes), 3, budget=_spent())
    assert out.kicks == 0 and math.isfinite(out.value)


def test_cell_bnb_reports_the_time_limit_of_a_spent_budget() -> None:
    ds, _ = _problem()
    th = candidate_thresholds(ds.X, 3)
    res = solve_cell_bnb(KRuleProblem.of(ds, 3, reg=1e-3, thresholds=th), budget=_spent())
    problem = KRuleProblem.of(ds, 3, reg=1e-3, thresholds=th)
    full = solve_cell_bnb(problem, budget=Budget.unlimited())
    assert full.is_optimal and not res.is_optimal
    assert res.lower_bound <= full.risk + 1e-9 <= res.risk + 2e-9


@pytest.mark.parametrize("search", ["greedy", "beam", "bnb"])
def test_rule_search_reports_the_time_limit_of_a_spent_budget(search: str) -> None:
    X, y = _data(1, n=60, d=3)
    space = SearchSpace.build(X)
    obj = make_objective("gs", y - y.mean())
    free = find_rule(space, obj, search=search, budget=Budget.unlimited())
    stopped = find_rule(space, obj, search=search, budget=_spent())
    assert free is not None and stopped is not None
    assert stopped.status == "time_limit" and not stopped.certified
    assert stopped.value <= free.value + 1e-12
    if search == "bnb":
        assert free.certified and stopped.bound >= free.value - 1e-12


def test_range_search_takes_the_budget() -> None:
    X, y = _data(2, n=60, d=3)
    space = SearchSpace.build(X)
    obj = make_objective("gs", y - y.mean())
    res = box_search(space, obj, budget=_spent())
    assert res is not None and res.status == "time_limit"


def test_booster_rounds_share_the_callers_budget() -> None:
    X, y = _data(3, n=60, d=3)
    ds = Dataset.from_arrays(X, y)
    with pytest.warns(SolveLimitWarning, match="time limit"):
        RuleBooster(n_rules=2).fit(ds, budget=_spent())
    free = RuleBooster(n_rules=2).fit(ds, budget=Budget.unlimited())
    assert free.limit_reached_ is None
