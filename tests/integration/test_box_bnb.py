"""Branch and bound over boxes (rulemip.algorithms.krule.box_bnb, squared loss): equals exact
enumeration on small random instances, time-limited runs return a valid interval, and the
linear minimization oracle behind the node bound is exact."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.algorithms.krule.box_bnb import _Evaluator, _lmo, branch_and_bound
from rulemip.algorithms.krule.box_selection import solve_box_selection
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import enumerate_optimum
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers import Limit, TerminationReason


def _dataset(seed: int, d: int, n: int = 30) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 2.0 * rng.normal(size=n) + X[:, 0] - (X[:, -1] > 0.3)
    return Dataset.from_arrays(X, y)


@pytest.mark.parametrize("seed", range(8))
def test_bnb_equals_enumeration(seed):
    rng = np.random.default_rng(100 + seed)
    d = 1 + seed % 2
    k = 1 + seed % 3 if d == 2 else 2 + seed % 4
    reg = float(10 ** rng.uniform(-3, 1))
    fit_intercept = seed % 3 != 0
    prob = BoxSelectionCIP(Language(k, fit_intercept=fit_intercept), reg=reg,
                           max_thresholds=3).build(_dataset(seed, d))
    _, v_enum, _, complete = enumerate_optimum(prob.oracle, prob.n_boxes, k)
    assert complete
    res = branch_and_bound(prob.oracle, prob.n_boxes, k, search_time=0.1, seed=seed)
    assert res.complete
    tol = 1e-6 * max(1.0, abs(v_enum))
    assert abs(res.value - v_enum) <= tol
    assert res.lower_bound <= v_enum + 1e-9 * max(1.0, abs(v_enum))
    assert res.value - res.lower_bound <= tol
    assert res.z.sum() <= k + 1e-9 and np.all(res.z >= 0)
    assert abs(prob.oracle.value_and_gradient(res.z)[0] - res.value) <= 1e-9 * abs(res.value)


@pytest.mark.parametrize("k", [2, 3])
def test_solve_bnb_matches_enumerate(k):
    ds = _dataset(7, 2, n=40)
    cip = BoxSelectionCIP(Language(k), reg=0.5, max_thresholds=3)
    a = solve_box_selection(cip, ds, method="bnb", local_search_time=0.2)
    b = solve_box_selection(cip, ds, method="enumerate")
    assert a.termination is TerminationReason.OPTIMAL
    assert b.termination is TerminationReason.OPTIMAL
    assert a.engine == "cip-bnb" and a.method == "bnb" and a.backend == "" and a.bound_valid
    assert abs(a.risk - b.risk) <= 1e-6 * abs(b.risk)
    assert a.lower_bound <= b.risk * (1 + 1e-9)
    assert a.gap <= 1e-6


def test_time_limited_run_returns_valid_interval():
    ds = _dataset(3, 2, n=60)
    k = 3
    cip = BoxSelectionCIP(Language(k), reg=1e-3, max_thresholds=4)
    prob = cip.build(ds)
    _, v_enum, _, complete = enumerate_optimum(prob.oracle, prob.n_boxes, k)
    assert complete
    res = branch_and_bound(prob.oracle, prob.n_boxes, k, search_time=0.0,
                           budget=Budget.from_time_limit(0.05))
    assert res.lower_bound <= v_enum * (1 + 1e-9) <= res.value * (1 + 2e-9)
    if not res.complete:
        assert res.lower_bound < res.value
    out = solve_box_selection(cip, ds, method="bnb",
                              budget=Budget.from_time_limit(0.3), local_search_time=0.0)
    assert out.lower_bound <= v_enum * (1 + 1e-9)
    assert out.risk >= v_enum * (1 - 1e-9)
    if out.termination is not TerminationReason.OPTIMAL:
        assert out.limit is Limit.TIME


def test_bnb_rejects_other_losses():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 1))
    y = np.where(rng.random(20) < 0.5, -1.0, 1.0)
    ds = Dataset.from_arrays(X, y, loss="logistic")
    with pytest.raises(InvalidParameterError, match="squared"):
        solve_box_selection(BoxSelectionCIP(Language(2), loss="logistic", reg=0.1,
                                            max_thresholds=2),
                            ds, method="bnb")


def test_evaluator_matches_oracle():
    prob = BoxSelectionCIP(Language(3), reg=0.3, max_thresholds=3).build(_dataset(1, 2))
    ev = _Evaluator(prob.oracle)
    rng = np.random.default_rng(0)
    for _ in range(5):
        z = rng.random(prob.n_boxes) * (rng.random(prob.n_boxes) < 0.2)
        v1, g1 = ev.value_and_gradient(z)
        v2, g2 = prob.oracle.value_and_gradient(z)
        assert abs(v1 - v2) <= 1e-10 * abs(v2)
        np.testing.assert_allclose(g1, g2, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_lmo_is_exact(seed):
    scipy_optimize = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(seed)
    B, k = 12, int(rng.integers(2, 6))
    s = int(rng.integers(0, k))
    perm = rng.permutation(B)
    F, E = perm[:s], perm[s:s + 3]
    lo, up = np.zeros(B), np.full(B, float(k - s))
    lo[F], up[F] = 1.0, float(k - s + 1)
    up[E] = 0.0
    free = up > 0
    free[F] = False
    g = -rng.random(B) * (rng.random(B) < 0.8)
    v = _lmo(g, lo, up, k, free)
    A = np.vstack([np.ones(B), -free.astype(float)])
    lp = scipy_optimize.linprog(g, A_ub=A, b_ub=[k, -1.0], bounds=list(zip(lo, up, strict=True)),
                                method="highs")
    assert lp.status == 0
    assert np.all(v >= lo - 1e-12) and np.all(v <= up + 1e-12)
    assert v.sum() <= k + 1e-12 and v[free].sum() >= 1 - 1e-12
    assert float(g @ v) <= lp.fun + 1e-10


# ------------------------------------------------------------------ scale of y (issue h33)
def _near_boxes(scale: float, n: int = 60) -> tuple[Dataset, list[np.ndarray], np.ndarray]:
    """y nearly a sum of two boxes that the thresholds can express, times ``scale``."""
    rng = np.random.default_rng(1)
    X = rng.random((n, 2))
    y = 2.0 * ((X[:, 0] > 0.5) & (X[:, 1] > 0.3)) - 1.5 * (X[:, 1] > 0.7) \
        + 1e-4 * rng.normal(size=n)
    ths = [np.array([0.25, 0.5]), np.array([0.3, 0.7])]
    return Dataset.from_arrays(X, scale * y), ths, X


@pytest.mark.parametrize("engine", ["cip-bnb", "cell-bnb"])
def test_status_is_scale_invariant(engine):
    """y and 1e-4·y (reg is scale-free: weights scale with y, the risk with y²) give the
    same status OPTIMAL, the same boxes, weights scaled by 1e-4 and risk and bound scaled
    by 1e-8; the optimum is the brute-force one. Before the fix, cip-bnb pruned every node
    at the root against an absolute margin of 1e-6 and stopped at a gap of 0.9 (unscaled,
    risk 1.1e-7) or 0.18 (scaled)."""
    from rulemip.algorithms.fit_plan import solve_exact
    from rulemip.testing.brute_force import brute_force_optimum

    reg, c = 1e-6, 1e-4
    out = {}
    for scale in (1.0, c):
        ds, ths, X = _near_boxes(scale)
        res = solve_exact(KRuleProblem.of(ds, 2, reg=reg, thresholds=ths), engine=engine,
                          budget=Budget.from_time_limit(None, work_limit=20_000))
        assert res.termination is TerminationReason.OPTIMAL, (scale, res.gap, res.limit)
        assert res.gap <= 1e-6
        brute = brute_force_optimum(X, np.asarray(ds.y), 2, reg=reg, thresholds=ths)
        assert abs(res.risk - brute.risk) <= 1e-6 * brute.risk
        assert res.lower_bound <= brute.risk * (1 + 1e-9)
        out[scale] = res
    a, b = out[1.0], out[c]
    assert a.risk < 1e-5  # the regime of the defect: a risk far below 1
    # the same model, predictions scaled by c: a box and its complement are one model under
    # an intercept, so a tie between them may go either way at the two scales
    _, _, X = _near_boxes(1.0)
    np.testing.assert_allclose(c * a.ensemble.predict(X), b.ensemble.predict(X),
                               rtol=1e-6, atol=1e-9 * c)
    assert b.risk == pytest.approx(c * c * a.risk, rel=1e-8)
    assert b.lower_bound == pytest.approx(c * c * a.lower_bound, rel=1e-6)


@pytest.mark.parametrize("scale", [1.0, 0.1, 1e3])
def test_bnb_search_is_scale_invariant(scale):
    """The same search at every scale of y: the same nodes and value, and a gap within
    rel_tol (the relative margins of risk_unit). Scales keep the risk (1.1e-7 unscaled)
    above 1e-10, below which the status rule's gap has an absolute denominator."""
    ds0, ths, _ = _near_boxes(1.0)
    ds, _, _ = _near_boxes(scale)
    runs = []
    for d in (ds0, ds):
        prob = BoxSelectionCIP(Language(2, ths), reg=1e-6).build(d)
        res = branch_and_bound(prob.oracle, prob.n_boxes, 2, lower_bound_hint=prob.bound,
                               budget=Budget.from_time_limit(None, work_limit=50_000))
        assert res.complete
        assert res.value - res.lower_bound <= 1e-6 * res.value
        runs.append(res)
    assert runs[1].nodes == runs[0].nodes > 0
    # (the point may be another of tied optima: a box and its complement fit alike)
    assert runs[1].value == pytest.approx(scale ** 2 * runs[0].value, rel=1e-8)


def test_enumeration_margin_is_relative():
    """The enumeration's pruning margin scales with the risk (risk_unit), so its bound
    closes at every scale of y."""
    from rulemip.formulations.box_oracles import risk_unit

    assert risk_unit(4e-9, 1.0) == 4e-9
    assert risk_unit(1e-4 ** 2 * 3.0, 1e-4 ** 2 * 7.0) == pytest.approx(1e-8 * risk_unit(3.0, 7.0))
    assert risk_unit(0.0, 2.0) == pytest.approx(2e-9)
    for scale in (1.0, 1e-4):
        ds, ths, _ = _near_boxes(scale)
        prob = BoxSelectionCIP(Language(3, ths), reg=1e-6).build(ds)
        _, v, lb, complete = enumerate_optimum(prob.oracle, prob.n_boxes, 3)
        assert complete and v - lb <= 1e-9 * v
