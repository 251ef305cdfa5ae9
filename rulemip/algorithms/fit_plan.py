r"""The exact fit as a plan: its phases as data, one budget, one decision.

An exact k-rule fit is a declared list of phases (:data:`FIT_PLAN`), each with its
share of the fit's one :class:`~rulemip.budget.Budget` (:data:`SHARES`, the only place
the fit's time shares are written) and each returning a
:class:`~rulemip.algorithms.fit_decision.PhaseOutcome` — a model, a proved bound,
finished or a limit, never a status. The plan of the estimators:

1. :class:`BoostingStart` — the boosting warm start (``preset``) on the problem's own
   candidate thresholds, or the warm start given (the better of the two);
2. :class:`LocalStart` — squared loss, a start given, an engine that wants it: every
   start (the warm start, SGB, a (k + 1)-leaf tree) ended 1-swap optimal, the best handed
   to the engine (docs/explanation/local_optimality.md);
3. :class:`EnginePhase` — the registered engine (:mod:`rulemip.algorithms.solve.registry`);
4. :class:`SwapsAndKicks` — squared loss, not proved: rule swaps and kicks from the
   engine's model within what the engine left;
5. :class:`TwoRuleBound` — two squared-loss rules, not proved: the branch and bound over
   both boxes, which raises the bound (docs/explanation/weak_ridge_bounds.md).

The fit ends in the one decision (:func:`~rulemip.algorithms.fit_decision.decide_fit`).
:func:`fit_exact` — the entry point of the estimators (so of ``rulemip fit``) and of gap
studies — runs it, so all of them run the same algorithm, and returns what the phases
report besides (where the first incumbent came from, the local phase's starts, the 1-swap
record of the certificate). :func:`solve_exact` returns the result of a plan alone; its
default, :data:`ENGINE_PLAN`, is the engine from the warm start given.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.fit_decision import (
    FitState,
    PhaseOutcome,
    absorb,
    decide_fit,
    engine_outcome,
)
from rulemip.algorithms.krule.two_rule_bound import two_rule_bound
from rulemip.algorithms.local.multi_start import best_local_model, threshold_tree_rules
from rulemip.algorithms.local.rule_swaps import local_optimality_record, refit_ensemble
from rulemip.algorithms.solve.driver import solve, with_gap
from rulemip.algorithms.solve.registry import (
    ENGINES,
    choose_engine,
    engine_backend,
    engine_spec,
)
from rulemip.boosting import RuleBooster
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning, SolverError
from rulemip.formulations.cells import reduce_to_cells
from rulemip.formulations.result import ExactResult
from rulemip.losses import get_loss
from rulemip.rules import Rule, RuleEnsemble
from rulemip.rules.ensemble import conditions_from_box
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.base import SolverBackend
from rulemip.solvers.result import Limit, budget_limit

FloatArray = NDArray[np.float64]
Callback = Callable[[dict[str, Any]], Any]

#: values of ``preset``: no boosting warm start, or a boosting preset
#: (docs/explanation/boosting.md)
PRESETS = (None, "SGS", "SGB", "SXB", "CGB", "COB")


@dataclass(frozen=True)
class FitShares:
    """The fit's time shares, each of the fit's budget *left* when its phase starts (of
    the time and of the work: :meth:`~rulemip.budget.Budget.fraction`).

    Attributes
    ----------
    warm_start : the boosting warm start (stopped by it, it keeps the rules found so far).
    sgb_start : the SGB start of the local phase.
    local_start : the local phase's swaps from every start.
    engine : the exact engine (squared loss); the rest, and whatever the engine leaves,
        goes to swaps and kicks from its model.
    two_rule_engine : the engine's share at two squared-loss rules (its relaxation bound
        is the levels bound there; the two-rule branch and bound's is higher,
        docs/benchmarks/exact.md §11).
    kbox_engine : the k-box search's share (two or three rules): a complete scan that
        proves the optimum when it ends, so it gets nearly all of the time; stopped, it
        leaves the levels bound, and what is left goes to the phases after it.
    two_rule_kicks : two squared-loss rules: swaps and kicks after the engine; the rest
        goes to the two-rule branch and bound.
    descents : swaps and kicks: the swap descents from the engine's model and the start
        (the kicks get the rest, so that a slow box search leaves them something).
    heuristic_kicks : swaps and kicks, no start proved 1-swap optimal: the beam-only kicks,
        before one exact descent.
    """

    warm_start: float = 0.3
    sgb_start: float = 0.1
    local_start: float = 0.25
    engine: float = 0.8
    two_rule_engine: float = 0.4
    kbox_engine: float = 0.85
    two_rule_kicks: float = 0.3
    descents: float = 0.5
    heuristic_kicks: float = 0.5


#: the shares of every exact fit (one declared place)
SHARES = FitShares()
#: memory of the two-rule branch and bound's node pool (it stops when the pool is full)
TWO_RULE_POOL_BYTES = 256 << 20


@dataclass(frozen=True)
class FitOptions:
    """How one exact fit runs (its problem is :attr:`FitState.problem`): the chosen
    engine and its backend, the settings, the starts offered."""

    engine: str
    backend: SolverBackend | None
    mip_gap: float = 1e-6
    seed: int = 0
    callback: Callback | None = None
    preset: str | None = None
    warm_start: RuleEnsemble | None = None
    warm_start_source: str = "warm start"
    shares: FitShares = SHARES


def _two_rules(problem: KRuleProblem) -> bool:
    return problem.squared and problem.n_rules == 2


@dataclass
class FitReport:
    """What the phases report besides their outcomes (the estimator's attributes): where
    the first incumbent came from, the model handed to the engine (``start``), the
    engine's own result (``engine``: its record — engine, method, backend, sizes — is the
    fit's), the local phase's starts and its 1-swap record (``swap_record``, for the
    model of the phase named ``"swaps and kicks"``)."""

    init_source: str | None = None
    local_starts: list[tuple[str, float, float, bool]] = field(default_factory=list)
    boosting_risk: float = math.nan
    warm_start_limit: str | None = None
    warm_start_limited: bool = False
    start: RuleEnsemble | None = None
    engine: ExactResult | None = None
    swap_record: dict[str, Any] | None = None


class Phase(Protocol):
    """One step of a fit plan: whether it runs, its share of the budget, its outcome
    (the problem is ``state.problem``)."""

    @property
    def name(self) -> str:
        ...

    def share(self, options: FitOptions, state: FitState) -> float:
        """Its share of the fit's budget left when it starts (1: all of it)."""
        ...

    def applies(self, options: FitOptions, state: FitState, budget: Budget) -> bool:
        ...

    def run(self, options: FitOptions, state: FitState, budget: Budget,
            report: FitReport) -> PhaseOutcome:
        ...


def _with_encoder(ensemble: RuleEnsemble, ds: Dataset) -> RuleEnsemble:
    return RuleEnsemble(ensemble.rules, ensemble.intercept, ensemble.loss, ds.encoder,
                        ds.classes)


def _booster(preset: str, problem: KRuleProblem) -> Any:
    return RuleBooster.from_preset(
        preset, n_rules=problem.n_rules, loss=problem.loss, reg=problem.reg,
        fit_intercept=problem.fit_intercept, thresholds=problem.thresholds,
        max_rule_length=problem.max_rule_length)


def _cut_short(booster: Any) -> str:
    """How a boosting warm start was cut short: the limit and how many of its rule
    searches it stopped (e.g. ``"time limit: 1 of 3 rule searches stopped, 2 not started"``)."""
    limit = str(getattr(booster, "limit_reached_", None) or "time_limit").replace("_", " ")
    rounds = getattr(booster, "rounds_", [])
    stopped = sum(1 for r in rounds if getattr(r.search, "limit_reached", False))
    skipped = int(getattr(booster, "rounds_skipped_", 0))
    return f"{limit}: {stopped} of {booster.n_rules} rule searches stopped" + (
        f", {skipped} not started" if skipped else "")


@dataclass(frozen=True)
class BoostingStart:
    """The first incumbent: the ``preset`` boosting model on the problem's own candidate
    thresholds, within its share (a limit there keeps the rules found so far), or the warm
    start given when it is better."""

    name: str = "warm start"

    def share(self, options: FitOptions, state: FitState) -> float:
        return options.shares.warm_start

    def applies(self, options: FitOptions, state: FitState, budget: Budget) -> bool:
        return options.preset is not None or options.warm_start is not None

    def run(self, options: FitOptions, state: FitState, budget: Budget,
            report: FitReport) -> PhaseOutcome:
        problem, start, notes = state.problem, None, []
        if options.preset is not None:
            booster = _booster(options.preset, problem)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SolveLimitWarning)
                booster.fit(problem.dataset, budget=budget)
            report.warm_start_limited = bool(getattr(booster, "limit_reached_", False)) or \
                any(issubclass(w.category, SolveLimitWarning) for w in caught)
            if report.warm_start_limited:
                report.warm_start_limit = _cut_short(booster)
                notes.append(f"the boosting warm start ({options.preset}) was cut short by "
                             f"its share of the time limit ({report.warm_start_limit}); "
                             "boosting_risk_ is the risk of the rules it found")
            report.boosting_risk = float(booster.risk_path_[-1])
            start, report.init_source = booster.ensembles_[-1], options.preset
        given = options.warm_start
        if given is not None and (start is None or problem.risk(given)
                                  < problem.risk(start)):
            start, report.init_source = given, options.warm_start_source
        return PhaseOutcome(start, notes=tuple(notes))


@dataclass(frozen=True)
class LocalStart:
    """Squared loss: every start (the incumbent, SGB unless it was the warm start, the
    leaves of a (k + 1)-leaf tree on the candidate thresholds) ended 1-swap optimal; the
    best becomes the engine's warm start. Skipped without a start, and for an engine that
    meets the best models first by itself (``EngineSpec.wants_local_start``)."""

    name: str = "local phase"

    def share(self, options: FitOptions, state: FitState) -> float:
        return 1.0  # its two steps take their shares of what is left in turn

    def applies(self, options: FitOptions, state: FitState, budget: Budget) -> bool:
        return state.problem.squared and state.model is not None and \
            engine_spec(options.engine).wants_local_start

    def run(self, options: FitOptions, state: FitState, budget: Budget,
            report: FitReport) -> PhaseOutcome:
        problem, start = state.problem, state.model
        ds = problem.dataset
        starts: list[tuple[str, Any]] = []
        if start is not None:
            starts.append((report.init_source or "warm start", start))
        if options.preset != "SGB" and not budget.expired():
            sgb = _booster("SGB", problem)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SolveLimitWarning)
                sgb.fit(ds, budget=budget.fraction(options.shares.sgb_start))
            starts.append(("SGB", sgb.ensembles_[-1]))
        tree = threshold_tree_rules(problem, problem.n_rules + 1, budget=budget)
        if tree:
            starts.append(("tree", RuleEnsemble(tree, 0.0, "squared", ds.encoder)))
        found = best_local_model(problem, starts,
                                 budget=budget.fraction(options.shares.local_start),
                                 kicks=False, seed=options.seed)
        if found is None:
            return PhaseOutcome()
        report.local_starts = list(found.starts)
        if start is None or found.best.risk < state.risk:
            report.init_source = f"{found.source}, then rule swaps"
            return PhaseOutcome(_with_encoder(found.best.ensemble, ds))
        return PhaseOutcome()


@dataclass(frozen=True)
class EnginePhase:
    """The registered engine, from the incumbent (recorded as ``report.start``), its
    result translated into the phase's outcome
    (:func:`~rulemip.algorithms.fit_decision.engine_outcome`). ``alone``: no phase
    follows it, it gets the whole budget left."""

    name: str = "engine"
    alone: bool = False

    def share(self, options: FitOptions, state: FitState) -> float:
        if self.alone or not state.problem.squared:
            return 1.0
        if options.engine == "kbox":
            return options.shares.kbox_engine
        return options.shares.two_rule_engine if _two_rules(state.problem) \
            else options.shares.engine

    def applies(self, options: FitOptions, state: FitState, budget: Budget) -> bool:
        return True

    def run(self, options: FitOptions, state: FitState, budget: Budget,
            report: FitReport) -> PhaseOutcome:
        problem = state.problem
        report.start = state.model
        formulation = engine_spec(options.engine).factory(problem)
        result = solve(formulation, problem.dataset,
                       solver="auto" if options.backend is None else options.backend,
                       budget=budget, mip_gap=options.mip_gap, warm_start=state.model,
                       callback=with_gap(options.callback), seed=options.seed)
        report.engine = result
        return engine_outcome(result, problem, budget=budget, incumbent=state.model)


@dataclass(frozen=True)
class SwapsAndKicks:
    """Squared loss, not proved: swaps from the incumbent (and the engine's start), then
    kicks; a model no worse than the incumbent replaces it (the engine's bound holds for
    every model of the language), its 1-swap record kept (``report.swap_record``)."""

    name: str = "swaps and kicks"

    def share(self, options: FitOptions, state: FitState) -> float:
        return options.shares.two_rule_kicks if _two_rules(state.problem) else 1.0

    def applies(self, options: FitOptions, state: FitState, budget: Budget) -> bool:
        return state.problem.squared and state.model is not None and not state.proved()

    def run(self, options: FitOptions, state: FitState, budget: Budget,
            report: FitReport) -> PhaseOutcome:
        assert state.model is not None
        problem = state.problem
        starts = [("engine", state.model)]
        if report.start is not None:
            starts.append(("start", report.start))
        found = best_local_model(problem, starts, budget=budget,
                                 kicks=True, seed=options.seed,
                                 descent_share=options.shares.descents,
                                 heuristic_share=options.shares.heuristic_kicks)
        if found is None or problem.violations(found.best.ensemble):
            return PhaseOutcome()
        best = found.best
        note = (f"local phase: {len(found.starts)} start(s) "
                + ", ".join(f"{n} {a:.8g} -> {b:.8g}{' (1-swap optimal)' if ok else ''}"
                            for n, a, b, ok in found.starts)
                + f"; {found.kicks} kicks, {found.kicks_kept} kept")
        report.local_starts.extend(found.starts)
        report.swap_record = local_optimality_record(best) if best.one_swap_optimal \
            else None
        notes: tuple[str, ...] = (note,)
        if best.risk <= state.risk + 1e-12 * max(1.0, abs(state.risk)):
            notes += (f"model from the local phase ({found.source}) replaces the engine's",)
        return PhaseOutcome(
            best.ensemble, finished=True,
            limit=budget_limit(budget) if budget.expired() else (state.limit or Limit.OTHER),
            notes=notes)


@dataclass(frozen=True)
class TwoRuleBound:
    """Two squared-loss rules, not proved, ``reg > 0``: the branch and bound over both
    boxes (:mod:`rulemip.algorithms.krule.two_rule_bound`) with the incumbent as its upper
    bound. Its bound replaces the fit's when higher; a better model it meets replaces the
    incumbent; when it prunes every node the incumbent is optimal."""

    name: str = "two-rule bound"

    def share(self, options: FitOptions, state: FitState) -> float:
        return 1.0

    def applies(self, options: FitOptions, state: FitState, budget: Budget) -> bool:
        return _two_rules(state.problem) and state.model is not None \
            and not state.proved() and not budget.expired() and state.problem.reg > 0.0

    def run(self, options: FitOptions, state: FitState, budget: Budget,
            report: FitReport) -> PhaseOutcome:
        problem = state.problem
        ds = problem.dataset
        y = get_loss("squared").check_labels(np.asarray(ds.y))
        cells = reduce_to_cells(ds.X, y, problem.thresholds, "squared", ds.sample_weight)
        found = two_rule_bound(cells, problem.reg, problem.fit_intercept, upper=state.risk,
                               budget=budget, max_memory=TWO_RULE_POOL_BYTES,
                               max_rule_length=problem.max_rule_length)
        notes = [f"two-rule branch and bound: bound {found.bound:.8g} after {found.nodes} "
                 f"nodes in {found.seconds:.3g} s ({found.open_nodes} open"
                 f"{', node pool full' if found.pool_full else ''})"]
        model = None
        if found.boxes is not None:
            rules = [Rule(conditions_from_box(lo, hi, ds.encoder), 1.0)
                     for lo, hi in found.boxes]
            cand, cand_risk = refit_ensemble(ds, rules, reg=problem.reg,
                                             fit_intercept=problem.fit_intercept,
                                             template=state.model)
            if cand_risk < state.risk and not problem.violations(cand):
                model = cand
                notes.append("the two-rule branch and bound found the better model returned")
        return PhaseOutcome(
            model, found.bound, finished=found.proved,
            limit=None if found.proved else
            (budget_limit(budget) if budget.expired() else Limit.OTHER),
            notes=tuple(notes))


@dataclass(frozen=True)
class FitPlan:
    """A declared list of phases, run in order, each on its share of the fit's budget."""

    phases: tuple[Phase, ...]


#: the plan of every exact fit: the estimators, ``rulemip fit``, gap studies
FIT_PLAN = FitPlan((BoostingStart(), LocalStart(), EnginePhase(), SwapsAndKicks(),
                    TwoRuleBound()))
#: the engine alone, from the warm start (or ``preset``) given: the default of
#: :func:`solve_exact`, what it ran before the plan (engines tested one by one)
ENGINE_PLAN = FitPlan((BoostingStart(), EnginePhase(alone=True)))


@dataclass(frozen=True)
class ExactFit:
    """What :func:`fit_exact` returns: the decided result, the engine that ran, and what
    the phases reported (the certificate's ``local_optimality`` record among them)."""

    result: ExactResult
    engine: str
    report: FitReport
    local_optimality: dict[str, Any] | None = None


def run_plan(plan: FitPlan, options: FitOptions, state: FitState, budget: Budget,
             report: FitReport) -> None:
    """Run ``plan``'s phases that apply, in order, each on its share of ``budget``, and
    fold their outcomes into ``state``."""
    for phase in plan.phases:
        if not phase.applies(options, state, budget):
            continue
        share = phase.share(options, state)
        absorb(state, phase.run(options, state, budget if share >= 1.0 else
                                budget.fraction(share), report), phase.name)


def fit_exact(problem: KRuleProblem, *, engine: str = "auto",
              solver: str | SolverBackend = "auto", mip_gap: float = 1e-6,
              warm_start: RuleEnsemble | None = None, seed: int = 0,
              callback: Callback | None = None, budget: Budget | None = None,
              preset: str | None = None, warm_start_source: str = "warm start",
              plan: FitPlan | None = None) -> ExactFit:
    """Run ``plan`` (default :data:`FIT_PLAN`, module docstring) on ``problem`` within
    ``budget`` (default: unlimited).

    The engine is chosen and its solver resolved once, before any work
    (:func:`~rulemip.algorithms.solve.registry.choose_engine`,
    :func:`~rulemip.algorithms.solve.registry.engine_backend`); ``preset`` is the boosting
    warm start (None: none), ``warm_start`` a model offered as the first incumbent (named
    ``warm_start_source`` in the report).
    """
    clock = Budget.coerce(budget, None)
    chosen = choose_engine(engine, problem)
    backend = engine_backend(chosen, solver, problem)
    if preset not in PRESETS:
        raise InvalidParameterError(
            f"`preset` must be None or a boosting preset {PRESETS[1:]}; got {preset!r}.")
    options = FitOptions(chosen, backend, mip_gap, seed, callback, preset, warm_start,
                         warm_start_source, SHARES)
    state, report = FitState(problem, mip_gap), FitReport()
    run_plan(plan or FIT_PLAN, options, state, clock, report)
    if report.engine is None:
        raise SolverError("a fit plan ended without an engine phase")
    result = decide_fit(state, report.engine, wall_time=clock.elapsed())
    record = report.swap_record if state.source == SwapsAndKicks.name else None
    return ExactFit(result, chosen, report, record)


def solve_exact(problem: KRuleProblem, *, engine: str = "auto",
                solver: str | SolverBackend = "auto", mip_gap: float = 1e-6,
                warm_start: RuleEnsemble | None = None, seed: int = 0,
                callback: Callback | None = None, budget: Budget | None = None,
                preset: str | None = None, plan: FitPlan | None = None) -> ExactResult:
    """The best ensemble of ``problem`` with the engine ``engine``, by ``plan``
    (:func:`fit_exact`): :data:`ENGINE_PLAN` by default (the engine alone, from
    ``warm_start`` or ``preset``), :data:`FIT_PLAN` for what the estimators, the command
    line and gap studies run. ``budget`` is the fit's budget (default: unlimited)."""
    return fit_exact(problem, engine=engine, solver=solver, mip_gap=mip_gap,
                     warm_start=warm_start, seed=seed, callback=callback, budget=budget,
                     preset=preset, plan=plan or ENGINE_PLAN).result


def first_incumbent(problem: KRuleProblem, *, preset: str, budget: Budget
                    ) -> tuple[RuleEnsemble | None, FitReport]:
    """The :class:`BoostingStart` phase alone: the ``preset`` model within ``budget`` and
    its report."""
    report = FitReport()
    options = FitOptions("", None, preset=preset)
    return BoostingStart().run(options, FitState(problem, 1e-6), budget, report).model, report


def after_engine(phase: Phase, result: ExactResult, problem: KRuleProblem, *,
                 budget: Budget, mip_gap: float = 1e-6) -> ExactResult:
    """One phase that follows the engine (:class:`SwapsAndKicks`, :class:`TwoRuleBound`)
    run from the engine's ``result`` and decided (``result`` itself when the phase does
    not apply: proved, or ``budget`` spent)."""
    options = FitOptions(result.engine, None, mip_gap)
    state = FitState(problem, mip_gap)
    absorb(state, engine_outcome(result, problem, budget=None, incumbent=None), "engine")
    if not phase.applies(options, state, budget):
        return result
    absorb(state, phase.run(options, state, budget, FitReport()), phase.name)
    return decide_fit(state, result, wall_time=budget.elapsed())


__all__ = [
    "ENGINES",
    "ENGINE_PLAN",
    "FIT_PLAN",
    "PRESETS",
    "SHARES",
    "TWO_RULE_POOL_BYTES",
    "BoostingStart",
    "EnginePhase",
    "ExactFit",
    "FitOptions",
    "FitPlan",
    "FitReport",
    "FitShares",
    "LocalStart",
    "Phase",
    "SwapsAndKicks",
    "TwoRuleBound",
    "after_engine",
    "first_incumbent",
    "fit_exact",
    "run_plan",
    "solve_exact",
]
