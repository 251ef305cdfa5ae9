"""Exactness of the grid-cell reduction (docs/explanation/box_selection.md §1): risks on full and
reduced data agree."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.data import candidate_thresholds, threshold_groups
from rulemip.formulations.cells import reduce_to_cells
from rulemip.losses import get_loss


def _data(rng, loss, n=40, d=2):
    X = rng.normal(size=(n, d)).round(1)
    if loss == "squared":
        y = rng.normal(size=n) * 3 + 1
    elif loss == "logistic":
        y = np.where(rng.random(n) < 0.4, -1.0, 1.0)
    else:
        y = rng.poisson(1.5, size=n).astype(float)
    return X, y


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("weighted", [False, True])
def test_random_rule_sets_same_risk(rng, loss, weighted):
    X, y = _data(rng, loss)
    w = rng.uniform(0.2, 3.0, size=len(y)) if weighted else None
    ths = candidate_thresholds(X, 4)
    red = reduce_to_cells(X, y, ths, loss, w)
    G = threshold_groups(X, ths)
    lo = get_loss(loss)
    assert red.total_weight == pytest.approx(len(y) if w is None else w.sum())
    assert red.cell_weight.sum() == pytest.approx(red.total_weight)
    for _ in range(20):
        k = int(rng.integers(1, 4))
        # random boxes over groups, random weights, random intercept
        f_rows = np.full(len(y), rng.normal())
        f_cells = np.full(red.n_cells, f_rows[0])
        beta = rng.normal(size=k)
        for t in range(k):
            a = [int(rng.integers(0, len(th) + 1)) for th in ths]
            b = [int(rng.integers(a[j], len(ths[j]) + 1)) for j in range(len(ths))]
            in_rows = np.all((a <= G) & (b >= G), axis=1)
            in_cells = np.all((a <= red.groups) & (b >= red.groups), axis=1)
            f_rows += beta[t] * in_rows
            f_cells += beta[t] * in_cells
        full = lo.risk(f_rows, y, weights=beta, reg=0.3, sample_weight=w)
        assert red.risk(f_cells, beta, 0.3) == pytest.approx(full, rel=1e-12, abs=1e-12)


def test_one_feature_six_groups_gives_six_cells(rng):
    X = rng.normal(size=(100, 1))
    y = rng.normal(size=100)
    ths = candidate_thresholds(X, 5)
    red = reduce_to_cells(X, y, ths, "squared")
    assert red.n_cells == 6 and red.n_points == 6
    # squared: the constant is the within-cell sum of squares
    sse = sum(((y[red.cell_of_row == c] - y[red.cell_of_row == c].mean()) ** 2).sum()
              for c in range(6))
    assert red.constant == pytest.approx(sse)


def test_logistic_two_points_per_mixed_cell():
    X = np.array([[0.0], [0.0], [0.0], [1.0], [1.0]])
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    red = reduce_to_cells(X, y, [np.array([0.5])], "logistic")
    assert red.n_cells == 2 and red.n_points == 3
    assert red.constant == 0.0
    np.testing.assert_allclose(red.weight, [2.0, 1.0, 2.0])
    np.testing.assert_allclose(red.y, [1.0, -1.0, -1.0])


def test_poisson_constant_nonnegative_and_zero_weight_rows(rng):
    X = rng.normal(size=(30, 1))
    y = rng.poisson(2.0, size=30).astype(float)
    w = np.ones(30)
    w[:3] = 0.0
    red = reduce_to_cells(X, y, candidate_thresholds(X, 3), "poisson", w)
    assert red.constant >= 0.0
    assert np.all(red.cell_of_row[:3] == -1)
    assert red.total_weight == pytest.approx(27.0)
