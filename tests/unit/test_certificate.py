"""Certificates: round trip, verification, and rejection of tampered claims."""

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from rulemip.certify import Certificate, make_certificate, verify
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import CertificateError
from rulemip.refit import fit_weights
from rulemip.rules import Condition, Rule, RuleEnsemble


def best_single_interval(ds: Dataset, reg: float):
    """Brute force: best one-rule model over all intervals of the candidate thresholds."""
    cuts = candidate_thresholds(ds.X)[0]
    grid = [-math.inf, *cuts.tolist(), math.inf]
    best = None
    for lo, hi in itertools.combinations(grid, 2):
        rule = Rule([Condition(0, lo, hi, "x")])
        q = rule.query(ds.X).astype(float)
        res = fit_weights(q[:, None], ds.y, reg=reg)
        if best is None or res.risk < best[0]:
            best = (res.risk, RuleEnsemble([rule.with_weight(res.weights[0])], res.intercept,
                                           encoder=ds.encoder))
    return best, cuts


@pytest.fixture
def certified():
    X = np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]])
    y = np.array([0.1, 0.3, 2.2, 2.0, 2.4, 0.2])
    ds = Dataset.from_arrays(X, y)
    (risk, ens), cuts = best_single_interval(ds, reg=0.1)
    cert = make_certificate(ds, ens, loss="squared", reg=0.1, fit_intercept=True, n_rules=1,
                            thresholds=[cuts], risk=risk, lower_bound=risk - 1e-9,
                            status="optimal", bound_valid=True, engine="brute-force",
                            options={"mip_gap": 1e-6})
    return X, y, cert


def test_valid_certificate_verifies_and_round_trips(certified, tmp_path):
    X, y, cert = certified
    report = verify(cert, X, y)
    assert report.ok, str(report)
    path = cert.save(tmp_path / "sub" / "cert.json")
    again = Certificate.load(path)
    assert again.to_dict() == cert.to_dict()
    assert verify(path, X, y).ok
    assert "optimal" in cert.summary()


def test_tampered_weight_is_rejected(certified):
    X, y, cert = certified
    rule = cert.ensemble.rules[0]
    bad = dataclasses.replace(cert, ensemble=RuleEnsemble(
        [rule.with_weight(rule.weight + 0.5)], cert.ensemble.intercept,
        encoder=cert.ensemble.encoder))
    report = verify(bad, X, y)
    assert not report.ok
    assert [c.name for c in report.failures] == ["risk"]
    assert "differs from the claimed" in report.failures[0].message


def test_tampered_claimed_risk_and_false_bound(certified):
    X, y, cert = certified
    lower = dataclasses.replace(cert, risk=cert.risk * 0.9)
    names = {c.name for c in verify(lower, X, y).failures}
    assert {"risk", "bounds order"} <= names
    # a bound above what the model itself attains is refuted
    high = dataclasses.replace(cert, lower_bound=cert.risk + 1.0, gap=0.0)
    names = {c.name for c in verify(high, X, y).failures}
    assert {"bounds order", "bound not refuted"} <= names
    with pytest.raises(CertificateError, match="bound"):
        verify(high, X, y, raise_on_failure=True)


def test_other_data_and_off_grid_rules_are_rejected(certified):
    X, y, cert = certified
    y2 = y.copy()
    y2[0] += 1.0
    assert "data" in {c.name for c in verify(cert, X, y2).failures}
    rule = Rule([Condition(0, 2.7, math.inf, "x")], 1.0)
    off = dataclasses.replace(cert, ensemble=RuleEnsemble([rule], 0.0,
                                                          encoder=cert.ensemble.encoder))
    assert "language" in {c.name for c in verify(off, X, y).failures}


def test_optimal_status_needs_small_gap(certified):
    X, y, cert = certified
    loose = make_certificate(Dataset.from_arrays(X, y), cert.ensemble, loss="squared",
                             reg=0.1, fit_intercept=True, n_rules=1,
                             thresholds=cert.thresholds, risk=cert.risk,
                             lower_bound=cert.risk / 2, status="optimal", bound_valid=True)
    assert "optimality" in {c.name for c in verify(loose, X, y).failures}


def test_malformed_documents(tmp_path):
    p = tmp_path / "x.json"
    p.write_text(json.dumps({"format": "other"}))
    with pytest.raises(CertificateError, match=r"not a rulemip\.Certificate"):
        Certificate.load(p)
    p.write_text("{")
    with pytest.raises(CertificateError, match="not JSON"):
        Certificate.load(p)


def test_explicit_thresholds_are_bound_by_the_problem_digest(certified):
    X, y, cert = certified
    ds = Dataset.from_arrays(X, y)
    cuts = (*cert.thresholds[0], 9.5)  # not what the data's midpoints give: explicit
    explicit = make_certificate(ds, cert.ensemble, loss="squared", reg=0.1,
                                fit_intercept=True, n_rules=1, thresholds=[cuts],
                                risk=cert.risk, lower_bound=cert.lower_bound,
                                status="optimal", bound_valid=True, options={"mip_gap": 1e-6})
    assert explicit.threshold_rule == "explicit" and cert.threshold_rule is None
    assert verify(explicit, X, y).ok
    doc = explicit.to_dict()
    doc["problem"]["thresholds"][0].append(20.0)
    report = verify(Certificate.from_dict(doc), X, y)
    assert [c.name for c in report.failures] == ["problem"]


def test_format_1_loads_but_does_not_verify(certified):
    X, y, cert = certified
    doc = cert.to_dict()
    doc["version"] = 1
    del doc["problem"]["threshold_rule"], doc["problem"]["digest"]
    report = verify(Certificate.from_dict(doc), X, y)
    assert [c.name for c in report.failures] == ["problem"]
    assert "format-1" in report.failures[0].message


def test_non_numeric_mip_gap_option_is_refused(certified):
    doc = certified[2].to_dict()
    doc["solver"]["options"]["mip_gap"] = "tiny"
    with pytest.raises(CertificateError, match=r"solver\.options\.mip_gap"):
        Certificate.from_dict(doc)
