r"""Re-checkable certificates of exact (or bounded) k-rule ensembles (docs/explanation/gaps.md,
docs/explanation/solving.md).

A certificate records *what was claimed*: the data fingerprint, the rule ensemble with its
weights, the regularized risk :math:`UB = R_\lambda(f)` of that ensemble, a lower bound
:math:`LB` on :math:`\min R_\lambda` over every ensemble of at most ``n_rules`` rules whose
interval bounds are among the recorded candidate thresholds, the gap, the status and how
it was obtained (engine, backend and version, options, times).

:func:`~rulemip.certify.verification.verify` (module :mod:`rulemip.certify.verification`)
re-checks every claim that can be checked without re-solving:

1. the data digest matches the data given, and so do the recorded row count and feature
   names;
2. the problem the bound speaks about is the one solved: the candidate thresholds,
   ``n_rules``, ``max_rule_length``, loss, ``reg`` and ``fit_intercept`` are bound to the
   data digest by a problem digest recorded at solve time, and thresholds made by the
   midpoint/quantile rule (:func:`rulemip.data.candidate_thresholds`) are re-derived from
   the data and must be exactly the recorded ones (so no threshold can be moved or added);
3. the ensemble has at most ``n_rules`` rules, every interval bound is a recorded
   candidate threshold (so the model lies in the language the bound speaks about), its
   conditions are named after the features they restrict and a classifier's classes are
   the labels of the data;
4. the claimed risk equals the risk recomputed from the data (within ``tol``);
5. :math:`LB \le UB`, and the convex refit of the same rules is not below :math:`LB`
   (a model of the language beating the bound would refute it);
6. the gap equals :func:`rulemip.solvers.relative_gap` of the claimed bounds;
7. ``status == "optimal"`` only with a valid bound and a gap within tolerance (re-derived
   within verify's own ``mip_gap``; within only the recorded one it is taken on trust).

The lower bound itself rests on the solver run; it is re-derivable by solving again with
the recorded options. The problem digest is a checksum, not a signature: it catches edits
of the problem section, and re-deriving the thresholds catches a changed candidate set
even when the digest is recomputed. Explicit user thresholds cannot be re-derived from
the data: they are compared with the list the verifier gives (``thresholds=``), refused
when the fit recorded that its thresholds came from the data
(``options["threshold_source"] == "data"``: the rule was switched), and otherwise taken
on trust (``strict=True`` refuses that). The report lists, for every claim, whether it
was re-derived or taken on trust (:class:`ClaimBasis`); threat model in
``docs/howto/certificates.md``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rulemip._io import write_text_atomic
from rulemip.certify import schema
from rulemip.data import candidate_thresholds
from rulemip.data.dataset import Dataset
from rulemip.exceptions import CertificateError, InvalidDataError
from rulemip.rules import RuleEnsemble
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import relative_gap

FORMAT = "rulemip.Certificate"
FORMAT_VERSION = 2
#: versions :meth:`Certificate.from_dict` reads; version 1 predates the problem digest, so
#: such certificates load but fail the "problem" check of :func:`verify`
SUPPORTED_VERSIONS = (1, 2)
#: how the candidate thresholds were made: an ``int`` b (quantile rule with at most b
#: cuts per feature), ``None`` (all midpoints) or ``"explicit"`` (given by the user)
ThresholdRule = int | str | None


def _num(v: float | None) -> Any:
    if v is None:
        return None
    return v if math.isfinite(v) else ("inf" if v > 0 else "-inf")


def problem_digest(dataset_digest: str, *, loss: str, reg: float, fit_intercept: bool,
                   n_rules: int, max_rule_length: int | None,
                   thresholds: tuple[tuple[float, ...], ...],
                   threshold_rule: ThresholdRule) -> str:
    """SHA-256 of the data digest and every field that defines the optimization problem
    (canonical JSON, ``json.dumps(..., sort_keys=True)``; floats by their shortest
    round-trip repr). The thresholds' text is :func:`thresholds_json`, the same text."""
    payload = json.dumps({"data": dataset_digest, "loss": loss, "reg": float(reg),
                          "fit_intercept": bool(fit_intercept), "n_rules": int(n_rules),
                          "max_rule_length": max_rule_length,
                          "thresholds": _THRESHOLDS_SLOT,
                          "threshold_rule": threshold_rule}, sort_keys=True)
    payload = payload.replace(json.dumps(_THRESHOLDS_SLOT), thresholds_json(
        tuple(tuple(t) for t in thresholds)), 1)
    return hashlib.sha256(payload.encode()).hexdigest()


#: where :func:`problem_digest` splices the thresholds' text into its JSON
_THRESHOLDS_SLOT = "<thresholds>"


@functools.lru_cache(maxsize=2)
def thresholds_json(thresholds: tuple[tuple[float, ...], ...]) -> str:
    """``json.dumps([list(t) for t in thresholds])``, kept for the next certificate of the
    same problem: every distinct value of 100 000 rows × 20 features is 2 million floats,
    whose shortest reprs take 0.8 s per certificate (a gap study makes one per k)."""
    return json.dumps([list(t) for t in thresholds])


#: what ``problem.max_rule_length`` counts: restricted features (a two-sided interval
#: ``a < x_j <= b`` is one), the one meaning of ``max_rule_length`` in rulemip
RULE_LENGTH_COUNTS = "features"


def _check_rule_length_counts(pb: dict[str, Any]) -> None:
    """Refuse a certificate whose ``max_rule_length`` counts anything but features (a
    certificate without the key predates it and counted features too)."""
    counts = pb.get("max_rule_length_counts", RULE_LENGTH_COUNTS)
    if counts != RULE_LENGTH_COUNTS:
        raise CertificateError(
            "malformed certificate: `problem.max_rule_length_counts` must be "
            f"{RULE_LENGTH_COUNTS!r} (rulemip's max_rule_length counts restricted "
            f"features); got {counts!r}.")


def _rule_to_dict(rule: ThresholdRule) -> dict[str, Any]:
    if rule == "explicit":
        return {"kind": "explicit"}
    return {"kind": "midpoints", "max_thresholds": rule}


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
    threshold_rule: ThresholdRule = "explicit"
    problem_digest: str = ""  # empty: a format-1 certificate, problem not bound
    #: squared loss: the claim that no single rule swap lowers the risk (a record of
    #: :func:`rulemip.algorithms.local.rule_swaps.local_optimality_record`), or None
    local_optimality: dict[str, Any] | None = None

    def computed_problem_digest(self) -> str:
        """:func:`problem_digest` of this certificate's recorded problem."""
        return problem_digest(self.dataset_digest, loss=self.loss, reg=self.reg,
                              fit_intercept=self.fit_intercept, n_rules=self.n_rules,
                              max_rule_length=self.max_rule_length,
                              thresholds=self.thresholds, threshold_rule=self.threshold_rule)

    def problem_on(self, dataset: Dataset) -> KRuleProblem:
        """The problem this certificate states (its loss, ridge and language: rule count,
        recorded thresholds, rule length, intercept), on ``dataset`` — what a replay of
        its bound re-solves."""
        return KRuleProblem.of(dataset, self.n_rules, loss=self.loss, reg=self.reg,
                               fit_intercept=self.fit_intercept,
                               thresholds=[np.asarray(t, dtype=float)
                                           for t in self.thresholds],
                               max_rule_length=self.max_rule_length)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT, "version": FORMAT_VERSION,
            "dataset": {"digest": self.dataset_digest, "n_samples": self.n_samples,
                        "feature_names": list(self.feature_names)},
            "problem": {"loss": self.loss, "reg": self.reg,
                        "fit_intercept": self.fit_intercept, "n_rules": self.n_rules,
                        "max_rule_length": self.max_rule_length,
                        "max_rule_length_counts": RULE_LENGTH_COUNTS,
                        "thresholds": [list(t) for t in self.thresholds],
                        "threshold_rule": _rule_to_dict(self.threshold_rule),
                        "digest": self.problem_digest},
            "ensemble": self.ensemble.to_dict(),
            "claims": {"risk": _num(self.risk), "lower_bound": _num(self.lower_bound),
                       "gap": _num(self.gap), "status": self.status,
                       "bound_valid": self.bound_valid},
            "solver": {"engine": self.engine, "backend": self.backend,
                       "backend_version": self.backend_version, "options": self.options,
                       "wall_time": self.wall_time},
            "created": self.created, "rulemip_version": self.rulemip_version,
            "notes": list(self.notes),
            **_local_to_dict(self.local_optimality),
        }

    @classmethod
    def from_dict(cls, d: Any) -> Certificate:
        """Read a certificate document strictly (:mod:`rulemip.certify.schema`)."""
        if not isinstance(d, dict):
            raise CertificateError(
                f"not a {FORMAT} document: the JSON root is {type(d).__name__}, not an "
                "object; give a file written by `rulemip fit` or `Certificate.save`.")
        if d.get("format") != FORMAT:
            raise CertificateError(f"not a {FORMAT} document (format={d.get('format')!r}).")
        version = d.get("version")
        if isinstance(version, bool) or version not in SUPPORTED_VERSIONS:
            raise CertificateError(
                f"unsupported certificate `version` {version!r}; this rulemip reads versions "
                f"{list(SUPPORTED_VERSIONS)} (a newer rulemip may have written it; upgrade).")
        ds = schema.section(d, "dataset")
        pb = schema.section(d, "problem")
        cl = schema.section(d, "claims")
        sv = schema.section(d, "solver")
        if version >= 2:
            rule = schema.as_threshold_rule(schema.required(pb, "threshold_rule", "problem"),
                                            "problem.threshold_rule")
            digest = schema.as_str(schema.required(pb, "digest", "problem"), "problem.digest")
        else:
            rule, digest = "explicit", ""
        opts = sv.get("options", {})
        if not isinstance(opts, dict):
            raise CertificateError("malformed certificate: `solver.options` must be a JSON "
                                   f"object; got {opts!r}.")
        if "mip_gap" in opts:
            gap = schema.as_number(opts["mip_gap"], "solver.options.mip_gap", finite=True)
            if not 0.0 <= gap < 1.0:
                # a relative gap of 1 or more makes any model "optimal": an edited tolerance
                raise CertificateError(
                    "malformed certificate: `solver.options.mip_gap` must be in [0, 1) (the "
                    f"relative gap at which 'optimal' was claimed); got {gap!r}.")
        notes = d.get("notes", [])
        try:
            ensemble = RuleEnsemble.from_dict(schema.section(d, "ensemble"))
        except (KeyError, TypeError, ValueError, InvalidDataError) as exc:
            raise CertificateError(f"malformed certificate: `ensemble` is not a rule "
                                   f"ensemble document ({exc}).") from exc
        _check_rule_length_counts(pb)
        return cls(
            dataset_digest=schema.as_str(schema.required(ds, "digest", "dataset"),
                                         "dataset.digest"),
            n_samples=schema.as_int(schema.required(ds, "n_samples", "dataset"),  # type: ignore[arg-type]
                                    "dataset.n_samples", minimum=1),
            feature_names=schema.as_str_list(schema.required(ds, "feature_names", "dataset"),
                                             "dataset.feature_names"),
            ensemble=ensemble,
            loss=schema.as_loss(schema.required(pb, "loss", "problem"), "problem.loss"),
            reg=schema.as_number(schema.required(pb, "reg", "problem"), "problem.reg",
                                 finite=True),
            fit_intercept=schema.as_bool(schema.required(pb, "fit_intercept", "problem"),
                                         "problem.fit_intercept"),
            n_rules=schema.as_int(schema.required(pb, "n_rules", "problem"),  # type: ignore[arg-type]
                                  "problem.n_rules", minimum=1),
            max_rule_length=schema.as_int(pb.get("max_rule_length"), "problem.max_rule_length",
                                          minimum=1, allow_none=True),
            thresholds=schema.as_thresholds(schema.required(pb, "thresholds", "problem"),
                                            "problem.thresholds"),
            risk=schema.as_number(schema.required(cl, "risk", "claims"), "claims.risk",
                                  allow_missing=True),
            lower_bound=schema.as_number(schema.required(cl, "lower_bound", "claims"),
                                         "claims.lower_bound", allow_missing=True),
            gap=schema.as_number(schema.required(cl, "gap", "claims"), "claims.gap",
                                 allow_missing=True),
            status=schema.as_status(schema.required(cl, "status", "claims"), "claims.status"),
            bound_valid=schema.as_bool(schema.required(cl, "bound_valid", "claims"),
                                       "claims.bound_valid"),
            engine=schema.as_str(sv.get("engine", ""), "solver.engine"),
            backend=schema.as_str(sv.get("backend", ""), "solver.backend"),
            backend_version=schema.as_str(sv.get("backend_version", ""),
                                          "solver.backend_version"),
            options=dict(opts),
            wall_time=schema.as_number(sv.get("wall_time", 0.0), "solver.wall_time"),
            created=schema.as_str(d.get("created", ""), "created"),
            rulemip_version=schema.as_str(d.get("rulemip_version", ""), "rulemip_version"),
            notes=schema.as_str_list(notes, "notes"),
            threshold_rule=rule, problem_digest=digest,
            local_optimality=_local_from_dict(d.get("local_optimality")))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Certificate:
        return cls.from_dict(json.loads(text))

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write atomically (temporary file + rename; mode per the umask)."""
        return write_text_atomic(path, self.to_json() + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Certificate:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
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
                f"gap {self.gap:.3%}{valid}{local_summary(self)}")


def _threshold_rule_of(X: Any, thresholds: tuple[tuple[float, ...], ...],
                       hint: Any, sample_weight: Any = None) -> ThresholdRule:
    """Which rule made ``thresholds`` from ``X`` (and the row weights, which the quantile
    rule uses): ``hint`` (the fit's ``max_thresholds``) or all midpoints when they
    reproduce them, else ``"explicit"``."""
    tries: list[int | None] = [None]
    if isinstance(hint, int) and not isinstance(hint, bool) and hint >= 1:
        tries.insert(0, hint)
    longest = max((len(t) for t in thresholds), default=0)
    if longest >= 1:
        tries.append(longest)
    for b in tries:
        derived = candidate_thresholds(X, b, sample_weight)
        if len(derived) == len(thresholds) and all(
                len(a) == len(t) and np.array_equal(a, np.asarray(t))
                for a, t in zip(derived, thresholds, strict=False)):
            return b
    return "explicit"


#: ``make_certificate(threshold_rule=...)`` left out: the rule is re-derived from the data
_DERIVE_RULE: Any = object()


def make_certificate(problem: KRuleProblem, ensemble: RuleEnsemble, *, risk: float,
                     lower_bound: float, status: str, bound_valid: bool, engine: str = "",
                     backend: str = "", backend_version: str = "",
                     options: dict[str, Any] | None = None, wall_time: float = 0.0,
                     notes: tuple[str, ...] = (),
                     threshold_rule: Any = _DERIVE_RULE) -> Certificate:
    """Assemble a :class:`Certificate` for ``ensemble``, a model of ``problem``.

    The threshold rule is recorded when the problem's thresholds are what
    :func:`~rulemip.data.candidate_thresholds` gives on its data (with
    ``options["max_thresholds"]`` or all midpoints), so :func:`verify` can re-derive them;
    otherwise they are recorded as explicit. A caller that made the thresholds with
    ``candidate_thresholds(X, b, sample_weight)`` itself passes ``threshold_rule=b`` and
    the thresholds are not derived a second time (0.06 s on 100 000 × 20); ``verify``
    re-derives them whatever the certificate records.
    """
    from rulemip import __version__
    from rulemip._validation import python_scalar

    dataset, loss, reg = problem.dataset, problem.loss, problem.reg
    fit_intercept, n_rules = problem.fit_intercept, problem.n_rules
    # numpy scalars among the caller's parameters (``max_rule_length=np.int64(2)``) are
    # recorded as the Python numbers they hold: the document is JSON
    options = python_scalar(dict(options or {}))
    max_rule_length = python_scalar(problem.max_rule_length)
    ths = tuple(tuple(np.asarray(t, dtype=float).reshape(-1).tolist())
                for t in problem.thresholds)
    rule = python_scalar(threshold_rule) if threshold_rule is not _DERIVE_RULE else \
        _threshold_rule_of(dataset.X, ths, options.get("max_thresholds"),
                           dataset.sample_weight)
    data_digest = dataset.digest()
    return Certificate(
        dataset_digest=data_digest, n_samples=dataset.n,
        feature_names=dataset.feature_names, ensemble=ensemble, loss=loss, reg=float(reg),
        fit_intercept=bool(fit_intercept), n_rules=int(n_rules), thresholds=ths,
        threshold_rule=rule,
        problem_digest=problem_digest(data_digest, loss=loss, reg=float(reg),
                                      fit_intercept=bool(fit_intercept), n_rules=int(n_rules),
                                      max_rule_length=max_rule_length, thresholds=ths,
                                      threshold_rule=rule),
        risk=float(risk), lower_bound=float(lower_bound),
        gap=relative_gap(float(risk), float(lower_bound)), status=status,
        bound_valid=bool(bound_valid), engine=engine, backend=backend,
        backend_version=backend_version, options=options,
        wall_time=float(wall_time), created=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        rulemip_version=__version__, max_rule_length=max_rule_length, notes=tuple(notes))


# ---------------------------------------------------------------- 1-swap optimality
def _local_to_dict(record: dict[str, Any] | None) -> dict[str, Any]:
    return {} if record is None else {"local_optimality": record}


def _local_from_dict(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("kind") != "1-swap" \
            or not isinstance(value.get("proved"), bool):
        raise CertificateError(
            "malformed certificate: `local_optimality` must be an object with kind "
            f"'1-swap' and a boolean `proved`; got {value!r}.")
    if "tol" in value:
        tol = schema.as_number(value["tol"], "local_optimality.tol", finite=True)
        if tol < 0:
            raise CertificateError(
                f"malformed certificate: `local_optimality.tol` must be >= 0; got {tol!r}.")
    if not isinstance(value.get("searches", []), list):
        raise CertificateError("malformed certificate: `local_optimality.searches` must be "
                               f"a list; got {value.get('searches')!r}.")
    return dict(value)


def local_summary(cert: Certificate) -> str:
    """``"; local: 1-swap optimal"`` when the certificate claims it (docs/explanation/
    local_optimality.md), else empty."""
    rec = cert.local_optimality
    return "; local: 1-swap optimal" if rec is not None and rec.get("proved") else ""
