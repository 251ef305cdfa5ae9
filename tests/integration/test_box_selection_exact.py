"""BoxSelectionCIP end to end: equals brute force on tiny instances (all losses, with and
without intercept), D(k, Δ) of docs/explanation/gaps.md, time limits, warm starts."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.algorithms.krule.box_selection import solve_box_selection
from rulemip.budget import Budget
from rulemip.data import Dataset, alternating
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.refit import fit_weights
from rulemip.rules.language import Language
from rulemip.solvers import Limit, TerminationReason
from rulemip.testing.brute_force import brute_force_optimum

pytest.importorskip("highspy")
pytestmark = pytest.mark.solver


def _dataset(seed, loss, d, n=8):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    if loss == "squared":
        y = rng.normal(size=n)
    elif loss == "logistic":
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y[:2] = [1.0, -1.0]
    else:
        y = rng.poisson(2.0, size=n).astype(float)
        y[0] = max(y[0], 1.0)
    return Dataset.from_arrays(X, y, loss=loss)


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("d", [1, 2])
def test_cip_equals_brute_force(loss, fit_intercept, d):
    ds = _dataset(10 * d + len(loss), loss, d)
    for k in (1, 2, 3):
        reg = 0.5
        bf = brute_force_optimum(ds.X, ds.y, k, loss, reg, fit_intercept, max_thresholds=2)
        cip = BoxSelectionCIP(Language(k, fit_intercept=fit_intercept), loss=loss, reg=reg,
                              max_thresholds=2)
        # outer approximation (HiGHS masters, most of this test's time) at k = 1 and 3,
        # enumeration at every k: k = 2 runs the same OA code as k = 3
        for method in ("oa", "enumerate") if k != 2 else ("enumerate",):
            res = solve_box_selection(cip, ds, method=method, budget=Budget.from_time_limit(60))
            assert res.termination is TerminationReason.OPTIMAL, (method, res.notes)
            assert res.risk == pytest.approx(bf.risk, rel=1e-7, abs=1e-9)
            assert res.lower_bound <= bf.risk * (1 + 1e-9) + 1e-12
            assert res.gap <= 1e-6 and res.bound_valid
            assert res.n_boxes == bf.n_boxes
            ens = res.ensemble
            assert ens is not None and len(ens) <= k
            assert ens.risk(ds.X, ds.y, reg) == pytest.approx(res.risk, rel=1e-9)
            if method == "oa":
                for h in res.history:  # bounds valid at every iteration
                    assert h["lb"] <= bf.risk * (1 + 1e-9) + 1e-12
                    assert h["ub"] >= bf.risk * (1 - 1e-9) - 1e-12


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_alternating_dataset_lemma1(k):
    delta, reg = 0.1, 1e-6
    X, y = alternating(k, delta)
    ds = Dataset.from_arrays(X, y)
    res = solve_box_selection(BoxSelectionCIP(Language(k, fit_intercept=False), reg=reg), ds)
    assert res.termination is TerminationReason.OPTIMAL
    # Lemma 1's ensemble: one rule covering all points + single-point rules on even points
    n = 2 * k - 1
    Q = np.column_stack([np.ones(n)] + [np.eye(n)[:, i] for i in range(1, n, 2)])
    lemma = fit_weights(Q, y, "squared", reg, fit_intercept=False)
    closed = delta ** 2 * k * (k * k - 1) / (3 * (2 * k - 1))
    assert lemma.risk == pytest.approx(closed, rel=1e-3)  # ridge changes it by ~1e-6
    assert res.lower_bound <= res.risk <= lemma.risk + 1e-12


def test_time_limit_gives_feasible_with_valid_interval():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + 0.3 * rng.normal(size=60)
    ds = Dataset.from_arrays(X, y)
    cip = BoxSelectionCIP(Language(3), reg=0.05, max_thresholds=5)
    res = solve_box_selection(cip, ds, method="oa", budget=Budget.from_time_limit(1.0))
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.OPTIMAL)
    if res.termination is TerminationReason.FEASIBLE:
        assert res.limit is Limit.TIME
    assert res.wall_time < 10.0
    assert res.lower_bound <= res.risk
    assert res.ensemble is not None
    assert res.ensemble.risk(ds.X, ds.y, 0.05) == pytest.approx(res.risk, rel=1e-9)


def test_warm_start_from_boosting():
    booster_mod = pytest.importorskip("rulemip.boosting.booster")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 2))
    y = np.where(X[:, 0] > 0.3, 2.0, 0.0) + rng.normal(size=40) * 0.2
    ds = Dataset.from_arrays(X, y)
    booster = booster_mod.RuleBooster(n_rules=2, objective="gb", max_thresholds=3,
                                      reg=1.0).fit(ds)
    warm = booster.ensemble(2)
    cip = BoxSelectionCIP(Language(2), reg=1.0, max_thresholds=3)
    prob = cip.build(ds)
    zw = prob.encode(warm)
    assert zw.sum() >= 1
    res = solve_box_selection(cip, ds, warm_start=warm, method="oa")
    assert res.termination is TerminationReason.OPTIMAL
    assert res.risk <= prob.oracle.value_and_gradient(zw)[0] + 1e-12
