"""The data structures of coordinate-wise block descent (:mod:`rulemip.algorithms.pruning.cbcd`):
trees as path/antichain structures, the problem and fit state, the cut pool and the exact
outer-approximation master of one tree's block (on the shared engine)
(``docs/explanation/tree_pruning_paths.md`` states the math)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from rulemip._validation import is_real as _real
from rulemip.algorithms.convex.outer_approximation import OAOptions, OuterApproximation
from rulemip.budget import Budget
from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.formulations.forest import Forest, ridge_refit, root_to_leaf_paths
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.model import MIPModel
from rulemip.solvers.base import PERSISTENT_MASTER_NEEDS, resolve_backend

FloatArray = NDArray[np.float64]

_BLOCK_TOL_MIP = 1e-7     # OA tolerance with MILP masters (their row tolerances are ~1e-7)

# ----------------------------------------------------------------------------- helpers
path_clique_matrix = root_to_leaf_paths
"""Rows = root-to-leaf paths of the forest ``parent``: the one implementation,
:func:`rulemip.formulations.forest.root_to_leaf_paths` (kept under this name)."""


def node_reach(nodes: NodeMatrix, X: ArrayLike, idx: ArrayLike | None = None) -> sp.csc_matrix:
    """0/1 reach of rows of ``X`` for nodes ``idx`` (default all): x reaches node i iff
    ``lower_i < x ≤ upper_i`` componentwise (X is rounded to float32 like scikit-learn's
    ``decision_path``)."""
    Xv = np.asarray(X, dtype=float)
    if Xv.ndim != 2 or Xv.shape[1] != nodes.lower.shape[1]:
        raise InvalidDataError(f"`X_valid` must have shape (n, {nodes.lower.shape[1]}); "
                               f"got {Xv.shape}.")
    Xv = Xv.astype(np.float32).astype(float)
    ids = np.arange(nodes.n_nodes) if idx is None else np.asarray(idx, dtype=np.int64)
    cols = []
    for i in ids:
        lo, up = nodes.lower[i], nodes.upper[i]
        f = np.flatnonzero(np.isfinite(lo) | np.isfinite(up))
        ok = np.all((Xv[:, f] > lo[f]) & (Xv[:, f] <= up[f]), axis=1)
        cols.append(sp.csc_matrix(ok.astype(float).reshape(-1, 1)))
    if not cols:
        return sp.csc_matrix((Xv.shape[0], 0))
    return sp.csc_matrix(sp.hstack(cols, format="csc"))


def _enumerate_antichains(children: list[list[int]], roots: list[int], m: int, limit: int
                          ) -> NDArray[np.bool_] | None:
    """All antichains (including ∅) as rows of a bool matrix, or None if more than the
    enumeration limit (count: ``a(i) = 1 + Π_children a(j)``)."""
    count: dict[int, float] = {}

    def cnt(i: int) -> float:
        if i not in count:
            count[i] = 1.0 + math.prod(cnt(j) for j in children[i])
        return count[i]

    if math.prod(cnt(r) for r in roots) > limit:
        return None

    def combine(ids: list[int]) -> NDArray[np.bool_]:
        acc = np.zeros((1, m), dtype=bool)
        for j in ids:
            sub = rows(j)
            acc = (np.repeat(acc, sub.shape[0], axis=0) | np.tile(sub, (acc.shape[0], 1)))
        return acc

    def rows(i: int) -> NDArray[np.bool_]:
        single = np.zeros((1, m), dtype=bool)
        single[0, i] = True
        return np.vstack([single, combine(children[i])])

    return combine(roots)


def _groups(ac: NDArray[np.bool_]) -> list[NDArray[np.int64]]:
    sizes = ac.sum(axis=1)
    out = []
    for k in np.unique(sizes):
        if k == 0:
            continue
        rows = ac[sizes == k]
        out.append(np.nonzero(rows)[1].reshape(rows.shape[0], int(k)).astype(np.int64))
    return out


class CutPool:
    """Binary points visited per tree (block-local 0/1 vectors), for cut recycling.

    A point stays feasible for its block whatever the partial residual is, so its cut can
    be re-evaluated cheaply at every later update of that block (and at later λ).
    """

    def __init__(self, max_points_per_tree: int = 40) -> None:
        if max_points_per_tree < 0:
            raise InvalidParameterError(
                f"`max_points_per_tree` must be >= 0; got {max_points_per_tree}.")
        self.max_points = int(max_points_per_tree)
        self._points: dict[int, list[FloatArray]] = {}

    def points(self, tree: int) -> list[FloatArray]:
        return list(self._points.get(tree, []))

    def add(self, tree: int, u: FloatArray) -> None:
        lst = self._points.setdefault(tree, [])
        key = np.asarray(u, dtype=float).round().tobytes()
        for p in lst:
            if p.tobytes() == key:
                return
        lst.append(np.asarray(u, dtype=float).round())
        if len(lst) > self.max_points:
            del lst[0]


@dataclass
class _Tree:
    idx: NDArray[np.int64]           # global node indices of the tree
    parent: NDArray[np.int64]        # tree-local parent (−1 for the root)
    a: FloatArray
    MT: sp.csc_matrix                # n × |N_t|
    MTt: sp.csr_matrix               # its transpose (fast M_tᵀ r)
    GT: FloatArray                   # M_tᵀ M_t (dense, |N_t| × |N_t|)
    forest: Forest                   # tree-local structure: paths, antichain DP
    antichains: NDArray[np.bool_] | None
    ac_a: FloatArray | None          # cost of every enumerated antichain
    ac_groups: list[NDArray[np.int64]] | None = None  # antichains of size s as (count × s)


class _Problem:
    """Static data of problem (4) shared by every λ of a path."""

    def __init__(self, nodes: NodeMatrix, y: ArrayLike, attribute: str, gamma: float,
                 solver: str, enumeration_limit: int) -> None:
        if not (_real(gamma) and gamma > 0):
            raise InvalidParameterError(f"`gamma` must be > 0; got {gamma}.")
        self.nodes = nodes
        self.y = np.asarray(y, dtype=float).reshape(-1)
        self.M = sp.csc_matrix(nodes.M, dtype=float)
        if self.M.shape[0] != self.y.shape[0]:
            raise InvalidDataError(f"`y` must have {self.M.shape[0]} entries (rows of the node "
                                   f"matrix); got {self.y.shape[0]}.")
        if not np.all(np.isfinite(self.y)):
            raise InvalidDataError("`y` must be finite.")
        self.gamma = float(gamma)
        self.a = nodes.attribute(attribute)  # type: ignore[arg-type]
        self.Mty = np.asarray(self.M.T @ self.y).ravel()
        self.yty = float(self.y @ self.y)
        self.scale = max(0.5 * self.yty, 1e-300)
        self.solver = solver
        self._backend: Any = None
        tree_ids = np.unique(nodes.tree)
        self.trees: list[_Tree] = []
        loc = np.full(nodes.n_nodes, -1, dtype=np.int64)
        for t in tree_ids:
            idx = np.flatnonzero(nodes.tree == t).astype(np.int64)
            loc[idx] = np.arange(idx.size)
            gp = nodes.parent[idx]
            if np.any((gp >= 0) & (nodes.tree[np.maximum(gp, 0)] != t)):
                raise InvalidDataError("a node's parent lies in another tree.")
            par = np.where(gp >= 0, loc[np.maximum(gp, 0)], -1).astype(np.int64)
            MT = sp.csc_matrix(self.M[:, idx])
            GT = np.asarray((MT.T @ MT).toarray(), dtype=float)
            forest = Forest(par)
            ac = None
            if enumeration_limit > 0:
                ac = _enumerate_antichains(forest.children, [int(r) for r in forest.roots],
                                           idx.size, enumeration_limit)
            at = self.a[idx]
            self.trees.append(_Tree(idx=idx, parent=par, a=at, MT=MT, MTt=sp.csr_matrix(MT.T),
                                    GT=GT, forest=forest, antichains=ac,
                                    ac_a=None if ac is None else ac.astype(float) @ at,
                                    ac_groups=None if ac is None else _groups(ac)))
        self.tree_of = np.empty(nodes.n_nodes, dtype=np.int64)
        for k, tr in enumerate(self.trees):
            self.tree_of[tr.idx] = k

    def backend(self) -> Any:
        """The block masters' backend, resolved once on what they need (a persistent
        MILP master; ``"auto"``: the first installed backend that serves one)."""
        if self._backend is None:
            self._backend = resolve_backend(self.solver, PERSISTENT_MASTER_NEEDS,
                                            outer_approximation=False)[0]
        return self._backend

    def single_gains(self) -> FloatArray:
        """q(0) − q(e_i) = ½ (M_iᵀy)² / (1/γ + ‖M_i‖²) for every node i."""
        sq = np.asarray(self.M.multiply(self.M).sum(axis=0)).ravel()
        return 0.5 * self.Mty ** 2 / (1.0 / self.gamma + sq)

    def lambda_max(self) -> float:
        """Smallest λ at which z = 0 is block-wise optimal (see :func:`regularization_path`)."""
        pos = self.a > 0
        if not pos.any():
            return 0.0
        return float(np.max(self.single_gains()[pos] / self.a[pos]))

    def check_feasible(self, z: FloatArray) -> None:
        par = self.nodes.parent
        for i in np.flatnonzero(z):
            p = par[i]
            while p >= 0:
                if z[p]:
                    raise InvalidParameterError(
                        f"`z0` selects node {int(i)} and its ancestor {int(p)}; a node and "
                        "its descendants conflict.")
                p = par[p]


class _Fit:
    """Ridge refit on the support of a binary z: w_S, residual r and q(z)
    (:func:`rulemip.formulations.forest.ridge_refit`)."""

    def __init__(self, prob: _Problem, z: FloatArray) -> None:
        fit = ridge_refit(prob.M, prob.y, prob.gamma, (np.asarray(z) > 0.5).astype(float),
                          Mty=prob.Mty, yty=prob.yty)
        self.S, self.w, self.r, self.q = fit.S, fit.w, fit.r, fit.value


@dataclass
class _Block:
    """Block data (q0, c, K) of one tree given the other trees' support (module doc)."""

    q0: float
    c: FloatArray
    K: FloatArray

    def value_grad(self, u: FloatArray, gamma: float) -> tuple[float, FloatArray]:
        U = np.flatnonzero(u > 1e-12)
        if U.size == 0:
            return self.q0, -0.5 * gamma * self.c ** 2
        A = self.K[np.ix_(U, U)].copy()
        A[np.diag_indices_from(A)] += 1.0 / (gamma * u[U])
        v = sla.solve(A, self.c[U], assume_a="pos")
        val = self.q0 - 0.5 * float(self.c[U] @ v)
        g = -0.5 * gamma * (self.c - self.K[:, U] @ v) ** 2
        return val, g


def _block_data(prob: _Problem, tr: _Tree, S: NDArray[np.int64]) -> _Block:
    Sp = S[prob.tree_of[S] != prob.tree_of[tr.idx[0]]]
    if Sp.size == 0:
        return _Block(0.5 * prob.yty, np.asarray(tr.MTt @ prob.y).ravel(), tr.GT.copy())
    MSp = prob.M[:, Sp]
    H = np.asarray((MSp.T @ MSp).toarray(), dtype=float)
    H[np.diag_indices_from(H)] += 1.0 / prob.gamma
    cf = sla.cho_factor(H)
    w = sla.cho_solve(cf, prob.Mty[Sp])
    r = prob.y - MSp @ w
    P = np.asarray((MSp.T @ tr.MT).toarray(), dtype=float)
    K = tr.GT - P.T @ sla.cho_solve(cf, P)
    K = 0.5 * (K + K.T)
    q0 = 0.5 * (prob.yty - float(prob.Mty[Sp] @ w))
    return _Block(q0, np.asarray(tr.MTt @ r).ravel(), K)


class _BlockObjective:
    """One tree's block objective ``q(u) + λ aᵀu`` as an outer-approximation oracle
    (convex; the linear term is carried exactly by every cut)."""

    def __init__(self, blk: _Block, gamma: float, lin: FloatArray) -> None:
        self.blk, self.gamma, self.lin = blk, gamma, lin

    def value_and_gradient(self, u: FloatArray) -> tuple[float, FloatArray]:
        v, g = self.blk.value_grad(u, self.gamma)
        return v + float(self.lin @ u), g + self.lin


def _block_master(prob: _Problem, tr: _Tree, blk: _Block, lam: float, budget: Budget,
                  tol: float, max_iter: int, first_value: float) -> OuterApproximation:
    """The exact OA of one tree's block on the shared engine
    (:class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation`): binary u, one
    row per root-to-leaf path (exactly the antichains), masters ``min ν`` over the cuts of
    ``q(u) + λ aᵀu``, solved to a relative gap of 1e-9 and — HiGHS — an absolute gap of a
    tenth of ``tol`` (``first_value`` is the first cut's value: the engine measures ν in
    its units); converged when ``U − LB ≤ tol``."""
    model = MIPModel("cbcd_block")
    u = model.add_variables("z", tr.idx.size, binary=True)
    model.add_constraints("paths", matrix=tr.forest.paths, cols=np.asarray(u.ids).ravel(),
                          upper=1.0)
    backend = prob.backend()
    extra: dict[str, Any] = {}
    if backend.name == "highs":
        extra["mip_abs_gap"] = 0.1 * tol / max(abs(first_value), 1e-8)
    opts = OAOptions(budget=budget, abs_tol=tol, rel_tol=0.0, max_iter=max_iter,
                     solver=backend, adaptive_master_gap=False, master_extra=extra)
    return OuterApproximation(_BlockObjective(blk, prob.gamma, lam * tr.a), model,
                              options=opts)


def _tree_dp(profit: FloatArray, tr: _Tree) -> tuple[float, FloatArray]:
    """max Σ profit_i u_i over the tree's antichains (the forest DP,
    :meth:`rulemip.formulations.forest.Forest.max_antichain`)."""
    return tr.forest.max_antichain(profit)
