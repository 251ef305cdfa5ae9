"""Relax-and-round (App. D, Alg. 4): valid relaxation bounds, feasible rounding."""


import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.algorithms.pruning.cbcd import path_clique_matrix
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.node_matrix import extract_nodes
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.testing.brute_force import brute_force_pruning

pytestmark = pytest.mark.solver


def _instance(seed=0, n=24, trees=2, depth=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) + 0.2 * rng.normal(size=n)
    est = GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                    random_state=seed).fit(X, y)
    return y - y.mean(), extract_nodes(est, X, y)


def _feasible(nodes, z, a=None, K=None):
    pairs = nodes.conflict_pairs()
    ok = not pairs.size or bool(np.all(z[pairs[:, 0]] + z[pairs[:, 1]] <= 1))
    return ok and (K is None or float(a @ z) <= K + 1e-9)


def _brute(nodes, oracle, a, K=None, lam=0.0):
    return brute_force_pruning(nodes, oracle.value, a, budget=K, lam=lam)[0]


def _cvxpy_relaxation(nodes, y, a, K=None, lam=0.0, gamma=1.0):
    cp = pytest.importorskip("cvxpy")
    M = nodes.M.toarray()
    n, m = M.shape
    z = cp.Variable(m)
    mat = np.eye(n) + gamma * sum(z[i] * np.outer(M[:, i], M[:, i]) for i in range(m))
    P = path_clique_matrix(nodes.parent).toarray()
    cons = [z >= 0, z <= 1, P @ z <= 1]
    if K is not None:
        cons.append(a @ z <= K)
    prob = cp.Problem(cp.Minimize(0.5 * cp.matrix_frac(y, mat) + lam * (a @ z)), cons)
    solver = "CLARABEL" if "CLARABEL" in cp.installed_solvers() else None
    prob.solve(solver=solver)
    return float(prob.value)


@pytest.mark.parametrize("relaxation", ["frank_wolfe", "oa"])
@pytest.mark.parametrize("attribute,K", [("rule", 2), ("rule", 3), ("depth", 3)])
def test_budgeted_bounds_feasibility_and_cvxpy(attribute, K, relaxation):
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    y, nodes = _instance(0)
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute(attribute)
    res = relax_and_round(nodes, y, n_rules=K, attribute=attribute, relaxation=relaxation)
    opt = _brute(nodes, oracle, a, K=K)
    tol = 1e-7 * float(y @ y)
    assert res.relaxation_converged and res.relaxation == relaxation
    assert res.relaxation_lower_bound <= opt + tol      # valid lower bound
    assert res.relaxation_lower_bound <= res.value + tol
    assert res.relaxation_lower_bound <= res.relaxation_value + tol
    # converged: the relaxed value (an upper bound of the relaxation) is within tolerance
    assert res.relaxation_value - res.relaxation_lower_bound <= 1e-6 * res.relaxation_value + tol
    assert opt <= res.value + tol                      # rounded point is feasible ...
    assert _feasible(nodes, res.z, a, K)               # ... and so checked directly
    assert set(np.unique(res.z)) <= {0.0, 1.0}
    assert res.value == pytest.approx(oracle.value(res.z))
    S, w = oracle.weights(res.z)
    assert np.array_equal(S, res.support) and np.allclose(w, res.weights)
    # relaxed point is feasible for the relaxation and attains its value
    P = path_clique_matrix(nodes.parent)
    assert np.all(P @ res.z_relaxed <= 1 + 1e-7) and a @ res.z_relaxed <= K + 1e-7
    assert oracle.value(res.z_relaxed) == pytest.approx(res.relaxation_upper)
    assert res.relaxation_upper == res.relaxation_value
    assert res.relaxation_value == pytest.approx(_cvxpy_relaxation(nodes, y, a, K=K), rel=2e-5)


@pytest.mark.parametrize("relaxation", ["frank_wolfe", "oa"])
@pytest.mark.parametrize("lam", [0.05, 0.5])
def test_penalized_bounds_and_cvxpy(lam, relaxation):
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    y, nodes = _instance(1)
    oracle = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute("rule")
    res = relax_and_round(nodes, y, lam=lam, relaxation=relaxation)
    opt = _brute(nodes, oracle, a, lam=lam)
    tol = 1e-7 * float(y @ y)
    assert res.relaxation_converged
    assert res.relaxation_lower_bound <= opt + tol <= res.value + 2 * tol
    assert _feasible(nodes, res.z)
    assert res.value == pytest.approx(oracle.value(res.z) + lam * res.z.sum())
    assert res.relaxation_value == pytest.approx(_cvxpy_relaxation(nodes, y, a, lam=lam),
                                                 rel=2e-5)


def test_fptas_rounding_is_feasible():
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    y, nodes = _instance(2, trees=3)
    a = nodes.attribute("depth")
    res = relax_and_round(nodes, y, n_rules=4, attribute="depth", fptas_eps=0.1)
    assert res.rounding.startswith("forest_knapsack_fptas")
    assert _feasible(nodes, res.z, a, 4)
    assert res.relaxation_lower_bound <= res.value


def test_errors():
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    y, nodes = _instance(0)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        relax_and_round(nodes, y)
    with pytest.raises(InvalidParameterError, match="exactly one"):
        relax_and_round(nodes, y, n_rules=2, lam=0.1)
    with pytest.raises(InvalidParameterError, match="`lam` must be >= 0"):
        relax_and_round(nodes, y, lam=-1.0)
    with pytest.raises(InvalidParameterError, match="fptas_eps"):
        relax_and_round(nodes, y, n_rules=2, fptas_eps=2.0)
