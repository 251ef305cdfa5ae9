"""Rule/depth pruning of tree ensembles: CIP (2) oracle and feasibility model
(docs/explanation/tree_pruning.md).

For node vectors M (n × m, sparse) and γ > 0,

    q(z) = ½ yᵀ (I_n + γ Σ_i z_i M_i M_iᵀ)^{-1} y,

evaluated on the support S = {i : z_i > 0} by Woodbury with D = diag(z_S):

    q(z) = ½ (yᵀy − yᵀ M_S (D^{-1}/γ + M_Sᵀ M_S)^{-1} M_Sᵀ y),
    w_S  = (D^{-1}/γ + M_Sᵀ M_S)^{-1} M_Sᵀ y,   r = y − M_S w_S,
    ∂q/∂z_i = −(γ/2) (M_iᵀ r)².

Only |S| × |S| systems are solved; no n × n matrix is formed.  The feasible set is
``z_i + z_j ≤ 1`` for every node i and descendant j (correct form of (1a)) and the
budget ``Σ a_i z_i ≤ K`` (1b).

:class:`TreePruningMIP` states Problem (1) itself — binaries z, weights w and residuals
e = y − M w — as a solver-neutral :class:`~rulemip.model.MIPModel` (convex MIQP), for
cross-checks of the CIP algorithms and for export (MPS, Pyomo).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from rulemip.exceptions import FormulationError, InvalidParameterError
from rulemip.formulations.forest import RidgeRefit, pruning_gradient, ridge_refit
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.model import MIPModel

__all__ = ["TreePruningCIP", "TreePruningMIP", "pruning_feasible_model"]


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
        self.Mt = sp.csr_matrix(self.M.T)
        self.Mty = np.asarray(self.Mt @ self.y).ravel()
        self.yty = float(self.y @ self.y)

    def weights(self, z: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Support S and optimal weights w_S (for binary z: the ridge refit of (1))."""
        fit = self.refit(z)
        return fit.S, fit.w

    def refit(self, z: NDArray[np.float64]) -> RidgeRefit:
        """Support, weights, residual and q(z)
        (:func:`~rulemip.formulations.forest.ridge_refit`)."""
        return ridge_refit(self.M, self.y, self.gamma, z, Mty=self.Mty, yty=self.yty)

    def value_and_gradient(self, z: NDArray[np.float64]) -> tuple[float, NDArray[np.float64]]:
        """q(z) and ∇q(z) for z ∈ [0, 1]^m (Woodbury on the support)."""
        fit = self.refit(z)
        return fit.value, pruning_gradient(self.Mt, fit.r, self.gamma)

    def value(self, z: NDArray[np.float64]) -> float:
        return self.refit(z).value


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


class TreePruningMIP:
    r"""Problem (1) of [PRUNE] as a solver-neutral convex MIQP (docs/explanation/tree_pruning.md).

    .. math::

        \min_{z, w, e}\ \tfrac12 \|e\|_2^2 + \tfrac1{2\gamma}\|w\|_2^2 \quad
        \text{s.t.}\quad e + \textstyle\sum_i M_i w_i = y,\quad
        z_i + z_j \le 1\ (j \in C_i),\quad \textstyle\sum_i a_i z_i \le K,\quad
        (1 - z_i) w_i = 0,\quad z \in \{0, 1\}^m .

    The residuals ``e`` are continuous columns, so the objective is a separable convex
    quadratic. The complementarity (1c) is written either as indicator constraints
    ``z_i = 0 ⇒ w_i = 0`` (``complementarity="indicator"``; needs a backend with
    indicators, e.g. SCIP) or as the big-M rows ``−B z_i ≤ w_i ≤ B z_i``
    (``complementarity="big_m"``) with the proved bound ``B = sqrt(γ yᵀy)``:

    *Proof that B cuts off no optimal solution.* ``(z, w, e) = (0, 0, y)`` is feasible
    with objective ``½ yᵀy``, so every optimal ``(z*, w*, e*)`` has
    ``(1/(2γ)) ‖w*‖² ≤ ½‖e*‖² + (1/(2γ))‖w*‖² ≤ ½ yᵀy``, hence
    ``|w*_i| ≤ ‖w*‖₂ ≤ sqrt(γ yᵀy) = B`` for every i. Where ``z*_i = 0``, (1c) gives
    ``w*_i = 0``. So every optimal solution of (1) satisfies ``|w_i| ≤ B z_i``, and these
    rows imply (1c) for binary z; the big-M model therefore has the same optimal value
    and optimal solutions as (1). The same argument bounds ``‖e*‖₂ ≤ ‖y‖₂``, which is
    added as the column bounds ``|e_k| ≤ ‖y‖₂`` and ``|w_i| ≤ B`` in both variants.

    Minimizing over ``(w, e)`` for fixed binary z gives the ridge refit on the support,
    i.e. ``q(z)`` of CIP (2) (:class:`TreePruningCIP`), so both problems have the same
    optimum.

    Parameters
    ----------
    nodes : NodeMatrix
        Candidate nodes (columns ``M_i``, descendants, attributes).
    y : ndarray of shape (n,)
        Response, used as given (center it for an unpenalized intercept).
    n_rules : float
        Budget ``K`` of (1b).
    attribute : {"rule", "depth", "feature"}
        Node cost ``a_i``.
    gamma : float
        Ridge parameter ``γ > 0``.
    complementarity : {"indicator", "big_m"}
        How (1c) is written (see above).
    """

    def __init__(self, nodes: NodeMatrix, y: NDArray[np.float64], n_rules: float, *,
                 attribute: str = "rule", gamma: float = 1.0,
                 complementarity: str = "indicator") -> None:
        if not (isinstance(gamma, int | float | np.floating) and gamma > 0
                and math.isfinite(gamma)):
            raise InvalidParameterError(f"`gamma` must be a positive number; got {gamma!r}.")
        if complementarity not in ("indicator", "big_m"):
            raise InvalidParameterError("`complementarity` must be 'indicator' or 'big_m'; "
                                        f"got {complementarity!r}.")
        yv = np.asarray(y, dtype=float).reshape(-1)
        if yv.shape[0] != nodes.M.shape[0]:
            raise InvalidParameterError(
                f"`y` has {yv.shape[0]} rows but the node matrix has {nodes.M.shape[0]}.")
        if not np.all(np.isfinite(yv)):
            raise InvalidParameterError("`y` must be finite.")
        nodes.attribute(attribute)  # type: ignore[arg-type]  # validates the name
        self.nodes = nodes
        self.y = yv
        self.n_rules = n_rules
        self.attribute = attribute
        self.gamma = float(gamma)
        self.complementarity = complementarity

    @property
    def weight_bound(self) -> float:
        """``B = sqrt(γ yᵀy)``: ``|w_i| ≤ B`` at every optimum (class docstring)."""
        return math.sqrt(self.gamma * float(self.y @ self.y))

    def build(self) -> MIPModel:
        """The MIPModel with variable blocks ``"z"`` (m binaries), ``"w"`` (m weights),
        ``"e"`` (n residuals) and constraint blocks ``"conflict"``, ``"budget"``,
        ``"residual"`` (and ``"big_m_upper"``/``"big_m_lower"`` for the big-M variant)."""
        nodes = self.nodes
        m, n = nodes.n_nodes, self.y.shape[0]
        model = pruning_feasible_model(nodes, self.n_rules, self.attribute)
        model.name = "tree_pruning_problem_1"
        B = self.weight_bound
        ey = math.sqrt(float(self.y @ self.y))
        z = np.asarray(model.var("z").ids).ravel()
        w = np.asarray(model.add_variables("w", m, lb=-B, ub=B).ids).ravel()
        e = np.asarray(model.add_variables("e", n, lb=-ey, ub=ey).ids).ravel()
        # e + M w = y
        A = sp.hstack([sp.identity(n, format="csc"), sp.csc_matrix(nodes.M)], format="csr")
        model.add_constraints("residual", matrix=A, cols=np.concatenate([e, w]),
                              lower=self.y, upper=self.y)
        if self.complementarity == "big_m":
            eye = sp.identity(m, format="csr")
            # w_i − B z_i ≤ 0 and w_i + B z_i ≥ 0
            model.add_constraints("big_m_upper", matrix=sp.hstack([eye, -B * eye]),
                                  cols=np.concatenate([w, z]), upper=0.0)
            model.add_constraints("big_m_lower", matrix=sp.hstack([eye, B * eye]),
                                  cols=np.concatenate([w, z]), lower=0.0)
        else:
            for i in range(m):
                model.add_indicator(int(z[i]), 0, {int(w[i]): 1.0}, "==", 0.0,
                                    name=f"complementarity_{i}")
        model.add_square(e, 0.5)
        model.add_square(w, 0.5 / self.gamma)
        return model

    def decode(self, model: MIPModel,
               x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(z, w)`` from a solution vector ``x`` of :meth:`build`'s model (z rounded to
        0/1, w set to 0 where z is 0)."""
        x = np.asarray(x, dtype=float).ravel()
        if x.shape[0] != model.n_cols:
            raise FormulationError(
                f"solution has {x.shape[0]} entries; the model has {model.n_cols} columns.")
        z = np.round(x[np.asarray(model.var("z").ids).ravel()])
        w = x[np.asarray(model.var("w").ids).ravel()] * z
        return z, w

    def objective(self, w: NDArray[np.float64]) -> float:
        """Objective of (1) at weights ``w``: ``½‖y − M w‖² + (1/(2γ))‖w‖²``."""
        w = np.asarray(w, dtype=float).ravel()
        r = self.y - np.asarray(self.nodes.M @ w).ravel()
        return 0.5 * float(r @ r) + 0.5 / self.gamma * float(w @ w)
