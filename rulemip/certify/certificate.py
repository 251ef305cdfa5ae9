r"""Re-checkable certificates of exact (or bounded) k-rule ensembles (SPEC §3, §6).

A certificate records *what was claimed*: the data fingerprint, the rule ensemble with its
weights, the regularized risk :math:`UB = R_\lambda(f)` of that ensemble, a lower bound
:math:`LB` on :math:`\min R_\lambda` over every ensemble of at most ``n_rules`` rules whose
interval bounds are among the recorded candidate thresholds, the gap, the status and how
it was obtained (engine, backend and version, options, times).

:func:`verify` re-checks every claim that can be checked without re-solving:

1. the data digest matches the data given;
2. the ensemble has at most ``n_rules`` rules, every interval bound is a recorded
   candidate threshold (so the model lies in the language the bound speaks about);
3. the claimed risk equals the risk recomputed from the data (within ``tol``);
4. :math:`LB \le UB`, and the convex refit of the same rules is not below :math:`LB`
   (a model of the language beating the bound would refute it);
5. the gap equals :func:`rulemip.solvers.relative_gap` of the claimed bounds;
6. ``status == "optimal"`` only with a valid bound and a gap within tolerance.

The lower bound itself rests on the solver run; it is re-derivable by solving again with
the recorded options.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rulemip.data import Dataset
from rulemip.exceptions import CertificateError
from rulemip.refit import fit_weights
from rulemip.rules import RuleEnsemble
from rulemip.solvers.result import relative_gap

FORMAT = "rulemip.Certificate"
FORMAT_VERSION = 1


def _num(v: float | None) -> Any:
    if v is None:
        return None
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def _unnum(v: Any) -> float:
    if v is None:
        return math.nan
    return float(v)


@dataclass(frozen=True)
class Certificate:
    """The claims of one exact solve; see the module docstring."""

    dataset_digest: str
    n_samples: int
    feature_names: tuple[str, ...]
    ensemble: RuleEnsemble
    loss: str
    reg: float
    fit_intercept: bool
    n_rules: int
    thresholds: tuple[tuple[float, ...], ...]
    risk: float
    lower_bound: float
    gap: float
    status: str
    bound_valid: bool
    engine: str = ""
    backend: str = ""
    backend_version: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    wall_time: float = 0.0
    created: str = ""
    rulemip_version: str = ""
    max_rule_length: int | None = None
    notes: tuple[str, ...] = ()

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": FORMAT_VERSION,
            "dataset": {"digest": self.dataset_digest, "n_samples": self.n_samples,
                        "feature_names": list(self.feature_names)},
            "problem": {"loss": self.loss, "reg": self.reg,
                        "fit_intercept": self.fit_intercept, "n_rules": self.n_rules,
                        "max_rule_length": self.max_rule_length,
                        "thresholds": [list(t) for t in self.thresholds]},
            "ensemble": self.ensemble.to_dict(),
            "claims": {"risk": _num(self.risk), "lower_bound": _num(self.lower_bound),
                       "gap": _num(self.gap), "status": self.status,
                       "bound_valid": self.bound_valid},
            "solver": {"engine": self.engine, "backend": self.backend,
                       "backend_version": self.backend_version, "options": self.options,
                       "wall_time": self.wall_time},
            "created": self.created, "rulemip_version": self.rulemip_version,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Certificate:
        if d.get("format") != FORMAT:
            raise CertificateError(f"not a {FORMAT} document (format={d.get('format')!r}).")
        try:
            ds, pb, cl, sv = d["dataset"], d["problem"], d["claims"], d["solver"]
            return cls(
                dataset_digest=str(ds["digest"]), n_samples=int(ds["n_samples"]),
                feature_names=tuple(ds["feature_names"]),
                ensemble=RuleEnsemble.from_dict(d["ensemble"]),
                loss=str(pb["loss"]), reg=float(pb["reg"]),
                fit_intercept=bool(pb["fit_intercept"]), n_rules=int(pb["n_rules"]),
                max_rule_length=pb.get("max_rule_length"),
                thresholds=tuple(tuple(float(v) for v in t) for t in pb["thresholds"]),
                risk=_unnum(cl["risk"]), lower_bound=_unnum(cl["lower_bound"]),
                gap=_unnum(cl["gap"]), status=str(cl["status"]),
                bound_valid=bool(cl["bound_valid"]), engine=str(sv.get("engine", "")),
                backend=str(sv.get("backend", "")),
                backend_version=str(sv.get("backend_version", "")),
                options=dict(sv.get("options", {})), wall_time=float(sv.get("wall_time", 0)),
                created=str(d.get("created", "")),
                rulemip_version=str(d.get("rulemip_version", "")),
                notes=tuple(d.get("notes", ())))
        except (KeyError, TypeError, ValueError) as exc:
            raise CertificateError(f"malformed certificate: {exc}") from exc

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Certificate:
        return cls.from_dict(json.loads(text))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temporary file + rename)."""
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(self.to_json())
                fh.write("\n")
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Certificate:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise CertificateError(f"cannot read certificate {str(path)!r}: {exc}") from exc
        try:
            return cls.from_json(text)
        except json.JSONDecodeError as exc:
            raise CertificateError(f"{str(path)!r} is not JSON: {exc}") from exc

    @property
    def is_optimal(self) -> bool:
        return self.status == "optimal"

    def summary(self) -> str:
        """One line: status, risk, bound and gap."""
        valid = "" if self.bound_valid else " (bound not proved valid)"
        return (f"{self.status}: risk {self.risk:.6g}, lower bound {self.lower_bound:.6g}, "
                f"gap {self.gap:.3%}{valid}")


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    message: str


@dataclass(frozen=True)
class VerificationReport:
    """Outcome of :func:`verify`: every check with its message; ``ok`` if all passed."""

    checks: tuple[CheckResult, ...]
    recomputed_risk: float

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failures(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if not c.ok)

    def __str__(self) -> str:
        lines = [f"{'PASS' if c.ok else 'FAIL'}  {c.name}: {c.message}" for c in self.checks]
        lines.append("certificate verified" if self.ok else
                     f"certificate REJECTED ({len(self.failures)} failed check(s))")
        return "\n".join(lines)


def verify(certificate: Certificate | str | os.PathLike[str], X: Any, y: Any, *,
           sample_weight: Any = None, tol: float = 1e-7, raise_on_failure: bool = False
           ) -> VerificationReport:
    """Re-check a certificate against data (module docstring lists the checks).

    Parameters
    ----------
    certificate : a :class:`Certificate` or the path of its JSON file.
    X, y : the data it was computed on (numpy or pandas; labels as given to ``fit``).
    tol : absolute tolerance on risks (relative to ``max(1, |risk|)``).
    raise_on_failure : raise :class:`CertificateError` listing the failed checks.
    """
    cert = certificate if isinstance(certificate, Certificate) else Certificate.load(certificate)
    ens = cert.ensemble
    ds = Dataset.from_arrays(X, y, loss=cert.loss, encoder=ens.encoder,
                             sample_weight=sample_weight)
    checks: list[CheckResult] = []
    scale = max(1.0, abs(cert.risk)) if math.isfinite(cert.risk) else 1.0

    digest = ds.digest()
    checks.append(CheckResult(
        "data", digest == cert.dataset_digest,
        "digest matches" if digest == cert.dataset_digest else
        f"data digest {digest[:16]}… differs from the certificate's "
        f"{cert.dataset_digest[:16]}… (different data, row order or feature names)"))

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
    risk_ok = abs(risk - cert.risk) <= tol * scale
    checks.append(CheckResult(
        "risk", risk_ok,
        f"recomputed risk {risk:.10g} equals the claimed {cert.risk:.10g}" if risk_ok else
        f"recomputed risk {risk:.10g} differs from the claimed {cert.risk:.10g} by "
        f"{abs(risk - cert.risk):.3g} (a weight, rule or the claimed risk was changed)"))

    lb = cert.lower_bound
    lb_ok = math.isnan(lb) is False and lb <= cert.risk + tol * scale
    checks.append(CheckResult("bounds order", lb_ok,
                              f"lower bound {lb:.10g} <= risk {cert.risk:.10g}" if lb_ok else
                              f"lower bound {lb:.10g} exceeds the risk {cert.risk:.10g}"))
    if ens.rules or cert.fit_intercept:
        Q = ens.query_matrix(ds.X)
        refit = fit_weights(Q, ds.y, cert.loss, reg=cert.reg, fit_intercept=cert.fit_intercept,
                            sample_weight=ds.sample_weight)
        refit_ok = refit.risk >= lb - tol * scale
        checks.append(CheckResult(
            "bound not refuted", refit_ok,
            f"refitted weights reach {refit.risk:.10g} >= bound" if refit_ok else
            f"the same rules with refitted weights reach {refit.risk:.10g} < the claimed "
            f"lower bound {lb:.10g}: the bound is false"))

    gap = relative_gap(cert.risk, lb)
    gap_ok = (math.isinf(gap) and math.isinf(cert.gap)) or abs(gap - cert.gap) <= 1e-9 + tol
    checks.append(CheckResult("gap", gap_ok, f"gap {cert.gap:.6g} = (UB-LB)/|UB|" if gap_ok
                              else f"claimed gap {cert.gap:.6g} but bounds give {gap:.6g}"))
    if cert.status == "optimal":
        opt_tol = float(cert.options.get("mip_gap", 1e-6)) + 1e-9
        opt_ok = cert.bound_valid and gap <= opt_tol
        checks.append(CheckResult(
            "optimality", opt_ok,
            f"gap {gap:.3g} within {opt_tol:.3g} under a valid bound" if opt_ok else
            f"status 'optimal' but gap {gap:.3g} (tolerance {opt_tol:.3g}), bound_valid="
            f"{cert.bound_valid}"))

    report = VerificationReport(tuple(checks), risk)
    if raise_on_failure and not report.ok:
        raise CertificateError("certificate rejected: " + "; ".join(
            f"{c.name}: {c.message}" for c in report.failures))
    return report


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


def make_certificate(dataset: Dataset, ensemble: RuleEnsemble, *, loss: str, reg: float,
                     fit_intercept: bool, n_rules: int, thresholds: Any, risk: float,
                     lower_bound: float, status: str, bound_valid: bool, engine: str = "",
                     backend: str = "", backend_version: str = "",
                     options: dict[str, Any] | None = None, wall_time: float = 0.0,
                     max_rule_length: int | None = None, notes: tuple[str, ...] = ()
                     ) -> Certificate:
    """Assemble a :class:`Certificate` for ``ensemble`` fitted on ``dataset``."""
    from rulemip import __version__

    return Certificate(
        dataset_digest=dataset.digest(), n_samples=dataset.n,
        feature_names=dataset.feature_names, ensemble=ensemble, loss=loss, reg=float(reg),
        fit_intercept=bool(fit_intercept), n_rules=int(n_rules),
        thresholds=tuple(tuple(float(v) for v in np.asarray(t)) for t in thresholds),
        risk=float(risk), lower_bound=float(lower_bound),
        gap=relative_gap(float(risk), float(lower_bound)), status=status,
        bound_valid=bool(bound_valid), engine=engine, backend=backend,
        backend_version=backend_version, options=dict(options or {}),
        wall_time=float(wall_time), created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        rulemip_version=__version__, max_rule_length=max_rule_length, notes=tuple(notes))
