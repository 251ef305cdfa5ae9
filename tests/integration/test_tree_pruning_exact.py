import itertools

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.formulations.node_matrix import extract_nodes

pytestmark = pytest.mark.solver


def _brute(nodes, oracle, K, attribute):
    a = nodes.attribute(attribute)
    pairs = nodes.conflict_pairs()
    best = np.inf
    m = nodes.n_nodes
    kmax = int(K) + int(np.sum(a == 0))  # zero-cost nodes (roots under 'feature')
    for k in range(0, min(kmax, m) + 1):
        for S in itertools.combinations(range(m), k):
            z = np.zeros(m)
            z[list(S)] = 1
            if a @ z > K + 1e-9:
                continue
            if pairs.size and np.any(z[pairs[:, 0]] + z[pairs[:, 1]] > 1):
                continue
            best = min(best, oracle.value(z))
    return best


@pytest.mark.parametrize("attribute,K", [("rule", 2), ("depth", 3), ("feature", 2)])
def test_exact_equals_brute_force(attribute, K):
    pytest.importorskip("highspy")
    from rulemip.algorithms.prune_exact import prune_exact
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
