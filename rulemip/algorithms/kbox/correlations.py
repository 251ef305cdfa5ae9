r"""The correlation of two boxes from their common weight, as the k-box scans read it
(docs/explanation/kbox_search.md §2, §6). Compiled."""

from __future__ import annotations

import math

from numba import njit

from rulemip.algorithms.kbox.pair_kernel import _cross

__all__ = ["correlation"]


@njit(cache=True, inline="always")
def correlation(n: float, Nx: float, Ny: float, W: float, centred: bool, Kx: float,
                Ky: float) -> float:
    """:math:`\\rho = c/\\sqrt{K_x K_y}` of two boxes with common weight n."""
    return _cross(n, Nx, Ny, W, centred) / math.sqrt(Kx * Ky)
