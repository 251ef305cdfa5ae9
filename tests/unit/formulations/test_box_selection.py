"""Box-selection CIP pieces that need no solver: boxes, oracles, gradients, bounds,
decoding, enumeration (docs/explanation/box_selection.md)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import (
    enumerate_optimum,
    segmentation_bound,
)
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.formulations.levels import levels_bound
from rulemip.refit import fit_weights
from rulemip.rules import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.testing.brute_force import brute_force_optimum, distinct_boxes


def _dataset(rng, loss, n=12, d=2, levels=4):
    X = rng.integers(0, levels, size=(n, d)).astype(float)
    if loss == "squared":
        y = rng.normal(size=n) * 2
    elif loss == "logistic":
        y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
        y[:2] = [1.0, -1.0]
    else:
        y = rng.poisson(2.0, size=n).astype(float)
        y[0] = max(y[0], 1.0)
    w = rng.uniform(0.5, 2.0, size=n)
    return Dataset.from_arrays(X, y, loss=loss, sample_weight=w)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("max_rule_length", [None, 1])
def test_boxes_match_independent_enumeration(rng, fit_intercept, max_rule_length):
    ds = _dataset(rng, "squared", n=15, d=2)
    prob = BoxSelectionCIP(Language(2, max_rule_length=max_rule_length,
                                    fit_intercept=fit_intercept),
                           max_thresholds=3).build(ds)
    boxes, Q = distinct_boxes(ds.X, candidate_thresholds(ds.X, 3), fit_intercept,
                              max_rule_length)
    assert prob.n_boxes == len(boxes)
    # the same set of query vectors on the rows
    ours = {np.packbits(prob.boxes.cover[prob.cells.cell_of_row, b]).tobytes()
            for b in range(prob.n_boxes)}
    theirs = {np.packbits(Q[:, b].astype(bool)).tobytes() for b in range(Q.shape[1])}
    assert ours == theirs


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_oracle_value_is_refit_with_repeated_columns(rng, loss, fit_intercept):
    ds = _dataset(rng, loss)
    prob = BoxSelectionCIP(Language(3, fit_intercept=fit_intercept), loss=loss, reg=0.7,
                           max_thresholds=3).build(ds)
    for _ in range(5):
        z = np.zeros(prob.n_boxes)
        for b in rng.choice(prob.n_boxes, size=3):
            z[b] += 1
        cols = [b for b in np.flatnonzero(z) for _ in range(int(z[b]))]
        Qrows = prob.boxes.cover[prob.cells.cell_of_row][:, cols].astype(float)
        ref = fit_weights(Qrows, ds.y, loss, 0.7, fit_intercept, sample_weight=ds.weights)
        val, _ = prob.oracle.value_and_gradient(z)
        assert val == pytest.approx(ref.risk, rel=1e-9, abs=1e-12)
        ens, risk = prob.decode(z)
        assert risk == pytest.approx(ref.risk, rel=1e-9, abs=1e-12)
        assert ens.risk(ds.X, ds.y, 0.7, ds.sample_weight) == pytest.approx(risk, rel=1e-9)
        # copies of one box carry equal weights
        assert len(ens) == int(z.sum())


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_gradient_matches_finite_differences(rng, loss, fit_intercept):
    ds = _dataset(rng, loss)
    prob = BoxSelectionCIP(Language(3, fit_intercept=fit_intercept), loss=loss, reg=0.5,
                           max_thresholds=3).build(ds)
    B = prob.n_boxes
    z = np.zeros(B)
    z[rng.choice(B, size=3, replace=False)] = [0.6, 1.0, 2.3]
    _, g = prob.oracle.value_and_gradient(z)
    h = 1e-5
    for b in range(B):
        e = np.zeros(B)
        e[b] = h
        if z[b] > 0:
            fd = (prob.oracle.value_and_gradient(z + e)[0]
                  - prob.oracle.value_and_gradient(z - e)[0]) / (2 * h)
        else:  # one-sided at the boundary z_b = 0 (second-order forward difference)
            f0 = prob.oracle.value_and_gradient(z)[0]
            f1 = prob.oracle.value_and_gradient(z + e)[0]
            f2 = prob.oracle.value_and_gradient(z + 2 * e)[0]
            fd = (-3 * f0 + 4 * f1 - f2) / (2 * h)
        assert g[b] == pytest.approx(fd, rel=1e-4, abs=1e-7)
    assert np.all(g <= 0)


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
def test_cuts_underestimate_everywhere(rng, loss):
    ds = _dataset(rng, loss, n=10)
    prob = BoxSelectionCIP(Language(2), loss=loss, reg=0.3, max_thresholds=2).build(ds)
    B = prob.n_boxes
    pts = [np.zeros(B)] + [np.eye(B)[b] * m for b in range(B) for m in (1, 2)]
    cuts = [(z, *prob.oracle.value_and_gradient(z)) for z in pts[:8]]
    for z in pts:
        v = prob.oracle.value_and_gradient(z)[0]
        for zh, vh, gh in cuts:
            assert vh + gh @ (z - zh) <= v + 1e-10


def test_enumeration_equals_brute_force(rng):
    ds = _dataset(rng, "squared", n=10)
    bf = brute_force_optimum(ds.X, ds.y, 3, "squared", 0.2, True, max_thresholds=2,
                             sample_weight=ds.sample_weight)
    prob = BoxSelectionCIP(Language(3), reg=0.2, max_thresholds=2).build(ds)
    _z, val, lb, complete = enumerate_optimum(prob.oracle, prob.n_boxes, 3)
    assert complete and val == pytest.approx(bf.risk, rel=1e-10)
    assert lb <= val and lb == pytest.approx(val, rel=1e-8)
    assert prob.bound <= bf.risk + 1e-12


def test_segmentation_and_levels_dp_match_exhaustive(rng):
    v = rng.normal(size=7)
    w = rng.uniform(0.5, 2, size=7)

    def sse(groups):
        return sum(np.sum(w[g] * (v[g] - np.average(v[g], weights=w[g])) ** 2)
                   for g in groups if len(g))

    for S in (1, 2, 3):
        best_seg = min(sse(np.split(np.arange(7), list(cuts)))
                       for cuts in itertools.combinations(range(1, 7), S - 1))
        assert segmentation_bound(v, w, S) == pytest.approx(best_seg, rel=1e-10, abs=1e-12)
        # the blocked evaluation of the segment costs is the same DP
        for block in (1, 2, 3):
            assert segmentation_bound(v, w, S, block=block) == pytest.approx(
                best_seg, rel=1e-10, abs=1e-12)
        # levels: any assignment of 7 points to S labels
        best_lv = min(sse([np.flatnonzero(np.asarray(lab) == s) for s in range(S)])
                      for lab in itertools.product(range(S), repeat=7))
        assert levels_bound(v, w, S) == pytest.approx(best_lv, rel=1e-10, abs=1e-12)


def test_encode_warm_start_round_trip(rng):
    ds = _dataset(rng, "squared", n=15)
    prob = BoxSelectionCIP(Language(3), reg=0.5, max_thresholds=3).build(ds)
    z = np.zeros(prob.n_boxes)
    z[[1, 4]] = [1, 2]
    ens, _ = prob.decode(z)
    np.testing.assert_array_equal(prob.encode(ens), z)
    assert prob.encode(RuleEnsemble([])).sum() == 0


def test_parameter_errors():
    with pytest.raises(InvalidParameterError, match="reg"):
        BoxSelectionCIP(Language(2), reg=0.0)
    with pytest.raises(InvalidParameterError, match="n_rules"):
        BoxSelectionCIP(Language(0))
    with pytest.raises(InvalidParameterError, match="loss"):
        BoxSelectionCIP(Language(2), loss="hinge")
    with pytest.raises(InvalidParameterError, match="dataset"):
        BoxSelectionCIP(Language(2)).build(np.zeros((3, 1)))
