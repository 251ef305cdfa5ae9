r"""The fit's one decision: the phases of a fit plan (:mod:`rulemip.algorithms.fit_plan`)
hand their outcomes to :func:`absorb`, which keeps the incumbent, the best valid bound and
the stop of the phase that settled the fit; :func:`decide_fit` then decides the fit's
status once (:func:`rulemip.solvers.status.promote`).

What used to be three re-decisions after the engine lives here as steps of that fold: the
engine's model is re-checked (in the problem's language, its risk recomputed from the
data — a bound the recomputed risk refutes is never reported as proved), the incumbent is
never worse than the warm start nor missing (the model without rules), the bound never
below 0, and a stop the engine calls ``GAP`` is named the time limit when its share of the
time was spent. ``docs/architecture.md`` draws the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.exceptions import SolverError
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.result import ExactResult
from rulemip.refit import fit_weights
from rulemip.rules import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.solvers.result import Limit, TerminationReason, relative_gap
from rulemip.solvers.status import REFUTATION_TOL, Verdict, promote


def empty_model(dataset: Dataset, *, loss: str, reg: float,
                fit_intercept: bool) -> RuleEnsemble:
    """The ensemble with no rule: the optimal intercept (or the zero function), feasible
    for every k ≥ 0."""
    n = dataset.X.shape[0]
    fit = fit_weights(np.zeros((n, 0)), dataset.y, loss, reg, fit_intercept,
                      dataset.sample_weight)
    return RuleEnsemble([], intercept=float(fit.intercept), loss=loss,
                        classes=dataset.classes)


# ---------------------------------------------------------------------- the fit's decision
#: The budget counts as spent, for naming the limit, when at most this share of it (and at
#: least ``TIME_SPENT_FLOOR`` seconds) is left: engines stop a little before the deadline
#: rather than start a step they cannot finish.
TIME_SPENT_SHARE = 0.05
TIME_SPENT_FLOOR = 0.5


@dataclass(frozen=True)
class PhaseOutcome(SearchOutcome):
    """What one phase of a fit plan (:mod:`rulemip.algorithms.fit_plan`) hands the fit's
    decision: a :class:`~rulemip.formulations.protocol.SearchOutcome` whose point is a
    model, never a status (:func:`absorb` folds it in, :func:`decide_fit` decides once).

    Attributes
    ----------
    ensemble : the model the phase offers (``None``: none); taken when it is in the fit's
        language and — its risk recomputed from the data — better than the incumbent.
    ties : with a number, the offered model also replaces an incumbent it equals within
        this relative tolerance (a model with a proof of its own: rule swaps); ``None``:
        only a strictly better one.
    settles : the phase's ``finished``/``limit`` become the fit's whatever it offers (a
        phase that proves a bound: the engine, the two-rule branch and bound); otherwise
        only when its model is taken.
    result : the engine's :class:`ExactResult` (the engine phase only).
    budget : the share of the fit's budget the phase ran on (a stop it reports as ``GAP``
        is named the time limit when it spent that share).
    record : what the certificate records about the offered model (1-swap optimality).
    """

    ensemble: RuleEnsemble | None = None
    ties: float | None = None
    settles: bool = False
    result: ExactResult | None = None
    budget: Budget | None = None
    record: Any = None


@dataclass
class FitState:
    """The incumbent, the bound and the stop of a fit between its phases (no status: that
    is decided once, by :func:`decide_fit`). ``start`` is the model handed to the engine
    (the last one offered before it); ``engine`` the engine's result."""

    dataset: Dataset
    reg: float
    mip_gap: float
    language: Language | None = None
    loss: str | None = None
    fit_intercept: bool = True
    ensemble: RuleEnsemble | None = None
    risk: float = math.inf
    lower_bound: float = -math.inf
    bound_valid: bool = True
    finished: bool = False
    limit: Limit | None = None
    start: RuleEnsemble | None = None
    engine: ExactResult | None = None
    record: Any = None
    changed: bool = False
    notes: list[str] = field(default_factory=list)

    def risk_of(self, ensemble: RuleEnsemble) -> float:
        return float(ensemble.risk(self.dataset.X, self.dataset.y, reg=self.reg,
                                   sample_weight=self.dataset.sample_weight))

    def admits(self, ensemble: RuleEnsemble, notes: list[str] | None = None) -> bool:
        """``ensemble`` is a model of the fit (:mod:`rulemip.rules.language`); a refusal
        is noted in ``notes``."""
        bad = [] if self.language is None else self.language.violations(ensemble)
        if bad and notes is not None:
            notes.append("a model outside the language was refused ("
                         + "; ".join(bad[:3]) + ")")
        return not bad

    def proved(self) -> bool:
        """Whether the incumbent is proved optimal so far (what the next phase asks; the
        status itself is decided by :func:`decide_fit`)."""
        if self.engine is not None and not self.changed and self._engine_unchanged():
            return self.engine.is_optimal
        return self._verdict(warn=False).termination is TerminationReason.OPTIMAL

    def _engine_unchanged(self) -> bool:
        res = self.engine
        assert res is not None
        return self.ensemble is res.ensemble and self.lower_bound == res.lower_bound \
            and (res.ensemble is None or same_risk(self.risk, res.risk)) \
            and (not res.is_optimal or res.lower_bound <= self.risk)

    def _verdict(self, *, warn: bool = True) -> Verdict:
        return promote(self.risk, self.lower_bound, finished=self.finished,
                       mip_gap=self.mip_gap, limit=self.limit, bound_valid=self.bound_valid,
                       fallback_bound=0.0, warn=warn)


def same_risk(a: float, b: float) -> bool:
    return abs(a - b) <= REFUTATION_TOL * max(1.0, abs(a))


def _spent(budget: Budget | None) -> bool:
    left = None if budget is None else budget.remaining()
    if budget is None or left is None:
        return False
    total = (budget.deadline or 0.0) - budget.started
    return left <= max(TIME_SPENT_FLOOR, TIME_SPENT_SHARE * total)


def absorb(state: FitState, outcome: PhaseOutcome) -> None:
    """Fold one phase's outcome into ``state``: its model is taken when it is in the
    fit's language and better (its risk recomputed from the data), its bound raises the
    fit's, and its ``finished``/``limit`` become the fit's when it settles or its model
    was taken. The engine's result is read as its outcome (:func:`_absorb_engine`)."""
    state.notes.extend(outcome.notes)
    if outcome.result is not None:
        _absorb_engine(state, outcome)
        return
    taken = False
    if outcome.ensemble is not None:
        if state.engine is None:
            state.start = outcome.ensemble
        taken = _offer(state, outcome.ensemble, outcome.ties)
        if taken:
            state.record = outcome.record
    if math.isfinite(outcome.lower_bound):
        lb = float(outcome.lower_bound)
        state.lower_bound = max(state.lower_bound, lb) if state.bound_valid else lb
        state.bound_valid = True
    if outcome.settles or taken:
        state.finished, state.limit = outcome.finished, outcome.limit
        state.changed = state.engine is not None


def _offer(state: FitState, ensemble: RuleEnsemble, ties: float | None) -> bool:
    if not state.admits(ensemble, state.notes):
        return False
    risk = state.risk_of(ensemble)
    inc = state.risk
    better = risk < inc if ties is None else risk <= inc + ties * max(1.0, abs(inc))
    if state.ensemble is None or better:
        state.ensemble, state.risk = ensemble, risk
        return True
    return False


def _absorb_engine(state: FitState, outcome: PhaseOutcome) -> None:
    """The engine's result: its model re-checked (in the language, risk recomputed from
    the data: an engine's word is not taken), kept unless the warm start is better; never
    no model (the model without rules when nothing else is known); its bound at least 0
    (:math:`R_\\lambda \\ge 0` for every loss); a stop it calls ``GAP`` named the time
    limit when its share of the time was spent."""
    res = outcome.result
    assert res is not None
    state.engine = res
    finished, limit = res.is_optimal, res.limit
    model, risk = res.ensemble, res.risk
    bad = [] if model is None or state.language is None else state.language.violations(model)
    if bad:
        state.notes.append("the engine's model is outside the problem's language ("
                           + "; ".join(bad[:3]) + "): refused")
        model, finished, limit = None, False, limit or Limit.OTHER
    if model is not None:
        risk = state.risk_of(model)
        if not same_risk(risk, res.risk):
            state.notes.append(f"the engine reported risk {res.risk:.12g}; recomputed from "
                               f"the data it is {risk:.12g}.")
    if model is not None and (state.ensemble is None or
                              not state.risk < risk - REFUTATION_TOL * max(1.0, abs(risk))):
        state.ensemble, state.risk, state.record = model, risk, None
    elif state.ensemble is not None:
        state.notes.append(f"the warm start (risk {state.risk:.10g}) is better than what "
                           "the engine found; it is the incumbent")
    elif state.loss is not None:
        state.ensemble = empty_model(state.dataset, loss=state.loss, reg=state.reg,
                                     fit_intercept=state.fit_intercept)
        state.risk = state.risk_of(state.ensemble)
        state.notes.append("the engine found no ensemble before its limit; the model "
                           "without rules (intercept only) is the incumbent")
    lb = res.lower_bound if math.isfinite(res.lower_bound) else 0.0
    state.lower_bound, state.bound_valid = max(lb, 0.0), res.bound_valid
    state.finished, state.limit = finished, limit
    if state.ensemble is not None and limit in (Limit.GAP, None) and _spent(outcome.budget) \
            and not state.proved():
        state.notes.append(
            f"the time limit ended the search with the gap at "
            f"{relative_gap(state.risk, state.lower_bound):.3g} (reported as limit="
            f"{None if limit is None else limit.value} by the phase that stopped).")
        state.limit = Limit.TIME


def decide_fit(state: FitState, *, wall_time: float | None = None) -> ExactResult:
    """The fit's one status: the engine's result when no check and no later phase changed
    its model, bound or stop (with the fit's notes), else :func:`promote` on the
    incumbent, the best valid bound and the stop of the phase that settled it (fallback
    bound 0). The engine's record (engine, method, backend, sizes) is kept."""
    res = state.engine
    if res is None:
        raise SolverError("a fit plan ended without an engine phase")
    extra: dict[str, Any] = {} if wall_time is None else {"wall_time": wall_time}
    if not state.changed and state._engine_unchanged():
        if state.notes or state.limit is not res.limit or extra:
            return replace(res, limit=state.limit, notes=(*res.notes, *state.notes),
                           **extra)
        return res
    verdict = state._verdict()
    term, limit = verdict.termination, verdict.limit
    if not state.changed and not res.is_optimal and state.ensemble is res.ensemble \
            and res.ensemble is not None:
        term, limit = res.termination, state.limit   # only the risk was re-checked
    return replace(res, ensemble=state.ensemble, risk=state.risk,
                   lower_bound=verdict.lower_bound, gap=verdict.gap, termination=term,
                   limit=limit, bound_valid=verdict.bound_valid,
                   notes=(*res.notes, *state.notes, *verdict.notes), **extra)


__all__ = ["TIME_SPENT_FLOOR", "TIME_SPENT_SHARE", "FitState", "PhaseOutcome", "absorb",
           "decide_fit", "empty_model"]
