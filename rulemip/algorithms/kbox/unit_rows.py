r"""Cells of integer multiplicity as bits of equal weight, so that every intersection
weight the k-box scans read is one popcount (docs/explanation/kbox_search.md §2).

The scans read :math:`n_{xy} = \sum_{c \in x \cap y} w_c`, the weight of the cells two
covers share. When every cell weighs the same ``unit`` that is ``unit`` times a popcount
of the two bitsets; otherwise the kernels add the weights of the common cells one bit at a
time, several times slower. Cells usually weigh whole numbers of rows (the cell reduction
merges rows), so :math:`w_c = m_c\,u` with integer :math:`m_c \ge 1` and
:math:`u = \min_c w_c`: giving cell c :math:`m_c` consecutive bits of weight u keeps every
:math:`n_{xy}` exact,

.. math:: n_{xy} = u \sum_{c \in x \cap y} m_c = u \cdot \mathrm{popcount}(x' \wedge y'),

and two distinct covers still differ in at least one cell, i.e. by at least u (the slack
the scans' near-copy bounds use). The expansion is taken only when it does not grow the
bitsets by more than :data:`MAX_GROWTH` in words.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

__all__ = ["MAX_GROWTH", "unit_rows"]

#: the expanded bitsets may have at most this many times the words of the cells' ones
MAX_GROWTH = 2.0

#: relative tolerance of "an integer multiple of the smallest weight"
MULTIPLE_TOL = 1e-9


def unit_rows(bits: NDArray[np.uint64], slabs: NDArray[np.uint64], weight: NDArray[np.float64]
              ) -> tuple[NDArray[np.uint64], NDArray[np.uint64], float,
                         NDArray[np.float64]] | None:
    """``(bits, slabs, unit, weight)`` over rows of equal weight ``unit`` (module
    docstring), or ``None`` when the cell weights are not integer multiples of the
    smallest one or the expansion would exceed :data:`MAX_GROWTH`."""
    w = np.asarray(weight, dtype=float)
    if len(w) == 0 or not np.all(w > 0):
        return None
    u = float(w.min())
    m = np.rint(w / u)
    if not np.all(np.abs(w / u - m) <= MULTIPLE_TOL * np.maximum(m, 1.0)):
        return None
    counts = m.astype(np.int64)
    total = int(counts.sum())
    words = (total + 63) // 64
    if words > MAX_GROWTH * max(bits.shape[1], 1):
        return None
    offset = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offset[1:])
    return (_expand(bits, offset, words), _expand(slabs, offset, words), u,
            np.full(total, u))


@njit(cache=True)
def _expand(bits: np.ndarray, offset: np.ndarray, words: int) -> np.ndarray:
    """Each set bit c of each row of ``bits`` as the bits ``offset[c] .. offset[c+1]-1``
    of the row of the result."""
    out = np.zeros((bits.shape[0], words), dtype=np.uint64)
    n_cells = offset.shape[0] - 1
    for r in range(bits.shape[0]):
        for c in range(n_cells):
            if (bits[r, c >> 6] >> np.uint64(c & 63)) & np.uint64(1):
                for p in range(offset[c], offset[c + 1]):
                    out[r, p >> 6] |= np.uint64(1) << np.uint64(p & 63)
    return out
