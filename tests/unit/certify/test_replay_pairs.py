"""Solver-free replay of a two- or three-rule optimum (rulemip.certify.replay_pairs): it
re-derives the brute-force optimum as a lower bound and refutes any bound above it."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.certify.replay_pairs import replay_three_rules, replay_two_rules
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.rules.problem import KRuleProblem
from rulemip.testing.brute_force import brute_force_optimum


@pytest.mark.parametrize(("seed", "reg", "fit_intercept"), [(0, 1e-3, True), (1, 1.0, False),
                                                            (2, 0.0, True)])
@pytest.mark.parametrize("k", [2, 3])
def test_replay_proves_the_optimum_and_refutes_a_higher_bound(seed, reg, fit_intercept, k):
    replay = replay_two_rules if k == 2 else replay_three_rules
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(16, 3)).astype(float)
    y = X[:, 0] * (X[:, 2] > 1.5) + rng.normal(scale=0.5, size=16)
    th = candidate_thresholds(X, 2)
    ds = Dataset.from_arrays(X, y)
    opt = brute_force_optimum(X, y, k, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                              max_rule_length=2).risk
    problem = KRuleProblem.of(ds, k, reg=reg, fit_intercept=fit_intercept, thresholds=th,
                              max_rule_length=2)
    ok = replay(problem, lower_bound=opt)
    assert ok.proved and not ok.refuted
    assert replay(problem, lower_bound=0.5 * opt).proved
    forged = replay(problem, lower_bound=opt * (1 + 1e-6) + 1e-9)
    assert forged.refuted and not forged.proved
    assert forged.best_risk == pytest.approx(opt, rel=1e-9)


def test_verify_replays_a_two_rule_certificate_and_refutes_a_forged_one():
    """A genuine k = 2 optimum of a capped language: verify lists its bound as
    re-derived. A worse pair claimed optimal with its own risk as the bound is refuted by
    the replay (a better pair exists)."""
    from rulemip.algorithms.fit_plan import solve_exact
    from rulemip.certify import make_certificate, verify
    from rulemip.rules import RuleEnsemble

    rng = np.random.default_rng(4)
    X = rng.integers(0, 5, size=(40, 3)).astype(float)
    y = X[:, 0] * (X[:, 2] > 1.5) - (X[:, 1] < 2) + rng.normal(scale=0.5, size=40)
    th = candidate_thresholds(X, 3)
    ds = Dataset.from_arrays(X, y)
    problem = KRuleProblem.of(ds, 2, reg=0.01, thresholds=th, max_rule_length=2)
    res = solve_exact(problem, engine="kbox")
    assert res.is_optimal

    def cert_of(ens, lb, status):
        problem = KRuleProblem.of(ds, 2, loss="squared", reg=0.01, fit_intercept=True,
                                  thresholds=th, max_rule_length=2)
        return make_certificate(problem, ens, risk=float(ens.risk(X, y, reg=0.01)), lower_bound=lb,
                                status=status, bound_valid=True, options={"max_thresholds": 3})

    good = verify(cert_of(res.ensemble, res.lower_bound, "optimal"), X, y)
    assert good.ok
    basis = {c.claim: c.basis for c in good.claims}
    assert basis["lower bound"] == "re-derived"
    worse = RuleEnsemble(res.ensemble.rules[:1], res.ensemble.intercept, "squared")
    worse_risk = float(worse.risk(X, y, reg=0.01))
    assert worse_risk > res.risk
    forged = verify(cert_of(worse, worse_risk, "optimal"), X, y)
    assert not forged.ok
    assert any("refutes" in c.message for c in forged.failures)
