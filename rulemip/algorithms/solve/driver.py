r"""One driver for every exact k-rule engine, and the registries behind ``engine=``.

:func:`solve` runs any :class:`~rulemip.formulations.protocol.Formulation` on one path: it
resolves the backend once (:func:`rulemip.solvers.base.resolve_backend`, refusing before
any work what the backend cannot do; a backend object is only checked), builds the model
within the :class:`~rulemip.budget.Budget`, then solves natively, by tangent-cut outer
approximation (:mod:`rulemip.algorithms.convex.tangent_cuts`), or — for an
:class:`~rulemip.formulations.protocol.OracleFormulation` (the box-selection CIP, column
generation) — calls the formulation's search with the backend as its master, all with
the *remaining* time; :func:`decide` then decodes the incumbent, recomputes its risk from
the data and decides the status once (:func:`rulemip.solvers.status.promote`). A limit
returns the best known model — the warm start when nothing was found — never an error.

Engines are formulations in a registry (:mod:`rulemip.algorithms.solve.registry`):
:func:`register_formulation` adds one, solved by :func:`solve`; the built-in engines
register themselves in their own modules (this room imports none of them;
``rulemip/algorithms/__init__.py`` does). The exact fit — the estimators', the command
line's and gap studies' entry point — is the plan above this room
(:func:`rulemip.algorithms.fit_plan.fit_exact`, :func:`~rulemip.algorithms.fit_plan.solve_exact`),
which runs an engine through this driver among its phases and decides the fit once.
An engine that must know inside its search whether an outcome is a proof asks
:func:`status_of`, the rule :func:`decide` applies.
``docs/architecture.md`` draws the whole picture.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.convex.tangent_cuts import solve_model
from rulemip.algorithms.solve.registry import (
    CIP_EXPLICIT_MAX_BOXES,
    ENGINES,
    MethodSpec,
    check_engine_fits,
    check_solver,
    choose_engine,
    method_spec,
    register_formulation,
    register_method,
)
from rulemip.budget import Budget, BudgetExpired
from rulemip.data import Dataset
from rulemip.exceptions import SolverError
from rulemip.formulations.protocol import (
    BuiltModel,
    Formulation,
    OracleFormulation,
    SearchOutcome,
)
from rulemip.formulations.result import ExactResult
from rulemip.model.standard_form import StandardForm
from rulemip.rules import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.solvers.base import SolverBackend, required_capabilities, resolve_backend, supports
from rulemip.solvers.result import (
    Limit,
    SolveOptions,
    SolveResult,
    TerminationReason,
    budget_limit,
    relative_gap,
)
from rulemip.solvers.status import Verdict, bound_slack, promote

FloatArray = NDArray[np.float64]
Callback = Callable[[dict[str, Any]], Any]


# ---------------------------------------------------------------------- the driver
def solve(formulation: Formulation, dataset: Dataset, *, solver: str | SolverBackend = "auto",
          budget: Budget | None = None,
          mip_gap: float = 1e-6, warm_start: RuleEnsemble | None = None,
          callback: Callback | None = None, seed: int = 0, threads: int | None = None,
          verbose: bool = False) -> ExactResult:
    """Build, solve and decode ``formulation`` on ``dataset`` (module docstring).

    One path for every kind of formulation: the backend is resolved once
    (``formulation.needs()``; a model formulation may fall back to tangent cuts, an
    :class:`~rulemip.formulations.protocol.OracleFormulation` needs it as its master), the
    model is built within the budget, the warm start encoded, then the backend solves the
    model (natively or by tangent cuts) or the formulation's ``search`` runs over its
    oracle; either answer is decoded, its risk recomputed and its status decided once
    (:func:`decide`).

    Parameters
    ----------
    solver : a backend name, ``"auto"`` (a backend taking the model natively — SCIP for
        loss terms — if installed, else a MILP master with tangent cuts) or a backend.
    budget : the time and work available (default: unlimited); model building counts.
        Seconds: ``budget=Budget.from_time_limit(seconds)`` (a float for time is for the
        estimators and the command line only).
    mip_gap : relative gap at which the result is ``OPTIMAL`` (at least 1e-6).
    warm_start : an ensemble encoded as the start vector, and returned if the backend
        finds nothing within the limit.

    Raises
    ------
    SolverError
        when the backend fails in a way that is not a limit; its ``result`` attribute is an
        :class:`ExactResult` with the best model known (the warm start, if any).
    """
    clock = Budget.coerce(budget, None)
    oracle = isinstance(formulation, OracleFormulation)
    backend, native = resolve_backend(solver, formulation.needs(),
                                      outer_approximation=not oracle)
    try:
        built = build_within(formulation, dataset, backend, native, warm_start, clock)
    except BudgetExpired as exc:
        # building took the budget: nothing to decode; the fit keeps the best model known
        return ExactResult(
            ensemble=None, risk=math.inf, lower_bound=-math.inf, gap=math.inf,
            termination=TerminationReason.NO_SOLUTION_FOUND, limit=budget_limit(clock),
            wall_time=clock.elapsed(), engine=formulation.engine, backend=backend.name,
            notes=(f"{exc} The backend was not started.",))
    start = formulation.encode_start(built, warm_start) if warm_start is not None else None
    if oracle:
        assert isinstance(formulation, OracleFormulation)
        outcome = formulation.search(built, backend=backend, budget=clock, mip_gap=mip_gap,
                                     start=start, warm_start=warm_start, seed=seed,
                                     threads=threads, callback=callback)
        return decide(formulation, built, outcome, wall_time=clock.elapsed(),
                      mip_gap=mip_gap, start=start)
    opts = SolveOptions(time_limit=clock.remaining(), mip_gap=mip_gap, threads=threads,
                        seed=seed, verbose=verbose, callback=wrap_callback(callback),
                        node_limit=clock.work_left(),   # the deterministic limit
                        iteration_limit=clock.iteration_limit())
    sf = built.model.to_standard_form()  # once: the solve and the decode both read it
    try:
        res = solve_built(formulation, built, backend, opts, start, sf=sf)
        clock.charge_solve(res.nodes, res.iterations)
    except SolverError as exc:
        # a backend fault: surface it, carrying the best model known (the warm start)
        nothing = SolveResult(TerminationReason.ERROR, backend=backend.name,
                              notes=(f"backend fault: {exc}",))
        exc.result = result_from_solve(  # type: ignore[attr-defined]
            formulation, built, nothing, wall_time=clock.elapsed(), mip_gap=mip_gap,
            start=start, sf=sf)
        raise
    return result_from_solve(formulation, built, res, wall_time=clock.elapsed(),
                             mip_gap=mip_gap, start=start,
                             bound_tolerance=getattr(backend, "bound_tolerance", None),
                             sf=sf)


def build_within(formulation: Formulation, dataset: Dataset, backend: SolverBackend,
                 native: bool, warm_start: RuleEnsemble | None, budget: Budget) -> Any:
    """``formulation.build_model``, given ``budget`` when the formulation declares
    ``budgeted_build = True`` (its build then raises :class:`~rulemip.budget.BudgetExpired`
    between blocks once the budget is spent: the interval-cover MIP's)."""
    kwargs: dict[str, Any] = {}
    if getattr(formulation, "budgeted_build", False):
        kwargs["budget"] = budget
    return formulation.build_model(dataset, backend=backend, native=native,
                                   warm_start=warm_start, **kwargs)


def solve_built(formulation: Formulation, built: BuiltModel, backend: SolverBackend,
                options: SolveOptions, start: FloatArray | None,
                sf: StandardForm | None = None) -> SolveResult:
    """Solve a built model on ``backend``: natively, or by the tangent-cut driver with the
    formulation's ``polish`` as the repair step (``sf``: the model's standard form when
    the caller has it)."""
    sf = built.model.to_standard_form() if sf is None else sf
    if supports(backend, required_capabilities(sf)):
        # stop a little inside the requested gap so that the recomputed risk (refit
        # weights, original data) still meets `mip_gap`
        options = replace(options, mip_gap=0.1 * options.mip_gap)
    return solve_model(sf, backend, options, start=start,
                       polish=lambda x: formulation.polish(built, x))


def outcome_from_solve(built: BuiltModel, res: SolveResult, *,
                       bound_tolerance: float | None = None,
                       sf: StandardForm | None = None) -> SearchOutcome:
    """A backend's answer as a :class:`~rulemip.formulations.protocol.SearchOutcome`: its
    point, its dual bound lowered by the backend's feasibility tolerance times the weight
    of the loss terms' epigraph rows when the model has a logistic or Poisson loss term
    (:data:`EXP_LOSSES`: where the brute-force oracle found bounds above the optimum; none
    in squared-loss models, whose small risks such a slack would keep from any
    certificate; :func:`bound_slack`, ``bound_tolerance`` overrides its table). A built
    model with an ``objective_scale`` (its objective is :math:`R_\\lambda` divided by it)
    has its bound scaled back to :math:`R_\\lambda`."""
    notes = list(res.notes)
    sf = built.model.to_standard_form() if sf is None else sf
    if res.x is not None and math.isfinite(float(res.bounds.primal)):
        # the model's own objective at the point (the decoded risk refits the weights
        # and may be lower; that is not a disagreement)
        model_value = sf.objective_value(np.asarray(res.x))
        obj = float(res.bounds.primal)
        if abs(obj - model_value) > 1e-6 * max(1.0, abs(obj)):
            notes.append(f"solver objective {obj:.10g} differs from the risk of its "
                         f"solution recomputed from the data {model_value:.10g}.")
    # a model built in its own units (the interval cover's y/s) reports R_lambda / scale
    dual = float(res.bounds.dual) * float(getattr(built, "objective_scale", 1.0))
    if math.isfinite(dual) and any(t.loss in EXP_LOSSES for t in sf.loss_terms):
        slack = bound_slack(res.backend, objective_weight(sf), tolerance=bound_tolerance)
        if slack > 0.0:
            dual -= slack
            notes.append(f"the backend's dual bound lowered by {slack:.3g} for its "
                         "feasibility tolerance (docs/explanation/solving.md)")
    tangent = "+" in res.backend
    return SearchOutcome(
        x=res.x, lower_bound=dual,
        finished=res.termination in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE),
        limit=res.limit, method="tangent cuts" if tangent else "native",
        backend=res.backend, backend_version=res.backend_version,
        iterations=int(res.iterations or res.nodes or 0), notes=tuple(notes),
        history=tuple(getattr(res, "history", ()) or ()), no_solution=res.termination)


def result_from_solve(formulation: Formulation, built: BuiltModel, res: SolveResult, *,
                      wall_time: float, mip_gap: float = 1e-6,
                      start: FloatArray | None = None,
                      bound_tolerance: float | None = None,
                      sf: StandardForm | None = None) -> ExactResult:
    """Decode a backend's result into an :class:`ExactResult`
    (:func:`outcome_from_solve`, then :func:`decide`)."""
    return decide(formulation, built,
                  outcome_from_solve(built, res, bound_tolerance=bound_tolerance, sf=sf),
                  wall_time=wall_time, mip_gap=mip_gap, start=start)


def decide(formulation: Formulation, built: BuiltModel, outcome: SearchOutcome, *,
           wall_time: float, mip_gap: float = 1e-6,
           start: FloatArray | None = None) -> ExactResult:
    """The one decode and the one status of every engine: the outcome's point (or the
    start when it has none: the warm start, the best model known) decoded by the
    formulation with its risk recomputed from the data, the bound and the status decided
    by :func:`promote` (fallback: the built model's ``safe_bound``), and the
    :class:`ExactResult` built by keyword."""
    if outcome.built is not None:
        built = outcome.built
    notes = list(built.notes) + list(outcome.notes)
    x, finished, limit = outcome.x, outcome.finished, outcome.limit
    if x is None and start is not None:
        x = start
        notes.append(f"the search found no solution ({outcome.no_solution.value}); "
                     "returning the warm start, the best model known.")
        finished, limit = False, limit if limit is not None else Limit.OTHER
    common: dict[str, Any] = {
        "wall_time": wall_time, "iterations": outcome.iterations,
        "engine": formulation.engine, "method": outcome.method, "backend": outcome.backend,
        "backend_version": outcome.backend_version,
        "n_boxes": int(getattr(built, "n_boxes", 0)), "n_cells": built.n_cells,
        "bound_valid": built.bound_valid, "history": outcome.history}
    if x is None:
        term = outcome.no_solution if outcome.no_solution is not TerminationReason.OPTIMAL \
            else TerminationReason.ERROR
        return ExactResult(ensemble=None, risk=math.inf, lower_bound=outcome.lower_bound,
                           gap=math.inf, termination=term, limit=outcome.limit,
                           notes=tuple(notes), **common)
    ensemble, risk, decode_notes = formulation.decode_solution(built, x)
    notes.extend(decode_notes)
    language = formulation_language(formulation, built)
    bad = [] if language is None else language.violations(ensemble)
    if language is not None and bad:
        # not a model of the problem: the search's bound stays (it speaks about the
        # language), its point is dropped for the start, or for nothing
        notes.append("the decoded model is outside the problem's language ("
                     + "; ".join(bad[:3]) + "): refused")
        finished, limit = False, limit if limit is not None else Limit.OTHER
        if start is None or x is start or \
                language.violations(formulation.decode_solution(built, start)[0]):
            return ExactResult(ensemble=None, risk=math.inf, lower_bound=outcome.lower_bound,
                               gap=math.inf, termination=TerminationReason.NO_SOLUTION_FOUND,
                               limit=limit, notes=tuple(notes), **common)
        x = start
        ensemble, risk, decode_notes = formulation.decode_solution(built, x)
        notes.extend(decode_notes)
    if x is outcome.x and math.isfinite(outcome.objective) and \
            abs(float(risk) - outcome.objective) > 1e-7 * max(1.0, abs(float(risk))):
        notes.append(f"decoded risk {float(risk):.12g} differs from the search's "
                     f"{outcome.objective:.12g}")
    if (finished, limit) != (outcome.finished, outcome.limit):
        outcome = replace(outcome, finished=finished, limit=limit)
    verdict = status_of(built, outcome, float(risk), mip_gap=mip_gap)
    notes.extend(verdict.notes)
    return ExactResult(ensemble=ensemble, risk=float(risk), lower_bound=verdict.lower_bound,
                       gap=verdict.gap, termination=verdict.termination,
                       limit=verdict.limit, notes=tuple(notes), **common)


def status_of(built: BuiltModel, outcome: SearchOutcome, risk: float, *, mip_gap: float,
              warn: bool = True) -> Verdict:
    """The status :func:`decide` gives ``outcome`` whose point decodes to a model of
    recomputed ``risk``: :func:`promote` on the outcome's bound, ``finished`` and
    ``limit``, with the built model's ``bound_valid`` and ``safe_bound`` (the fallback of a
    refuted bound). A search asks it to stop early when its incumbent would already be
    reported optimal (``warn=False``: nothing is reported then); what is reported is
    always :func:`decide`'s."""
    return promote(float(risk), outcome.lower_bound, finished=outcome.finished,
                   mip_gap=mip_gap, limit=outcome.limit, bound_valid=built.bound_valid,
                   fallback_bound=built.safe_bound, no_solution=outcome.no_solution,
                   warn=warn)


def formulation_language(formulation: Formulation, built: BuiltModel) -> Language | None:
    """The language a formulation's bound speaks about (:mod:`rulemip.rules.language`),
    read from its ``n_rules``, ``max_rule_length``, ``fit_intercept`` and thresholds (its
    own, or its built model's cell reduction's); None for a formulation without
    ``n_rules`` (one round of MIP-boosting, say), which declares none. Without known
    thresholds only the size and the rule length are checked here; :func:`solve_exact`
    checks the grid too."""
    k = getattr(formulation, "n_rules", None)
    if isinstance(k, bool) or not isinstance(k, int):
        return None
    thresholds = getattr(formulation, "thresholds", None)
    if thresholds is None:
        thresholds = getattr(getattr(built, "cells", None), "thresholds", None)
    length = getattr(formulation, "max_rule_length", None)
    return Language(k, thresholds, length if isinstance(length, int) else None,
                    bool(getattr(formulation, "fit_intercept", True)))


EXP_LOSSES = ("logistic", "poisson")
"""Losses whose models get the tolerance slack on their dual bound (:func:`result_from_solve`)."""


def objective_weight(sf: Any) -> float:
    """``Σ|s·w_i|`` over a standard form's loss terms: the objective weight of their
    epigraph rows ``θ_i ≥ …``, i.e. what a violation of ε on each of them can move the
    objective by, per unit ε (:func:`bound_slack`)."""
    weight = 0.0
    for term in sf.loss_terms:
        weight += abs(float(term.scale)) * float(np.abs(np.asarray(term.weights)).sum())
    return weight


def wrap_callback(callback: Callback | None) -> Callback | None:
    """Backend progress dicts with the ``ub``/``lb``/``iteration`` keys of OA progress."""
    if callback is None:
        return None

    def cb(info: dict[str, Any]) -> Any:
        out = dict(info)
        out.setdefault("ub", info.get("primal", math.inf))
        out.setdefault("lb", info.get("dual", -math.inf))
        out.setdefault("iteration", info.get("nodes", 0))
        return callback(out)

    return cb



def with_gap(callback: Callback | None) -> Callback | None:
    """``callback`` receiving progress dicts whose ``gap`` is the relative gap of their
    ``ub``/``lb`` (or ``primal``/``dual``) whenever both are finite: engines that report
    only the bounds (column generation, say) no longer show ``gap inf%``."""
    if callback is None:
        return None

    def cb(info: dict[str, Any]) -> Any:
        out = dict(info)
        ub = float(out.get("ub", out.get("primal", math.inf)))
        lb = float(out.get("lb", out.get("dual", -math.inf)))
        gap = out.get("gap")
        if (gap is None or not math.isfinite(float(gap))) and math.isfinite(ub) \
                and math.isfinite(lb):
            out["gap"] = relative_gap(ub, lb)
        return callback(out)

    return cb


__all__ = [
    "CIP_EXPLICIT_MAX_BOXES",
    "ENGINES",
    "MethodSpec",
    "check_engine_fits",
    "check_solver",
    "choose_engine",
    "decide",
    "formulation_language",
    "method_spec",
    "outcome_from_solve",
    "register_formulation",
    "register_method",
    "result_from_solve",
    "solve",
    "solve_built",
    "status_of",
    "with_gap",
    "wrap_callback",
]
