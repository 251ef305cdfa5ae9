"""Synthetic datasets with known structure (used by tests, theory and benchmarks)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_nonneg_float, check_positive_int


def alternating(k: int, delta: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    r"""The alternating dataset :math:`D(k, \Delta)` of [GAP] §3 (docs/explanation/gaps.md).

    ``n = 2k - 1`` points on one feature, :math:`x_i = i`,
    :math:`y_i = (-1)^{i-1}(1 - (i-1)\Delta)` for :math:`i = 1..n`.
    Returns ``X`` of shape (n, 1) and ``y``.
    """
    check_positive_int(k, "k")
    check_nonneg_float(delta, "delta")
    n = 2 * k - 1
    i = np.arange(1, n + 1, dtype=float)
    y = np.where(i % 2 == 1, 1.0, -1.0) * (1.0 - (i - 1.0) * delta)
    return i.reshape(-1, 1), y


def friedman1(n_samples: int = 2000, noise: float = 1.0, random_state: int | None = 0
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """scikit-learn's Friedman #1 regression problem (10 features, 5 informative)."""
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=n_samples, noise=noise, random_state=random_state)
    return np.asarray(X, dtype=float), np.asarray(y, dtype=float)


def friedman2(n_samples: int = 10_000, noise: float = 0.0, random_state: int | None = 0
              ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """scikit-learn's Friedman #2 regression problem (4 features)."""
    from sklearn.datasets import make_friedman2

    X, y = make_friedman2(n_samples=n_samples, noise=noise, random_state=random_state)
    return np.asarray(X, dtype=float), np.asarray(y, dtype=float)
