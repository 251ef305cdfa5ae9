r"""The worst-case theory of boosting's approximation gap ([GAP] §3, docs/explanation/gaps.md).

All risks are mean squared errors without intercept and without ridge, on the alternating
dataset :math:`D(k, \Delta)` (``rulemip.data.alternating``): ``n = 2k - 1`` points
:math:`x_i = i`, :math:`y_i = (-1)^{i-1}(1 - (i-1)\Delta)`.

* Lemma 1 — one rule covering everything plus k-1 single-point rules on the even points:
  :math:`R^\dagger_k = \Delta^2 k (k^2 - 1) / (3(2k - 1))`.
* Lemma 2 — for :math:`0 < \Delta < 1/(2k - 4 + \sqrt2/2)` idealized boosting covers one
  point per round in order:
  :math:`R(f_k) = (k-1)(6 - 6\Delta(3k-2) + \Delta^2(14k^2 - 19k + 6)) / (6(2k-1))`.
* Their difference (eq. 22):
  :math:`R(f_k) - R^\dagger_k = \tfrac12 - \tfrac1{4k-2} - \xi(\Delta)`,
  :math:`\xi(\Delta) = (k-1)(\Delta(6k-4) - \Delta^2(4k^2 - 7k + 2)) / (2(2k-1))`.
* Theorem 1 — the worst-case additive gap is at least :math:`\tfrac12 - \tfrac1{4k-2}`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from rulemip._validation import check_positive_int


def lemma1_risk(k: int, delta: float) -> float:
    """Risk of the reference k-rule ensemble on :math:`D(k, \\Delta)` (Lemma 1)."""
    check_positive_int(k, "k")
    return delta**2 * k * (k**2 - 1) / (3.0 * (2 * k - 1))


def lemma2_risk(k: int, delta: float) -> float:
    """Risk of k rounds of idealized boosting on :math:`D(k, \\Delta)` (Lemma 2)."""
    check_positive_int(k, "k")
    return ((k - 1) * (6 - 6 * delta * (3 * k - 2) + delta**2 * (14 * k**2 - 19 * k + 6))
            / (6.0 * (2 * k - 1)))


def delta_upper(k: int) -> float:
    """Supremum of the Δ range of Lemma 2: :math:`1/(2k - 4 + \\sqrt2/2)` (inf for k ≤ 1).

    For k = 2 the denominator is √2/2, so Δ < √2.
    """
    check_positive_int(k, "k")
    denom = 2 * k - 4 + math.sqrt(2) / 2
    return math.inf if denom <= 0 else 1.0 / denom


def delta_in_range(k: int, delta: float) -> bool:
    """True when Lemma 2 applies: ``0 < delta < delta_upper(k)``."""
    return 0.0 < delta < delta_upper(k)


def xi(k: int, delta: float) -> float:
    """The correction :math:`\\xi(\\Delta)` of eq. (22)."""
    return (k - 1) * (delta * (6 * k - 4) - delta**2 * (4 * k**2 - 7 * k + 2)) / (2.0 * (2 * k - 1))


def theorem1_bound(k: int) -> float:
    """Worst-case additive gap lower bound :math:`1/2 - 1/(4k - 2)` (Theorem 1)."""
    check_positive_int(k, "k")
    return 0.5 - 1.0 / (4 * k - 2)


def alternating_gap(k: int, delta: float) -> float:
    """Lemma 2 − Lemma 1 = :math:`1/2 - 1/(4k-2) - \\xi(\\Delta)` on :math:`D(k,\\Delta)`."""
    return lemma2_risk(k, delta) - lemma1_risk(k, delta)


QUADRANTS = {
    (True, True): "tight and representative",
    (True, False): "tight, not representative",
    (False, True): "not tight, representative",
    (False, False): "not tight, not representative",
}


@dataclass(frozen=True)
class GapClassification:
    """Where a collection of observed gaps falls against Theorem 1 ([GAP] Fig. 1).

    * ``tight``: no observed (certified) gap exceeds Theorem 1's bound at its k — the bound
      is consistent with being the worst case. A gap above it would show the true worst
      case is larger (bound not tight).
    * ``representative``: at least half of the datasets have a gap of the same order of
      magnitude as the bound (ratio ≥ ``magnitude``, default 1/10).
    """

    ratios: tuple[float, ...]
    exceeding: tuple[int, ...]
    same_magnitude: tuple[int, ...]
    tight: bool
    representative: bool

    @property
    def quadrant(self) -> str:
        return QUADRANTS[(self.tight, self.representative)]


def classify_gaps(gaps: Sequence[float], ks: Sequence[int], *, magnitude: float = 0.1
                  ) -> GapClassification:
    """Classify normalized gaps ``diff_max / R(f_∅)`` observed at ``k*`` per dataset.

    Gaps are compared with :func:`theorem1_bound` at each dataset's ``k*`` (for k* = 1 the
    bound is 0, and any positive gap there counts as exceeding it).
    """
    g = np.asarray(gaps, dtype=float)
    if len(g) != len(ks):
        raise ValueError("gaps and ks must have the same length")
    bounds = np.array([theorem1_bound(int(k)) for k in ks])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(bounds > 0, g / np.where(bounds > 0, bounds, 1.0),
                          np.where(g > 0, np.inf, 0.0))
    exceeding = tuple(int(i) for i in np.flatnonzero(g > bounds + 1e-12))
    same = tuple(int(i) for i in np.flatnonzero(ratios >= magnitude))
    return GapClassification(tuple(float(r) for r in ratios), exceeding, same,
                             tight=not exceeding,
                             representative=len(g) > 0 and len(same) >= len(g) / 2)
