r"""The forest structure of tree pruning and its objective, written once
(docs/explanation/tree_pruning.md, docs/explanation/tree_pruning_paths.md; [PRUNE] §2–3).

Every node of every tree of an ensemble is a candidate rule; two nodes conflict when one is
an ancestor of the other, so the feasible selections are the *antichains* of the forest
``parent`` (``parent[i] = -1`` for a root).

* **Root-to-leaf path matrix** :math:`R` (:func:`root_to_leaf_paths`): one row per leaf ℓ
  marking :math:`P_\ell \cup \{\ell\}`.  The paths are the maximal cliques of the conflict
  graph (a comparability graph, hence perfect), so
  :math:`\{z \in [0,1]^m : Rz \le 1\}` is the convex hull of the antichains, and for binary
  z the rows say exactly ``z_i + z_j ≤ 1`` for every ancestor/descendant pair.
* **Antichain DP** (:meth:`Forest.min_antichain`): the exact
  :math:`\min_s c^\top s` over antichains by
  :math:`f_i = \min(c_i, \sum_{j \in \mathrm{ch}(i)} f_j)` (empty sum 0): an antichain
  of the subtree of i is either ``{i}`` or a union of antichains of the children's
  subtrees, which never conflict with each other.  Node i is selected iff
  :math:`c_i < \sum_{\mathrm{ch}(i)} f_j` and no ancestor is selected.  Maximizing a
  profit p is ``min_antichain(-p)``.
* **The pruning objective** (:func:`ridge_refit`): for node vectors M (n × m), γ > 0 and
  :math:`z \in [0,1]^m` with support S and :math:`D = \mathrm{diag}(z_S)`,

  .. math:: q(z) = \tfrac12 y^\top (I_n + \gamma \textstyle\sum_i z_i M_i M_i^\top)^{-1} y
            = \tfrac12 (y^\top y - (M_S^\top y)^\top w_S),\quad
            w_S = (D^{-1}/\gamma + M_S^\top M_S)^{-1} M_S^\top y

  (Woodbury; only an :math:`|S| \times |S|` system is solved), with residual
  :math:`r = y - M_S w_S` and gradient :math:`\partial q/\partial z_i = -(\gamma/2)
  (M_i^\top r)^2` (:func:`pruning_gradient`).  For binary z, :math:`w_S` is the ridge refit
  of Problem (1) on the support.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from rulemip.exceptions import InvalidParameterError

__all__ = ["Forest", "RidgeRefit", "forest_levels", "pruning_gradient", "ridge_refit",
           "root_to_leaf_paths"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_SUPPORT_TOL = 1e-12  # z_i above this is in the support S


def forest_levels(parent: ArrayLike) -> list[IntArray]:
    """Node indices grouped by depth (roots first); raises on a cycle or a bad index."""
    par = np.asarray(parent, dtype=np.int64).reshape(-1)
    m = par.shape[0]
    if np.any(par >= m) or np.any(par < -1):
        raise InvalidParameterError("`parent` must hold node indices in [0, m) or -1 for a "
                                    "root.")
    depth = np.zeros(m, dtype=np.int64)
    for _ in range(m + 1):
        new = np.where(par >= 0, depth[np.maximum(par, 0)] + 1, 0)
        if np.array_equal(new, depth):
            break
        depth = new
    else:
        raise InvalidParameterError("`parent` does not describe a forest (cycle).")
    if m == 0:
        return []
    return [np.flatnonzero(depth == d) for d in range(int(depth.max()) + 1)]


def root_to_leaf_paths(parent: ArrayLike) -> sp.csr_matrix:
    """(#leaves, m) 0/1 matrix ``R``: row k marks the root-to-leaf path of the k-th leaf
    (leaves in index order; module docstring)."""
    par = np.asarray(parent, dtype=np.int64).reshape(-1)
    m = par.shape[0]
    has_child = np.zeros(m, dtype=bool)
    has_child[par[par >= 0]] = True
    leaves = np.flatnonzero(~has_child)
    rows: list[IntArray] = []
    cols: list[IntArray] = []
    cur, idx = leaves.copy(), np.arange(leaves.size)
    for _ in range(m + 1):
        if not cur.size:
            break
        rows.append(idx)
        cols.append(cur)
        up = par[cur]
        keep = up >= 0
        cur, idx = up[keep], idx[keep]
    else:
        raise InvalidParameterError("`parent` does not describe a forest (cycle).")
    r = np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)
    c = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64)
    return sp.csr_matrix((np.ones(r.size), (r, c)), shape=(leaves.size, m))


class Forest:
    """A forest given by ``parent`` (−1 for roots) with its depth levels, children and
    post-order precomputed, and the exact antichain DP (module docstring).

    Attributes
    ----------
    parent : (m,) parent indices.
    levels : node indices by depth, roots first.
    children : list of child lists; roots : root indices; post_order : children before
        parents.
    """

    def __init__(self, parent: ArrayLike) -> None:
        self.parent = np.asarray(parent, dtype=np.int64).reshape(-1)
        self.levels = forest_levels(self.parent)
        self.n_nodes = int(self.parent.shape[0])
        self.roots = self.levels[0] if self.levels else np.zeros(0, dtype=np.int64)
        self._below = [(idx, self.parent[idx]) for idx in self.levels[1:]]
        self._children: list[list[int]] | None = None
        self._paths: sp.csr_matrix | None = None

    @property
    def children(self) -> list[list[int]]:
        if self._children is None:
            ch: list[list[int]] = [[] for _ in range(self.n_nodes)]
            for j, p in enumerate(self.parent.tolist()):
                if p >= 0:
                    ch[p].append(j)
            self._children = ch
        return self._children

    @property
    def post_order(self) -> list[int]:
        """Every node after all of its descendants (deepest level first)."""
        return [int(i) for idx in reversed(self.levels) for i in idx]

    @property
    def paths(self) -> sp.csr_matrix:
        """The root-to-leaf path matrix (:func:`root_to_leaf_paths`), cached."""
        if self._paths is None:
            self._paths = root_to_leaf_paths(self.parent)
        return self._paths

    def min_antichain(self, c: ArrayLike) -> tuple[float, FloatArray]:
        r"""Exact :math:`\min_s c^\top s` over the antichains ``s`` of the forest (also over
        the path polytope :math:`\{s\in[0,1]^m : Rs \le 1\}`, which is integral).

        Returns ``(value, s)`` with ``s`` a 0/1 minimizer; nodes with ``c_i ≥ 0`` are never
        selected, ties keep the children (module docstring).
        """
        cv = np.asarray(c, dtype=float).reshape(-1)
        if cv.shape[0] != self.n_nodes:
            raise InvalidParameterError(
                f"`c` must have {self.n_nodes} entries (one per node); got {cv.shape[0]}.")
        m = self.n_nodes
        below = np.zeros(m)  # Σ_{children} f_j
        for idx, par in reversed(self._below):
            below += np.bincount(par, weights=np.minimum(cv[idx], below[idx]), minlength=m)
        take = cv < below
        covered = take.copy()  # node or one of its ancestors takes
        s = take.copy()
        for idx, par in self._below:
            s[idx] &= ~covered[par]
            covered[idx] |= covered[par]
        r = self.roots
        return float(np.minimum(cv[r], below[r]).sum()), s.astype(float)

    def max_antichain(self, profit: ArrayLike) -> tuple[float, FloatArray]:
        """Exact ``max Σ p_i s_i`` over antichains: ``-min_antichain(-p)``."""
        value, s = self.min_antichain(-np.asarray(profit, dtype=float))
        return -value, s


@dataclass(frozen=True)
class RidgeRefit:
    """:func:`ridge_refit` at one z: support ``S``, weights ``w`` (on S), residual ``r``
    and the pruning objective ``value`` = q(z)."""

    S: IntArray
    w: FloatArray
    r: FloatArray
    value: float


def ridge_refit(M: sp.csc_matrix, y: FloatArray, gamma: float, z: ArrayLike, *,
                Mty: FloatArray | None = None, yty: float | None = None) -> RidgeRefit:
    r"""q(z), the weights :math:`w_S` and the residual for z ∈ [0, 1]^m (module docstring).

    ``M`` is the (n, m) node matrix (CSC), ``y`` the response, ``gamma`` > 0; ``Mty`` =
    :math:`M^\top y` and ``yty`` = :math:`y^\top y` may be passed when cached.
    """
    zv = np.asarray(z, dtype=float).reshape(-1)
    b = np.asarray(M.T @ y).ravel() if Mty is None else Mty
    yy = float(y @ y) if yty is None else yty
    S = np.flatnonzero(zv > _SUPPORT_TOL)
    if S.size == 0:
        return RidgeRefit(S, np.zeros(0), np.array(y, dtype=float), 0.5 * yy)
    MS = M[:, S]
    G = np.asarray((MS.T @ MS).toarray(), dtype=float)
    G[np.diag_indices_from(G)] += 1.0 / (gamma * zv[S])
    w = np.asarray(sla.solve(G, b[S], assume_a="pos"), dtype=float)
    r = y - np.asarray(MS @ w).ravel()
    return RidgeRefit(S, w, r, 0.5 * (yy - float(b[S] @ w)))


def pruning_gradient(Mt: sp.spmatrix, r: FloatArray, gamma: float) -> FloatArray:
    r""":math:`\nabla q(z)_i = -(\gamma/2)(M_i^\top r)^2` from the residual r of z
    (``Mt`` = :math:`M^\top`, any sparse format)."""
    return -0.5 * gamma * np.asarray(Mt @ r).ravel() ** 2
