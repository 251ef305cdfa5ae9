"""scikit-learn conventions of the exact estimators: ``check_estimator``, the ``preset`` /
``warm_start`` vocabulary (``warm_start`` a boolean; the former names removed in 0.3),
sample weights as repeated rows."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rulemip.data.thresholds import candidate_thresholds, weighted_quantile
from rulemip.estimators import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor
from rulemip.exceptions import InvalidDataError, InvalidParameterError

# one rule of one condition keeps every check's fit at milliseconds (the checks test the
# estimator's conventions, not the solver; tests/integration covers larger problems)
_FAST = {"n_rules": 1, "max_thresholds": 3, "max_rule_length": 1, "time_limit": 5}


@parametrize_with_checks([ExactRuleEnsembleRegressor(**_FAST),
                          ExactRuleEnsembleClassifier(**_FAST)])
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SolveLimitWarning on scikit-learn's odd data
        check(estimator)


def _data(rng, n=40):
    X = rng.normal(size=(n, 2))
    y = 2.0 * (X[:, 0] > 0.3) - 1.0 * (X[:, 1] > 0) + 0.1 * rng.normal(size=n)
    return X, y


def test_weighted_quantile_is_the_quantile_of_repeated_rows(rng):
    v = rng.normal(size=60)
    w = rng.integers(0, 4, size=60).astype(float)
    p = np.linspace(0.05, 0.95, 11)
    np.testing.assert_allclose(weighted_quantile(v, w, p),
                               np.quantile(np.repeat(v, w.astype(int)), p))
    np.testing.assert_allclose(weighted_quantile(v, np.ones(60), p), np.quantile(v, p))


def test_sample_weight_equals_repeated_rows(rng):
    X, y = _data(rng)
    w = rng.integers(0, 3, size=len(y)).astype(float)
    reps = w.astype(int)
    Xr, yr = np.repeat(X, reps, axis=0), np.repeat(y, reps)
    for a, b in zip(candidate_thresholds(X, 4, w), candidate_thresholds(Xr, 4), strict=True):
        np.testing.assert_allclose(a, b)
    params = dict(n_rules=2, max_thresholds=4, reg=0.1, time_limit=30)
    weighted = ExactRuleEnsembleRegressor(**params).fit(X, y, sample_weight=w)
    repeated = ExactRuleEnsembleRegressor(**params).fit(Xr, yr)
    assert weighted.result_.is_optimal and repeated.result_.is_optimal
    assert weighted.result_.risk == pytest.approx(repeated.result_.risk, rel=1e-9)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), atol=1e-8)


def test_preset_names_the_preset_and_warm_start_is_a_boolean(rng):
    # issue 23 (one vocabulary): the boosting preset is `preset=`; its former names
    # (`warm_start="COB"`, then `init=`) were removed in 0.3
    X, y = _data(rng)
    params = dict(n_rules=2, max_thresholds=4, reg=0.1, time_limit=30)
    new = ExactRuleEnsembleRegressor(preset="CGB", **params).fit(X, y)
    assert new.certificate_.options["init"] == "CGB"   # the certificate's key
    cold = ExactRuleEnsembleRegressor(preset=None, **params).fit(X, y)
    assert np.isnan(cold.boosting_risk_) and cold.init_source_ is None
    assert cold.result_.risk == pytest.approx(new.result_.risk, rel=1e-9)  # both optimal
    with pytest.raises(InvalidParameterError, match="warm_start"):
        ExactRuleEnsembleRegressor(warm_start="CGB", **params).fit(X, y)
    with pytest.raises(InvalidParameterError, match="preset"):
        ExactRuleEnsembleRegressor(preset="XYZ", **params).fit(X, y)
    with pytest.raises(TypeError, match="init"):
        ExactRuleEnsembleRegressor(init="CGB")


def test_warm_start_true_reuses_the_previous_fit(rng):
    X, y = _data(rng, n=60)
    est = ExactRuleEnsembleRegressor(n_rules=2, max_thresholds=5, reg=0.1, preset=None,
                                     time_limit=30).fit(X, y)
    assert est.result_.is_optimal
    first = est.result_.risk
    # the same problem again with the previous rules as the first incumbent: the
    # solve can only confirm them; without warm_start the new fit starts empty
    est.set_params(warm_start=True).fit(X, y)
    assert est.result_.risk == pytest.approx(first, rel=1e-9)
    assert est.init_source_ == "previous fit"
    # other candidate thresholds: the old rules are not points of the new problem
    est.set_params(max_thresholds=3).fit(X, y)
    assert est.init_source_ is None and est.result_.is_optimal


def test_predict_rejects_non_finite_rows(rng):
    X, y = _data(rng)
    est = ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=3, preset=None).fit(X, y)
    bad = X[:3].copy()
    bad[1, 0] = np.nan
    with pytest.raises(InvalidDataError, match="NaN"):
        est.predict(bad)
    with pytest.raises(InvalidDataError):
        est.predict(X[:3] + 1j)


def test_categorical_dataframe_and_feature_names(rng):
    n = 60
    df = pd.DataFrame({"size": rng.normal(size=n),
                       "colour": rng.choice(["red", "blue", "green"], size=n)})
    y = 3.0 * (df["colour"] == "red") + 0.1 * rng.normal(size=n)
    est = ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=3, preset=None).fit(df, y)
    assert list(est.feature_names_in_) == ["size", "colour"]
    assert "colour" in str(est.rules_) and "red" in str(est.rules_)
    np.testing.assert_allclose(est.predict(df), est.rules_.predict(df))
    with pytest.raises(InvalidDataError, match="DataFrame"):
        est.predict(np.zeros((2, 2)))


def test_classifier_rejects_three_classes(rng):
    X, _ = _data(rng)
    y = np.arange(len(X)) % 3
    with pytest.raises(InvalidDataError, match="Only binary classification"):
        ExactRuleEnsembleClassifier(n_rules=1, preset=None).fit(X, y)


def test_zero_thresholds_points_to_none(rng):
    from rulemip.exceptions import InvalidParameterError

    X, y = _data(rng)
    with pytest.raises(InvalidParameterError, match=r"None.*all midpoints"):
        ExactRuleEnsembleRegressor(max_thresholds=0).fit(X, y)


# the regressors' fits do not prove their optimum on 15 rows x 30 features: under a time
# limit they spent their whole default budget (60 s each, two fits) so that both stopped
# late enough to agree; the deterministic work limit stops them at the same point at once.
# The classifiers' COB warm starts ran into their share of the 60 s limit (10-20 s a
# check, more on a loaded machine) before the exact phase proved the optimum; under the
# work limit they prove the same optimum (same rules, risk and bound) in well under 1 s.
_WORK = {"work_limit": 1000, "time_limit": 600}


@pytest.mark.parametrize("est", [
    ExactRuleEnsembleRegressor(**_WORK),
    ExactRuleEnsembleRegressor(n_rules=2, preset=None, **_WORK),
    ExactRuleEnsembleClassifier(**_WORK),
    ExactRuleEnsembleClassifier(n_rules=2, preset=None, **_WORK),
    # one fit returns rule A twice, the other A and a box B covering exactly the other
    # rows (intercept shifted): the same optimum, oriented canonically
    ExactRuleEnsembleClassifier(n_rules=2, **_WORK),
], ids=lambda e: f"{type(e).__name__}({e.n_rules}, preset={e.preset}, "
                 f"work_limit={e.work_limit})")
def test_sample_weight_check_at_default_settings(est):
    """scikit-learn's weighted-vs-repeated check on 15 rows x 30 features: many boxes
    cover the same rows, and the fits must pick the same one (canonical representative)."""
    from sklearn.utils.estimator_checks import check_sample_weight_equivalence_on_dense_data

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_sample_weight_equivalence_on_dense_data(type(est).__name__, est)
