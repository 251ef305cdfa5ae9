r"""Cached evaluation of the pruning CIP (2) and exact single-move gains ([PRUNE] §3.1, B.2).

For node vectors :math:`M` (n × m, sparse) and :math:`\gamma > 0`,

.. math:: q(z) = \tfrac12 y^\top (I_n + \gamma \textstyle\sum_i z_i M_i M_i^\top)^{-1} y
          = \tfrac12 \bigl(y^\top y - (M_S^\top y)^\top w_S\bigr),\quad
          w_S = (D_S^{-1}/\gamma + M_S^\top M_S)^{-1} M_S^\top y,

with :math:`S = \{i : z_i > 0\}` and :math:`D_S = \mathrm{diag}(z_S)`; the residual is
:math:`r = y - M_S w_S` and :math:`\partial q / \partial z_i = -(\gamma/2)(M_i^\top r)^2`.
:class:`PruningOracle` computes the same numbers as
:class:`~rulemip.formulations.tree_pruning.TreePruningCIP` but uses
:math:`M^\top r = M^\top y - (M^\top M_S) w_S`, with the Gram block :math:`M^\top M_S`
computed by one sparse-times-dense product, so that a whole neighbourhood of a binary
selection is priced without touching M again:

* adding j ∉ S lowers q by the exact Schur-complement amount
  :math:`\Delta_j = \tfrac12 (M_j^\top r)^2 / (1/\gamma + \|M_j\|^2 - b_j^\top G^{-1} b_j)`,
  :math:`b_j = M_S^\top M_j`, :math:`G = I/\gamma + M_S^\top M_S`;
* removing i ∈ S is a principal sub-block of G (no product with M).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.forest import pruning_gradient, ridge_refit

__all__ = ["PruningOracle", "SelectionState"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class SelectionState:
    """A binary selection S with its ridge refit.

    Attributes
    ----------
    S : (s,) selected node indices.
    value : q(1_S).
    w : (s,) weights :math:`w_S`.
    Mtr : (m,) :math:`M^\\top r` for the residual r of S.
    B : (s, m) Gram rows :math:`M_S^\\top M`.
    G : (s, s) :math:`I/\\gamma + M_S^\\top M_S`.
    """

    S: NDArray[np.int64]
    value: float
    w: FloatArray
    Mtr: FloatArray
    B: FloatArray
    G: FloatArray


class PruningOracle:
    """Cached oracle for CIP (2) (implements the OA engine's ``ConvexOracle``).

    Parameters
    ----------
    M : (n, m) sparse node matrix.
    y : (n,) response (centered when an unpenalized intercept is used).
    gamma : ridge parameter γ > 0.
    """

    def __init__(self, M: sp.spmatrix, y: FloatArray, gamma: float) -> None:
        if not gamma > 0:
            raise InvalidParameterError(f"gamma must be > 0; got {gamma}")
        self.M = sp.csc_matrix(M, dtype=float)
        self.Mt = sp.csr_matrix(self.M.T)
        self.y = np.asarray(y, dtype=float).reshape(-1)
        if self.M.shape[0] != self.y.shape[0]:
            raise InvalidParameterError("M and y have different numbers of rows")
        self.gamma = float(gamma)
        self.Mty = np.asarray(self.Mt @ self.y).ravel()
        self.yty = float(self.y @ self.y)
        self.colsq = np.asarray(self.M.multiply(self.M).sum(axis=0)).ravel()
        self.n_evals = 0

    @property
    def n_nodes(self) -> int:
        return int(self.M.shape[1])

    def gram_rows(self, S: NDArray[np.int64]) -> FloatArray:
        """:math:`M_S^\\top M` as a dense (|S|, m) array."""
        if S.size == 0:
            return np.zeros((0, self.n_nodes))
        MS = self.M[:, S].toarray()
        return np.asarray(self.Mt @ MS).T.copy()

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]:
        """q(z) and ∇q(z) for z ∈ [0, 1]^m (:func:`~rulemip.formulations.forest.ridge_refit`)."""
        self.n_evals += 1
        fit = ridge_refit(self.M, self.y, self.gamma, z, Mty=self.Mty, yty=self.yty)
        return fit.value, pruning_gradient(self.Mt, fit.r, self.gamma)

    def value(self, z: FloatArray) -> float:
        return self.value_and_gradient(z)[0]

    # ------------------------------------------------------------------ binary selections
    def state(self, S: NDArray[np.int64], B: FloatArray | None = None) -> SelectionState:
        """Refit of the binary selection S (``B`` = its Gram rows, when known)."""
        S = np.asarray(S, dtype=np.int64).ravel()
        if B is None:
            B = self.gram_rows(S)
        if S.size == 0:
            return SelectionState(S, 0.5 * self.yty, np.zeros(0), self.Mty.copy(), B,
                                  np.zeros((0, 0)))
        G = B[:, S].copy()
        G[np.diag_indices_from(G)] += 1.0 / self.gamma
        w = sla.solve(G, self.Mty[S], assume_a="pos")
        Mtr = self.Mty - B.T @ w
        value = 0.5 * (self.yty - float(self.Mty[S] @ w))
        return SelectionState(S, value, w, Mtr, B, G)

    def without(self, st: SelectionState, k: int) -> SelectionState:
        """State of S minus its k-th element (a principal sub-block, no product with M)."""
        keep = np.delete(np.arange(st.S.size), k)
        return self.state(st.S[keep], st.B[keep])

    def with_node(self, st: SelectionState, j: int) -> SelectionState:
        """State of S plus node j (one sparse Gram row appended)."""
        row = np.asarray((self.Mt @ self.M[:, [int(j)]]).toarray()).ravel()
        return self.state(np.append(st.S, int(j)), np.vstack([st.B, row[None, :]]))

    def add_gains(self, st: SelectionState) -> FloatArray:
        r"""Exact decrease :math:`q(S) - q(S \cup \{j\})` for every node j (0 on S)."""
        num = 0.5 * st.Mtr ** 2
        den = 1.0 / self.gamma + self.colsq
        if st.S.size:
            L = sla.cholesky(st.G, lower=True)
            Linv = sla.solve_triangular(L, np.eye(st.S.size), lower=True)
            V = Linv @ st.B  # L^{-1} B, so that ‖V_j‖² = b_jᵀ G^{-1} b_j
            den = den - np.einsum("ij,ij->j", V, V)
        gains = num / np.maximum(den, 1e-300)
        gains[st.S] = 0.0
        return np.maximum(gains, 0.0)

    def point(self, S: NDArray[np.int64]) -> FloatArray:
        """The 0/1 vector of S."""
        z = np.zeros(self.n_nodes)
        z[np.asarray(S, dtype=np.int64)] = 1.0
        return z
