"""Sizes that decide between the exact engines (:func:`count_boxes`, ``CIP_MAX_BOXES``).

The engines themselves are registered methods of :mod:`rulemip.algorithms.solve.driver`, whose
:func:`~rulemip.algorithms.fit_plan.solve_exact` is the one entry point of estimators, the
command line and gap studies (``"cip"``: the box-selection CIP, needs ``reg > 0``;
``"cip-bnb"``: the same CIP by branch and bound over boxes, squared loss only, the fastest
certifier at moderate ridges on 2–3 features, ``docs/benchmarks/exact.md`` §7; ``"mip"``:
the interval-cover MIP; ``"cg"``: the box-selection CIP by column generation).
"""

from __future__ import annotations

import numpy as np

from rulemip.rules.language import Language

#: ``engine="auto"`` builds every candidate box (the CIP) up to this many, and prices them
#: by column generation beyond. Measured (docs/benchmarks/exact.md, "Ordinary tables"):
#: at 62 840 distinct boxes (diabetes bmi/bp/s5, 8 cut points, k = 3) the CIP's
#: outer-approximation masters carry dense cuts over every box and a HiGHS master ran
#: 40 s past a 60 s budget, while column generation returned a better model in budget.
CIP_MAX_BOXES = 20_000


def prefix_box_counts(language: Language) -> list[int]:
    """Candidate boxes of ``language`` over its first ``j`` features, ``j = 0..d``, before
    removing duplicate query vectors (the last is :func:`count_boxes`).

    Feature ``j`` with ``g_j`` cut points has ``g_j + 1`` groups and
    ``(g_j+1)(g_j+2)/2 - 1`` restricting intervals (runs of consecutive groups other than
    the whole line); a box picks one interval or "no restriction" per feature, restricting
    at most ``max_rule_length`` features: over the first j features their number is the
    sum of the elementary symmetric polynomials :math:`e_0, \\dots, e_L` of the per-feature
    interval counts.
    """
    per_feature = [((len(t) + 1) * (len(t) + 2)) // 2 - 1
                   for t in (language.thresholds or ())]
    cap = language.max_rule_length
    limit = len(per_feature) if cap is None else min(cap, len(per_feature))
    e = np.zeros(limit + 1)  # elementary symmetric sums e_0..e_limit
    e[0] = 1.0
    counts = [1]
    for p in per_feature:
        e[1:] = e[1:] + p * e[:-1]
        counts.append(int(e.sum()))
    return counts


def count_boxes(language: Language) -> int:
    """Number of candidate boxes of ``language`` before removing duplicate query vectors
    (:func:`prefix_box_counts` over every feature)."""
    return prefix_box_counts(language)[-1]


#: ``engine="auto"`` proves k ≤ ``KBOX_MAX_RULES`` squared-loss rules of a capped length
#: by the k-box search (``"kbox"``, docs/explanation/kbox_search.md) whenever its box table
#: fits the search's memory budget.
KBOX_MAX_RULES = 2
#: ``engine="kbox"`` itself proves k ≤ ``KBOX_ENGINE_MAX_RULES`` rules (three boxes:
#: docs/explanation/kbox_search.md §6); ``"auto"`` picks it up to :data:`KBOX_MAX_RULES`,
#: and for three rules when the scan's work is at most :data:`KBOX3_AUTO_MAX_WORK`
KBOX_ENGINE_MAX_RULES = 3
#: ``engine="auto"`` picks the three-box search for k = 3 when the candidate boxes squared
#: times the 64-bit words of a row bitset is at most this: diabetes with rules of two
#: features and 4 cut points (7 437 candidates, 7 words: 3.9·10⁸) is proved in about 8 s
#: of CPU, 8 cut points (62 367: 2.7·10¹⁰) is not proved in minutes
#: (docs/explanation/kbox_search.md §6)
KBOX3_AUTO_MAX_WORK = 4e8
#: bytes per raw box while the k-box table is built (hash, flag, sort index, statistics and
#: bookkeeping of a kept box), besides its bitset of ⌈cells/64⌉ words
KBOX_BYTES_PER_BOX = 8 + 1 + 8 + 8 + 48


def kbox_table_bytes(n_raw_boxes: int, n_cells: int) -> int:
    """Peak memory of the k-box search's table for ``n_raw_boxes`` boxes over ``n_cells``
    cells, every box kept (the worst case)."""
    words = max((n_cells + 63) // 64, 1)
    return int(n_raw_boxes) * (KBOX_BYTES_PER_BOX + 8 * words)


def kbox_fits(language: Language, n_rows: int, max_bytes: int) -> bool:
    """Whether the k-box search serves ``language``: k ≤ :data:`KBOX_MAX_RULES` (or k = 3
    within :data:`KBOX3_AUTO_MAX_WORK`), a rule length cap, and a table (counted by
    :func:`count_boxes`, before anything is built) within ``max_bytes``."""
    k = language.n_rules
    if language.max_rule_length is None or not 1 <= k <= KBOX_ENGINE_MAX_RULES:
        return False
    boxes = count_boxes(language)
    if k > KBOX_MAX_RULES and boxes ** 2 * ((n_rows + 63) // 64) > KBOX3_AUTO_MAX_WORK:
        return False
    return kbox_table_bytes(boxes, n_rows) <= max_bytes
