"""The node pool of the compiled box search: the kernel's state arrays
(:mod:`rulemip.boosting.boxsearch.kernel`) — node ranges, bounds, split records, the heap of
open nodes, the free list and the depth-first stack — shared by the serial search
(:mod:`~rulemip.boosting.boxsearch.range_search`) and every task of the split search
(:mod:`~rulemip.boosting.boxsearch.split_search`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rulemip.boosting.boxsearch import kernel as K

__all__ = ["NodePool"]


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
