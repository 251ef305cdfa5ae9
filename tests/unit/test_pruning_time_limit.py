"""Time in the pruning family is a Budget (issue 32): the public functions that also take
``time_limit`` keep it one release with a FutureWarning and still honour it; the package
itself (TreeRuleExtractor, its engines) passes a Budget and never triggers the warning."""

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

DEPRECATED = r"time_limit=\.\.\.\)` is deprecated"


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


def test_cbcd_time_limit_warns_and_is_honoured(forest):
    from rulemip.algorithms.pruning.cbcd import cbcd

    nodes, y = forest
    with pytest.warns(FutureWarning, match=r"`cbcd\(" + DEPRECATED):
        _, _, info = cbcd(nodes, y, 0.01, time_limit=0.0)
    assert info["time_limit_reached"] and not info["converged"]
    _, _, info = cbcd(nodes, y, 0.01, budget=Budget.from_time_limit(0.0))
    assert info["time_limit_reached"]


def test_regularization_path_time_limit_warns_and_is_honoured(forest):
    from rulemip.algorithms.pruning.cbcd import regularization_path

    nodes, y = forest
    full = regularization_path(nodes, y, n_lambdas=6)
    with pytest.warns(FutureWarning, match=r"`regularization_path\(" + DEPRECATED):
        cut = regularization_path(nodes, y, n_lambdas=6, time_limit=0.0)
    assert len(cut.history) < len(full.history) == 6


def test_relax_and_round_time_limit_warns_and_is_honoured(forest):
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    nodes, y = forest
    for relaxation in ("oa", "frank_wolfe"):
        done = relax_and_round(nodes, y, n_rules=3, relaxation=relaxation)
        with pytest.warns(FutureWarning, match=r"`relax_and_round\(" + DEPRECATED):
            cut = relax_and_round(nodes, y, n_rules=3, relaxation=relaxation, time_limit=0.0)
        assert done.relaxation_converged and not cut.relaxation_converged


def test_frank_wolfe_time_limit_warns_and_is_honoured(forest):
    from rulemip.algorithms.convex.frank_wolfe import ForestLMO, frank_wolfe_relaxation
    from rulemip.formulations.tree_pruning import TreePruningCIP

    nodes, y = forest
    base = TreePruningCIP(nodes.M, y, 1.0)
    lmo = ForestLMO(nodes.parent, nodes.attribute("rule"), 3.0)
    with pytest.warns(FutureWarning, match=r"`frank_wolfe_relaxation\(" + DEPRECATED):
        res = frank_wolfe_relaxation(base, lmo, time_limit=0.0)
    assert res.termination == "time_limit"
    assert frank_wolfe_relaxation(base, lmo, budget=Budget.from_time_limit(0.0)
                                  ).termination == "time_limit"


def test_prune_exact_options_time_limit_warns_and_is_honoured(forest):
    from rulemip.algorithms.convex.outer_approximation import OAOptions
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.solvers.result import Limit

    nodes, y = forest
    with pytest.warns(FutureWarning, match=r"`prune_exact: OAOptions\(" + DEPRECATED):
        res, _ = prune_exact(nodes, y, 3, options=OAOptions(time_limit=0.0))
    assert res.limit is Limit.TIME and not res.converged


def test_row_oa_options_time_limit_warns_and_is_kept():
    from rulemip.algorithms.convex.oa_options import RowOAOptions

    with pytest.warns(FutureWarning) as record:
        opts = RowOAOptions(master_gap=lambda ub, lb: 1e-9, time_limit=7.0)
    assert any("`RowOAOptions(time_limit=...)` is deprecated" in str(w.message)
               for w in record)
    assert opts.time_limit == 7.0


@pytest.mark.parametrize("engine", ["exact", "path", "relax_round"])
def test_the_estimator_never_triggers_the_warning(engine):
    X, y = _data(40, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        m = TreeRuleExtractor(GradientBoostingRegressor(n_estimators=3, max_depth=2,
                                                        random_state=0),
                              n_rules=2, reg=2.0, engine=engine, n_lambdas=5,
                              time_limit=30.0).fit(X, y)
    assert m.result_.engine == engine
