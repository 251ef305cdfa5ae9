"""Convergence and bound validity of the exact pruning algorithm (prune_exact,
docs/explanation/tree_pruning.md)."""


import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip.formulations.node_matrix import extract_nodes
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.testing.brute_force import brute_force_pruning

pytestmark = pytest.mark.solver


def _tiny(seed=3, n=30, trees=2, depth=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X[:, 0] + (X[:, 2] > 0.3) + 0.2 * rng.normal(size=n)
    est = GradientBoostingRegressor(n_estimators=trees, max_depth=depth,
                                    random_state=0).fit(X, y)
    yc = y - y.mean()
    return extract_nodes(est, X, yc), yc


def _feasible(nodes, z, K, attribute):
    a = nodes.attribute(attribute)
    pairs = nodes.conflict_pairs()
    return a @ z <= K + 1e-9 and not (pairs.size and np.any(z[pairs[:, 0]] + z[pairs[:, 1]] > 1))


def _brute(nodes, oracle, K, attribute):
    return brute_force_pruning(nodes, oracle.value, nodes.attribute(attribute), budget=K)[0]


@pytest.mark.parametrize("attribute", ["rule", "depth"])
@pytest.mark.parametrize("K", [1, 2, 3])
@pytest.mark.parametrize("gamma", [1.0, 0.02])
def test_prune_exact_matches_brute_force_and_bounds_stay_below(attribute, K, gamma):
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.solvers.result import TerminationReason

    nodes, y = _tiny()
    res, oracle = prune_exact(nodes, y, K, attribute=attribute, gamma=gamma)
    opt = _brute(nodes, oracle, K, attribute)
    assert res.termination == TerminationReason.OPTIMAL
    assert res.value == pytest.approx(opt, rel=1e-6, abs=1e-9)
    assert _feasible(nodes, res.z, K, attribute)
    assert oracle.value(res.z) == pytest.approx(res.value, rel=1e-9)
    tol = 1e-9 * max(1.0, abs(opt))
    assert res.lower_bound <= opt + tol
    for h in res.history:  # every bound reported along the way is valid
        assert h["lb"] <= opt + tol
        assert h["ub"] >= opt - tol


def test_integer_masters_are_needed_and_their_bounds_are_valid():
    """With the heuristics' cuts switched off (no LP phase, no singletons/neighbours,
    no local search) the bound must come from integer masters; all of them stay below
    the brute-force optimum and the run still certifies it."""
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.exact import prune_exact
    from rulemip.solvers.result import TerminationReason

    nodes, y = _tiny(seed=5, n=40, trees=3)
    K = 3
    res, oracle = prune_exact(nodes, y, K, gamma=1.0, relax_iterations=0, n_single=0,
                              n_neighbours=0, local_search=False, clique=False)
    opt = _brute(nodes, oracle, K, "rule")
    assert res.termination == TerminationReason.OPTIMAL
    assert res.iterations >= 1
    assert res.value == pytest.approx(opt, rel=1e-6)
    lbs = [h["lb"] for h in res.history]
    assert all(lb <= opt + 1e-9 * abs(opt) for lb in lbs)
    assert lbs == sorted(lbs)  # the reported bound never decreases


def test_time_limited_run_reports_feasible_time_and_a_valid_bound():
    pytest.importorskip("highspy")
    from rulemip.algorithms.convex.outer_approximation import OAOptions
    from rulemip.algorithms.pruning.exact import local_search_prune, prune_exact
    from rulemip.budget import Budget
    from rulemip.solvers.result import Limit, TerminationReason

    rng = np.random.default_rng(0)
    n = 300
    X = rng.uniform(size=(n, 5))
    y = 10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 5 * X[:, 2] + rng.normal(size=n)
    y = (y - y.mean()) / y.std()
    est = GradientBoostingRegressor(n_estimators=40, max_depth=3, random_state=0).fit(X, y)
    nodes = extract_nodes(est, X, y)
    # γ = 1 on standardized y: γ‖M_i‖² ≫ 1, the OA bound is far from closing in 1 s
    res, oracle = prune_exact(nodes, y, 10, gamma=1.0,
                              options=OAOptions(budget=Budget.from_time_limit(1.0)))
    assert res.termination == TerminationReason.FEASIBLE
    assert res.limit == Limit.TIME
    assert res.gap > 1e-4
    z_h, v_h = local_search_prune(nodes, y, 10, gamma=1.0)
    assert _feasible(nodes, res.z, 10, "rule") and _feasible(nodes, z_h, 10, "rule")
    # any feasible value bounds the optimum from above, hence the lower bound too
    assert 0.0 <= res.lower_bound <= min(res.value, v_h) + 1e-9
    assert oracle.value(res.z) == pytest.approx(res.value, rel=1e-9)


def test_pruning_oracle_equals_tree_pruning_cip():
    from rulemip.algorithms.pruning.oracle import PruningOracle

    nodes, y = _tiny(n=50, trees=3, depth=3)
    rng = np.random.default_rng(1)
    for gamma in (1.0, 0.01):
        ref = TreePruningCIP(nodes.M, y, gamma)
        orc = PruningOracle(nodes.M, y, gamma)
        m = nodes.n_nodes
        for _ in range(5):
            z = (rng.uniform(size=m) < 0.3).astype(float)
            zf = z * rng.uniform(0.1, 1.0, size=m)  # fractional points of [0, 1]^m
            for point in (z, zf):
                v0, g0 = ref.value_and_gradient(point)
                v1, g1 = orc.value_and_gradient(point)
                assert v1 == pytest.approx(v0, rel=1e-9, abs=1e-12)
                np.testing.assert_allclose(g1, g0, rtol=1e-9, atol=1e-12)
            S = np.flatnonzero(z)
            st = orc.state(S)
            assert st.value == pytest.approx(ref.value(z), rel=1e-9)
            np.testing.assert_allclose(st.Mtr, np.asarray(nodes.M.T @ (
                y - nodes.M[:, S] @ st.w)).ravel(), rtol=1e-9, atol=1e-10)
            gains = orc.add_gains(st)
            for j in rng.choice(np.setdiff1d(np.arange(m), S), 4, replace=False):
                zj = z.copy()
                zj[j] = 1.0
                assert gains[j] == pytest.approx(st.value - ref.value(zj), rel=1e-7, abs=1e-10)
                assert orc.with_node(st, int(j)).value == pytest.approx(ref.value(zj), rel=1e-9)
            if S.size:
                zk = z.copy()
                zk[S[0]] = 0.0
                assert orc.without(st, 0).value == pytest.approx(ref.value(zk), rel=1e-9)


def test_clique_rows_have_the_same_integer_points_as_pairwise_conflicts():
    from rulemip.formulations.forest import root_to_leaf_paths

    nodes, _ = _tiny(n=60, trees=2, depth=3)
    P = root_to_leaf_paths(nodes.parent)
    m = nodes.n_nodes
    rng = np.random.default_rng(2)
    seen_infeasible = seen_feasible = 0
    for _ in range(400):
        z = (rng.uniform(size=m) < rng.uniform(0.02, 0.3)).astype(float)
        by_paths = bool(np.all(P @ z <= 1))
        assert by_paths == _feasible(nodes, z, m, "rule")
        seen_feasible += by_paths
        seen_infeasible += not by_paths
    assert seen_feasible > 10 and seen_infeasible > 10
