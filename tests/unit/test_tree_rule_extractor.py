import numpy as np
import pytest
from sklearn.ensemble import RandomForestRegressor


@pytest.mark.solver
def test_extractor_prediction_matches_node_model():
    pytest.importorskip("highspy")
    from rulemip.estimators.tree_rules import TreeRuleExtractor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = 2 * (X[:, 0] > 0) + X[:, 1] + 0.1 * rng.normal(size=40)
    rf = RandomForestRegressor(n_estimators=3, max_depth=2, random_state=0).fit(X, y)
    m = TreeRuleExtractor(rf, n_rules=3, prefit=True, gamma=1.0, time_limit=30).fit(X, y)
    assert len(m.rules_.rules) <= 3
    nodes = m.nodes_
    direct = m.intercept_ + nodes.reach[:, m.selected_] @ m.coef_
    np.testing.assert_allclose(m.predict(X), direct, atol=1e-9)
    assert m.score(X, y) > 0.3
