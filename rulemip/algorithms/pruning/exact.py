r"""Exact pruning of tree ensembles (Alg. 1 of [PRUNE]) with a strong start and local search.

``prune_exact`` solves CIP (2)

.. math:: \min_z\ q(z) = \tfrac12 y^\top (I_n + \gamma \textstyle\sum_i z_i M_i M_i^\top)^{-1} y
          \quad\text{s.t.}\quad z_i + z_j \le 1\ (j \in C_i),\quad
          \textstyle\sum_i a_i z_i \le K,\quad z \in \{0,1\}^m

by outer approximation on the shared engine
(:class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation`): the master
:math:`\min \nu` over the feasible set and the cuts
:math:`\nu \ge q(z^h) + \nabla q(z^h)^\top (z - z^h)` is a relaxation, so its (dual) bound
is a valid lower bound at every iteration.  On top of plain Alg. 1:

* **clique master** — the conflicts are written as one row per leaf ℓ,
  :math:`\sum_{i \in P_\ell \cup \{\ell\}} z_i \le 1` (every ancestor/descendant pair lies
  on a common root-to-leaf path, so the integer sets are equal; the conflict graph of a
  forest is perfect, so these clique rows give the stable-set polytope and a much tighter
  LP than the pairwise rows);
* **strong first cuts** — at z = 0 (whose gradient :math:`-(\gamma/2)(M_i^\top y)^2` is each
  node's linearized gain), at the singletons :math:`e_i` of the nodes with the largest
  exact single gains, at an exact-gain greedy selection and at every point of a
  swap/add local search from it;
* **continuous relaxation first** — a few Kelley iterations with LP masters
  (``relax=True``); their cuts, taken at fractional z, are valid for the integer master
  (q is convex on :math:`[0,1]^m`) and their LP bound is a valid lower-bound hint;
* **local search after each master** — the master's point is improved by exact
  swap/add moves (:mod:`~rulemip.algorithms.pruning.oracle`) and cuts are added at the
  points visited, which lowers the incumbent early and places cuts near the optimum;
* **master options** — HiGHS presolve and the feasibility-jump heuristic are off for the
  masters (presolve took 10–25 s on the dense cut rows; the heuristic overran the time
  limit; a feasible start is always passed);
* **master gap** — masters are solved to a relative gap of a quarter of the outer gap,
  tightened tenfold when the master repeats a point (the engine's rule, driven here one
  master at a time through the public ``options``/``lower_bound_hint`` attributes).

The lower bound reported is the best of: 0 (q ≥ 0), the LP-relaxation bound and the
integer masters' bounds — each valid.  The status is decided once, by the pruning
family's rule (:func:`rulemip.algorithms.pruning.driver.status_of`, what the driver's
``decide`` applies; :func:`rulemip.solvers.status.promote` underneath): q is recomputed
from the data at the incumbent
(:class:`~rulemip.formulations.tree_pruning.TreePruningCIP`), a bound that this value
refutes falls back to 0, and the status is OPTIMAL only when the outer-approximation loop
converged and the relative gap is at most ``mip_gap`` (docs/explanation/gaps.md).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

from rulemip._validation import check_nonneg_float
from rulemip.algorithms.convex.oa_relaxation import Cut, relaxation_bound, relaxation_then_integer
from rulemip.algorithms.convex.outer_approximation import OAOptions, OAResult, OuterApproximation
from rulemip.algorithms.pruning.driver import status_of
from rulemip.algorithms.pruning.oracle import PruningOracle, SelectionState
from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.forest import root_to_leaf_paths
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.formulations.protocol import RelaxationBound, SearchOutcome
from rulemip.formulations.tree_pruning import TreePruningCIP, pruning_feasible_model
from rulemip.model import MIPModel
from rulemip.solvers.base import PERSISTENT_MASTER_NEEDS, SolverBackend, resolve_backend
from rulemip.solvers.result import TerminationReason
from rulemip.solvers.status import tolerance_as_gap

__all__ = ["clique_pruning_model", "greedy_prune", "local_search_improver", "local_search_prune",
           "prune_exact"]

_GAP_FACTOR = 0.25  # masters are solved to this fraction of the outer gap
#: share of the budget the LP relaxation's outer approximation may use before the integer
#: masters (docs/architecture.md, "Time shares")
RELAXATION_SHARE = 0.25
# HiGHS master options (overridable through ``OAOptions.master_extra``): presolve spent
# 10–25 s on the dense cut rows and the feasibility-jump heuristic overran the time limit
# by 20+ s on 5 000 binaries; the master always gets a feasible start anyway.
_MASTER_DEFAULTS: dict[str, Any] = {"presolve": "off",
                                    "mip_heuristic_run_feasibility_jump": False}
FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def greedy_prune(oracle: TreePruningCIP, nodes: NodeMatrix, max_cost: float,
                 attribute: str = "rule") -> FloatArray:
    """Greedy feasible selection: add the feasible node of largest gradient gain per cost,
    accepting it only if q decreases."""
    a = nodes.attribute(attribute)  # type: ignore[arg-type]
    m = nodes.n_nodes
    z = np.zeros(m)
    blocked = np.zeros(m, dtype=bool)
    used = 0.0
    val, g = oracle.value_and_gradient(z)
    while True:
        ok = (~blocked) & (z == 0) & (used + a <= max_cost + 1e-9) & (g < 0)
        if not ok.any():
            return z
        score = np.where(ok, -g / np.maximum(a, 1.0), -np.inf)
        i = int(np.argmax(score))
        z2 = z.copy()
        z2[i] = 1.0
        v2, g2 = oracle.value_and_gradient(z2)
        blocked[i] = True
        if v2 < val - 1e-12:
            z, val, g = z2, v2, g2
            used += a[i]
            blocked[nodes.descendants[i]] = True
            p = nodes.parent[i]
            while p >= 0:
                blocked[p] = True
                p = nodes.parent[p]


def clique_pruning_model(nodes: NodeMatrix, max_cost: float | None,
                         attribute: str = "rule") -> MIPModel:
    r"""Feasible set of CIP (2) with clique conflict rows.

    Binary z, one row :math:`\sum_{i \in P_\ell \cup \{\ell\}} z_i \le 1` per leaf ℓ
    (:func:`~rulemip.formulations.forest.root_to_leaf_paths`) and, unless ``max_cost`` is
    ``None`` (the penalized problem), the budget :math:`\sum_i a_i z_i \le K`.  Same integer
    points as :func:`~rulemip.formulations.tree_pruning.pruning_feasible_model` (z_i + z_j ≤ 1
    for every ancestor/descendant pair), tighter linear relaxation: the convex hull of the
    antichains.
    """
    if max_cost is not None and not max_cost >= 0:
        raise InvalidParameterError(f"max_cost must be >= 0; got {max_cost}")
    model = MIPModel()
    z = model.add_variables("z", nodes.n_nodes, binary=True)
    ids = np.asarray(z.ids).ravel()
    model.add_constraints("paths", matrix=root_to_leaf_paths(nodes.parent), cols=ids, upper=1.0)
    if max_cost is not None:
        a = nodes.attribute(attribute)  # type: ignore[arg-type]
        model.add_constraints("budget", matrix=sp.csr_matrix(a.reshape(1, -1)), cols=ids,
                              upper=float(max_cost))
    return model


class _Conflicts:
    """Conflict counting: ``C`` is the (m, m) 0/1 matrix of i ~ j (ancestor, descendant
    or equal); node j can join S iff ``(C @ 1_S)_j = 0``."""

    def __init__(self, nodes: NodeMatrix) -> None:
        m = nodes.n_nodes
        pairs = nodes.conflict_pairs()
        r = np.concatenate([np.arange(m), pairs[:, 0], pairs[:, 1]])
        c = np.concatenate([np.arange(m), pairs[:, 1], pairs[:, 0]])
        self.C = sp.csc_matrix((np.ones(r.size), (r, c)), shape=(m, m))

    def count(self, S: IntArray) -> FloatArray:
        ind = np.zeros(self.C.shape[0])
        ind[S] = 1.0
        return np.asarray(self.C @ ind).ravel()

    def column(self, i: int) -> FloatArray:
        return np.asarray(self.C[:, [i]].toarray()).ravel()


def _spent(budget: Budget | None) -> bool:
    return budget is not None and budget.expired()


def _greedy_exact(orc: PruningOracle, conf: _Conflicts, a: FloatArray,
                  K: float, budget: Budget | None = None) -> SelectionState:
    """Add the feasible node of largest exact gain per unit cost while q decreases (and
    ``budget`` lasts: each step computes every gain, O(nnz) — 0.2 s on 40 million
    entries)."""
    st = orc.state(np.zeros(0, dtype=np.int64))
    cnt = np.zeros(orc.n_nodes)
    used = 0.0
    while True:
        if _spent(budget):
            return st
        gains = orc.add_gains(st)
        ok = (cnt == 0) & (used + a <= K + 1e-9) & (gains > 1e-12 * max(st.value, 1e-300))
        if not ok.any():
            return st
        j = int(np.argmax(np.where(ok, gains / np.maximum(a, 1.0), -np.inf)))
        new = orc.with_node(st, j)
        if not new.value < st.value:
            return st
        st = new
        cnt += conf.column(j)
        used += a[j]


def _local_search(orc: PruningOracle, conf: _Conflicts, a: FloatArray, K: float,
                  st: SelectionState, max_moves: int = 50,
                  budget: Budget | None = None) -> list[SelectionState]:
    """Best-improvement add/swap local search from ``st``; returns the states visited
    after ``st`` (each strictly better than the previous one). A spent ``budget`` ends
    it between two gain computations (a move is up to K + 1 of them), the move under
    way not taken."""
    visited: list[SelectionState] = []
    for _ in range(max_moves):
        if _spent(budget):
            break
        used = float(a[st.S].sum())
        cnt = conf.count(st.S)
        tol = 1e-10 * max(abs(st.value), 1.0)
        best_val, best_move = st.value - tol, None
        gains = orc.add_gains(st)
        ok = (cnt == 0) & (used + a <= K + 1e-9)
        if ok.any():
            j = int(np.argmax(np.where(ok, gains, -np.inf)))
            if st.value - gains[j] < best_val:
                best_val, best_move = st.value - gains[j], (-1, j)
        for k, i in enumerate(st.S):
            if _spent(budget):
                return visited
            sub = orc.without(st, k)
            g2 = orc.add_gains(sub)
            ok2 = (cnt - conf.column(int(i)) == 0) & (used - a[i] + a <= K + 1e-9)
            ok2[i] = False
            if not ok2.any():
                continue
            j = int(np.argmax(np.where(ok2, g2, -np.inf)))
            if sub.value - g2[j] < best_val:
                best_val, best_move = sub.value - g2[j], (k, j)
        if best_move is None:
            break
        k, j = best_move
        base = st if k < 0 else orc.without(st, k)
        new = orc.with_node(base, j)
        if not new.value < st.value - tol:
            break
        st = new
        visited.append(st)
    return visited


def _neighbours(orc: PruningOracle, conf: _Conflicts, a: FloatArray, K: float,
                st: SelectionState, per_swap: int = 2) -> list[IntArray]:
    """Best swap neighbours of ``st``: for each i ∈ S the ``per_swap`` feasible j of
    largest exact gain on S minus i (the points the master would otherwise propose one at
    a time)."""
    out: list[IntArray] = []
    used = float(a[st.S].sum())
    cnt = conf.count(st.S)
    for k, i in enumerate(st.S):
        sub = orc.without(st, k)
        g2 = orc.add_gains(sub)
        ok2 = (cnt - conf.column(int(i)) == 0) & (used - a[i] + a <= K + 1e-9)
        ok2[i] = False
        cand = np.flatnonzero(ok2)
        for j in cand[np.argsort(-g2[cand], kind="stable")[:per_swap]]:
            out.append(np.append(sub.S, j))
    return out


def local_search_prune(nodes: NodeMatrix, y: FloatArray, max_cost: float, *,
                       attribute: str = "rule", gamma: float = 1.0,
                       z: FloatArray | None = None,
                       budget: Budget | None = None) -> tuple[FloatArray, float]:
    """Exact-gain greedy (or the binary ``z``) improved by add/swap local search, both
    stopped by ``budget`` (None: unlimited) between two gain computations.

    Returns the 0/1 selection and its value q; a heuristic (no bound).
    """
    orc = PruningOracle(nodes.M, y, gamma)
    conf = _Conflicts(nodes)
    a = nodes.attribute(attribute)  # type: ignore[arg-type]
    st = (_greedy_exact(orc, conf, a, float(max_cost), budget) if z is None
          else orc.state(np.flatnonzero(np.asarray(z) > 0.5)))
    seq = _local_search(orc, conf, a, float(max_cost), st, budget=budget)
    best = seq[-1] if seq else st
    return orc.point(best.S), best.value


def local_search_improver(nodes: NodeMatrix, y: FloatArray, max_cost: float, *,
                          attribute: str = "rule", gamma: float = 1.0,
                          budget: Budget | None = None) -> Callable[[IntArray], IntArray]:
    """The add/swap local search of :func:`local_search_prune` as a function from a
    feasible selection (node indices) to the improved one, its oracle and conflict
    matrix built once (a branch and bound calls it many times); a spent ``budget`` ends
    it between two gain computations."""
    orc = PruningOracle(nodes.M, y, gamma)
    conf = _Conflicts(nodes)
    a = nodes.attribute(attribute)  # type: ignore[arg-type]

    def improve(S: IntArray) -> IntArray:
        st = orc.state(np.asarray(S, dtype=np.int64))
        seq = _local_search(orc, conf, a, float(max_cost), st, budget=budget)
        return np.asarray((seq[-1] if seq else st).S, dtype=np.int64)

    return improve


def prune_exact(nodes: NodeMatrix, y: FloatArray, max_cost: float, *,
                attribute: str = "rule", gamma: float = 1.0,
                options: OAOptions | None = None, n_single: int | None = None,
                relax_iterations: int = 100, local_search: bool = True,
                clique: bool = True, n_neighbours: int = 2, mip_gap: float | None = None,
                budget: Budget | None = None) -> tuple[OAResult, TreePruningCIP]:
    r"""Exact Alg. 1 on CIP (2) (module docstring); ``y`` is used as given.

    Parameters
    ----------
    nodes : candidate rules (:func:`~rulemip.formulations.node_matrix.extract_nodes`).
    y : (n,) response; center it for an unpenalized intercept.  Only
        :math:`\gamma \|M_i\|^2` matters for the difficulty (scaling y by c scales M by c
        and q by c²), see ``docs/benchmarks/pruning.md``.
    max_cost : budget K of :math:`\sum_i a_i z_i \le K`.
    attribute : "rule", "depth" or "feature" (the cost a_i).
    gamma : ridge parameter γ > 0.
    options : engine options; ``max_iter`` counts integer masters; without ``mip_gap``
        the loop stops at ``U − LB ≤ abs_tol + rel_tol·|U|`` and certifies at that
        tolerance; time and work come from ``budget`` (or ``options.budget``).
    n_single : number of singleton cuts :math:`e_i` (largest exact single gains);
        default ``min(m, 2K + 10)``.
    relax_iterations : LP-master iterations of the continuous relaxation run first (0: none).
    local_search : improve every master point by swap/add local search (and cut there).
    clique : clique (root-to-leaf path) conflict rows; ``False`` uses pairwise rows.
    n_neighbours : cuts at the ``n_neighbours`` best swap neighbours per selected node of
        the heuristic solution (0: none).
    mip_gap : relative gap at which the result is certified optimal (the loop then stops
        at ``U − LB ≤ mip_gap·|U|``; ``options.rel_tol``/``abs_tol`` are ignored); ``None``:
        the tolerance of ``options``.
    budget : the fit's :class:`~rulemip.budget.Budget` (every phase asks it; None:
        ``options.budget``, else unlimited).

    Returns
    -------
    (OAResult, TreePruningCIP) — the result (``value`` is q recomputed at ``z``; status,
    bound and gap decided by :func:`~rulemip.algorithms.pruning.driver.status_of`, the
    pruning driver's rule; its history has one
    entry per integer master, every ``lb`` there a valid lower bound) and the oracle of (2).

    Notes
    -----
    The dense linear algebra is on |S| × m blocks (|S| ≤ K): BLAS runs single-threaded
    here, which was ~10× faster than threaded BLAS on a loaded 2-core machine.
    """
    with threadpool_limits(limits=1, user_api="blas"):
        opts = options if options is not None else OAOptions()
        if mip_gap is not None:
            check_nonneg_float(mip_gap, "mip_gap")
            opts = dataclasses.replace(opts, rel_tol=float(mip_gap), abs_tol=0.0)
        clock = Budget.coerce(budget if budget is not None else opts.budget, None)
        opts = dataclasses.replace(opts, budget=clock)
        res, cip = _prune_exact(nodes, y, max_cost, attribute, gamma, opts, n_single,
                                relax_iterations, local_search, clique, n_neighbours)
        tol = opts.rel_tol if mip_gap is None else float(mip_gap)
        return _certified(res, cip, tol, opts.abs_tol), cip


def _certified(res: OAResult, cip: TreePruningCIP, rel_tol: float, abs_tol: float
               ) -> OAResult:
    """The result with its status decided by the pruning family's rule
    (:func:`rulemip.algorithms.pruning.driver.status_of`, the rule of its ``decide``) on q
    recomputed from the data at the incumbent (fallback bound 0: q ≥ 0), at the loop's
    tolerance ``abs_tol + rel_tol·q`` written as a relative gap."""
    if res.termination is TerminationReason.INFEASIBLE or res.z is None:
        return res
    q = cip.value(res.z)
    outcome = SearchOutcome(x=res.z, lower_bound=res.lower_bound, finished=res.converged,
                            limit=res.limit)
    verdict = status_of(q, outcome, mip_gap=tolerance_as_gap(rel_tol, abs_tol, q),
                        safe_bound=0.0, warn=True)
    return dataclasses.replace(res, value=q, lower_bound=verdict.lower_bound, gap=verdict.gap,
                               termination=verdict.termination, limit=verdict.limit,
                               notes=res.notes + verdict.notes)


class _PruningRelaxation:
    """The :class:`~rulemip.formulations.protocol.RelaxationHook` of CIP (2): LP masters
    over the clique rows from the start's cuts, at most ``iterations`` of them, in a
    quarter of the budget (:func:`~rulemip.algorithms.convex.oa_relaxation.relaxation_bound`)."""

    def __init__(self, oracle: PruningOracle, feasible: MIPModel, first: list[Cut],
                 options: OAOptions, iterations: int) -> None:
        self.oracle, self.feasible, self.first = oracle, feasible, first
        self.options, self.iterations = options, int(iterations)
        self.done_at = math.nan  # perf_counter() when the relaxation ended (for a note)

    def relaxation(self, built: Any, *, backend: SolverBackend, budget: Budget, seed: int = 0,
                   threads: int | None = None) -> RelaxationBound:
        lp_opts = dataclasses.replace(self.options, max_iter=self.iterations, callback=None,
                                      adaptive_master_gap=False,
                                      budget=budget.fraction(RELAXATION_SHARE))
        rel = relaxation_bound(self.oracle, self.feasible, lp_opts, hint=0.0,
                               seeds=self.first)
        self.done_at = time.perf_counter()
        return rel


def _prune_exact(nodes: NodeMatrix, y: FloatArray, max_cost: float, attribute: str,
                 gamma: float, opts: OAOptions, n_single: int | None,
                 relax_iterations: int, local_search: bool, clique: bool,
                 n_neighbours: int) -> tuple[OAResult, TreePruningCIP]:
    clock = opts.budget
    assert clock is not None
    t0 = time.perf_counter()
    cip = TreePruningCIP(nodes.M, y, gamma)
    orc = PruningOracle(nodes.M, y, gamma)
    a = nodes.attribute(attribute)  # type: ignore[arg-type]
    K = float(max_cost)
    feas = (clique_pruning_model(nodes, K, attribute) if clique
            else pruning_feasible_model(nodes, K, attribute))
    conf = _Conflicts(nodes)
    m = nodes.n_nodes
    # the master's backend, resolved once for the relaxation and the integer masters
    backend = resolve_backend(opts.solver, PERSISTENT_MASTER_NEEDS,
                              outer_approximation=False)[0]
    opts = dataclasses.replace(opts, solver=backend)

    # ---- heuristic start and the first cut set (all at feasible binary points)
    start: list[FloatArray] = [np.zeros(m)]
    single = 0.5 * orc.Mty ** 2 / (1.0 / orc.gamma + orc.colsq)  # exact q(0) − q(e_i)
    n_single = min(m, 2 * int(K) + 10) if n_single is None else min(m, max(int(n_single), 0))
    cand = np.flatnonzero((a <= K + 1e-9) & (single > 0))
    top = cand[np.argsort(-single[cand], kind="stable")[:n_single]]
    start.extend(orc.point(np.array([i])) for i in top)
    greedy = _greedy_exact(orc, conf, a, K, clock)
    start.append(orc.point(greedy.S))
    best = greedy
    if local_search:
        seq = _local_search(orc, conf, a, K, greedy, budget=clock)
        start.extend(orc.point(s.S) for s in seq)
        best = seq[-1] if seq else greedy
    if n_neighbours > 0 and best.S.size:
        start.extend(orc.point(S) for S in _neighbours(orc, conf, a, K, best, n_neighbours))
    first = [(z, *orc.value_and_gradient(z)) for z in start]
    notes: list[str] = [f"start: {len(first)} cuts, heuristic value {best.value:.10g}, "
                        f"{time.perf_counter() - t0:.2f} s"]

    # ---- continuous relaxation by LP masters (cuts and a bound, both valid for (2)), then
    # the integer masters (master gaps from the outer gap, local search from every new
    # master point): seed cuts → relaxation → integer OA, oa_relaxation.py
    relaxation = _PruningRelaxation(orc, feas, first, opts, relax_iterations) \
        if relax_iterations > 0 and not clock.expired() else None

    def local_search_hook(zh: FloatArray) -> list[FloatArray]:
        return [orc.point(st.S) for st in _local_search(
            orc, conf, a, K, orc.state(np.flatnonzero(zh > 0.5)), budget=clock)]

    def seed_cuts(oa: OuterApproximation) -> None:
        for z, v, g in first:
            oa.add_cut(v, g, z)

    int_opts = dataclasses.replace(
        opts, adaptive_master_gap=True, master_gap_from_bounds=True, gap_factor=_GAP_FACTOR,
        master_extra={**_MASTER_DEFAULTS, **opts.master_extra})
    last, rel = relaxation_then_integer(
        relaxation, None, orc, feas, int_opts, hint=0.0,  # q ≥ 0: I + γ Σ z_i M_i M_iᵀ ≻ 0
        seed_cuts=seed_cuts, backend=backend, budget=clock, threads=opts.threads,
        seed=opts.seed, relaxed_cuts_first=False,
        heuristic=local_search_hook if local_search else None)
    if rel is not None and relaxation is not None:
        notes.append(f"LP relaxation: {rel.iterations} LP masters, bound {rel.bound:.10g}, "
                     f"{relaxation.done_at - t0:.2f} s")
    res = dataclasses.replace(last, wall_time=time.perf_counter() - t0,
                              notes=tuple(notes) + last.notes)
    return res, cip
