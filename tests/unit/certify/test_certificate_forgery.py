"""Forged certificates (issue 30, items 2–4): every claim kind verify knows — risk, lower
bound, one-rule proof, 1-swap optimality, thresholds — edited as a forger would (huge
weights with the claimed risk recomputed to match, edited tolerances), through the API and
the command line. Each forgery is built from a genuine certificate that verifies, and the
forged claim is false by construction (a brute-force check or a refit shows it)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from rulemip.algorithms.local.rule_swaps import refit_ensemble, swap_descent
from rulemip.certify import Certificate, make_certificate, verify
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import CertificateError
from rulemip.rules import Rule, RuleEnsemble
from rulemip.rules.ensemble import conditions_from_box
from rulemip.testing.brute_force import brute_force_optimum

REG = 0.01


def _data(seed: int = 1, n: int = 40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 2.0 * (X[:, 0] > 0) - 1.0 * (X[:, 1] < 0.3) + 0.4 * rng.normal(size=n)
    return X, y


def _certificate(ds, ens, th, k, *, lower_bound=0.0, status="feasible", local=None):
    risk = float(ens.risk(ds.X, ds.y, reg=REG))
    cert = make_certificate(ds, ens, loss="squared", reg=REG, fit_intercept=True, n_rules=k,
                            thresholds=th, risk=risk, lower_bound=min(lower_bound, risk),
                            status=status, bound_valid=True, options={"max_thresholds": 4})
    if local is not None:
        cert = dataclasses.replace(cert, local_optimality=local)
    return cert


def _recomputed(cert, ds, ens, **claims):
    """``cert`` with ``ens`` and its risk recomputed to match (what a forger does)."""
    risk = float(ens.risk(ds.X, ds.y, reg=REG))
    lb = claims.pop("lower_bound", cert.lower_bound)
    from rulemip.solvers.result import relative_gap

    return dataclasses.replace(cert, ensemble=ens, risk=risk, lower_bound=lb,
                               gap=relative_gap(risk, lb), **claims)


@pytest.fixture(scope="module")
def swap_certificate():
    """A genuine k = 3 certificate claiming 1-swap optimality."""
    X, y = _data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 4, None)
    start, _ = refit_ensemble(ds, [], reg=REG, fit_intercept=True)
    out = swap_descent(ds, start, 3, reg=REG, fit_intercept=True, thresholds=th)
    assert out.one_swap_optimal and len(out.ensemble.rules) == 3
    cert = _certificate(ds, out.ensemble, th, 3,
                        local={"kind": "1-swap", "proved": True, "tol": 1e-9, "searches": []})
    report = verify(cert, X, y, strict=True)
    assert report.ok, str(report)
    assert {c.claim: c.basis for c in report.claims}["1-swap"] == "re-derived"
    return X, y, ds, th, cert


def _shift_intercept(cert, ds, th):
    ens = cert.ensemble
    return RuleEnsemble(ens.rules, ens.intercept + 0.3, "squared", ens.encoder)


def _scale_weight(cert, ds, th):
    ens = cert.ensemble
    rules = list(ens.rules)
    rules[1] = rules[1].with_weight(0.7 * rules[1].weight)
    return RuleEnsemble(rules, ens.intercept, "squared", ens.encoder)


def _worse_box(cert, ds, th):
    """Rule 0 replaced by a box on one threshold, weights refitted jointly: a model whose
    weights are optimal but which one swap (back) improves."""
    rules = list(cert.ensemble.rules)
    rules[0] = Rule(conditions_from_box([-np.inf, th[1][-1]], [np.inf, np.inf]), 1.0)
    ens, risk = refit_ensemble(ds, rules, reg=REG, fit_intercept=True,
                               template=cert.ensemble)
    assert risk > cert.risk + 1e-3
    return ens


@pytest.mark.parametrize("edit", [_shift_intercept, _scale_weight, _worse_box])
@pytest.mark.parametrize("claimed_tol", [1e-9, 1e6])
def test_forged_one_swap_claims_are_rejected(swap_certificate, edit, claimed_tol):
    """Before: all three passed verify and verify --strict with tol 1e6 (the replay used
    the recorded weights, centred the intercept away and trusted the certificate's tol)."""
    X, y, ds, th, cert = swap_certificate
    forged_ens = edit(cert, ds, th)
    forged = _recomputed(cert, ds, forged_ens, local_optimality={
        "kind": "1-swap", "proved": True, "tol": claimed_tol, "searches": []})
    # the forged model is really improved by one swap: the genuine model is one swap away
    # (same boxes with optimal weights, or rule 0 put back)
    assert cert.risk < forged.risk - 1e-4
    for strict in (False, True):
        report = verify(forged, X, y, strict=strict)
        assert [f.name for f in report.failures] == ["1-swap optimality"], str(report)
        assert {c.claim: c.basis for c in report.claims}["1-swap"] == "taken on trust"


def test_a_loose_claimed_tolerance_is_capped_and_said(swap_certificate):
    X, y, _, _, cert = swap_certificate
    loose = dataclasses.replace(cert, local_optimality={
        "kind": "1-swap", "proved": True, "tol": 1e6, "searches": []})
    report = verify(loose, X, y)
    assert report.ok
    (check,) = [c for c in report.checks if c.name == "1-swap optimality"]
    assert "capped" in check.message


def test_cli_rejects_a_forged_one_swap_claim(swap_certificate, tmp_path, capsys):
    import pandas as pd

    from rulemip.cli import main

    X, y, ds, th, cert = swap_certificate
    forged = _recomputed(cert, ds, _scale_weight(cert, ds, th), local_optimality={
        "kind": "1-swap", "proved": True, "tol": 1e6, "searches": []})
    frame = pd.DataFrame(X, columns=list(cert.feature_names))
    frame["y"] = y
    data = tmp_path / "d.csv"
    frame.to_csv(data, index=False)
    path = forged.save(tmp_path / "forged.json")
    for extra in ([], ["--strict"]):
        code = main(["verify", str(path), "--data", str(data), "--target", "y", *extra])
        out = capsys.readouterr().out
        assert code == 1 and "FAIL  1-swap optimality" in out


@pytest.mark.parametrize("value", [None, "inf", -1.0, True, "1e-9"])
def test_malformed_swap_tolerance_is_a_certificate_error(swap_certificate, tmp_path, value,
                                                         capsys):
    """Issue 30, item 4: ``local_optimality.tol = null`` crashed verify with a bare
    TypeError (the CLI printed a traceback and exited 1)."""
    from rulemip.cli import main

    cert = swap_certificate[-1]
    doc = cert.to_dict()
    doc["local_optimality"]["tol"] = value
    with pytest.raises(CertificateError, match=r"local_optimality\.tol"):
        Certificate.from_dict(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    code = main(["verify", str(path), "--bundled"])
    err = capsys.readouterr().err
    assert code == 2 and "local_optimality.tol" in err and "Traceback" not in err


# ------------------------------------------------------------------ risk and lower bound
@pytest.fixture(scope="module")
def one_rule():
    """A genuine one-rule certificate at the brute-force optimum."""
    X, y = _data(2, n=24)
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 3, None)
    bf = brute_force_optimum(X, y, 1, reg=REG, thresholds=th)
    lo = [b[0] for b in bf.boxes[0]]
    hi = [b[1] for b in bf.boxes[0]]
    ens, risk = refit_ensemble(ds, [Rule(conditions_from_box(lo, hi, ds.encoder), 1.0)],
                               reg=REG, fit_intercept=True)
    ens = RuleEnsemble(ens.rules, ens.intercept, "squared", ds.encoder)
    assert risk == pytest.approx(bf.risk, rel=1e-9)
    cert = _certificate(ds, ens, th, 1, lower_bound=risk, status="optimal")
    cert = dataclasses.replace(cert, options={**cert.options, "mip_gap": 1e-6})
    report = verify(cert, X, y, strict=True)
    assert report.ok and report.taken_on_trust == (), str(report)
    return X, y, ds, th, cert, bf.risk


def _huge_weight(cert):
    ens = cert.ensemble
    return RuleEnsemble([ens.rules[0].with_weight(1e6)], ens.intercept, "squared",
                        ens.encoder)


@pytest.mark.parametrize("factor", [1000.0, 1.01, 1.0 + 1e-5])
def test_a_bound_above_the_optimum_never_verifies_with_huge_weights(one_rule, factor):
    """Issue 30, item 3: one rule's weight set to 1e6 (claimed risk about 1e11, recomputed
    to match) let a lower bound 1 000x the optimum pass as 're-derived': the slack was
    tol·max(1, claimed risk). The verifier's slack is fixed by the data now."""
    X, y, ds, _, cert, opt = one_rule
    forged = _recomputed(cert, ds, _huge_weight(cert), lower_bound=factor * opt,
                         status="feasible")
    assert forged.risk > 1e9 and forged.lower_bound <= forged.risk
    report = verify(forged, X, y)
    failed = {f.name for f in report.failures}
    assert failed and failed <= {"bound not refuted", "proof"}, str(report)
    assert {c.claim: c.basis for c in report.claims}["lower bound"] != "re-derived"


def test_a_bound_above_the_optimum_on_other_rules_is_refuted_by_replay(one_rule):
    """The one-rule proof: other (worse) rules recorded with the optimum's bound raised a
    little — the refit of those rules cannot refute it, the replay of the box search does."""
    X, y, ds, th, cert, opt = one_rule
    worse, _ = refit_ensemble(ds, [Rule(conditions_from_box([th[0][0], -np.inf],
                                                            [np.inf, np.inf], ds.encoder))],
                              reg=REG, fit_intercept=True)
    worse = RuleEnsemble(worse.rules, worse.intercept, "squared", ds.encoder)
    forged = _recomputed(cert, ds, worse, lower_bound=opt * (1 + 1e-4), status="feasible")
    assert forged.risk > opt * (1 + 1e-4)
    report = verify(forged, X, y)
    assert [f.name for f in report.failures] == ["proof"], str(report)
    assert "replay refutes" in report.failures[0].message


def test_bound_message_prints_the_bound_it_compares(one_rule):
    """The message said 'refitted weights reach 0.0793 >= bound' about a bound of 79.3."""
    X, y, _, _, cert, _ = one_rule
    report = verify(cert, X, y)
    (check,) = [c for c in report.checks if c.name == "bound not refuted"]
    assert f"{cert.lower_bound:.10g}" in check.message


@pytest.mark.parametrize("scale", [1e-6, 1.0, 1e6])
def test_slack_scales_with_the_data_not_with_units(scale):
    """The verifier's tolerance is relative to the data's scale: the same forgery (a bound
    1 % above the optimum on a model with other rules) is caught whatever the unit of y,
    and the genuine certificate verifies whatever the unit (before: tol·max(1, risk) let
    any bound within 1e-7 absolute pass for y in micro-units)."""
    X, y = _data(2, n=24)
    y = y * scale
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 3, None)
    bf = brute_force_optimum(X, y, 1, reg=REG * scale ** 2, thresholds=th)
    lo = [b[0] for b in bf.boxes[0]]
    hi = [b[1] for b in bf.boxes[0]]
    ens, risk = refit_ensemble(ds, [Rule(conditions_from_box(lo, hi, ds.encoder), 1.0)],
                               reg=REG * scale ** 2, fit_intercept=True)
    ens = RuleEnsemble(ens.rules, ens.intercept, "squared", ds.encoder)
    cert = make_certificate(ds, ens, loss="squared", reg=REG * scale ** 2,
                            fit_intercept=True, n_rules=1, thresholds=th, risk=risk,
                            lower_bound=risk, status="optimal", bound_valid=True,
                            options={"max_thresholds": 3, "mip_gap": 1e-6})
    assert verify(cert, X, y, strict=True).ok
    high = dataclasses.replace(cert, lower_bound=risk * 1.01, risk=risk * 1.01, gap=0.0)
    report = verify(high, X, y)
    assert not report.ok


def test_two_rule_optimal_with_a_trusted_bound_is_not_listed_rederived():
    """Issue 30, item 3: a claim inherits the basis of what it rests on."""
    X, y = _data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 4, None)
    start, _ = refit_ensemble(ds, [], reg=REG, fit_intercept=True)
    out = swap_descent(ds, start, 2, reg=REG, fit_intercept=True, thresholds=th)
    cert = _certificate(ds, out.ensemble, th, 2, lower_bound=out.risk, status="optimal")
    report = verify(cert, X, y)
    basis = {c.claim: c.basis for c in report.claims}
    assert basis["lower bound"] == basis["status"] == basis["gap"] == "taken on trust"
    assert basis["risk"] == "re-derived"


def test_forged_thresholds_and_language():
    """Thresholds: a moved cut point (digest recomputed) and a rule bound off the grid are
    rejected whatever the weights."""
    X, y = _data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 4, None)
    rule = Rule(conditions_from_box([th[0][1], -np.inf], [np.inf, np.inf], ds.encoder))
    ens, _ = refit_ensemble(ds, [rule], reg=REG, fit_intercept=True)
    ens = RuleEnsemble(ens.rules, ens.intercept, "squared", ds.encoder)
    cert = _certificate(ds, ens, th, 1)
    assert verify(cert, X, y).ok
    moved = [list(t) for t in th]
    moved[0][1] += 1e-3
    forged = dataclasses.replace(cert, thresholds=tuple(map(tuple, moved)))
    forged = dataclasses.replace(forged, problem_digest=forged.computed_problem_digest())
    assert "thresholds" in {f.name for f in verify(forged, X, y).failures}
    off = Rule(conditions_from_box([th[0][1] + 1e-3, -np.inf], [np.inf, np.inf], ds.encoder),
               1e6)
    forged = _recomputed(cert, ds, RuleEnsemble([off], ens.intercept, "squared", ds.encoder))
    assert "language" in {f.name for f in verify(forged, X, y).failures}


def test_a_claimed_risk_off_by_more_than_tol_fails_even_with_huge_weights(one_rule):
    """The risk claim: with one weight at 1e6 the claimed risk (about 1e11) must still be
    the recomputed one to ``tol`` relative; a claim 1e-5 below it fails the risk check."""
    X, y, ds, _, cert, _ = one_rule
    forged = _recomputed(cert, ds, _huge_weight(cert), status="feasible")
    assert verify(forged, X, y).ok  # true claims about a bad model: it verifies
    lowered = dataclasses.replace(forged, risk=forged.risk * (1 - 1e-5))
    assert "risk" in {f.name for f in verify(lowered, X, y).failures}


@pytest.mark.parametrize("value", [1.0, 5.0, -0.1])
def test_an_edited_mip_gap_cannot_make_any_model_optimal(one_rule, value):
    """``solver.options.mip_gap`` sets the gap at which 'optimal' was claimed; a value of 1
    or more (any model within it) or below 0 is refused as malformed."""
    cert = one_rule[4]
    doc = cert.to_dict()
    doc["solver"]["options"]["mip_gap"] = value
    with pytest.raises(CertificateError, match=r"solver\.options\.mip_gap"):
        Certificate.from_dict(doc)
