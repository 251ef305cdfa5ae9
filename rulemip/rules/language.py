r"""The language of a k-rule problem, and whether a model lies in it.

A problem's *language* is the set of models its bound speaks about: ensembles of at most
``n_rules`` rules, each a conjunction of intervals :math:`t_a < x_j \le t_b` whose finite
bounds are candidate thresholds of their feature, restricting at most ``max_rule_length``
features (as rules are printed), with intercept 0 when there is none. A lower bound proved
over the language says nothing about a model outside it — such a model may have a risk
below the language's optimum — so a model found by any phase of a fit is admitted only if
:func:`language_violations` finds nothing (issue 30, item 1; the same checks as
:func:`rulemip.certify.verify`'s "size", "rule length" and "language").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_positive_int
from rulemip.exceptions import InvalidParameterError
from rulemip.rules.ensemble import RuleEnsemble

__all__ = ["Language", "checked_language", "language_violations"]

#: bounds within this (relative and absolute) distance of a threshold are that threshold
GRID_TOL = 1e-12


def language_violations(ensemble: RuleEnsemble, thresholds: Sequence[NDArray[np.float64]]
                        | Sequence[Sequence[float]] | None, *, n_rules: int | None = None,
                        max_rule_length: int | None = None,
                        fit_intercept: bool = True) -> list[str]:
    """What puts ``ensemble`` outside the language (empty: it is in it). ``thresholds``
    None skips the grid check (a language without a recorded candidate set)."""
    bad: list[str] = []
    if n_rules is not None and len(ensemble.rules) > n_rules:
        bad.append(f"{len(ensemble.rules)} rules, at most {n_rules} allowed")
    if not fit_intercept and ensemble.intercept != 0.0:
        bad.append(f"intercept {ensemble.intercept:g} without fit_intercept")
    for t, rule in enumerate(ensemble.rules):
        features = {c.feature for c in rule.conditions}
        if max_rule_length is not None and len(features) > max_rule_length:
            bad.append(f"rule {t} restricts {len(features)} features (at most "
                       f"{max_rule_length})")
        if thresholds is None:
            continue
        for c in rule.conditions:
            if not 0 <= c.feature < len(thresholds):
                bad.append(f"rule {t}: feature {c.feature} unknown")
                continue
            grid = np.asarray(thresholds[c.feature], dtype=float)
            for v in (c.lower, c.upper):
                if math.isfinite(v) and not np.any(np.isclose(grid, v, rtol=GRID_TOL,
                                                              atol=GRID_TOL)):
                    bad.append(f"rule {t}: {c.name} bound {v:g} is not a candidate "
                               "threshold")
    return bad


@dataclass(frozen=True)
class Language:
    """The language of one problem (module docstring): ``n_rules`` rules over
    ``thresholds`` (None: not chosen yet — a formulation built without data takes them
    from the data it is built on), each restricting at most ``max_rule_length`` features
    (None: any number), with an intercept or none. It is what a formulation's constructor
    takes (``BoxSelectionCIP(Language(2, max_rule_length=2), reg=0.1)``)."""

    n_rules: int
    thresholds: Sequence[NDArray[np.float64]] | None = None
    max_rule_length: int | None = None
    fit_intercept: bool = True

    def violations(self, ensemble: RuleEnsemble) -> list[str]:
        return language_violations(ensemble, self.thresholds, n_rules=self.n_rules,
                                   max_rule_length=self.max_rule_length,
                                   fit_intercept=self.fit_intercept)

    def admits(self, ensemble: RuleEnsemble | None) -> bool:
        """``ensemble`` is a model of this language (None is not)."""
        return ensemble is not None and not self.violations(ensemble)


def checked_language(language: Language) -> Language:
    """``language`` with its parts checked — a :class:`Language`, a positive rule count, a
    positive rule length or None — and its thresholds as float arrays;
    :class:`~rulemip.exceptions.InvalidParameterError` naming the part otherwise."""
    if not isinstance(language, Language):
        raise InvalidParameterError(
            f"a formulation takes the problem's language, e.g. Language(n_rules=2, "
            f"max_rule_length=2) (rulemip.rules.language); got {language!r}.")
    k = check_positive_int(language.n_rules, "n_rules")
    length = check_positive_int(language.max_rule_length, "max_rule_length",
                                allow_none=True)
    assert k is not None
    ths = None if language.thresholds is None else \
        [np.asarray(t, dtype=float) for t in language.thresholds]
    return Language(k, ths, length, bool(language.fit_intercept))
