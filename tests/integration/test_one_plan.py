"""One plan for every exact fit (issue 32): the same data and parameters through
``ExactRuleEnsembleRegressor``, ``solve_exact(plan=FIT_PLAN)`` and ``gap_study`` give the
same model and bound — all three run the plan of ``rulemip.algorithms.fit_plan`` (warm
start, local phase, engine, swaps and kicks) and its one decision. A deterministic work
limit stops the engine, so the phases after it run and the comparison is reproducible."""

import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from rulemip import ExactRuleEnsembleRegressor
from rulemip.algorithms.fit_plan import ENGINE_PLAN, FIT_PLAN, solve_exact
from rulemip.budget import Budget
from rulemip.certify import gap_study
from rulemip.data import Dataset, candidate_thresholds
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import Limit

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")

K, WORK, REG = 3, 20_000, 1.0


def _rules(ensemble):
    return [(tuple((c.feature, c.lower, c.upper) for c in r.conditions), r.weight)
            for r in ensemble.rules]


def test_estimator_solve_exact_and_gap_study_run_one_plan():
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:150, [2, 3, 8]], y[:150]
    ths = candidate_thresholds(X, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ExactRuleEnsembleRegressor(K, reg=REG, thresholds=ths, time_limit=None,
                                         work_limit=WORK, random_state=0, n_jobs=1,
                                         preset="COB").fit(X, y)
        ds = Dataset.from_arrays(X, y)
        res = solve_exact(KRuleProblem.of(ds, K, reg=REG, thresholds=ths), preset="COB",
                          plan=FIT_PLAN, budget=Budget.from_time_limit(None, work_limit=WORK),
                          seed=0)
        study = gap_study(X, y, k_max=K, variants=["COB"], reg=REG, fit_intercept=True,
                          thresholds=ths, time_limit=None, work_limit=WORK, seed=0)
    fit = est.result_
    assert fit.limit is Limit.NODE and not fit.is_optimal  # the work limit stopped it
    assert any(n.startswith("local phase") for n in fit.notes)  # swaps after the engine
    # the estimator and solve_exact: one model, one bound, one status
    assert _rules(res.ensemble) == _rules(fit.ensemble)
    assert res.risk == fit.risk and res.lower_bound == fit.lower_bound
    assert (res.termination, res.limit) == (fit.termination, fit.limit)
    # the gap study's exact fit at k: the same plan, from the same boosting model
    cert = study.certificates[K]
    assert cert.risk == pytest.approx(fit.risk, rel=1e-12)
    assert cert.lower_bound == pytest.approx(fit.lower_bound, rel=1e-12)
    assert cert.status == fit.termination.value
    assert any(n.startswith("local phase") for n in cert.notes)
    assert _rules(cert.ensemble) == _rules(fit.ensemble)


def test_solve_exact_runs_the_engine_alone_by_default():
    """``solve_exact`` without ``plan`` is the engine from the warm start given
    (:data:`ENGINE_PLAN`), as before the plan: no local phase, no swaps."""
    X, y = load_diabetes(return_X_y=True)
    X, y = X[:150, [2, 3, 8]], y[:150]
    ths = candidate_thresholds(X, 6)
    ds = Dataset.from_arrays(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = solve_exact(KRuleProblem.of(ds, K, reg=REG, thresholds=ths), seed=0,
                            budget=Budget.from_time_limit(None, work_limit=WORK))
        same = solve_exact(KRuleProblem.of(ds, K, reg=REG, thresholds=ths), seed=0,
                           plan=ENGINE_PLAN, budget=Budget.from_time_limit(None, work_limit=WORK))
    assert not any(n.startswith("local phase") for n in alone.notes)
    assert _rules(alone.ensemble) == _rules(same.ensemble) and alone.risk == same.risk


@pytest.mark.parametrize("engine", ["cip", "cip-bnb", "mip", "cg", "cell-bnb", "kbox"])
def test_the_engine_plan_decides_what_the_driver_decided(engine):
    """``solve_exact(plan=ENGINE_PLAN)`` — the engine alone, decided by the fit's rule —
    equals the driver's own decision on the engine's formulation (status, bound, risk),
    and both are the brute-force optimum on instances small enough to enumerate."""
    from rulemip.algorithms.solve.driver import solve
    from rulemip.algorithms.solve.registry import engine_spec
    from rulemip.testing.brute_force import brute_force_optimum

    for seed, k, reg in ((0, 1, 0.05), (1, 2, 0.1)):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(12, 2))
        y = np.where(X[:, 0] > 0.1, 1.5, -0.5) + 0.3 * rng.normal(size=12)
        ds = Dataset.from_arrays(X, y)
        problem = KRuleProblem.of(ds, k, reg=reg, thresholds=candidate_thresholds(X, 2))
        direct = solve(engine_spec(engine).factory(problem), ds,
                       budget=Budget.from_time_limit(60))
        planned = solve_exact(problem, engine=engine, plan=ENGINE_PLAN,
                              budget=Budget.from_time_limit(60))
        assert planned.termination is direct.termination, (seed, planned.notes)
        assert planned.limit is direct.limit
        assert planned.lower_bound == direct.lower_bound
        assert planned.risk == direct.risk
        best = brute_force_optimum(X, y, k, reg=reg, thresholds=problem.thresholds)
        assert direct.is_optimal and direct.risk == pytest.approx(best.risk, rel=1e-6)
