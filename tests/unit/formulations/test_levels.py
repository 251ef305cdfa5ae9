"""The fast levels bound (divide-and-conquer 1-d k-means) against the quadratic DP and
against exhaustive assignments."""

import itertools

import numpy as np
import pytest

from rulemip.formulations.box_oracles import segmentation_bound
from rulemip.formulations.levels import levels_bound, levels_work
from rulemip.rules.language import Language


def _quadratic_levels(v, w, L):
    order = np.argsort(v, kind="stable")
    centred = v - np.average(v, weights=w)  # the reference loses digits to a large mean
    return segmentation_bound(centred[order], w[order], L)


@pytest.mark.parametrize("seed", range(40))
def test_divide_and_conquer_equals_quadratic_dp(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 120))
    v = rng.normal(size=m) * rng.choice([1e-3, 1.0, 150.0]) + rng.choice([0.0, 1e4])
    if seed % 3 == 0:  # ties
        v = np.round(v, 0)
    w = rng.uniform(0.1, 3.0, size=m) if seed % 2 else np.ones(m)
    for L in (1, 2, 3, 4, 7, 8, 16, 33):
        ref = _quadratic_levels(v, w, L) if m > L else 0.0
        got = levels_bound(v, w, L)
        scale = float(w @ (v - np.average(v, weights=w)) ** 2)
        assert got == pytest.approx(ref, rel=1e-9, abs=1e-9 * max(scale, 1.0))


def test_levels_equal_exhaustive_assignment():
    rng = np.random.default_rng(7)
    for _ in range(6):
        v = rng.normal(size=7)
        w = rng.uniform(0.5, 2.0, size=7)
        for L in (1, 2, 3):
            best = min(
                sum(float(np.sum(w[g] * (v[g] - np.average(v[g], weights=w[g])) ** 2))
                    for g in (np.flatnonzero(np.asarray(lab) == s) for s in range(L))
                    if len(g))
                for lab in itertools.product(range(L), repeat=7))
            assert levels_bound(v, w, L) == pytest.approx(best, rel=1e-10, abs=1e-12)


def test_levels_edge_cases_and_work():
    assert levels_bound(np.array([]), np.array([]), 4) == 0.0
    assert levels_bound(np.array([1.0, 2.0]), np.ones(2), 2) == 0.0
    assert levels_bound(np.array([1.0, 3.0]), np.ones(2), 1) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        levels_bound(np.array([1.0]), np.ones(1), 0)
    assert levels_work(10, 16) == 0.0
    assert levels_work(1024, 4) == pytest.approx(4 * 1024 * 10)


# ---------------------------------------------------------------------- logistic
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("reg", [1e-3, 0.1, 1.0])
def test_logistic_levels_bound_below_brute_force(fit_intercept, reg):
    from rulemip.data import Dataset
    from rulemip.formulations.box_selection import BoxSelectionCIP
    from rulemip.testing.brute_force import brute_force_optimum

    rng = np.random.default_rng(int(reg * 1000) + fit_intercept)
    for trial in range(4):
        n = int(rng.integers(6, 11))
        X = rng.normal(size=(n, 2))
        y = rng.choice([-1.0, 1.0], size=n)
        y[:2] = (-1.0, 1.0)
        if trial == 0:
            y[2:] = 1.0                    # nearly one label
        for k in (1, 2):
            bf = brute_force_optimum(X, y, k, loss="logistic", reg=reg,
                                     fit_intercept=fit_intercept, max_thresholds=2)
            cip = BoxSelectionCIP(Language(k, fit_intercept=fit_intercept), loss="logistic",
                                  reg=reg, max_thresholds=2)
            prob = cip.build(Dataset.from_arrays(X, y))
            assert prob.bound_parts["levels"] <= bf.risk + 1e-9
            if len(set(y)) == 2:
                assert prob.bound_parts["levels"] > 0.0


def test_logistic_levels_bound_closed_form_one_cell():
    """One pure cell, k rules, no intercept: min_s λ s²/k + W log(1 + e^{-s}) (the k equal
    weights s/k are optimal), so the bound equals the true optimum up to its grid."""
    from scipy.optimize import minimize_scalar

    from rulemip.formulations.levels import logistic_levels_bound

    for W, reg, k in ((10.0, 0.5, 1), (3.0, 0.01, 3), (100.0, 2.0, 2)):
        def phi(s, W=W, reg=reg, k=k):
            return reg * s * s / k + W * np.logaddexp(0.0, -s)

        true = minimize_scalar(phi, bounds=(0.0, 100.0), method="bounded", options={"xatol": 1e-12})
        got = logistic_levels_bound(np.array([W]), np.array([0.0]), k, reg, False)
        assert got <= true.fun + 1e-9
        assert got >= true.fun - 1e-4 * true.fun


def test_logistic_levels_bound_without_ridge_is_the_cells_entropy():
    from rulemip.formulations.levels import logistic_levels_bound

    wp, wn = np.array([3.0, 0.0, 2.0]), np.array([1.0, 4.0, 2.0])
    want = 3 * np.log(4 / 3) + np.log(4.0) + 4 * np.log(2.0)
    assert logistic_levels_bound(wp, wn, 2, 0.0, True) == pytest.approx(want)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_logistic_levels_bound_stopped_by_its_budget_stays_below_the_whole(fit_intercept):
    """A budget spent after the j-th clock check (issue 38: every evaluation of m is
    O(cells)): the bound is 0 before the coarse grid is complete, then a valid bound no
    larger than the whole computation's (a coarser grid), and the whole one at the end."""
    from rulemip.budget import Budget, use_clock
    from rulemip.formulations.levels import logistic_levels_bound

    rng = np.random.default_rng(7)
    wp, wn = rng.uniform(0, 3, 40), rng.uniform(0, 3, 40)
    whole = logistic_levels_bound(wp, wn, 2, 0.5, fit_intercept)
    assert whole > 0.0
    got = []
    for j in range(0, 130, 3):
        calls = [0]

        def clock(j=j, calls=calls):
            calls[0] += 1
            return 0.0 if calls[0] <= j + 1 else 1e9     # check 1 creates the budget

        with use_clock(clock):
            got.append(logistic_levels_bound(wp, wn, 2, 0.5, fit_intercept,
                                             budget=Budget.from_time_limit(10.0)))
    assert got[0] == 0.0 and all(0.0 <= g <= whole * (1 + 1e-12) for g in got)
    assert got[4] > 0.0 and got[-1] == whole
