r"""Decompose a weighted sum of regression trees into a :class:`~rulemip.rules.RuleEnsemble`.

A tree is :math:`h(x) = \sum_{l} w_l \mathbb 1\{x \in \text{leaf}_l\}`, so
:math:`F_0 + \sum_t \alpha_t h_t(x)` is the rule ensemble with intercept :math:`F_0` and one
rule per leaf: body = the root-to-leaf path, weight :math:`\alpha_t w_l`.

Thresholds. scikit-learn sends a point left when ``float32(x_j) <= threshold`` (trees
compare in single precision; the stored threshold is a float64 midpoint of two float32
values). :class:`~rulemip.rules.Condition` reads ``lower < x_j <= upper`` in double
precision on the raw input, so a left branch becomes ``x_j <= u`` and a right branch
``x_j > u`` with :math:`u` the largest float64 whose float32 rounding is ``<= threshold``
(:func:`float64_threshold`). With this :math:`u` the rules reproduce the trees' routing for
*every* float64 input, not just for almost every one; :math:`u` differs from the
scikit-learn threshold by less than one float32 ulp.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from rulemip.rules import Condition, Rule, RuleEnsemble


def float64_threshold(threshold: float) -> float:
    """Largest float64 ``u`` with ``float32(x) <= threshold  <=>  x <= u`` for all x."""
    a = np.float32(threshold)
    if float(a) > threshold:
        a = np.nextafter(a, np.float32(-np.inf))
    b = np.nextafter(a, np.float32(np.inf))
    if not np.isfinite(b):
        return float(a)
    mid = (float(a) + float(b)) / 2.0  # exact: float32 values have spare float64 bits
    # float32(mid) rounds half to even; if that is `a`, mid itself still goes left
    if np.float32(mid) == a:
        return mid
    return float(np.nextafter(mid, -np.inf))


def tree_rules(tree: Any, multiplier: float,
               feature_names: Sequence[str] | None = None) -> list[Rule]:
    """One :class:`Rule` per leaf of a fitted scikit-learn regression tree.

    Parameters
    ----------
    tree : a fitted ``DecisionTreeRegressor`` (anything with a single-output ``tree_``).
    multiplier : :math:`\\alpha_t`; rule weights are ``multiplier * leaf value``.
    feature_names : display names of the features (default ``x1, x2, ...``).
    """
    t = tree.tree_
    left, right = t.children_left, t.children_right
    feature, threshold, value = t.feature, t.threshold, t.value
    rules: list[Rule] = []
    # (node, {feature: (lower, upper)})
    stack: list[tuple[int, dict[int, tuple[float, float]]]] = [(0, {})]
    while stack:
        node, box = stack.pop()
        if left[node] == -1:
            conds = []
            for j, (lo, hi) in sorted(box.items()):
                name = feature_names[j] if feature_names is not None else f"x{j + 1}"
                conds.append(Condition(int(j), lo, hi, name))
            rules.append(Rule(conds, multiplier * float(value[node, 0, 0])))
            continue
        j = int(feature[node])
        u = float64_threshold(float(threshold[node]))
        lo, hi = box.get(j, (-math.inf, math.inf))
        right_box = dict(box)
        right_box[j] = (max(lo, u), hi)
        left_box = dict(box)
        left_box[j] = (lo, min(hi, u))
        # push right first so that leaves come out left to right
        stack.append((int(right[node]), right_box))
        stack.append((int(left[node]), left_box))
    return rules


def trees_to_rule_ensemble(intercept: float, trees: Sequence[Any], coefs: Iterable[float],
                           *, loss: str = "squared",
                           feature_names: Sequence[str] | None = None,
                           classes: tuple[Any, ...] | None = None) -> RuleEnsemble:
    r""":math:`F_0 + \sum_t \alpha_t h_t` as a :class:`RuleEnsemble` (trees with
    :math:`\alpha_t = 0` contribute nothing and are skipped)."""
    rules: list[Rule] = []
    for a, tree in zip(coefs, trees):
        if a != 0.0:
            rules.extend(tree_rules(tree, float(a), feature_names))
    return RuleEnsemble(rules, intercept=float(intercept), loss=loss, classes=classes)
