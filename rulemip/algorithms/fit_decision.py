r"""The fit's one decision, by one rule.

**The rule.** The fit's model is the admitted model of least risk (each phase's model in
the problem's language, its risk recomputed from the data; the later one on ties), its
bound the best valid bound a phase proved (an unproved one only when no phase proved
one; 0 when none), its stop that of the last phase that *settled* it (whose model was
taken, or that reported a bound), and its status :func:`rulemip.solvers.status.promote`
of these three.

The phases of a fit plan (:mod:`rulemip.algorithms.fit_plan`) each hand a
:class:`PhaseOutcome` — a model, a bound, finished or a limit, notes; never a status —
to :func:`absorb`, which folds it into the :class:`FitState`; :func:`decide_fit` applies
:func:`~rulemip.solvers.status.promote` once at the end. Translating what a phase found
into its outcome is the phase's own business: the engine phase refuses a model outside
the language, offers the model without rules when nothing else is known, reads a bound
below 0 as 0 (:math:`R_\lambda \ge 0` for every loss) and names a ``GAP`` stop the time
limit when its share of the time was spent (:func:`engine_outcome`).
``docs/architecture.md`` draws the plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rulemip.budget import Budget
from rulemip.formulations.result import ExactResult
from rulemip.rules import RuleEnsemble
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import Limit, TerminationReason, relative_gap
from rulemip.solvers.status import REFUTATION_TOL, Verdict, promote

#: The budget counts as spent, for naming the limit, when at most this share of it (and at
#: least ``TIME_SPENT_FLOOR`` seconds) is left: engines stop a little before the deadline
#: rather than start a step they cannot finish.
TIME_SPENT_SHARE = 0.05
TIME_SPENT_FLOOR = 0.5


@dataclass(frozen=True)
class PhaseOutcome:
    """What one phase of a fit plan hands the fit's decision (module docstring).

    Attributes
    ----------
    model : the model the phase offers (``None``: none); taken when it is in the
        problem's language and its recomputed risk is at most the incumbent's.
    bound : a lower bound the phase proved on the optimal :math:`R_\\lambda` over the
        language (``-inf``: none).
    finished : the phase ended by itself, not at a limit.
    limit : the limit that stopped it, if any.
    notes : remarks carried into the result.
    bound_valid : ``False`` when the bound rests on something not proved (a stated weight
        box): reported only when no phase proved a bound, never a proof of optimality.
    """

    model: RuleEnsemble | None = None
    bound: float = -math.inf
    finished: bool = False
    limit: Limit | None = None
    notes: tuple[str, ...] = ()
    bound_valid: bool = True


@dataclass
class FitState:
    """The incumbent, the bound and the stop of a fit between its phases (no status: that
    is decided once, by :func:`decide_fit`). ``source`` names the phase whose model is
    the incumbent."""

    problem: KRuleProblem
    mip_gap: float
    model: RuleEnsemble | None = None
    risk: float = math.inf
    source: str = ""
    bound: float = -math.inf
    bound_valid: bool = False
    finished: bool = False
    limit: Limit | None = None
    notes: list[str] = field(default_factory=list)

    def verdict(self, *, warn: bool = False) -> Verdict:
        """:func:`promote` of the incumbent's risk, the fit's bound (0 when none) and the
        stop of the phase that settled it."""
        bound = self.bound if math.isfinite(self.bound) else 0.0
        valid = self.bound_valid or not math.isfinite(self.bound)
        return promote(self.risk, bound, finished=self.finished, mip_gap=self.mip_gap,
                       limit=self.limit, bound_valid=valid, fallback_bound=0.0, warn=warn)

    def proved(self) -> bool:
        """Whether the incumbent is proved optimal so far (what a later phase asks)."""
        return self.verdict().termination is TerminationReason.OPTIMAL


def absorb(state: FitState, outcome: PhaseOutcome, source: str = "") -> None:
    """Fold one phase's outcome into ``state`` by the rule (module docstring); ``source``
    names the phase."""
    state.notes.extend(outcome.notes)
    taken = False
    if outcome.model is not None:
        bad = state.problem.violations(outcome.model)
        if bad:
            state.notes.append("a model outside the language was refused ("
                               + "; ".join(bad[:3]) + ")")
        else:
            risk = state.problem.risk(outcome.model)
            if risk <= state.risk:
                state.model, state.risk, state.source = outcome.model, risk, source
                taken = True
            else:
                state.notes.append(f"the incumbent ({state.source or 'start'}, risk "
                                   f"{state.risk:.10g}) is better than the model of "
                                   f"{source or 'the phase'} (risk {risk:.10g}); it stays")
    proved = math.isfinite(outcome.bound)
    if proved and (not state.bound_valid or outcome.bound_valid) and \
            (outcome.bound > state.bound or outcome.bound_valid > state.bound_valid):
        state.bound, state.bound_valid = float(outcome.bound), outcome.bound_valid
    if taken or proved:
        state.finished, state.limit = outcome.finished, outcome.limit


def decide_fit(state: FitState, record: ExactResult, *,
               wall_time: float | None = None) -> ExactResult:
    """The fit's one status: :func:`promote` of the incumbent's risk, the fit's bound and
    the stop of the phase that settled it (:meth:`FitState.verdict`), as an
    :class:`ExactResult` that keeps the engine's ``record`` (engine, method, backend,
    sizes, iterations, history)."""
    verdict = state.verdict(warn=True)
    return ExactResult(
        ensemble=state.model, risk=state.risk, lower_bound=verdict.lower_bound,
        gap=verdict.gap, termination=verdict.termination, limit=verdict.limit,
        wall_time=record.wall_time if wall_time is None else wall_time,
        iterations=record.iterations, engine=record.engine, backend=record.backend,
        backend_version=record.backend_version, n_boxes=record.n_boxes,
        n_cells=record.n_cells, bound_valid=verdict.bound_valid,
        notes=(*state.notes, *verdict.notes), history=record.history, method=record.method)


# ---------------------------------------------------------------------- the engine phase
def same_risk(a: float, b: float) -> bool:
    return abs(a - b) <= REFUTATION_TOL * max(1.0, abs(a))


def spent(budget: Budget | None) -> bool:
    """At most the share :data:`TIME_SPENT_SHARE` of ``budget``'s time is left."""
    left = None if budget is None else budget.remaining()
    if budget is None or left is None:
        return False
    total = (budget.deadline or 0.0) - budget.started
    return left <= max(TIME_SPENT_FLOOR, TIME_SPENT_SHARE * total)


def engine_outcome(result: ExactResult, problem: KRuleProblem, *, budget: Budget | None,
                   incumbent: RuleEnsemble | None) -> PhaseOutcome:
    """An engine's result as its phase's outcome: its model re-checked (in the language,
    risk recomputed from the data: an engine's word is not taken); the model without rules
    offered when the engine has none and the fit no ``incumbent``; its bound at least 0;
    finished when its search ended by itself (``OPTIMAL``, or ``FEASIBLE`` with no limit);
    a ``GAP`` stop named the time limit when its ``budget`` was spent."""
    notes = list(result.notes)
    finished = result.is_optimal or (result.termination is TerminationReason.FEASIBLE
                                     and result.limit is None)
    limit, model = result.limit, result.ensemble
    bad = [] if model is None else problem.violations(model)
    if bad:
        notes.append("the engine's model is outside the problem's language ("
                     + "; ".join(bad[:3]) + "): refused")
        model, finished, limit = None, False, limit or Limit.OTHER
    if model is not None:
        risk = problem.risk(model)
        if not same_risk(risk, result.risk):
            notes.append(f"the engine reported risk {result.risk:.12g}; recomputed from "
                         f"the data it is {risk:.12g}.")
    elif incumbent is None:
        model = problem.empty_model()
        notes.append("the engine found no ensemble before its limit; the model "
                     "without rules (intercept only) is the incumbent")
    bound = max(result.lower_bound if math.isfinite(result.lower_bound) else 0.0, 0.0)
    if not result.is_optimal and limit in (Limit.GAP, None) and model is not None \
            and spent(budget):
        notes.append(f"the time limit ended the search with the gap at "
                     f"{relative_gap(result.risk, bound):.3g} (reported as limit="
                     f"{None if limit is None else limit.value} by the engine).")
        limit = Limit.TIME
    return PhaseOutcome(model, bound, finished, limit, tuple(notes), result.bound_valid)


__all__ = ["TIME_SPENT_FLOOR", "TIME_SPENT_SHARE", "FitState", "PhaseOutcome", "absorb",
           "decide_fit", "engine_outcome"]
