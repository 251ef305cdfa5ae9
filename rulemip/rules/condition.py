"""A condition on one feature: the interval ``lower < x_j <= upper``.

Rules are conjunctions of such intervals (docs/explanation/notation.md). A finite bound is one
*proposition*
(``x_j > lower`` or ``x_j <= upper``), so an interval with both bounds has length 2. On an
indicator column of a categorical level (``colour == red``, values 0/1) the condition
``0.5 < x`` reads ``colour == red`` and ``x <= 0.5`` reads ``colour != red``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray


def _fmt(v: float) -> str:
    return f"{v:.4g}"


@dataclass(frozen=True)
class Condition:
    """``lower < x[feature] <= upper``; either bound may be infinite (absent).

    ``name`` is the feature's display name; ``level`` is set for indicator columns of a
    categorical feature (then ``name`` is the source column, e.g. ``"colour"``).
    """

    feature: int
    lower: float = -math.inf
    upper: float = math.inf
    name: str = ""
    level: str | None = None

    def __post_init__(self) -> None:
        if not self.lower < self.upper:
            raise ValueError(f"empty interval: lower={self.lower} >= upper={self.upper}")

    @property
    def n_propositions(self) -> int:
        """Number of propositions (finite bounds); an equality on a level counts 1."""
        finite = int(math.isfinite(self.lower)) + int(math.isfinite(self.upper))
        if self.level is not None:
            return min(finite, 1)
        return finite

    def evaluate(self, X: NDArray[np.float64]) -> NDArray[np.bool_]:
        """Boolean vector of the rows of (encoded) ``X`` that satisfy the condition."""
        x = X[:, self.feature]
        return np.asarray((x > self.lower) & (x <= self.upper))

    def intersect(self, other: Condition) -> Condition:
        """The conjunction of two conditions on the same feature."""
        if other.feature != self.feature:
            raise ValueError("can only intersect conditions on the same feature")
        return Condition(self.feature, max(self.lower, other.lower),
                         min(self.upper, other.upper), self.name, self.level)

    def to_text(self) -> str:
        name = self.name or f"x{self.feature + 1}"
        if self.level is not None:
            # indicator column: (0.5, inf) is "== level", (-inf, 0.5] is "!= level"
            op = "==" if self.lower >= 0 and self.lower < 1 else "!="
            return f"{name} {op} {self.level}"
        lo, hi = math.isfinite(self.lower), math.isfinite(self.upper)
        if lo and hi:
            return f"{_fmt(self.lower)} < {name} <= {_fmt(self.upper)}"
        if lo:
            return f"{name} > {_fmt(self.lower)}"
        if hi:
            return f"{name} <= {_fmt(self.upper)}"
        return "TRUE"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"feature": self.feature, "name": self.name,
                             "lower": None if math.isinf(self.lower) else self.lower,
                             "upper": None if math.isinf(self.upper) else self.upper}
        if self.level is not None:
            d["level"] = self.level
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Condition:
        lo = -math.inf if d.get("lower") is None else float(d["lower"])
        hi = math.inf if d.get("upper") is None else float(d["upper"])
        return cls(int(d["feature"]), lo, hi, str(d.get("name", "")), d.get("level"))
