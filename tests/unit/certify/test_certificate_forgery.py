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
from rulemip.rules.problem import KRuleProblem
from rulemip.testing.brute_force import brute_force_optimum

REG = 0.01


def _data(seed: int = 1, n: int = 40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 2.0 * (X[:, 0] > 0) - 1.0 * (X[:, 1] < 0.3) + 0.4 * rng.normal(size=n)
    return X, y


def _certificate(ds, ens, th, k, *, lower_bound=0.0, status="feasible", local=None):
    risk = float(ens.risk(ds.X, ds.y, reg=REG))
    problem = KRuleProblem.of(ds, k, loss="squared", reg=REG, fit_intercept=True, thresholds=th)
    cert = make_certificate(problem, ens, risk=risk, lower_bound=min(lower_bound, risk),
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
    out = swap_descent(KRuleProblem.of(ds, 3, reg=REG, fit_intercept=True, thresholds=th), start)
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
    problem = KRuleProblem.of(ds, 1, loss="squared", reg=REG * scale ** 2, fit_intercept=True,
                              thresholds=th)
    cert = make_certificate(problem, ens, risk=risk, lower_bound=risk, status="optimal",
                            bound_valid=True, options={"max_thresholds": 3, "mip_gap": 1e-6})
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
    out = swap_descent(KRuleProblem.of(ds, 2, reg=REG, fit_intercept=True, thresholds=th), start)
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


# ------------------------------------------------------- issue 38: slack relative to the bound
def _issue38_data():
    """The 30 rows of issue 38, item 1: y jumps by 1e4 at x0 = 0, so a poor model's risk
    (about var y = 2.4e7) dwarfs the optima (1.2377 for one rule, 0.9336 for two)."""
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(30, 2)), 2)
    y = np.round(1e4 * (X[:, 0] > 0) + rng.normal(size=30), 3)
    return X, y, [[-0.5, 0.0, 0.5]] * 2


def _poor_model_certificate(k, factor):
    """A poor rule (x1 > 0.5, refit risk about 2.4e7) recorded with a lower bound
    ``factor`` times the brute-force optimum of ``k`` rules."""
    X, y, th = _issue38_data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    opt = brute_force_optimum(X, y, k, reg=1e-9, thresholds=[np.asarray(t) for t in th]).risk
    rule = Rule(conditions_from_box([-np.inf, 0.5], [np.inf, np.inf], ds.encoder))
    ens, risk = refit_ensemble(ds, [rule], reg=1e-9, fit_intercept=True)
    ens = RuleEnsemble(ens.rules, ens.intercept, "squared", ds.encoder)
    assert risk > 1e7 and factor * opt < risk
    problem = KRuleProblem.of(ds, k, loss="squared", reg=1e-9, fit_intercept=True, thresholds=th)
    cert = make_certificate(problem, ens, risk=risk, lower_bound=factor * opt, status="feasible",
                            bound_valid=True)
    return X, y, th, cert


@pytest.mark.parametrize(("k", "factor"), [(1, 2.0), (2, 3.0), (1, 1.001), (2, 1.001)])
def test_a_bound_above_the_optimum_behind_a_poor_model_is_refuted(k, factor):
    """Issue 38, item 1: the slack was tol times the refitted risk of the recorded rules
    (2.39 here), so a bound 2x (k = 1) or 3x (k = 2) the optimum passed as "replayed: ...
    re-derived the lower bound" behind a poor model. The slack is relative to the bound
    now (with a round-off floor of 1e-12 times the data's second moment, 5.7e-5 here)."""
    X, y, th, cert = _poor_model_certificate(k, factor)
    for strict in (False, True):
        report = verify(cert, X, y, thresholds=th, strict=strict)
        assert [f.name for f in report.failures] == ["proof"], str(report)
        assert "replay refutes the lower bound" in report.failures[0].message
        assert {c.claim: c.basis for c in report.claims}["lower bound"] == "taken on trust"


def test_cli_refutes_a_bound_above_the_optimum_behind_a_poor_model(tmp_path, capsys):
    import pandas as pd

    from rulemip.cli import main

    for k, factor in ((1, 2.0), (2, 3.0)):
        X, y, th, cert = _poor_model_certificate(k, factor)
        frame = pd.DataFrame(X, columns=list(cert.feature_names))
        frame["y"] = y
        frame.to_csv(tmp_path / "d.csv", index=False)
        (tmp_path / "th.json").write_text(json.dumps(th))
        path = cert.save(tmp_path / f"forged{k}.json")
        for extra in ([], ["--strict"]):
            code = main(["verify", str(path), "--data", str(tmp_path / "d.csv"), "--target",
                         "y", "--thresholds", str(tmp_path / "th.json"), *extra])
            out = capsys.readouterr().out
            assert code == 1 and "FAIL  proof: replay refutes" in out, out
            assert "re-derived the lower bound" not in out


@pytest.mark.parametrize("k", [1, 2])
def test_honest_certificates_on_the_issue38_data_keep_their_bound_rederived(k):
    from rulemip import ExactRuleEnsembleRegressor

    X, y, th = _issue38_data()
    cert = ExactRuleEnsembleRegressor(n_rules=k, reg=1e-9, thresholds=th,
                                      engine="kbox").fit(X, y).certificate_
    report = verify(cert, X, y, thresholds=th, strict=True)
    assert report.ok and report.taken_on_trust == (), str(report)


# ------------------------------------------------ issue 38: verify's own mip_gap for "optimal"
@pytest.fixture(scope="module")
def diabetes_pair():
    """A genuine k = 2 certificate on sklearn's diabetes (rules of at most 2 features, 4
    cuts per feature: the pair replay re-derives its bound in well under a second), and
    the forgery of issue 38, item 2: a worse model (one of its rules, refitted: 35 % above
    the optimum) with the true bound, status "optimal" and a recorded mip_gap of 0.5."""
    from sklearn.datasets import load_diabetes

    from rulemip import ExactRuleEnsembleRegressor
    from rulemip.solvers.result import relative_gap

    X, y = load_diabetes(return_X_y=True)
    cert = ExactRuleEnsembleRegressor(n_rules=2, max_rule_length=2, max_thresholds=4,
                                      engine="kbox").fit(X, y).certificate_
    assert cert.status == "optimal"
    ds = Dataset.from_arrays(X, y, loss="squared")
    worse, risk = refit_ensemble(ds, list(cert.ensemble.rules[:1]), reg=cert.reg,
                                 fit_intercept=True, template=cert.ensemble)
    assert risk > 1.2 * cert.risk
    forged = dataclasses.replace(cert, ensemble=worse, risk=risk,
                                 gap=relative_gap(risk, cert.lower_bound),
                                 options={**cert.options, "mip_gap": 0.5})
    assert 0.2 < forged.gap < 0.5
    return X, y, cert, forged


def test_optimal_within_only_the_recorded_mip_gap_is_taken_on_trust(diabetes_pair):
    """Issue 38, item 2: before, "gap 0.258 within 0.5 (the fit's mip_gap, as recorded)"
    and the status listed as re-derived; --strict accepted it."""
    X, y, cert, forged = diabetes_pair
    report = verify(forged, X, y)
    basis = {c.claim: c for c in report.claims}
    assert report.ok, str(report)
    assert basis["lower bound"].rederived and basis["gap"].rederived
    assert basis["status"].basis == "taken on trust"
    said = "optimal at the recorded mip_gap 0.5 (looser than verify's 1e-06): taken on trust"
    assert said in basis["status"].how and said in str(report)
    strict = verify(forged, X, y, strict=True)
    assert [f.name for f in strict.failures] == ["optimality"], str(strict)
    # at a mip_gap of its own as loose as the fit's, verify re-derives the status
    loose = verify(forged, X, y, mip_gap=0.5, strict=True)
    assert loose.ok and loose.taken_on_trust == (), str(loose)
    # the genuine certificate: everything re-derived, strict or not
    genuine = verify(cert, X, y, strict=True)
    assert genuine.ok and genuine.taken_on_trust == (), str(genuine)


def test_cli_mip_gap_and_strict_on_a_loose_optimal(diabetes_pair, tmp_path, capsys):
    import pandas as pd

    from rulemip.cli import main

    X, y, _, forged = diabetes_pair
    frame = pd.DataFrame(X, columns=list(forged.feature_names))
    frame["y"] = y
    frame.to_csv(tmp_path / "d.csv", index=False)
    path = forged.save(tmp_path / "forged.json")
    args = ["verify", str(path), "--data", str(tmp_path / "d.csv"), "--target", "y"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "optimal at the recorded mip_gap 0.5" in out and "taken on trust: status" in out
    assert main([*args, "--strict"]) == 1
    assert "FAIL  optimality" in capsys.readouterr().out
    assert main([*args, "--strict", "--mip-gap", "0.5"]) == 0


@pytest.mark.parametrize("value", [-1e-3, 1.0, float("nan"), "0.1", True])
def test_verify_mip_gap_is_checked(diabetes_pair, value):
    from rulemip.exceptions import InvalidParameterError

    X, y, cert, _ = diabetes_pair
    with pytest.raises(InvalidParameterError, match="mip_gap"):
        verify(cert, X, y, mip_gap=value)


def test_optimal_within_verifys_gap_stands_when_the_recorded_one_is_tighter(one_rule):
    """A fit at ``mip_gap=0`` stops at the driver's floor of 1e-6 (the mip engine recorded
    a gap of 3e-8): before, verify judged it at the recorded 0 + 1e-9 and rejected the
    honest 'optimal'. It is judged at verify's own mip_gap now, and re-derived."""
    X, y, ds, _, cert, opt = one_rule
    lb = opt * (1 - 5e-7)
    honest = _recomputed(cert, ds, cert.ensemble, lower_bound=lb,
                         options={**cert.options, "mip_gap": 0.0})
    assert 1e-7 < honest.gap < 1e-6
    report = verify(honest, X, y, strict=True)
    assert report.ok and report.taken_on_trust == (), str(report)
    tight = verify(honest, X, y, mip_gap=1e-7)
    assert [f.name for f in tight.failures] == ["optimality"], str(tight)
