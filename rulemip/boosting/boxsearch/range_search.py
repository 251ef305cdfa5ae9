r"""Exact box search by branch and bound over threshold ranges (the compiled kernel of
:mod:`rulemip.boosting.boxsearch.kernel`; docs/explanation/box_search.md).

:func:`box_search` maximizes a round objective over every box of a
:class:`~rulemip.boosting.space.SearchSpace` — conjunctions of ``x_j > t`` and
``x_j <= t`` with candidate thresholds ``t`` on at most ``max_rule_length`` features — and
returns the best box with a valid upper bound on every box. It is the exact rule search
of boosting (``search="bnb"``), the pricing of column generation, the one-rule exact fit
and the swap step of the exact engines' local search.

Memory: the masks take ``Σ_j (m_j + 1) · n / 8`` bytes, a node ``16 d + 36``. The pool
of nodes grows up to ``max_memory``; beyond it new nodes are searched depth first (the
stack's depth is bounded, module doc of the kernel), so a search never exceeds its budget
and never stops for memory.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.boosting.boxsearch import kernel as K
from rulemip.boosting.boxsearch.pool import NodePool, Pace
from rulemip.boosting.boxsearch.split_search import split_search
from rulemip.boosting.objectives import (
    ExtremeBoosting,
    GradientBoosting,
    GradientSum,
    OrthogonalBoosting,
    RidgeGain,
    RoundObjective,
)
from rulemip.boosting.space import SearchResult, SearchSpace
from rulemip.budget import Budget, ResourceLimitError
from rulemip.exceptions import InvalidParameterError
from rulemip.parallel import current_workers, resolve_n_jobs

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.intp]

__all__ = ["KernelProblem", "box_search", "kernel_problem", "mask_bytes"]

#: relative pruning tolerance: a node is closed when its bound is at most
#: ``best (1 + RTOL)`` — the reported bound includes it
RTOL: float = 1e-12
#: node slots of a fresh pool; it grows fourfold up to the memory budget
INITIAL_SLOTS: int = 4096
#: seconds between two progress reports
PROGRESS_EVERY: float = 2.0

ProgressCallback = Callable[[int, float, float], None]

@dataclass(frozen=True)
class KernelProblem:
    """The objective in the kernel's terms: statistics ``S`` (n, c) in key order, the
    permutation ``perm`` (row ``r`` of ``S`` is data row ``perm[r]``), and the
    parameters of :mod:`rulemip.boosting.boxsearch.kernel`."""

    S: FloatArray
    perm: IntArray
    params: FloatArray
    mode: int


def kernel_problem(obj: RoundObjective) -> KernelProblem:
    """Translate a round objective into the kernel's form (module docstring of the
    kernel): ``F = |G| / sqrt(c0 + c1 H + c2 H²)`` for gs, gb, xgb and the ridge gain,
    the orthogonal objective with its own valid bound."""
    st = np.asarray(obj.stats, dtype=float)
    n = st.shape[0]
    tiny, eps, gnorm, cint = 0.0, 0.0, math.inf, 0.0
    if isinstance(obj, GradientSum):
        S = np.column_stack([st[:, 0], np.ones(n)])
        c, mode = (1.0, 0.0, 0.0), K.MODE_RATIO
    elif isinstance(obj, GradientBoosting):
        S, c, mode = st[:, :2], (0.0, 1.0, 0.0), K.MODE_RATIO
    elif isinstance(obj, ExtremeBoosting):
        S, c, mode = st[:, :2], (float(obj.lam2), 1.0, 0.0), K.MODE_RATIO
    elif isinstance(obj, RidgeGain):
        c2 = -1.0 / obj.total if math.isfinite(obj.total) else 0.0
        S, c, mode = st[:, :2], (float(obj.lam), 1.0, c2), K.MODE_RATIO
        tiny = 1e-12 * max(1.0, obj.total if math.isfinite(obj.total) else 1.0)
    elif isinstance(obj, OrthogonalBoosting):
        # constant basis columns (the intercept) enter the kernel exactly as c_int W²
        w = st[:, 1]
        keep = [0, 1]
        for k in range(2, st.shape[1]):
            ratio = np.divide(st[:, k], w, out=np.zeros(n), where=w > 0)[w > 0]
            if len(ratio) and np.ptp(ratio) <= 1e-12 * max(1e-300, np.abs(ratio).max()):
                cint += float(ratio[0]) ** 2
            else:
                keep.append(k)
        S, c, mode = st[:, keep], (0.0, 0.0, 0.0), K.MODE_OGB
        eps, gnorm = float(obj.epsilon), float(obj.g_norm)
    else:
        raise InvalidParameterError(
            f"the box search has no kernel for objective {type(obj).__name__!r}.")
    h = S[:, 1]
    key = np.divide(S[:, 0], h, out=np.zeros(n), where=h > 0)
    perm = np.argsort(-key, kind="stable").astype(np.intp)
    w0 = 0.0   # equal row weights: orthogonal boosting's size bound applies
    if mode == K.MODE_OGB and n and np.ptp(S[:, 1]) <= 1e-12 * abs(S[0, 1]) and S[0, 1] > 0:
        w0 = float(S[0, 1])
    params = np.array([c[0], c[1], c[2], tiny, eps, gnorm, RTOL, cint, w0])
    return KernelProblem(np.ascontiguousarray(S[perm]), perm, params, mode)


def mask_bytes(space: SearchSpace) -> int:
    """Bytes of the prefix masks of ``space``."""
    return mask_bytes_of(space.n, space.thresholds)


def mask_bytes_of(n_rows: int, thresholds: Any) -> int:
    """Bytes of the prefix masks of a search over ``n_rows`` rows with these thresholds
    per feature: one mask of ⌈n/64⌉ words per threshold and feature end."""
    words = (int(n_rows) + 63) // 64
    return int(sum(len(t) + 1 for t in thresholds) * words * 8)


def _depth_bound(space: SearchSpace) -> int:
    """Branchings on one path: every range is split at most ``log2(n) + 2`` times
    (each child keeps at most half of the range's undecided rows)."""
    return 2 * space.d * (int(math.log2(max(space.n, 2))) + 2) + 8


def box_search(space: SearchSpace, obj: RoundObjective, *, allow_empty: bool = False,
               max_rule_length: int | None = None,
               node_limit: int | None = None, max_memory: int | None = None,
               progress: ProgressCallback | None = None,
               incumbent: float | None = None,
               length_counts: str = "features",
               max_propositions: int | None = None,
               budget: Budget | None = None, n_jobs: int | None = None,
               scheduler: Any = None) -> SearchResult | None:
    """The box maximizing ``obj`` over ``space``, with a valid bound on every box.

    Parameters
    ----------
    allow_empty : the box without propositions (covering every row) is a candidate.
    max_rule_length : at most this many restricted features (None: unlimited) — the one
        meaning of ``max_rule_length`` in rulemip (a two-sided interval ``a < x_j <= b``
        is one feature, as rules are printed).
    max_propositions : at most this many propositions ``x_j <= t`` / ``x_j > t`` (an
        interval counts two; None: unlimited); both caps hold when both are given.
    length_counts : ``"features"`` (default); ``"propositions"`` reads
        ``max_rule_length`` as ``max_propositions`` (the older convention).
    budget : the fit's :class:`~rulemip.budget.Budget` (None: unlimited); the search
        stops with its best box and ``status="time_limit"`` at its deadline
        (``"work_limit"`` when its work is spent).
    node_limit : at most this many node expansions (``status="node_limit"``).
    max_memory : bytes for the masks and the node pool (None: :func:`default_max_memory`);
        masks beyond it (:func:`mask_bytes`: every threshold's prefix mask over the rows)
        raise :class:`~rulemip.budget.ResourceLimitError` before anything is allocated.
    progress : ``progress(n_evaluated, best_value, bound)`` about every 2 s.
    incumbent : a value known to be reached (a claimed optimum to re-check): nodes whose
        bound does not exceed it are closed, and the returned ``bound`` is at least it.
        The returned box beats it when one does (else it is the best box with one bound).
    n_jobs : threads that search independent subtrees (-1: one per core; None: the
        enclosing :func:`rulemip.parallel.search_workers`, else 1). With ``n_jobs != 1`` or a
        ``scheduler`` the search is split (:mod:`rulemip.boosting.boxsearch.split_search`):
        the result does not depend on the number of workers, and a finished search returns
        the serial search's optimum and bound.
    scheduler : a Dask scheduler address or ``Client``: the same split on a cluster.

    Returns
    -------
    :class:`~rulemip.boosting.space.SearchResult` (``n_expanded``: branchings,
    ``n_children``: node evaluations), or ``None`` when no box is a candidate (no
    thresholds and ``allow_empty=False``, or ``max_rule_length`` excludes all).
    """
    if length_counts not in ("propositions", "features"):
        raise InvalidParameterError("`length_counts` must be 'propositions' or 'features'; "
                                    f"got {length_counts!r}.")
    if length_counts == "propositions" and max_rule_length is not None:
        props = int(max_rule_length)
        max_propositions = props if max_propositions is None else min(props,
                                                                      int(max_propositions))
        max_rule_length = None
    start = time.perf_counter()  # wall time for the report; the deadline is ``clock``'s
    clock = Budget.coerce(budget, None)
    memory = clock.search_memory(max_memory)
    masks = mask_bytes(space)
    if masks > memory:   # refused before any allocation (find_rule falls back instead)
        raise ResourceLimitError(
            f"the range search's prefix masks need {masks / 2**30:.1f} GiB "
            f"({sum(len(t) + 1 for t in space.thresholds)} thresholds × {space.n} rows), "
            f"over the search's memory budget of {memory / 2**30:.1f} GiB. Use fewer "
            "thresholds (`max_thresholds`), raise `max_memory`, or search with "
            "`find_rule(search=\"bnb\")`, which falls back to the set enumeration.")
    prob = kernel_problem(obj)
    d = space.d
    m = np.array([len(t) for t in space.thresholds], np.int64)
    G = np.ascontiguousarray(space.groups_t.T[prob.perm], dtype=np.int32)
    LE, off, valid = K.build_masks(G, m)
    reserve = _depth_bound(space)
    per_node = NodePool.node_bytes(d)
    max_slots = max(reserve + 16, (memory - LE.nbytes) // per_node)
    pool = NodePool(int(min(INITIAL_SLOTS, max_slots)), d, reserve)
    iparams = np.array([prob.mode, int(allow_empty),
                        -1 if max_rule_length is None else int(max_rule_length),
                        int(pool.slots < max_slots), reserve,
                        -1 if max_propositions is None else int(max_propositions)], np.int64)
    ctr = np.zeros(6, np.int64)
    fstate = np.array([-np.inf, -np.inf])
    best_box = np.full((2, d), -1, np.int32)
    _seed_single(space, obj, m, fstate, best_box)
    if incumbent is not None and incumbent > fstate[K.F_BEST]:
        fstate[K.F_BEST] = float(incumbent)
    K.init_root(pool.pool, pool.bound, pool.splits, pool.heap, pool.free, ctr, fstate,
                best_box, LE, off, m, valid, prob.S, prob.params, iparams)
    if n_jobs is None and scheduler is None:
        n_jobs, scheduler = current_workers()
    workers = resolve_n_jobs(n_jobs)
    if workers != 1 or scheduler is not None:
        # the budget's work left caps the split search's branchings as it caps the serial
        # loop's (a branching is a unit of work), and they are charged to it afterwards
        expanded0 = int(ctr[K.C_EXPANDED])
        limit = node_limit
        work = clock.work_left()
        if work is not None:
            cap = expanded0 + work
            limit = cap if node_limit is None else min(int(node_limit), cap)
        status, bound, n_exp, n_ev, peak = split_search(
            pool, ctr, fstate, best_box, (LE, off, m, valid, prob.S, prob.params), iparams,
            max_slots=int(max_slots), reserve=reserve, initial_slots=INITIAL_SLOTS,
            per_node=per_node, clock=clock, node_limit=limit, n_jobs=workers,
            scheduler=scheduler, progress=progress)
        clock.charge(n_exp - expanded0)
        if status == "node_limit" and limit != node_limit and (
                node_limit is None or n_exp < int(node_limit)):
            status = "work_limit"
        if not np.isfinite(fstate[K.F_BEST]):
            return None
        lower, upper, q, length = _decode(space, best_box, m)
        value = float(obj.value(q)) if q.any() or allow_empty else 0.0
        return SearchResult(lower, upper, q, value, length, status == "optimal", n_exp, n_ev,
                            max(bound, value), status, time.perf_counter() - start,
                            peak + LE.nbytes)
    status = "optimal"
    pace = Pace()     # evaluations per kernel call: ~CALL_SECONDS each, the clock between
    last_report = time.perf_counter()
    while True:
        t0 = time.perf_counter()
        evals = pace.evals
        if clock.expired():
            status = f"{clock.stop_reason()}_limit"
            break
        if node_limit is not None:
            left = int(node_limit) - int(ctr[K.C_EXPANDED])
            if left <= 0:
                status = "node_limit"
                break
            evals = min(evals, 2 * left)
        work = clock.work_left()
        if work is not None:        # a branching is a unit of work: stop at the same node
            evals = min(evals, 2 * work)
        expanded = int(ctr[K.C_EXPANDED])
        st = K.run(pool.pool, pool.bound, pool.splits, pool.heap, pool.free, pool.dfs, ctr,
                   fstate, best_box, LE, off, m, valid, prob.S, prob.params, iparams, evals)
        clock.charge(int(ctr[K.C_EXPANDED]) - expanded)
        now = time.perf_counter()
        if progress is not None and now - last_report >= PROGRESS_EVERY:
            last_report = now
            progress(int(ctr[K.C_EVALS]), float(fstate[K.F_BEST]), _bound(pool, ctr, fstate))
        if st == K.ST_DONE:
            break
        if st == K.ST_GROW:
            new = int(min(max_slots, 4 * pool.slots))
            pool.grow(new, ctr)
            iparams[K.I_CAN_GROW] = int(pool.slots < max_slots)
            continue
        pace.update(now - t0)
    if not np.isfinite(fstate[K.F_BEST]):
        return None
    bound = _bound(pool, ctr, fstate)
    lower, upper, q, length = _decode(space, best_box, m)
    value = float(obj.value(q)) if q.any() or allow_empty else 0.0
    return SearchResult(lower, upper, q, value, length, status == "optimal",
                        int(ctr[K.C_EXPANDED]), int(ctr[K.C_EVALS]), max(bound, value),
                        status, time.perf_counter() - start,
                        int(ctr[K.C_PEAK]) * per_node + LE.nbytes)


def _seed_single(space: SearchSpace, obj: RoundObjective, m: NDArray[np.int64],
                 fstate: FloatArray, best_box: NDArray[np.int32]) -> None:
    """Start from the best box with one proposition (``x_j <= t`` or ``x_j > t``): every
    one of them from the group sums of each feature, O(n d + Σ m_j). A search stopped
    at once still returns a rule at least that good."""
    st = np.asarray(obj.stats, dtype=float)
    best, arg = -math.inf, None
    for j in range(space.d):
        if m[j] == 0:
            continue
        sums = np.zeros((m[j] + 1, st.shape[1]))
        np.add.at(sums, space.groups_t[j], st)
        cum = np.cumsum(sums, axis=0)[:-1]            # x_j <= t_b, b = 0..m_j - 1
        up = obj.from_sums(cum)
        lo = obj.from_sums(cum[-1] + sums[-1] - cum)  # x_j > t_{a-1}, a = b + 1
        for vals, side in ((up, 1), (lo, 0)):
            k = int(np.argmax(vals))
            if vals[k] > best:
                best, arg = float(vals[k]), (j, side, k)
    if arg is None:
        return
    j, side, k = arg
    fstate[K.F_BEST] = best
    best_box[0] = 0
    best_box[1] = m.astype(np.int32)
    if side == 1:
        best_box[1, j] = k
    else:
        best_box[0, j] = k + 1


def _bound(pool: NodePool, ctr: NDArray[np.int64], fstate: FloatArray) -> float:
    return float(max(fstate[K.F_BEST], fstate[K.F_PRUNED],
                     K.open_bound(pool.bound, pool.heap, pool.dfs, ctr)))


def _decode(space: SearchSpace, best_box: NDArray[np.int32], m: NDArray[np.int64]
            ) -> tuple[FloatArray, FloatArray, NDArray[np.bool_], int]:
    """The incumbent's bounds hugging its training cover (each proposition moved to the
    cut point next to the covered rows; same cover), its query and its length."""
    d = space.d
    Gt = space.groups_t
    a = best_box[0].astype(np.int64)
    b = best_box[1].astype(np.int64)
    q = np.ones(space.n, dtype=bool)
    for j in range(d):
        q &= (Gt[j] >= a[j]) & (Gt[j] <= b[j])
    if q.any():
        for j in range(d):
            gj = Gt[j][q]
            if a[j] > 0:
                a[j] = int(gj.min())
            if b[j] < m[j]:
                b[j] = int(gj.max())
    lower = np.array([space.thresholds[j][a[j] - 1] if a[j] > 0 else -math.inf
                      for j in range(d)], dtype=float)
    upper = np.array([space.thresholds[j][b[j]] if b[j] < m[j] else math.inf
                      for j in range(d)], dtype=float)
    length = int(np.isfinite(lower).sum() + np.isfinite(upper).sum())
    return lower, upper, q, length
