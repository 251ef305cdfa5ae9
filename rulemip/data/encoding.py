"""Turning user tables (numpy or pandas) into the numeric matrix rules are learned on.

Numeric columns pass through. Each categorical/object/bool column with levels
``L_1..L_m`` becomes ``m`` indicator columns named ``"colour == red"``; a rule condition
``0.5 < x`` on such a column prints as ``colour == red`` and ``x <= 0.5`` as
``colour != red``. A text column whose values are mostly numbers is not one-hot encoded
silently: it is a numeric column with typos (or numbers stored as text), and the user is
told which column, how many values are not numbers and the first of them
(:func:`_refuse_numbers_as_text`); a column meant as categorical says so with the pandas
``category`` dtype (``--categorical`` on the command line). The encoder is small,
JSON-serializable and travels with every fitted :class:`~rulemip.rules.RuleEnsemble` so
that new data is encoded the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.exceptions import InvalidDataError


@dataclass(frozen=True)
class EncodedColumn:
    """One column of the encoded matrix.

    ``source`` is the user's column name; ``level`` is ``None`` for a numeric column and
    the category value (as text) for an indicator column.
    """

    name: str
    source: str
    level: str | None = None

    @property
    def is_indicator(self) -> bool:
        return self.level is not None


@dataclass(frozen=True)
class FeatureEncoder:
    """Maps raw user input to the encoded float matrix, column by column."""

    input_columns: tuple[str, ...]
    categories: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def columns(self) -> tuple[EncodedColumn, ...]:
        out: list[EncodedColumn] = []
        for col in self.input_columns:
            if col in self.categories:
                out.extend(EncodedColumn(f"{col} == {lev}", col, lev)
                           for lev in self.categories[col])
            else:
                out.append(EncodedColumn(col, col))
        return tuple(out)

    @property
    def feature_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @classmethod
    def fit(cls, X: Any, feature_names: Any = None) -> FeatureEncoder:
        """Learn column names and category levels from ``X``."""
        if _is_dataframe(X):
            names = tuple(str(c) for c in X.columns)
            if len(set(names)) != len(names):
                raise InvalidDataError("column names of X must be unique.")
            cats: dict[str, tuple[str, ...]] = {}
            for orig, name in zip(X.columns, names, strict=True):
                col = X[orig]
                if _is_categorical(col):
                    _refuse_numbers_as_text(col, name)
                    levels = sorted({str(v) for v in col.dropna().tolist()})
                    if col.isna().any():
                        raise InvalidDataError(
                            f"column {name!r} has missing values; fill or drop them first.")
                    cats[name] = tuple(levels)
            return cls(names, cats)
        arr = as_numeric_array(X)
        if arr.ndim != 2:
            raise InvalidDataError(
                f"X must be 2-dimensional (n_samples, n_features); got shape {arr.shape}.")
        d = arr.shape[1]
        if feature_names is None:
            names = tuple(f"x{j + 1}" for j in range(d))
        else:
            names = tuple(str(s) for s in feature_names)
            if len(names) != d:
                raise InvalidDataError(
                    f"`feature_names` has {len(names)} entries but X has {d} columns.")
        return cls(names, {})

    def transform(self, X: Any) -> NDArray[np.float64]:
        """Encode ``X`` (same columns as at fit time) into a float matrix."""
        if _is_dataframe(X):
            missing = [c for c in self.input_columns if c not in {str(k) for k in X.columns}]
            if missing:
                raise InvalidDataError(f"X lacks the columns {missing} seen at fit time.")
            lookup = {str(k): k for k in X.columns}
            parts: list[NDArray[np.float64]] = []
            for col in self.input_columns:
                series = X[lookup[col]]
                if col in self.categories:
                    vals = np.asarray([str(v) for v in series.tolist()], dtype=object)
                    for lev in self.categories[col]:
                        parts.append((vals == lev).astype(float))
                else:
                    parts.append(_to_float(series.to_numpy(), col))
            if not parts:
                return np.zeros((len(X), 0))
            return np.column_stack(parts)
        arr = as_numeric_array(X)
        if arr.ndim == 1:
            raise InvalidDataError(
                "X must be 2-dimensional; got a 1-d array. Reshape a single feature with "
                "X.reshape(-1, 1) or a single sample with X.reshape(1, -1).")
        if arr.ndim != 2:
            raise InvalidDataError(f"X must be 2-dimensional; got shape {arr.shape}.")
        if self.categories:
            raise InvalidDataError(
                "this model was fitted on a DataFrame with categorical columns; pass a "
                "DataFrame with the same columns.")
        if arr.shape[1] != len(self.input_columns):
            raise InvalidDataError(
                f"X has {arr.shape[1]} features, but the model was fitted with "
                f"{len(self.input_columns)}.")
        return _to_float(arr, "X")

    def to_dict(self) -> dict[str, Any]:
        return {"input_columns": list(self.input_columns),
                "categories": {k: list(v) for k, v in self.categories.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FeatureEncoder:
        return cls(tuple(d["input_columns"]),
                   {k: tuple(v) for k, v in d.get("categories", {}).items()})


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "iloc")


def _is_categorical(series: Any) -> bool:
    import pandas as pd

    dtype = series.dtype
    return bool(isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_object_dtype(dtype)
                or pd.api.types.is_string_dtype(dtype) or pd.api.types.is_bool_dtype(dtype))


def _refuse_numbers_as_text(series: Any, name: str) -> None:
    """Refuse a text column (object/string dtype) in which a majority of the values parse
    as numbers: one-hot encoding it would turn a numeric column with a few typos into one
    indicator per distinct number without a word. A column the user declares categorical
    (pandas ``category`` dtype; ``--categorical`` in the CLI) and booleans are not checked.

    The rule: among the non-missing values, more than half parse as finite numbers
    (``pd.to_numeric``). Then the column is numeric in intent; if some values do not parse,
    the message names the column, how many do not and the first of them (with its row).
    """
    import pandas as pd

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return
    values = series.dropna()
    if len(values) == 0:
        return
    parsed = pd.to_numeric(values.astype(str).str.strip(), errors="coerce")
    is_number = np.isfinite(parsed.to_numpy(dtype=float))
    n_numbers = int(is_number.sum())
    if 2 * n_numbers <= len(values):
        return  # mostly text: a categorical column
    declare = (f"if {name!r} really is categorical, declare it (`--categorical {name}` on "
               f"the command line; X[{name!r}].astype('category') in Python)")
    n_bad = len(values) - n_numbers
    if n_bad == 0:
        raise InvalidDataError(
            f"column {name!r} holds numbers stored as text ({len(values)} values); convert "
            f"it with pd.to_numeric(X[{name!r}]) to use it as a number, or {declare}.")
    first = int(np.flatnonzero(~is_number)[0])
    raise InvalidDataError(
        f"column {name!r} looks numeric but {n_bad} of its {len(values)} values "
        f"{'is not a number' if n_bad == 1 else 'are not numbers'} (first: "
        f"{values.iloc[first]!r} at row index {values.index[first]!r}); it would "
        f"be one-hot encoded into {values.nunique()} levels. Clean the data (fix or drop "
        f"those rows), or {declare}.")


def as_numeric_array(X: Any, what: str = "X") -> NDArray[Any]:
    """``np.asarray(X)`` for array input, refusing what ``asarray`` would silently
    mangle: a scipy sparse matrix (it becomes a 0-d object array) and complex values
    (casting to float drops the imaginary part)."""
    if hasattr(X, "tocsr") and hasattr(X, "nnz"):  # scipy.sparse without importing scipy
        raise InvalidDataError(
            f"{what} is a sparse matrix ({type(X).__name__}); rulemip needs dense input: "
            f"pass {what}.toarray() (rule models read every entry).")
    arr = np.asarray(X)
    if arr.dtype.kind == "c":
        split = "" if what == "y" else " or split real and imaginary parts into columns"
        raise InvalidDataError(
            f"Complex data not supported: {what} is complex-valued; pass the real part "
            f"({what}.real){split}.")
    return arr


def _to_float(values: Any, what: str) -> NDArray[np.float64]:
    values = as_numeric_array(values, what)
    try:
        out = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidDataError(
            f"{what} must be numeric (or a pandas categorical/object column); "
            f"conversion failed: {exc}") from exc
    return out
