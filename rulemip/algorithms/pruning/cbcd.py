r"""Cyclic block coordinate descent (CBCD) and regularization paths for tree pruning.

Penalized problem (4) of [PRUNE] (docs/explanation/tree_pruning.md) in its profiled CIP form

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
  ``ν ≥ f(u^h) + ∇f(u^h)ᵀ(u − u^h)`` of ``f = q + λ aᵀu``, master ``min ν`` over the
  antichains (a small MILP with root-to-leaf clique rows ``Σ_{j ∈ path} u_j ≤ 1``, which
  describe the antichains exactly; the loop is the shared
  :class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation` engine),
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
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from rulemip._validation import is_real as _real
from rulemip.algorithms.pruning.cbcd_model import (
    _BLOCK_TOL_MIP,
    CutPool,
    _Block,
    _block_data,
    _block_master,
    _Fit,
    _Problem,
    _Tree,
    _tree_dp,
    node_reach,
    path_clique_matrix,
)
from rulemip.budget import Budget
from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.formulations.forest import ridge_refit
from rulemip.formulations.node_matrix import NodeMatrix

__all__ = ["CutPool", "PathModel", "PathResult", "block_update", "cbcd", "node_reach",
           "path_clique_matrix", "regularization_path"]

FloatArray = NDArray[np.float64]

_ACCEPT = 1e-12           # relative decrease needed to accept a block update
_BLOCK_TOL = 1e-10        # relative (to ½‖y‖²) OA tolerance, enumerated masters
_ENUM_LIMIT = 1_000       # enumerate a tree's antichains for the master up to this count
_MAX_BLOCK_ITER_MIP = 30


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
                 info: dict[str, Any], budget: Budget) -> tuple[FloatArray, float]:
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
    seeds = [u_cur, u_dp, *pool.points(k)]
    values = [blk.value_grad(u, prob.gamma) for u in seeds]
    f0 = values[0][0] + lam * float(tr.a @ u_cur)
    oa = _block_master(prob, tr, blk, lam, budget, btol, _MAX_BLOCK_ITER_MIP, f0)
    seen: set[bytes] = set()
    for j, (u, (val, gr)) in enumerate(zip(seeds, values, strict=True)):
        if u.tobytes() in seen:
            continue
        seen.add(u.tobytes())
        oa.add_cut(val + lam * float(tr.a @ u), gr + lam * tr.a, u)
        info["cuts_recycled"] += int(j >= 2)
    n_seeded = oa.n_cuts
    res = oa.run()
    info["cuts_added"] += 1 + oa.n_cuts - n_seeded
    info["blocks_uncertified"] = info.get("blocks_uncertified", 0) + int(not res.converged)
    info["master_solves"] += res.iterations
    u_best = u_cur if res.z is None else np.rint(res.z)
    ub = res.value if res.z is not None else f_cur
    for p in (u_best, u_dp):
        pool.add(k, p)
    return u_best, ub


def block_update(nodes: NodeMatrix, y: ArrayLike, lam: float, z: ArrayLike, tree: int, *,
                 attribute: str = "rule", gamma: float = 1.0, solver: str = "auto",
                 enumeration_limit: int = _ENUM_LIMIT) -> tuple[FloatArray, float]:
    """One exact block update (problem (5)/(6)) of tree ``tree`` (position in
    ``np.unique(nodes.tree)``) at the feasible binary ``z``.

    Returns the new z (only that tree's nodes changed) and its objective
    ``q(z) + λ Σ a_i z_i``, the minimum over that tree's feasible selections.
    """
    _check_common(lam, 1, 0.0)
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
    u, _ = _solve_block(prob, tree, fit, zz, float(lam), CutPool(), info, Budget.unlimited())
    zz[prob.trees[tree].idx] = u
    return zz, _Fit(prob, zz).q + float(lam) * float(prob.a @ zz)


def _run_cbcd(prob: _Problem, lam: float, z0: FloatArray | None, max_sweeps: int,
              active_set: bool, pool: CutPool, budget: Budget, tol: float,
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
        return budget.expired()

    def update(k: int, exact: bool) -> float:
        nonlocal fit, obj
        tr = prob.trees[k]
        info["block_updates"] += 1
        u_cur = z[tr.idx].copy()
        if exact:
            u_best, f_best = _solve_block(prob, k, fit, z, lam, pool, info, budget)
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


def _check_common(lam: float | None, max_sweeps: int, tol: float) -> None:
    if lam is not None and not (_real(lam) and math.isfinite(lam)
                                and lam >= 0):
        raise InvalidParameterError(f"`lam` must be >= 0; got {lam}.")
    if not (isinstance(max_sweeps, int) and max_sweeps >= 1):
        raise InvalidParameterError(f"`max_sweeps` must be a positive integer; got {max_sweeps}.")
    if not tol >= 0:
        raise InvalidParameterError(f"`tol` must be >= 0; got {tol}.")


def cbcd(nodes: NodeMatrix, y: ArrayLike, lam: float, *, attribute: str = "rule",
         gamma: float = 1.0, z0: ArrayLike | None = None, max_sweeps: int = 100,
         active_set: bool = True, cut_pool: CutPool | None = None,
         solver: str = "auto", tol: float = 1e-9,
         enumeration_limit: int = _ENUM_LIMIT, exact_blocks: bool | None = None,
         budget: Budget | None = None) -> tuple[FloatArray, float, dict[str, Any]]:
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
    solver : backend for block masters too large to enumerate (``enumeration_limit``);
        ``"auto"``: the first installed backend that serves a persistent MILP master.
    tol : stop when a full sweep decreases the objective by at most ``tol·½‖y‖²``.
    enumeration_limit : trees with at most this many antichains get an enumerated master.
    budget : the fit's :class:`~rulemip.budget.Budget` (None: unlimited). When it ends the
        current point is returned (``info["time_limit_reached"]``).
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
    _check_common(lam, max_sweeps, tol)
    prob = _Problem(nodes, y, attribute, gamma, solver, enumeration_limit)
    z_init = None if z0 is None else np.asarray(z0, dtype=float)
    return _run_cbcd(prob, float(lam), z_init, max_sweeps, active_set,
                     cut_pool if cut_pool is not None else CutPool(),
                     Budget.coerce(budget, None), tol, exact_blocks)


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
                        solver: str = "auto",
                        lambda_min_ratio: float = 1e-3, intercept: float = 0.0,
                        max_sweeps: int = 100, active_set: bool = True, tol: float = 1e-9,
                        enumeration_limit: int = _ENUM_LIMIT, exact_blocks: bool | None = None,
                        budget: Budget | None = None) -> PathResult:
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

    The fit's ``budget`` covers the whole path; every sweep asks the same
    :class:`~rulemip.budget.Budget`.

    Returns
    -------
    PathResult : distinct supports in order of appearance; ``history`` has one entry per λ
        solved (a time limit ends the path early).
    """
    t0 = time.perf_counter()
    _check_common(None, max_sweeps, tol)
    clock = Budget.coerce(budget, None)
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
        if clock.expired():
            break
        z, obj, info = _run_cbcd(prob, float(lam), z, max_sweeps, active_set, pool, clock,
                                 tol, exact_blocks)
        entry = {k: v for k, v in info.items() if k != "objective_trace"}
        entry.update(lam=float(lam), objective=obj, n_selected=int(z.sum()))
        history.append(entry)
        key = z.tobytes()
        if key not in seen:
            seen.add(key)
            raw.append((float(lam), z.copy(), obj))
        if info["time_limit_reached"]:
            break
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
        fit = ridge_refit(prob.M, prob.y, prob.gamma, zz, Mty=prob.Mty, yty=prob.yty)
        S, w, resid, q = fit.S, fit.w, fit.r, fit.value
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
