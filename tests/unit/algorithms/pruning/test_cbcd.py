"""CBCD for penalized pruning (4): exact block updates, block-wise optimality, paths."""

import itertools

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.algorithms.pruning.cbcd import (
    CutPool,
    _block_data,
    _Fit,
    _Problem,
    block_update,
    cbcd,
    node_reach,
    path_clique_matrix,
    regularization_path,
)
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.node_matrix import extract_nodes
from rulemip.formulations.tree_pruning import TreePruningCIP


def _instance(seed=0, n=30, trees=3, depth=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) + 0.3 * np.sin(3 * X[:, 1]) + 0.2 * rng.normal(size=n)
    est = GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                    random_state=seed).fit(X, y)
    return X, y - y.mean(), extract_nodes(est, X, y)


def _antichains(nodes, t):
    """All feasible selections of tree t (brute force), as 0/1 vectors on its nodes."""
    idx = np.flatnonzero(nodes.tree == t)
    out = []
    for bits in itertools.product([0, 1], repeat=idx.size):
        u = np.array(bits, float)
        sel = set(idx[u > 0])
        if all(not (set(nodes.descendants[i]) & sel) for i in sel):
            out.append(u)
    return idx, out


def _objective(oracle, a, lam, z):
    return oracle.value(z) + lam * float(a @ z)


def _block_min(nodes, oracle, a, lam, z, t):
    idx, us = _antichains(nodes, t)
    best = np.inf
    for u in us:
        zz = z.copy()
        zz[idx] = u
        best = min(best, _objective(oracle, a, lam, zz))
    return best


def _random_feasible(nodes, rng):
    z = np.zeros(nodes.n_nodes)
    for t in np.unique(nodes.tree):
        idx, us = _antichains(nodes, t)
        z[idx] = us[rng.integers(len(us))]
    return z


def test_partial_residual_and_block_woodbury_match_global_oracle():
    """c = M_tᵀ r with r = y − M_S' w_S' (ridge refit of the other trees alone), K = M_tᵀB⁻¹M_t:
    the block value/gradient equal q and ∇q of the whole problem for every selection."""
    _, y, nodes = _instance(1)
    oracle = TreePruningCIP(nodes.M, y, 1.5)
    prob = _Problem(nodes, y, "rule", 1.5, "highs", 20000)
    rng = np.random.default_rng(0)
    z = _random_feasible(nodes, rng)
    fit = _Fit(prob, z)
    for k, tr in enumerate(prob.trees):
        blk = _block_data(prob, tr, fit.S)
        others = z.copy()
        others[tr.idx] = 0
        S2, w2 = oracle.weights(others)
        r = y - (nodes.M[:, S2] @ w2 if S2.size else 0.0)
        assert np.allclose(blk.c, nodes.M[:, tr.idx].T @ r)
        assert np.isclose(blk.q0, oracle.value(others))
        _, us = _antichains(nodes, k)
        for u in us:
            zz = others.copy()
            zz[tr.idx] = u
            v, g = oracle.value_and_gradient(zz)
            bv, bg = blk.value_grad(u, 1.5)
            assert np.isclose(bv, v, rtol=1e-10, atol=1e-10)
            assert np.allclose(bg, g[tr.idx], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("lam", [0.02, 0.3])
def test_block_update_is_brute_force_block_minimum(lam):
    _, y, nodes = _instance(2)
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute("rule")
    rng = np.random.default_rng(5)
    for _ in range(3):
        z = _random_feasible(nodes, rng)
        for t in range(3):
            z2, obj = block_update(nodes, y, lam, z, t)
            idx = np.flatnonzero(nodes.tree == t)
            assert np.array_equal(np.delete(z2, idx), np.delete(z, idx))  # only tree t moved
            assert np.isclose(obj, _objective(oracle, a, lam, z2))
            assert np.isclose(obj, _block_min(nodes, oracle, a, lam, z, t), rtol=1e-9)


@pytest.mark.solver
def test_block_update_with_milp_master_is_brute_force_minimum():
    pytest.importorskip("highspy")
    _, y, nodes = _instance(3)
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute("depth")
    rng = np.random.default_rng(1)
    z = _random_feasible(nodes, rng)
    for t in range(3):
        _, obj = block_update(nodes, y, 0.05, z, t, attribute="depth", enumeration_limit=0)
        assert np.isclose(obj, _block_min(nodes, oracle, a, 0.05, z, t), rtol=1e-8)


@pytest.mark.parametrize("attribute,lam,active", [("rule", 0.01, True), ("rule", 0.2, False),
                                                  ("depth", 0.05, True)])
def test_cbcd_monotone_and_blockwise_optimal(attribute, lam, active):
    _, y, nodes = _instance(4)
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute(attribute)
    z0 = _random_feasible(nodes, np.random.default_rng(2))
    z, obj, info = cbcd(nodes, y, lam, attribute=attribute, z0=z0, active_set=active)
    trace = np.asarray(info["objective_trace"])
    assert trace[0] == pytest.approx(_objective(oracle, a, lam, z0))
    assert np.all(np.diff(trace) < 0)  # strictly decreasing accepted updates
    assert info["converged"]
    assert obj == pytest.approx(_objective(oracle, a, lam, z))
    assert obj == pytest.approx(trace[-1])
    pairs = nodes.conflict_pairs()
    assert np.all(z[pairs[:, 0]] + z[pairs[:, 1]] <= 1)
    scale = 0.5 * float(y @ y)
    for t in range(3):  # no single-tree change improves the final point
        assert _block_min(nodes, oracle, a, lam, z, t) >= obj - 1e-8 * scale


@pytest.mark.solver
def test_cbcd_with_milp_masters_matches_enumeration():
    pytest.importorskip("highspy")
    _, y, nodes = _instance(5)
    _, o1, _ = cbcd(nodes, y, 0.05)
    _, o2, info = cbcd(nodes, y, 0.05, enumeration_limit=0, exact_blocks=True)
    assert o2 == pytest.approx(o1, rel=1e-9)
    assert info["master_solves"] > 0


def test_paper_cbcd_without_exact_sweeps_is_monotone():
    _, y, nodes = _instance(9, trees=4)
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute("rule")
    z, obj, info = cbcd(nodes, y, 0.02, exact_blocks=False)
    trace = np.asarray(info["objective_trace"])
    assert np.all(np.diff(trace) < 0) and info["exact_sweeps"] == 0
    assert obj == pytest.approx(_objective(oracle, a, 0.02, z))
    _, obj2, info2 = cbcd(nodes, y, 0.02, z0=z)  # exact sweeps can only improve
    assert obj2 <= obj + 1e-12 and info2["exact_sweeps"] >= 1


@pytest.mark.solver
def test_cut_pool_recycles_across_calls():
    pytest.importorskip("highspy")
    _, y, nodes = _instance(6)
    pool = CutPool()
    kw = {"enumeration_limit": 0, "exact_blocks": True}  # OA block solves (MILP masters)
    cbcd(nodes, y, 0.5, cut_pool=pool, **kw)
    assert any(pool.points(t) for t in range(3))
    _, _, info = cbcd(nodes, y, 0.01, cut_pool=pool, **kw)
    assert info["block_solves"] > 0 and info["cuts_recycled"] > 0


def test_lambda_max_and_path():
    _, y, nodes = _instance(7)
    res = regularization_path(nodes, y, n_lambdas=12)
    prob = _Problem(nodes, y, "rule", 1.0, "highs", 20000)
    lmax = prob.lambda_max()
    assert res.lambda_max == pytest.approx(lmax)
    assert res.lambdas[0] == pytest.approx(lmax) and np.all(np.diff(res.lambdas) < 0)
    assert res.models[0].support.size == 0  # empty at λ_max
    z_below, _, _ = cbcd(nodes, y, 0.99 * lmax)
    assert z_below.sum() >= 1  # and not below it
    supports = [m.support.tobytes() for m in res.models]
    assert len(set(supports)) == len(supports) >= 3
    assert np.all(np.diff([m.lam for m in res.models]) < 0)
    # typical case: more rules as λ decreases (the last model is the largest)
    assert res.models[-1].cost >= max(m.cost for m in res.models) - 1
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    for m in res.models:
        assert m.q_value == pytest.approx(oracle.value(m.z))
        assert m.objective == pytest.approx(m.q_value + m.lam * m.cost)
        S, w = oracle.weights(m.z)
        assert np.array_equal(S, m.support) and np.allclose(w, m.weights)
        pred = nodes.M[:, S] @ w if S.size else np.zeros_like(y)
        assert m.train_risk == pytest.approx(np.mean((y - pred) ** 2))
        assert m.valid_risk is None
    assert len(res.history) == 12 and all("sweeps" in h for h in res.history)


def test_validation_risk_uses_node_boxes():
    X, y, nodes = _instance(8)
    R = node_reach(nodes, X)
    assert (nodes.reach != R).nnz == 0
    res = regularization_path(nodes, y, n_lambdas=6, X_valid=X, y_valid=y)
    for m in res.models:
        assert m.valid_risk == pytest.approx(m.train_risk)
    res2 = regularization_path(nodes, y, n_lambdas=6, X_valid=X, y_valid=y + 1.0, intercept=1.0)
    assert [m.valid_risk for m in res2.models] == pytest.approx([m.train_risk for m in res.models])


def test_path_clique_matrix_rows_are_root_to_leaf_paths():
    parent = np.array([-1, 0, 0, 1, 1, -1])
    P = path_clique_matrix(parent).toarray()
    assert sorted(map(tuple, P.astype(int))) == sorted(
        [(1, 1, 0, 1, 0, 0), (1, 1, 0, 0, 1, 0), (1, 0, 1, 0, 0, 0), (0, 0, 0, 0, 0, 1)])


def test_errors():
    _, y, nodes = _instance(0)
    with pytest.raises(InvalidParameterError, match="`lam` must be >= 0"):
        cbcd(nodes, y, -1.0)
    z = np.zeros(nodes.n_nodes)
    z[[0, 1]] = 1  # root and its child
    with pytest.raises(InvalidParameterError, match="ancestor"):
        cbcd(nodes, y, 0.1, z0=z)
    with pytest.raises(InvalidParameterError):
        regularization_path(nodes, y, X_valid=np.zeros((2, 3)))
