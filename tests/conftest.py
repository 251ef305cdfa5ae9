"""Shared fixtures and the skip logic for optional solver backends."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def make_mixed_table(seed: int = 0, n: int = 1_070) -> tuple[np.ndarray, np.ndarray]:
    """A table like the 80% training split of an insurance-charges data set: three numeric
    columns (age, body-mass index, number of children) and three 0/1 one-hot columns
    (sex, smoker, one region), with a skewed positive target in the ten thousands.

    Mixed numeric and one-hot columns with a large-scale target and a tiny ridge are the
    case that crashed SCIP's NLP heuristics (issue 22)."""
    gen = np.random.default_rng(seed)
    age = gen.integers(18, 65, n).astype(float)
    bmi = np.round(gen.normal(30.7, 6.1, n).clip(16.0, 53.0), 2)
    children = gen.choice(6, n, p=[0.43, 0.24, 0.18, 0.11, 0.03, 0.01]).astype(float)
    sex = gen.integers(0, 2, n).astype(float)
    smoker = (gen.random(n) < 0.2).astype(float)
    region = (gen.random(n) < 0.27).astype(float)
    X = np.column_stack([age, bmi, children, sex, smoker, region])
    y = (260.0 * age + 330.0 * (bmi - 30.0) + 470.0 * children + 23_800.0 * smoker
         + 19_000.0 * smoker * (bmi > 30.0) - 2_000.0 + gen.gamma(2.0, 2_000.0, n))
    return X, np.maximum(y, 1_100.0)


def quantile_thresholds(X: np.ndarray, n_cuts: int = 5) -> list[np.ndarray]:
    """At most ``n_cuts`` cut points per column: the midpoints nearest to its quantiles
    j/(n_cuts+1), j = 1..n_cuts (a binary column gets its one midpoint)."""
    out = []
    for col in np.asarray(X, dtype=float).T:
        vals = np.unique(col)
        mids = (vals[:-1] + vals[1:]) / 2.0
        if len(mids) <= n_cuts:
            out.append(mids)
            continue
        qs = np.quantile(col, np.arange(1, n_cuts + 1) / (n_cuts + 1))
        out.append(np.unique(mids[np.searchsorted(mids, qs).clip(0, len(mids) - 1)]))
    return out


@pytest.fixture
def mixed_table() -> tuple[np.ndarray, np.ndarray]:
    return make_mixed_table()
