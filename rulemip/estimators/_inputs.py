"""One way for every estimator to read its inputs (docs/reference/parameters.md).

``fit_dataset`` turns the ``(X, y, sample_weight)`` of ``fit`` into a
:class:`~rulemip.data.Dataset` and records ``n_features_in_`` / ``feature_names_in_`` the
scikit-learn way; ``predict_matrix`` turns the ``X`` of ``predict`` into the encoded float
matrix the fitted rules read. Both give the same errors everywhere:

* numeric arrays go through scikit-learn's ``validate_data`` (its messages for sparse,
  complex, empty, 1-d, non-finite and object input, which users and ``check_estimator``
  know), re-raised as :class:`~rulemip.exceptions.InvalidDataError`;
* a DataFrame with string, categorical or boolean columns is one-hot encoded by the
  :class:`~rulemip.data.encoding.FeatureEncoder` (one indicator column per level; rules
  print as ``colour == red``) — the same encoding for the exact, boosting and CLI paths.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from rulemip.data.dataset import Dataset
from rulemip.data.encoding import _is_categorical, _is_dataframe
from rulemip.exceptions import InvalidDataError

FloatArray = NDArray[np.float64]


def _has_categoricals(X: Any) -> bool:
    return _is_dataframe(X) and any(_is_categorical(X[c]) for c in X.columns)


def _sklearn_checked(call: Any) -> Any:
    """Run a scikit-learn validation, re-raising its ValueError as InvalidDataError."""
    try:
        return call()
    except InvalidDataError:
        raise
    except ValueError as exc:
        raise InvalidDataError(str(exc)) from exc


def binary_labels(est: Any, y: Any) -> NDArray[Any]:
    """The two class labels of ``y`` (sorted; the larger is the positive class)."""
    y_arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    _sklearn_checked(lambda: check_classification_targets(y_arr))
    classes = np.unique(y_arr)
    if len(classes) != 2:
        kind = type_of_target(y_arr)
        raise InvalidDataError(
            f"Only binary classification is supported. {type(est).__name__} needs exactly "
            f"two classes in y; got {len(classes)} ({classes[:5].tolist()}, {kind}). "
            "Multi-class is not supported; fit one classifier per class (e.g. "
            "sklearn.multiclass.OneVsRestClassifier).")
    return classes


def fit_dataset(est: Any, X: Any, y: Any, *, loss: str,
                sample_weight: Any = None) -> Dataset:
    """Validated :class:`Dataset` for ``est.fit``; sets ``n_features_in_`` (and
    ``feature_names_in_`` when X has string column names)."""
    if y is None:
        raise InvalidDataError(
            f"{type(est).__name__} requires y to be passed, but the target y is None.")
    if _has_categoricals(X):
        _sklearn_checked(lambda: validate_data(est, X, skip_check_array=True))
        return Dataset.from_arrays(X, y, loss=loss, sample_weight=sample_weight)
    numeric_y = loss != "logistic"
    if numeric_y:
        y_arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
        if y_arr.dtype.kind == "c":
            raise InvalidDataError("Complex data not supported: y is complex-valued.")
        if y_arr.dtype.kind not in "biuf":
            try:
                y_arr.astype(float)
            except (TypeError, ValueError) as exc:
                raise InvalidDataError(
                    f"y must be numeric for the {loss} loss; conversion failed: {exc}. "
                    "For class labels use a classifier.") from exc
    Xv, yv = _sklearn_checked(lambda: validate_data(
        est, X, y, dtype=np.float64, y_numeric=numeric_y,
        ensure_min_samples=1))
    if not np.all(np.isfinite(Xv)):  # validate_data checks, but keep the guarantee local
        raise InvalidDataError("Input X contains NaN or infinity.")
    names = getattr(est, "feature_names_in_", None)
    return Dataset.from_arrays(Xv, yv, loss=loss, sample_weight=sample_weight,
                               feature_names=None if names is None else list(names))


def predict_matrix(est: Any, X: Any, *, fitted: str = "rules_") -> FloatArray:
    """The encoded float matrix of ``X`` for a fitted ``est`` (checks the attribute
    ``fitted``, feature count and names, finiteness). The encoding is that of ``rules_``
    or, for models that are not rule ensembles, of ``encoder_``."""
    check_is_fitted(est, fitted)
    rules = getattr(est, "rules_", None)
    encoder = rules.encoder if rules is not None else getattr(est, "encoder_", None)
    if encoder is not None and encoder.categories:
        if not _is_dataframe(X):
            raise InvalidDataError(
                "this model was fitted on a DataFrame with categorical columns; pass a "
                "DataFrame with the same columns.")
        _sklearn_checked(lambda: validate_data(est, X, reset=False, skip_check_array=True))
        Xf = encoder.transform(X)
    else:
        Xf = _sklearn_checked(lambda: validate_data(est, X, reset=False, dtype=np.float64))
    Xf = np.asarray(Xf, dtype=float)
    if not np.all(np.isfinite(Xf)):
        bad = np.argwhere(~np.isfinite(Xf))[0]
        raise InvalidDataError(
            f"Input X contains NaN or infinity (first at row {int(bad[0])}, column "
            f"{int(bad[1])}); a rule cannot be evaluated there. Impute or drop those rows.")
    return Xf


def check_float32_range(X: FloatArray, consumer: str) -> None:
    """Refuse values that scikit-learn's trees cannot compare. They cast X to float32:
    entries above its largest finite value (≈ 3.4e38) become inf and fail deep inside, and
    non-zero entries below its smallest normal value (≈ 1.2e-38) lose their precision or
    become 0, so distinct values merge and the trees learn a constant model without a
    word. Both are refused with the column and the fix (rescale)."""
    info = np.finfo(np.float32)
    limit, tiny = float(info.max), float(info.tiny)
    if not X.size:
        return
    absx = np.abs(X)
    big = float(np.max(absx))
    if big > limit:
        raise InvalidDataError(
            f"X has values up to {big:.3g}, beyond the float32 range ({limit:.3g}) that "
            f"{consumer} compare in; rescale those columns (e.g. standardize X).")
    small = (absx > 0) & (absx < tiny)
    if np.any(small):
        col = int(np.argwhere(small)[0][1])
        least = float(np.min(absx[small]))
        raise InvalidDataError(
            f"X has non-zero values as small as {least:.3g} (first in column {col}), below "
            f"the float32 range ({tiny:.3g}) that {consumer} compare in: they would merge "
            "or round to 0 and the model would ignore them. Rescale those columns (e.g. "
            "standardize X, or multiply the column by a power of 10).")
