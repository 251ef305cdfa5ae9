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
from rulemip.rules.problem import KRuleProblem


def best_single_interval(ds: Dataset, reg: float):
    """Brute force: best one-rule model over all intervals of the candidate thresholds."""
    cuts = candidate_thresholds(ds.X)[0]
    grid = [-math.inf, *cuts.tolist(), math.inf]
    best = None
    for lo, hi in itertools.combinations(grid, 2):
        rule = Rule([Condition(0, lo, hi, "x1")])
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
    problem = KRuleProblem.of(ds, 1, loss="squared", reg=0.1, fit_intercept=True, thresholds=[cuts])
    cert = make_certificate(problem, ens, risk=risk, lower_bound=risk - 1e-9, status="optimal",
                            bound_valid=True, engine="brute-force", options={"mip_gap": 1e-6})
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
    rule = Rule([Condition(0, 2.7, math.inf, "x1")], 1.0)
    off = dataclasses.replace(cert, ensemble=RuleEnsemble([rule], 0.0,
                                                          encoder=cert.ensemble.encoder))
    assert "language" in {c.name for c in verify(off, X, y).failures}


def test_optimal_status_needs_small_gap(certified):
    X, y, cert = certified
    problem = KRuleProblem.of(Dataset.from_arrays(X, y), 1, loss="squared", reg=0.1,
                              fit_intercept=True, thresholds=cert.thresholds)
    loose = make_certificate(problem, cert.ensemble, risk=cert.risk, lower_bound=cert.risk / 2,
                             status="optimal", bound_valid=True)
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
    problem = KRuleProblem.of(ds, 1, loss="squared", reg=0.1, fit_intercept=True, thresholds=[cuts])
    explicit = make_certificate(problem, cert.ensemble, risk=cert.risk,
                                lower_bound=cert.lower_bound, status="optimal", bound_valid=True,
                                options={"mip_gap": 1e-6})
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


def _forge_explicit(cert, thresholds, **options):
    """What a forger can do without a key: edit the problem (and options) and recompute
    the problem digest."""
    from rulemip.certify.certificate import problem_digest

    ths = tuple(tuple(float(v) for v in t) for t in thresholds)
    return dataclasses.replace(
        cert, thresholds=ths, threshold_rule="explicit", options={**cert.options, **options},
        problem_digest=problem_digest(
            cert.dataset_digest, loss=cert.loss, reg=cert.reg,
            fit_intercept=cert.fit_intercept, n_rules=cert.n_rules,
            max_rule_length=cert.max_rule_length, thresholds=ths, threshold_rule="explicit"))


@pytest.fixture
def fitted_certificate():
    """A certificate of the exact estimator with thresholds derived from the data."""
    from rulemip import ExactRuleEnsembleRegressor

    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 2))
    y = 2.0 * (X[:, 0] > 0.3) + 0.1 * rng.normal(size=40)
    # three rules: one-, two- and three-rule squared-loss bounds are re-derived by replaying
    # the box search and the k-box searches (test_one_rule_lower_bound_is_rederived,
    # tests/unit/certify/test_replay_pairs.py) where the language is small enough
    est = ExactRuleEnsembleRegressor(3, max_thresholds=4, preset=None, time_limit=20).fit(X, y)
    assert est.certificate_.threshold_rule == 4
    assert est.certificate_.options["threshold_source"] == "data"
    return X, y, est.certificate_


def test_report_lists_each_claim_as_rederived_or_taken_on_trust(fitted_certificate,
                                                                monkeypatch):
    """With no replay for its size (the three-box replay's limit set to 0 boxes), a
    three-rule bound is the solver's word, and the report says why it was not replayed."""
    from rulemip.certify import bound_replays

    limited = tuple(
        dataclasses.replace(kind, applies=bound_replays._kbox_applies(3, 0),
                            too_large=bound_replays._kbox_too_large(3, 0))
        if kind.witness == "three rules" else kind for kind in bound_replays.REPLAYS)
    monkeypatch.setattr(bound_replays, "REPLAYS", limited)
    X, y, cert = fitted_certificate
    report = verify(cert, X, y)
    assert report.ok
    assert any("beyond the 0 boxes verify replays for 3 rules" in c.message
               for c in report.checks)
    basis = {c.claim: c.basis for c in report.claims}
    assert basis == {"data": "re-derived", "thresholds": "re-derived", "model": "re-derived",
                     "risk": "re-derived", "lower bound": "taken on trust",
                     "gap": "taken on trust", "status": "taken on trust"}
    # issue 30, item 3: the gap and an 'optimal' status rest on the bound, so they inherit
    # its basis (they were listed as re-derived)
    assert report.taken_on_trust == ("lower bound", "gap", "status")
    text = str(report)
    assert "claims:" in text and text.endswith("certificate verified (taken on trust: "
                                               "lower bound, gap, status)")
    # a time-limited certificate's bound and status are the solver's word
    limited = dataclasses.replace(cert, status="time_limit")
    assert set(verify(limited, X, y).taken_on_trust) == {"lower bound", "gap", "status"}


def test_switching_data_thresholds_to_explicit_is_caught(fitted_certificate):
    """Dropping cut points shrinks the language (a higher bound becomes 'valid' for it);
    switching the rule to explicit and recomputing the digest must not make that pass."""
    X, y, cert = fitted_certificate
    used = {(c.feature, v) for r in cert.ensemble.rules for c in r.conditions
            for v in (c.lower, c.upper)}
    fewer = [[v for v in t if (j, v) in used] for j, t in enumerate(cert.thresholds)]
    assert sum(map(len, fewer)) < sum(map(len, cert.thresholds))
    forged = _forge_explicit(cert, fewer)
    report = verify(forged, X, y)
    assert [f.name for f in report.failures] == ["thresholds"]
    assert "switched" in report.failures[0].message
    # the forger who also rewrites the recorded provenance gets thresholds on trust only
    forged = _forge_explicit(cert, fewer, threshold_source="explicit")
    report = verify(forged, X, y)
    assert report.ok and "thresholds" in report.taken_on_trust
    assert "taken on trust: thresholds, lower bound" in str(report)
    # which strict mode refuses and the fit's own list exposes
    assert [f.name for f in verify(forged, X, y, strict=True).failures] == ["thresholds"]
    assert [f.name for f in verify(forged, X, y, thresholds=cert.thresholds).failures] \
        == ["thresholds"]


def test_explicit_thresholds_given_to_verify_are_rederived():
    from rulemip import ExactRuleEnsembleRegressor

    rng = np.random.default_rng(6)
    X = rng.normal(size=(30, 2))
    y = 2.0 * (X[:, 0] > 0.25) + 0.1 * rng.normal(size=30)
    cuts = [[-0.5, 0.25, 1.0], [0.0]]
    est = ExactRuleEnsembleRegressor(2, thresholds=cuts, preset=None, time_limit=20).fit(X, y)
    cert = est.certificate_
    assert cert.threshold_rule == "explicit" and cert.options["threshold_source"] == "explicit"
    report = verify(cert, X, y)
    assert report.ok and report.taken_on_trust[:2] == ("thresholds", "lower bound")
    assert not verify(cert, X, y, strict=True).ok
    given = verify(cert, X, y, thresholds=[[1.0, 0.25, -0.5], [0.0]], strict=True)
    assert given.ok and "thresholds" not in given.taken_on_trust
    moved = verify(cert, X, y, thresholds=[[-0.5, 0.3, 1.0], [0.0]])
    assert [f.name for f in moved.failures] == ["thresholds"]
    with pytest.raises(ValueError, match=r"thresholds\[0\]` contains nan"):
        verify(cert, X, y, thresholds=[[np.nan], [0.0]])


def test_weighted_fit_records_data_thresholds_and_verifies_with_its_weights():
    """Quantile cuts of a weighted fit are weighted quantiles: the certificate records the
    rule (not 'explicit') and verify re-derives them with the same weights."""
    from rulemip import ExactRuleEnsembleRegressor

    rng = np.random.default_rng(8)
    X = rng.normal(size=(40, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=40)
    w = rng.integers(1, 4, size=40).astype(float)
    est = ExactRuleEnsembleRegressor(1, max_thresholds=3, preset=None, time_limit=20)
    est.fit(X, y, sample_weight=w)
    cert = est.certificate_
    assert cert.threshold_rule == 3
    assert verify(cert, X, y, sample_weight=w, strict=True).ok


def test_one_rule_lower_bound_is_rederived():
    """One rule under squared loss: verify replays the exact box search, so the lower
    bound is re-derived, not taken on trust."""
    from rulemip import ExactRuleEnsembleRegressor

    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 2))
    y = 2.0 * (X[:, 0] > 0.3) + 0.1 * rng.normal(size=40)
    est = ExactRuleEnsembleRegressor(1, max_thresholds=4, time_limit=20).fit(X, y)
    report = verify(est.certificate_, X, y)
    assert report.ok
    assert report.taken_on_trust == ()
    assert {c.claim: c.basis for c in report.claims}["lower bound"] == "re-derived"


def test_problem_digest_is_the_sha256_of_the_canonical_json():
    """The digest (thresholds' text spliced in, and cached for the next certificate of the
    same problem) is the SHA-256 of the one canonical JSON of the problem's fields."""
    import hashlib

    from rulemip.certify.certificate import problem_digest

    rng = np.random.default_rng(5)
    cases = [((), None), (((),), 4), (((1.0, -0.0, 1e-300, 1e300, 0.1),), "explicit"),
             (tuple(tuple(rng.normal(size=7).tolist()) for _ in range(3)), None)]
    for ths, rule in cases:
        for _ in range(2):   # the second call reads the cached thresholds' text
            fields = {"data": "ab12", "loss": "squared", "reg": 0.5, "fit_intercept": True,
                      "n_rules": 2, "max_rule_length": None,
                      "thresholds": [list(t) for t in ths], "threshold_rule": rule}
            want = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
            assert problem_digest("ab12", loss="squared", reg=0.5, fit_intercept=True,
                                  n_rules=2, max_rule_length=None, thresholds=ths,
                                  threshold_rule=rule) == want
    other = problem_digest("ab12", loss="squared", reg=0.5, fit_intercept=True, n_rules=2,
                           max_rule_length=None, thresholds=((1.0, 2.0),), threshold_rule=None)
    assert other != problem_digest("ab12", loss="squared", reg=0.5, fit_intercept=True,
                                   n_rules=2, max_rule_length=None, thresholds=((1.0, 2.5),),
                                   threshold_rule=None)


def test_a_given_threshold_rule_is_the_derived_one_and_verify_checks_it():
    """A caller that made the thresholds itself passes their rule (not derived a second
    time): the certificate is the one re-derivation gives; a rule that does not make the
    recorded thresholds is refused by verify, which derives them again."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    y = (X[:, 0] > 0.2) + 0.1 * rng.normal(size=30)
    ds = Dataset.from_arrays(X, y)
    problem = KRuleProblem.of(ds, 1, loss="squared", reg=0.1, fit_intercept=True,
                              thresholds=candidate_thresholds(X, 3))
    ens = RuleEnsemble([], intercept=float(y.mean()))
    risk = float(np.var(y))
    kw = dict(risk=risk, lower_bound=0.0, status="feasible", bound_valid=True,
              engine="test", options={"max_thresholds": 3})
    derived = make_certificate(problem, ens, **kw)
    given = make_certificate(problem, ens, threshold_rule=3, **kw)
    assert derived.threshold_rule == given.threshold_rule == 3
    assert derived.problem_digest == given.problem_digest
    assert verify(given, X, y).ok
    lying = make_certificate(problem, ens, threshold_rule=5, **kw)
    assert not verify(lying, X, y).ok
