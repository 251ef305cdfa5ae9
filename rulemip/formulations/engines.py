"""Sizes that decide between the exact engines (:func:`count_boxes`, ``CIP_MAX_BOXES``).

The engines themselves are registered methods of :mod:`rulemip.algorithms.driver`, whose
:func:`~rulemip.algorithms.driver.solve_exact` is the one entry point of estimators, the
command line and gap studies (``"cip"``: the box-selection CIP, needs ``reg > 0``;
``"cip-bnb"``: the same CIP by branch and bound over boxes, squared loss only, the fastest
certifier at moderate ridges on 2–3 features, ``docs/benchmarks/exact.md`` §7; ``"mip"``:
the interval-cover MIP; ``"cg"``: the box-selection CIP by column generation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

#: ``engine="auto"`` builds every candidate box (the CIP) up to this many, and prices them
#: by column generation beyond. Measured (docs/benchmarks/exact.md, "Ordinary tables"):
#: at 62 840 distinct boxes (diabetes bmi/bp/s5, 8 cut points, k = 3) the CIP's
#: outer-approximation masters carry dense cuts over every box and a HiGHS master ran
#: 40 s past a 60 s budget, while column generation returned a better model in budget.
CIP_MAX_BOXES = 20_000


def count_boxes(thresholds: Sequence[NDArray[np.float64]], max_rule_length: int | None) -> int:
    """Number of candidate boxes before removing duplicate query vectors.

    Feature ``j`` with ``g_j`` cut points has ``g_j + 1`` groups and
    ``(g_j+1)(g_j+2)/2 - 1`` restricting intervals (runs of consecutive groups other than
    the whole line); a box picks one interval or "no restriction" per feature, restricting
    at most ``max_rule_length`` features.
    """
    per_feature = [((len(t) + 1) * (len(t) + 2)) // 2 - 1 for t in thresholds]
    limit = len(per_feature) if max_rule_length is None else min(max_rule_length,
                                                                 len(per_feature))
    e = np.zeros(limit + 1)  # elementary symmetric sums e_0..e_limit
    e[0] = 1.0
    for p in per_feature:
        e[1:] = e[1:] + p * e[:-1]
    return int(e.sum())
