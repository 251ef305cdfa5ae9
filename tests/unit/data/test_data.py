"""Dataset validation, encoding of categorical columns, thresholds and generators."""

import numpy as np
import pandas as pd
import pytest

from rulemip.data import (
    Dataset,
    alternating,
    candidate_thresholds,
    feature_thresholds,
    load_bundled,
    threshold_groups,
)
from rulemip.exceptions import InvalidDataError


def test_numpy_input_gets_default_names_and_is_read_only():
    ds = Dataset.from_arrays(np.array([[1.0, 2.0], [3.0, 4.0]]), [0.5, 1.5])
    assert ds.feature_names == ("x1", "x2")
    assert (ds.n, ds.d) == (2, 2)
    with pytest.raises(ValueError):
        ds.X[0, 0] = 9.0


def test_pandas_names_and_categoricals_become_indicator_columns():
    df = pd.DataFrame({"age": [30, 40, 50], "colour": ["red", "blue", "red"]})
    ds = Dataset.from_arrays(df, [1.0, 2.0, 3.0])
    assert ds.feature_names == ("age", "colour == blue", "colour == red")
    np.testing.assert_array_equal(ds.X[:, 2], [1.0, 0.0, 1.0])
    # the encoder re-applies the same columns to new data
    new = ds.encoder.transform(pd.DataFrame({"age": [1], "colour": ["green"]}))
    np.testing.assert_array_equal(new, [[1.0, 0.0, 0.0]])


@pytest.mark.parametrize(
    ("X", "y", "kwargs", "match"),
    [
        (np.array([[1.0, np.nan]]), [1.0], {}, "NaN"),
        (np.array([[1.0, np.inf]]), [1.0], {}, "NaN or infinity"),
        (np.ones((3, 2)), [1.0, 2.0], {}, "3 rows but y has 2"),
        (np.ones((0, 2)), [], {}, "no rows"),
        (np.ones(3), [1.0, 2.0, 3.0], {}, "2-dimensional"),
        (np.ones((3, 1)), [0, 1, 2], {"loss": "logistic"}, "two classes"),
        (np.ones((3, 1)), [0, 0, 0], {"loss": "logistic"}, "two classes"),
        (np.ones((2, 1)), [-1.0, 2.0], {"loss": "poisson"}, "y >= 0"),
        (np.ones((2, 1)), [1.0, np.nan], {}, "y contains NaN"),
        (np.ones((2, 1)), [1.0, 2.0], {"sample_weight": [1.0]}, "sample_weight"),
    ],
)
def test_clear_errors(X, y, kwargs, match):
    with pytest.raises(InvalidDataError, match=match):
        Dataset.from_arrays(X, y, **kwargs)


def test_logistic_labels_mapped_to_pm1_and_classes_kept():
    ds = Dataset.from_arrays(np.arange(4.0).reshape(-1, 1), ["no", "yes", "yes", "no"],
                             loss="logistic")
    assert ds.classes == ("no", "yes")
    np.testing.assert_array_equal(ds.y, [-1, 1, 1, -1])


def test_digest_changes_with_data():
    a = Dataset.from_arrays(np.ones((2, 1)), [1.0, 2.0])
    b = Dataset.from_arrays(np.ones((2, 1)), [1.0, 2.5])
    assert a.digest() == Dataset.from_arrays(np.ones((2, 1)), [1.0, 2.0]).digest()
    assert a.digest() != b.digest()


def test_thresholds_all_midpoints_and_quantile_bins():
    x = np.array([1.0, 2.0, 2.0, 3.0, 5.0])
    np.testing.assert_allclose(feature_thresholds(x), [1.5, 2.5, 4.0])
    xs = np.arange(100.0)
    cuts = feature_thresholds(xs, max_thresholds=3)
    assert len(cuts) == 3
    # quantile bins split the data into nearly equal parts
    groups = threshold_groups(xs.reshape(-1, 1), [cuts])[:, 0]
    counts = np.bincount(groups)
    assert counts.max() - counts.min() <= 1
    assert len(candidate_thresholds(np.ones((4, 2)))[0]) == 0


def test_threshold_groups_semantics():
    X = np.array([[0.0], [1.0], [1.5], [2.0]])
    G = threshold_groups(X, [np.array([1.0, 1.75])])
    # group = #{t < x}: x <= 1.0 is group 0 (interval convention lower < x <= upper)
    np.testing.assert_array_equal(G[:, 0], [0, 0, 1, 2])


def test_alternating_dataset():
    X, y = alternating(3, 0.1)
    np.testing.assert_array_equal(X[:, 0], [1, 2, 3, 4, 5])
    np.testing.assert_allclose(y, [1.0, -0.9, 0.8, -0.7, 0.6])


def test_bundled_data_loads():
    X, y = load_bundled()
    assert list(X.columns) == ["bmi", "bp", "s5"]
    assert len(X) == len(y) == 100
