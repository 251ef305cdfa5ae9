r"""Compiled kernel of the exact box search: branch and bound over threshold ranges.

The question every exact path asks (docs/explanation/box_search.md): which box
``a_j <= g_j(x) <= b_j`` (``g_j`` the threshold group of feature ``j``, 0..m_j) maximizes a
gain ``F`` of the additive statistics of the rows it covers?

The kernel is four modules by role; this one is the search and the public face (every name
importable from here as before):

* :mod:`rulemip.boosting.boxsearch.words` — rows as bits: the array layouts, bit intrinsics, the
  prefix masks ``LE[j, b]`` (rows with ``g_j <= b``) and the covers they AND into.
* :mod:`rulemip.boosting.boxsearch.node` — one node (four ranges per feature; its *outer* box
  ``(alo, bhi)`` covers a superset, its *inner* box ``(ahi, blo)`` a subset of every box of
  the node): :func:`evaluate` collapses ranges without undecided rows, chooses the split,
  offers the two boxes as incumbents and bounds the node.
* :mod:`rulemip.boosting.boxsearch.bounds` — the node bounds: exact for the ratio family (the
  zonotope of the row sets between the covers), (i)–(iv) for orthogonal boosting.
* here — the search: best first on the bound (a binary heap over a pool of node slots);
  when the pool cannot grow (the memory budget) new children go to a depth-first stack,
  whose depth is bounded by the number of range halvings, so memory never exceeds the
  budget. A node is pruned when its bound is at most ``best + rtol·|best|``; :func:`run`
  returns after ``max_evals`` evaluations so that the caller can check its clock, report
  progress and grow the pool.

Compile time (issue 31): the node evaluation is compiled and optimized once, into
:func:`run` (the root too is evaluated by :func:`run`, not by a second compiled entry
point); both sorts of the bounds are one small quicksort of the kernel's own
(:func:`~rulemip.boosting.boxsearch.bounds._argsort`; numba's ``sort`` and ``argsort`` compiled
four functions each); the masks are built by numpy. A change to any of the four modules
recompiles all of them (:mod:`rulemip._numba_cache`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from rulemip._numba_cache import guard_kernel_cache
from rulemip.boosting.boxsearch.node import evaluate
from rulemip.boosting.boxsearch.words import (
    FILES,
    I_CAN_GROW,
    I_RESERVE,
    MODE_OGB,
    MODE_RATIO,
    P_RTOL,
    build_masks,
    step,
)

# kbox.pair_kernel imports these from here
from rulemip.boosting.boxsearch.words import _cttz as _cttz
from rulemip.boosting.boxsearch.words import _popcount as _popcount

__all__ = ["MODE_OGB", "MODE_RATIO", "ST_DONE", "ST_EVALS", "ST_GROW", "build_masks",
           "evaluate", "init_root", "open_bound", "run"]

guard_kernel_cache(__file__, *FILES)

ST_DONE = 0      #: heap and stack are empty: the search is complete
ST_EVALS = 1     #: the evaluation budget of this call is spent
ST_GROW = 2      #: the pool is full and may grow

UNEVALUATED = -2  #: ``splits[slot, 0]`` of a node not evaluated yet (the root)

# ctr layout (int64)
C_HEAP, C_FREE, C_DFS, C_EVALS, C_EXPANDED, C_PEAK = 0, 1, 2, 3, 4, 5
# fstate layout (float64)
F_BEST, F_PRUNED = 0, 1


@njit(cache=True)
def _heap_push(heap: np.ndarray, n: int, key: np.ndarray, slot: int | np.integer) -> int:
    i = n
    heap[i] = slot
    kv = key[slot]
    while i > 0:
        p = (i - 1) >> 1
        if key[heap[p]] >= kv:
            break
        heap[i] = heap[p]
        i = p
    heap[i] = slot
    return n + 1


@njit(cache=True)
def _heap_pop(heap: np.ndarray, n: int, key: np.ndarray) -> int:
    top = heap[0]
    n -= 1
    if n > 0:
        last = heap[n]
        kv = key[last]
        i = 0
        while True:
            c = 2 * i + 1
            if c >= n:
                break
            if c + 1 < n and key[heap[c + 1]] > key[heap[c]]:
                c += 1
            if key[heap[c]] <= kv:
                break
            heap[i] = heap[c]
            i = c
        heap[i] = last
    return top


@njit(cache=True)
def _offer(cand: np.ndarray, R: np.ndarray, fstate: np.ndarray, best_box: np.ndarray) -> None:
    """Take the node's candidates that beat the incumbent (strictly: ties keep the first
    found, so the result does not depend on floating-point noise in the order)."""
    d = R.shape[1]
    if cand[2] > 0 and cand[0] > fstate[F_BEST]:
        fstate[F_BEST] = cand[0]
        for j in range(d):
            best_box[0, j] = R[0, j]
            best_box[1, j] = R[3, j]
        if cand[4] > 0:
            best_box[0, int(cand[4]) - 1] += 1
    if cand[3] > 0 and cand[1] > fstate[F_BEST]:
        fstate[F_BEST] = cand[1]
        for j in range(d):
            best_box[0, j] = R[1, j]
            best_box[1, j] = R[2, j]


@njit(cache=True)
def _threshold(fstate: np.ndarray, rtol: float) -> float:
    b = fstate[F_BEST]
    if not np.isfinite(b):
        return b
    return b + rtol * abs(b)


def init_root(pool: np.ndarray, bound: np.ndarray, splits: np.ndarray, heap: np.ndarray,
              free: np.ndarray, ctr: np.ndarray, fstate: np.ndarray, best_box: np.ndarray,
              LE: np.ndarray, off: np.ndarray, m: np.ndarray, valid: np.ndarray,
              S: np.ndarray, params: np.ndarray, iparams: np.ndarray) -> None:
    """Put the root (every box) in slot 0 and evaluate it; the free list holds the rest.

    The root goes on the heap marked :data:`UNEVALUATED` and one step of :func:`run`
    evaluates it: the node evaluation is compiled once, into :func:`run` (a compiled
    ``init_root`` had it compiled and optimized a second time)."""
    cap = pool.shape[0]
    pool[0, 0] = 0
    pool[0, 1] = m
    pool[0, 2] = 0
    pool[0, 3] = m
    splits[0, 0] = UNEVALUATED
    bound[0] = np.inf
    free[:cap - 1] = np.arange(cap - 1, 0, -1)
    heap[0] = 0
    ctr[C_FREE] = cap - 1
    ctr[C_HEAP] = 1
    ctr[C_DFS] = 0
    dfs = np.empty(1, np.int64)           # not used: the root goes back to the heap
    run(pool, bound, splits, heap, free, dfs, ctr, fstate, best_box, LE, off, m, valid, S,
        params, iparams, 1)


@njit(cache=True, nogil=True)
def run(pool: np.ndarray, bound: np.ndarray, splits: np.ndarray, heap: np.ndarray,
        free: np.ndarray, dfs: np.ndarray, ctr: np.ndarray, fstate: np.ndarray,
        best_box: np.ndarray, LE: np.ndarray, off: np.ndarray, m: np.ndarray,
        valid: np.ndarray, S: np.ndarray, params: np.ndarray, iparams: np.ndarray,
        max_evals: int) -> int:
    """Continue the search for at most ``max_evals`` node evaluations; returns a status
    ``ST_*``. State lives in the arrays (a later call resumes). Runs without the GIL: the
    split search's threads call it at once (:mod:`rulemip.boosting.boxsearch.split_search`)."""
    W = valid.shape[0]
    rtol = params[P_RTOL]
    reserve = iparams[I_RESERVE]
    prob = (LE, off, m, valid, S, params, iparams)
    cand = np.empty(5)
    work = (np.empty(W, np.uint64), np.empty(W, np.uint64), np.empty(S.shape[1]),
            np.empty(3 * S.shape[1]), cand)
    evals = 0
    while evals < max_evals:
        # ---- next node: the depth-first stack first, then the best of the heap
        if ctr[C_DFS] > 0:
            ctr[C_DFS] -= 1
            slot = dfs[ctr[C_DFS]]
        elif ctr[C_HEAP] > 0:
            slot = _heap_pop(heap, ctr[C_HEAP], bound)
            ctr[C_HEAP] -= 1
        else:
            return ST_DONE
        if bound[slot] <= _threshold(fstate, rtol):
            if bound[slot] > fstate[F_PRUNED]:
                fstate[F_PRUNED] = bound[slot]
            free[ctr[C_FREE]] = slot
            ctr[C_FREE] += 1
            continue
        if splits[slot, 0] == UNEVALUATED:   # the root (init_root): evaluate it only
            first, second = slot, np.int64(-1)   # typed: one compiled _heap_push
            depth_first = False
        else:
            if ctr[C_FREE] == 0:     # only when the pool may grow (else the reserve holds)
                ctr[C_HEAP] = _heap_push(heap, ctr[C_HEAP], bound, slot)
                return ST_GROW
            depth_first = iparams[I_CAN_GROW] == 0 and ctr[C_FREE] <= reserve
            first, second = _branch(pool, splits, free, ctr, slot)
        kept0 = np.int64(-1)
        kept1 = np.int64(-1)
        for child in (first, second):
            if child < 0:
                break
            b = evaluate(pool[child], prob, work, splits[child], _threshold(fstate, rtol))
            evals += 1
            ctr[C_EVALS] += 1
            _offer(cand, pool[child], fstate, best_box)
            bound[child] = b
            if splits[child, 0] >= 0 and b > _threshold(fstate, rtol):
                if child == first:
                    kept0 = child
                else:
                    kept1 = child
            else:
                free[ctr[C_FREE]] = child
                ctr[C_FREE] += 1
                if b > fstate[F_PRUNED]:
                    fstate[F_PRUNED] = b
        # ---- queue the survivors (depth first: the better one on top)
        if depth_first:
            if kept0 >= 0 and kept1 >= 0 and bound[kept0] > bound[kept1]:
                kept0, kept1 = kept1, kept0
            for s in (kept0, kept1):
                if s >= 0:
                    dfs[ctr[C_DFS]] = s
                    ctr[C_DFS] += 1
        else:
            for s in (kept0, kept1):
                if s >= 0:
                    ctr[C_HEAP] = _heap_push(heap, ctr[C_HEAP], bound, s)
        used = pool.shape[0] - ctr[C_FREE]
        if second >= 0 and used > ctr[C_PEAK]:
            ctr[C_PEAK] = used
    return ST_EVALS


@step
def _branch(pool: np.ndarray, splits: np.ndarray, free: np.ndarray, ctr: np.ndarray,
            slot: int) -> tuple[Any, Any]:
    """Split the node in ``slot`` by its split choice: child 0 goes to a new slot, child 1
    stays in the parent's slot. Returns the two slots."""
    d = pool.shape[2]
    ctr[C_FREE] -= 1
    other = free[ctr[C_FREE]]
    j, side, cut = splits[slot, 0], splits[slot, 1], splits[slot, 2]
    for r in range(4):
        for jj in range(d):
            pool[other, r, jj] = pool[slot, r, jj]
    if side == 0:
        pool[other, 1, j] = cut              # a in [alo, s]
        pool[slot, 0, j] = cut + 1           # a in [s+1, ahi]
    else:
        pool[other, 3, j] = cut              # b in [blo, s]
        pool[slot, 2, j] = cut + 1           # b in [s+1, bhi]
    ctr[C_EXPANDED] += 1
    return other, slot


@njit(cache=True)
def open_bound(bound: np.ndarray, heap: np.ndarray, dfs: np.ndarray, ctr: np.ndarray) -> float:
    """The largest bound of an open node (-inf when none)."""
    b = -np.inf
    if ctr[C_HEAP] > 0:
        b = bound[heap[0]]
    for i in range(ctr[C_DFS]):
        if bound[dfs[i]] > b:
            b = bound[dfs[i]]
    return b

