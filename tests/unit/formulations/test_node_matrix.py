import itertools

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

from rulemip.formulations.node_matrix import extract_nodes
from rulemip.formulations.tree_pruning import TreePruningCIP


def _data(n=30, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] - 2 * (X[:, 1] > 0) + 0.1 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("kind", ["rf", "gb"])
def test_leaves_with_fitted_values_reproduce_predictions(kind):
    X, y = _data()
    est = (RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0) if kind == "rf"
           else GradientBoostingRegressor(n_estimators=4, max_depth=2, random_state=0))
    est.fit(X, y)
    nodes = extract_nodes(est, X, node_values="fitted")
    pred = nodes.offset + nodes.M[:, nodes.is_leaf] @ np.ones(nodes.is_leaf.sum())
    np.testing.assert_allclose(pred, est.predict(X), atol=1e-8)


def test_mean_values_paths_and_descendants():
    X, y = _data()
    est = RandomForestRegressor(n_estimators=2, max_depth=3, random_state=1).fit(X, y)
    nodes = extract_nodes(est, X, y)
    R = nodes.reach.toarray()
    for i in range(nodes.n_nodes):
        inside = np.all((nodes.lower[i] < X) & (nodes.upper[i] >= X), axis=1)
        np.testing.assert_array_equal(inside, R[:, i] > 0)
        if inside.any():
            assert np.isclose(nodes.mu[i], y[inside].mean())
        for j in nodes.descendants[i]:
            assert nodes.depth[j] > nodes.depth[i]
            assert np.all(R[:, j] <= R[:, i])


def test_woodbury_equals_direct_and_gradient_finite_differences():
    X, y = _data(20)
    est = GradientBoostingRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    nodes = extract_nodes(est, X, y)
    yc = y - y.mean()
    gamma = 0.7
    orc = TreePruningCIP(nodes.M, yc, gamma)
    Md = nodes.M.toarray()
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = rng.uniform(0.05, 1, size=nodes.n_nodes) * (rng.uniform(size=nodes.n_nodes) < 0.6)
        v, g = orc.value_and_gradient(z)
        A = np.eye(len(yc)) + gamma * Md @ np.diag(z) @ Md.T
        assert np.isclose(v, 0.5 * yc @ np.linalg.solve(A, yc))
        h = 1e-6
        for i in np.flatnonzero(z > 0.1)[:5]:
            e = np.zeros_like(z)
            e[i] = h
            fd = (orc.value(z + e) - orc.value(z - e)) / (2 * h)
            assert np.isclose(g[i], fd, rtol=1e-4, atol=1e-7)


def test_binary_value_equals_ridge_refit():
    X, y = _data(25)
    est = RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0).fit(X, y)
    nodes = extract_nodes(est, X, y)
    yc = y - y.mean()
    gamma = 2.0
    orc = TreePruningCIP(nodes.M, yc, gamma)
    Md = nodes.M.toarray()
    for S in itertools.islice(itertools.combinations(range(nodes.n_nodes), 2), 20):
        z = np.zeros(nodes.n_nodes)
        z[list(S)] = 1
        MS = Md[:, list(S)]
        w = np.linalg.solve(MS.T @ MS + np.eye(2) / gamma, MS.T @ yc)
        obj = 0.5 * np.sum((yc - MS @ w) ** 2) + 0.5 / gamma * w @ w
        assert np.isclose(orc.value(z), obj)


@pytest.mark.parametrize("kind", ["rf", "gb", "et"])
def test_every_leaf_with_weight_one_reproduces_ensemble(kind):
    """Selecting all leaves (z = 1 on leaves, w = 1) with fitted node values gives
    offset + Σ leaves = the ensemble's prediction, also on points not used for fitting."""
    from sklearn.ensemble import ExtraTreesRegressor

    X, y = _data(30, seed=4)
    est = {"rf": RandomForestRegressor(n_estimators=3, max_depth=3, random_state=0),
           "gb": GradientBoostingRegressor(n_estimators=5, max_depth=3, learning_rate=0.3,
                                           random_state=0),
           "et": ExtraTreesRegressor(n_estimators=4, max_depth=3, random_state=0)}[kind]
    est.fit(X, y)
    Xn, _ = _data(15, seed=5)
    for Z in (X, Xn):
        nodes = extract_nodes(est, Z, node_values="fitted")
        w = nodes.is_leaf.astype(float)
        pred = nodes.offset + nodes.M @ w
        np.testing.assert_allclose(pred, est.predict(Z), atol=1e-10)
        # every point reaches exactly one leaf per tree
        per_tree = nodes.reach[:, nodes.is_leaf].sum(axis=1)
        np.testing.assert_array_equal(np.asarray(per_tree).ravel(), len(nodes.multipliers))
    if kind == "gb":
        assert nodes.offset != 0.0 and np.isclose(nodes.offset, y.mean())


def test_stacked_and_scaled_columns_equal_scipy():
    """The O(nnz) stack and column scaling of the node matrix equal scipy's ``hstack`` and
    ``A @ diag(s)`` (entries the scale zeroes are dropped, as the product drops them)."""
    import scipy.sparse as sp

    from rulemip.formulations.node_matrix import _stack_columns, scale_columns

    rng = np.random.default_rng(0)
    blocks = [sp.random(30, int(k), density=0.3, format="csc", random_state=int(k))
              for k in rng.integers(1, 6, size=7)]
    stacked = _stack_columns(blocks, 30)
    assert (abs(stacked - sp.hstack(blocks, format="csc")) > 0).nnz == 0
    scale = rng.normal(size=stacked.shape[1])
    scale[::3] = 0.0
    mine, theirs = scale_columns(stacked, scale), sp.csc_matrix(stacked @ sp.diags(scale))
    theirs.eliminate_zeros()
    assert mine.nnz == theirs.nnz and abs(mine - theirs).max() == 0


class _ExpiresAfter:
    """A budget whose deadline passes at its ``n``-th check."""

    def __init__(self, n: int) -> None:
        self.checks, self.n = 0, n

    def expired(self) -> bool:
        self.checks += 1
        return self.checks >= self.n


@pytest.mark.parametrize("checks", [1, 3])
def test_a_spent_budget_stops_the_extraction_between_trees(checks):
    """The nodes of the trees extracted before the budget ran out (at least one), the same
    nodes as the whole extraction's first columns; ``complete`` says which."""
    X, y = _data()
    est = GradientBoostingRegressor(n_estimators=6, max_depth=2, random_state=0).fit(X, y)
    whole = extract_nodes(est, X, y)
    cut = extract_nodes(est, X, y, budget=_ExpiresAfter(checks))
    assert whole.complete and whole.trees_extracted == whole.trees_total == 6
    assert not cut.complete and cut.trees_extracted == checks and cut.trees_total == 6
    m = cut.n_nodes
    assert m == int(np.sum(whole.tree < checks))
    np.testing.assert_array_equal(cut.M.toarray(), whole.M[:, :m].toarray())
    np.testing.assert_array_equal(cut.parent, whole.parent[:m])
