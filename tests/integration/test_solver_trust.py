"""Solver trust: a bound the recomputed risk refutes is never reported as proved.

Reproductions from the hardening review: CBC, driven by tangent cuts, reported a lower
bound above the true optimum of a tiny logistic instance and the result still said
``optimal``. The one status promotion (:func:`rulemip.solvers.status.promote`) must fall
back to a bound valid by construction, warn, and never claim optimality.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from rulemip.solvers import TerminationReason, available_backends
from rulemip.solvers.result import Limit
from rulemip.solvers.status import RefutedBoundWarning, promote
from rulemip.testing.brute_force import brute_force_optimum

X_REPRO = np.array([[-0.04], [-1.78], [0.63], [0.86], [-0.45], [-0.28], [0.49], [-0.91],
                    [0.44], [0.2], [-0.67]])
Y_REPRO = np.array([0, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0])


def test_promote_refuted_bound_falls_back_and_warns() -> None:
    with pytest.warns(RefutedBoundWarning, match="bound refuted"):
        v = promote(0.68810, 0.68811, finished=True, mip_gap=1e-6, fallback_bound=0.0)
    assert v.termination is TerminationReason.FEASIBLE
    assert v.lower_bound == 0.0 and v.refuted
    assert v.gap == pytest.approx(1.0)


def test_promote_closes_only_within_the_gap() -> None:
    ok = promote(1.0, 1.0 - 5e-7, finished=True, mip_gap=1e-6)
    assert ok.termination is TerminationReason.OPTIMAL and ok.limit is None
    wide = promote(1.0, 0.9, finished=True, mip_gap=1e-6)
    assert wide.termination is TerminationReason.FEASIBLE and wide.limit is Limit.GAP
    cut = promote(1.0, 1.0, finished=False, mip_gap=1e-6, limit=Limit.TIME)
    assert cut.termination is TerminationReason.FEASIBLE and cut.limit is Limit.TIME
    unproved = promote(1.0, 1.0, finished=True, mip_gap=1e-6, bound_valid=False)
    assert unproved.termination is TerminationReason.FEASIBLE
    none = promote(math.inf, 0.5, finished=False, mip_gap=1e-6, limit=Limit.TIME)
    assert none.termination is TerminationReason.NO_SOLUTION_FOUND
    # a bound above the risk within rounding is the risk itself, not a refutation
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tiny = promote(1.0, 1.0 + 1e-9, finished=True, mip_gap=1e-6)
    assert tiny.termination is TerminationReason.OPTIMAL and tiny.lower_bound == 1.0


@pytest.mark.parametrize("solver", ["cbc", "highs", "scip"])
def test_repro_never_claims_a_refuted_bound(solver: str) -> None:
    if solver not in available_backends():
        pytest.skip(f"{solver} not installed")
    from rulemip.estimators.exact import ExactRuleEnsembleClassifier

    best = brute_force_optimum(X_REPRO, 2.0 * Y_REPRO - 1.0, 3, loss="logistic", reg=0.01,
                               fit_intercept=True, thresholds=[np.array([0.56])],
                               max_rule_length=1).risk
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = ExactRuleEnsembleClassifier(n_rules=3, reg=0.01, max_rule_length=1,
                                        thresholds=[[0.56]], engine="mip", solver=solver,
                                        preset=None).fit(X_REPRO, Y_REPRO)
    r = m.result_
    assert r.risk == pytest.approx(best, rel=1e-6)
    # whatever the backend did, the reported bound is valid ...
    assert r.lower_bound <= best + 1e-9
    # ... and optimality is claimed only when that valid bound closed the gap
    if r.termination is TerminationReason.OPTIMAL:
        assert r.gap <= 1e-6
        assert not any(n.startswith("bound refuted") for n in r.notes)


def _tiny_poisson(seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(6, 16))
    X = rng.normal(size=(n, 2))
    y = rng.poisson(np.exp(rng.normal() + (X[:, 0] > 0))).astype(float)
    return X, y


# (seed, fit_intercept): issue 22's brute-force oracle found HiGHS's bound 7.3e-7 above the
# optimum of seed 20 (3 % relative: the optimum is 2.4e-5) and CBC's 9.3e-8 above that of
# seed 13, both reported "optimal"; seed 3 is an ordinary instance
@pytest.mark.parametrize("seed,fit_intercept", [(20, False), (13, True), (3, False)])
@pytest.mark.parametrize("solver", ["cbc", "highs", "scip"])
def test_poisson_bound_is_never_above_the_brute_force_optimum(solver: str, seed: int,
                                                              fit_intercept: bool) -> None:
    if solver not in available_backends():
        pytest.skip(f"{solver} not installed")
    from rulemip.algorithms.driver import solve_exact
    from rulemip.data import Dataset, candidate_thresholds

    X, y = _tiny_poisson(seed)
    ths = candidate_thresholds(X, 2)
    best = brute_force_optimum(X, y, 2, loss="poisson", reg=1e-6, thresholds=ths,
                               fit_intercept=fit_intercept).risk
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = solve_exact(Dataset.from_arrays(X, y, loss="poisson"), 2, loss="poisson",
                        reg=1e-6, thresholds=ths, engine="mip", solver=solver,
                        fit_intercept=fit_intercept, time_limit=30)
    assert r.lower_bound <= best  # no tolerance: a bound is a bound
    assert r.risk >= best - 1e-12 * max(1.0, best)
    if r.termination is TerminationReason.OPTIMAL:
        assert r.gap <= 1e-6
