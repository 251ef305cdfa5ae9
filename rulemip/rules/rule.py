"""A rule: a conjunction of feature intervals (its *query*) with a weight."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.rules.condition import Condition


def _merge(conditions: Iterable[Condition]) -> tuple[Condition, ...]:
    """Intersect conditions per feature, drop vacuous ones, sort by feature."""
    by_feature: dict[int, Condition] = {}
    for c in conditions:
        by_feature[c.feature] = by_feature[c.feature].intersect(c) if c.feature in by_feature else c
    return tuple(by_feature[j] for j in sorted(by_feature)
                 if by_feature[j].n_propositions > 0)


@dataclass(frozen=True)
class Rule:
    """``IF conditions THEN weight``; conditions are normalized (one per feature, sorted).

    The empty conjunction is true everywhere.
    """

    conditions: tuple[Condition, ...]
    weight: float = 0.0

    def __init__(self, conditions: Sequence[Condition] = (), weight: float = 0.0) -> None:
        object.__setattr__(self, "conditions", _merge(conditions))
        object.__setattr__(self, "weight", float(weight))

    @property
    def length(self) -> int:
        """Number of propositions :math:`c(q)` of the rule's query."""
        return sum(c.n_propositions for c in self.conditions)

    @property
    def n_features(self) -> int:
        """Number of restricted features (conditions are one per feature; an interval
        ``a < x_j <= b`` is one) — what ``max_rule_length`` counts."""
        return len(self.conditions)

    def query(self, X: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Query vector :math:`q = (q(x_1), …, q(x_n))` on encoded ``X``."""
        out = np.ones(X.shape[0], dtype=bool)
        for c in self.conditions:
            out &= c.evaluate(X)
        return out

    def with_weight(self, weight: float) -> Rule:
        return Rule(self.conditions, weight)

    def body_text(self) -> str:
        return " AND ".join(c.to_text() for c in self.conditions) if self.conditions else "TRUE"

    def to_text(self, precision: int = 4) -> str:
        return f"IF {self.body_text()} THEN {self.weight:+.{precision}g}"

    def to_dict(self) -> dict[str, Any]:
        return {"conditions": [c.to_dict() for c in self.conditions], "weight": self.weight}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Rule:
        return cls([Condition.from_dict(c) for c in d["conditions"]], float(d["weight"]))

    def same_body(self, other: Rule, tol: float = 0.0) -> bool:
        """True when both rules have the same conditions (bounds equal within ``tol``)."""
        if len(self.conditions) != len(other.conditions):
            return False
        for a, b in zip(self.conditions, other.conditions, strict=True):
            if a.feature != b.feature:
                return False
            for u, v in ((a.lower, b.lower), (a.upper, b.upper)):
                if math.isinf(u) or math.isinf(v):
                    if u != v:
                        return False
                elif abs(u - v) > tol:
                    return False
        return True
