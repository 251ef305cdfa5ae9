"""Families of regularized trees: grid, Theorem-1 complexities, normalization, sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rulemip.boosting.rgb.families import (
    PAPER_LAMBDAS,
    PAPER_N_INTERNAL,
    FamilyGrid,
    leaf_scale,
    rademacher_bound,
)
from rulemip.exceptions import InvalidParameterError


def test_paper_grid_is_the_7x7_product() -> None:
    grid = FamilyGrid.paper()
    assert len(grid) == 49
    assert grid.q == 2
    assert sorted(set(grid.n_internal)) == [2, 4, 8, 16, 32, 64, 256]
    assert sorted(set(grid.lambdas)) == [0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 4.0]
    assert grid.pairs[0] == (2, 0.001)
    assert grid.pairs[8] == (4, 0.01)
    assert grid.pairs[-1] == (256, 4.0)
    assert len(set(grid.pairs)) == 49
    assert (PAPER_N_INTERNAL, PAPER_LAMBDAS) == (
        (2, 4, 8, 16, 32, 64, 256), (0.001, 0.01, 0.1, 0.5, 1.0, 2.0, 4.0))


def test_theorem1_bound_by_hand() -> None:
    # n = 4, lambda = 0.5, m = 100, d = 8:
    # 0.5 * sqrt(18 * log2(10) * ln(101) / 100)
    by_hand = 0.5 * math.sqrt(18 * 3.321928094887362 * 4.61512051684126 / 100)
    assert rademacher_bound(4, 0.5, 100, 8) == pytest.approx(by_hand, rel=1e-12)
    assert by_hand == pytest.approx(0.8306, abs=1e-4)  # 0.5 * sqrt(2.7596)
    grid = FamilyGrid.from_pairs([(4, 0.5), (2, 1.0)])
    raw = grid.raw_complexities(100, 8)
    assert raw[0] == pytest.approx(by_hand, rel=1e-12)
    assert raw[1] == pytest.approx(1.0 * math.sqrt(10 * 3.321928094887362 * 4.61512051684126
                                                   / 100), rel=1e-12)


def test_normalization_divides_by_the_grid_maximum() -> None:
    grid = FamilyGrid.from_pairs([(2, 1.0), (8, 0.5), (1, 0.1)])
    # lambda * sqrt(4n + 2): sqrt(10) = 3.16228, 0.5 sqrt(34) = 2.91548, 0.1 sqrt(6) = 0.24495
    expected = np.array([1.0, 0.5 * math.sqrt(34) / math.sqrt(10),
                         0.1 * math.sqrt(6) / math.sqrt(10)])
    np.testing.assert_allclose(grid.complexities(), expected, rtol=1e-12)
    np.testing.assert_allclose(grid.complexities(), [1.0, 0.921954, 0.0774597], rtol=1e-5)
    # the data factor cancels: same normalization for any sample size and dimension
    for m, d in ((10, 1), (569, 30), (10**6, 400)):
        raw = grid.raw_complexities(m, d)
        np.testing.assert_allclose(raw / raw.max(), grid.complexities(), rtol=1e-12)


def test_paper_grid_normalized_extremes() -> None:
    omega = FamilyGrid.paper().complexities()
    assert omega.max() == 1.0
    assert omega[-1] == 1.0  # (256, 4) is the richest family
    assert omega[0] == pytest.approx(0.001 * math.sqrt(10) / (4 * math.sqrt(1026)), rel=1e-12)
    assert omega.min() == omega[0]
    assert np.all(omega > 0)


def test_sampling_probabilities_by_hand() -> None:
    grid = FamilyGrid.paper()
    p = grid.probabilities("lambda")
    assert p.sum() == pytest.approx(1.0)
    # each lambda appears 7 times; sum of the lambda grid is 7.611
    assert p[-1] == pytest.approx(4.0 / (7 * 7.611), rel=1e-12)
    assert p[0] == pytest.approx(0.001 / (7 * 7.611), rel=1e-12)
    p2 = FamilyGrid.from_pairs([(2, 1.0), (2, 3.0)]).probabilities("lambda_squared")
    np.testing.assert_allclose(p2, [0.1, 0.9])
    np.testing.assert_allclose(grid.probabilities("uniform"), np.full(49, 1 / 49))
    with pytest.raises(InvalidParameterError, match="sampling"):
        grid.probabilities("nesterov")


@pytest.mark.parametrize("pairs, fragment", [
    ([(0, 1.0)], "n_internal must be a positive integer"),
    ([(2.5, 1.0)], "n_internal must be a positive integer"),
    ([(2, -1.0)], "lambda"),
    ([(2, float("inf"))], "lambda"),
    ([(2, 1.0), (2, 1.0)], "duplicate"),
    ([(2, 1.0, 3)], "pair"),
    ([], "empty"),
    ("2,1.0", "list of"),
    (5, "list of"),
])
def test_bad_family_lists_are_rejected(pairs: object, fragment: str) -> None:
    with pytest.raises(InvalidParameterError, match=fragment):
        FamilyGrid.from_pairs(pairs)


def test_bad_norm_is_rejected() -> None:
    with pytest.raises(InvalidParameterError, match="`q` must be 1 or 2"):
        FamilyGrid.from_pairs([(2, 1.0)], q=3)


def test_leaf_scale() -> None:
    assert leaf_scale(np.array([3.0, 4.0]), 1.0, 2) == pytest.approx(0.2)
    assert leaf_scale(np.array([3.0, -4.0]), 3.5, 1) == pytest.approx(0.5)
    assert leaf_scale(np.array([3.0, 4.0]), 5.0, 2) == 1.0  # on the sphere: unchanged
    assert leaf_scale(np.array([0.1, 0.1]), 1.0, 1) == 1.0  # inside: never scaled up
    assert leaf_scale(np.zeros(3), 1.0, 2) == 1.0
