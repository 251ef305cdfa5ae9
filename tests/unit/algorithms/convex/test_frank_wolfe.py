"""Frank–Wolfe relaxation of tree pruning: exact LMO, valid bounds, agreement with OA/cvxpy."""

import numpy as np
import pytest
import scipy.sparse as sp

from rulemip.algorithms.convex.frank_wolfe import (
    ForestLMO,
    antichain_min,
    frank_wolfe_bound,
    frank_wolfe_relaxation,
)
from rulemip.algorithms.pruning.cbcd import path_clique_matrix
from rulemip.algorithms.pruning.knapsack_conflicts import forest_penalized
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.model import MIPModel
from rulemip.solvers import get_backend

from ..pruning.test_relax_and_round import _brute, _cvxpy_relaxation, _feasible, _instance


def _random_forest(rng, m):
    """Random forest: node j's parent is a random earlier node or a root (−1)."""
    parent = np.full(m, -1, dtype=np.int64)
    for j in range(1, m):
        if rng.random() < 0.85:
            parent[j] = rng.integers(0, j)
    return parent


def _lp_min(c, parent, a=None, K=None):
    """min cᵀs over path rows, 0 ≤ s ≤ 1 (and aᵀs ≤ K) by HiGHS."""
    from rulemip.solvers import SolveOptions

    m = len(c)
    model = MIPModel("lmo")
    z = model.add_variables("z", m, ub=1.0)
    ids = np.asarray(z.ids).ravel()
    model.add_constraints("paths", matrix=path_clique_matrix(parent), cols=ids, upper=1.0)
    if K is not None:
        model.add_constraints("budget", matrix=sp.csr_matrix(a.reshape(1, -1)), cols=ids,
                              upper=float(K))
    model.add_objective(ids, np.asarray(c, float))
    res = get_backend("highs").solve(model.to_standard_form(), SolveOptions())
    return float(res.objective), np.asarray(res.x)[ids]


@pytest.mark.solver
@pytest.mark.parametrize("seed", range(6))
def test_lmo_equals_lp(seed):
    pytest.importorskip("highspy")
    rng = np.random.default_rng(seed)
    m = int(rng.integers(8, 40))
    parent = _random_forest(rng, m)
    c = rng.normal(size=m) - 0.3
    # unbudgeted: the DP is exact and integral, equals the LP (integral polytope)
    val, s = antichain_min(c, parent)
    lp, _ = _lp_min(c, parent)
    assert val == pytest.approx(lp, abs=1e-9)
    assert set(np.unique(s)) <= {0.0, 1.0} and float(c @ s) == pytest.approx(val)
    assert np.all(path_clique_matrix(parent) @ s <= 1)
    assert -forest_penalized(-c, parent)[0] == pytest.approx(val)
    # budgeted: Lagrangian breakpoint search = LP optimum, point feasible
    a = rng.integers(0, 4, size=m).astype(float)
    K = float(rng.integers(1, 5))
    lmo = ForestLMO(parent, a, K)
    s, bound = lmo.minimize(c)
    lp, _ = _lp_min(c, parent, a, K)
    assert lmo.last_exact
    assert float(c @ s) == pytest.approx(lp, abs=1e-8)
    assert bound <= lp + 1e-9 and bound == pytest.approx(lp, abs=1e-8)
    assert np.all(path_clique_matrix(parent) @ s <= 1 + 1e-12)
    assert a @ s <= K + 1e-9 and np.all((s >= -1e-12) & (s <= 1 + 1e-12))


def test_lmo_bound_valid_when_capped():
    rng = np.random.default_rng(3)
    parent = _random_forest(rng, 30)
    c = rng.normal(size=30) - 0.5
    a = np.ones(30)
    _, exact = ForestLMO(parent, a, 2.0).minimize(c)
    capped = ForestLMO(parent, a, 2.0, max_breakpoints=1)
    s, bound = capped.minimize(c)
    assert bound <= exact + 1e-12 and float(c @ s) >= exact - 1e-12
    assert a @ s <= 2 + 1e-12


@pytest.mark.parametrize("attribute,K", [("rule", 2), ("depth", 3)])
def test_budgeted_relaxation_matches_cvxpy_and_bounds(attribute, K):
    y, nodes = _instance(0)
    base = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute(attribute)
    res = frank_wolfe_relaxation(base, ForestLMO(nodes.parent, a, K), rel_tol=1e-7,
                                 max_iter=5000)
    assert res.converged and res.termination == "converged"
    cv = _cvxpy_relaxation(nodes, y, a, K=K)
    assert res.value == pytest.approx(cv, rel=2e-5)
    assert res.value == pytest.approx(base.value(res.z))
    opt = _brute(nodes, base, a, K=K)
    tol = 1e-9 * float(y @ y)
    lbs = [h.lower_bound for h in res.history]
    assert all(h.lower_bound <= h.value + tol for h in res.history)
    assert max(lbs) <= opt + tol and max(lbs) <= cv * (1 + 1e-6)
    assert np.all(np.diff(lbs) >= 0)                       # best bound kept
    assert np.all(np.diff([h.value for h in res.history]) <= tol)  # descent
    P = path_clique_matrix(nodes.parent)
    assert np.all(P @ res.z <= 1 + 1e-9) and a @ res.z <= K + 1e-9


def test_penalized_relaxation_matches_cvxpy():
    lam = 0.3
    y, nodes = _instance(1)
    base = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute("rule")
    res = frank_wolfe_relaxation(base, ForestLMO(nodes.parent), lin=lam * a, rel_tol=1e-7,
                                 max_iter=5000)
    assert res.converged
    assert res.value == pytest.approx(_cvxpy_relaxation(nodes, y, a, lam=lam), rel=2e-5)
    assert res.lower_bound <= _brute(nodes, base, a, lam=lam) + 1e-9 * float(y @ y)


def test_limits_keep_bounds_valid():
    y, nodes = _instance(2, trees=3)
    base = TreePruningCIP(nodes.M, y, 1.0)
    a = nodes.attribute("rule")
    res = frank_wolfe_relaxation(base, ForestLMO(nodes.parent, a, 3), max_iter=2)
    assert res.termination == "max_iter" and res.iterations == 2 and not res.converged
    full = frank_wolfe_relaxation(base, ForestLMO(nodes.parent, a, 3), rel_tol=1e-8,
                                  max_iter=5000)
    assert res.lower_bound <= full.value + 1e-9 and res.value >= full.lower_bound - 1e-9
    with pytest.raises(InvalidParameterError, match="max_iter"):
        frank_wolfe_relaxation(base, ForestLMO(nodes.parent, a, 3), max_iter=-1)


@pytest.mark.solver
def test_relax_and_round_fw_agrees_with_oa():
    pytest.importorskip("highspy")
    from rulemip.algorithms.pruning.relax_and_round import relax_and_round

    y, nodes = _instance(0)
    a = nodes.attribute("rule")
    fw = relax_and_round(nodes, y, n_rules=3, relaxation="frank_wolfe")
    oa = relax_and_round(nodes, y, n_rules=3, relaxation="oa")
    assert fw.relaxation == "frank_wolfe" and oa.relaxation == "oa"
    assert fw.relaxation_converged and oa.relaxation_converged
    assert fw.relaxation_value == pytest.approx(oa.relaxation_value, rel=1e-5)
    assert fw.relaxation_lower_bound <= oa.relaxation_value + 1e-9
    assert oa.relaxation_lower_bound <= fw.relaxation_value + 1e-9
    assert _feasible(nodes, fw.z, a, 3) and len(fw.relaxation_history) > 0
    with pytest.raises(InvalidParameterError, match="relaxation"):
        relax_and_round(nodes, y, n_rules=3, relaxation="bogus")


def _quadratic(c):
    """f(z) = ½‖z − c‖² with its gradient, and the LMO of the unit box [0, 1]^n."""
    def value_and_gradient(z):
        return 0.5 * float((z - c) @ (z - c)), z - c

    def box_lmo(g):
        return (g < 0).astype(float)

    return value_and_gradient, box_lmo


def test_frank_wolfe_bound_is_exact_at_a_vertex_optimum():
    # the minimizer of ½‖z − c‖² over [0,1]^3 for c = (2, −1, 3) is the vertex (1, 0, 1),
    # value ½(1 + 1 + 4) = 3: one LMO call finds it and the bound is tight up to the margin
    c = np.array([2.0, -1.0, 3.0])
    fg, lmo = _quadratic(c)
    bound, z = frank_wolfe_bound(fg, lmo, np.zeros(3), max_iter=50)
    np.testing.assert_allclose(z, [1.0, 0.0, 1.0])
    assert 3.0 - 1e-8 <= bound <= 3.0


@pytest.mark.parametrize("seed", range(4))
def test_frank_wolfe_bound_is_valid_and_closes_on_an_interior_optimum(seed):
    rng = np.random.default_rng(seed)
    c = rng.uniform(-0.5, 1.5, size=6)
    optimum = 0.5 * float(np.sum((c - np.clip(c, 0.0, 1.0)) ** 2))
    fg, lmo = _quadratic(c)
    few, _ = frank_wolfe_bound(fg, lmo, np.zeros(6), max_iter=3)
    many, z = frank_wolfe_bound(fg, lmo, np.zeros(6), max_iter=400)
    assert few <= many <= optimum + 1e-12      # every bound is valid, the best one kept
    assert fg(z)[0] >= optimum - 1e-12
    assert many >= optimum - 0.05              # and it closes in on the minimum


def test_frank_wolfe_bound_stops_at_the_threshold():
    c = np.array([2.0, -1.0, 3.0])
    fg, lmo = _quadratic(c)
    calls = []

    def counted(z):
        calls.append(1)
        return fg(z)

    bound, _ = frank_wolfe_bound(counted, lmo, np.zeros(3), threshold=-1.0, max_iter=50)
    assert bound >= -1.0 and len(calls) == 1   # the first bound already prunes
