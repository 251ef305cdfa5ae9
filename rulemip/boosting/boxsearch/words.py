r"""Rows as bits for the exact box search: the kernel's array layouts, bit intrinsics, the
prefix masks and covers (docs/explanation/box_search.md, "Rows, masks").

Rows are permuted once per search into the *key order* of the bound and packed as bits of
64-bit words. For every feature and group ``b`` the prefix mask ``LE[j, b]`` holds the rows
with ``g_j <= b``; the cover of a box is the AND of ``2d`` masks (``d·n/64`` words).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from rulemip._numba_cache import guard_kernel_cache

__all__ = ["FILES", "MODE_OGB", "MODE_RATIO", "build_masks", "undecided_rows"]

#: the modules of the kernel: a change to any of them recompiles all (rulemip._numba_cache)
FILES = ("words.py", "bounds.py", "node.py", "kernel.py")
guard_kernel_cache(__file__, *FILES)

#: the decorator of a named step called from one place: compiled into its caller (numba
#: inlines it before typing, so it costs nothing at run time and is compiled once)
step = njit(cache=True, inline="always")

MODE_RATIO = 0   #: F = |G| / sqrt(D(H))
MODE_OGB = 1     #: F = |S0| / (sqrt(max(S1 - c_int S1^2 - sum_k S_k^2, 0)) + eps)

# params layout (float64)
P_C0, P_C1, P_C2, P_TINY, P_EPS, P_GNORM, P_RTOL, P_CINT, P_W0 = 0, 1, 2, 3, 4, 5, 6, 7, 8
# iparams layout (int64)
# I_MAX_LEN caps the restricted features of a box (``max_rule_length``), I_MAX_PROPS its
# propositions (``max_propositions``, an interval counts two); -1: no cap
I_MODE, I_ALLOW_EMPTY, I_MAX_LEN, I_CAN_GROW, I_RESERVE, I_MAX_PROPS = 0, 1, 2, 3, 4, 5


def _popcount_typing(typingctx: Any, x: Any) -> Any:
    """LLVM ``ctpop`` on a 64-bit word (the number of set bits)."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctpop(args[0])

    return sig, codegen


def _cttz_typing(typingctx: Any, x: Any) -> Any:
    """LLVM ``cttz`` on a 64-bit word (the index of the lowest set bit)."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


def _ctlz_typing(typingctx: Any, x: Any) -> Any:
    """LLVM ``ctlz`` on a 64-bit word (the number of leading zero bits)."""
    sig = types.uint64(types.uint64)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


_popcount: Any = intrinsic(_popcount_typing)
_ctlz: Any = intrinsic(_ctlz_typing)
_cttz: Any = intrinsic(_cttz_typing)


def build_masks(G: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(LE, off, valid)``: prefix masks ``LE[off[j] + b]`` (rows with ``g_j <= b``,
    ``b = 0..m_j``) and the mask of real rows, for groups ``G`` (n, d) in key order.

    Plain numpy (once per search, O(n d + Σ_j m_j n / 64)): nothing to compile."""
    n, d = G.shape
    W = (n + 63) // 64
    m = np.asarray(m, np.int64)
    off = np.zeros(d + 1, np.int64)
    off[1:] = np.cumsum(m + 1)
    LE = np.zeros((int(off[d]), W), np.uint64)
    rows = np.arange(n, dtype=np.int64)
    word = rows >> 6
    bit = np.left_shift(np.uint64(1), (rows & 63).astype(np.uint64))
    for j in range(d):
        np.bitwise_or.at(LE, (off[j] + G[:, j].astype(np.int64), word), bit)
        block = LE[off[j]:off[j + 1]]
        np.bitwise_or.accumulate(block, axis=0, out=block)
    valid = np.zeros(W, np.uint64)
    np.bitwise_or.at(valid, word, bit)
    return LE, off, valid


@step
def _and_box(x: Any, LE: np.ndarray, off: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             w: int) -> Any:
    """Word ``w`` of ``x`` AND the cover of the box ``lo_j <= g_j <= hi_j``."""
    for j in range(lo.shape[0]):
        if lo[j] > 0:
            x &= ~LE[off[j] + lo[j] - 1, w]
        x &= LE[off[j] + hi[j], w]
        if x == 0:
            break
    return x


@njit(cache=True)
def _count(x: np.ndarray, LE: np.ndarray, row: int) -> int:
    """|x ∩ LE[row]|"""
    c = 0
    for w in range(x.shape[0]):
        c += _popcount(x[w] & LE[row, w])
    return c


@njit(cache=True)
def undecided_rows(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """The rows of ``outer`` but not ``inner``, in key order (increasing index)."""
    u = 0
    for w in range(outer.shape[0]):
        u += _popcount(outer[w] & ~inner[w])
    rows = np.empty(u, np.int64)
    i = 0
    for w in range(outer.shape[0]):
        x = outer[w] & ~inner[w]
        while x:
            rows[i] = (w << 6) + np.int64(_cttz(x))
            x &= x - np.uint64(1)
            i += 1
    return rows
