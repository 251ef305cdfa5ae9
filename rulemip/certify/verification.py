r"""Verification of certificates (:mod:`rulemip.certify.certificate`): :func:`verify`
re-checks every claim a certificate makes and reports, per claim, whether it was
re-derived or taken on trust (the list of checks is in the certificate module's
docstring).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from rulemip.certify.certificate import Certificate
from rulemip.data import Dataset, candidate_thresholds, check_thresholds
from rulemip.exceptions import CertificateError, InvalidParameterError
from rulemip.refit import fit_weights
from rulemip.rules import RuleEnsemble
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import relative_gap


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    message: str


REDERIVED = "re-derived"
TAKEN_ON_TRUST = "taken on trust"


@dataclass(frozen=True)
class ClaimBasis:
    """How :func:`verify` knows one claim: ``re-derived`` from the data (and the model),
    or ``taken on trust`` from the certificate (``how`` says from what, and how to
    re-derive it)."""

    claim: str
    basis: str
    how: str

    @property
    def rederived(self) -> bool:
        return self.basis == REDERIVED


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :func:`verify`: every check with its message (``ok`` if all passed) and,
    for every claim, whether it was re-derived or taken on trust."""

    checks: tuple[CheckResult, ...]
    recomputed_risk: float
    claims: tuple[ClaimBasis, ...] = ()

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if not c.ok)

    @property
    def taken_on_trust(self) -> tuple[str, ...]:
        """The claims verify could not re-derive (e.g. ``"lower bound"``)."""
        return tuple(c.claim for c in self.claims if not c.rederived)

    def __str__(self) -> str:
        lines = [f"{'PASS' if c.ok else 'FAIL'}  {c.name}: {c.message}" for c in self.checks]
        if self.claims:
            lines.append("claims:")
            lines.extend(f"  {c.claim:<12} {c.basis:<15} {c.how}" for c in self.claims)
        trust = self.taken_on_trust
        if not self.ok:
            lines.append(f"certificate REJECTED ({len(self.failures)} failed check(s))")
        elif trust:
            lines.append(f"certificate verified (taken on trust: {', '.join(trust)})")
        else:
            lines.append("certificate verified")
        return "\n".join(lines)


def verify(certificate: Certificate | str | os.PathLike[str], X: Any, y: Any, *,
           sample_weight: Any = None, tol: float = 1e-7, raise_on_failure: bool = False,
           thresholds: Any = None, strict: bool = False) -> VerificationReport:
    """Re-check a certificate against data (module docstring lists the checks).

    Parameters
    ----------
    certificate : a :class:`Certificate` or the path of its JSON file.
    X, y : the data it was computed on (numpy or pandas; labels as given to ``fit``).
    tol : relative tolerance on risks and bounds, times the data's scale (the refitted
        risk of the recorded rules, floored by ``1e-9·Σw·y²/W``; never a claimed number:
        docs/howto/certificates.md). The claimed risk may also differ from the recomputed
        one by ``tol`` relative to the latter.
    raise_on_failure : raise :class:`CertificateError` listing the failed checks.
    thresholds : the explicit cut points the fit was given (one list per feature), to
        re-derive a certificate's explicit thresholds instead of taking them on trust.
    strict : fail when the thresholds are taken on trust (the lower bound, which only a new
        solve re-derives, is the one claim a strict report may still take on trust).

    The report's ``claims`` say for every claim whether it was re-derived or taken on trust
    (threat model: docs/howto/certificates.md).
    """
    if (isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol)
            or tol < 0):
        raise InvalidParameterError(
            f"`tol` must be a finite number >= 0 (a tolerance on risks, e.g. 1e-7); got "
            f"{tol!r}.")
    from rulemip._validation import check_bool

    check_bool(strict, "strict")
    cert = certificate if isinstance(certificate, Certificate) else Certificate.load(certificate)
    ens = cert.ensemble
    ds = Dataset.from_arrays(X, y, loss=cert.loss, encoder=ens.encoder,
                             sample_weight=sample_weight)
    given = None if thresholds is None else check_thresholds(thresholds, ds.d)
    checks: list[CheckResult] = []
    claims: list[ClaimBasis] = []

    digest = ds.digest()
    checks.append(CheckResult(
        "data", digest == cert.dataset_digest,
        "digest matches" if digest == cert.dataset_digest else
        f"data digest {digest[:16]}… differs from the certificate's "
        f"{cert.dataset_digest[:16]}… (different data, row order or feature names)"))
    problem_checks, threshold_claim = _problem_checks(cert, ds, given, strict)
    checks.extend(problem_checks)
    claims.append(ClaimBasis("data", REDERIVED, "digest of the data given"))
    claims.append(threshold_claim)

    bad_features = sorted({c.feature for r in ens.rules for c in r.conditions
                           if not 0 <= c.feature < ds.d})
    if bad_features:
        checks.append(CheckResult(
            "features", False, f"rules use feature index(es) {bad_features}, but the data "
            f"has {ds.d} feature(s) (0..{ds.d - 1}): the ensemble was edited or belongs to "
            "other data"))
        return _report(checks, math.nan, raise_on_failure, claims)

    n_ok = len(ens.rules) <= cert.n_rules
    checks.append(CheckResult("size", n_ok, f"{len(ens.rules)} rule(s), at most "
                              f"{cert.n_rules} allowed"))
    if cert.max_rule_length is not None:
        long_rules = [t for t, r in enumerate(ens.rules)
                      if len({c.feature for c in r.conditions}) > cert.max_rule_length]
        checks.append(CheckResult(
            "rule length", not long_rules,
            "within max_rule_length" if not long_rules else
            f"rules {long_rules} restrict more than {cert.max_rule_length} features"))
    if not cert.fit_intercept and ens.intercept != 0.0:
        checks.append(CheckResult("intercept", False,
                                  f"fit_intercept=False but intercept is {ens.intercept}"))

    off_grid = _bounds_off_grid(ens, cert.thresholds)
    checks.append(CheckResult(
        "language", not off_grid,
        "every interval bound is a candidate threshold" if not off_grid else
        "bounds not among the candidate thresholds: " + "; ".join(off_grid[:5])))

    risk = ens.risk(ds.X, ds.y, reg=cert.reg, sample_weight=ds.sample_weight)
    refit = None
    if ens.rules or cert.fit_intercept:
        Q = ens.query_matrix(ds.X)
        refit = fit_weights(Q, ds.y, cert.loss, reg=cert.reg, fit_intercept=cert.fit_intercept,
                            sample_weight=ds.sample_weight)
    # the verifier's tolerances are its own, scaled by what the data fix — the refitted
    # risk of the recorded rules (>= the optimum, <= the model without rules) floored by
    # the data's second moment — never by a claimed number (issue 30, item 3)
    scale = _data_scale(ds, risk if refit is None else float(refit.risk))
    slack = tol * scale
    risk_slack = tol * max(scale, abs(risk)) if math.isfinite(risk) else slack
    risk_ok = abs(risk - cert.risk) <= risk_slack
    checks.append(CheckResult(
        "risk", risk_ok,
        f"recomputed risk {risk:.10g} equals the claimed {cert.risk:.10g}" if risk_ok else
        f"recomputed risk {risk:.10g} differs from the claimed {cert.risk:.10g} by "
        f"{abs(risk - cert.risk):.3g} (a weight, rule or the claimed risk was changed)"))

    lb = cert.lower_bound
    lb_ok = math.isnan(lb) is False and lb <= cert.risk + risk_slack
    checks.append(CheckResult("bounds order", lb_ok,
                              f"lower bound {lb:.10g} <= risk {cert.risk:.10g}" if lb_ok else
                              f"lower bound {lb:.10g} exceeds the risk {cert.risk:.10g}"))
    if refit is not None:
        refit_ok = refit.risk >= lb - slack
        checks.append(CheckResult(
            "bound not refuted", refit_ok,
            f"the same rules with refitted weights reach {refit.risk:.10g} >= the lower "
            f"bound {lb:.10g} (less the verifier's slack {slack:.3g})" if refit_ok else
            f"the same rules with refitted weights reach {refit.risk:.10g} < the claimed "
            f"lower bound {lb:.10g} (slack {slack:.3g}): the bound is false"))

    gap = relative_gap(cert.risk, lb)
    gap_ok = (math.isinf(gap) and math.isinf(cert.gap)) or abs(gap - cert.gap) <= 1e-9 + tol
    checks.append(CheckResult("gap", gap_ok, f"gap {cert.gap:.6g} = (UB-LB)/|UB|" if gap_ok
                              else f"claimed gap {cert.gap:.6g} but bounds give {gap:.6g}"))
    if cert.status == "optimal":
        opt_tol = float(cert.options.get("mip_gap", 1e-6)) + 1e-9
        opt_ok = cert.bound_valid and gap <= opt_tol
        checks.append(CheckResult(
            "optimality", opt_ok,
            f"gap {gap:.3g} within {opt_tol:.3g} (the fit's mip_gap, as recorded) under a "
            "valid bound" if opt_ok else
            f"status 'optimal' but gap {gap:.3g} (tolerance {opt_tol:.3g}), bound_valid="
            f"{cert.bound_valid}"))

    bound_claim = _bound_claim(cert)
    if cert.n_rules == 1 and cert.loss == "squared" and math.isfinite(lb):
        proof = _replayed_proof(cert, ds, lb, slack)
        checks.append(proof)
        if proof.ok and proof.message.startswith("replayed"):
            bound_claim = ClaimBasis("lower bound", REDERIVED, "replayed: the exact box "
                                     "search re-derived it from the data, no solver involved")
    elif cert.n_rules == 2 and cert.loss == "squared" and math.isfinite(lb) and \
            _pair_replay_fits(cert, ds):
        proof = _replayed_pair_proof(cert, ds, lb, slack)
        checks.append(proof)
        if proof.ok and proof.message.startswith("replayed"):
            # the replay searched the recorded thresholds' language: the bound is known no
            # better than they are
            bound_claim = ClaimBasis(
                "lower bound", threshold_claim.basis,
                "replayed: the k-box search re-derived it from the data, no solver involved"
                + ("" if threshold_claim.basis == REDERIVED else
                   ", over the recorded thresholds (taken on trust)"))
    claims.extend(_claims_after_thresholds(cert, bound_claim))
    local_checks, local_claim = local_optimality_checks(cert, ds, scale)
    checks.extend(local_checks)
    if local_claim is not None:
        claims.append(local_claim)
    return _report(checks, risk, raise_on_failure, claims)


def _data_scale(ds: Dataset, refit_risk: float) -> float:
    """The scale of the verifier's tolerances: :func:`rulemip.algorithms.local.rule_swaps.
    tolerance_scale` of the refitted risk of the recorded rules (a model of the language,
    so at least the optimum; at most the model without rules) and of the data's second
    moment. Only the data and the recorded boxes fix it: huge weights or a huge claimed
    risk do not loosen it."""
    from rulemip.algorithms.local.rule_swaps import second_moment, tolerance_scale

    r = refit_risk if math.isfinite(refit_risk) else 0.0
    return tolerance_scale(r, second_moment(ds))


def _bound_claim(cert: Certificate) -> ClaimBasis:
    """How the lower bound is known when verify cannot replay it: the solver's word."""
    run = ", ".join(p for p in (f"{cert.engine} engine" if cert.engine else "",
                                f"{cert.backend} {cert.backend_version}".strip(),
                                f"status {cert.status}") if p)
    if cert.bound_valid:
        return ClaimBasis("lower bound", TAKEN_ON_TRUST,
                          f"from the solver run ({run}); checked only to be <= the risk and "
                          "not beaten by refitting the same rules; re-derive it by solving "
                          "again with the recorded options")
    return ClaimBasis("lower bound", TAKEN_ON_TRUST,
                      f"not claimed valid (bound_valid false; {run})")


def _claims_after_thresholds(cert: Certificate, bound: ClaimBasis) -> list[ClaimBasis]:
    """How the model, risk, bound, gap and status claims are known (see :func:`verify`).
    A claim inherits the basis of what it rests on: the gap and an ``optimal`` status rest
    on the lower bound, so they are re-derived only when the bound is."""
    if cert.status == "optimal":
        status = ClaimBasis("status", bound.basis,
                            "from the gap under the lower bound, so it rests on the bound"
                            + ("" if bound.rederived else " (taken on trust)"))
    else:
        status = ClaimBasis("status", TAKEN_ON_TRUST, "the solver's termination, as recorded")
    return [ClaimBasis("model", REDERIVED, "size, rule length and interval bounds on the "
                       "thresholds checked"),
            ClaimBasis("risk", REDERIVED, "recomputed from the data"),
            bound,
            ClaimBasis("gap", bound.basis, "recomputed from the risk and the lower bound"
                       + ("" if bound.rederived else ", so it rests on the bound")),
            status]


def _problem_of(cert: Certificate, ds: Dataset) -> KRuleProblem:
    """The problem a certificate records, on the data it is verified against."""
    return KRuleProblem.of(ds, cert.n_rules, loss=cert.loss, reg=cert.reg,
                           fit_intercept=cert.fit_intercept,
                           thresholds=[np.asarray(t, dtype=float) for t in cert.thresholds],
                           max_rule_length=cert.max_rule_length)


def _replayed_proof(cert: Certificate, ds: Dataset, lb: float, atol: float) -> CheckResult:
    """One rule, squared loss: the lower bound re-derived by replaying the exact box
    search (:mod:`rulemip.certify.replay`), no solver involved."""
    from rulemip.certify.replay import replay_one_rule

    rep = replay_one_rule(_problem_of(cert, ds), lower_bound=lb - atol)
    return _proof_check(rep.proved, rep.refuted, rep.best_risk, lb,
                        "the exact box search", f"{rep.nodes} nodes, {rep.seconds:.2f} s",
                        "a rule", "")


def _proof_check(proved: bool, refuted: bool, best_risk: float, lb: float, search: str,
                 effort: str, witness: str, unfinished: str) -> CheckResult:
    """The ``proof`` check of a replay: re-derived, refuted by a better model (the
    ``witness``), or taken on trust when the replay did not finish."""
    if proved:
        return CheckResult("proof", True, f"replayed: {search} re-derived the lower bound "
                           f"{lb:.10g} from the data ({effort})")
    if refuted:
        return CheckResult("proof", False, f"replay refutes the lower bound: {witness} "
                           f"reach{'es' if witness == 'a rule' else ''} risk "
                           f"{best_risk:.10g} < {lb:.10g}")
    return CheckResult("proof", True, f"lower bound taken on trust: the replay did not "
                       f"finish{unfinished}")


#: seconds the two-rule replay may take before the bound is taken on trust
PAIR_REPLAY_SECONDS = 60.0
#: languages of more candidate boxes than this are not replayed (the bound is taken on
#: trust): the scan's cost per first box makes a replay of millions of boxes take minutes
#: (diabetes, rules of 3 features: 6 M boxes) while 10⁵ take seconds
PAIR_REPLAY_MAX_BOXES = 500_000


def _pair_replay_fits(cert: Certificate, ds: Dataset) -> bool:
    """Whether the certificate's language is small enough to replay
    (:data:`PAIR_REPLAY_MAX_BOXES`) and its k-box table fits the search's memory budget."""
    from rulemip.budget import default_max_memory
    from rulemip.formulations.sizes import count_boxes, kbox_table_bytes

    ths = [np.asarray(t, dtype=float) for t in cert.thresholds]
    n_boxes = count_boxes(ths, cert.max_rule_length)
    return n_boxes <= PAIR_REPLAY_MAX_BOXES and \
        kbox_table_bytes(n_boxes, ds.n) <= default_max_memory()


def _replayed_pair_proof(cert: Certificate, ds: Dataset, lb: float, atol: float
                         ) -> CheckResult:
    """Two rules, squared loss: the lower bound re-derived by replaying the k-box search
    (:mod:`rulemip.certify.replay_pairs`), no solver involved."""
    from rulemip.certify.replay_pairs import replay_two_rules

    rep = replay_two_rules(_problem_of(cert, ds), lower_bound=lb - atol,
                           time_limit=PAIR_REPLAY_SECONDS)
    return _proof_check(rep.proved, rep.refuted, rep.best_risk, lb, "the k-box search",
                        f"{rep.scored} pairs scored, {rep.seconds:.2f} s", "two rules",
                        f" in {PAIR_REPLAY_SECONDS:g} s")


def _report(checks: list[CheckResult], risk: float, raise_on_failure: bool,
            claims: list[ClaimBasis]) -> VerificationReport:
    report = VerificationReport(tuple(checks), risk, tuple(claims))
    if raise_on_failure and not report.ok:
        raise CertificateError("certificate rejected: " + "; ".join(
            f"{c.name}: {c.message}" for c in report.failures))
    return report


def _problem_checks(cert: Certificate, ds: Dataset, given: list[np.ndarray] | None,
                    strict: bool) -> tuple[list[CheckResult], ClaimBasis]:
    """The problem digest, and the thresholds: re-derived from the data by the recorded
    rule (module docstring, item 2), compared with the list the verifier gives, or — for
    explicit thresholds without such a list — taken on trust (refused with ``strict``),
    unless the fit recorded that its thresholds came from the data (then the switch to
    ``explicit`` is a forgery)."""
    if not cert.problem_digest:
        return [CheckResult(
            "problem", False, "a format-1 certificate: its candidate thresholds, n_rules, "
            "loss and reg are not bound to the data, so the bound may speak about another "
            "problem; re-create it with this rulemip (`rulemip fit --certificate`)")], \
            ClaimBasis("thresholds", TAKEN_ON_TRUST, "a format-1 certificate")
    ok = cert.computed_problem_digest() == cert.problem_digest
    out = [CheckResult(
        "problem", ok,
        "thresholds, n_rules, max_rule_length, loss, reg and fit_intercept match the "
        "problem digest" if ok else
        "the problem section (thresholds, n_rules, max_rule_length, loss, reg, "
        "fit_intercept or threshold rule) was changed after the solve: its digest differs")]
    if given is not None:
        same = _same_thresholds(given, cert.thresholds)
        out.append(CheckResult(
            "thresholds", same,
            "recorded thresholds are the ones you gave" if same else
            "recorded thresholds differ from the ones you gave: the bound speaks about "
            "another candidate set"))
        return out, ClaimBasis("thresholds", REDERIVED, "compared with the list you gave")
    if cert.threshold_rule == "explicit":
        source = cert.options.get("threshold_source")
        if source == "data":
            out.append(CheckResult(
                "thresholds", False,
                "the fit recorded thresholds derived from the data (threshold_source "
                "'data'), but the problem lists them as explicit: the threshold rule was "
                "switched, so the cut points cannot be re-derived; a forged certificate"))
            return out, ClaimBasis("thresholds", TAKEN_ON_TRUST, "provenance contradicts")
        how = ("an explicit list (bound by the problem digest only, a checksum); pass the "
               "list the fit was given (thresholds= / --thresholds FILE) to re-derive it")
        out.append(CheckResult(
            "thresholds", not strict,
            "explicit thresholds, taken on trust" if not strict else
            "explicit thresholds cannot be re-derived from the data and strict mode takes "
            "nothing but the lower bound on trust: pass the list the fit was given "
            "(thresholds= / --thresholds FILE)"))
        return out, ClaimBasis("thresholds", TAKEN_ON_TRUST, how)
    rule = cert.threshold_rule if isinstance(cert.threshold_rule, int) else None
    derived = candidate_thresholds(ds.X, rule, ds.sample_weight)
    same = _same_thresholds(derived, cert.thresholds)
    what = "all midpoints" if rule is None else f"at most {rule} quantile cut(s) per feature"
    out.append(CheckResult(
        "thresholds", same,
        f"recorded thresholds are the data's ({what})" if same else
        f"recorded thresholds are not the ones the data gives ({what}): a threshold was "
        "moved, added or dropped"))
    return out, ClaimBasis("thresholds", REDERIVED, f"from the data ({what})")


def _same_thresholds(a: Any, b: Any) -> bool:
    return len(a) == len(b) and all(
        len(u) == len(v) and np.allclose(np.asarray(u, dtype=float),
                                         np.asarray(v, dtype=float), rtol=1e-12, atol=0.0)
        for u, v in zip(a, b, strict=False))


def _bounds_off_grid(ens: RuleEnsemble, thresholds: tuple[tuple[float, ...], ...]
                     ) -> list[str]:
    bad: list[str] = []
    for t, rule in enumerate(ens.rules):
        for c in rule.conditions:
            if c.feature >= len(thresholds):
                bad.append(f"rule {t}: feature {c.feature} unknown")
                continue
            grid = np.asarray(thresholds[c.feature])
            for v in (c.lower, c.upper):
                if math.isfinite(v) and not np.any(np.isclose(grid, v, rtol=1e-12, atol=1e-12)):
                    bad.append(f"rule {t}: {c.name} bound {v:g}")
    return bad


#: relative rounding allowed on top of the verifier's swap tolerance
SWAP_ROUNDING = 1e-12


def local_optimality_checks(cert: Certificate, ds: Dataset, scale: float | None = None
                            ) -> tuple[list[CheckResult], ClaimBasis | None]:
    """Re-derive a claimed 1-swap optimality (docs/explanation/local_optimality.md), and
    how the claim is known; no check and no claim when nothing is claimed.

    The replay trusts nothing of the record but its boxes: it refits the weights (and the
    intercept) jointly itself — a model whose recorded weights are not that optimum is not
    1-swap optimal, since re-weighting one rule and the intercept already gains — then
    replays the k swap searches (:func:`rulemip.algorithms.local.rule_swaps.check_one_swap`) on
    the refitted model at the verifier's tolerance: ``SWAP_TOL`` (or the certificate's
    ``tol`` when smaller) times ``scale``, the data's tolerance scale (:func:`_data_scale`).
    A certificate's looser ``tol`` is not honoured."""
    rec = cert.local_optimality
    if rec is None or not rec.get("proved"):
        return [], None
    name = "1-swap optimality"
    if cert.loss != "squared":
        return [CheckResult(name, False, f"claimed for loss {cert.loss!r}; it is defined "
                            "for squared loss only")], \
            ClaimBasis("1-swap", TAKEN_ON_TRUST, "not defined for this loss")
    from rulemip.algorithms.local.rule_swaps import SWAP_TOL, check_one_swap, refit_ensemble

    refitted, refit_risk = refit_ensemble(ds, cert.ensemble.rules, reg=cert.reg,
                                          fit_intercept=cert.fit_intercept,
                                          template=cert.ensemble)
    if scale is None:
        scale = _data_scale(ds, refit_risk)
    claimed_tol = float(rec.get("tol", SWAP_TOL))
    atol = (min(claimed_tol, SWAP_TOL) + SWAP_ROUNDING) * scale
    refuted = ClaimBasis("1-swap", TAKEN_ON_TRUST, "refuted by the replay")
    risk = float(cert.ensemble.risk(ds.X, ds.y, reg=cert.reg,
                                    sample_weight=ds.sample_weight))
    if risk - refit_risk > atol:
        return [CheckResult(
            name, False, f"claimed 1-swap optimal, but the recorded weights are not the "
            f"joint optimum of its rules: refitting them lowers the risk by "
            f"{risk - refit_risk:.6g} > {atol:.3g} (re-weighting one rule and the "
            "intercept is a swap that gains)")], refuted
    ok, checks = check_one_swap(_problem_of(cert, ds), refitted, atol=atol)
    if ok:
        capped = "" if claimed_tol <= SWAP_TOL else \
            f" (the certificate's tol {claimed_tol:.3g} capped at {SWAP_TOL:.3g})"
        return [CheckResult(name, True, f"weights refitted, {len(checks)} replayed box "
                            f"search(es): no single rule swap lowers the risk by more than "
                            f"{atol:.3g}{capped}")], \
            ClaimBasis("1-swap", REDERIVED, "weights refitted and the k swap searches "
                       "replayed at the verifier's tolerance")
    last = checks[-1] if checks else None
    detail = "" if last is None else (
        f"slot {last.slot}: a box lowers the risk by {last.best - last.current:.6g}"
        if last.best - last.current > 0 else
        f"slot {last.slot}: the search could not exclude a better box (bound "
        f"{last.bound:.6g} > current {last.current:.6g})")
    return [CheckResult(name, False,
                        f"claimed 1-swap optimal, but the replay refutes it ({detail})")], refuted
