"""One entry point to the two exact engines for k-rule ensembles.

:func:`solve_exact` dispatches to :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`
(``"cip"``, needs ``reg > 0``; ``"cip-bnb"``: the same CIP solved by branch and bound over
boxes, squared loss only — the fastest certifier at moderate ridges on 2–3 features,
``docs/benchmarks/exact.md`` §7) or
:class:`~rulemip.formulations.interval_cover.IntervalCoverMIP` (``"mip"``) and returns
their common :class:`~rulemip.formulations.result.ExactResult`. Estimators, the command
line and gap studies all go through it, so "the exact optimum" means one thing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.data import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.result import ExactResult
from rulemip.rules import RuleEnsemble

ENGINES = ("auto", "cip", "cip-bnb", "mip")
CIP_MAX_BOXES = 250_000


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


def choose_engine(engine: str, reg: float, thresholds: Sequence[NDArray[np.float64]],
                  max_rule_length: int | None) -> str:
    """``"auto"``: the CIP when ``reg > 0`` and at most ``CIP_MAX_BOXES`` candidate boxes,
    otherwise the MIP. A named engine is checked for applicability."""
    if engine not in ENGINES:
        raise InvalidParameterError(f"`engine` must be one of {ENGINES}; got {engine!r}.")
    if engine in ("cip", "cip-bnb") and reg <= 0:
        raise InvalidParameterError(
            f"`engine='{engine}'` needs `reg` > 0 (the CIP uses γ = 1/reg); use engine='mip' "
            "or a small positive reg such as 1e-6.")
    if engine != "auto":
        return engine
    if reg > 0 and count_boxes(thresholds, max_rule_length) <= CIP_MAX_BOXES:
        return "cip"
    return "mip"


def solve_exact(dataset: Dataset, n_rules: int, *, loss: str = "squared", reg: float = 1e-3,
                fit_intercept: bool = True, thresholds: Sequence[NDArray[np.float64]],
                max_rule_length: int | None = None, engine: str = "auto",
                solver: str = "auto", time_limit: float | None = None,
                mip_gap: float = 1e-6, warm_start: RuleEnsemble | None = None,
                seed: int = 0, callback: Callable[[dict[str, Any]], None] | None = None
                ) -> ExactResult:
    """Solve for the best ensemble of at most ``n_rules`` rules over ``thresholds``."""
    chosen = choose_engine(engine, reg, thresholds, max_rule_length)
    problem: Any
    method = "auto"
    if chosen == "cip-bnb":
        if loss != "squared":
            raise InvalidParameterError(
                f"`engine='cip-bnb'` is for squared loss; got loss={loss!r}. Use engine='cip'.")
        chosen, method = "cip", "bnb"
    if chosen == "cip":
        from rulemip.formulations.box_selection import BoxSelectionCIP

        problem = BoxSelectionCIP(n_rules, loss=loss, reg=reg, fit_intercept=fit_intercept,
                                  thresholds=list(thresholds), max_rule_length=max_rule_length)
        backend = "highs" if solver == "auto" else solver
    else:
        from rulemip.formulations.interval_cover import IntervalCoverMIP

        problem = IntervalCoverMIP(n_rules, loss=loss, reg=reg, fit_intercept=fit_intercept,
                                   thresholds=list(thresholds),
                                   max_rule_length=max_rule_length)
        backend = solver
    extra: dict[str, Any] = {"method": method} if chosen == "cip" else {}
    result: ExactResult = problem.solve(dataset, warm_start=warm_start, solver=backend,
                                        time_limit=time_limit, mip_gap=mip_gap,
                                        callback=callback, seed=seed, **extra)
    return result
