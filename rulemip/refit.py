r"""Exact convex refit of rule weights for fixed queries (the corrective update,
docs/explanation/boosting.md eq. 7).

Given the query matrix :math:`Q \in \{0,1\}^{n\times k}` solve

.. math:: \min_{\beta_0, \beta} \; \frac{1}{W}\sum_i w_i\, l(\beta_0 + (Q\beta)_i, y_i)
          + \frac{\lambda}{W}\|\beta\|^2

(:math:`\beta_0` only when ``fit_intercept``; never penalized). Squared loss is solved in
closed form by a (ridge) least-squares system; logistic and Poisson by a damped Newton
method with backtracking line search, which converges to the unique optimum when
:math:`\lambda > 0` and to an optimum whenever one exists when :math:`\lambda = 0` (a
tiny Levenberg term keeps singular Hessians solvable; the result is then *a* minimizer,
and the risk — the quantity every certificate compares — is the minimum).

This one routine is shared by boosting (corrective weights), the exact engines (decoding
and brute-force oracles) and certificate verification, so the risk of a set of rules means
the same thing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip.losses import Loss, get_loss


@dataclass(frozen=True)
class RefitResult:
    """Optimal weights and the attained regularized risk :math:`R_\\lambda`."""

    intercept: float
    weights: NDArray[np.float64]
    risk: float
    converged: bool


def fit_weights(Q: NDArray[np.float64], y: NDArray[np.float64], loss: str | Loss = "squared",
                reg: float = 0.0, fit_intercept: bool = True,
                sample_weight: NDArray[np.float64] | None = None,
                offset: NDArray[np.float64] | None = None, tol: float = 1e-12,
                max_iter: int = 200) -> RefitResult:
    """Minimize :math:`R_\\lambda` over the weights of the columns of ``Q``.

    ``offset`` adds a fixed vector to the predictions (used by stagewise updates with
    earlier rules frozen).
    """
    lo = get_loss(loss)
    Q = np.asarray(Q, dtype=float)
    if Q.ndim == 1:
        Q = Q.reshape(-1, 1)
    n = Q.shape[0]
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    off = np.zeros(n) if offset is None else np.asarray(offset, dtype=float)
    A = np.column_stack([np.ones(n), Q]) if fit_intercept else Q
    m = A.shape[1]
    pen = np.full(m, float(reg))
    if fit_intercept:
        pen[0] = 0.0
    if m == 0:
        return RefitResult(0.0, np.zeros(0), lo.risk(off, y, sample_weight=sample_weight), True)

    if lo.name == "squared":
        # normal equations of sum w (A b + off - y)^2 + sum pen b^2
        Aw = A * w[:, None]
        H = A.T @ Aw + np.diag(pen)
        rhs = Aw.T @ (y - off)
        coef = _solve_psd(H, rhs)
        converged = True
    else:
        coef = np.zeros(m)
        if fit_intercept:
            coef[0] = lo.best_constant(y, w) - float(np.average(off, weights=w)) \
                if lo.name == "poisson" else lo.best_constant(y, w)
        converged = False

        def objective(c: NDArray[np.float64]) -> float:
            f = off + A @ c
            return float(w @ lo.value(f, y) + pen @ (c * c))

        obj = objective(coef)
        for _ in range(max_iter):
            f = off + A @ coef
            g = A.T @ (w * lo.gradient(f, y)) + 2.0 * pen * coef
            h = lo.hessian(f, y) * w
            H = A.T @ (A * h[:, None]) + np.diag(2.0 * pen)
            step = _solve_psd(H, g)
            decrement = float(g @ step)
            if decrement <= tol * max(1.0, abs(obj)):
                converged = True
                break
            t = 1.0
            while True:
                cand = coef - t * step
                c_obj = objective(cand)
                if c_obj <= obj - 0.25 * t * decrement or t < 1e-12:
                    break
                t *= 0.5
            if t < 1e-12:
                converged = True  # no further descent possible in float64
                break
            coef, obj = cand, c_obj
    intercept = float(coef[0]) if fit_intercept else 0.0
    beta = np.asarray(coef[1:] if fit_intercept else coef, dtype=float)
    f = off + A @ coef
    risk = lo.risk(f, y, weights=beta, reg=reg, sample_weight=sample_weight)
    return RefitResult(intercept, beta, risk, converged)


def _solve_psd(H: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """Solve ``H x = b`` for symmetric PSD ``H``; least-norm solution when singular."""
    try:
        c = np.linalg.cholesky(H)
        return np.asarray(np.linalg.solve(c.T, np.linalg.solve(c, b)), dtype=float)
    except np.linalg.LinAlgError:
        sol, *_ = np.linalg.lstsq(H, b, rcond=None)
        return np.asarray(sol, dtype=float)
