"""The shared forest module (rulemip/formulations/forest.py) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse as sp

from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.forest import (
    Forest,
    pruning_gradient,
    ridge_refit,
    root_to_leaf_paths,
)


def _random_forest(rng: np.random.Generator, m: int) -> np.ndarray:
    """A random forest on m nodes: node j's parent is -1 or an earlier node."""
    parent = np.full(m, -1, dtype=np.int64)
    for j in range(1, m):
        if rng.uniform() < 0.8:
            parent[j] = rng.integers(0, j)
    # relabel by a random permutation so that parents do not always precede children
    perm = rng.permutation(m)
    inv = np.argsort(perm)
    out = np.full(m, -1, dtype=np.int64)
    for j in range(m):
        out[perm[j]] = -1 if parent[j] < 0 else perm[parent[j]]
    del inv
    return out


def _ancestors(parent: np.ndarray, j: int) -> set[int]:
    out = set()
    p = int(parent[j])
    while p >= 0:
        out.add(p)
        p = int(parent[p])
    return out


def _antichains(parent: np.ndarray) -> list[np.ndarray]:
    """Every 0/1 vector without a node and one of its ancestors (brute force)."""
    m = parent.shape[0]
    anc = [_ancestors(parent, j) for j in range(m)]
    out = []
    for bits in itertools.product((0, 1), repeat=m):
        S = [j for j in range(m) if bits[j]]
        if all(not (anc[j] & set(S)) for j in S):
            out.append(np.array(bits, dtype=float))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_min_antichain_matches_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 11))
    parent = _random_forest(rng, m)
    forest = Forest(parent)
    chains = _antichains(parent)
    for _ in range(5):
        c = rng.normal(size=m)
        value, s = forest.min_antichain(c)
        best = min(float(c @ a) for a in chains)
        assert value == pytest.approx(best, abs=1e-12)
        assert float(c @ s) == pytest.approx(best, abs=1e-12)
        assert any(np.array_equal(s, a) for a in chains)  # s is an antichain
        pv, ps = forest.max_antichain(-c)
        assert pv == pytest.approx(-best, abs=1e-12) and np.array_equal(ps, s)


def test_min_antichain_never_selects_nonnegative_weights() -> None:
    parent = np.array([-1, 0, 0, 1, 1, -1])
    value, s = Forest(parent).min_antichain(np.array([0.0, 0.0, 1.0, 0.0, 2.0, 0.0]))
    assert value == 0.0 and not s.any()


@pytest.mark.parametrize("seed", range(6))
def test_path_rows_are_the_maximal_chains(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    m = int(rng.integers(1, 10))
    parent = _random_forest(rng, m)
    R = root_to_leaf_paths(parent).toarray()
    leaves = [j for j in range(m) if j not in set(parent.tolist())]
    assert R.shape == (len(leaves), m)
    for k, leaf in enumerate(leaves):
        assert set(np.flatnonzero(R[k])) == {leaf} | _ancestors(parent, leaf)
    # binary points: R z <= 1 iff z is an antichain
    chains = {a.tobytes() for a in _antichains(parent)}
    for bits in itertools.product((0.0, 1.0), repeat=m):
        z = np.array(bits)
        assert bool(np.all(R @ z <= 1)) == (z.tobytes() in chains)
    assert (Forest(parent).paths != sp.csr_matrix(R)).nnz == 0


def test_forest_rejects_cycles_and_bad_indices() -> None:
    with pytest.raises(InvalidParameterError, match="cycle"):
        Forest(np.array([1, 0]))
    with pytest.raises(InvalidParameterError, match="parent"):
        Forest(np.array([-1, 5]))
    with pytest.raises(InvalidParameterError, match="entries"):
        Forest(np.array([-1, 0])).min_antichain(np.zeros(3))


def test_post_order_puts_children_first() -> None:
    parent = np.array([3, -1, 1, -1, 2, 3])
    pos = {v: k for k, v in enumerate(Forest(parent).post_order)}
    assert all(pos[j] < pos[int(p)] for j, p in enumerate(parent) if p >= 0)


@pytest.mark.parametrize("seed", range(5))
def test_ridge_refit_is_q_of_the_closed_form(seed: int) -> None:
    """q(z) = ½ yᵀ(I + γ Σ z_i M_i M_iᵀ)⁻¹ y and its gradient by finite differences."""
    rng = np.random.default_rng(seed)
    n, m, gamma = 12, 7, 0.7
    M = sp.csc_matrix(rng.normal(size=(n, m)) * (rng.uniform(size=(n, m)) < 0.5))
    y = rng.normal(size=n)
    z = rng.uniform(size=m) * (rng.uniform(size=m) < 0.6)
    A = np.eye(n) + gamma * (M.toarray() * z) @ M.toarray().T
    fit = ridge_refit(M, y, gamma, z)
    assert fit.value == pytest.approx(0.5 * y @ np.linalg.solve(A, y), rel=1e-10)
    assert np.allclose(fit.r, np.linalg.solve(A, y))
    g = pruning_gradient(M.T, fit.r, gamma)
    h = 1e-6
    for i in range(m):
        zp, zm = z.copy(), z.copy()
        zp[i] += h
        zm[i] -= h
        fd = (ridge_refit(M, y, gamma, zp).value - ridge_refit(M, y, gamma, zm).value) / (2 * h)
        if zm[i] > 0:  # central difference inside the support
            assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-8)
    empty = ridge_refit(M, y, gamma, np.zeros(m))
    assert empty.value == pytest.approx(0.5 * y @ y) and empty.S.size == 0
