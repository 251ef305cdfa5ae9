"""The checks of :func:`rulemip.certify.verify` on the recorded data section and model,
before any risk is computed: the certificate is about the data given (digest, row count,
feature names), and its model is a model of the recorded problem's language (size, rule
length, intercept, bounds on the candidate thresholds, conditions named after the
features they restrict, the classes of the labels given)."""

from __future__ import annotations

import math

import numpy as np

from rulemip.certify.certificate import Certificate
from rulemip.certify.claims import CheckResult
from rulemip.data import Dataset
from rulemip.rules import RuleEnsemble

__all__ = ["data_check", "model_checks"]


def data_check(cert: Certificate, ds: Dataset) -> CheckResult:
    """The data digest, and the row count and feature names the certificate records next
    to it (each re-derived from the data given)."""
    digest = ds.digest()
    if digest != cert.dataset_digest:
        return CheckResult("data", False, f"data digest {digest[:16]}… differs from the "
                           f"certificate's {cert.dataset_digest[:16]}… (different data, row "
                           "order or feature names)")
    if cert.n_samples != ds.n:
        return CheckResult("data", False, f"the certificate records {cert.n_samples} rows, "
                           f"the data has {ds.n}: the dataset section was edited")
    if tuple(cert.feature_names) != tuple(ds.feature_names):
        return CheckResult("data", False, f"the certificate records feature names "
                           f"{list(cert.feature_names)[:6]}, the data has "
                           f"{list(ds.feature_names)[:6]}: the dataset section was edited")
    return CheckResult("data", True, "digest, row count and feature names match")


def model_checks(cert: Certificate, ds: Dataset) -> list[CheckResult]:
    """Size, rule length, intercept, language, condition names and classes of the
    recorded model (its feature indexes are known to be those of ``ds``)."""
    ens = cert.ensemble
    out = [CheckResult("size", len(ens.rules) <= cert.n_rules,
                       f"{len(ens.rules)} rule(s), at most {cert.n_rules} allowed")]
    if cert.max_rule_length is not None:
        long_rules = [t for t, r in enumerate(ens.rules)
                      if len({c.feature for c in r.conditions}) > cert.max_rule_length]
        out.append(CheckResult(
            "rule length", not long_rules,
            "within max_rule_length" if not long_rules else
            f"rules {long_rules} restrict more than {cert.max_rule_length} features"))
    if not cert.fit_intercept and ens.intercept != 0.0:
        out.append(CheckResult("intercept", False,
                               f"fit_intercept=False but intercept is {ens.intercept}"))
    off_grid = _bounds_off_grid(ens, cert.thresholds)
    out.append(CheckResult(
        "language", not off_grid,
        "every interval bound is a candidate threshold" if not off_grid else
        "bounds not among the candidate thresholds: " + "; ".join(off_grid[:5])))
    misnamed = _misnamed_conditions(ens, ds)
    if misnamed:
        out.append(CheckResult("names", False, "conditions named after another feature than "
                               "the one they restrict: " + "; ".join(misnamed[:5])))
    if ens.classes is not None and ens.classes != ds.classes:
        out.append(CheckResult("classes", False, f"the model's classes {list(ens.classes)} "
                               f"are not the labels of the data {list(ds.classes or ())}"))
    return out


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


def _misnamed_conditions(ens: RuleEnsemble, ds: Dataset) -> list[str]:
    """Conditions whose display name (and level) is not the restricted feature's: its
    encoded name, or for an indicator column its source column and level; an unnamed
    condition (``""``) names nothing and passes."""
    cols = ds.encoder.columns
    bad: list[str] = []
    for t, rule in enumerate(ens.rules):
        for c in rule.conditions:
            col = cols[c.feature]
            named = {(col.name, None), (col.source, col.level), ("", None)}
            if (c.name, c.level) not in named:
                shown = c.name if c.level is None else f"{c.name} == {c.level}"
                bad.append(f"rule {t}: {shown!r} on feature {c.feature} ({col.name!r})")
    return bad
