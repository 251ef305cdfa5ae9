"""The shared convex refit against least squares and a generic optimizer."""

import numpy as np
import pytest
from scipy.optimize import minimize

from rulemip.losses import get_loss
from rulemip.refit import fit_weights


def test_paper_fig2_corrective_risks():
    # [OGB] Fig. 2: x = (1,2,3), y = (-10,-6,5), no intercept
    y = np.array([-10.0, -6.0, 5.0])
    gb = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    ogb = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    assert fit_weights(gb, y, fit_intercept=False).risk == pytest.approx(24 / 9, abs=1e-12)
    assert fit_weights(ogb, y, fit_intercept=False).risk == pytest.approx(1 / 9, abs=1e-12)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_squared_matches_ridge_normal_equations(rng, fit_intercept):
    Q = (rng.random((30, 4)) < 0.4).astype(float)
    y = rng.normal(size=30)
    res = fit_weights(Q, y, reg=0.7, fit_intercept=fit_intercept)
    A = np.column_stack([np.ones(30), Q]) if fit_intercept else Q
    P = 0.7 * np.eye(A.shape[1])
    if fit_intercept:
        P[0, 0] = 0.0
    coef = np.linalg.solve(A.T @ A + P, A.T @ y)
    np.testing.assert_allclose(res.weights, coef[1:] if fit_intercept else coef, atol=1e-10)


@pytest.mark.parametrize("loss", ["logistic", "poisson"])
@pytest.mark.parametrize("reg", [0.0, 0.5])
def test_glm_refit_matches_generic_optimizer(rng, loss, reg):
    Q = (rng.random((40, 3)) < 0.5).astype(float)
    y = np.where(rng.random(40) < 0.4, 1.0, -1.0) if loss == "logistic" \
        else rng.poisson(2.0, 40).astype(float)
    res = fit_weights(Q, y, loss, reg=reg)
    lo = get_loss(loss)
    ref = minimize(lambda c: lo.risk(c[0] + Q @ c[1:], y, weights=c[1:], reg=reg),
                   np.zeros(4), method="BFGS", options={"gtol": 1e-10})
    assert res.converged
    assert res.risk <= ref.fun + 1e-9
    assert res.risk == pytest.approx(ref.fun, abs=1e-8)


def test_offset_and_sample_weights(rng):
    Q = (rng.random((20, 2)) < 0.5).astype(float)
    y = rng.normal(size=20)
    off = rng.normal(size=20)
    w = rng.integers(1, 4, size=20).astype(float)
    res = fit_weights(Q, y, offset=off, sample_weight=w, fit_intercept=False)
    # weights = repeated rows
    rep = np.repeat(np.arange(20), w.astype(int))
    res2 = fit_weights(Q[rep], y[rep], offset=off[rep], fit_intercept=False)
    np.testing.assert_allclose(res.weights, res2.weights, atol=1e-10)
    assert res.risk == pytest.approx(res2.risk)
