"""scikit-learn conventions of the rule-boosting estimators and the ``boost`` command."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rulemip.cli import main
from rulemip.estimators.boosting import RuleBoostingClassifier, RuleBoostingRegressor
from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.rules import RuleEnsemble

_SMALL = {"n_rules": 3, "max_rule_length": 2, "max_thresholds": 8}


@parametrize_with_checks([RuleBoostingRegressor(**_SMALL), RuleBoostingClassifier(**_SMALL)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_regressor_fit(rng):
    X = rng.normal(size=(60, 3))
    y = 3 * (X[:, 0] > 0) + 0.1 * rng.normal(size=60)
    est = RuleBoostingRegressor(preset="COB", **_SMALL).fit(X, y)
    assert len(est.ensembles_) == 4 and est.risk_path_[-1] < 0.1 * est.risk_path_[0]
    np.testing.assert_allclose(est.predict(X), est.rules_.decision_function(X))


def test_classifier_fit(rng):
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] > 0.2, "yes", "no")
    est = RuleBoostingClassifier(**_SMALL).fit(X, y)
    assert list(est.classes_) == ["no", "yes"]
    assert np.mean(est.predict(X) == y) > 0.9
    p = est.predict_proba(X)
    np.testing.assert_allclose(p.sum(1), 1.0)
    np.testing.assert_allclose(p[:, 1], 1 / (1 + np.exp(-est.decision_function(X))))


def test_pandas_feature_names(rng):
    pd = pytest.importorskip("pandas")
    X = pd.DataFrame(rng.normal(size=(40, 2)), columns=["age", "bmi"])
    y = (X["bmi"] > 0).astype(float) * 2
    est = RuleBoostingRegressor(**_SMALL).fit(X, y)
    assert list(est.feature_names_in_) == ["age", "bmi"]
    assert "bmi" in est.rules_.to_text()


def test_bad_input(rng):
    X = rng.normal(size=(20, 2))
    y = rng.normal(size=20)
    with pytest.raises(InvalidParameterError, match="n_rules"):
        RuleBoostingRegressor(n_rules=0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="preset"):
        RuleBoostingRegressor(preset="COB", objective="gb").fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        RuleBoostingRegressor().fit(np.where(X > 1, np.nan, X), y)
    with pytest.raises(ValueError, match=r"inconsistent|samples"):
        RuleBoostingRegressor().fit(X, y[:10])
    with pytest.raises(InvalidDataError, match="Multi-class"):
        RuleBoostingClassifier().fit(X, np.arange(20) % 3)
    with pytest.raises(InvalidDataError, match="Poisson"):
        RuleBoostingRegressor(loss="poisson").fit(X, y - 10)
    with pytest.raises(InvalidParameterError, match="loss"):
        RuleBoostingRegressor(loss="hinge").fit(X, y)


def test_cli_boost(tmp_path, rng, capsys):
    X = rng.normal(size=(50, 2))
    y = 2.0 * (X[:, 1] > 0.3) + 0.1 * rng.normal(size=50)
    csv = tmp_path / "d.csv"
    rows = ["height,weight,target"] + [f"{a},{b},{c}" for (a, b), c in zip(X, y)]
    csv.write_text("\n".join(rows) + "\n")
    out = tmp_path / "m.json"
    code = main(["boost", "--data", str(csv), "--target", "target", "--n-rules", "2",
                 "--preset", "COB", "--max-rule-length", "2", "--max-thresholds", "8",
                 "--json", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    assert "weight" in text and "risk" in text
    doc = json.loads(out.read_text())
    ens = RuleEnsemble.from_dict(doc["ensemble"])
    assert len(ens) == 2 and len(doc["risk_path"]) == 3
    assert doc["risk_path"][-1] == pytest.approx(ens.risk(X, y), rel=1e-9)
    assert main(["boost", "--data", str(csv), "--target", "nope"]) == 2


def _tied_integer_data(seed: int):
    """Integer-valued features: quantiles fall exactly halfway between midpoints."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 12, size=(80, 3)).astype(float)
    y = (X[:, 0] + X[:, 1] - X[:, 2] + rng.normal(scale=3.0, size=80) > 5).astype(int)
    return X, y


@pytest.mark.parametrize("scale", [1e10, 1e36, 1e-30, np.array([3.0, 1e36, 1e-7])],
                         ids=["1e10", "1e36", "1e-30", "per-feature"])
@pytest.mark.parametrize("preset", [None, "SGB", "COB"])
def test_classifier_is_invariant_under_positive_rescaling(scale, preset):
    """Rules partition the data by comparisons only, so rescaling a feature by c > 0
    rescales its cut points and changes nothing else: same risk path, same rule queries
    (the cut points were snapped to midpoints by float rounding before: risk 0.399 against
    0.363 for X * 1e36)."""
    for seed in range(3):
        X, y = _tied_integer_data(seed)
        kw = dict(n_rules=3, max_thresholds=4, preset=preset)
        base = RuleBoostingClassifier(**kw).fit(X, y)
        scaled = RuleBoostingClassifier(**kw).fit(X * scale, y)
        np.testing.assert_allclose(scaled.risk_path_, base.risk_path_, rtol=1e-12, atol=0)
        np.testing.assert_array_equal(scaled.rules_.query_matrix(X * scale),
                                      base.rules_.query_matrix(X))


def test_boosting_estimators_take_explicit_thresholds():
    """``thresholds=`` as in the exact estimators: every rule bound is one of the cuts."""
    from rulemip import RuleBoostingClassifier, RuleBoostingRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] + (X[:, 1] > 0.2)
    cuts = [[-0.5, 0.0, 0.7], [0.2], [1.5]]
    for est, target in ((RuleBoostingRegressor(3, preset="CGB", thresholds=cuts), y),
                        (RuleBoostingClassifier(2, preset="COB", thresholds=cuts), y > 0.5)):
        est.fit(X, target)
        for rule in est.rules_.rules:
            for c in rule.conditions:
                for v in (c.lower, c.upper):
                    assert not np.isfinite(v) or v in cuts[c.feature]
    with pytest.raises(ValueError, match="thresholds"):
        RuleBoostingRegressor(2, thresholds=[[0.0]]).fit(X, y)
