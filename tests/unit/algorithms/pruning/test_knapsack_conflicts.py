import itertools

import numpy as np
import pytest

from rulemip.algorithms.pruning.knapsack_conflicts import (
    forest_knapsack,
    forest_knapsack_fptas,
    forest_penalized,
    verify_forest_conflicts,
)


def _forest(rng, m):
    parent = np.full(m, -1)
    for j in range(1, m):
        if rng.uniform() < 0.8:
            parent[j] = rng.integers(0, j)
    return parent


def _anc(parent):
    pairs = []
    for j in range(len(parent)):
        p = parent[j]
        while p >= 0:
            pairs.append((p, j))
            p = parent[p]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2)


def _brute(profit, cost, cap, parent):
    pairs = _anc(parent)
    best = 0.0
    m = len(profit)
    for bits in itertools.product([0, 1], repeat=m):
        z = np.array(bits, float)
        if cost @ z > cap + 1e-9 or (pairs.size and np.any(z[pairs[:, 0]] + z[pairs[:, 1]] > 1)):
            continue
        best = max(best, profit @ z)
    return best


@pytest.mark.parametrize("seed", range(8))
def test_dp_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    m = 10
    parent = _forest(rng, m)
    verify_forest_conflicts(parent, _anc(parent))
    profit = rng.uniform(-0.5, 3, m)
    cost = rng.integers(0, 4, m)
    cap = int(rng.integers(1, 8))
    val, z = forest_knapsack(profit, cost, cap, parent)
    assert np.isclose(val, _brute(profit, cost, cap, parent))
    assert np.isclose(profit @ z, val) and cost @ z <= cap
    pairs = _anc(parent)
    assert not pairs.size or np.all(z[pairs[:, 0]] + z[pairs[:, 1]] <= 1)
    pv, pz = forest_penalized(profit, parent)
    assert np.isclose(pv, _brute(profit, np.zeros(m), 0, parent)) and np.isclose(profit @ pz, pv)
    for eps in (0.5, 0.1):
        fv, fz = forest_knapsack_fptas(profit, cost.astype(float), cap, parent, eps)
        assert fv >= (1 - eps) * val - 1e-9 and cost @ fz <= cap + 1e-9
        assert not pairs.size or np.all(fz[pairs[:, 0]] + fz[pairs[:, 1]] <= 1)


def test_verify_rejects_wrong_pairs():
    parent = np.array([-1, 0, 1])
    from rulemip.exceptions import InvalidDataError
    with pytest.raises(InvalidDataError):
        verify_forest_conflicts(parent, np.array([[0, 1], [1, 2]]))
