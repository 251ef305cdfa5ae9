"""Losses: values, derivatives against finite differences, best constants, label checks."""

import numpy as np
import pytest

from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.losses import get_loss

LABELS = {
    "squared": np.array([-1.5, 0.0, 2.0, 3.5]),
    "logistic": np.array([-1.0, 1.0, 1.0, -1.0]),
    "poisson": np.array([0.0, 1.0, 3.0, 7.0]),
}


@pytest.mark.parametrize("name", sorted(LABELS))
def test_derivatives_match_finite_differences(name):
    loss = get_loss(name)
    y = LABELS[name]
    f = np.array([-0.7, 0.2, 1.1, 0.4])
    h = 1e-6
    num_g = (loss.value(f + h, y) - loss.value(f - h, y)) / (2 * h)
    num_h = (loss.gradient(f + h, y) - loss.gradient(f - h, y)) / (2 * h)
    np.testing.assert_allclose(loss.gradient(f, y), num_g, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(loss.hessian(f, y), num_h, rtol=1e-5, atol=1e-7)
    assert np.all(loss.hessian(f, y) > 0)


@pytest.mark.parametrize("name", sorted(LABELS))
def test_best_constant_minimizes_risk(name):
    loss = get_loss(name)
    y = LABELS[name]
    c = loss.best_constant(y)
    base = loss.risk(np.full(len(y), c), y)
    for delta in (-1e-3, 1e-3):
        assert loss.risk(np.full(len(y), c + delta), y) > base


def test_closed_forms():
    sq, lg, po = get_loss("squared"), get_loss("logistic"), get_loss("poisson")
    assert sq.value(np.array([3.0]), np.array([1.0]))[0] == 4.0
    assert lg.value(np.array([0.0]), np.array([1.0]))[0] == pytest.approx(np.log(2))
    # Poisson deviance vanishes at f = log y and equals exp(f) at y = 0
    assert po.value(np.array([np.log(3.0)]), np.array([3.0]))[0] == pytest.approx(0.0, abs=1e-12)
    assert po.value(np.array([0.5]), np.array([0.0]))[0] == pytest.approx(np.exp(0.5))
    np.testing.assert_allclose(lg.inverse_link(np.array([0.0, 50.0, -50.0])),
                               [0.5, 1.0, 0.0], atol=1e-12)


def test_risk_convention_ridge_and_weights():
    sq = get_loss("squared")
    f = np.array([1.0, 2.0])
    y = np.array([0.0, 0.0])
    # (1/n)(Σ l + λ||β||²)
    assert sq.risk(f, y, weights=[2.0], reg=0.5) == pytest.approx((1 + 4 + 0.5 * 4) / 2)
    # weights act as repeated points
    assert sq.risk(f, y, sample_weight=[2.0, 1.0]) == pytest.approx(
        sq.risk(np.array([1.0, 1.0, 2.0]), np.zeros(3)))


def test_label_errors():
    with pytest.raises(InvalidDataError, match="-1, \\+1"):
        get_loss("logistic").check_labels(np.array([0.0, 1.0]))
    with pytest.raises(InvalidDataError, match="y >= 0"):
        get_loss("poisson").check_labels(np.array([-1.0, 2.0]))
    with pytest.raises(InvalidParameterError, match="`loss`"):
        get_loss("hinge")
