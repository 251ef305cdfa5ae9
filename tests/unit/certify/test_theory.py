"""Closed forms of [GAP] §3 checked against direct computation on D(k, Δ)."""

import itertools

import numpy as np
import pytest

from rulemip.certify.theory import (
    alternating_gap,
    classify_gaps,
    delta_in_range,
    delta_upper,
    lemma1_risk,
    lemma2_risk,
    theorem1_bound,
    xi,
)
from rulemip.data import alternating
from rulemip.refit import fit_weights


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_lemma1_is_the_reference_ensemble_risk(k):
    delta = 0.03
    _, y = alternating(k, delta)
    n = 2 * k - 1
    Q = np.zeros((n, k))
    Q[:, 0] = 1.0
    for j in range(2, k + 1):
        Q[2 * (j - 1) - 1, j - 1] = 1.0  # point i = 2(j-1), 1-based
    assert fit_weights(Q, y, fit_intercept=False).risk == pytest.approx(lemma1_risk(k, delta))


def idealized_boosting_risk(y, k):
    """Forward selection of intervals on 1-d data: best single interval each round with
    earlier weights fixed (stagewise, no intercept)."""
    n = len(y)
    f = np.zeros(n)
    for _ in range(k):
        best = None
        for lo, hi in itertools.combinations(range(n + 1), 2):
            q = np.zeros(n)
            q[lo:hi] = 1.0
            r = y - f
            beta = q @ r / q.sum()
            risk = np.mean((r - beta * q) ** 2)
            if best is None or risk < best[0] - 1e-15:
                best = (risk, beta * q)
        f = f + best[1]
    return np.mean((y - f) ** 2)


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_lemma2_matches_idealized_boosting(k):
    delta = 0.5 * delta_upper(k) if k > 2 else 0.2
    assert delta_in_range(k, delta)
    _, y = alternating(k, delta)
    assert idealized_boosting_risk(y, k) == pytest.approx(lemma2_risk(k, delta), rel=1e-10)


@pytest.mark.parametrize("k", [1, 2, 3, 6, 10])
def test_eq22_and_theorem1(k):
    for delta in (0.0, 0.01, 0.05):
        assert alternating_gap(k, delta) == pytest.approx(theorem1_bound(k) - xi(k, delta))
    assert theorem1_bound(2) == pytest.approx(1 / 3)
    assert alternating_gap(k, 1e-9) == pytest.approx(theorem1_bound(k), abs=1e-7)


def test_delta_range():
    assert delta_upper(2) == pytest.approx(np.sqrt(2))
    assert delta_upper(3) == pytest.approx(1 / (2 + np.sqrt(2) / 2))
    assert not delta_in_range(3, 0.5)


def test_classification_quadrants():
    c = classify_gaps([0.2, 0.1, 0.05], [3, 2, 4])
    assert c.tight and c.representative and c.quadrant == "tight and representative"
    c = classify_gaps([0.001, 0.002, 0.6], [3, 2, 4])
    assert not c.tight and c.exceeding == (2,)
    assert not c.representative
    assert c.quadrant == "not tight, not representative"
