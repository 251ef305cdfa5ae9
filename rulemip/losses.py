r"""The three convex losses of rulemip (docs/explanation/notation.md) in deviance form.

========  ===================================  ================  ==========================
name      :math:`l(f, y)`                      labels            inverse link :math:`\mu`
========  ===================================  ================  ==========================
squared   :math:`(f - y)^2`                    real              :math:`a`
logistic  :math:`\log(1 + e^{-y f})`           :math:`\{-1,+1\}`  :math:`1/(1 + e^{-a})`
poisson   :math:`y\log y - y f - y + e^{f}`    :math:`y \ge 0`    :math:`e^{a}`
========  ===================================  ================  ==========================

The regularized empirical risk with optional sample weights :math:`w` (default 1) is

.. math:: R_\lambda(f) = \frac{1}{W}\sum_i w_i\, l(f_i, y_i) + \frac{\lambda}{W}\|\beta\|^2,
          \qquad W = \sum_i w_i ,

with the intercept :math:`\beta_0` never penalized. With unit weights ``W = n`` and this is
exactly the :math:`R_\lambda`. Weights exist so that the exact cell reduction of
docs/explanation/box_selection.md §1 (one weighted point per occupied grid cell) is exact.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rulemip.exceptions import InvalidDataError, InvalidParameterError

FloatArray = NDArray[np.float64]

_EXP_CLIP = 700.0  # exp(700) is finite in float64; beyond it Poisson risks are meaningless


def _sigmoid(a: FloatArray) -> FloatArray:
    out: FloatArray = np.empty_like(a, dtype=float)
    pos = a >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-a[pos]))
    ea = np.exp(a[~pos])
    out[~pos] = ea / (1.0 + ea)
    return out


@dataclass(frozen=True)
class Loss(abc.ABC):
    """A convex, twice differentiable loss in deviance form.

    Subclasses implement :meth:`value`, :meth:`gradient`, :meth:`hessian`,
    :meth:`inverse_link`, :meth:`check_labels` and :meth:`best_constant`; everything else
    (risk, tangent cuts) is derived here once.
    """

    name: ClassVar[str] = "abstract"

    @abc.abstractmethod
    def value(self, f: FloatArray, y: FloatArray) -> FloatArray:
        """Elementwise loss :math:`l(f_i, y_i)`."""

    @abc.abstractmethod
    def gradient(self, f: FloatArray, y: FloatArray) -> FloatArray:
        r"""Elementwise :math:`g_i = \partial l(f_i, y_i)/\partial f_i`."""

    @abc.abstractmethod
    def expression(self, f: Any, y: float, exp: Callable[[Any], Any],
                   log: Callable[[Any], Any]) -> Any:
        """:math:`l(f, y)` as a symbolic expression of a modelling variable ``f`` (one
        label ``y``), built with the modelling library's ``exp`` and ``log`` — the one
        place the formulas are written for exporters and solver interfaces."""

    @abc.abstractmethod
    def hessian(self, f: FloatArray, y: FloatArray) -> FloatArray:
        r"""Elementwise :math:`h_i = \partial^2 l(f_i, y_i)/\partial f_i^2` (> 0)."""

    @abc.abstractmethod
    def inverse_link(self, a: FloatArray) -> FloatArray:
        r""":math:`\mu(a)`, the prediction on the response scale."""

    @abc.abstractmethod
    def check_labels(self, y: FloatArray) -> FloatArray:
        """Validate ``y`` for this loss and return it in the loss' label convention."""

    @abc.abstractmethod
    def best_constant(self, y: FloatArray, sample_weight: FloatArray | None = None) -> float:
        """The constant :math:`c` minimizing :math:`\\sum_i w_i l(c, y_i)`."""

    # ------------------------------------------------------------------ derived
    def risk(self, f: ArrayLike, y: ArrayLike, *, weights: ArrayLike | None = None,
             reg: float = 0.0, sample_weight: ArrayLike | None = None) -> float:
        r"""Regularized empirical risk :math:`R_\lambda` (module docstring).

        Parameters
        ----------
        f, y : predictions on the link scale and labels, shape (n,).
        weights : rule weights :math:`\beta_1..\beta_k` entering the ridge term (not the
            intercept).
        reg : :math:`\lambda \ge 0`.
        sample_weight : optional point weights :math:`w`.
        """
        f_arr = np.asarray(f, dtype=float)
        y_arr = np.asarray(y, dtype=float)
        losses = self.value(f_arr, y_arr)
        if sample_weight is None:
            total_w = float(len(y_arr))
            data_term = float(np.sum(losses))
        else:
            sw = np.asarray(sample_weight, dtype=float)
            total_w = float(np.sum(sw))
            data_term = float(np.dot(sw, losses))
        penalty = 0.0
        if weights is not None and reg:
            b = np.asarray(weights, dtype=float)
            penalty = float(reg) * float(np.dot(b, b))
        return (data_term + penalty) / total_w

    def tangent(self, f0: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
        r"""Tangent cut data at :math:`f^0`: ``(l(f0, y), g(f0, y))`` elementwise.

        By convexity :math:`l(f, y) \ge l(f^0, y) + g(f^0, y)(f - f^0)` for every ``f``,
        which is what the outer-approximation driver adds as cuts.
        """
        return self.value(f0, y), self.gradient(f0, y)


@dataclass(frozen=True)
class SquaredLoss(Loss):
    """:math:`l(f, y) = (f - y)^2`."""

    name: ClassVar[str] = "squared"

    def value(self, f: FloatArray, y: FloatArray) -> FloatArray:
        d = f - y
        return np.asarray(d * d, dtype=float)

    def expression(self, f: Any, y: float, exp: Callable[[Any], Any],
                   log: Callable[[Any], Any]) -> Any:
        return (f - y) * (f - y)

    def gradient(self, f: FloatArray, y: FloatArray) -> FloatArray:
        return np.asarray(2.0 * (f - y), dtype=float)

    def hessian(self, f: FloatArray, y: FloatArray) -> FloatArray:
        return np.full(np.shape(f), 2.0)

    def inverse_link(self, a: FloatArray) -> FloatArray:
        return np.asarray(a, dtype=float)

    def check_labels(self, y: FloatArray) -> FloatArray:
        return np.asarray(y, dtype=float)

    def best_constant(self, y: FloatArray, sample_weight: FloatArray | None = None) -> float:
        return float(np.average(y, weights=sample_weight))


@dataclass(frozen=True)
class LogisticLoss(Loss):
    """:math:`l(f, y) = \\log(1 + e^{-y f})` with labels in {-1, +1}."""

    name: ClassVar[str] = "logistic"

    def value(self, f: FloatArray, y: FloatArray) -> FloatArray:
        return np.asarray(np.logaddexp(0.0, -y * f), dtype=float)

    def expression(self, f: Any, y: float, exp: Callable[[Any], Any],
                   log: Callable[[Any], Any]) -> Any:
        return log(1.0 + exp(-y * f))

    def gradient(self, f: FloatArray, y: FloatArray) -> FloatArray:
        return np.asarray(-y * _sigmoid(-y * f), dtype=float)

    def hessian(self, f: FloatArray, y: FloatArray) -> FloatArray:
        p = _sigmoid(np.asarray(f, dtype=float))
        return np.asarray(p * (1.0 - p), dtype=float)

    def inverse_link(self, a: FloatArray) -> FloatArray:
        return _sigmoid(np.asarray(a, dtype=float))

    def check_labels(self, y: FloatArray) -> FloatArray:
        y = np.asarray(y, dtype=float)
        values = np.unique(y)
        if not np.all(np.isin(values, (-1.0, 1.0))):
            raise InvalidDataError(
                "logistic loss needs labels in {-1, +1}; got values "
                f"{values[:5].tolist()}. Encode the two classes as -1/+1 (the estimators "
                "do this for you from any two labels).")
        if len(values) < 2:
            raise InvalidDataError(
                "logistic loss needs both classes in the data; only "
                f"{values.tolist()} present.")
        return y

    def best_constant(self, y: FloatArray, sample_weight: FloatArray | None = None) -> float:
        p = float(np.average(y > 0, weights=sample_weight))
        p = min(max(p, 1e-12), 1.0 - 1e-12)
        return float(np.log(p / (1.0 - p)))


@dataclass(frozen=True)
class PoissonLoss(Loss):
    """:math:`l(f, y) = y\\log y - y f - y + e^{f}` (0 log 0 = 0), labels y >= 0."""

    name: ClassVar[str] = "poisson"

    def value(self, f: FloatArray, y: FloatArray) -> FloatArray:
        f = np.asarray(f, dtype=float)
        y = np.asarray(y, dtype=float)
        ylogy = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0)
        return np.asarray(ylogy - y * f - y + np.exp(np.minimum(f, _EXP_CLIP)), dtype=float)

    def expression(self, f: Any, y: float, exp: Callable[[Any], Any],
                   log: Callable[[Any], Any]) -> Any:
        const = (y * math.log(y) if y > 0 else 0.0) - y  # y log y − y, a number
        return exp(f) - y * f + const

    def gradient(self, f: FloatArray, y: FloatArray) -> FloatArray:
        return np.asarray(np.exp(np.minimum(f, _EXP_CLIP)) - y, dtype=float)

    def hessian(self, f: FloatArray, y: FloatArray) -> FloatArray:
        return np.asarray(np.exp(np.minimum(np.asarray(f, dtype=float), _EXP_CLIP)),
                          dtype=float)

    def inverse_link(self, a: FloatArray) -> FloatArray:
        return np.asarray(np.exp(np.minimum(np.asarray(a, dtype=float), _EXP_CLIP)),
                          dtype=float)

    def check_labels(self, y: FloatArray) -> FloatArray:
        y = np.asarray(y, dtype=float)
        if np.any(y < 0):
            raise InvalidDataError(
                f"Poisson loss needs labels y >= 0; the smallest label is {float(y.min())}. "
                "Use loss='squared' for signed targets.")
        if not np.any(y > 0):
            raise InvalidDataError(
                "Poisson loss needs at least one positive label; all labels are 0.")
        return y

    def best_constant(self, y: FloatArray, sample_weight: FloatArray | None = None) -> float:
        m = float(np.average(y, weights=sample_weight))
        return float(np.log(max(m, 1e-300)))


LOSSES: dict[str, Loss] = {
    "squared": SquaredLoss(),
    "logistic": LogisticLoss(),
    "poisson": PoissonLoss(),
}


def get_loss(loss: str | Loss) -> Loss:
    """Resolve a loss name (``"squared"``, ``"logistic"``, ``"poisson"``) or instance."""
    if isinstance(loss, Loss):
        return loss
    try:
        return LOSSES[loss]
    except (KeyError, TypeError):
        names = ", ".join(repr(k) for k in LOSSES)
        raise InvalidParameterError(f"`loss` must be one of {names}; got {loss!r}.") from None
