"""Rule/depth pruning of tree ensembles: CIP (2) oracle and feasibility model (SPEC §4).

For node vectors M (n × m, sparse) and γ > 0,

    q(z) = ½ yᵀ (I_n + γ Σ_i z_i M_i M_iᵀ)^{-1} y,

evaluated on the support S = {i : z_i > 0} by Woodbury with D = diag(z_S):

    q(z) = ½ (yᵀy − yᵀ M_S (D^{-1}/γ + M_Sᵀ M_S)^{-1} M_Sᵀ y),
    w_S  = (D^{-1}/γ + M_Sᵀ M_S)^{-1} M_Sᵀ y,   r = y − M_S w_S,
    ∂q/∂z_i = −(γ/2) (M_iᵀ r)².

Only |S| × |S| systems are solved; no n × n matrix is formed.  The feasible set is
``z_i + z_j ≤ 1`` for every node i and descendant j (correct form of (1a)) and the
budget ``Σ a_i z_i ≤ K`` (1b).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.model import MIPModel

__all__ = ["TreePruningCIP", "pruning_feasible_model"]


class TreePruningCIP:
    """Convex oracle for CIP (2) (implements the OA engine's ConvexOracle).

    Parameters
    ----------
    M : (n, m) sparse node matrix.
    y : (n,) response (already centered when an unpenalized intercept is used).
    gamma : ridge parameter γ > 0.
    """

    def __init__(self, M: sp.spmatrix, y: NDArray[np.float64], gamma: float) -> None:
        if not gamma > 0:
            raise InvalidParameterError(f"gamma must be > 0; got {gamma}")
        self.M = sp.csc_matrix(M, dtype=float)
        self.y = np.asarray(y, dtype=float).reshape(-1)
        if self.M.shape[0] != self.y.shape[0]:
            raise InvalidParameterError("M and y have different numbers of rows")
        self.gamma = float(gamma)
        self.Mty = np.asarray(self.M.T @ self.y).ravel()
        self.yty = float(self.y @ self.y)

    def weights(self, z: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Support S and optimal weights w_S (for binary z: the ridge refit of (1))."""
        z = np.asarray(z, dtype=float).ravel()
        S = np.flatnonzero(z > 1e-12)
        if S.size == 0:
            return S, np.zeros(0)
        MS = self.M[:, S]
        G = (MS.T @ MS).toarray()
        G[np.diag_indices_from(G)] += 1.0 / (self.gamma * z[S])
        w = sla.solve(G, self.Mty[S], assume_a="pos")
        return S, np.asarray(w, dtype=float)

    def value_and_gradient(self, z: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """q(z) and ∇q(z) for z ∈ [0, 1]^m (Woodbury on the support)."""
        S, w = self.weights(z)
        r = self.y - (self.M[:, S] @ w if S.size else 0.0)
        value = 0.5 * (self.yty - float(self.Mty[S] @ w))
        g = -0.5 * self.gamma * np.asarray(self.M.T @ r).ravel() ** 2
        return value, g

    def value(self, z: NDArray[np.float64]) -> float:
        return self.value_and_gradient(z)[0]


def pruning_feasible_model(nodes: NodeMatrix, n_rules: float,
                           attribute: str = "rule") -> MIPModel:
    """MIPModel with binary z, conflicts z_i + z_j ≤ 1 (j ∈ C_i) and Σ a_i z_i ≤ K."""
    if not n_rules >= 0:
        raise InvalidParameterError(f"n_rules must be >= 0; got {n_rules}")
    m = nodes.n_nodes
    a = nodes.attribute(attribute)  # type: ignore[arg-type]
    model = MIPModel()
    z = model.add_variables("z", m, binary=True)
    ids = np.asarray(z.ids).ravel()
    pairs = nodes.conflict_pairs()
    if pairs.shape[0]:
        P = pairs.shape[0]
        A = sp.csr_matrix((np.ones(2 * P), (np.repeat(np.arange(P), 2), pairs.ravel())),
                          shape=(P, m))
        model.add_constraints("conflict", matrix=A, cols=ids, upper=1.0)
    model.add_constraints("budget", matrix=sp.csr_matrix(a.reshape(1, -1)), cols=ids,
                          upper=float(n_rules))
    return model
