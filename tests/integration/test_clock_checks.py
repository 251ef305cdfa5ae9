"""Limits that hold on every engine, machine-independently (issue 38, "Done when").

A fit's :class:`~rulemip.budget.Budget` reads one clock (``rulemip.budget``,
:func:`~rulemip.budget.use_clock`); :class:`ExpiringClock` is the real clock until its k-th
check and then jumps 10⁹ s per check, so the budget expires right after the k-th check.
For every k up to the number of checks a fit makes, each engine, estimator and
``gap_study`` must return within one indivisible step of that check: at most
:data:`STEP_CPU` seconds of CPU after it (numba caches warm). A loop that does not ask
the budget — model building, a backend's load, cut generation — shows up here as CPU
spent after the expiry, on any machine and load.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from rulemip.budget import use_clock
from rulemip.testing.limit_cases import exact_engine_cases

#: CPU seconds a fit may spend after its budget expired (one indivisible step)
STEP_CPU = 0.5
#: the time limit of every fit (open-ended phases, such as kicks, run until it: the
#: tests' wall time is mostly runs × LIMIT, so it is short; the checks are the same)
LIMIT = 1.0


class ExpiringClock:
    """:func:`time.perf_counter` for the first ``k`` checks, then 10⁹ s later per check
    (``k=None``: never); counts the checks and notes the CPU time of the k-th."""

    def __init__(self, k: int | None) -> None:
        self.k = k
        self.calls = 0
        self.expired_cpu: float | None = None

    def __call__(self) -> float:
        self.calls += 1
        now = time.perf_counter()
        if self.k is not None and self.calls >= self.k:
            if self.expired_cpu is None:
                self.expired_cpu = time.process_time()
            now += 1e9 * (self.calls - self.k)
        return now


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


def run_case(name: str, clock: ExpiringClock | None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if clock is None:
            return CASES[name]()
        with use_clock(clock):
            return CASES[name]()


def checks_to_expire(n_checks: int, samples: int) -> list[int]:
    """The k at which the budget expires: 1, 2, 3 and ``samples`` more spread evenly
    over the ``n_checks`` checks of a run that never expires (every k when that is at
    most ``samples + 3``)."""
    if n_checks <= samples + 3:
        return list(range(1, n_checks + 1))
    spread = np.linspace(4, n_checks, samples).round().astype(int).tolist()
    return sorted({1, 2, 3, *spread})


def cpu_after_expiry(name: str, samples: int) -> list[tuple[int, float]]:
    """``(k, CPU seconds from the k-th check to the return)`` for each k of
    :func:`checks_to_expire` (numba caches warmed by the first run, which counts the
    checks: a k beyond the checks of a later run is skipped)."""
    counter = ExpiringClock(None)
    run_case(name, counter)
    out = []
    for k in checks_to_expire(counter.calls, samples):
        clock = ExpiringClock(k)
        run_case(name, clock)
        if clock.expired_cpu is None:   # this run ended before its k-th check (the
            continue                    # number of checks of a timed phase varies)
        out.append((k, time.process_time() - clock.expired_cpu))
    return out


@pytest.mark.solver
@pytest.mark.parametrize("name", list(CASES))
def test_every_fit_returns_within_one_step_of_its_budget(name: str) -> None:
    late = [(k, cpu) for k, cpu in cpu_after_expiry(name, samples=4) if cpu > STEP_CPU]
    assert not late, f"{name}: CPU seconds after the k-th clock check (k, s): {late}"


@pytest.mark.slow
@pytest.mark.solver
@pytest.mark.parametrize("name", list(CASES))
def test_every_fit_returns_within_one_step_of_its_budget_dense(name: str) -> None:
    late = [(k, cpu) for k, cpu in cpu_after_expiry(name, samples=8) if cpu > STEP_CPU]
    assert not late, f"{name}: CPU seconds after the k-th clock check (k, s): {late}"
