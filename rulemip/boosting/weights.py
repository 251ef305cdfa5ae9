r"""Weight updates of rule boosting (docs/explanation/boosting.md, [OGB] eqs. (3), (6), (7)).

With :math:`R_\lambda(f) = \frac1W\sum_i w_i l(f_i, y_i) + \frac{\lambda}{W}\|\beta\|^2`
(docs/explanation/notation.md; ``W = n`` for unit weights):

- **stagewise** (eq. 3): earlier weights frozen,
  :math:`\beta_t = \arg\min_\beta R_\lambda(f^{(t-1)} + \beta q_t)` — a one-dimensional
  convex problem solved exactly by :func:`rulemip.refit.fit_weights` with the current
  predictions as ``offset`` (closed form for squared loss:
  :math:`\beta = \langle q, y - f\rangle_w / (\langle q, 1\rangle_w + \lambda)`; the ridge
  terms of frozen weights are constants).
- **xgb** (eq. 6): one Newton step on that problem,
  :math:`\beta_t = -\langle q, g\rangle_w / (\langle q, h\rangle_w + 2\lambda)`. The
  paper's formula has ":math:`+\lambda`"; with the per-point loss derivatives ``g``, ``h``
  and the penalty :math:`(\lambda/n)\beta^2` the Newton step has :math:`2\lambda`
  (:math:`\partial^2/\partial\beta^2` of :math:`\lambda\beta^2`), i.e. the paper's
  :math:`\lambda` is ``2 * reg``. For squared loss it equals the stagewise step.
- **corrective** (eq. 7): all weights (and the intercept) re-optimized jointly,
  :math:`\arg\min_{\beta} R_\lambda(\beta_0 + Q_t\beta)` by the shared exact convex refit
  :func:`rulemip.refit.fit_weights` (least squares for squared loss, damped Newton
  otherwise).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from rulemip.losses import Loss
from rulemip.refit import RefitResult, fit_weights

FloatArray = NDArray[np.float64]

WEIGHT_UPDATES: tuple[str, ...] = ("stagewise", "xgb", "corrective")


def stagewise_weight(q: FloatArray, f: FloatArray, y: FloatArray, loss: str | Loss,
                     reg: float = 0.0, sample_weight: FloatArray | None = None) -> float:
    r"""Exact line search :math:`\arg\min_\beta R_\lambda(f + \beta q)` (eq. 3)."""
    res = fit_weights(np.asarray(q, dtype=float).reshape(-1, 1), y, loss, reg=reg,
                      fit_intercept=False, sample_weight=sample_weight, offset=f)
    return float(res.weights[0])


def xgb_weight(q: FloatArray, g: FloatArray, h: FloatArray, reg: float = 0.0,
               sample_weight: FloatArray | None = None) -> float:
    r"""Closed-form Newton weight :math:`-\langle q, g\rangle_w/(\langle q, h\rangle_w +
    2\lambda)` (eq. 6 in the λ convention, see module docstring)."""
    q = np.asarray(q, dtype=float)
    w = np.ones(len(q)) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    num = float(np.dot(w * q, g))
    den = float(np.dot(w * q, h)) + 2.0 * float(reg)
    if den <= 0.0:
        return 0.0
    return -num / den


def corrective_weights(Q: FloatArray, y: FloatArray, loss: str | Loss, reg: float = 0.0,
                       fit_intercept: bool = True,
                       sample_weight: FloatArray | None = None) -> RefitResult:
    r"""Joint refit :math:`\arg\min R_\lambda(\beta_0 + Q\beta)` (eq. 7) via
    :func:`rulemip.refit.fit_weights`."""
    return fit_weights(Q, y, loss, reg=reg, fit_intercept=fit_intercept,
                       sample_weight=sample_weight)
