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

from rulemip.budget import Budget
from rulemip.rules.problem import KRuleProblem
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
    from rulemip.algorithms.fit_plan import solve_exact
    from rulemip.data import Dataset, candidate_thresholds

    X, y = _tiny_poisson(seed)
    ths = candidate_thresholds(X, 2)
    best = brute_force_optimum(X, y, 2, loss="poisson", reg=1e-6, thresholds=ths,
                               fit_intercept=fit_intercept).risk
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = KRuleProblem.of(Dataset.from_arrays(X, y, loss="poisson"), 2, loss="poisson",
                                  reg=1e-6, thresholds=ths, fit_intercept=fit_intercept)
        r = solve_exact(problem,
                        engine="mip", solver=solver, budget=Budget.from_time_limit(30))
    assert r.lower_bound <= best  # no tolerance: a bound is a bound
    assert r.risk >= best - 1e-12 * max(1.0, best)
    if r.termination is TerminationReason.OPTIMAL:
        assert r.gap <= 1e-6


def _weighted_logistic(seed: int):
    """Issue 30, item 5's randomized instances (k = 2, one or two features, two cut points
    per feature, integer or real row weights, reg 1e-5 .. 1e-2)."""
    from rulemip.data import candidate_thresholds

    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 15))
    d = int(rng.integers(1, 3))
    X = rng.normal(size=(n, d))
    y = np.where(X[:, 0] + rng.uniform(0.3, 2) * rng.normal(size=n) > 0, 1.0, -1.0)
    w = rng.uniform(0.1, 5, n) if seed % 2 else rng.integers(1, 6, n).astype(float)
    reg = float(rng.choice([1e-5, 1e-4, 1e-3, 1e-2]))
    fit_intercept = bool(rng.integers(0, 2))
    return X, y, w, reg, fit_intercept, candidate_thresholds(X, 2, w)


# seed 44: CBC claimed `optimal` 1.0e-6 above the brute-force optimum with its bound 6.7e-7
# above it (its master's best bound lay 3.6e-6 above the master's optimum: CBC prunes
# within its cutoff increment, 1e-5 absolute); seeds 20 and 26: a master bound above the
# optimum (refuted, so no false claim, but no proof either)
@pytest.mark.parametrize("seed", [44, 20, 26])
@pytest.mark.parametrize("repeated", [False, True])
def test_cbc_weighted_logistic_bound_is_below_the_brute_force_optimum(seed: int,
                                                                      repeated: bool) -> None:
    if "cbc" not in available_backends():
        pytest.skip("cbc (ortools) not installed")
    from rulemip.algorithms.fit_plan import solve_exact
    from rulemip.data import Dataset

    X, y, w, reg, fit_intercept, ths = _weighted_logistic(seed)
    best = brute_force_optimum(X, y, 2, loss="logistic", reg=reg, thresholds=ths,
                               fit_intercept=fit_intercept, sample_weight=w).risk
    if repeated:
        if seed % 2:
            pytest.skip("real-valued weights cannot be repeated rows")
        rows = np.repeat(np.arange(len(y)), w.astype(int))
        ds = Dataset.from_arrays(X[rows], y[rows], loss="logistic")
    else:
        ds = Dataset.from_arrays(X, y, loss="logistic", sample_weight=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        problem = KRuleProblem.of(ds, 2, loss="logistic", reg=reg, fit_intercept=fit_intercept,
                                  thresholds=ths)
        r = solve_exact(problem,
                        engine="mip", solver="cbc", budget=Budget.from_time_limit(30))
    assert r.lower_bound <= best  # no tolerance: a bound is a bound
    assert r.risk >= best - 1e-12
    if r.termination is TerminationReason.OPTIMAL:
        assert r.risk <= best * (1 + 1e-6)


def test_cbc_best_bound_allows_for_its_cutoff_increment() -> None:
    """The backend's dual bound is CBC's best bound less its cutoff increment, in the
    units of the objective it was given (scaled up by `objective_factor`)."""
    if "cbc" not in available_backends():
        pytest.skip("cbc (ortools) not installed")
    from rulemip.solvers.cbc import CUTOFF_INCREMENT, CbcBackend, objective_factor

    assert objective_factor(np.array([0.125, -0.01])) == pytest.approx(8000.0)
    assert objective_factor(np.array([5e3])) == 1.0
    assert objective_factor(np.zeros(3)) == 1.0
    # a knapsack whose optimum is -(value) with tiny values: CBC's bound is valid and the
    # slack is CUTOFF_INCREMENT / F, far below the objective
    import itertools

    import scipy.sparse as sp

    from rulemip.model.mip_model import MIPModel

    rng = np.random.default_rng(3)
    v = rng.uniform(1, 2, 12) * 1e-4
    wt = rng.uniform(1, 2, 12)
    m = MIPModel("knapsack")
    x = m.add_variables("x", 12, binary=True)
    m.add_constraints("cap", matrix=sp.csr_matrix(wt[None, :]), cols=x.ids,
                      upper=float(wt.sum()) / 3)
    m.add_objective(x.ids, -v)
    res = CbcBackend().solve(m.to_standard_form())

    best = min(-float(v @ np.array(z)) for z in itertools.product((0, 1), repeat=12)
               if float(wt @ np.array(z)) <= wt.sum() / 3)
    assert res.bounds.dual <= best <= res.bounds.primal + 1e-15
    assert best - res.bounds.dual <= 2 * CUTOFF_INCREMENT / objective_factor(-v)
