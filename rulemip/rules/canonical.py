r"""One representative of rules that are tied because they cover the same rows.

An exact solve proves the *risk* optimal; the rules it returns are one optimum among
possibly many. Two boxes :math:`B \ne B'` with the same query vector on the training rows
(:math:`q_B(x_i) = q_{B'}(x_i)` for every row of positive weight) give the same risk
for every weight, so which of them a solver returns depends on row order, duplicated
rows and the path of its search — weighted and repeated data (scikit-learn's
sample-weight check) then predict differently off the training rows. :func:`canonical_rule`
replaces a rule by a representative that depends only on what the rule covers, the set of
training rows and the candidate thresholds:

1. the covered set :math:`S` (rows of positive weight with :math:`q(x_i) = 1`);
2. per feature :math:`j`, the tightest grid interval holding :math:`S`:
   :math:`\ell_j = \max\{t \in T_j : t < \min_S x_j\}`,
   :math:`u_j = \min\{t \in T_j : t \ge \max_S x_j\}` (absent bounds are infinite);
3. the first feature set :math:`F`, by size and then lexicographically, with at most as
   many features as the rule had, whose tightest box
   :math:`\prod_{j \in F}(\ell_j, u_j]` covers exactly :math:`S` (if any box on
   :math:`F` does, this one does: it excludes the most);
4. bounds dropped in feature order (lower, then upper) while the box still covers
   exactly :math:`S`.

The result covers the same rows (the risk and the training predictions are unchanged),
uses no more features than the rule (so ``max_rule_length`` holds) and only grid
thresholds (so the certificate's language check holds). The search over feature sets is
capped (:data:`MAX_FEATURE_SETS`); past the cap the rule is kept as it is.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.rule import Rule

#: most feature sets step 3 tries per rule before it keeps the rule unchanged
MAX_FEATURE_SETS = 20_000


def _tightest_box(Xs: NDArray[np.float64], thresholds: Sequence[NDArray[np.float64]]
                  ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    d = Xs.shape[1]
    lower, upper = np.full(d, -math.inf), np.full(d, math.inf)
    lo_val, hi_val = Xs.min(axis=0), Xs.max(axis=0)
    for j in range(d):
        grid = np.asarray(thresholds[j], dtype=float)
        below = grid[grid < lo_val[j]]
        above = grid[grid >= hi_val[j]]
        if below.size:
            lower[j] = below.max()
        if above.size:
            upper[j] = above.min()
    return lower, upper


def _covers(X: NDArray[np.float64], lower: NDArray[np.float64], upper: NDArray[np.float64],
            features: Sequence[int]) -> NDArray[np.bool_]:
    out = np.ones(X.shape[0], dtype=bool)
    for j in features:
        out &= (X[:, j] > lower[j]) & (X[:, j] <= upper[j])
    return out


def canonical_rule(rule: Rule, X: NDArray[np.float64],
                   thresholds: Sequence[NDArray[np.float64]], encoder: Any = None) -> Rule:
    """The representative of ``rule`` among the boxes that cover the same rows of ``X``
    (the training rows of positive weight; module docstring)."""
    n_features = len({c.feature for c in rule.conditions})
    if n_features == 0 or X.shape[0] == 0:
        return rule
    covered = rule.query(X)
    if not covered.any():
        return rule  # covers no row: nothing ties it to the data
    if covered.all():
        return Rule((), rule.weight)
    lower, upper = _tightest_box(X[covered], thresholds)
    useful = [j for j in range(X.shape[1])
              if math.isfinite(lower[j]) or math.isfinite(upper[j])]
    # a feature set qualifies when every uncovered row lies outside the tightest interval
    # of one of its features: bit r of excluded[j] says row r is outside on feature j
    rest = X[~covered]
    everyone = (1 << rest.shape[0]) - 1
    excluded = {j: _bits(~((rest[:, j] > lower[j]) & (rest[:, j] <= upper[j])))
                for j in useful}
    tried = 0
    for size in range(1, n_features + 1):
        for features in itertools.combinations(useful, size):
            tried += 1
            if tried > MAX_FEATURE_SETS:
                return rule
            hit = 0
            for j in features:
                hit |= excluded[j]
            if hit == everyone:
                return _drop_bounds(rule.weight, X, covered, lower, upper, features,
                                    encoder)
    return rule  # unreachable for a rule of the grid: its own features qualify


def _bits(mask: NDArray[np.bool_]) -> int:
    """The boolean vector as an integer bit set (bit r for entry r)."""
    return int.from_bytes(np.packbits(mask, bitorder="little").tobytes(), "little")


def _drop_bounds(weight: float, X: NDArray[np.float64], covered: NDArray[np.bool_],
                 lower: NDArray[np.float64], upper: NDArray[np.float64],
                 features: Sequence[int], encoder: Any) -> Rule:
    lo = np.full_like(lower, -math.inf)
    hi = np.full_like(upper, math.inf)
    lo[list(features)] = lower[list(features)]
    hi[list(features)] = upper[list(features)]
    for j in features:
        for bound, loose in ((lo, -math.inf), (hi, math.inf)):
            kept = bound[j]
            if not math.isfinite(kept):
                continue
            bound[j] = loose
            if not np.array_equal(_covers(X, lo, hi, features), covered):
                bound[j] = kept
    return Rule(conditions_from_box(lo, hi, encoder), weight)


def canonical_ensemble(ensemble: RuleEnsemble, X: NDArray[np.float64],
                       thresholds: Sequence[NDArray[np.float64]],
                       sample_weight: NDArray[np.float64] | None = None) -> RuleEnsemble:
    """``ensemble`` with every rule replaced by :func:`canonical_rule` on the rows of
    positive weight; intercept, weights, loss, encoder and predictions on those rows are
    unchanged."""
    rows = X if sample_weight is None else X[np.asarray(sample_weight) > 0]
    rules = [canonical_rule(r, rows, thresholds, ensemble.encoder) for r in ensemble.rules]
    return RuleEnsemble(rules, ensemble.intercept, ensemble.loss, ensemble.encoder,
                        ensemble.classes)
