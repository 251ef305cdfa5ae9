"""The range search's prefix masks are inside its memory budget: masks beyond it are refused
before anything is allocated, and the exact one-rule searches of the fit (column
generation's one rule, the 1-swap check) fall back to the set enumeration, which reaches
the same optimum (issue 38: every distinct value of 100 000 × 20 needed 23 GiB of masks and
the process was killed)."""

from __future__ import annotations

import numpy as np
import pytest

import rulemip.boosting.search as search_module
from rulemip import ExactRuleEnsembleRegressor
from rulemip.boosting.boxsearch import range_search
from rulemip.boosting.boxsearch.range_search import box_search, mask_bytes
from rulemip.boosting.objectives import ridge_gain_objective
from rulemip.boosting.search import find_rule
from rulemip.boosting.space import SearchSpace
from rulemip.budget import ResourceLimitError
from rulemip.testing.brute_force import brute_force_optimum


def _no_masks(*args: object) -> None:
    raise AssertionError("the range search's masks were built")


def _table(seed: int, n: int = 24) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 2)), 1)
    y = 2.0 * (X[:, 0] > 0.3) - 1.0 * (X[:, 1] < -0.2) + rng.normal(scale=0.3, size=n)
    return X, y


def test_masks_beyond_the_memory_budget_are_refused_before_allocation(monkeypatch):
    X, y = _table(0)
    space = SearchSpace.build(X, 3)
    obj = ridge_gain_objective(y - y.mean(), weights=np.ones(len(y)), reg=1e-3,
                               fit_intercept=True)
    need = mask_bytes(space)
    with pytest.raises(ResourceLimitError, match="prefix masks"):
        box_search(space, obj, max_memory=need - 1)
    within = box_search(space, obj, max_memory=need + 10**6)
    # masks "of an exabyte": find_rule, the searches' entry, takes the set enumeration
    monkeypatch.setattr(search_module, "mask_bytes", lambda space: 1 << 60)
    fallback = find_rule(space, obj, search="bnb")
    assert within is not None and fallback is not None
    assert within.certified and fallback.certified
    assert fallback.value == pytest.approx(within.value, rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2])
def test_one_rule_fits_reach_the_optimum_when_the_masks_do_not_fit(monkeypatch, seed):
    X, y = _table(seed)
    ths = [np.array([-0.5, 0.0, 0.3]), np.array([-0.2, 0.4])]
    want = brute_force_optimum(X, y, 1, reg=1e-3, thresholds=ths).risk
    # compiles the kernels first (their warm-up runs the range search on a tiny table)
    ExactRuleEnsembleRegressor(n_rules=1, thresholds=ths, time_limit=None).fit(X, y)
    # masks "of an exabyte": find_rule, the searches' entry, takes the set enumeration
    monkeypatch.setattr(search_module, "mask_bytes", lambda space: 1 << 60)
    # ...and no search of the fit builds masks (column generation called the range
    # search directly)
    monkeypatch.setattr(range_search.K, "build_masks", _no_masks)
    for engine in ("cg", "auto"):
        est = ExactRuleEnsembleRegressor(n_rules=1, reg=1e-3, thresholds=ths, engine=engine,
                                         time_limit=None, work_limit=10**6).fit(X, y)
        assert est.result_.termination.value == "optimal", est.result_.notes
        assert est.result_.risk == pytest.approx(want, rel=1e-9)
