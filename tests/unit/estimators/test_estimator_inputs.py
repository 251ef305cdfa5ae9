"""One input contract for every estimator (rulemip/estimators/_inputs.py): categorical
DataFrames encoded the same way, clear errors for string targets, non-finite predict input,
targets whose squares overflow and values beyond the trees' float32 range;
TreeRuleExtractor's ``gamma_`` is ``1/reg``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.ensemble import GradientBoostingRegressor

from rulemip import (
    ExactRuleEnsembleRegressor,
    RGBClassifier,
    RGBRegressor,
    RuleBoostingClassifier,
    RuleBoostingRegressor,
    TreeRuleExtractor,
)
from rulemip.exceptions import InvalidDataError, InvalidParameterError

pd = pytest.importorskip("pandas")


def _frame(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], size=n)
    size = rng.normal(size=n)
    y = np.where(colour == "red", 3.0, 0.0) + 0.5 * size + 0.1 * rng.normal(size=n)
    return pd.DataFrame({"colour": colour, "size": size}), y


def _small_gb():
    return GradientBoostingRegressor(n_estimators=5, max_depth=2, random_state=0)


def _regressors():
    return [RuleBoostingRegressor(n_rules=2, max_thresholds=4),
            ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=4, time_limit=20),
            TreeRuleExtractor(_small_gb(), n_rules=2, reg=5.0, time_limit=20),
            RGBRegressor(n_estimators=10, random_state=0)]


def _rules(est):
    return est.to_rule_ensemble() if hasattr(est, "to_rule_ensemble") else est.rules_


@pytest.mark.parametrize("est", _regressors(), ids=lambda e: type(e).__name__)
def test_categorical_frame_is_one_hot_encoded_and_printed_by_level(est):
    X, y = _frame()
    est.fit(X, y)
    text = _rules(est).to_text()
    assert "colour" in text and "x1" not in text
    assert "red" in text  # the informative level is what the first rule splits on
    pred = est.predict(X)
    # a model that uses the level must predict differently on red rows
    assert pred[X["colour"].to_numpy() == "red"].mean() > \
        pred[X["colour"].to_numpy() != "red"].mean() + 1.0


@pytest.mark.parametrize("clf", [RuleBoostingClassifier(n_rules=1, max_thresholds=4),
                                 RGBClassifier(n_estimators=10, random_state=0)],
                         ids=lambda e: type(e).__name__)
def test_classifier_categorical_and_string_labels(clf):
    X, y = _frame()
    labels = np.where(y > 1.5, "high", "low")
    clf.fit(X, labels)
    assert list(clf.classes_) == ["high", "low"]
    assert np.mean(clf.predict(X) == labels) > 0.9
    with pytest.raises(InvalidDataError, match="Multi-class"):
        clf.fit(X, np.arange(len(y)) % 3)


@pytest.mark.parametrize("est", _regressors(), ids=lambda e: type(e).__name__)
def test_string_target_of_regressor_is_a_clear_error(est):
    X, y = _frame()
    with pytest.raises(InvalidDataError, match="numeric"):
        est.fit(X[["size"]], np.where(y > 1, "a", "b"))


@pytest.mark.parametrize("est", _regressors(), ids=lambda e: type(e).__name__)
def test_huge_target_is_refused_not_served_as_inf(est):
    X, y = _frame()
    with pytest.raises(InvalidDataError, match="Rescale y"):
        est.fit(X[["size"]], y * 1e300)


@pytest.mark.parametrize("est", _regressors(), ids=lambda e: type(e).__name__)
def test_nan_in_predict_is_a_clear_error(est):
    X, y = _frame()
    est.fit(X[["size"]].to_numpy(), y)
    Xp = X[["size"]].to_numpy().copy()
    Xp[3, 0] = np.nan
    with pytest.raises(InvalidDataError, match="NaN"):
        est.predict(Xp)


@pytest.mark.parametrize("est", [TreeRuleExtractor(_small_gb(), n_rules=2),
                                 RGBRegressor(n_estimators=3)], ids=lambda e: type(e).__name__)
def test_tree_models_refuse_values_beyond_float32(est):
    X, y = _frame()
    Xn = X[["size"]].to_numpy() * 1e300
    with pytest.raises(InvalidDataError, match="float32"):
        est.fit(Xn, y)
    # the rule learners compare in float64 and accept the same table
    RuleBoostingRegressor(n_rules=1, max_thresholds=4).fit(Xn, y)


def test_tree_extractor_gamma_is_the_inverse_of_reg():
    X, y = _frame()
    Xn = X[["size"]].to_numpy()
    gb = _small_gb().fit(Xn, y)
    new = TreeRuleExtractor(gb, prefit=True, n_rules=3, reg=4.0).fit(Xn, y)
    assert new.reg_ == pytest.approx(4.0) and new.gamma_ == pytest.approx(0.25)
    with pytest.raises(TypeError, match="gamma"):   # removed in 0.3: pass reg = 1/gamma
        TreeRuleExtractor(gb, prefit=True, gamma=1.0)


def test_tree_extractor_default_reg_is_n_over_ten():
    X, y = _frame(n=50)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = TreeRuleExtractor(_small_gb(), n_rules=1, time_limit=5).fit(X[["size"]], y)
    assert m.reg_ == pytest.approx(5.0) and m.gamma_ == pytest.approx(0.2)


def test_estimators_are_keyword_only_after_the_first_argument():
    with pytest.raises(TypeError):
        TreeRuleExtractor(None, 3)  # type: ignore[misc]
    with pytest.raises(TypeError):
        RuleBoostingRegressor(3, "squared")  # type: ignore[misc]
    with pytest.raises(TypeError):
        ExactRuleEnsembleRegressor(3, "squared")  # type: ignore[misc]
    with pytest.raises(TypeError):
        RGBRegressor(10, "poisson")  # type: ignore[misc]
    with pytest.raises(TypeError):
        RGBClassifier(10, 5)  # type: ignore[misc]


@pytest.mark.parametrize("est", [TreeRuleExtractor(_small_gb(), n_rules=2),
                                 RGBRegressor(n_estimators=3)], ids=lambda e: type(e).__name__)
def test_tree_models_refuse_values_below_float32(est):
    """X * 1e-300 becomes 0 in the trees' float32: refused, not a silent constant model."""
    X, y = _frame()
    Xt = X[["size"]].to_numpy() * 1e-300
    with pytest.raises(InvalidDataError, match=r"column 0\), below the float32 range.*Rescale"):
        est.fit(Xt, y)
    # exact zeros are fine (only non-zero entries are lost)
    Xz = X[["size"]].to_numpy().copy()
    Xz[:5] = 0.0
    est.fit(Xz, y)


def test_rgb_classifier_refuses_values_below_float32():
    X, y = _frame()
    with pytest.raises(InvalidDataError, match="float32"):
        RGBClassifier(n_estimators=3).fit(X[["size"]].to_numpy() * 1e-300, y > 1.0)


def _gap_data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20, 3))
    return X, X[:, 0] + 0.1 * rng.normal(size=20)


def _bad_thresholds_cases():
    return [([[0.1]], "one array of cut points per feature \\(3\\); got 1"),
            ([[0.1, np.nan], [0.0], [0.0]], r"thresholds\[0\]` contains nan.*finite"),
            ([[0.1], [np.inf], [0.0]], r"thresholds\[1\]` contains inf"),
            ([[0.1], [1j], [0.0]], r"thresholds\[1\]` must be a 1-d list of real numbers; "
                                   "got complex"),
            ([[0.1], [["a"]], [0.0]], r"thresholds\[1\]`"),
            ("abc", "must be a list of 3 arrays")]


@pytest.mark.parametrize("ths,words", _bad_thresholds_cases())
def test_exact_estimator_refuses_bad_explicit_thresholds(ths, words):
    X, y = _gap_data()
    with pytest.raises(InvalidParameterError, match=words):
        ExactRuleEnsembleRegressor(n_rules=1, thresholds=ths, preset=None,
                                   time_limit=10).fit(X, y)


@pytest.mark.parametrize("ths,words", _bad_thresholds_cases())
def test_gap_study_refuses_bad_explicit_thresholds(ths, words):
    from rulemip.certify import gap_study

    X, y = _gap_data()
    with pytest.raises(InvalidParameterError, match=words):
        gap_study(X, y, 1, ["SGS"], thresholds=ths, time_limit=10)


def test_explicit_thresholds_are_sorted_and_deduplicated():
    from rulemip.data import check_thresholds

    out = check_thresholds([[0.5, 0.1, 0.5], (2,), np.array([])], 3)
    assert [t.tolist() for t in out] == [[0.1, 0.5], [2.0], []]


def _sparse(X):
    sp = pytest.importorskip("scipy.sparse")
    return sp.csr_matrix(X)


@pytest.mark.parametrize("kind,words", [
    ("complex", "Complex data not supported: X is complex-valued"),
    ("sparse", r"X is a sparse matrix \(csr_matrix\).*X.toarray\(\)"),
])
@pytest.mark.parametrize("entry", ["gap_study", "verify", "Dataset"])
def test_complex_and_sparse_X_are_refused_everywhere(kind, words, entry):
    """No ComplexWarning with the imaginary part dropped, no "got shape ()" for sparse."""
    from rulemip.certify import gap_study, verify
    from rulemip.data import Dataset

    X, y = _gap_data()
    bad = X.astype(complex) if kind == "complex" else _sparse(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning would fail here
        with pytest.raises(InvalidDataError, match=words):
            if entry == "gap_study":
                gap_study(bad, y, 1, ["SGS"], time_limit=10)
            elif entry == "verify":
                est = ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=3, preset=None,
                                                 time_limit=10).fit(X, y)
                verify(est.certificate_, bad, y)
            else:
                Dataset.from_arrays(bad, y)


def test_complex_dataframe_column_is_refused():
    from rulemip.data import Dataset

    X, y = _gap_data()
    frame = pd.DataFrame({"a": X[:, 0].astype(complex), "b": X[:, 1]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidDataError, match="Complex data not supported"):
            Dataset.from_arrays(frame, y)


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_fit_intercept_must_be_a_bool(value):
    from rulemip.certify import gap_study

    X, y = _gap_data()
    with pytest.raises(InvalidParameterError, match="`fit_intercept` must be True or False"):
        gap_study(X, y, 1, ["SGS"], fit_intercept=value, time_limit=10)
    with pytest.raises(InvalidParameterError, match="`fit_intercept` must be True or False"):
        ExactRuleEnsembleRegressor(n_rules=1, fit_intercept=value, preset=None,
                                   time_limit=10).fit(X, y)


def _typo_frame():
    rng = np.random.default_rng(2)
    age = rng.normal(size=60).round(3).astype(object)
    age[[17, 40]] = ["abc", "n/a?"]
    return pd.DataFrame({"age": age, "b": rng.normal(size=60)}), rng.normal(size=60)


@pytest.mark.parametrize("est", _regressors(), ids=lambda e: type(e).__name__)
def test_numeric_column_with_typos_is_refused(est):
    X, y = _typo_frame()
    with pytest.raises(InvalidDataError,
                       match=r"column 'age' looks numeric but 2 of its 60 values are not "
                             r"numbers \(first: 'abc' at row index 17\).*\d+ levels.*Clean "
                             r"the data.*astype\('category'\)"):
        est.fit(X, y)


def test_numbers_stored_as_text_are_refused_and_category_dtype_is_accepted():
    from rulemip.data import Dataset

    X, y = _typo_frame()
    X["age"] = [str(v) for v in range(60)]
    with pytest.raises(InvalidDataError, match="column 'age' holds numbers stored as text"):
        Dataset.from_arrays(X, y)
    ds = Dataset.from_arrays(X.assign(age=X["age"].astype("category")), y)
    assert len(ds.encoder.categories["age"]) == 60
    # a real categorical column with a few number-like levels is mostly text: encoded
    X["age"] = ["red", "green", "7"] * 20
    assert Dataset.from_arrays(X, y).encoder.categories["age"] == ("7", "green", "red")
    # exactly half numbers is not a majority: categorical
    X["age"] = ["red", "1"] * 30
    assert Dataset.from_arrays(X, y).encoder.categories["age"] == ("1", "red")


@pytest.mark.parametrize("kind", ["complex", "sparse"])
def test_complex_or_sparse_y_is_refused_by_gap_study(kind):
    from rulemip.certify import gap_study

    X, y = _gap_data()
    bad = y.astype(complex) if kind == "complex" else _sparse(y[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InvalidDataError, match=r"y is (complex-valued|a sparse matrix)"):
            gap_study(X, bad, 1, ["SGS"], time_limit=10)


def test_numpy_booleans_are_booleans():
    from rulemip._validation import check_bool

    assert check_bool(np.True_, "fit_intercept") is True
    assert check_bool(np.bool_(False), "fit_intercept") is False
