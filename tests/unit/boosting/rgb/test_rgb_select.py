"""beta=None: RGB's beta chosen by an internal validation split (rulemip.boosting.rgb.select)."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.boosting.rgb.algorithm import decision_function, fit_rgb
from rulemip.boosting.rgb.families import FamilyGrid
from rulemip.boosting.rgb.select import (
    AUTO_BETAS,
    FALLBACK_BETA,
    VALIDATION_FRACTION,
    validation_split,
)
from rulemip.estimators.rgb import RGBClassifier, RGBRegressor
from rulemip.losses import get_loss

GRID = [(1, 0.5), (2, 1.0), (4, 2.0), (16, 4.0)]


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    X = rng.normal(size=(150, 4))
    f = X[:, 0] - np.abs(X[:, 1])
    return X, f + 0.8 * rng.normal(size=150), (f + 0.8 * rng.normal(size=150) > 0).astype(int)


def test_split_sizes_and_strata() -> None:
    y = np.array([0] * 70 + [1] * 30)
    train, val = validation_split(y, True, np.random.RandomState(0))  # type: ignore[misc]
    assert len(np.intersect1d(train, val)) == 0 and len(train) + len(val) == 100
    assert (y[val] == 1).sum() == 6 and (y[val] == 0).sum() == 14
    train, val = validation_split(np.arange(100.0), False,  # type: ignore[misc]
                                  np.random.RandomState(0))
    assert len(val) == round(VALIDATION_FRACTION * 100)
    assert validation_split(np.arange(30.0), False, np.random.RandomState(0)) is None
    assert validation_split(np.array([0] * 95 + [1] * 5), True,
                            np.random.RandomState(0)) is None


def test_chosen_beta_has_the_least_validation_loss_and_the_model_is_refitted(data) -> None:  # type: ignore[no-untyped-def]
    X, y, _ = data
    kw = dict(n_estimators=15, n_samples_per_round=3, families=GRID, random_state=4)
    model = RGBRegressor(**kw).fit(X, y)  # type: ignore[arg-type]
    # recompute the selection by hand on the same split
    train, val = validation_split(y, False, np.random.RandomState(4))  # type: ignore[misc]
    losses = {}
    for b in AUTO_BETAS:
        r = fit_rgb(X[train], y[train], loss="squared", families=FamilyGrid.from_pairs(GRID),
                    n_estimators=15, n_samples_per_round=3, beta=b, random_state=4,
                    learning_rate=model.learning_rate_)
        F = decision_function(r.intercept, r.trees, r.coefs, X[val])
        losses[b] = float(np.mean(get_loss("squared").value(F, y[val])))
    assert model.beta_validation_losses_ == pytest.approx(losses, rel=1e-12)
    assert model.beta_ == min(losses, key=lambda b: (losses[b], -b))
    fixed = RGBRegressor(beta=model.beta_, **kw).fit(X, y)  # type: ignore[arg-type]
    np.testing.assert_array_equal(model.predict(X), fixed.predict(X))
    assert fixed.beta_ == model.beta_ and fixed.beta_validation_losses_ == {}


def test_classifier_selects_on_a_stratified_split(data) -> None:  # type: ignore[no-untyped-def]
    X, _, y = data
    model = RGBClassifier(n_estimators=10, families=GRID, random_state=0).fit(X, y)
    assert set(model.beta_validation_losses_) == set(AUTO_BETAS)
    assert model.beta_ in AUTO_BETAS
    # the validation loss is the mean logistic loss: between 0 and log 2 for useful models
    assert all(0 < v < 1.0 for v in model.beta_validation_losses_.values())


def test_tiny_samples_fall_back_without_a_split() -> None:
    X = np.arange(24, dtype=float).reshape(12, 2)
    model = RGBRegressor(n_estimators=3, random_state=0).fit(X, X[:, 0])
    assert model.beta_ == FALLBACK_BETA and model.beta_validation_losses_ == {}


def test_selection_is_reproducible(data) -> None:  # type: ignore[no-untyped-def]
    X, _, y = data
    a = RGBClassifier(n_estimators=8, families=GRID, random_state=5).fit(X, y)
    b = RGBClassifier(n_estimators=8, families=GRID, random_state=5).fit(X, y)
    assert a.beta_validation_losses_ == b.beta_validation_losses_
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
