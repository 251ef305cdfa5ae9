"""Small random tables for the k-box tests: integer features (so that few cut points cover
every value), with constant features, duplicate rows and tied labels by seed."""

from __future__ import annotations

import numpy as np


def random_table(seed: int, n: int = 14, d: int = 3, second_rule: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: y one box-shaped rule (two with ``second_rule``) plus noise; seeds ≡ 0
    (mod 3) make feature 1 constant, ≡ 1 (mod 4) repeat three rows, ≡ 2 (mod 5) tie two
    labels."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, d)).astype(float)
    if seed % 3 == 0:
        X[:, 1] = 1.0  # a constant feature
    if seed % 4 == 1:
        X[-3:] = X[:3]  # duplicate rows (cells of weight 2)
    signal = X[:, 0] * (X[:, -1] > 1.5)
    if second_rule:
        signal = signal - (X[:, 1] > 1)
    y = np.round(signal + rng.normal(scale=0.7, size=n), 1)
    if seed % 5 == 2:
        y[-2:] = y[:2]  # ties
    return X, y
