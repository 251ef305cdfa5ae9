r"""Per-box quantities of the three-box scan (docs/explanation/kbox_search.md §6): the
correlation of two boxes, every box's weight in every slab, and — once per first box a —
every box's correlation with a with its ranges over the trie's nodes and rank suffixes.
Compiled; no Python runs per box."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from rulemip.algorithms.kbox.pair_kernel import _and_weight, _cross

__all__ = ["correlation", "first_box_correlations", "slab_overlap_matrix", "trie_parents"]


@njit(cache=True, inline="always")
def correlation(n: float, Nx: float, Ny: float, W: float, centred: bool, Kx: float, Ky: float
         ) -> float:
    """:math:`\\rho = c/\\sqrt{K_x K_y}` of two boxes with common weight n."""
    return _cross(n, Nx, Ny, W, centred) / math.sqrt(Kx * Ky)


@njit(cache=True)
def slab_overlap_matrix(bits: np.ndarray, slabs: np.ndarray, unit: float,
                        weight: np.ndarray) -> np.ndarray:
    """``T[x, s]``: the weight of box x's cells inside slab s (every box, every slab)."""
    B = bits.shape[0]
    T = np.empty((B, slabs.shape[0]))
    for x in range(B):
        for s in range(slabs.shape[0]):
            T[x, s] = _and_weight(bits[x], slabs[s], unit, weight)
    return T


@njit(cache=True)
def trie_parents(depth: np.ndarray) -> np.ndarray:
    """Each node's parent in a trie listed depth first (−1 for the root)."""
    n = depth.shape[0]
    parent = np.full(n, -1, dtype=np.int64)
    last = np.zeros(int(depth.max()) + 2 if n else 1, dtype=np.int64)
    for i in range(n):
        d = depth[i]
        if d > 0:
            parent[i] = last[d - 1]
        last[d] = i
    return parent


@njit(cache=True, nogil=True)
def first_box_correlations(bits: np.ndarray, N: np.ndarray, K: np.ndarray, a: int,
                           W: float, centred: bool, unit: float, weight: np.ndarray,
                            node_box: np.ndarray, node_run: np.ndarray, parent: np.ndarray,
                            a_order: np.ndarray, rho_a: np.ndarray, sub_rng: np.ndarray,
                            blk_rng: np.ndarray, suffix: np.ndarray, link: float) -> None:
    r"""For a first box a: ``rho_a[x]`` = :math:`\rho_{ax}` for every box (one
    intersection each); its range over each trie node's own box and run (``blk_rng``) and
    over its subtree (``sub_rng``: children merged into parents, last node first); and
    ``suffix[r]`` the range over the boxes of rank ≥ r that are unlinked to a
    (:math:`|\rho| <` :data:`LINK`; empty: lo > hi)."""
    n = bits.shape[0]
    Ka = K[a]
    for x in range(n):
        rho_a[x] = correlation(_and_weight(bits[a], bits[x], unit, weight), N[a], N[x], W, centred,
                        Ka, K[x])
    m = node_box.shape[0]
    for i in range(m):
        lo = math.inf
        hi = -math.inf
        c = node_box[i]
        if c >= 0:
            lo = rho_a[c]
            hi = rho_a[c]
        for c in range(node_run[i, 0], node_run[i, 1]):
            v = rho_a[c]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        blk_rng[i, 0] = lo
        blk_rng[i, 1] = hi
        sub_rng[i, 0] = lo
        sub_rng[i, 1] = hi
    for i in range(m - 1, 0, -1):
        p = parent[i]
        if sub_rng[i, 0] < sub_rng[p, 0]:
            sub_rng[p, 0] = sub_rng[i, 0]
        if sub_rng[i, 1] > sub_rng[p, 1]:
            sub_rng[p, 1] = sub_rng[i, 1]
    suffix[n, 0] = math.inf
    suffix[n, 1] = -math.inf
    for r in range(n - 1, -1, -1):
        v = rho_a[a_order[r]]
        suffix[r, 0] = suffix[r + 1, 0]
        suffix[r, 1] = suffix[r + 1, 1]
        if -link < v < link:
            if v < suffix[r, 0]:
                suffix[r, 0] = v
            if v > suffix[r, 1]:
                suffix[r, 1] = v
