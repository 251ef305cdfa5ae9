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

from rulemip.certify.bound_replays import bound_slack, replay_lower_bound
from rulemip.certify.certificate import Certificate
from rulemip.certify.claims import REDERIVED, TAKEN_ON_TRUST, CheckResult, ClaimBasis
from rulemip.certify.model_checks import data_check, model_checks
from rulemip.data import Dataset, candidate_thresholds, check_thresholds
from rulemip.exceptions import CertificateError, InvalidParameterError
from rulemip.refit import fit_weights
from rulemip.solvers.result import relative_gap


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
           thresholds: Any = None, strict: bool = False, mip_gap: float = 1e-6
           ) -> VerificationReport:
    """Re-check a certificate against data (module docstring lists the checks).

    Parameters
    ----------
    certificate : a :class:`Certificate` or the path of its JSON file.
    X, y : the data it was computed on (numpy or pandas; labels as given to ``fit``).
    tol : relative tolerance on risks and bounds: the claimed risk may differ from the
        recomputed one by ``tol`` relative to the latter; a lower bound L may exceed a
        model's risk by ``max(tol·|L|, 1e-12·Σw·y²/W)`` (relative to the bound itself, with
        a round-off floor fixed by the data; never by anything else a certificate records:
        docs/howto/certificates.md).
    raise_on_failure : raise :class:`CertificateError` listing the failed checks.
    thresholds : the explicit cut points the fit was given (one list per feature), to
        re-derive a certificate's explicit thresholds instead of taking them on trust.
    strict : fail when the thresholds or an ``optimal`` status are taken on trust (the
        lower bound, which only a new solve re-derives, is the one claim a strict report may
        still take on trust).
    mip_gap : verify's own relative gap for ``optimal``: the status is re-derived only
        when the gap under the bound is within it; within only the looser ``mip_gap`` the
        fit recorded it is taken on trust (and fails ``strict``).

    The report's ``claims`` say for every claim whether it was re-derived or taken on trust
    (threat model: docs/howto/certificates.md).
    """
    from rulemip._validation import check_bool, is_real

    if not is_real(tol) or not math.isfinite(tol) or tol < 0:
        raise InvalidParameterError(
            f"`tol` must be a finite number >= 0 (a tolerance on risks, e.g. 1e-7); got "
            f"{tol!r}.")
    tol = float(tol)
    check_bool(strict, "strict")
    mip_gap = _check_mip_gap(mip_gap)
    cert = certificate if isinstance(certificate, Certificate) else Certificate.load(certificate)
    ens = cert.ensemble
    ds = Dataset.from_arrays(X, y, loss=cert.loss, encoder=ens.encoder,
                             sample_weight=sample_weight)
    given = None if thresholds is None else check_thresholds(thresholds, ds.d)
    checks: list[CheckResult] = []
    claims: list[ClaimBasis] = []

    checks.append(data_check(cert, ds))
    problem_checks, threshold_claim = _problem_checks(cert, ds, given, strict)
    checks.extend(problem_checks)
    claims.append(ClaimBasis("data", REDERIVED, "digest, row count and feature names of "
                             "the data given"))
    claims.append(threshold_claim)

    bad_features = sorted({c.feature for r in ens.rules for c in r.conditions
                           if not 0 <= c.feature < ds.d})
    if bad_features:
        checks.append(CheckResult(
            "features", False, f"rules use feature index(es) {bad_features}, but the data "
            f"has {ds.d} feature(s) (0..{ds.d - 1}): the ensemble was edited or belongs to "
            "other data"))
        return _report(checks, math.nan, raise_on_failure, claims)

    checks.extend(model_checks(cert, ds))

    risk = ens.risk(ds.X, ds.y, reg=cert.reg, sample_weight=ds.sample_weight)
    refit = None
    if ens.rules or cert.fit_intercept:
        Q = ens.query_matrix(ds.X)
        refit = fit_weights(Q, ds.y, cert.loss, reg=cert.reg, fit_intercept=cert.fit_intercept,
                            sample_weight=ds.sample_weight)
    # the verifier's tolerances are its own: the claimed risk is compared relative to the
    # risk recomputed from the data, a bound relative to itself with a round-off floor fixed
    # by the data (bound_replays.bound_slack) — never relative to the rules, weights,
    # claimed numbers or recorded tolerances a certificate can make large (issues 30, 38)
    from rulemip.algorithms.local.rule_swaps import second_moment, tolerance_scale

    moment = second_moment(ds)
    risk_slack = tol * tolerance_scale(risk if math.isfinite(risk) else 0.0, moment)
    risk_ok = abs(risk - cert.risk) <= risk_slack
    checks.append(CheckResult(
        "risk", risk_ok,
        f"recomputed risk {risk:.10g} equals the claimed {cert.risk:.10g}" if risk_ok else
        f"recomputed risk {risk:.10g} differs from the claimed {cert.risk:.10g} by "
        f"{abs(risk - cert.risk):.3g} (a weight, rule or the claimed risk was changed)"))

    lb = cert.lower_bound
    slack = bound_slack(lb, tol, moment) if math.isfinite(lb) else 0.0
    lb_ok = math.isnan(lb) is False and lb <= cert.risk + max(risk_slack, slack)
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
    optimality = _optimality_check(cert, gap, mip_gap, strict)
    if optimality is not None:
        checks.append(optimality)

    bound_claim = _bound_claim(cert)
    if math.isfinite(lb):
        replayed = replay_lower_bound(cert, ds, slack, threshold_claim)
        if replayed is not None:
            checks.append(replayed[0])
            bound_claim = replayed[1] or bound_claim
    claims.extend(_claims_after_thresholds(cert, bound_claim, gap, mip_gap))
    local_checks, local_claim = local_optimality_checks(cert, ds)
    checks.extend(local_checks)
    if local_claim is not None:
        claims.append(local_claim)
    return _report(checks, risk, raise_on_failure, claims)


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


def _check_mip_gap(value: Any) -> float:
    from rulemip._validation import check_nonneg_float

    gap = check_nonneg_float(value, "mip_gap")
    assert gap is not None
    if gap >= 1.0:
        raise InvalidParameterError(
            f"`mip_gap` must be in [0, 1) (a relative gap; at 1 any model is within it); got "
            f"{value!r}.")
    return gap


def _optimality_check(cert: Certificate, gap: float, mip_gap: float, strict: bool
                      ) -> CheckResult | None:
    """The ``optimality`` check of an ``optimal`` status (``None`` for any other status).

    The status needs a valid bound and a gap within verify's own ``mip_gap`` to be
    re-derived. Within only the (looser) gap the fit recorded, ``solver.options.mip_gap``,
    it is a legitimate claim of an honest fit run at a loose tolerance, but one resting on
    a number the certificate sets: it passes, said "taken on trust", and fails with
    ``strict`` (issue 38: a model 22 % above the optimum, a true bound and a recorded
    mip_gap of 0.5 made "optimal" re-derived)."""
    if cert.status != "optimal":
        return None
    own = mip_gap + 1e-9
    recorded = _recorded_mip_gap(cert)
    if not cert.bound_valid or gap > max(own, recorded + 1e-9):
        return CheckResult(
            "optimality", False,
            f"status 'optimal' but gap {gap:.3g} (verify's mip_gap {mip_gap:.3g}, the fit's "
            f"{recorded:.3g}), bound_valid={cert.bound_valid}")
    if gap <= own:
        return CheckResult("optimality", True, f"gap {gap:.3g} within verify's mip_gap "
                           f"{mip_gap:.3g} under a valid bound")
    loose = _loose_optimal(recorded, mip_gap)
    return CheckResult(
        "optimality", not strict,
        f"gap {gap:.3g}: {loose}" if not strict else
        f"gap {gap:.3g}: {loose}, and strict mode takes nothing but the lower bound on "
        f"trust (verify with mip_gap >= {gap:.3g} to accept it)")


def _recorded_mip_gap(cert: Certificate) -> float:
    """The relative gap the fit claimed ``optimal`` at (``solver.options.mip_gap``)."""
    return float(cert.options.get("mip_gap", 1e-6))


def _loose_optimal(recorded: float, mip_gap: float) -> str:
    return (f"optimal at the recorded mip_gap {recorded:.3g} (looser than verify's "
            f"{mip_gap:.3g}): taken on trust")


def _claims_after_thresholds(cert: Certificate, bound: ClaimBasis, gap: float,
                             mip_gap: float) -> list[ClaimBasis]:
    """How the model, risk, bound, gap and status claims are known (see :func:`verify`).
    A claim inherits the basis of what it rests on: the gap and an ``optimal`` status rest
    on the lower bound, so they are re-derived only when the bound is; an ``optimal``
    status also rests on the tolerance it was claimed at, so it is re-derived only when
    the gap is within verify's own ``mip_gap``."""
    if cert.status != "optimal":
        status = ClaimBasis("status", TAKEN_ON_TRUST, "the solver's termination, as recorded")
    elif gap > mip_gap + 1e-9:
        status = ClaimBasis("status", TAKEN_ON_TRUST,
                            _loose_optimal(_recorded_mip_gap(cert), mip_gap))
    else:
        status = ClaimBasis("status", bound.basis,
                            "from the gap under the lower bound, so it rests on the bound"
                            + ("" if bound.rederived else " (taken on trust)"))
    return [ClaimBasis("model", REDERIVED, "size, rule length, interval bounds on the "
                       "thresholds, condition names and classes checked"),
            ClaimBasis("risk", REDERIVED, "recomputed from the data"),
            bound,
            ClaimBasis("gap", bound.basis, "recomputed from the risk and the lower bound"
                       + ("" if bound.rederived else ", so it rests on the bound")),
            status]


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


#: relative rounding allowed on top of the verifier's swap tolerance
SWAP_ROUNDING = 1e-12


def local_optimality_checks(cert: Certificate, ds: Dataset
                            ) -> tuple[list[CheckResult], ClaimBasis | None]:
    """Re-derive a claimed 1-swap optimality (docs/explanation/local_optimality.md), and
    how the claim is known; no check and no claim when nothing is claimed.

    The replay trusts nothing of the record but its boxes: it refits the weights (and the
    intercept) jointly itself — a model whose recorded weights are not that optimum is not
    1-swap optimal, since re-weighting one rule and the intercept already gains — then
    replays the k swap searches (:func:`rulemip.algorithms.local.rule_swaps.check_one_swap`) on
    the refitted model at the verifier's tolerance: ``SWAP_TOL`` (or the certificate's
    ``tol`` when smaller) times the risk of the refitted model, the value the claim bounds
    (every swap's risk is claimed to be at least it), floored by ``1e-9`` times the data's
    second moment (:func:`rulemip.algorithms.local.rule_swaps.tolerance_scale`). A
    certificate's looser ``tol`` is not honoured, and nothing else it records enters the
    tolerance: a poor model's large risk is the claim's own value, so a swap that gains
    more than ``1e-9`` relative to it refutes the claim."""
    rec = cert.local_optimality
    if rec is None or not rec.get("proved"):
        return [], None
    name = "1-swap optimality"
    if cert.loss != "squared":
        return [CheckResult(name, False, f"claimed for loss {cert.loss!r}; it is defined "
                            "for squared loss only")], \
            ClaimBasis("1-swap", TAKEN_ON_TRUST, "not defined for this loss")
    from rulemip.algorithms.local.rule_swaps import (
        SWAP_TOL,
        check_one_swap,
        refit_ensemble,
        second_moment,
        tolerance_scale,
    )

    refitted, refit_risk = refit_ensemble(ds, cert.ensemble.rules, reg=cert.reg,
                                          fit_intercept=cert.fit_intercept,
                                          template=cert.ensemble)
    scale = tolerance_scale(refit_risk if math.isfinite(refit_risk) else 0.0,
                            second_moment(ds))
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
    problem = cert.problem_on(ds)
    ok, checks = check_one_swap(problem, refitted, atol=atol)
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
