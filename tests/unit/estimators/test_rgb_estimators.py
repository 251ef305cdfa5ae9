"""RGBClassifier / RGBRegressor: scikit-learn conventions, rule hand-off, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import parametrize_with_checks

from rulemip.boosting.rgb.families import FamilyGrid
from rulemip.boosting.rgb.rules import float64_threshold, tree_rules
from rulemip.estimators.rgb import RGBClassifier, RGBRegressor
from rulemip.exceptions import InvalidDataError, InvalidParameterError, SolveLimitWarning
from rulemip.rules import RuleEnsemble


@parametrize_with_checks([RGBClassifier(n_estimators=10, random_state=0),
                          RGBRegressor(n_estimators=10, random_state=0),
                          RGBRegressor(loss="poisson", n_estimators=10,
                                       step="line_search", random_state=0)])
def test_sklearn_compatible(estimator, check) -> None:  # type: ignore[no-untyped-def]
    check(estimator)


@pytest.fixture(scope="module")
def xy() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4))
    return X, X[:, 0] - 2 * (X[:, 1] > 0.3) + 0.2 * rng.normal(size=120)


def test_fitted_attributes_describe_a_tree_ensemble(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    model = RGBRegressor(n_estimators=12, n_samples_per_round=3, random_state=0).fit(X, y)
    assert len(model.estimators_) == 12
    assert all(isinstance(t, DecisionTreeRegressor) for t in model.estimators_)
    assert model.coefs_.shape == (12,)
    assert model.estimator_weights_ is model.coefs_
    assert len(model.families_) == 12
    assert set(model.families_) <= set(model.family_grid_.pairs)
    assert len(model.family_grid_) == 56  # default: the paper's 7x7 plus 7 stump families
    assert model.raw_complexities_.shape == (56,)
    np.testing.assert_allclose(model.raw_complexities_ / model.raw_complexities_.max(),
                               model.complexities_)
    F = model.intercept_ + sum(a * t.predict(X) for a, t in zip(model.coefs_,
                                                                model.estimators_))
    np.testing.assert_allclose(model.predict(X), F, rtol=0, atol=1e-12)
    assert model.n_features_in_ == 4


@pytest.mark.parametrize("kind", ["classifier", "squared", "poisson"])
def test_rule_ensemble_reproduces_the_model(xy, kind: str) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    kw = dict(n_estimators=15, n_samples_per_round=3, random_state=1)
    if kind == "classifier":
        labels = np.where(y > np.median(y), "yes", "no")
        model = RGBClassifier(**kw).fit(X, labels)  # type: ignore[arg-type]
        raw = model.decision_function
    else:
        target = np.floor(np.exp(y / 2)) if kind == "poisson" else y
        model = RGBRegressor(loss=kind, **kw).fit(X, target)  # type: ignore[arg-type]
        raw = model.predict_raw
    ens = model.to_rule_ensemble()
    assert isinstance(ens, RuleEnsemble)
    assert ens.intercept == model.intercept_
    n_leaves = sum(int(np.sum(t.tree_.children_left == -1))
                   for a, t in zip(model.coefs_, model.estimators_) if a != 0.0)
    assert len(ens) == n_leaves
    X_new = np.random.default_rng(9).normal(size=(300, 4))
    for Z in (X, X_new):
        np.testing.assert_allclose(ens.decision_function(Z), raw(Z), rtol=0, atol=1e-9)
    if kind == "classifier":
        assert ens.loss == "logistic"
        assert ens.classes == ("no", "yes")
        np.testing.assert_allclose(ens.predict(X_new), model.predict_proba(X_new)[:, 1],
                                   atol=1e-9)
    elif kind == "poisson":
        np.testing.assert_allclose(ens.predict(X_new), model.predict(X_new), rtol=1e-9)
    # JSON round trip keeps the function
    back = RuleEnsemble.from_json(ens.to_json())
    np.testing.assert_allclose(back.decision_function(X_new), raw(X_new), atol=1e-9)


def test_rules_follow_the_paths_of_a_small_tree() -> None:
    # feature b only separates the first point, so no split ties
    X = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [3.0, 0.0]])
    y = np.array([0.0, 1.0, 5.0, 7.0])
    tree = DecisionTreeRegressor(max_leaf_nodes=3, random_state=0).fit(X, y)
    rules = tree_rules(tree, 2.0, ["a", "b"])
    assert len(rules) == 3
    texts = sorted(r.to_text() for r in rules)
    # leaves: x_a <= 1.5 (mean 0.5), 1.5 < x_a <= 2.5 (5), x_a > 2.5 (7); weights doubled
    assert [r.weight for r in sorted(rules, key=lambda r: r.weight)] == [1.0, 10.0, 14.0]
    assert texts == ["IF 1.5 < a <= 2.5 THEN +10", "IF a <= 1.5 THEN +1",
                     "IF a > 2.5 THEN +14"]
    Q = np.column_stack([r.query(X) for r in rules])
    np.testing.assert_array_equal(Q.sum(axis=1), 1)  # the leaves partition the space


def test_float64_threshold_reproduces_float32_routing() -> None:
    rng = np.random.default_rng(0)
    for thr32 in rng.normal(size=200).astype(np.float32):
        nxt = np.nextafter(thr32, np.float32(np.inf))
        thr = float(thr32) / 2 + float(nxt) / 2  # how sklearn places a threshold
        u = float64_threshold(thr)
        mid = (float(thr32) + float(nxt)) / 2
        probes = [u, np.nextafter(u, np.inf), np.nextafter(u, -np.inf), mid,
                  np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf), thr,
                  float(thr32), float(nxt)]
        for x in probes:
            # sklearn compares the float32 feature value with the float64 threshold
            assert (float(np.float32(x)) <= thr) == (x <= u), (thr, x, u)
    assert float64_threshold(0.5) == pytest.approx(0.5, abs=1e-7)
    assert math.isfinite(float64_threshold(1e30))


def test_feature_names_flow_into_the_rules(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    df = pd.DataFrame(X, columns=["age", "bmi", "bp", "s5"])
    model = RGBRegressor(n_estimators=3, families=[(2, 1.0)], random_state=0).fit(df, y)
    text = model.to_rule_ensemble().to_text()
    assert "age" in text or "bmi" in text
    assert "x1" not in text


def test_classifier_outputs(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    labels = np.where(y > 0, 5, -3)
    clf = RGBClassifier(n_estimators=20, random_state=0).fit(X, labels)
    np.testing.assert_array_equal(clf.classes_, [-3, 5])
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(clf.predict(X), np.where(proba[:, 1] > 0.5, 5, -3))
    assert clf.score(X, labels) > 0.9


@pytest.mark.parametrize("est, fragment", [
    (RGBRegressor(n_estimators=0), "`n_estimators` must be a positive integer"),
    (RGBRegressor(n_samples_per_round=-1), "`n_samples_per_round`"),
    (RGBRegressor(beta=-0.1), "`beta`"),
    (RGBRegressor(families=[(0, 1.0)]), "n_internal must be a positive integer"),
    (RGBRegressor(families=[(2, 0.0)]), "lambda"),
    (RGBRegressor(families="stumps"), "`families` must be None"),
    (RGBRegressor(time_limit=-1.0), "`time_limit`"),
    (RGBRegressor(time_limit="10"), "`time_limit`"),
    (RGBRegressor(verbose="yes"), "`verbose`"),
    (RGBRegressor(leaf_values="exact"), "`leaf_values`"),
    (RGBRegressor(q=3), "`q`"),
    (RGBRegressor(sampling="nesterov"), "`sampling`"),
    (RGBRegressor(step="newton"), "`step`"),
    (RGBRegressor(learning_rate=2.0), "`learning_rate`"),
    (RGBRegressor(selection="x"), "`selection`"),
    (RGBRegressor(lipschitz="global"), "`lipschitz`"),
    (RGBRegressor(fit_intercept="yes"), "`fit_intercept`"),
    (RGBRegressor(loss="logistic"), "Use RGBClassifier"),
    (RGBClassifier(n_estimators=1.5), "`n_estimators`"),
])
def test_bad_parameters_name_the_parameter(xy, est, fragment: str) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    target = y > 0 if isinstance(est, RGBClassifier) else y
    with pytest.raises(InvalidParameterError, match=fragment):
        est.fit(X, target)


def test_bad_data_is_reported(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    with pytest.raises(InvalidDataError, match="Only binary classification"):
        RGBClassifier(n_estimators=2).fit(X, np.arange(len(y)) % 3)
    with pytest.raises(InvalidDataError, match="y >= 0"):
        RGBRegressor(loss="poisson", n_estimators=2).fit(X, y)
    X_nan = X.copy()
    X_nan[0, 0] = np.nan
    with pytest.raises(InvalidDataError, match="NaN"):
        RGBRegressor(n_estimators=2).fit(X_nan, y)
    model = RGBRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(InvalidDataError, match="features"):
        model.predict(X[:, :3])


def test_default_grid_is_the_paper_grid_plus_stumps(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    model = RGBRegressor(n_estimators=3, random_state=0).fit(X, y)
    stumps = [(n, lam) for n, lam in model.family_grid_.pairs if n == 1]
    assert [lam for _, lam in stumps] == [0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 4.0]
    assert set(model.family_grid_.pairs) - set(stumps) == set(FamilyGrid.paper().pairs)
    paper = RGBRegressor(n_estimators=3, families="paper", random_state=0).fit(X, y)
    assert paper.family_grid_ == FamilyGrid.paper()


def test_time_limit_zero_returns_the_intercept_with_a_warning(xy) -> None:  # type: ignore[no-untyped-def]
    """No round is run past a spent limit (on 100 000 rows a round takes seconds): the
    intercept alone, with a warning."""
    X, y = xy
    with pytest.warns(SolveLimitWarning, match="after 0 of 20 rounds"):
        model = RGBRegressor(n_estimators=20, time_limit=0.0, random_state=0).fit(X, y)
    assert model.n_estimators_ == 0 and model.estimators_ == []
    assert not model.fitted_on_selection_split_
    np.testing.assert_allclose(model.predict(X), np.full(len(y), y.mean()), atol=1e-12)
    assert len(model.to_rule_ensemble().rules) == 0


def test_no_time_limit_runs_every_round_without_warning(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    with warnings.catch_warnings():
        warnings.simplefilter("error", SolveLimitWarning)
        model = RGBRegressor(n_estimators=7, time_limit=None, random_state=0).fit(X, y)
        generous = RGBRegressor(n_estimators=7, time_limit=600.0, random_state=0).fit(X, y)
    assert model.n_estimators_ == generous.n_estimators_ == 7
    np.testing.assert_array_equal(model.predict(X), generous.predict(X))


def test_verbose_reports_rounds_on_stderr(xy, capsys) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    RGBRegressor(n_estimators=20, random_state=0).fit(X, y)
    assert capsys.readouterr().err == ""
    model = RGBRegressor(n_estimators=20, beta=0.01, verbose=True, random_state=0).fit(X, y)
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err] == ["RGB round 10/20", "RGB round 20/20"]
    assert f"{model.objective_path_[-1]:.6g}" in err[-1]
    # beta=None: the selection is reported once, then the final fit's rounds only
    auto = RGBRegressor(n_estimators=20, verbose=True, random_state=0).fit(X, y)
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"RGB: beta={auto.beta_:g} chosen by validation loss")
    assert [line.split(":")[0] for line in err[1:]] == ["RGB round 10/20", "RGB round 20/20"]


def test_few_rounds_pass_sklearns_regressor_training_check() -> None:
    """Issue 30, item 12: with ν = 0.5 on Newton leaves, five rounds reached a training R²
    of 0.435 < 0.5; the squared-loss regressor's default ν is 1 (docs/explanation/rgb.md §9)."""
    from sklearn.utils.estimator_checks import check_regressors_train

    check_regressors_train("RGBRegressor", RGBRegressor(n_estimators=5))
    assert RGBRegressor().learning_rate is None
    assert RGBClassifier().learning_rate == 0.5


def test_learning_rate_none_resolves_by_loss(xy) -> None:  # type: ignore[no-untyped-def]
    X, y = xy
    assert RGBRegressor(n_estimators=2, random_state=0).fit(X, y).learning_rate_ == 1.0
    poisson = RGBRegressor(n_estimators=2, loss="poisson", random_state=0)
    assert poisson.fit(X, np.exp(y / 4)).learning_rate_ == 0.5
    clf = RGBClassifier(n_estimators=2, learning_rate=None, random_state=0)
    assert clf.fit(X, y > 0).learning_rate_ == 0.5
