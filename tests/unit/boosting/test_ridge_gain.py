"""The ridge-gain rule objective: the exact risk reduction of one rule, maximized exactly by
branch and bound (the k = 1 path of column generation)."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.boosting.objectives import ridge_gain_objective
from rulemip.boosting.search import find_rule
from rulemip.boosting.space import SearchSpace
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.refit import fit_weights


def _intervals(t):
    out = []
    for a in range(len(t) + 1):
        for b in range(a, len(t) + 1):
            lo = -np.inf if a == 0 else t[a - 1]
            hi = np.inf if b == len(t) else t[b]
            out.append((lo, hi))
    return out


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_gain_is_the_exact_reduction_and_bnb_finds_its_maximum(rng, fit_intercept):
    for _ in range(3):
        n, lam = 40, 0.3
        X = rng.normal(size=(n, 2))
        y = rng.normal(size=n) + 2.0 * (X[:, 0] > 0)
        w = rng.integers(1, 3, size=n).astype(float)
        ths = candidate_thresholds(X, 4)
        W = w.sum()
        r = y - ((w @ y) / W if fit_intercept else 0.0)
        obj = ridge_gain_objective(r, weights=w, reg=lam, fit_intercept=fit_intercept)
        empty = fit_weights(np.zeros((n, 0)), y, "squared", lam, fit_intercept,
                            sample_weight=w).risk
        best = 0.0
        for (l0, h0), (l1, h1) in itertools.product(_intervals(ths[0]), _intervals(ths[1])):
            q = (X[:, 0] > l0) & (X[:, 0] <= h0) & (X[:, 1] > l1) & (X[:, 1] <= h1)
            if not q.any() or (fit_intercept and q.all()):
                continue
            refit = fit_weights(q[:, None].astype(float), y, "squared", lam, fit_intercept,
                                sample_weight=w).risk
            value = obj.value(q)
            assert empty - value ** 2 / W == pytest.approx(refit, rel=1e-9, abs=1e-12)
            best = max(best, value)
        found = find_rule(SearchSpace.build(X, thresholds=ths), obj,
                          allow_empty=not fit_intercept)
        assert found.certified and found.value == pytest.approx(best, rel=1e-12)
        assert found.bound >= best * (1 - 1e-12)


def test_one_rule_is_certified_by_the_rule_search(rng):
    X = rng.normal(size=(60, 3))
    y = 1.5 * ((X[:, 0] > 0.2) & (X[:, 2] < 0.5)) + 0.2 * rng.normal(size=60)
    ds = Dataset.from_arrays(X, y)
    ths = candidate_thresholds(ds.X, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cg = solve_exact(ds, 1, reg=0.1, thresholds=ths, engine="cg",
                         budget=Budget.from_time_limit(30))
        cip = solve_exact(ds, 1, reg=0.1, thresholds=ths, engine="cip",
                          budget=Budget.from_time_limit(30))
    assert cip.is_optimal and cg.is_optimal
    assert cg.risk == pytest.approx(cip.risk, rel=1e-9)
    assert "one rule exactly" in cg.notes[0]
