"""Limits that hold on every engine, machine-independently (issue 38, "Done when").

A fit's :class:`~rulemip.budget.Budget` reads one clock (``rulemip.budget``,
:func:`~rulemip.budget.use_clock`);
:class:`~rulemip.testing.limit_cases.ExpiringClock` is the real clock until its k-th check
and then jumps 10⁹ s per check, so the budget expires right after the k-th check.
For every k up to the number of checks a fit makes, each engine, estimator and
``gap_study`` must return within one indivisible step of that check: at most
:data:`STEP_CPU` seconds of CPU after it (numba caches warm). A loop that does not ask
the budget — model building, a backend's load, cut generation — shows up here as CPU
spent after the expiry, on any machine and load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from rulemip.testing.limit_cases import cpu_after_expiry, exact_engine_cases

#: CPU seconds a fit may spend after its budget expired (one indivisible step)
STEP_CPU = 0.5
#: the time limit of every fit (open-ended phases, such as kicks, run until it: the
#: tests' wall time is mostly runs × LIMIT, so it is short; the checks are the same)
LIMIT = 1.0


def _regression(n: int = 40, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(n, d)), 2)
    y = 2.0 * (X[:, 0] > 0.3) - 1.5 * (X[:, 1] < -0.2) * (X[:, 2] > 0) \
        + rng.normal(scale=0.3, size=n)
    return X, y


def _exact(**kw: Any) -> Callable[[], Any]:
    def fit() -> Any:
        from rulemip import ExactRuleEnsembleRegressor

        X, y = _regression()
        params = {"n_rules": 2, "max_thresholds": 3, "time_limit": LIMIT}
        params.update(kw)
        return ExactRuleEnsembleRegressor(**params).fit(X, y)
    return fit


def _classifier() -> Any:
    from rulemip import ExactRuleEnsembleClassifier

    X, y = _regression()
    return ExactRuleEnsembleClassifier(n_rules=1, max_thresholds=3,
                                       time_limit=LIMIT).fit(X, y > 0)


def _boosting() -> Any:
    from rulemip import RuleBoostingRegressor

    X, y = _regression()
    return RuleBoostingRegressor(n_rules=3, time_limit=LIMIT).fit(X, y)


def _boosting_windows() -> Any:
    """Greedy rounds whose first level is scanned one feature at a time (the windows of
    ``expand_in_windows``, which a 40-row table never needs), the deadline asked between
    the windows and before each round past the grace."""
    from rulemip import RuleBoostingRegressor
    from rulemip.boosting import space

    X, y = _regression()
    old = space.WINDOW_ELEMENTS
    space.WINDOW_ELEMENTS = len(y)
    try:
        return RuleBoostingRegressor(n_rules=3, search="greedy", time_limit=LIMIT).fit(X, y)
    finally:
        space.WINDOW_ELEMENTS = old


def _rgb() -> Any:
    from rulemip import RGBRegressor

    X, y = _regression()
    return RGBRegressor(n_estimators=10, time_limit=LIMIT, random_state=0).fit(X, y)


def _trees() -> Any:
    from sklearn.ensemble import GradientBoostingRegressor

    from rulemip import TreeRuleExtractor

    X, y = _regression()
    gb = _TREES.get("gb")
    if gb is None:   # fitted once: prefit=True, the limit covers the selection
        gb = _TREES["gb"] = GradientBoostingRegressor(n_estimators=10, max_depth=2,
                                                      random_state=0).fit(X, y)
    return TreeRuleExtractor(gb, n_rules=3, prefit=True, time_limit=LIMIT).fit(X, y)


_TREES: dict[str, Any] = {}


def _gap_study() -> Any:
    from rulemip.certify.gap import gap_study

    X, y = _regression()
    return gap_study(X, y, 2, variants=["SGB", "COB"], max_thresholds=3, time_limit=LIMIT)


CASES: dict[str, Callable[[], Any]] = {
    **{name: _exact(**kw) for name, kw in exact_engine_cases().items()},
    "classifier": _classifier,
    "boosting": _boosting,
    "boosting-windows": _boosting_windows,
    "rgb": _rgb,
    "trees": _trees,
    "gap_study": _gap_study,
}


@pytest.mark.solver
@pytest.mark.parametrize("name", list(CASES))
def test_every_fit_returns_within_one_step_of_its_budget(name: str) -> None:
    late = [(k, cpu) for k, cpu in cpu_after_expiry(CASES[name], samples=4) if cpu > STEP_CPU]
    assert not late, f"{name}: CPU seconds after the k-th clock check (k, s): {late}"


@pytest.mark.slow
@pytest.mark.solver
@pytest.mark.parametrize("name", list(CASES))
def test_every_fit_returns_within_one_step_of_its_budget_dense(name: str) -> None:
    late = [(k, cpu) for k, cpu in cpu_after_expiry(CASES[name], samples=8) if cpu > STEP_CPU]
    assert not late, f"{name}: CPU seconds after the k-th clock check (k, s): {late}"
