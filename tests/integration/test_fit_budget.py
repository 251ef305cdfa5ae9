"""One time budget per exact fit: the warm start runs inside it, on the problem's own
candidate set, and the result is never worse than the warm start nor bounded below 0."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from rulemip import ExactRuleEnsembleRegressor
from rulemip.algorithms.fit_decision import (
    FitState,
    PhaseOutcome,
    absorb,
    decide_fit,
    engine_outcome,
)
from rulemip.data import Dataset
from rulemip.formulations.result import ExactResult
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import Limit, TerminationReason


def _result(ensemble, risk, lb, term=TerminationReason.FEASIBLE):
    return ExactResult(ensemble=ensemble, risk=risk, lower_bound=lb, gap=1.0,
                       termination=term, limit=Limit.TIME, wall_time=0.0, iterations=0,
                       engine="mip", backend="highs", backend_version="", n_boxes=0,
                       n_cells=0, bound_valid=True, notes=())


def _decided(result, ds, warm_start, *, fit_intercept=True):
    """The fit's decision of an engine's ``result`` after ``warm_start`` (or none)."""
    problem = KRuleProblem.of(ds, 2, reg=0.1, fit_intercept=fit_intercept,
                              thresholds=[np.array([0.0]), np.array([0.0])])
    state = FitState(problem, 1e-6)
    if warm_start is not None:
        absorb(state, PhaseOutcome(warm_start), "warm start")
    absorb(state, engine_outcome(result, problem, budget=None, incumbent=state.model))
    return decide_fit(state, result)


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 3.0, -1.0) + 0.1 * rng.normal(size=30)
    return Dataset.from_arrays(X, y, loss="squared")


def test_warm_start_replaces_a_worse_incumbent_and_bound_is_floored_at_zero():
    ds = _data()
    good = RuleEnsemble([Rule([Condition(0, lower=0.0)], 4.0)], intercept=-1.0)
    bad = RuleEnsemble([], intercept=0.0)
    bad_risk = float(bad.risk(ds.X, ds.y, reg=0.1))
    good_risk = float(good.risk(ds.X, ds.y, reg=0.1))
    assert good_risk < bad_risk
    out = _decided(_result(bad, bad_risk, -1e20), ds, good)
    assert out.ensemble is good and out.risk == pytest.approx(good_risk)
    assert out.lower_bound == 0.0
    assert out.termination is TerminationReason.FEASIBLE
    # no incumbent at all: the warm start is returned
    none = _decided(_result(None, float("inf"), -np.inf,
                            TerminationReason.NO_SOLUTION_FOUND), ds, good)
    assert none.ensemble is good and none.lower_bound == 0.0
    # a better incumbent is kept as it is
    kept = _decided(_result(good, good_risk, 0.5 * good_risk), ds, bad)
    assert kept.ensemble is good and kept.risk == good_risk
    assert kept.lower_bound == 0.5 * good_risk and kept.limit is Limit.TIME


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_no_incumbent_and_no_warm_start_returns_the_model_without_rules(fit_intercept):
    ds = _data()
    out = _decided(_result(None, float("inf"), 0.7, TerminationReason.NO_SOLUTION_FOUND),
                   ds, None, fit_intercept=fit_intercept)
    assert out.ensemble is not None and out.ensemble.rules == ()
    mean = float(np.mean(ds.y))
    assert out.ensemble.intercept == pytest.approx(mean if fit_intercept else 0.0)
    expected = float(np.mean((ds.y - (mean if fit_intercept else 0.0)) ** 2))
    assert out.risk == pytest.approx(expected)
    assert out.lower_bound == pytest.approx(0.7)  # the engine's valid bound is kept
    assert out.termination is TerminationReason.FEASIBLE and out.limit is Limit.TIME
    assert any("without rules" in n for n in out.notes)


def test_warm_start_uses_the_explicit_thresholds():
    ds = _data()
    th = [np.array([0.25]), np.array([-0.5])]
    model = ExactRuleEnsembleRegressor(n_rules=2, reg=0.1, thresholds=th, time_limit=30)
    model.fit(ds.X, ds.y)
    cuts = {(c.feature, v) for r in model.rules_.rules for c in r.conditions
            for v in (c.lower, c.upper) if np.isfinite(v)}
    assert cuts <= {(0, 0.25), (1, -0.5)}
    assert model.result_.risk <= model.boosting_risk_ + 1e-9


@pytest.mark.slow
def test_five_second_budget_on_full_diabetes():
    X, y = load_diabetes(return_X_y=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ExactRuleEnsembleRegressor(n_rules=3, time_limit=5).fit(X, y)
    elapsed = time.perf_counter() - t0
    res = model.result_
    assert elapsed <= 7.0 + 3.0  # max(10 %, 2 s) slack, plus start-up of the solver libs
    assert res.ensemble is not None
    assert 0.0 <= res.lower_bound <= res.risk
    assert res.risk <= model.boosting_risk_ + 1e-9
    assert np.isclose(res.risk, model.rules_.risk(X, y, reg=model.reg))


@pytest.mark.slow
@pytest.mark.solver
def test_scip_on_the_mixed_table_completes_repeatedly_within_its_limit(mixed_table):
    """Issue 22: this fit crashed inside SCIP's MPEC heuristic (Ipopt) in 1 of 3 runs, then
    hung. With the NLP plug-ins off and the watchdog it ends, within its limit plus the
    watchdog's slack, every time (a native abort would fail the whole test run).

    Five runs at the issue's 5 s (a crash rate of 1 in 3 goes unseen with probability
    (2/3)⁵ ≈ 13 %; eight runs, 40 s, were more than the CI's ten minutes could hold); the
    plug-ins' settings themselves are checked deterministically in
    tests/solvers/test_scip.py. Twenty runs (100 s) were the third round's evidence."""
    pytest.importorskip("pyscipopt")
    from conftest import quantile_thresholds

    from rulemip.solvers.scip import watchdog_delay

    X, y = mixed_table
    limit = 5.0
    for _ in range(5):
        est = ExactRuleEnsembleRegressor(1, reg=1e-8, fit_intercept=False,
                                         thresholds=quantile_thresholds(X), engine="mip",
                                         solver="scip", preset=None, time_limit=limit)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        wall = time.perf_counter() - t0
        res = est.result_
        assert wall <= watchdog_delay(limit) + 2.0
        assert res.ensemble is not None and res.backend == "scip"
        assert 0.0 <= res.lower_bound <= res.risk
        assert np.isclose(res.risk, est.rules_.risk(X, y, reg=1e-8))


@pytest.mark.parametrize("engine", ["cip", "cip-bnb"])
def test_enumerating_engine_named_explicitly_refuses_too_many_boxes_up_front(engine):
    """Issue 22: engine='cip' on diabetes with 8 cut points was still building boxes after
    150 s at 5.2 GB under a 5 s limit; now it is refused before any work, naming 'cg'."""
    from rulemip.algorithms.solve.registry import CIP_EXPLICIT_MAX_BOXES
    from rulemip.exceptions import InvalidParameterError
    from rulemip.formulations.sizes import count_boxes

    X, y = load_diabetes(return_X_y=True)
    t0 = time.perf_counter()
    with pytest.raises(InvalidParameterError, match=r"engine='cg'") as info:
        ExactRuleEnsembleRegressor(3, engine=engine, max_thresholds=8, reg=1.0,
                                   time_limit=5).fit(X, y)
    assert time.perf_counter() - t0 < 2.0
    assert f"engine='{engine}'" in str(info.value) and "max_rule_length" in str(info.value)
    # a 124 x 6 table (once a MemoryError for a 179 411 x 179 411 array) is refused too
    rng = np.random.default_rng(0)
    X6 = rng.normal(size=(124, 6))
    with pytest.raises(InvalidParameterError, match="enumerates every candidate box"):
        ExactRuleEnsembleRegressor(2, engine=engine, reg=0.1).fit(X6, X6[:, 0] > 0)
    # the same engine within the cap still runs, and the cap is where the count says
    ths = [np.array([-0.5, 0.0, 0.5])] * 2
    assert count_boxes(Language(1, ths)) <= CIP_EXPLICIT_MAX_BOXES
    # a work limit, not 20 s: cip-bnb does not close this gap (its risk is below 1e-3, and
    # its Frank-Wolfe bounds keep an absolute 1e-9 margin), and the fit then spent the
    # rest of its time limit on the local phase
    est = ExactRuleEnsembleRegressor(1, engine=engine, reg=0.1, thresholds=ths,
                                     work_limit=200, time_limit=60).fit(X6[:, :2],
                                                                        X6[:, 0] > 0)
    assert est.result_.engine == engine
