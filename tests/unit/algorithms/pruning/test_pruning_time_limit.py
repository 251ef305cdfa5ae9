"""Time in the pruning family is a Budget (issue 32; the ``time_limit`` twins were removed
in 0.3, CHANGELOG.md): a spent budget stops each public function with its time-limit
status, and the estimator (TreeRuleExtractor, its engines) runs warning-free."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.budget import Budget
from rulemip.estimators.tree_rules import TreeRuleExtractor
from rulemip.formulations.node_matrix import extract_nodes

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


def _data(n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = 2 * (X[:, 0] > 0) + X[:, 1] + 0.1 * rng.normal(size=n)
    return X, (y - y.mean()) / y.std()


@pytest.fixture(scope="module")
def forest():
    X, y = _data()
    gb = GradientBoostingRegressor(n_estimators=5, max_depth=3, random_state=0).fit(X, y)
    return extract_nodes(gb, X, y), y


def test_cbcd_stops_on_a_spent_budget(forest):
    from rulemip.algorithms.pruning.cbcd import cbcd

    nodes, y = forest
    _, _, info = cbcd(nodes, y, 0.01, budget=Budget.from_time_limit(0.0))
    assert info["time_limit_reached"] and not info["converged"]
    _, _, done = cbcd(nodes, y, 0.01)
    assert not done["time_limit_reached"]


def test_regularization_path_stops_on_a_spent_budget(forest):
    from rulemip.algorithms.pruning.cbcd import regularization_path

    nodes, y = forest
    full = regularization_path(nodes, y, n_lambdas=6)
    cut = regularization_path(nodes, y, n_lambdas=6, budget=Budget.from_time_limit(0.0))
    assert len(cut.history) < len(full.history) == 6


def test_relax_and_round_stops_on_a_spent_budget(forest):
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    nodes, y = forest
    for relaxation in ("oa", "frank_wolfe"):
        done = relax_and_round(nodes, y, max_cost=3, relaxation=relaxation)
        cut = relax_and_round(nodes, y, max_cost=3, relaxation=relaxation,
                              budget=Budget.from_time_limit(0.0))
        assert done.relaxation_converged and not cut.relaxation_converged


def test_frank_wolfe_stops_on_a_spent_budget(forest):
    from rulemip.algorithms.convex.frank_wolfe import ForestLMO, frank_wolfe_relaxation
    from rulemip.formulations.tree_pruning import TreePruningCIP

    nodes, y = forest
    base = TreePruningCIP(nodes.M, y, 1.0)
    lmo = ForestLMO(nodes.parent, nodes.attribute("rule"), 3.0)
    assert frank_wolfe_relaxation(base, lmo, budget=Budget.from_time_limit(0.0)
                                  ).termination == "time_limit"
    assert frank_wolfe_relaxation(base, lmo).termination != "time_limit"


def test_prune_exact_stops_on_a_spent_budget_given_either_way(forest):
    from rulemip.algorithms.convex.outer_approximation import OAOptions
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.solvers.result import Limit

    nodes, y = forest
    res, _ = prune_exact(nodes, y, 3, budget=Budget.from_time_limit(0.0))
    assert res.limit is Limit.TIME and not res.converged
    opt, _ = prune_exact(nodes, y, 3, options=OAOptions(budget=Budget.from_time_limit(0.0)))
    assert opt.limit is Limit.TIME and not opt.converged


@pytest.mark.parametrize("engine", ["exact", "path", "relax_round"])
def test_the_estimator_warns_nothing(engine):
    X, y = _data(40, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        m = TreeRuleExtractor(GradientBoostingRegressor(n_estimators=3, max_depth=2,
                                                        random_state=0),
                              n_rules=2, reg=2.0, engine=engine, n_lambdas=5,
                              time_limit=30.0).fit(X, y)
    assert m.result_.engine == engine


def test_a_limit_during_extraction_keeps_a_valid_bound():
    """A limit spent while the nodes are extracted: the selection is among the extracted
    trees' nodes and the bound is q >= 0, valid for every selection — not the engine's
    bound over the subset, which can lie above the full problem's optimum."""
    from sklearn.datasets import make_friedman1

    from rulemip import TreeRuleExtractor
    from rulemip.exceptions import SolveLimitWarning

    X, y = make_friedman1(n_samples=300, random_state=0)
    with pytest.warns(SolveLimitWarning):
        est = TreeRuleExtractor(time_limit=0.0, random_state=0).fit(X, y)
    res = est.result_
    assert est.nodes_.trees_extracted == 1 and est.nodes_.trees_total == 100
    assert res.termination.value == "feasible" and res.limit.value == "time"
    assert res.lower_bound == 0.0 and res.value > 0.0
    assert any("stopped the node extraction after 1 of 100 trees" in n for n in res.notes)
    assert set(est.nodes_.tree[est.selected_]) <= {0}
