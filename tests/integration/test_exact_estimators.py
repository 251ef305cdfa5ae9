"""The exact estimators: brute-force optima, warnings on limits, clear errors, sklearn API."""

import warnings

import numpy as np
import pandas as pd
import pytest

from rulemip import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor, verify
from rulemip.exceptions import InvalidDataError, InvalidParameterError, SolveLimitWarning
from rulemip.testing.brute_force import brute_force_optimum

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


def _tiny(seed=0, n=9, d=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = 2.0 * (X[:, 0] > 0) - 1.5 * (X[:, -1] > 0.3) + 0.3 * rng.normal(size=n)
    return X, y


@pytest.mark.parametrize("engine", ["cip", "mip"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_regressor_reaches_the_brute_force_optimum(engine, fit_intercept):
    X, y = _tiny()
    est = ExactRuleEnsembleRegressor(n_rules=2, reg=0.1, max_thresholds=3, engine=engine,
                                     fit_intercept=fit_intercept, time_limit=60)
    est.fit(X, y)
    bf = brute_force_optimum(X, y, 2, reg=0.1, fit_intercept=fit_intercept,
                             max_thresholds=3)
    assert est.certificate_.status == "optimal"
    assert est.certificate_.risk == pytest.approx(bf.risk, rel=1e-5, abs=1e-9)
    assert est.certificate_.lower_bound <= bf.risk + 1e-6 * abs(bf.risk)
    assert verify(est.certificate_, X, y).ok
    assert len(est.rules_.rules) <= 2
    np.testing.assert_allclose(est.predict(X), est.rules_.predict(X))


def test_classifier_with_string_labels_and_pandas_names():
    X, y = _tiny(1, n=10)
    frame = pd.DataFrame(X, columns=["age", "dose"])
    labels = np.where(y > 0, "sick", "healthy")
    est = ExactRuleEnsembleClassifier(n_rules=1, reg=0.5, max_thresholds=3, time_limit=60)
    est.fit(frame, labels)
    bf = brute_force_optimum(X, np.where(labels == est.classes_[1], 1.0, -1.0), 1,
                             loss="logistic", reg=0.5, max_thresholds=3)
    assert est.certificate_.risk == pytest.approx(bf.risk, rel=1e-5)
    assert set(est.classes_) == {"healthy", "sick"}
    proba = est.predict_proba(frame)
    assert proba.shape == (10, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert set(est.predict(frame)) <= {"healthy", "sick"}
    text = est.rules_.to_text()
    assert "age" in text or "dose" in text


def test_poisson_regressor_matches_brute_force():
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(9, 1))
    y = rng.poisson(1.0 + 3.0 * (X[:, 0] > 0.5)).astype(float)
    est = ExactRuleEnsembleRegressor(n_rules=2, loss="poisson", reg=0.1, max_thresholds=4,
                                     time_limit=60).fit(X, y)
    bf = brute_force_optimum(X, y, 2, loss="poisson", reg=0.1, max_thresholds=4)
    assert est.certificate_.risk == pytest.approx(bf.risk, rel=1e-5)
    assert np.all(est.predict(X) > 0)  # mean scale


def test_time_limit_returns_the_incumbent_with_a_warning():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 0] + 0.3 * rng.normal(size=120)
    est = ExactRuleEnsembleRegressor(n_rules=6, reg=1e-3, max_thresholds=6, time_limit=1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    cert = est.certificate_
    if cert.status != "optimal":
        assert any(issubclass(w.category, SolveLimitWarning) for w in caught)
        assert cert.lower_bound <= cert.risk
    assert cert.risk <= est.boosting_risk_ + 1e-9  # never worse than its warm start
    assert verify(cert, X, y).ok


@pytest.mark.parametrize(("params", "message"), [
    ({"n_rules": 0}, "n_rules"),
    ({"reg": -1.0}, "reg"),
    ({"engine": "magic"}, "engine"),
    ({"preset": "XYZ"}, "preset"),
    ({"warm_start": 3}, "warm_start"),
    ({"max_thresholds": 0}, "max_thresholds"),
])
def test_bad_parameters_are_named(params, message):
    X, y = _tiny()
    with pytest.raises(InvalidParameterError, match=message):
        ExactRuleEnsembleRegressor(**params).fit(X, y)


def test_bad_data_is_explained():
    X, y = _tiny()
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(InvalidDataError, match="NaN"):
        ExactRuleEnsembleRegressor().fit(X_nan, y)
    with pytest.raises(InvalidDataError):
        ExactRuleEnsembleRegressor().fit(X, y[:-1])
    with pytest.raises(InvalidDataError):
        ExactRuleEnsembleRegressor(loss="poisson").fit(X, y - 10.0)
    with pytest.raises(InvalidDataError):
        ExactRuleEnsembleClassifier().fit(X, np.arange(len(y)) % 3)


def test_unknown_solver_has_a_hint():
    X, y = _tiny()
    with pytest.raises(Exception, match=r"solver|backend"):
        ExactRuleEnsembleRegressor(n_rules=1, solver="gurobi-free", preset=None).fit(X, y)


def test_branch_and_bound_engine_matches_the_default():
    X, y = _tiny()
    common = dict(n_rules=2, max_thresholds=3, reg=0.5, preset=None, time_limit=60)
    a = ExactRuleEnsembleRegressor(**common).fit(X, y)
    b = ExactRuleEnsembleRegressor(engine="cip-bnb", **common).fit(X, y)
    assert b.certificate_.status == "optimal"
    assert b.certificate_.risk == pytest.approx(a.certificate_.risk, rel=1e-7)
    with pytest.raises(InvalidParameterError, match="cip-bnb"):
        ExactRuleEnsembleRegressor(engine="cip-bnb", reg=0.0, n_rules=1).fit(X, y)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_two_rule_bound_phase_proves_an_unproved_fit(fit_intercept):
    """The phase that spends a two-rule fit's time left on the branch and bound over both
    boxes: from an engine result with a worse model and a weak bound it returns the
    brute-force optimum, its bound, status optimal (through promote), and a certificate
    that verifies."""
    import dataclasses

    from rulemip.budget import Budget
    from rulemip.data import Dataset
    from rulemip.solvers.result import Limit, TerminationReason

    X, y = _tiny(3, n=14)
    est = ExactRuleEnsembleRegressor(n_rules=2, reg=0.1, max_thresholds=3, engine="cip",
                                     fit_intercept=fit_intercept, time_limit=60).fit(X, y)
    bf = brute_force_optimum(X, y, 2, reg=0.1, fit_intercept=fit_intercept,
                             max_thresholds=3)
    # an unproved result with a one-rule model (worse) and a bound of 0
    worse = ExactRuleEnsembleRegressor(n_rules=1, reg=0.1, max_thresholds=3, engine="cip",
                                       fit_intercept=fit_intercept, time_limit=60).fit(X, y)
    unproved = dataclasses.replace(est.result_, ensemble=worse.result_.ensemble,
                                   risk=worse.result_.risk, lower_bound=0.0, gap=1.0,
                                   termination=TerminationReason.FEASIBLE, limit=Limit.TIME)
    assert worse.result_.risk > bf.risk + 1e-9
    ds = Dataset.from_arrays(X, y)
    out = est._two_rule_bound_phase(ds, est.thresholds_, Budget.from_time_limit(30),
                                    unproved)
    assert out.termination is TerminationReason.OPTIMAL and out.limit is None
    assert out.risk == pytest.approx(bf.risk, rel=1e-9)
    assert out.lower_bound == pytest.approx(bf.risk, rel=1e-8)
    assert any("two-rule branch and bound" in n for n in out.notes)
    # a time limit that is already spent changes nothing
    spent = Budget.from_time_limit(0.0)
    assert est._two_rule_bound_phase(ds, est.thresholds_, spent, unproved) is unproved


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_two_rule_phase_stays_in_the_language(seed):
    """Issue 30, item 1: ``n_rules=2, max_rule_length=1`` (13 weighted rows, 3 features,
    reg 10, no intercept). When the engine has not proved its model, the two-rule branch
    and bound used to decode a two-feature model below the restricted optimum and report
    it ``optimal``. Now the phase's model restricts one feature per rule, its risk is the
    brute-force optimum of that language and the certificate verifies."""
    import dataclasses

    from rulemip.budget import Budget
    from rulemip.data import Dataset, candidate_thresholds
    from rulemip.solvers.result import Limit, TerminationReason

    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, (13, 3)).astype(float)
    y = 3.0 * rng.normal(size=13) + X[:, 0] * X[:, 1]
    w = rng.uniform(0.5, 2.0, 13)
    ths = candidate_thresholds(X, 3, w)
    bf = brute_force_optimum(X, y, 2, reg=10.0, fit_intercept=False, thresholds=ths,
                             sample_weight=w, max_rule_length=1)
    est = ExactRuleEnsembleRegressor(n_rules=2, reg=10.0, thresholds=ths, max_rule_length=1,
                                     fit_intercept=False, engine="cip", time_limit=60)
    est.fit(X, y, sample_weight=w)
    assert est.result_.risk == pytest.approx(bf.risk, rel=1e-7)
    worse = ExactRuleEnsembleRegressor(n_rules=1, reg=10.0, thresholds=ths, max_rule_length=1,
                                       fit_intercept=False, engine="cip",
                                       time_limit=60).fit(X, y, sample_weight=w)
    unproved = dataclasses.replace(est.result_, ensemble=worse.result_.ensemble,
                                   risk=worse.result_.risk, lower_bound=0.0, gap=1.0,
                                   termination=TerminationReason.FEASIBLE, limit=Limit.TIME)
    ds = Dataset.from_arrays(X, y, sample_weight=w)
    out = est._two_rule_bound_phase(ds, est.thresholds_, Budget.from_time_limit(30),
                                    unproved)
    assert all(len({c.feature for c in r.conditions}) <= 1 for r in out.ensemble.rules)
    assert out.risk >= bf.risk * (1 - 1e-9)
    assert out.lower_bound <= bf.risk * (1 + 1e-9)
    assert out.termination is TerminationReason.OPTIMAL
    assert out.risk == pytest.approx(bf.risk, rel=1e-9)
