r"""Solver-free proof of a one-rule squared-loss optimum: replay the exact box search.

For one rule under squared loss the risk of the best model with box ``b`` is
:math:`(\sum_i w_i r_i^2 - \mathrm{gain}_b^2)/W` with ``r`` the residuals of the
intercept-only model and ``gain`` the ridge gain (docs/explanation/column_generation.md,
"one rule"). A claimed lower bound ``L`` therefore says: no box has a gain above
:math:`\sqrt{\sum w r^2 - W L}`. :func:`replay_one_rule` re-derives that from the data with
the exact box search (docs/explanation/box_search.md), pruning against the claimed gain: every
node bound is recomputed, and a box that beats the claim refutes it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rulemip.boosting.boxsearch.range_search import box_search
from rulemip.boosting.objectives import ridge_gain_objective
from rulemip.boosting.space import SearchSpace
from rulemip.budget import Budget
from rulemip.rules.problem import KRuleProblem

__all__ = ["ReplayResult", "replay_one_rule"]

#: round-off allowed on a gain, relative to the larger of the claimed gain and the gain of
#: a perfect fit: the caller's slack (relative to the bound) is the tolerance; this only
#: keeps equal gains computed in two orders from refuting (a risk of about 2e-14 times the
#: data's second moment, below :data:`rulemip.certify.bound_replays.BOUND_ROUNDOFF`)
GAIN_RTOL: float = 1e-14


@dataclass(frozen=True)
class ReplayResult:
    """``proved``: no box beats the claimed bound; ``refuted``: a box of the language
    reaches a risk below it (``best_risk``); neither: the replay was stopped (a time
    limit); ``nodes``: evaluations."""

    proved: bool
    refuted: bool
    complete: bool
    best_risk: float
    nodes: int
    seconds: float


def replay_one_rule(problem: KRuleProblem, *, lower_bound: float,
                    time_limit: float | None = None) -> ReplayResult:
    """Re-derive (or refute) ``lower_bound`` on the one-rule squared-loss risk of
    ``problem`` (its data, ridge and language: thresholds, rule length, intercept)."""
    ds, fit_intercept = problem.dataset, problem.fit_intercept
    w = np.asarray(ds.weights, dtype=float)
    y = np.asarray(ds.y, dtype=float)
    W = float(w.sum())
    r = y - (float(w @ y) / W if fit_intercept else 0.0)
    sst = float(w @ (r * r))
    claim = math.sqrt(max(sst - W * lower_bound, 0.0))
    rounding = GAIN_RTOL * max(claim, math.sqrt(max(sst, 0.0)))
    space = SearchSpace.build(ds.X, thresholds=problem.thresholds)
    obj = ridge_gain_objective(r, weights=w, reg=problem.reg, fit_intercept=fit_intercept)
    res = box_search(space, obj, allow_empty=not fit_intercept,
                     max_rule_length=problem.max_rule_length, length_counts="features",
                     budget=Budget.from_time_limit(time_limit),
                     incumbent=claim - rounding)
    if res is None:      # no box at all: the intercept-only model is the only model
        return ReplayResult(True, False, True, sst / W, 0, 0.0)
    complete = res.status == "optimal"
    proved = complete and res.bound <= claim + rounding
    best_risk = (sst - res.value ** 2) / W
    refuted = res.value > claim + rounding
    return ReplayResult(proved, refuted, complete, best_risk, res.n_children, res.elapsed)
