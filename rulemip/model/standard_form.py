r"""The solver-neutral model every backend accepts.

.. math::
    \min\; c^\top x + \tfrac12 x^\top Q x + c_0 \quad\text{s.t.}\quad
    \ell^{row} \le A x \le u^{row},\; \ell \le x \le u,\; x_j \in \mathbb{Z}\ (j \in I),

plus optional *separable convex loss terms*
:math:`s\sum_i w_i\, l(x_{c_i}, y_i)` (:class:`SeparableLoss`, for a loss of
:mod:`rulemip.losses`), which SCIP takes natively and MILP backends reach through the
tangent-cut outer-approximation driver, and optional *indicator constraints*
``z_b = v  ⇒  aᵀx (≤|≥|=) rhs`` for backends that have them (others get an explicit
big-M alternative from the formulation). ``Q`` must be
positive semidefinite (the objective convex). Everything is a plain array, so a
``StandardForm`` is cheap to copy, hash and export.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray


@dataclass(frozen=True)
class IndicatorConstraint:
    """``x[binary] == active_value  ⇒  Σ vals·x[cols] (sense) rhs`` with sense in
    ``"<=", ">=", "=="``."""

    binary: int
    active_value: int
    cols: tuple[int, ...]
    vals: tuple[float, ...]
    sense: str
    rhs: float
    name: str = ""


@dataclass(frozen=True)
class SeparableLoss:
    """Objective term ``scale * Σ_i weights[i] * l(x[cols[i]], y[i])`` for the convex loss
    named ``loss`` (``"squared"``, ``"logistic"``, ``"poisson"``)."""

    loss: str
    cols: NDArray[np.int64]
    y: NDArray[np.float64]
    weights: NDArray[np.float64]
    scale: float = 1.0

    def value(self, x: NDArray[np.float64]) -> float:
        from rulemip.losses import get_loss

        f = np.asarray(x, dtype=float)[self.cols]
        return self.scale * float(self.weights @ get_loss(self.loss).value(f, self.y))


@dataclass(frozen=True)
class StandardForm:
    """Immutable snapshot of a :class:`~rulemip.model.MIPModel` (see module docstring)."""

    c: NDArray[np.float64]
    A: sp.csr_matrix
    row_lower: NDArray[np.float64]
    row_upper: NDArray[np.float64]
    col_lower: NDArray[np.float64]
    col_upper: NDArray[np.float64]
    integrality: NDArray[np.bool_]
    Q: sp.csr_matrix | None = None
    offset: float = 0.0
    col_names: Sequence[str] = ()
    row_names: Sequence[str] = ()
    indicators: tuple[IndicatorConstraint, ...] = field(default_factory=tuple)
    name: str = "rulemip"
    loss_terms: tuple[SeparableLoss, ...] = field(default_factory=tuple)

    @property
    def n_cols(self) -> int:
        return int(self.c.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.A.shape[0])

    @property
    def has_loss_terms(self) -> bool:
        return bool(self.loss_terms)

    @property
    def is_mip(self) -> bool:
        return bool(self.integrality.any())

    @property
    def has_quadratic(self) -> bool:
        return self.Q is not None and self.Q.nnz > 0

    def objective_value(self, x: NDArray[np.float64]) -> float:
        """:math:`c^\\top x + \\tfrac12 x^\\top Q x + c_0`."""
        val = float(self.c @ x) + self.offset
        if self.has_quadratic:
            assert self.Q is not None
            val += 0.5 * float(x @ (self.Q @ x))
        for term in self.loss_terms:
            val += term.value(x)
        return val

    def max_violation(self, x: NDArray[np.float64]) -> float:
        """Largest violation of bounds, rows, integrality and indicators at ``x``."""
        x = np.asarray(x, dtype=float)
        viol = [0.0]
        viol.append(float(np.max(np.maximum(self.col_lower - x, 0.0), initial=0.0)))
        viol.append(float(np.max(np.maximum(x - self.col_upper, 0.0), initial=0.0)))
        if self.n_rows:
            ax = self.A @ x
            viol.append(float(np.max(np.maximum(self.row_lower - ax, 0.0), initial=0.0)))
            viol.append(float(np.max(np.maximum(ax - self.row_upper, 0.0), initial=0.0)))
        if self.integrality.any():
            xi = x[self.integrality]
            viol.append(float(np.max(np.abs(xi - np.round(xi)), initial=0.0)))
        for ind in self.indicators:
            if round(x[ind.binary]) != ind.active_value:
                continue
            lhs = float(np.dot(ind.vals, x[list(ind.cols)]))
            if ind.sense == "<=":
                viol.append(max(0.0, lhs - ind.rhs))
            elif ind.sense == ">=":
                viol.append(max(0.0, ind.rhs - lhs))
            else:
                viol.append(abs(lhs - ind.rhs))
        return max(viol)


def as_standard_form(model: Any) -> StandardForm:
    """Accept a :class:`StandardForm` or anything with ``to_standard_form()`` (a
    :class:`~rulemip.model.MIPModel`); the one place that coerces models for backends and
    exporters."""
    from rulemip.exceptions import InvalidParameterError

    if isinstance(model, StandardForm):
        return model
    to_sf = getattr(model, "to_standard_form", None)
    if callable(to_sf):
        sf = to_sf()
        if isinstance(sf, StandardForm):
            return sf
    raise InvalidParameterError(
        f"`model` must be a StandardForm or a MIPModel; got {type(model).__name__}.")
