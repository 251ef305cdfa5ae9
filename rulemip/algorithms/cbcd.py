r"""Cyclic block coordinate descent (CBCD) and regularization paths for tree pruning.

Penalized problem (4) of [PRUNE] (SPEC §4) in its profiled CIP form

.. math:: \min_z\ G(z) = q(z) + \lambda \sum_i a_i z_i,\qquad
          q(z) = \tfrac12 y^\top (I_n + \gamma \textstyle\sum_i z_i M_i M_i^\top)^{-1} y,

over binary z with the conflicts ``z_i + z_j ≤ 1`` (j a descendant of i) and no budget.
The conflicts separate by tree, so z splits into blocks ``z^t`` (nodes ``N_t`` of tree t).

**Exact block problem.**  Fix the other blocks; let ``S'`` be their selected nodes and
``B = I + γ M_{S'} M_{S'}^\top``.  With ``U ⊆ N_t`` the support of ``z^t`` and Woodbury,

.. math:: q(z) = q_0 - \tfrac12 c_U^\top (D_U^{-1}/\gamma + K_{UU})^{-1} c_U,

where ``q_0 = ½ yᵀB^{-1}y`` (the objective with ``z^t = 0``), the *partial residual*
``r = B^{-1} y = y − M_{S'} w_{S'}`` is the residual of the ridge refit of the other trees'
selected nodes alone (``w_{S'} = (I/γ + M_{S'}ᵀM_{S'})^{-1} M_{S'}ᵀ y``), ``c = M_{N_t}ᵀ r``
and ``K = M_{N_t}ᵀ B^{-1} M_{N_t} = M_{N_t}ᵀM_{N_t} − Pᵀ(I/γ + M_{S'}ᵀM_{S'})^{-1}P`` with
``P = M_{S'}ᵀ M_{N_t}``.  The block gradient is ``∂q/∂z_i = −(γ/2)(c_i − K_{iU} v)²`` with
``v = (D_U^{-1}/γ + K_{UU})^{-1} c_U``.  So the block problem is problem (5)/(6) of the
paper, ``q_r(z^t) = ½ rᵀ(I + γ Σ_{i∈N_t} z_i M_i M_iᵀ)^{-1} r + λ Σ a_i z_i``, written in
the metric ``B^{-1}`` in which the other trees' columns are already projected out: it is
the *exact* minimization of G over ``z^t``, so a point no exact update improves is
block-wise optimal for G (the paper's version, below, keeps the other trees' weights fixed
instead).  Only |N_t|-sized quantities enter the block problem.

Two kinds of block update are used.

* **Separable update (the paper's Alg. 2 block, problem (5)/(6)).**  Keep the other trees'
  weights at the current joint ridge refit: ``r = y − Σ_{s≠t} M^s w^s`` and kernel
  ``M_{N_t}ᵀM_{N_t}``.  The nodes of an antichain of one tree reach disjoint samples, so
  ``M_UᵀM_U`` is diagonal and ``q_r(u) + λaᵀu = ½‖r‖² − Σ_{i∈U}(½c_i²/(1/γ + ‖M_i‖²) −
  λa_i)`` is separable: its exact minimum over the antichains is one forest DP (no outer
  approximation needed).  It never increases G (``G(z') = min_w F(z', w) ≤ F(z', w') ≤
  F(z, w(z)) = G(z)`` for the penalized least-squares F of (4)); it is accepted only when
  G decreases.
* **Exact profiled update** (minimizes G over ``z^t``, the formula above).  Screening
  first: the cut at the current point (gradient from the global residual, no block data)
  minimized exactly over the tree's antichains by the forest DP; if that lower bound does
  not beat the current value the block is optimal.  Otherwise: for trees with at most
  ``enumeration_limit`` antichains, G is evaluated at every antichain (batched |U|×|U|
  solves); for larger trees by outer approximation over the tree's nodes, cuts
  ``ν ≥ q(u^h) + ∇q(u^h)ᵀ(u − u^h)``, master ``min ν + λ aᵀu`` over the antichains (one cut:
  the forest DP; several: a small MILP with root-to-leaf clique rows
  ``Σ_{j ∈ path} u_j ≤ 1``, which describe the antichains exactly, on the chosen backend),
  with **cut recycling** (§3.2.1): the points visited in a tree are cached in a
  :class:`CutPool`, stay feasible when the partial residual changes, and their cuts are
  re-evaluated from the new ``(c, K)`` by a |U|×|U| solve — no n-dimensional work.

**Schedule (active set, §3.2.1).**  Separable updates: two full sweeps, then sweeps over
the trees with ``z^t ≠ 0`` until they stop improving, then a full sweep, repeated until a
full sweep decreases G by at most ``tol·½‖y‖²``.  Then one sweep of exact updates
(``exact_blocks``); if it improves, back to the separable phase.  G is non-increasing over
all updates.  CBCD is a heuristic for (4): when every tree gets exact updates its result is
block-wise optimal, not a certified optimum.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.model import MIPModel
from rulemip.solvers.base import get_backend
from rulemip.solvers.result import SolveOptions

__all__ = ["CutPool", "PathModel", "PathResult", "block_update", "cbcd", "node_reach",
           "path_clique_matrix", "regularization_path"]

FloatArray = NDArray[np.float64]

_ENUM_LIMIT = 1_000       # enumerate a tree's antichains for the master up to this count
_ACCEPT = 1e-12           # relative decrease needed to accept a block update
_BLOCK_TOL = 1e-10        # relative (to ½‖y‖²) OA tolerance, enumerated masters
_BLOCK_TOL_MIP = 1e-7     # the same with MILP masters (their row tolerances are ~1e-7)
_MAX_BLOCK_ITER = 100
_MAX_BLOCK_ITER_MIP = 30


# ----------------------------------------------------------------------------- helpers
def path_clique_matrix(parent: NDArray[np.int64]) -> sp.csr_matrix:
    """Rows = root-to-leaf paths of the forest ``parent`` (−1 for roots).

    These are the maximal cliques of the conflict graph (node ~ ancestor); since that
    graph is perfect (a comparability graph), ``{u ∈ [0,1]^m : Σ_{j∈path} u_j ≤ 1}`` is
    exactly the convex hull of the antichains, and with binary u the rows are equivalent
    to the pairwise conflicts.
    """
    parent = np.asarray(parent, dtype=np.int64)
    m = parent.shape[0]
    has_child = np.zeros(m, dtype=bool)
    has_child[parent[parent >= 0]] = True
    rows: list[int] = []
    cols: list[int] = []
    for k, leaf in enumerate(np.flatnonzero(~has_child)):
        j = int(leaf)
        while j >= 0:
            rows.append(k)
            cols.append(j)
            j = int(parent[j])
    n_leaves = int((~has_child).sum())
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_leaves, m))


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


def _post_order(children: list[list[int]], roots: list[int]) -> list[int]:
    order: list[int] = []
    stack = list(roots)
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(children[i])
    return order[::-1]


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
    paths: sp.csr_matrix             # root-to-leaf rows
    children: list[list[int]]
    roots: list[int]
    post: list[int]                  # children before parents
    antichains: NDArray[np.bool_] | None
    ac_a: FloatArray | None          # cost of every enumerated antichain
    ac_groups: list[NDArray[np.int64]] | None = None  # antichains of size s as (count × s)


class _Problem:
    """Static data of problem (4) shared by every λ of a path."""

    def __init__(self, nodes: NodeMatrix, y: ArrayLike, attribute: str, gamma: float,
                 solver: str, enumeration_limit: int) -> None:
        if not (isinstance(gamma, int | float) and gamma > 0):
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
            children: list[list[int]] = [[] for _ in range(idx.size)]
            roots: list[int] = []
            for j, p in enumerate(par):
                (children[int(p)] if p >= 0 else roots).append(j)
            ac = None
            if enumeration_limit > 0:
                ac = _enumerate_antichains(children, roots, idx.size, enumeration_limit)
            at = self.a[idx]
            self.trees.append(_Tree(idx=idx, parent=par, a=at, MT=MT, MTt=sp.csr_matrix(MT.T),
                                    GT=GT, children=children, roots=roots,
                                    post=_post_order(children, roots),
                                    paths=path_clique_matrix(par), antichains=ac,
                                    ac_a=None if ac is None else ac.astype(float) @ at,
                                    ac_groups=None if ac is None else _groups(ac)))
        self.tree_of = np.empty(nodes.n_nodes, dtype=np.int64)
        for k, tr in enumerate(self.trees):
            self.tree_of[tr.idx] = k

    def backend(self) -> Any:
        if self._backend is None:
            self._backend = get_backend(self.solver)
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
    """Ridge refit on the support of a binary z: w_S, residual r and q(z)."""

    def __init__(self, prob: _Problem, z: FloatArray) -> None:
        self.S = np.flatnonzero(z > 0.5)
        if self.S.size == 0:
            self.w = np.zeros(0)
            self.r = prob.y.copy()
            self.q = 0.5 * prob.yty
            return
        MS = prob.M[:, self.S]
        H = np.asarray((MS.T @ MS).toarray(), dtype=float)
        H[np.diag_indices_from(H)] += 1.0 / prob.gamma
        self.w = sla.cho_solve(sla.cho_factor(H), prob.Mty[self.S])
        self.r = prob.y - MS @ self.w
        self.q = 0.5 * (prob.yty - float(prob.Mty[self.S] @ self.w))


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


class _Master:
    """Exact OA master ``min ν + λ aᵀu`` over a tree's antichains (module doc)."""

    def __init__(self, prob: _Problem, tr: _Tree, lam: float, q0: float) -> None:
        self.prob, self.tr, self.lam, self.q0 = prob, tr, lam, q0
        self.alpha: list[float] = []
        self.beta: list[FloatArray] = []
        self._mip: Any = None
        self.n_solves = 0

    def add(self, value: float, grad: FloatArray, u: FloatArray) -> None:
        self.alpha.append(value - float(grad @ u))
        self.beta.append(grad.copy())
        if self._mip is not None:
            self._add_row(len(self.alpha) - 1)

    def _add_row(self, h: int) -> None:
        s = self.prob.scale
        row = np.concatenate([-self.beta[h] / s, [1.0]])
        self._mip.add_rows(sp.csr_matrix(row.reshape(1, -1)),
                           np.array([(self.alpha[h] - self.q0) / s]), np.array([math.inf]))

    def solve(self) -> tuple[float, FloatArray]:
        """Return (lower bound, minimizer u)."""
        self.n_solves += 1
        tr, lam = self.tr, self.lam
        lin = lam * tr.a
        if len(self.alpha) == 1:
            best, u = _tree_dp(-(self.beta[0] + lin), tr)
            return self.alpha[0] - best, u
        if tr.antichains is not None:
            A = tr.antichains.astype(float)
            B = np.column_stack(self.beta)
            vals = np.max(A @ B + np.asarray(self.alpha), axis=1)
            assert tr.ac_a is not None
            vals = vals + lam * tr.ac_a
            j = int(np.argmin(vals))
            return float(vals[j]), A[j].copy()
        return self._solve_mip()

    def _solve_mip(self) -> tuple[float, FloatArray]:
        tr = self.tr
        k = tr.idx.size
        s = self.prob.scale
        if self._mip is None:
            model = MIPModel("cbcd_block")
            u = model.add_variables("u", k, binary=True)
            nu = model.add_variables("nu", 1, lb=-math.inf)
            ids = np.asarray(u.ids).ravel()
            model.add_constraints("paths", matrix=tr.paths, cols=ids, upper=1.0)
            model.add_objective(ids, self.lam * tr.a / s)
            model.add_objective(np.asarray(nu.ids).ravel(), np.ones(1))
            self._mip = self.prob.backend().persistent(model.to_standard_form())
            for h in range(len(self.alpha)):
                self._add_row(h)
        res = self._mip.solve(SolveOptions(mip_gap=1e-9, optimality_tol=0.0,
                                           extra={"mip_abs_gap": 0.1 * _BLOCK_TOL_MIP}))
        if res.x is None or not math.isfinite(res.bounds.dual):
            raise InvalidDataError(f"block master failed ({res.termination.value}, "
                                   f"{res.raw_status}).")
        u_new = np.clip(np.rint(res.x[:k]), 0.0, 1.0)
        return self.q0 + s * float(res.bounds.dual), u_new


# ----------------------------------------------------------------------------- CBCD
def _separable_block(prob: _Problem, k: int, fit: _Fit, z: FloatArray, lam: float
                     ) -> FloatArray:
    """Exact minimizer of the paper's block problem (5)/(6) for tree k.

    With the other trees' weights fixed at the current joint ridge refit, the partial
    residual is ``r = y − Σ_{s≠t} M^s w^s = r_fit + M_{U} w_{U}`` (U: tree t's selected
    nodes) and ``q_r(u) = ½‖r‖² − ½ c_Uᵀ(I/γ + M_UᵀM_U)^{-1}c_U`` with ``c = M_tᵀr``.  The
    nodes of an antichain of one tree reach disjoint samples, so ``M_UᵀM_U`` is diagonal and
    ``q_r(u) + λaᵀu = ½‖r‖² − Σ_{i∈U} (½ c_i²/(1/γ + ‖M_i‖²) − λ a_i)``: separable, solved
    exactly over the antichains by the forest DP.
    """
    tr = prob.trees[k]
    r = fit.r
    own = np.flatnonzero(prob.tree_of[fit.S] == k)
    if own.size:
        r = r + tr.MT[:, np.searchsorted(tr.idx, fit.S[own])] @ fit.w[own]
    c = np.asarray(tr.MTt @ r).ravel()
    gain = 0.5 * c ** 2 / (1.0 / prob.gamma + np.diag(tr.GT))
    return _tree_dp(gain - lam * tr.a, tr)[1]


def _tree_dp(profit: FloatArray, tr: _Tree) -> tuple[float, FloatArray]:
    """max Σ profit_i u_i over the tree's antichains (same recursion as
    :func:`~rulemip.algorithms.knapsack_conflicts.forest_penalized`, with the tree's
    post-order precomputed)."""
    f = np.zeros(profit.shape[0])
    take = np.zeros(profit.shape[0], dtype=bool)
    for i in tr.post:
        below = sum(f[j] for j in tr.children[i]) if tr.children[i] else 0.0
        if profit[i] > below and profit[i] > 0:
            take[i] = True
            f[i] = profit[i]
        else:
            f[i] = max(below, 0.0)
    u = np.zeros(profit.shape[0])
    stack = list(tr.roots)
    while stack:
        i = stack.pop()
        if take[i]:
            u[i] = 1.0
        else:
            stack.extend(tr.children[i])
    return float(sum(f[r] for r in tr.roots)), u


def _enumerated_block(blk: _Block, tr: _Tree, lam: float, gamma: float, u_cur: FloatArray
                      ) -> tuple[FloatArray, float]:
    """Exact block minimum by evaluating ``q0 − ½ c_Uᵀ(I/γ + K_UU)^{-1}c_U + λ a_U`` at every
    antichain U (batched solves, one batch per size)."""
    assert tr.ac_groups is not None
    best_u, best = np.zeros_like(u_cur), blk.q0
    for G in tr.ac_groups:
        KU = blk.K[G[:, :, None], G[:, None, :]]
        KU = KU + np.eye(G.shape[1]) / gamma
        cU = blk.c[G]
        v = np.linalg.solve(KU, cU[:, :, None])[:, :, 0]
        vals = blk.q0 - 0.5 * np.sum(cU * v, axis=1) + lam * tr.a[G].sum(axis=1)
        j = int(np.argmin(vals))
        if vals[j] < best:
            best = float(vals[j])
            best_u = np.zeros_like(u_cur)
            best_u[G[j]] = 1.0
    f_cur = blk.value_grad(u_cur, gamma)[0] + lam * float(tr.a @ u_cur)
    if f_cur <= best:
        return u_cur, f_cur
    return best_u, best


def _solve_block(prob: _Problem, k: int, fit: _Fit, z: FloatArray, lam: float, pool: CutPool,
                 info: dict[str, Any]) -> tuple[FloatArray, float]:
    """Exact block update of tree k (screen, then OA with recycled cuts).

    Returns the block minimizer u and the block objective ``q + λ a_tᵀu`` at it (the other
    trees' cost excluded); the current point is returned when it is block-optimal.
    """
    tr = prob.trees[k]
    btol = (_BLOCK_TOL if tr.antichains is not None else _BLOCK_TOL_MIP) * prob.scale
    u_cur = z[tr.idx].copy()
    f_cur = fit.q + lam * float(tr.a @ u_cur)
    # screening: the cut at the current point (gradient from the global residual),
    # minimized exactly over the tree's antichains by the forest DP
    g = -0.5 * prob.gamma * np.asarray(tr.MTt @ fit.r).ravel() ** 2
    lin = g + lam * tr.a
    best, u_dp = _tree_dp(-lin, tr)
    if -best >= float(lin @ u_cur) - btol:
        return u_cur, f_cur
    info["block_solves"] += 1
    blk = _block_data(prob, tr, fit.S)
    if tr.ac_groups is not None:  # few antichains: evaluate the block objective at all
        return _enumerated_block(blk, tr, lam, prob.gamma, u_cur)
    master = _Master(prob, tr, lam, blk.q0)
    seen: set[bytes] = set()
    ub, u_best = math.inf, u_cur

    def cut(u: FloatArray) -> None:
        nonlocal ub, u_best
        seen.add(u.tobytes())
        val, gr = blk.value_grad(u, prob.gamma)
        master.add(val, gr, u)
        f = val + lam * float(tr.a @ u)
        if f < ub:
            ub, u_best = f, u.copy()

    cut(u_cur)
    cut(u_dp)
    info["cuts_added"] += 1
    for p in pool.points(k):
        if p.tobytes() not in seen:
            cut(p)
            info["cuts_recycled"] += 1
    certified = False
    for _ in range(_MAX_BLOCK_ITER if tr.antichains is not None else _MAX_BLOCK_ITER_MIP):
        lb, u_new = master.solve()
        if ub - lb <= btol or u_new.tobytes() in seen:
            # bounds met (a repeated point means the master is within its tolerance)
            certified = True
            break
        cut(u_new)
        info["cuts_added"] += 1
    info["blocks_uncertified"] = info.get("blocks_uncertified", 0) + int(not certified)
    info["master_solves"] += master.n_solves
    for p in (u_best, u_dp):
        pool.add(k, p)
    return u_best, ub


def block_update(nodes: NodeMatrix, y: ArrayLike, lam: float, z: ArrayLike, tree: int, *,
                 attribute: str = "rule", gamma: float = 1.0, solver: str = "highs",
                 enumeration_limit: int = _ENUM_LIMIT) -> tuple[FloatArray, float]:
    """One exact block update (problem (5)/(6)) of tree ``tree`` (position in
    ``np.unique(nodes.tree)``) at the feasible binary ``z``.

    Returns the new z (only that tree's nodes changed) and its objective
    ``q(z) + λ Σ a_i z_i``, the minimum over that tree's feasible selections.
    """
    _check_common(lam, 1, None, 0.0)
    prob = _Problem(nodes, y, attribute, gamma, solver, enumeration_limit)
    if not 0 <= tree < len(prob.trees):
        raise InvalidParameterError(f"`tree` must be in [0, {len(prob.trees)}); got {tree}.")
    zz = np.asarray(z, dtype=float).reshape(-1).copy()
    if zz.shape[0] != nodes.n_nodes or not np.all((zz == 0) | (zz == 1)):
        raise InvalidParameterError(f"`z` must be a binary vector of length {nodes.n_nodes}.")
    prob.check_feasible(zz)
    fit = _Fit(prob, zz)
    info: dict[str, Any] = {"block_solves": 0, "cuts_added": 0, "cuts_recycled": 0,
                            "master_solves": 0}
    u, _ = _solve_block(prob, tree, fit, zz, float(lam), CutPool(), info)
    zz[prob.trees[tree].idx] = u
    return zz, _Fit(prob, zz).q + float(lam) * float(prob.a @ zz)


def _run_cbcd(prob: _Problem, lam: float, z0: FloatArray | None, max_sweeps: int,
              active_set: bool, pool: CutPool, time_limit: float | None, tol: float,
              exact_blocks: bool | None = None) -> tuple[FloatArray, float, dict[str, Any]]:
    t0 = time.perf_counter()
    m = prob.nodes.n_nodes
    z = np.zeros(m) if z0 is None else np.asarray(z0, dtype=float).reshape(-1).copy()
    if z.shape[0] != m:
        raise InvalidParameterError(f"`z0` must have {m} entries; got {z.shape[0]}.")
    if not np.all((z == 0) | (z == 1)):
        raise InvalidParameterError("`z0` must be binary (0/1).")
    prob.check_feasible(z)
    fit = _Fit(prob, z)
    obj = fit.q + lam * float(prob.a @ z)
    info: dict[str, Any] = {"sweeps": 0, "block_updates": 0, "block_solves": 0,
                            "master_solves": 0, "cuts_added": 0, "cuts_recycled": 0,
                            "accepted": 0, "converged": False, "time_limit_reached": False,
                            "exact_sweeps": 0, "blocks_uncertified": 0,
                            "objective_trace": [obj]}
    accept = _ACCEPT * prob.scale
    stol = tol * prob.scale

    def out_of_time() -> bool:
        return time_limit is not None and time.perf_counter() - t0 >= time_limit

    def update(k: int, exact: bool) -> float:
        nonlocal fit, obj
        tr = prob.trees[k]
        info["block_updates"] += 1
        u_cur = z[tr.idx].copy()
        if exact:
            u_best, f_best = _solve_block(prob, k, fit, z, lam, pool, info)
            if not f_best < fit.q + lam * float(tr.a @ u_cur) - accept:
                return 0.0
        else:
            u_best = _separable_block(prob, k, fit, z, lam)
        if np.array_equal(u_best, u_cur):
            return 0.0
        z[tr.idx] = u_best
        new_fit = _Fit(prob, z)
        new = new_fit.q + lam * float(prob.a @ z)
        if new < obj - accept:
            dec = obj - new
            fit, obj = new_fit, new
            info["accepted"] += 1
            info["objective_trace"].append(obj)
            return dec
        z[tr.idx] = u_cur  # no decrease of G: keep the current point
        return 0.0

    def sweep(ks: Sequence[int], exact: bool) -> float:
        info["sweeps"] += 1
        info["exact_sweeps"] += int(exact)
        dec = 0.0
        for k in ks:
            if out_of_time():
                info["time_limit_reached"] = True
                break
            dec += update(k, exact)
        return dec

    def stop() -> bool:
        return info["sweeps"] >= max_sweeps or bool(info["time_limit_reached"])

    all_trees = list(range(len(prob.trees)))

    def descend() -> bool:
        """Separable block updates with the active-set schedule; True when a full sweep
        made no progress."""
        for _ in range(2 if active_set else max_sweeps):
            if stop():
                return False
            if sweep(all_trees, False) <= stol:
                return True
        while active_set and not stop():
            while not stop():
                active = [k for k in all_trees if np.any(z[prob.trees[k].idx] > 0)]
                if not active or sweep(active, False) <= stol:
                    break
            if stop():
                return False
            if sweep(all_trees, False) <= stol:
                return True
        return False

    if exact_blocks is None:  # exact updates where the master can be enumerated
        exact_trees = [k for k in all_trees if prob.trees[k].antichains is not None]
    else:
        exact_trees = all_trees if exact_blocks else []
    info["exact_trees"] = len(exact_trees)
    done = False
    while not stop():
        if not descend():
            break
        if not exact_trees:
            done = True
            break
        if stop():
            break
        if sweep(exact_trees, True) <= stol and not info["time_limit_reached"]:
            done = True
            break
    info["converged"] = done and not info["time_limit_reached"]
    info["time"] = time.perf_counter() - t0
    info["objective_trace"] = tuple(info["objective_trace"])
    return z, obj, info


def _check_common(lam: float | None, max_sweeps: int, time_limit: float | None,
                  tol: float) -> None:
    if lam is not None and not (isinstance(lam, int | float) and math.isfinite(lam)
                                and lam >= 0):
        raise InvalidParameterError(f"`lam` must be >= 0; got {lam}.")
    if not (isinstance(max_sweeps, int) and max_sweeps >= 1):
        raise InvalidParameterError(f"`max_sweeps` must be a positive integer; got {max_sweeps}.")
    if time_limit is not None and not time_limit >= 0:
        raise InvalidParameterError(f"`time_limit` must be >= 0 or None; got {time_limit}.")
    if not tol >= 0:
        raise InvalidParameterError(f"`tol` must be >= 0; got {tol}.")


def cbcd(nodes: NodeMatrix, y: ArrayLike, lam: float, *, attribute: str = "rule",
         gamma: float = 1.0, z0: ArrayLike | None = None, max_sweeps: int = 100,
         active_set: bool = True, cut_pool: CutPool | None = None,
         time_limit: float | None = None, solver: str = "highs", tol: float = 1e-9,
         enumeration_limit: int = _ENUM_LIMIT, exact_blocks: bool | None = None
         ) -> tuple[FloatArray, float, dict[str, Any]]:
    r"""CBCD for problem (4): ``min q(z) + λ Σ a_i z_i`` over binary z with conflicts.

    Parameters
    ----------
    nodes : candidate nodes (:func:`~rulemip.formulations.node_matrix.extract_nodes`).
    y : (n,) response, used as given (center it for an unpenalized intercept).
    lam : penalty λ ≥ 0.
    attribute : node cost a_i: ``"rule"`` (1), ``"depth"`` (|P_i|), ``"feature"``.
    gamma : ridge parameter γ > 0.
    z0 : feasible binary warm start (default 0).
    max_sweeps : limit on sweeps (full or active-set).
    active_set : use the active-set schedule of §3.2.1 (module doc).
    cut_pool : :class:`CutPool` to recycle cuts across calls (e.g. along a path).
    time_limit : seconds; when reached the current point is returned
        (``info["time_limit_reached"]``).
    solver : backend for block masters too large to enumerate (``enumeration_limit``).
    tol : stop when a full sweep decreases the objective by at most ``tol·½‖y‖²``.
    enumeration_limit : trees with at most this many antichains get an enumerated master.
    exact_blocks : after the separable (paper) updates converge, sweep with exact profiled
        block updates (OA) until none improves.  ``None`` (default): only over trees whose
        antichains can be enumerated (``enumeration_limit``; complete trees of depth ≤ 3);
        ``True``: over all trees (MILP masters, at most 30 OA iterations per block — slow,
        ``info["blocks_uncertified"]`` counts capped blocks); ``False``: the paper's CBCD.

    Returns
    -------
    z : binary selection, block-wise optimal when ``info["converged"]`` (a heuristic for
        (4): not a certified optimum).
    objective : ``q(z) + λ Σ a_i z_i``.
    info : sweeps, block updates/solves, master solves, cuts added/recycled, accepted
        updates, ``objective_trace`` (non-increasing), time.
    """
    _check_common(lam, max_sweeps, time_limit, tol)
    prob = _Problem(nodes, y, attribute, gamma, solver, enumeration_limit)
    z_init = None if z0 is None else np.asarray(z0, dtype=float)
    return _run_cbcd(prob, float(lam), z_init, max_sweeps, active_set,
                     cut_pool if cut_pool is not None else CutPool(), time_limit, tol,
                     exact_blocks)


# ----------------------------------------------------------------------------- paths
@dataclass(frozen=True)
class PathModel:
    """One model of a regularization path (support S, ridge weights w_S)."""

    lam: float
    z: FloatArray
    support: NDArray[np.int64]
    weights: FloatArray
    objective: float
    q_value: float
    cost: float
    train_risk: float
    valid_risk: float | None


@dataclass(frozen=True)
class PathResult:
    """Distinct models along the descending λ grid (see :func:`regularization_path`)."""

    models: tuple[PathModel, ...]
    lambdas: FloatArray
    wall_time: float
    history: tuple[dict[str, Any], ...]
    lambda_max: float = math.nan


def regularization_path(nodes: NodeMatrix, y: ArrayLike, lambdas: ArrayLike | None = None, *,
                        n_lambdas: int = 50, attribute: str = "rule", gamma: float = 1.0,
                        X_valid: ArrayLike | None = None, y_valid: ArrayLike | None = None,
                        time_limit: float | None = None, solver: str = "highs",
                        lambda_min_ratio: float = 1e-3, intercept: float = 0.0,
                        max_sweeps: int = 100, active_set: bool = True, tol: float = 1e-9,
                        enumeration_limit: int = _ENUM_LIMIT, exact_blocks: bool | None = None
                        ) -> PathResult:
    r"""CBCD along a descending λ grid with warm starts and shared cut recycling.

    Default grid: ``n_lambdas`` values log-spaced from ``λ_max`` down to
    ``λ_max·lambda_min_ratio``, with ``λ_max = max_{i: a_i>0} g_i/a_i`` and
    ``g_i = q(0) − q(e_i) = ½(M_iᵀy)²/(1/γ + ‖M_i‖²)`` the gain of node i alone.  The nodes
    of an antichain of one tree reach disjoint samples, so their columns are orthogonal and,
    at z = 0, the block problem's gain of a selection U is ``Σ_{i∈U} g_i``: for λ ≥ λ_max
    every block update keeps z^t = 0 (z = 0 is block-wise optimal, CBCD's answer), and for
    λ < λ_max the first block update from 0 selects a node.  (Global optimality of z = 0 is
    proved by the tangent of the convex q only for λ ≥ max_i (γ/2)(M_iᵀy)²/a_i, which can be
    far larger.)  Nodes with ``a_i = 0`` are excluded from the maximum.  Each λ starts from
    the previous z and shares one :class:`CutPool`.

    ``X_valid``/``y_valid``: validation risk ``mean((y_valid − intercept − M_valid,S w_S)²)``
    with ``M_valid`` column i = ``μ_i·1{x in box_i}`` (:func:`node_reach`); pass ``y_valid``
    on the scale of ``y`` (``intercept`` = the training mean when y was centered).

    Returns
    -------
    PathResult : distinct supports in order of appearance; ``history`` has one entry per λ
        solved (a time limit ends the path early).
    """
    t0 = time.perf_counter()
    _check_common(None, max_sweeps, time_limit, tol)
    prob = _Problem(nodes, y, attribute, gamma, solver, enumeration_limit)
    lmax = prob.lambda_max()
    if lambdas is None:
        if not (isinstance(n_lambdas, int) and n_lambdas >= 1):
            raise InvalidParameterError(f"`n_lambdas` must be a positive integer; got {n_lambdas}.")
        if not 0 < lambda_min_ratio <= 1:
            raise InvalidParameterError(
                f"`lambda_min_ratio` must be in (0, 1]; got {lambda_min_ratio}.")
        top = lmax if lmax > 0 else 1.0
        grid = np.geomspace(top, top * lambda_min_ratio, n_lambdas)
    else:
        grid = np.asarray(lambdas, dtype=float).reshape(-1)
        if grid.size == 0 or not np.all(np.isfinite(grid)) or np.any(grid < 0):
            raise InvalidParameterError("`lambdas` must be a non-empty list of finite values >= 0.")
        grid = np.sort(grid)[::-1]
    if (X_valid is None) != (y_valid is None):
        raise InvalidParameterError("give both `X_valid` and `y_valid` or neither.")
    pool = CutPool()
    z: FloatArray | None = None
    history: list[dict[str, Any]] = []
    raw: list[tuple[float, FloatArray, float]] = []
    seen: set[bytes] = set()
    for lam in grid:
        rem = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        if rem is not None and rem <= 0:
            break
        z, obj, info = _run_cbcd(prob, float(lam), z, max_sweeps, active_set, pool, rem, tol,
                                 exact_blocks)
        entry = {k: v for k, v in info.items() if k != "objective_trace"}
        entry.update(lam=float(lam), objective=obj, n_selected=int(z.sum()))
        history.append(entry)
        key = z.tobytes()
        if key not in seen:
            seen.add(key)
            raw.append((float(lam), z.copy(), obj))
        if info["time_limit_reached"]:
            break
    oracle = TreePruningCIP(prob.M, prob.y, prob.gamma)
    Mv = None
    yv = None
    if X_valid is not None and y_valid is not None:
        yv = np.asarray(y_valid, dtype=float).reshape(-1)
        sel = [np.flatnonzero(zz) for _, zz, _ in raw]
        union = np.unique(np.concatenate(sel)).astype(np.int64) if sel else \
            np.zeros(0, dtype=np.int64)
        R = node_reach(nodes, X_valid, union)
        if R.shape[0] != yv.shape[0]:
            raise InvalidDataError("`X_valid` and `y_valid` have different numbers of rows.")
        Mv = (union, sp.csc_matrix(R @ sp.diags(nodes.mu[union])))
    models = []
    n = prob.y.shape[0]
    for lam, zz, obj in raw:
        S, w = oracle.weights(zz)
        resid = prob.y - (prob.M[:, S] @ w if S.size else 0.0)
        q = 0.5 * (prob.yty - float(prob.Mty[S] @ w)) if S.size else 0.5 * prob.yty
        vr = None
        if Mv is not None and yv is not None:
            pos = np.searchsorted(Mv[0], S)
            pred = intercept + (Mv[1][:, pos] @ w if S.size else 0.0)
            vr = float(np.mean((yv - pred) ** 2))
        cost = float(prob.a @ zz)
        models.append(PathModel(lam=lam, z=zz, support=S.astype(np.int64), weights=w,
                                objective=q + lam * cost, q_value=q, cost=cost,
                                train_risk=float(resid @ resid) / n, valid_risk=vr))
        del obj
    return PathResult(models=tuple(models), lambdas=grid, wall_time=time.perf_counter() - t0,
                      history=tuple(history), lambda_max=lmax)
