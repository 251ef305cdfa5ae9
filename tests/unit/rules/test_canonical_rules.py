"""Canonical representatives of rules tied by covering the same rows
(rulemip/rules/canonical.py): every box of a coverage class maps to one rule of that
class, whatever the row order or repetition of the data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rulemip.data import Dataset, candidate_thresholds
from rulemip.rules import Rule, RuleEnsemble, conditions_from_box
from rulemip.rules.canonical import canonical_ensemble, canonical_rule
from rulemip.rules.problem import KRuleProblem


def _problem(X, thresholds, sample_weight=None, fit_intercept=False):
    """A problem on the rows ``X`` (labels unused by the canonical rules)."""
    ds = Dataset.from_arrays(X, np.zeros(len(X)), sample_weight=sample_weight)
    return KRuleProblem.of(ds, 2, thresholds=thresholds, fit_intercept=fit_intercept)


def _boxes(thresholds, d, max_features):
    """Every box of at most ``max_features`` features on the threshold grid."""
    for size in range(1, max_features + 1):
        for feats in itertools.combinations(range(d), size):
            grids = [[-math.inf, *thresholds[j], math.inf] for j in feats]
            for bounds in itertools.product(*[list(itertools.combinations(g, 2))
                                              for g in grids]):
                lo, hi = np.full(d, -math.inf), np.full(d, math.inf)
                for j, (a, b) in zip(feats, bounds, strict=True):
                    lo[j], hi[j] = a, b
                if np.isinf(lo).all() and np.isinf(hi).all():
                    continue
                yield Rule(conditions_from_box(lo, hi), 1.0)


def test_every_box_of_a_coverage_class_maps_to_one_rule_of_that_class():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(9, 3)).astype(float)
    ths = candidate_thresholds(X, 2)
    by_cover: dict[bytes, set[str]] = {}
    for rule in _boxes(ths, 3, 2):
        canon = canonical_rule(rule, X, ths)
        cover = rule.query(X)
        np.testing.assert_array_equal(canon.query(X), cover)  # same rows
        assert len({c.feature for c in canon.conditions}) <= \
            len({c.feature for c in rule.conditions})  # no longer than the rule
        for c in canon.conditions:  # bounds on the grid
            for v in (c.lower, c.upper):
                assert not math.isfinite(v) or v in set(ths[c.feature].tolist())
        by_cover.setdefault(cover.tobytes(), set()).add(canon.to_text())
    assert len(by_cover) > 20
    # boxes that cover no row are kept as they are (under a ridge their weight is 0)
    by_cover.pop(np.zeros(len(X), dtype=bool).tobytes(), None)
    many = [k for k, v in by_cover.items() if len(v) != 1]
    assert not many, [by_cover[k] for k in many]


def test_canonical_rule_ignores_row_order_repetition_and_zero_weights():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 6))
    ths = candidate_thresholds(X, 4)
    # two boxes on different features covering the same rows
    order = np.argsort(X[:, 2])
    cut = float(ths[2][1])
    a = Rule(conditions_from_box(*_interval(6, 2, -math.inf, cut)), 2.0)
    rows = a.query(X)
    canon = canonical_rule(a, X, ths)
    perm = rng.permutation(15)
    reps = rng.integers(1, 4, size=15)
    assert canonical_rule(a, X[perm], ths).to_text() == canon.to_text()
    assert canonical_rule(a, np.repeat(X, reps, axis=0), ths).to_text() == canon.to_text()
    np.testing.assert_array_equal(canon.query(X), rows)
    # rows of weight zero do not count: the ensemble helper drops them
    w = np.ones(15)
    w[order[-1]] = 0.0
    extra = np.vstack([X, X[order[-1]] + 100.0])
    ens = canonical_ensemble(RuleEnsemble([a], 0.5), _problem(extra, ths, np.append(w, 0.0)))
    assert ens.intercept == 0.5 and ens.rules[0].weight == 2.0


def _interval(d, j, lo, hi):
    lower, upper = np.full(d, -math.inf), np.full(d, math.inf)
    lower[j], upper[j] = lo, hi
    return lower, upper


def test_rules_covering_all_or_no_rows():
    X = np.arange(6.0).reshape(-1, 1)
    ths = candidate_thresholds(X)
    everything = Rule(conditions_from_box(*_interval(1, 0, -math.inf, 10.0)), 1.0)
    assert canonical_rule(everything, X, ths).conditions == ()
    nothing = Rule(conditions_from_box(*_interval(1, 0, 10.0, math.inf)), 1.0)
    assert canonical_rule(nothing, X, ths) == nothing


def test_rule_and_its_complement_are_oriented_canonically_with_an_intercept():
    """c + w q_A = (c + w) - w q_B when B covers exactly the rows A does not: the
    ensembles {A, A} and {A, B} are one optimum and map to the same model."""
    X = np.arange(8.0).reshape(-1, 1)
    ths = candidate_thresholds(X)
    a = Rule(conditions_from_box(*_interval(1, 0, -math.inf, 2.5)), -1.5)  # covers row 0
    b = Rule(conditions_from_box(*_interval(1, 0, 2.5, math.inf)), 1.5)
    twice = RuleEnsemble([a, a], 4.0)
    pair = RuleEnsemble([a, b], 4.0 - 1.5)
    np.testing.assert_allclose(twice.predict(X), pair.predict(X))
    one = canonical_ensemble(twice, _problem(X, ths, fit_intercept=True))
    other = canonical_ensemble(pair, _problem(X, ths, fit_intercept=True))
    assert one.to_text() == other.to_text()
    assert all(not r.query(X)[0] for r in one.rules)  # the reference row is not covered
    np.testing.assert_allclose(one.predict(X), twice.predict(X))
    assert one.risk(X, X[:, 0], reg=1.0) == pytest.approx(twice.risk(X, X[:, 0], reg=1.0))
    # without an intercept nothing is flipped
    assert canonical_ensemble(twice, _problem(X, ths)).to_text() == twice.to_text()


@pytest.mark.parametrize("seed", range(20))
def test_smallest_row_is_lexsorts_first(seed):
    """The reference row: ``np.lexsort``'s first row (ties: the first index), in O(n)."""
    from rulemip.rules.canonical import lexicographically_smallest_row

    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 3, size=(int(rng.integers(1, 40)), int(rng.integers(1, 5))))
    rows = rows.astype(float)
    assert lexicographically_smallest_row(rows) == int(np.lexsort(rows.T[::-1])[0])
