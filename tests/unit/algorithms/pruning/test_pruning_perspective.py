"""The perspective bound through its dual and its branch and bound (issue 39, item 1):
never above the brute-force optimum (every K-subset obeying the node/descendant rule and
the fixings), close to it where the relaxation is tight, valid when stopped, and in
agreement with engine "exact"."""

import dataclasses
import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

from rulemip.algorithms.pruning.driver import PRUNING_ENGINES, solve_pruning
from rulemip.algorithms.pruning.knapsack_conflicts import forest_knapsack
from rulemip.algorithms.pruning.perspective import (
    FREE,
    IN,
    OUT,
    PerspectiveProblem,
    knapsack_dp,
    node_relaxation,
)
from rulemip.algorithms.pruning.perspective_bnb import perspective_bnb
from rulemip.budget import Budget
from rulemip.formulations.node_matrix import extract_nodes
from rulemip.solvers.result import Limit
from rulemip.testing.brute_force import brute_force_pruning

RIDGES = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1e3)


def _data(seed, n=40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) - 0.8 * (X[:, 1] > 0) + 0.3 * rng.normal(size=n)
    return X, y - y.mean()


def _boosted(seed=0, trees=3):
    X, y = _data(seed)
    est = GradientBoostingRegressor(n_estimators=trees, max_depth=2, random_state=seed)
    return extract_nodes(est.fit(X, y), X, y), y


def _duplicated(seed=1):
    """Two identical trees (every node column twice) and zero root columns (the root's
    mean of a centered response is 0)."""
    X, y = _data(seed)
    est = RandomForestRegressor(n_estimators=2, max_depth=2, bootstrap=False,
                                random_state=seed).fit(X, y)
    nodes = extract_nodes(est, X, y)
    M = nodes.M.toarray()
    assert np.allclose(M[:, : M.shape[1] // 2], M[:, M.shape[1] // 2:])
    assert np.allclose(M[:, nodes.parent < 0], 0.0)
    M[:, nodes.parent < 0] = 0.0
    return dataclasses.replace(nodes, M=sp.csc_matrix(M)), y


INSTANCES = {"boosted": _boosted, "duplicate columns": _duplicated}


def _optimum(problem, K, status=None):
    """Brute-force min q over every selection of cost ≤ K obeying ``status``."""
    def value(z):
        if status is not None and (np.any(z[status == IN] < 1) or np.any(z[status == OUT] > 0)):
            return math.inf
        return problem.cip.value(z)
    return brute_force_pruning(problem.nodes, value, problem.cost.astype(float), budget=K)[0]


def _free(m):
    return np.zeros(m, dtype=np.int8)


def test_compiled_dp_is_the_forest_knapsack():
    nodes, _ = _boosted(trees=4)
    rng = np.random.default_rng(0)
    for attribute in ("rule", "depth"):
        p = PerspectiveProblem(nodes, np.zeros(nodes.M.shape[0]), 3, attribute, 1.0)
        for _ in range(5):
            profit = rng.random(p.m)
            value, z = knapsack_dp(profit, p.cost, 3, p.forest)
            ref, _ = forest_knapsack(profit, p.cost, 3, nodes.parent)
            assert value == pytest.approx(ref, rel=1e-12)
            assert profit @ z == pytest.approx(value) and p.cost @ z <= 3


def test_dp_with_fixings_is_the_best_selection_obeying_them():
    nodes, _ = _boosted(trees=2)
    p = PerspectiveProblem(nodes, np.zeros(nodes.M.shape[0]), 3, "rule", 1.0)
    rng = np.random.default_rng(1)
    profit = rng.random(p.m)
    for i, j in itertools.product(range(p.m), range(p.m)):
        status = p.propagate(_free(p.m), i)
        if status[j] == FREE:
            status[j] = OUT
        value, z = knapsack_dp(profit, p.cost, 3, p.forest, status)
        best = brute_force_pruning(
            nodes, lambda s, st=status: -(profit @ s) if (np.all(s[st == IN] == 1)
                                                            and np.all(s[st == OUT] == 0))
            else math.inf, p.cost.astype(float), budget=3)[0]
        assert value == pytest.approx(-best)
        assert z[i] and not z[status == OUT].any()
    both = p.propagate(p.propagate(_free(p.m), 0), 1)  # node 0 is 1's parent: infeasible
    assert nodes.parent[1] == 0
    assert knapsack_dp(profit, p.cost, 3, p.forest, both)[0] == -math.inf or both[0] == OUT


@pytest.mark.parametrize("kind", sorted(INSTANCES))
@pytest.mark.parametrize("reg", RIDGES)
def test_bound_never_above_brute_force(kind, reg):
    nodes, y = INSTANCES[kind]()
    K = 3
    p = PerspectiveProblem(nodes, y, K, "rule", 1.0 / reg)
    opt = _optimum(p, K)
    rng = np.random.default_rng(0)
    for alpha in (y, np.zeros_like(y), rng.normal(size=y.shape), 0.5 * y):
        assert p.dual_bound(alpha)[0] <= opt + 1e-9 * max(1.0, opt)
    rel = node_relaxation(p, _free(p.m), [np.zeros(0, dtype=np.int64)], np.ones(1),
                          threshold=math.inf, rel_tol=1e-10, max_iter=2000,
                          budget=Budget.unlimited())
    assert rel.lower_bound <= opt + 1e-9 * max(1.0, opt)
    assert rel.lower_bound <= rel.value + 1e-9 * max(1.0, rel.value)
    if reg >= 100.0:  # a strong ridge: the relaxation is within 0.2 % (1e3: 1e-4) of
        # the optimum — a bound made too strong (or a wrong inner maximum) crosses it here
        assert rel.lower_bound >= opt * (1 - (2e-3 if reg < 1e3 else 1e-4))
    # every fixing of one node in or out: the bound at the node never above its optimum
    for i in range(0, p.m, 5):
        for status in (p.propagate(_free(p.m), i),
                       np.where(np.arange(p.m) == i, np.int8(OUT), _free(p.m))):
            opt_node = _optimum(p, K, status)
            _, s = p.dual_bound(y, status)
            node = node_relaxation(p, status.astype(np.int8), [np.flatnonzero(s)],
                                   np.ones(1), threshold=math.inf, rel_tol=1e-8,
                                   max_iter=300, budget=Budget.unlimited())
            assert node.lower_bound <= opt_node + 1e-9 * max(1.0, opt_node)


@pytest.mark.parametrize("kind", sorted(INSTANCES))
@pytest.mark.parametrize("reg", (1e-3, 1.0, 1e3))
def test_branch_and_bound_finds_the_optimum(kind, reg):
    nodes, y = INSTANCES[kind]()
    p = PerspectiveProblem(nodes, y, 3, "rule", 1.0 / reg)
    opt = _optimum(p, 3)
    res = perspective_bnb(nodes, y, 3, gamma=1.0 / reg, mip_gap=1e-9)
    assert res.finished and res.limit is None
    assert res.value == pytest.approx(opt, rel=1e-7)
    assert res.lower_bound <= opt + 1e-9 * max(1.0, opt)
    assert res.lower_bound >= opt * (1 - 1e-6)


def test_stopped_search_returns_a_valid_bound():
    nodes, y = _boosted(seed=2, trees=4)
    p = PerspectiveProblem(nodes, y, 3, "rule", 1.0)
    opt = _optimum(p, 3)
    for work in (1, 5, 30):
        res = perspective_bnb(nodes, y, 3, gamma=1.0, mip_gap=1e-9,
                              budget=Budget.from_time_limit(None, work_limit=work))
        assert res.lower_bound <= opt + 1e-9 * max(1.0, opt) <= res.value + 1e-9
        if not res.finished:
            assert res.limit is Limit.NODE


@pytest.mark.parametrize("reg", (1.0, 10.0, 100.0))
@pytest.mark.parametrize("attribute", ("rule", "depth"))
def test_agrees_with_exact_engine(reg, attribute):
    nodes, y = _boosted(seed=4, trees=3)
    fits = {engine: solve_pruning(nodes, y, engine=engine, max_cost=4, attribute=attribute,
                                  gamma=1.0 / reg, mip_gap=1e-6)
            for engine in ("perspective", "exact")}
    assert "perspective" in PRUNING_ENGINES
    persp, exact = fits["perspective"], fits["exact"]
    assert persp.result.is_optimal and exact.result.is_optimal
    assert persp.objective == pytest.approx(exact.objective, rel=1e-6)
    assert persp.result.lower_bound <= exact.objective * (1 + 1e-9)


def test_estimator_default_engine_reports_progress_and_a_valid_bound(capsys):
    from rulemip.estimators import TreeRuleExtractor

    X, y = _data(5, n=60)
    gb = GradientBoostingRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    est = TreeRuleExtractor(gb, prefit=True, n_rules=3, reg=1.0, verbose=True).fit(X, y)
    assert est.result_.engine == "perspective" and est.result_.is_optimal
    err = capsys.readouterr().err
    assert "incumbent" in err and "bound" in err and "gap" in err
    p = PerspectiveProblem(est.nodes_, (y - est.intercept_) / est.y_scale_, 3, "rule",
                           est.gamma_)
    opt = _optimum(p, 3)
    assert est.objective_ == pytest.approx(opt, rel=1e-6)
    assert est.result_.lower_bound <= opt + 1e-9 * max(1.0, opt)
