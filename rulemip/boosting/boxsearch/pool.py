"""The node pool of the compiled box search: the kernel's state arrays
(:mod:`rulemip.boosting.boxsearch.kernel`) — node ranges, bounds, split records, the heap of
open nodes, the free list and the depth-first stack — shared by the serial search
(:mod:`~rulemip.boosting.boxsearch.range_search`) and every task of the split search
(:mod:`~rulemip.boosting.boxsearch.split_search`), and :func:`run_paced`, the kernel run in
calls short enough for the budget to be asked between them."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.boosting.boxsearch import kernel as K
from rulemip.budget import Budget

__all__ = ["CALL_SECONDS", "ST_EXPIRED", "NodePool", "Pace", "run_paced"]


class NodePool:
    """The kernel's state arrays (node pool, heap, free list, depth-first stack)."""

    def __init__(self, slots: int, d: int, reserve: int) -> None:
        self.pool = np.empty((slots, 4, d), np.int32)
        self.bound = np.empty(slots)
        self.splits = np.empty((slots, 3), np.int32)
        self.heap = np.empty(slots, np.int64)
        self.free = np.empty(slots, np.int64)
        self.dfs = np.zeros(reserve + 4, np.int64)

    @property
    def slots(self) -> int:
        return int(self.pool.shape[0])

    def grow(self, slots: int, ctr: NDArray[np.int64]) -> None:
        """Enlarge to ``slots``; the new slots join the free list."""
        old = self.slots
        for name in ("pool", "bound", "splits", "heap", "free"):
            a = getattr(self, name)
            b = np.empty((slots, *a.shape[1:]), a.dtype)
            b[:old] = a
            setattr(self, name, b)
        nf = int(ctr[K.C_FREE])
        self.free[nf:nf + slots - old] = np.arange(slots - 1, old - 1, -1)
        ctr[K.C_FREE] = nf + slots - old

    @staticmethod
    def node_bytes(d: int) -> int:
        """Bytes of one node: its ranges (16 d), bound, split record and heap entries."""
        return 16 * d + 12 + 8 + 16


#: target seconds of one kernel call: the clock is asked between calls
CALL_SECONDS: float = 0.05
#: status of :func:`run_paced` when the budget expired before its evaluations were done
ST_EXPIRED: int = -1


class Pace:
    """Evaluations per kernel call, adapted so that a call takes about
    :data:`CALL_SECONDS` (a node evaluation costs from microseconds on a small table to
    milliseconds on 100 000 rows: a fixed count of thousands ran seconds past a budget)."""

    __slots__ = ("evals",)

    def __init__(self, evals: int = 16) -> None:
        self.evals = int(evals)

    def update(self, seconds: float) -> None:
        """Double the count after a call shorter than half the target, halve it after one
        longer than twice the target."""
        if seconds < CALL_SECONDS / 2:
            self.evals = min(2 * self.evals, 1 << 22)
        elif seconds > 2 * CALL_SECONDS:
            self.evals = max(self.evals // 2, 1)


def run_paced(pool: NodePool, ctr: NDArray[np.int64], fstate: NDArray[np.float64],
              best_box: NDArray[np.int32], problem: tuple[NDArray[Any], ...],
              iparams: NDArray[np.int64], max_evals: int, clock: Budget | None,
              pace: Pace) -> int:
    """:func:`~rulemip.boosting.boxsearch.kernel.run` for ``max_evals`` evaluations in calls
    of ``pace.evals``, asking ``clock`` (None: never) before each call. The kernel's state
    lives in the arrays and a call stops only between branchings, at the first one with
    the count reached, so the calls end in exactly the state of one call of ``max_evals``
    (a deterministic search stays deterministic). Returns the kernel's status, or
    :data:`ST_EXPIRED` when the budget was spent first."""
    LE, off, m, valid, S, params = problem
    target = int(ctr[K.C_EVALS]) + int(max_evals)
    while True:
        left = target - int(ctr[K.C_EVALS])
        if left <= 0:
            return int(K.ST_EVALS)
        if clock is not None and clock.expired():
            return ST_EXPIRED
        t0 = time.perf_counter()
        st = K.run(pool.pool, pool.bound, pool.splits, pool.heap, pool.free, pool.dfs, ctr,
                   fstate, best_box, LE, off, m, valid, S, params, iparams,
                   min(left, pace.evals))
        pace.update(time.perf_counter() - t0)
        if st != K.ST_EVALS:
            return int(st)
