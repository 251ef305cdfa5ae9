
import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.formulations.node_matrix import extract_nodes
from rulemip.testing.brute_force import brute_force_pruning

pytestmark = pytest.mark.solver


def _brute(nodes, oracle, K, attribute):
    return brute_force_pruning(nodes, oracle.value, nodes.attribute(attribute), budget=K)[0]


@pytest.mark.parametrize("attribute,K", [("rule", 2), ("depth", 3), ("feature", 2)])
def test_exact_equals_brute_force(attribute, K):
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.solvers.result import TerminationReason

    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) + 0.2 * rng.normal(size=25)
    est = GradientBoostingRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    nodes = extract_nodes(est, X, y)
    res, oracle = prune_exact(nodes, y - y.mean(), K, attribute=attribute, gamma=1.0)
    assert res.termination == TerminationReason.OPTIMAL
    assert np.isclose(res.value, _brute(nodes, oracle, K, attribute), rtol=1e-6)
    assert res.lower_bound <= res.value + 1e-9
