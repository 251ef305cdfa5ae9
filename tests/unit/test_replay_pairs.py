"""Solver-free replay of a two-rule optimum (rulemip.certify.replay_pairs): it re-derives
the brute-force optimum as a lower bound and refutes any bound above it."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.certify.replay_pairs import replay_two_rules
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.testing.brute_force import brute_force_optimum


@pytest.mark.parametrize(("seed", "reg", "fit_intercept"), [(0, 1e-3, True), (1, 1.0, False),
                                                            (2, 0.0, True)])
def test_replay_proves_the_optimum_and_refutes_a_higher_bound(seed, reg, fit_intercept):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(16, 3)).astype(float)
    y = X[:, 0] * (X[:, 2] > 1.5) + rng.normal(scale=0.5, size=16)
    th = candidate_thresholds(X, 2)
    ds = Dataset.from_arrays(X, y)
    opt = brute_force_optimum(X, y, 2, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                              max_rule_length=2).risk
    kw = {"reg": reg, "fit_intercept": fit_intercept, "max_rule_length": 2}
    ok = replay_two_rules(ds, th, lower_bound=opt, **kw)
    assert ok.proved and not ok.refuted
    assert replay_two_rules(ds, th, lower_bound=0.5 * opt, **kw).proved
    forged = replay_two_rules(ds, th, lower_bound=opt * (1 + 1e-6) + 1e-9, **kw)
    assert forged.refuted and not forged.proved
    assert forged.best_risk == pytest.approx(opt, rel=1e-9)
