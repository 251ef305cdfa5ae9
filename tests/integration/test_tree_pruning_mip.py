"""Problem (1) as a MIQP (TreePruningMIP) solved by SCIP — the pruning driver's engine
``"mip"`` — equals the exact OA algorithm on CIP (2) and brute force over all feasible node
selections."""


import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

from rulemip.formulations.node_matrix import extract_nodes
from rulemip.formulations.tree_pruning import TreePruningCIP, TreePruningMIP
from rulemip.testing.brute_force import brute_force_pruning

pytestmark = pytest.mark.solver
pytest.importorskip("pyscipopt")


def _solve_mip(nodes, yc, K, *, attribute="rule", gamma=1.0, complementarity="indicator",
               solver="scip", mip_gap=1e-6):
    """The engine ``"mip"`` of the pruning driver: (status, q, bound, z, w)."""
    from rulemip.algorithms.pruning.driver import solve_pruning

    fit = solve_pruning(nodes, yc, engine="mip", n_rules=K, attribute=attribute, gamma=gamma,
                        solver=solver, mip_gap=mip_gap, complementarity=complementarity)
    z = np.zeros(nodes.n_nodes)
    z[fit.support] = 1.0
    w = np.zeros(nodes.n_nodes)
    w[fit.support] = fit.weights
    return fit.result, z, w


def _brute(nodes, oracle, K, attribute):
    return brute_force_pruning(nodes, oracle.value, nodes.attribute(attribute), budget=K)


def _instance(kind, seed=3, n=25, depth=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) - 0.8 * (X[:, 1] > 0) + 0.2 * rng.normal(size=n)
    if kind == "gb":
        est = GradientBoostingRegressor(n_estimators=2, max_depth=depth, random_state=0)
    elif kind == "gb3":
        est = GradientBoostingRegressor(n_estimators=1, max_depth=3, random_state=0)
    else:
        est = RandomForestRegressor(n_estimators=2, max_depth=2, random_state=0)
    est.fit(X, y)
    return extract_nodes(est, X, y), y - y.mean()


@pytest.mark.parametrize("kind,attribute,K,gamma", [
    ("gb", "rule", 2, 1.0), ("gb", "depth", 3, 0.5), ("gb", "feature", 2, 2.0),
    ("rf", "rule", 3, 1.0), ("rf", "depth", 2, 1.0), ("gb3", "depth", 3, 1.0)])
def test_scip_equals_prune_exact_and_brute_force(kind, attribute, K, gamma):
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.solvers.result import TerminationReason

    nodes, yc = _instance(kind)
    oracle = TreePruningCIP(nodes.M, yc, gamma)
    brute, _ = _brute(nodes, oracle, K, attribute)
    assert brute < 0.5 * yc @ yc - 1e-6  # the instance is not trivial: some node helps

    res, _ = prune_exact(nodes, yc, K, attribute=attribute, gamma=gamma)
    assert res.termination == TerminationReason.OPTIMAL
    assert np.isclose(res.value, brute, rtol=1e-6)

    for comp in ("indicator", "big_m"):
        result, z, w = _solve_mip(nodes, yc, K, attribute=attribute, gamma=gamma,
                                  complementarity=comp)
        assert result.termination == TerminationReason.OPTIMAL
        assert np.isclose(result.value, brute, rtol=1e-5, atol=1e-8), comp
        assert result.lower_bound <= brute + 1e-6 * max(1.0, brute)
        # the decoded selection is feasible and its ridge refit is optimal too
        a = nodes.attribute(attribute)
        assert a @ z <= K + 1e-9
        pairs = nodes.conflict_pairs()
        assert np.all(z[pairs[:, 0]] + z[pairs[:, 1]] <= 1)
        assert np.all(w[z == 0] == 0)
        assert np.isclose(oracle.value(z), brute, rtol=1e-5, atol=1e-8)
        assert abs(w).max() <= TreePruningMIP(nodes, yc, K, gamma=gamma).weight_bound


def test_model_blocks_and_budget_zero():
    from rulemip.solvers.result import TerminationReason

    nodes, yc = _instance("gb", n=20)
    mip = TreePruningMIP(nodes, yc, 0, complementarity="big_m")
    model = mip.build()
    assert list(model.variable_blocks)[:3] == ["z", "w", "e"]
    assert model.var("w").size == nodes.n_nodes and model.var("e").size == 20
    assert {"conflict", "budget", "residual", "big_m_upper",
            "big_m_lower"} <= set(model.constraint_blocks)
    ind = TreePruningMIP(nodes, yc, 0).build()
    assert len(ind.indicators) == nodes.n_nodes
    assert "big_m_upper" not in ind.constraint_blocks
    # K = 0 under 'rule': nothing selected, value ½ yᵀy
    result, z, _ = _solve_mip(nodes, yc, 0, complementarity="big_m")
    assert result.termination == TerminationReason.OPTIMAL
    assert z.sum() == 0 and np.isclose(result.value, 0.5 * yc @ yc)


def test_bad_parameters():
    from rulemip.exceptions import InvalidParameterError

    nodes, yc = _instance("gb", n=20)
    with pytest.raises(InvalidParameterError, match="gamma"):
        TreePruningMIP(nodes, yc, 2, gamma=0.0)
    with pytest.raises(InvalidParameterError, match="complementarity"):
        TreePruningMIP(nodes, yc, 2, complementarity="sos")
    with pytest.raises(InvalidParameterError, match="attribute"):
        TreePruningMIP(nodes, yc, 2, attribute="leaves")
    with pytest.raises(InvalidParameterError, match="rows"):
        TreePruningMIP(nodes, yc[:-1], 2)


def test_solve_status_is_promoted_and_auto_resolves_a_backend():
    """The engine ``"mip"`` with the default solver ("auto") certifies at ``mip_gap``
    through rulemip.solvers.status.promote: OPTIMAL with a gap within the tolerance, the
    value recomputed from the data."""
    from rulemip.solvers.result import TerminationReason

    nodes, yc = _instance("gb")
    oracle = TreePruningCIP(nodes.M, yc, 1.0)
    brute, _ = _brute(nodes, oracle, 2, "rule")
    sol, _, _ = _solve_mip(nodes, yc, 2, complementarity="big_m", solver="auto")
    assert sol.termination is TerminationReason.OPTIMAL and sol.limit is None
    assert sol.gap <= 1e-6
    assert np.isclose(sol.value, brute, rtol=1e-5, atol=1e-8)
    assert sol.lower_bound <= sol.value
