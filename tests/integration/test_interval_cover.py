"""Interval-cover MIP × backends on tiny instances whose optimum brute force knows."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.algorithms.solve.driver import solve
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import TerminationReason
from rulemip.testing.brute_force import brute_force_optimum

pytestmark = pytest.mark.solver

BACKENDS = ["highs", "scip"]


def _skip_missing(backend: str) -> None:
    from rulemip.solvers.base import get_backend

    try:
        get_backend(backend)
    except (ImportError, ValueError) as exc:  # not installed / not registered yet
        pytest.skip(f"backend {backend!r} unavailable: {exc}")


def brute_force(ds: Dataset, ths: list[np.ndarray], k: int, loss: str, reg: float,
                fit_intercept: bool, max_rule_length: int | None = None) -> float:
    """min R_λ over every multiset of at most k boxes (rulemip.testing.brute_force)."""
    return brute_force_optimum(ds.X, ds.y, k, loss, reg, fit_intercept, thresholds=ths,
                               sample_weight=ds.sample_weight,
                               max_rule_length=max_rule_length).risk


def _data(loss: str, seed: int, n: int = 8, d: int = 2) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, d)).astype(float)
    if loss == "squared":
        y = rng.normal(size=n) + X[:, 0]
    elif loss == "logistic":
        y = np.where(rng.random(n) < 0.3 + 0.1 * X[:, 0], 1, 0)
        y[:2] = [0, 1]
    else:
        y = rng.poisson(1.0 + 0.5 * X[:, 0]).astype(float)
        y[0] = max(y[0], 1.0)
    return Dataset.from_arrays(X, y, loss=loss)


CASES = [  # loss, reg, fit_intercept, k, d
    ("squared", 0.0, False, 2, 2),
    ("squared", 0.0, True, 3, 1),
    ("squared", 0.1, True, 2, 2),
    ("logistic", 0.5, True, 2, 1),
    ("logistic", 0.5, False, 2, 2),
    ("poisson", 0.3, True, 2, 1),
    ("poisson", 0.3, False, 2, 2),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("loss,reg,fit_intercept,k,d", CASES)
def test_mip_matches_brute_force(backend: str, loss: str, reg: float, fit_intercept: bool,
                                 k: int, d: int) -> None:
    _skip_missing(backend)
    ds = _data(loss, seed=k + 10 * d + (7 if fit_intercept else 0), d=d)
    ths = candidate_thresholds(ds.X, 2)
    expected = brute_force(ds, ths, k, loss, reg, fit_intercept)
    prob = IntervalCoverMIP(Language(k, ths, fit_intercept=fit_intercept), loss=loss, reg=reg)
    res = solve(prob, ds, solver=backend, budget=Budget.from_time_limit(60), mip_gap=1e-7)
    assert res.bound_valid
    assert res.is_optimal, res
    assert res.risk == pytest.approx(expected, rel=1e-5, abs=1e-8)
    assert res.lower_bound <= expected + 1e-6 * max(1.0, abs(expected))
    # the decoded ensemble really has that risk on the data
    Xe = ds.X
    assert res.ensemble is not None and len(res.ensemble.rules) == k
    assert res.ensemble.risk(Xe, ds.y, reg=reg) == pytest.approx(res.risk, rel=1e-9)
    if not fit_intercept:
        assert res.ensemble.intercept == 0.0


def test_highs_and_scip_agree_without_cell_reduction() -> None:
    pytest.importorskip("highspy")
    pytest.importorskip("pyscipopt")
    ds = _data("squared", seed=4, n=7, d=2)
    ths = candidate_thresholds(ds.X, 2)
    risks = []
    for backend in BACKENDS:
        prob = IntervalCoverMIP(Language(2, ths), reg=0.05, cell_reduction=False,
                                contiguity_cuts=True)
        res = solve(prob, ds, solver=backend, budget=Budget.from_time_limit(60), mip_gap=1e-7)
        assert res.is_optimal
        risks.append(res.risk)
    assert risks[0] == pytest.approx(risks[1], rel=1e-6)
    assert risks[0] == pytest.approx(brute_force(ds, ths, 2, "squared", 0.05, True), rel=1e-6)


def test_warm_start_is_accepted_and_feasible() -> None:
    pytest.importorskip("highspy")
    ds = _data("squared", seed=2, n=9, d=2)
    ths = candidate_thresholds(ds.X, 2)
    prob = IntervalCoverMIP(Language(2, ths), reg=0.1)
    # a rule with a cut point outside the threshold set is snapped to groups
    # a cut between two distinct values of the same threshold group on feature 1
    v = np.unique(ds.X[:, 1])
    grp = np.searchsorted(ths[1], v, side="left")
    a = int(np.flatnonzero(grp[:-1] == grp[1:])[0])
    cut = 0.5 * (v[a] + v[a + 1])
    ens = RuleEnsemble([Rule([Condition(0, ths[0][0], math.inf)], 1.0),
                        Rule([Condition(1, -math.inf, cut)], -0.5)], 0.2)
    built = prob.build(ds, linearization="bigm")
    x = prob.encode(built, ens)
    assert built.model.to_standard_form().max_violation(x) < 1e-9
    assert any("snapped" in n for n in built.notes)
    res = solve(prob, ds, solver="highs", warm_start=ens, budget=Budget.from_time_limit(60))
    assert res.is_optimal
    # the model is in the units of y/s: its objective times s² is R_lambda
    start_risk = built.objective_scale * built.model.to_standard_form().objective_value(x)
    assert res.risk <= start_risk + 1e-12
    assert res.risk == pytest.approx(brute_force(ds, ths, 2, "squared", 0.1, True), rel=1e-6)


def test_time_limit_returns_valid_bound() -> None:
    pytest.importorskip("highspy")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = rng.normal(size=40)
    ds = Dataset.from_arrays(X, y)
    prob = IntervalCoverMIP(Language(3), reg=0.01, max_thresholds=6)
    res = solve(prob, ds, solver="highs", budget=Budget.from_time_limit(1.0))
    assert res.wall_time < 30
    assert res.ensemble is not None or res.risk == math.inf
    if res.ensemble is not None:
        assert res.lower_bound <= res.risk + 1e-9
        if not res.is_optimal:
            assert res.limit is not None


@pytest.mark.parametrize("backend", BACKENDS)
def test_max_rule_length_matches_brute_force(backend: str) -> None:
    _skip_missing(backend)
    ds = _data("squared", seed=21, n=9, d=2)
    ths = candidate_thresholds(ds.X, 2)
    prob = IntervalCoverMIP(Language(2, ths, max_rule_length=1), reg=0.05)
    res = solve(prob, ds, solver=backend, budget=Budget.from_time_limit(60), mip_gap=1e-7)
    assert res.is_optimal
    assert res.ensemble is not None
    assert all(len(r.conditions) <= 1 for r in res.ensemble.rules)
    assert res.risk == pytest.approx(brute_force(ds, ths, 2, "squared", 0.05, True, 1),
                                     rel=1e-6)


def test_sample_weights_equal_repeated_rows() -> None:
    pytest.importorskip("highspy")
    ds = _data("poisson", seed=5, n=7, d=1)
    w = np.array([1, 2, 1, 3, 1, 1, 2], dtype=float)
    weighted = Dataset.from_arrays(ds.X, ds.y, sample_weight=w, loss="poisson")
    rows = np.repeat(np.arange(7), w.astype(int))
    repeated = Dataset.from_arrays(ds.X[rows], ds.y[rows], loss="poisson")
    ths = candidate_thresholds(ds.X, 3)
    a = solve(IntervalCoverMIP(Language(2, ths), loss="poisson", reg=0.2),
        weighted, solver="highs", budget=Budget.from_time_limit(60))
    b = solve(IntervalCoverMIP(Language(2, ths), loss="poisson", reg=0.2),
        repeated, solver="highs", budget=Budget.from_time_limit(60))
    assert a.is_optimal and b.is_optimal
    assert a.risk == pytest.approx(b.risk, rel=1e-6)


@pytest.mark.parametrize("loss", ["squared", "logistic"])
def test_mip_and_cip_engines_agree(loss: str) -> None:
    pytest.importorskip("highspy")
    from rulemip.algorithms.fit_plan import solve_exact

    ds = _data(loss, seed=31, n=10, d=2)
    ths = candidate_thresholds(ds.X, 3)
    problem = KRuleProblem.of(ds, 2, loss=loss, reg=0.2, fit_intercept=True, thresholds=ths)
    cip = solve_exact(problem, engine="cip", budget=Budget.from_time_limit(60))
    mip = solve_exact(problem, engine="mip", solver="highs",
                      budget=Budget.from_time_limit(60))
    assert cip.is_optimal and mip.is_optimal
    assert mip.risk == pytest.approx(cip.risk, rel=1e-6)


@pytest.mark.parametrize("loss,reg", [("squared", 0.1), ("poisson", 0.3)])
def test_indicator_variant_matches_brute_force(loss: str, reg: float) -> None:
    pytest.importorskip("pyscipopt")
    ds = _data(loss, seed=13, n=8, d=2)
    ths = candidate_thresholds(ds.X, 2)
    prob = IntervalCoverMIP(Language(2, ths), loss=loss, reg=reg, linearization="indicator")
    from rulemip.solvers.base import get_backend

    built = prob.build_for(ds, get_backend("scip"), True)
    assert built.linearization == "indicator"
    assert built.model.to_standard_form().indicators
    res = solve(prob, ds, solver="scip", budget=Budget.from_time_limit(60), mip_gap=1e-7)
    assert res.is_optimal
    assert res.risk == pytest.approx(brute_force(ds, ths, 2, loss, reg, True), rel=1e-5)


def test_unproved_box_is_never_reported_optimal() -> None:
    pytest.importorskip("highspy")
    # separable logistic data without ridge: the loss infimum is not attained, so only
    # the stated weight box can be certified
    X = np.arange(6, dtype=float).reshape(-1, 1)
    ds = Dataset.from_arrays(X, np.array([0, 0, 0, 1, 1, 1]), loss="logistic")
    res = solve(IntervalCoverMIP(Language(1), loss="logistic", reg=0.0, weight_bound=3.0),
        ds, solver="highs", budget=Budget.from_time_limit(60))
    assert not res.bound_valid
    assert res.termination is not TerminationReason.OPTIMAL
    assert any("within" in n for n in res.notes)
    # the reported risk is the decoded ensemble's risk on the data (a true upper bound)
    assert res.ensemble is not None
    assert res.ensemble.risk(ds.X, ds.y) == pytest.approx(res.risk, rel=1e-9)


def test_cbc_tangent_cuts_match_brute_force() -> None:
    _skip_missing("cbc")
    ds = _data("squared", seed=3, n=7, d=1)
    ths = candidate_thresholds(ds.X, 3)
    res = solve(IntervalCoverMIP(Language(2, ths), reg=0.1), ds, solver="cbc",
                budget=Budget.from_time_limit(60))
    assert res.is_optimal
    assert res.risk == pytest.approx(brute_force(ds, ths, 2, "squared", 0.1, True), rel=1e-6)
