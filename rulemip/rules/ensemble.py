r"""Additive rule ensembles :math:`f(x) = \beta_0 + \sum_t \beta_t q_t(x)`
(docs/explanation/notation.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.data.encoding import FeatureEncoder
from rulemip.losses import get_loss
from rulemip.rules.condition import Condition
from rulemip.rules.rule import Rule

FORMAT_VERSION = 1


@dataclass(frozen=True)
class RuleEnsemble:
    """An intercept plus weighted rules, with the loss that gives predictions their meaning.

    Parameters
    ----------
    rules : the k rules (weights included).
    intercept : the background rule's weight :math:`\\beta_0` (0 when not fitted).
    loss : ``"squared"``, ``"logistic"`` or ``"poisson"``; fixes the inverse link.
    encoder : maps raw input (e.g. a DataFrame with categorical columns) to the encoded
        matrix the conditions refer to; ``None`` means numeric input is used as is.
    classes : for logistic loss, the original labels of -1 and +1.
    """

    rules: tuple[Rule, ...] = ()
    intercept: float = 0.0
    loss: str = "squared"
    encoder: FeatureEncoder | None = None
    classes: tuple[Any, ...] | None = field(default=None)

    def __init__(self, rules: Sequence[Rule] = (), intercept: float = 0.0,
                 loss: str = "squared", encoder: FeatureEncoder | None = None,
                 classes: tuple[Any, ...] | None = None) -> None:
        object.__setattr__(self, "rules", tuple(rules))
        object.__setattr__(self, "intercept", float(intercept))
        object.__setattr__(self, "loss", get_loss(loss).name)
        object.__setattr__(self, "encoder", encoder)
        object.__setattr__(self, "classes", None if classes is None else tuple(classes))

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return len(self.rules)

    @property
    def weights(self) -> NDArray[np.float64]:
        return np.array([r.weight for r in self.rules], dtype=float)

    @property
    def complexity(self) -> int:
        """:math:`C(f) = k + \\sum_t c(q_t)` ([OGB]): rules plus total length."""
        return len(self.rules) + sum(r.length for r in self.rules)

    # ------------------------------------------------------------------ evaluation
    def encode(self, X: Any) -> NDArray[np.float64]:
        """Raw input to the encoded float matrix the conditions refer to."""
        if self.encoder is not None:
            return self.encoder.transform(X)
        arr = np.asarray(X, dtype=float)
        if arr.ndim != 2:
            from rulemip.exceptions import InvalidDataError

            raise InvalidDataError(f"X must be 2-dimensional; got shape {arr.shape}.")
        return arr

    def query_matrix(self, X_encoded: NDArray[np.float64]) -> NDArray[np.float64]:
        """The n×k 0/1 matrix :math:`Q = [q_1 … q_k]` on encoded data."""
        Q = np.empty((X_encoded.shape[0], len(self.rules)), dtype=float)
        for t, r in enumerate(self.rules):
            Q[:, t] = r.query(X_encoded)
        return Q

    def decision_function_encoded(self, X_encoded: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(self.intercept + self.query_matrix(X_encoded) @ self.weights,
                          dtype=float)

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """:math:`f(x)` on the link scale."""
        return self.decision_function_encoded(self.encode(X))

    def predict(self, X: Any) -> NDArray[np.float64]:
        """:math:`\\mu(f(x))` — mean response (squared), probability of +1 (logistic), rate
        (Poisson)."""
        return get_loss(self.loss).inverse_link(self.decision_function(X))

    def risk(self, X_encoded: NDArray[np.float64], y: NDArray[np.float64], reg: float = 0.0,
             sample_weight: NDArray[np.float64] | None = None) -> float:
        """:math:`R_\\lambda` of this ensemble on encoded data (labels in loss convention)."""
        return get_loss(self.loss).risk(self.decision_function_encoded(X_encoded), y,
                                        weights=self.weights, reg=reg,
                                        sample_weight=sample_weight)

    # ------------------------------------------------------------------ text
    def merged_rules(self) -> tuple[tuple[Rule, tuple[int, ...]], ...]:
        r"""Rules with identical conditions merged into one, weights summed, in order of
        first appearance; each with the indices of the rules it stands for.

        :math:`\sum_t \beta_t q_t` is unchanged by merging (:math:`\beta q + \beta' q =
        (\beta+\beta')q`), so predictions are the same; the ridge penalty is not
        (:math:`\beta^2+\beta'^2 < (\beta+\beta')^2` for weights of one sign), which is
        why an optimal k-rule ensemble may hold the same rule twice.
        """
        groups: list[tuple[Rule, list[int]]] = []
        for t, rule in enumerate(self.rules):
            for g, (first, members) in enumerate(groups):
                if first.same_body(rule):
                    members.append(t)
                    groups[g] = (first.with_weight(first.weight + rule.weight), members)
                    break
            else:
                groups.append((rule, [t]))
        return tuple((rule, tuple(members)) for rule, members in groups)

    def to_text(self, precision: int = 4, *, merge_identical: bool = True) -> str:
        """One line per rule, ``BASE`` first. With ``merge_identical`` (the default) rules
        with identical conditions print as one line with their summed weight
        (:meth:`merged_rules`), and a last line says which rules were merged."""
        lines = []
        if self.intercept != 0.0 or not self.rules:
            lines.append(f"BASE {self.intercept:+.{precision}g}")
        if not merge_identical:
            lines.extend(r.to_text(precision) for r in self.rules)
            return "\n".join(lines)
        merged = self.merged_rules()
        lines.extend(r.to_text(precision) for r, _ in merged)
        repeated = [m for _, m in merged if len(m) > 1]
        if repeated:
            which = "; ".join(" = ".join(f"rule {t + 1}" for t in m) for m in repeated)
            lines.append(
                f"({len(self.rules)} rules, shown as {len(merged)}: identical conditions "
                f"merged, weights summed ({which}); predictions are the same. The ridge "
                "penalty makes a repeated rule optimal: splitting a weight lowers its cost.)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        return {"format": "rulemip.RuleEnsemble", "version": FORMAT_VERSION,
                "loss": self.loss, "intercept": self.intercept,
                "rules": [r.to_dict() for r in self.rules],
                "encoder": None if self.encoder is None else self.encoder.to_dict(),
                "classes": None if self.classes is None else list(self.classes)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RuleEnsemble:
        if d.get("format") != "rulemip.RuleEnsemble":
            from rulemip.exceptions import InvalidDataError

            raise InvalidDataError("not a rulemip.RuleEnsemble document")
        enc = None if d.get("encoder") is None else FeatureEncoder.from_dict(d["encoder"])
        classes = None if d.get("classes") is None else tuple(d["classes"])
        return cls([Rule.from_dict(r) for r in d["rules"]], float(d["intercept"]),
                   d["loss"], enc, classes)

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_json(cls, text: str) -> RuleEnsemble:
        return cls.from_dict(json.loads(text))


def conditions_from_box(lower: Sequence[float] | NDArray[np.float64],
                        upper: Sequence[float] | NDArray[np.float64],
                        encoder: FeatureEncoder | None = None,
                        names: Sequence[str] | None = None) -> list[Condition]:
    """Conditions of the box ``lower_j < x_j <= upper_j`` (infinite bounds dropped),
    named after ``encoder`` (categorical levels included) or ``names``."""
    cols = encoder.columns if encoder is not None else None
    out: list[Condition] = []
    for j, (lo, hi) in enumerate(zip(lower, upper, strict=True)):
        if np.isinf(lo) and np.isinf(hi):
            continue
        if cols is not None and cols[j].is_indicator:
            out.append(Condition(j, float(lo), float(hi), cols[j].source, cols[j].level))
        else:
            name = cols[j].name if cols is not None else (names[j] if names else f"x{j + 1}")
            out.append(Condition(j, float(lo), float(hi), name))
    return out
