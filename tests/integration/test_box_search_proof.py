"""A one-rule squared-loss certificate is proved without a solver: verify replays the exact
box search (rulemip/certify/replay.py) and rejects forged claims of optimality."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import rulemip
from rulemip.certify.verification import verify


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(120, 4))
    y = 2.0 * ((X[:, 0] > 0.3) & (X[:, 2] < 0.5)) + X[:, 1] + 0.3 * rng.normal(size=120)
    return X, y


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_one_rule_certificate_is_replayed(data, fit_intercept):
    X, y = data
    model = rulemip.ExactRuleEnsembleRegressor(n_rules=1, reg=0.1, max_thresholds=6,
                                               fit_intercept=fit_intercept).fit(X, y)
    cert = model.certificate_
    assert cert.status == "optimal"
    report = verify(cert, X, y)
    assert report.ok
    proof = next(c for c in report.checks if c.name == "proof")
    assert proof.ok and proof.message.startswith("replayed")


def test_forged_optimality_claim_is_refuted(data):
    X, y = data
    best = rulemip.ExactRuleEnsembleRegressor(n_rules=1, reg=0.1, max_thresholds=6).fit(X, y)
    # a worse rule on the same thresholds: the best rule with one proposition
    worse = rulemip.ExactRuleEnsembleRegressor(n_rules=1, reg=0.1, max_thresholds=6,
                                               max_rule_length=1).fit(X, y)
    assert worse.certificate_.risk > best.certificate_.risk * (1 + 1e-6)
    r = worse.certificate_.risk
    forged = dataclasses.replace(best.certificate_, ensemble=worse.certificate_.ensemble,
                                 risk=r, lower_bound=r, gap=0.0)
    report = verify(forged, X, y)
    assert not report.ok
    failed = {c.name for c in report.failures}
    assert failed == {"proof"}, report
