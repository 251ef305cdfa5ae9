"""The validated, immutable data object every learner and formulation consumes."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.data.encoding import FeatureEncoder, as_numeric_array
from rulemip.exceptions import InvalidDataError
from rulemip.losses import Loss, get_loss


@dataclass(frozen=True, eq=False)
class Dataset:
    """Finite numeric data ``(X, y)`` with feature names, validated once at the edge.

    Attributes
    ----------
    X : (n, d) float array (read-only), the encoded features.
    y : (n,) float array (read-only) in the loss' label convention (logistic: -1/+1).
    sample_weight : (n,) positive weights or ``None`` (all ones).
    encoder : how the user's columns became ``X`` (feature names, categorical levels).
    classes : for classification, the original labels mapped to -1 and +1 (in that order).
    """

    X: NDArray[np.float64]
    y: NDArray[np.float64]
    encoder: FeatureEncoder
    sample_weight: NDArray[np.float64] | None = None
    classes: tuple[Any, ...] | None = None

    @classmethod
    def from_arrays(cls, X: Any, y: Any, *, loss: str | Loss | None = None,
                    feature_names: Any = None, sample_weight: Any = None,
                    encoder: FeatureEncoder | None = None) -> Dataset:
        """Validate and wrap user data.

        ``loss`` decides which labels are allowed: ``"logistic"`` maps any two labels to
        -1/+1 (sorted order; the larger is +1), ``"poisson"`` needs ``y >= 0``.
        """
        if X is None:
            raise InvalidDataError("X is None; pass a 2-d array or a DataFrame.")
        enc = encoder if encoder is not None else FeatureEncoder.fit(X, feature_names)
        Xf = enc.transform(X)
        n, d = Xf.shape
        if n == 0:
            raise InvalidDataError("X has no rows; at least one sample is needed.")
        if d == 0:
            raise InvalidDataError("X has no columns; at least one feature is needed.")
        if not np.all(np.isfinite(Xf)):
            bad = np.argwhere(~np.isfinite(Xf))[0]
            raise InvalidDataError(
                f"X contains NaN or infinity (first at row {int(bad[0])}, feature "
                f"{enc.feature_names[int(bad[1])]!r}); impute or drop those rows first.")
        y_raw = as_numeric_array(y.to_numpy() if hasattr(y, "to_numpy") else y, "y")
        if y_raw.ndim == 2 and y_raw.shape[1] == 1:
            y_raw = y_raw.ravel()
        if y_raw.ndim != 1:
            raise InvalidDataError(f"y must be 1-dimensional; got shape {y_raw.shape}.")
        if len(y_raw) != n:
            raise InvalidDataError(
                f"X has {n} rows but y has {len(y_raw)} entries; they must match.")
        classes: tuple[Any, ...] | None = None
        loss_obj = get_loss(loss) if loss is not None else None
        if loss_obj is not None and loss_obj.name == "logistic":
            labels = np.unique(y_raw)
            if len(labels) != 2:
                raise InvalidDataError(
                    "logistic loss needs exactly two classes in y; got "
                    f"{len(labels)} ({labels[:5].tolist()}). Multi-class is not supported.")
            classes = (labels[0].item() if hasattr(labels[0], "item") else labels[0],
                       labels[1].item() if hasattr(labels[1], "item") else labels[1])
            yf = np.where(y_raw == labels[1], 1.0, -1.0)
        else:
            try:
                yf = np.asarray(y_raw, dtype=float)
            except (TypeError, ValueError) as exc:
                raise InvalidDataError(
                    f"y must be numeric for this loss; conversion failed: {exc}") from exc
            if not np.all(np.isfinite(yf)):
                raise InvalidDataError("y contains NaN or infinity; drop those rows first.")
            _check_target_scale(yf)
            if loss_obj is not None:
                yf = loss_obj.check_labels(yf)
        sw = None
        if sample_weight is not None:
            sw = np.asarray(sample_weight, dtype=float).ravel()
            if sw.shape != (n,):
                raise InvalidDataError(
                    f"sample_weight must have shape ({n},); got {sw.shape}.")
            if not np.all(np.isfinite(sw)) or np.any(sw < 0) or sw.sum() <= 0:
                raise InvalidDataError(
                    "sample_weight must be finite, non-negative and not all zero.")
            sw.setflags(write=False)
        Xf = np.ascontiguousarray(Xf, dtype=float)
        Xf.setflags(write=False)
        yf = np.ascontiguousarray(yf, dtype=float)
        yf.setflags(write=False)
        return cls(Xf, yf, enc, sw, classes)

    # ------------------------------------------------------------------ views
    @property
    def n(self) -> int:
        return int(self.X.shape[0])

    @property
    def d(self) -> int:
        return int(self.X.shape[1])

    @property
    def feature_names(self) -> tuple[str, ...]:
        return self.encoder.feature_names

    @property
    def weights(self) -> NDArray[np.float64]:
        """Sample weights, ones when none were given."""
        return self.sample_weight if self.sample_weight is not None else np.ones(self.n)

    def subset(self, rows: Any) -> Dataset:
        """The dataset restricted to ``rows`` (indices or boolean mask)."""
        X = self.X[rows]
        y = self.y[rows]
        sw = None if self.sample_weight is None else self.sample_weight[rows]
        for a in (X, y) + ((sw,) if sw is not None else ()):
            a.setflags(write=False)
        return Dataset(X, y, self.encoder, sw, self.classes)

    def digest(self) -> str:
        """SHA-256 fingerprint of X, y, weights and feature names (hex)."""
        h = hashlib.sha256()
        h.update(np.asarray(self.X.shape, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.X, dtype="<f8").tobytes())
        h.update(np.ascontiguousarray(self.y, dtype="<f8").tobytes())
        if self.sample_weight is not None:
            h.update(np.ascontiguousarray(self.sample_weight, dtype="<f8").tobytes())
        h.update("\x1f".join(self.feature_names).encode())
        return h.hexdigest()


def _check_target_scale(y: NDArray[np.float64]) -> None:
    """Refuse targets whose squared errors overflow double precision: every risk is a sum
    of n terms of order y², so max |y| must stay below sqrt(max_float / (4 n))."""
    n = max(len(y), 1)
    limit = float(np.sqrt(np.finfo(np.float64).max / (4.0 * n)))
    big = float(np.max(np.abs(y))) if y.size else 0.0
    if big > limit:
        raise InvalidDataError(
            f"y has values up to {big:.3g}; the squared errors of {n} rows overflow double "
            f"precision beyond {limit:.3g}. Rescale y (e.g. divide it by its standard "
            "deviation) and multiply the predictions back.")
