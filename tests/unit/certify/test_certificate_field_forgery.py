"""Forgery field by field (issue 38, item 3): every leaf of ``Certificate.to_dict()`` of a
real certificate of each kind, mutated.

The leaves are enumerated recursively from the documents (a field added later is mutated
without anyone listing it): numbers are moved a little (1 %) and a lot (x3) in both directions,
integers by one, booleans flipped, strings edited, ``null`` set to 1 and empty lists given
an element. Each mutated document is also tried as a forger would send it, with the
problem digest (a checksum) recomputed, an edited risk or bound also with the gap
recomputed, and an edited model or ``reg`` with the claimed risk (and the gap) recomputed
from the data. The claims of every mutated certificate are judged by an oracle independent of
:func:`rulemip.certify.verify` — brute-force optima of the recorded problem
(:mod:`rulemip.testing.brute_force`), a brute-force 1-swap neighbourhood, the risk
recomputed from the data — and then:

* when verify (plain or strict) accepts, every claim it lists as re-derived is true;
* when it rejects, some claim is false (strict may also refuse an ``optimal`` it lists as
  taken on trust);
* a document that no longer reads as a certificate is refused with a
  :class:`~rulemip.exceptions.CertificateError`.

The unmutated certificates verify, strict, with the claims they re-derive today. A sample
of the mutations also goes through ``rulemip verify`` (plain and ``--strict``), which
must agree with the API.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest

from rulemip import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor
from rulemip.algorithms.local.rule_swaps import local_optimality_record, swap_descent
from rulemip.certify import Certificate, verify
from rulemip.certify.certificate import problem_digest
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import CertificateError
from rulemip.refit import fit_weights
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import relative_gap
from rulemip.testing.brute_force import brute_force_optimum, distinct_boxes

#: the claims the oracle judges; a claim verify starts listing must be added here
CLAIMS = ("data", "thresholds", "model", "risk", "lower bound", "gap", "status", "1-swap")
#: what verify re-derives on each unmutated certificate (issue 38: none may be downgraded)
REDERIVED_TODAY = {
    "one rule": set(CLAIMS) - {"1-swap"},
    "two rules": set(CLAIMS) - {"1-swap"},
    "three rules, 1-swap": {"data", "thresholds", "model", "risk", "lower bound", "gap",
                            "1-swap"},
    "logistic": {"data", "thresholds", "model", "risk"},
}
#: relative margins of the oracle: a claim within TRUE of the truth is true, one beyond
#: FALSE is false, and in between it is not judged
TRUE, FALSE = 1e-9, 1e-6


def _table():
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(16, 2)), 2)
    y = np.round(2.0 * (X[:, 0] > 0) - 1.0 * (X[:, 1] < 0.3) + 0.5 * rng.normal(size=16), 3)
    return X, y


def _fit(est, X, y) -> Certificate:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y).certificate_


@pytest.fixture(scope="module")
def certificates() -> dict[str, tuple[Any, Any, Certificate]]:
    """Real certificates of each kind on a 16-row table: one rule (column generation),
    two rules (the k-box search), three rules stopped by a work limit and then descended
    to a 1-swap optimum (what the exact estimator's local phase records), logistic."""
    X, y = _table()
    yc = (y > np.median(y)).astype(int)
    one = _fit(ExactRuleEnsembleRegressor(n_rules=1, reg=0.01, max_thresholds=3), X, y)
    two = _fit(ExactRuleEnsembleRegressor(n_rules=2, reg=0.01, max_thresholds=3,
                                          max_rule_length=2, engine="kbox"), X, y)
    three = _fit(ExactRuleEnsembleRegressor(n_rules=3, reg=0.01, max_thresholds=2,
                                            max_rule_length=2, work_limit=5), X, y)
    ds = Dataset.from_arrays(X, y, loss="squared")
    problem = KRuleProblem.of(ds, 3, reg=0.01, fit_intercept=True,
                              thresholds=[np.asarray(t) for t in three.thresholds],
                              max_rule_length=2)
    out = swap_descent(problem, three.ensemble)
    assert out.one_swap_optimal and three.status == "feasible"
    three = dataclasses.replace(three, ensemble=out.ensemble, risk=out.risk,
                                gap=relative_gap(out.risk, three.lower_bound),
                                local_optimality=local_optimality_record(out))
    logistic = _fit(ExactRuleEnsembleClassifier(n_rules=2, reg=0.1, max_thresholds=2,
                                                max_rule_length=2), X, yc)
    return {"one rule": (X, y, one), "two rules": (X, y, two),
            "three rules, 1-swap": (X, y, three), "logistic": (X, yc, logistic)}


# ------------------------------------------------------------------ leaves and mutations
def _leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every scalar of a JSON document with its path (empty lists are leaves too)."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(node, list) and node:
        for i, value in enumerate(node):
            yield from _leaves(value, (*path, i))
    else:
        yield path, node


def _mutations(value: Any) -> list[Any]:
    """A leaf's edits: numbers a little (1e-2) and a lot (x3) in both directions, integers
    by one, booleans flipped, strings edited, null set to 1, an empty list given one."""
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1, value - 1]
    if isinstance(value, float):
        if value == 0.0:
            return [1e-2, -1e-2, 1.0, -1.0]
        return [value * (1 + 1e-2), value * (1 - 1e-2), value * 3.0, value / 3.0]
    if isinstance(value, str):
        return [value + "~"]
    if value is None:
        return [1]
    if value == []:
        return [["mutation"]]
    raise AssertionError(f"unexpected leaf {value!r}")


def _set(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def _forged_variants(doc: dict[str, Any], path: tuple[Any, ...], data: tuple[Any, Any]
                     ) -> list[dict[str, Any]]:
    """The document as edited, and as a forger would send it: the problem digest (a
    checksum) recomputed; for an edited risk or bound the gap recomputed; for an edited
    model (or reg) the claimed risk recomputed from ``data`` and the gap with it."""
    variants = [doc]
    if path[0] == "problem" and path[-1] != "digest":
        try:
            cert = Certificate.from_dict(doc)
        except CertificateError:
            return variants
        doc = _set(doc, ("problem", "digest"), cert.computed_problem_digest())
        variants.append(doc)
    cl = doc["claims"]
    if path[:1] == ("claims",) and path[-1] in ("risk", "lower_bound") and \
            all(isinstance(cl[k], float) for k in ("risk", "lower_bound")):
        variants.append(_set(doc, ("claims", "gap"),
                             relative_gap(cl["risk"], cl["lower_bound"])))
    if path[0] == "ensemble" or path[-1] == "reg":
        try:
            cert = Certificate.from_dict(doc)
            ds = Dataset.from_arrays(*data, loss=cert.loss, encoder=cert.ensemble.encoder)
            risk = float(cert.ensemble.risk(ds.X, ds.y, reg=cert.reg))
        except (CertificateError, ValueError, IndexError):
            return variants
        if math.isfinite(risk) and isinstance(cl["lower_bound"], float):
            variants.append(_set(_set(doc, ("claims", "risk"), risk), ("claims", "gap"),
                                 relative_gap(risk, cl["lower_bound"])))
    return variants


# ------------------------------------------------------------------ the oracle
def _judge(flag_true: bool, flag_false: bool) -> bool | None:
    return True if flag_true else (False if flag_false else None)


def _close(a: float, b: float, scale: float) -> bool | None:
    d = abs(a - b)
    return _judge(d <= TRUE * scale, d > FALSE * scale)


@cache
def _optimum(n_rules: int, loss: str, reg: float, fit_intercept: bool, max_rule_length: Any,
             thresholds: tuple[tuple[float, ...], ...], x_bytes: bytes, y_bytes: bytes
             ) -> float:
    """The brute-force optimum of a problem (cached: mutations share problems)."""
    y = np.frombuffer(y_bytes)
    X = np.frombuffer(x_bytes).reshape(len(y), -1)
    return brute_force_optimum(X, y, n_rules, loss, reg=reg, fit_intercept=fit_intercept,
                               thresholds=[np.asarray(t) for t in thresholds],
                               max_rule_length=max_rule_length).risk


class Oracle:
    """The truth of each claim of ``cert`` about the data (``None``: too close to judge),
    computed on demand: brute force is spent only where a verdict needs it."""

    def __init__(self, cert: Certificate, original: Certificate, X: Any, y: Any) -> None:
        self.cert, self.original = cert, original
        self.ds = Dataset.from_arrays(X, y, loss=original.loss, encoder=original.ensemble.encoder)
        self.y = np.asarray(self.ds.y, dtype=float)
        self.m2 = float(np.mean(self.y ** 2))
        self._cache: dict[str, bool | None] = {}

    def __call__(self, claim: str) -> bool | None:
        if claim not in self._cache:
            self._cache[claim] = getattr(self, "_" + claim.replace(" ", "_").replace("-", "_"))()
        return self._cache[claim]

    def some_false(self) -> bool | None:
        """Whether some claim is false (None: none is, but some cannot be judged)."""
        verdicts = []
        for claim in ("integrity", *CLAIMS):
            v = self(claim)
            if v is False:
                return True
            verdicts.append(v)
        return None if None in verdicts else False

    # the certificate is about this data, and its problem section is bound to it
    def _data(self) -> bool:
        c, o = self.cert, self.original
        return (c.dataset_digest, c.n_samples, c.feature_names, c.ensemble.encoder) == \
            (o.dataset_digest, o.n_samples, o.feature_names, o.ensemble.encoder)

    def _integrity(self) -> bool:
        return self.cert.problem_digest == problem_digest(
            self.cert.dataset_digest, loss=self.cert.loss, reg=self.cert.reg,
            fit_intercept=self.cert.fit_intercept, n_rules=self.cert.n_rules,
            max_rule_length=self.cert.max_rule_length, thresholds=self.cert.thresholds,
            threshold_rule=self.cert.threshold_rule)

    def _thresholds(self) -> bool:
        """The recorded cut points are what the recorded rule makes of the data."""
        rule = self.cert.threshold_rule
        if rule == "explicit":
            return self.cert.thresholds == self.original.thresholds
        made = candidate_thresholds(self.ds.X, rule, None)
        return [tuple(map(float, t)) for t in made] == [tuple(t) for t in self.cert.thresholds]

    def _model(self) -> bool:
        c, ens = self.cert, self.cert.ensemble
        if len(ens.rules) > c.n_rules or ens.loss != c.loss or ens.classes != \
                self.original.ensemble.classes or (not c.fit_intercept and ens.intercept):
            return False
        for rule in ens.rules:
            feats = {cond.feature for cond in rule.conditions}
            if c.max_rule_length is not None and len(feats) > c.max_rule_length:
                return False
            for cond in rule.conditions:
                if not 0 <= cond.feature < len(c.thresholds) or \
                        cond.name != c.feature_names[cond.feature]:
                    return False
                grid = c.thresholds[cond.feature]
                if any(math.isfinite(v) and v not in grid for v in (cond.lower, cond.upper)):
                    return False
        return True

    def risk_of_model(self) -> float:
        return float(self.cert.ensemble.risk(self.ds.X, self.y, reg=self.cert.reg))

    def _risk(self) -> bool | None:
        r = self.risk_of_model()
        return _close(self.cert.risk, r, max(abs(r), 1e-9 * self.m2))

    def optimum(self) -> float:
        c = self.cert
        return _optimum(c.n_rules, c.loss, c.reg, c.fit_intercept, c.max_rule_length,
                        c.thresholds, np.ascontiguousarray(self.ds.X, dtype=float).tobytes(),
                        np.ascontiguousarray(self.y).tobytes())

    def _lower_bound(self) -> bool | None:
        c = self.cert
        if not c.bound_valid or c.lower_bound == -math.inf:
            return True
        if not self._thresholds() or not self._model() or c.n_rules > 3:
            return None   # another problem than the data's, or too large to brute-force
        opt = self.optimum()
        excess = c.lower_bound - opt
        return _judge(excess <= TRUE * max(abs(opt), 1e-3 * self.m2),
                      excess > FALSE * max(abs(opt), 1e-3 * self.m2))

    def _gap(self) -> bool | None:
        return _close(self.cert.gap, relative_gap(self.cert.risk, self.cert.lower_bound), 1.0)

    def _status(self) -> bool | None:
        """``optimal`` claims a proof: a valid bound (true) under which the gap is within
        the recorded mip_gap (at least 1e-6, the fit's floor); any other status is the
        solver's word."""
        c = self.cert
        if c.status != "optimal":
            return True
        if not c.bound_valid:
            return False
        lb = self._lower_bound()
        return lb if lb is not True else \
            self.gap_within(max(float(c.options.get("mip_gap", 1e-6)), 1e-6))

    def gap_within(self, tolerance: float) -> bool | None:
        gap = relative_gap(self.risk_of_model(), self.cert.lower_bound)
        return _judge(gap <= tolerance + TRUE, gap > tolerance + FALSE)

    def _1_swap(self) -> bool | None:
        """No model differing in one rule — its box anywhere in the language, its weight
        and the intercept free, the other weights held at the joint refit's — has a lower
        risk (docs/explanation/local_optimality.md), and the recorded weights are that
        refit: every box of the language tried on every slot's partial residual."""
        c = self.cert
        rec = c.local_optimality
        if rec is None or not rec.get("proved"):
            return True
        if c.loss != "squared":
            return False
        if not self._model():
            return None
        ths = [np.asarray(t) for t in c.thresholds]
        _, Q = distinct_boxes(self.ds.X, ths, c.fit_intercept, c.max_rule_length)
        cur = c.ensemble.query_matrix(self.ds.X)
        joint = fit_weights(cur, self.y, "squared", c.reg, c.fit_intercept)
        beta = np.asarray(joint.weights, dtype=float)
        scale = max(float(joint.risk), 1e-9 * self.m2)
        gains = [self.risk_of_model() - float(joint.risk)]   # re-weighting is a swap too

        def one_box(r: Any, q: Any) -> float:
            cols = np.zeros((len(r), 0)) if q is None else q.reshape(-1, 1)
            return float(fit_weights(cols, r, "squared", c.reg, c.fit_intercept).risk)

        slots = range(max(cur.shape[1], min(cur.shape[1] + 1, c.n_rules)))
        for j in slots:
            if j < cur.shape[1]:
                r = self.y - np.delete(cur, j, axis=1) @ np.delete(beta, j)
                now = one_box(r, cur[:, j])
            else:
                r = self.y - cur @ beta
                now = one_box(r, None)
            gains.append(now - min(one_box(r, Q[:, b]) for b in range(Q.shape[1])))
        # the claim's tolerance is 1e-9 of the scale: gains well inside it or far beyond
        return _judge(max(gains) <= 1e-10 * scale, max(gains) > FALSE * scale)


# ------------------------------------------------------------------ the checks
def _verdicts(cert: Certificate, X: Any, y: Any) -> tuple[Any, Any]:
    return verify(cert, X, y), verify(cert, X, y, strict=True)


def _check_verdict(kind: str, where: str, report: Any, oracle: Oracle, strict: bool) -> None:
    listed = {c.claim for c in report.claims}
    assert listed <= set(CLAIMS), f"verify lists claims the oracle does not judge: {listed}"
    if report.ok:
        for c in report.claims:
            if c.rederived:
                assert oracle(c.claim) is not False, \
                    f"{kind}, {where}: {c.claim!r} listed re-derived but false\n{report}"
                if c.claim == "status" and oracle.cert.status == "optimal":
                    assert oracle.gap_within(1e-6) is not False, \
                        f"{kind}, {where}: 'optimal' re-derived beyond verify's mip_gap"
        return
    some_false = oracle.some_false()
    if some_false is False:
        status = {c.claim: c for c in report.claims}.get("status")
        loose_optimal = strict and [f.name for f in report.failures] == ["optimality"] and \
            status is not None and not status.rederived
        assert loose_optimal, f"{kind}, {where}: every claim true, yet rejected\n{report}"


def _mutated_documents(cert: Certificate, data: tuple[Any, Any]
                       ) -> Iterator[tuple[str, dict[str, Any]]]:
    doc = cert.to_dict()
    for path, value in _leaves(doc):
        for new in _mutations(value):
            for i, variant in enumerate(_forged_variants(_set(doc, path, new), path, data)):
                yield f"{'.'.join(map(str, path))}: {value!r} -> {new!r} (variant {i})", \
                    variant


KINDS = ("one rule", "two rules", "three rules, 1-swap", "logistic")


@pytest.mark.parametrize("kind", KINDS)
def test_unmutated_certificates_keep_every_claim_they_rederive(certificates, kind):
    X, y, cert = certificates[kind]
    for report in _verdicts(cert, X, y):
        assert report.ok, str(report)
        assert {c.claim for c in report.claims if c.rederived} == REDERIVED_TODAY[kind], \
            str(report)
    oracle = Oracle(cert, cert, X, y)
    assert oracle.some_false() is False


@pytest.mark.parametrize("kind", KINDS)
def test_every_field_mutated_verify_never_lists_a_false_claim_rederived(certificates, kind):
    X, y, cert = certificates[kind]
    n_docs = n_malformed = n_accepted = 0
    paths = {p for p, _ in _leaves(cert.to_dict())}
    for where, doc in _mutated_documents(cert, (X, y)):
        n_docs += 1
        try:
            forged = Certificate.from_dict(doc)
        except CertificateError:
            n_malformed += 1
            continue
        oracle = Oracle(forged, cert, X, y)
        plain, strict = _verdicts(forged, X, y)
        _check_verdict(kind, where, plain, oracle, strict=False)
        _check_verdict(kind, where, strict, oracle, strict=True)
        assert not strict.ok or plain.ok, f"{kind}, {where}: strict accepts what plain refuses"
        n_accepted += plain.ok
    # every leaf was mutated; some mutations keep every claim true, most make one false
    assert n_docs >= 2 * len(paths) - len([p for p in paths if isinstance(p[-1], str)])
    assert 0 < n_accepted < n_docs - n_malformed


def test_cli_agrees_with_the_api_on_a_sample_of_mutations(certificates, tmp_path, capsys):
    """``rulemip verify`` (plain and --strict) on every 7th mutated document of each kind
    accepts (exit 0) exactly what the API accepts; a malformed document exits with code 2.
    (A refused one exits 1, or 2 when the forged ensemble's encoder names columns the
    table does not have.)"""
    import pandas as pd

    from rulemip.cli import main

    checked = 0
    for kind in KINDS:
        X, y, cert = certificates[kind]
        frame = pd.DataFrame(X, columns=list(cert.feature_names))
        frame["y"] = y
        data = tmp_path / f"{kind}.csv"
        frame.to_csv(data, index=False)
        for i, (where, doc) in enumerate(_mutated_documents(cert, (X, y))):
            if i % 7:
                continue
            path = tmp_path / "forged.json"
            path.write_text(__import__("json").dumps(doc))
            try:
                forged = Certificate.from_dict(doc)
            except CertificateError:
                expected = (2, 2)
            else:
                plain, strict = _verdicts(forged, X, y)
                expected = (0 if plain.ok else 1, 0 if strict.ok else 1)
            for extra, code in zip(([], ["--strict"]), expected, strict=True):
                got = main(["verify", str(path), "--data", str(data), "--target", "y",
                            *extra])
                capsys.readouterr()
                assert (got == 0) == (code == 0) and (code != 2 or got == 2), \
                    f"{kind}, {where} {extra}: exit {got}, API says {code}"
            checked += 1
    assert checked >= 80


def _true_edits(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Edits that keep every claim true: notes, provenance, a bound lowered (the gap with
    it; a large lowering drops 'optimal' to 'feasible', a weaker claim)."""
    yield "a note edited", _set(doc, ("notes",), [*doc["notes"], "edited by hand"])
    yield "created edited", _set(doc, ("created",), "2000-01-01T00:00:00Z")
    yield "wall time edited", _set(doc, ("solver", "wall_time"), 123.0)
    cl = doc["claims"]
    for factor, status in ((1 - 1e-8, cl["status"]), (0.5, "feasible"), (0.0, "feasible")):
        lb = factor * cl["lower_bound"]
        edited = _set(_set(doc, ("claims", "lower_bound"), lb), ("claims", "status"), status)
        yield f"bound x{factor}, {status}", _set(edited, ("claims", "gap"),
                                                 relative_gap(cl["risk"], lb))


@pytest.mark.parametrize("kind", KINDS)
def test_edits_that_keep_every_claim_true_are_accepted(certificates, kind):
    X, y, cert = certificates[kind]
    for where, doc in _true_edits(cert.to_dict()):
        edited = Certificate.from_dict(doc)
        assert Oracle(edited, cert, X, y).some_false() is False, where
        for report in _verdicts(edited, X, y):
            assert report.ok, f"{kind}, {where}\n{report}"


def test_a_field_added_later_is_mutated_without_being_listed(certificates):
    """The leaves come from the document itself: a new (nested) field is enumerated and
    mutated like every other."""
    doc = certificates["one rule"][2].to_dict()
    doc["future"] = {"section": [{"number": 1.5, "flag": True}]}
    leaves = dict(_leaves(doc))
    assert leaves[("future", "section", 0, "number")] == 1.5
    assert leaves[("future", "section", 0, "flag")] is True
    assert _mutations(1.5) == [1.5 * 1.01, 1.5 * 0.99, 4.5, 0.5]
    assert _mutations(True) == [False]
