"""Rule boosting: paper oracles, exactness of branch-and-bound, prefix values, weights."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from rulemip.boosting import OrthonormalBasis, RuleBooster, SearchSpace, find_rule, make_objective
from rulemip.boosting.objectives import ogb_prefix_values, ogb_prefix_values_naive
from rulemip.boosting.weights import corrective_weights, stagewise_weight, xgb_weight
from rulemip.data import Dataset
from rulemip.exceptions import InvalidDataError, InvalidParameterError


def _boost(X, y, objective, k, **kw):
    ds = Dataset.from_arrays(np.asarray(X, float), np.asarray(y, float), loss="squared")
    return RuleBooster(n_rules=k, objective=objective, weight_update="corrective",
                       search="bnb", fit_intercept=False, **kw).fit(ds)


@pytest.mark.parametrize("objective, risk", [("gb", 24 / 9), ("ogb", 1 / 9)])
def test_fig2(objective, risk):
    b = _boost([[1.0], [2.0], [3.0]], [-10.0, -6.0, 5.0], objective, 2)
    assert b.risk_path_[-1] == pytest.approx(risk, abs=1e-9)
    assert len(b.rules_) == 2


@pytest.mark.parametrize("alpha, eps", [(2.0, 0.3), (5.0, 0.1), (1.0, 0.05), (10.0, 0.5)])
def test_prop2(alpha, eps):
    X = np.arange(1.0, 6.0).reshape(-1, 1)
    y = np.array([-alpha - eps, alpha, -3 * alpha - eps, alpha + eps, 2 * alpha + eps])
    sse = {o: 5 * _boost(X, y, o, 3, epsilon=1e-7).risk_path_[-1] for o in ("gs", "gb", "ogb")}
    assert sse["gb"] == pytest.approx(3 * alpha**2 / 2, rel=1e-9)
    assert sse["ogb"] == pytest.approx(3 * eps**2 / 5, rel=1e-6)
    assert sse["gs"] >= 2 * (6 * alpha**2 + 2 * alpha * eps + eps**2) / 5 - 1e-9


def _all_boxes(space):
    """Every box over the candidate thresholds -> its query vector."""
    per_feature = []
    for j in range(space.d):
        t = np.concatenate([[-np.inf], space.thresholds[j], [np.inf]])
        per_feature.append([(lo, hi) for lo, hi in itertools.combinations(t, 2)])
    for combo in itertools.product(*per_feature):
        q = np.ones(space.n, bool)
        for j, (lo, hi) in enumerate(combo):
            q &= (space.X[:, j] > lo) & (space.X[:, j] <= hi)
        if q.any():
            yield q


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("name", ["gs", "gb", "xgb"])
def test_bnb_is_exact(seed, name):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 9)), int(rng.integers(1, 3))
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    g = rng.normal(size=n)
    h = rng.uniform(0.1, 2.0, size=n)
    space = SearchSpace.build(X)
    obj = make_objective(name, g, h, reg=0.3)
    best = max(obj.value(q) for q in _all_boxes(space))
    res = find_rule(space, obj, search="bnb", allow_empty=True)
    assert res is not None and res.certified
    assert res.value == pytest.approx(best, rel=1e-9, abs=1e-12)
    assert obj.value(res.query) == pytest.approx(res.value, rel=1e-9, abs=1e-12)
    # the returned box reproduces the returned query vector
    q = np.all((res.lower < X) & (res.upper >= X), axis=1)
    np.testing.assert_array_equal(q, res.query)
    # greedy and beam never beat the exact optimum
    for s in ("greedy", "beam"):
        r = find_rule(space, obj, search=s, allow_empty=True)
        assert r is not None and r.value <= best + 1e-9 and not r.certified


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 10), st.integers(0, 10_000), st.sampled_from(["gb", "xgb"]))
def test_bounds_admissible(n, seed, name):
    """Prefix-greedy bound >= objective of every subset of the cover (brute force)."""
    rng = np.random.default_rng(seed)
    g, h = rng.normal(size=n), rng.uniform(0.05, 3.0, size=n)
    obj = make_objective(name, g, h, reg=float(rng.uniform(0, 1)))
    idx = np.arange(n, dtype=np.intp)
    b = obj.bound(idx)
    for r in range(1, n + 1):
        for S in itertools.combinations(range(n), r):
            assert obj.value(np.array(S)) <= b + 1e-9


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 30), st.integers(0, 5), st.integers(0, 10_000))
def test_ogb_incremental_equals_naive(n, t, seed):
    rng = np.random.default_rng(seed)
    basis = OrthonormalBasis(n)
    basis.add(np.ones(n))
    for _ in range(t):
        basis.add((rng.random(n) < 0.5).astype(float))
    g = basis.project_out(rng.normal(size=n))
    order = rng.permutation(n)[: int(rng.integers(1, n + 1))]
    ob = basis.columns
    inc = ogb_prefix_values(g, ob, order, 0.01)
    naive = ogb_prefix_values_naive(g, ob, order, 0.01)
    np.testing.assert_allclose(inc, naive, rtol=1e-7, atol=1e-9)
    obj = make_objective("ogb", g, basis=basis, epsilon=0.01)
    np.testing.assert_allclose(obj.prefix_values(order), naive, rtol=1e-7, atol=1e-9)


def test_basis_orthonormal():
    rng = np.random.default_rng(1)
    basis = OrthonormalBasis(50)
    for _ in range(20):
        basis.add((rng.random(50) < 0.3).astype(float))
    ob = basis.columns
    np.testing.assert_allclose(ob.T @ ob, np.eye(ob.shape[1]), atol=1e-10)


def test_corrective_squared_equals_lstsq(rng):
    Q = (rng.random((40, 4)) < 0.5).astype(float)
    y = rng.normal(size=40)
    res = corrective_weights(Q, y, "squared", fit_intercept=True)
    A = np.column_stack([np.ones(40), Q])
    coef = np.linalg.lstsq(A, y, rcond=None)[0]
    assert res.intercept == pytest.approx(coef[0], abs=1e-8)
    np.testing.assert_allclose(res.weights, coef[1:], atol=1e-8)


def test_corrective_logistic_matches_scipy(rng):
    Q = (rng.random((60, 3)) < 0.5).astype(float)
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    lam = 0.5
    res = corrective_weights(Q, y, "logistic", reg=lam, fit_intercept=True)
    A = np.column_stack([np.ones(60), Q])

    def risk(c):
        return np.mean(np.logaddexp(0, -y * (A @ c))) + lam / 60 * np.sum(c[1:] ** 2)

    ref = minimize(risk, np.zeros(4), method="BFGS", options={"gtol": 1e-10})
    assert res.risk == pytest.approx(ref.fun, abs=1e-8)
    np.testing.assert_allclose(res.weights, ref.x[1:], atol=1e-4)


def test_stagewise_and_xgb_weights(rng):
    n = 30
    q = (rng.random(n) < 0.4).astype(float)
    f, y = rng.normal(size=n), rng.normal(size=n)
    lam = 0.7
    b = stagewise_weight(q, f, y, "squared", reg=lam)
    assert b == pytest.approx(q @ (y - f) / (q.sum() + lam))
    # for squared loss the xgb Newton step (with 2*reg) is the exact line search
    assert xgb_weight(q, 2 * (f - y), np.full(n, 2.0), reg=lam) == pytest.approx(b)


@pytest.mark.parametrize("preset", ["SGS", "SGB", "SXB", "CGB", "COB"])
def test_presets_risk_path(preset, rng):
    X = rng.normal(size=(40, 2))
    y = X[:, 0] + (X[:, 1] > 0) + 0.1 * rng.normal(size=40)
    ds = Dataset.from_arrays(X, y, loss="squared")
    b = RuleBooster.from_preset(preset, n_rules=4, max_rule_length=2, max_thresholds=6).fit(ds)
    assert len(b.ensembles_) == len(b.risk_path_) == 5
    for k, ens in enumerate(b.ensembles_):
        assert len(ens) == k
        assert ens.risk(ds.X, ds.y) == pytest.approx(b.risk_path_[k], rel=1e-9)
    if preset[0] == "C":  # corrective: risk never increases
        assert np.all(np.diff(b.risk_path_) <= 1e-12)
    # branch-and-bound proves every rule, ogb's too: the box search prunes by ogb's
    # valid bound (greedy SGS/SGB prove nothing)
    assert b.certified_ == (preset in ("SXB", "CGB", "COB"))


def test_no_intercept_empty_rule():
    X = np.array([[0.0], [0.0], [0.0]])
    ds = Dataset.from_arrays(X, np.array([1.0, 2.0, 3.0]))
    b = RuleBooster(n_rules=2, fit_intercept=False).fit(ds)
    assert len(b.rules_) == 1 and b.rules_.rules[0].length == 0
    assert b.risk_path_[-1] == pytest.approx(2 / 3)


def test_bad_parameters():
    with pytest.raises(InvalidParameterError, match="n_rules"):
        RuleBooster(n_rules=0)
    with pytest.raises(InvalidParameterError, match="objective"):
        RuleBooster(objective="foo")
    with pytest.raises(InvalidParameterError, match="preset"):
        RuleBooster.from_preset("COB", objective="gb")
    with pytest.raises(InvalidDataError):
        RuleBooster().fit(np.zeros((3, 2)))
