r"""One driver for every exact k-rule engine, and the registries behind ``engine=``.

:func:`solve` runs any :class:`~rulemip.formulations.protocol.Formulation` on one path: it
resolves the backend once (:func:`rulemip.solvers.base.resolve_backend`, refusing before
any work what the backend cannot do; a backend object is only checked), builds the model
within the :class:`~rulemip.budget.Budget`, then solves natively, by tangent-cut outer
approximation (:mod:`rulemip.algorithms.tangent_cuts`), or — for an
:class:`~rulemip.formulations.protocol.OracleFormulation` (the box-selection CIP, column
generation) — calls the formulation's search with the backend as its master, all with
the *remaining* time; :func:`decide` then decodes the incumbent, recomputes its risk from
the data and decides the status once (:func:`rulemip.solvers.status.promote`). A limit
returns the best known model — the warm start when nothing was found — never an error.

Engines are *methods* in a registry: :func:`register_method` adds a function with the
signature of :func:`solve_exact`'s keywords (it receives those it accepts),
:func:`register_formulation` adds a formulation solved by :func:`solve`. The built-in
engines register themselves in their own modules (this module imports none of them;
``rulemip/algorithms/__init__.py`` does). :func:`solve_exact` — the stable entry point of
estimators, the command line and gap studies — chooses a method, resolves the solver once
(:func:`check_solver`) and checks what the method returned: the ensemble's risk is
recomputed from the data, and a bound the recomputed risk refutes is never reported as
proved. ``docs/architecture.md`` draws the whole picture.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.tangent_cuts import solve_model
from rulemip.budget import Budget, default_max_memory
from rulemip.data import Dataset
from rulemip.exceptions import InvalidParameterError, SolverError
from rulemip.formulations.engines import CIP_MAX_BOXES, count_boxes, kbox_fits
from rulemip.formulations.protocol import (
    BuiltModel,
    Formulation,
    OracleFormulation,
    SearchOutcome,
)
from rulemip.formulations.result import ExactResult
from rulemip.model.standard_form import StandardForm
from rulemip.refit import fit_weights
from rulemip.rules import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.solvers.base import (
    Capability,
    SolverBackend,
    required_capabilities,
    resolve_backend,
    supports,
)
from rulemip.solvers.result import (
    Limit,
    SolveOptions,
    SolveResult,
    TerminationReason,
    relative_gap,
)
from rulemip.solvers.status import REFUTATION_TOL, bound_slack, promote

FloatArray = NDArray[np.float64]
Callback = Callable[[dict[str, Any]], Any]
Method = Callable[..., ExactResult]


# ---------------------------------------------------------------------- the driver
def solve(formulation: Formulation, dataset: Dataset, *, solver: str | SolverBackend = "auto",
          budget: Budget | None = None, time_limit: float | None = None,
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
    budget, time_limit : the time available (``budget`` wins; ``time_limit`` may only
        shorten it); model building counts.
    mip_gap : relative gap at which the result is ``OPTIMAL`` (at least 1e-6).
    warm_start : an ensemble encoded as the start vector, and returned if the backend
        finds nothing within the limit.

    Raises
    ------
    SolverError
        when the backend fails in a way that is not a limit; its ``result`` attribute is an
        :class:`ExactResult` with the best model known (the warm start, if any).
    """
    clock = Budget.coerce(budget, time_limit)
    oracle = isinstance(formulation, OracleFormulation)
    backend, native = resolve_backend(solver, formulation.needs(),
                                      outer_approximation=not oracle)
    built = formulation.build_model(dataset, backend=backend, native=native,
                                    warm_start=warm_start)
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
                        node_limit=clock.work_left())   # the deterministic limit
    sf = built.model.to_standard_form()  # once: the solve and the decode both read it
    try:
        res = solve_built(formulation, built, backend, opts, start, sf=sf)
        clock.charge(1 + int(res.nodes or 0))
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
    certificate; :func:`bound_slack`, ``bound_tolerance`` overrides its table)."""
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
    dual = float(res.bounds.dual)
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
    verdict = promote(float(risk), outcome.lower_bound, finished=finished, mip_gap=mip_gap,
                      limit=limit, bound_valid=built.bound_valid,
                      fallback_bound=built.safe_bound, no_solution=outcome.no_solution)
    notes.extend(verdict.notes)
    return ExactResult(ensemble=ensemble, risk=float(risk), lower_bound=verdict.lower_bound,
                       gap=verdict.gap, termination=verdict.termination,
                       limit=verdict.limit, notes=tuple(notes), **common)


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


# ---------------------------------------------------------------------- registries
#: an engine's size guard (``MethodSpec.fits``): raises
#: :class:`~rulemip.exceptions.InvalidParameterError` naming alternatives, else returns
SizeCheck = Callable[..., None]


@dataclass(frozen=True)
class MethodSpec:
    """A registered engine: its function and what it requires of the request."""

    name: str
    function: Method
    needs_positive_reg: bool = False
    losses: tuple[str, ...] | None = None  # None: every loss
    description: str = ""
    #: what the engine needs from its solver, given ``(loss, reg)``, with whether outer
    #: approximation may serve (checked by :func:`check_solver` before any work)
    solver_needs: Callable[[str, float], tuple[set[Capability], bool]] | None = None
    #: ``fits(thresholds, max_rule_length, n_rules=, n_samples=)`` refuses, before any
    #: work, a problem whose size the engine cannot hold (:func:`check_engine_fits`)
    fits: SizeCheck | None = None
    #: the engine profits from the estimator's local phase before it (rule swaps from
    #: several starts, its best model the warm start); an exhaustive search that meets the
    #: best models first by itself (``"kbox"``) declares False and saves that time
    wants_local_start: bool = True

    def accepted(self) -> set[str] | None:
        """Keyword names the function takes (``None``: it takes ``**kwargs``)."""
        params = inspect.signature(self.function).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return None
        return {p.name for p in params}


_METHODS: dict[str, MethodSpec] = {}


def register_method(name: str, function: Method, *, needs_positive_reg: bool = False,
                    losses: Sequence[str] | None = None, description: str = "",
                    solver_needs: Callable[[str, float], tuple[set[Capability], bool]]
                    | None = None, fits: SizeCheck | None = None,
                    wants_local_start: bool = True, replace: bool = False) -> None:
    """Make ``function`` available as ``engine=name`` in :func:`solve_exact`.

    ``function(dataset, n_rules, *, loss, reg, fit_intercept, thresholds, max_rule_length,
    solver, time_limit, budget, mip_gap, warm_start, seed, callback) -> ExactResult``; it
    receives only the keywords its signature names, so e.g. a column-generation engine
    without ``solver``/``mip_gap`` registers as it is. ``needs_positive_reg`` and
    ``losses`` are checked before it is called, and ``solver_needs(loss, reg) -> (needs,
    outer_approximation)`` lets :func:`check_solver` refuse an unable solver up front;
    ``fits(thresholds, max_rule_length, n_rules=, n_samples=)`` refuses a problem the
    engine cannot hold, before any work (:func:`check_engine_fits`);
    ``wants_local_start=False`` tells the exact estimators to skip their local phase before
    the engine (:attr:`MethodSpec.wants_local_start`).
    """
    if not isinstance(name, str) or not name or name == "auto":
        raise InvalidParameterError(
            f"an engine name must be a non-empty string other than 'auto'; got {name!r}.")
    if name in _METHODS and not replace:
        raise InvalidParameterError(
            f"engine {name!r} is already registered; pass replace=True to override.")
    if not callable(function):
        raise InvalidParameterError(f"`function` must be callable; got {function!r}.")
    _METHODS[name] = MethodSpec(name, function, needs_positive_reg,
                                None if losses is None else tuple(losses), description,
                                solver_needs, fits, bool(wants_local_start))


def register_formulation(name: str, factory: Callable[..., Formulation], *,
                         needs_positive_reg: bool = False,
                         losses: Sequence[str] | None = None, description: str = "",
                         fits: SizeCheck | None = None, wants_local_start: bool = True,
                         replace: bool = False) -> None:
    """Make a formulation available as ``engine=name``, solved by :func:`solve`
    (the keywords as for :func:`register_method`).

    ``factory(n_rules, loss=, reg=, fit_intercept=, thresholds=, max_rule_length=)``
    returns the formulation (a formulation class with that constructor qualifies);
    ``fits`` is its size guard (:func:`register_method`).
    """
    def method(dataset: Dataset, n_rules: int, *, loss: str, reg: float,
               fit_intercept: bool, thresholds: Sequence[FloatArray],
               max_rule_length: int | None, solver: str | SolverBackend, budget: Budget,
               mip_gap: float, warm_start: RuleEnsemble | None, seed: int,
               callback: Callback | None) -> ExactResult:
        formulation = factory(n_rules, loss=loss, reg=reg, fit_intercept=fit_intercept,
                              thresholds=list(thresholds), max_rule_length=max_rule_length)
        return solve(formulation, dataset, solver=solver, budget=budget, mip_gap=mip_gap,
                     warm_start=warm_start, callback=callback, seed=seed)

    def solver_needs(loss: str, reg: float) -> tuple[set[Capability], bool]:
        probe = factory(1, loss=loss, reg=reg if reg > 0 else 1e-3, fit_intercept=True,
                        thresholds=None, max_rule_length=None)
        # an oracle formulation needs its backend as its master: no tangent cuts
        return probe.needs(), not isinstance(probe, OracleFormulation)

    register_method(name, method, needs_positive_reg=needs_positive_reg, losses=losses,
                    description=description or f"formulation {name!r} solved by the driver",
                    solver_needs=solver_needs, fits=fits,
                    wants_local_start=wants_local_start, replace=replace)


def method_spec(name: str) -> MethodSpec:
    """The registered engine ``name`` (:class:`~rulemip.exceptions.InvalidParameterError`
    naming the choices otherwise)."""
    spec = _METHODS.get(name)
    if spec is None:
        raise InvalidParameterError(f"`engine` must be one of {tuple(ENGINES)}; got {name!r}.")
    return spec


class _EngineNames(Sequence[str]):
    """``"auto"`` and every registered engine, read live from the registry."""

    def _names(self) -> tuple[str, ...]:
        return ("auto", *_METHODS)

    def __getitem__(self, i: Any) -> Any:
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(self._names())


ENGINES: Sequence[str] = _EngineNames()


# ---------------------------------------------------------------------- the entry point
#: An engine that enumerates every candidate box (``"cip"``, ``"cip-bnb"``), named
#: explicitly, is refused beyond this many boxes (counted by :func:`count_boxes` before
#: any is built): its exact enumeration keeps a Gram matrix of ``8·B²`` bytes (8 GiB at
#: this size) and its outer-approximation masters carry dense cuts over every box. Beyond
#: it, column generation (``"cg"``, also what ``"auto"`` picks) prices the boxes without
#: enumerating them. Issue 22: diabetes with 8 cut points per feature (about 3·10¹⁶
#: boxes) was still building boxes after 150 s at 5.2 GB under a 5 s limit.
CIP_EXPLICIT_MAX_BOXES = 32_768

_ENUMERATING_ENGINES = ("cip", "cip-bnb")


def check_engine_fits(engine: str, thresholds: Sequence[FloatArray],
                      max_rule_length: int | None, *, n_rules: int | None = None,
                      n_samples: int | None = None) -> None:
    """Refuse an explicitly named engine whose problem cannot be held in memory, before
    any work, naming the engines that can serve: an enumerating engine beyond
    :data:`CIP_EXPLICIT_MAX_BOXES` candidate boxes, and any engine whose registered size
    guard (``fits``, e.g. ``"cell-bnb"``'s) refuses it."""
    fits = method_spec(engine).fits if engine in _METHODS else None
    if fits is not None:
        fits(thresholds, max_rule_length, n_rules=n_rules, n_samples=n_samples)
    if engine not in _ENUMERATING_ENGINES:
        return
    n_boxes = count_boxes(thresholds, max_rule_length)
    if n_boxes <= CIP_EXPLICIT_MAX_BOXES:
        return
    gib = 8.0 * float(n_boxes) ** 2 / 2**30
    raise InvalidParameterError(
        f"`engine='{engine}'` enumerates every candidate box, and these thresholds give "
        f"{n_boxes:.3g} of them (more than {CIP_EXPLICIT_MAX_BOXES}; its Gram matrix alone "
        f"would need {gib:.3g} GiB). Use engine='auto' or engine='cg' (column generation "
        "prices boxes without enumerating them), or fewer boxes: a smaller "
        "`max_thresholds` or a `max_rule_length`.")


def choose_engine(engine: str, reg: float, thresholds: Sequence[FloatArray],
                  max_rule_length: int | None, *, n_rules: int | None = None,
                  loss: str | None = None, n_samples: int | None = None) -> str:
    """``"auto"``: one rule under squared loss with ``reg > 0`` by column generation,
    whose one-rule path is the exact box search (docs/explanation/box_search.md); two
    squared-loss rules of a capped length (any ``reg`` ≥ 0) by the k-box search when its
    box table fits the memory budget (the rows bound its cells; docs/explanation/
    kbox_search.md); else with ``reg > 0`` the CIP when there are at most
    ``CIP_MAX_BOXES`` candidate boxes, column generation over boxes beyond; the MIP at
    ``reg = 0``.
    A named engine is checked for applicability (``reg``, and whether its candidate
    boxes fit: :func:`check_engine_fits`; ``n_samples``, the data's rows, sharpens the
    memory estimate of a size guard)."""
    if engine not in ENGINES:
        raise InvalidParameterError(f"`engine` must be one of {tuple(ENGINES)}; got {engine!r}.")
    if engine != "auto":
        spec = method_spec(engine)
        if spec.needs_positive_reg and reg <= 0:
            raise InvalidParameterError(
                f"`engine='{engine}'` needs `reg` > 0 (the CIP uses γ = 1/reg); use "
                "engine='mip' or a small positive reg such as 1e-6.")
        check_engine_fits(engine, thresholds, max_rule_length, n_rules=n_rules,
                          n_samples=n_samples)
        return engine
    if reg > 0 and n_rules == 1 and loss == "squared":
        return "cg"
    if loss == "squared" and n_rules is not None and n_rules >= 2 and "kbox" in ENGINES \
            and kbox_fits(thresholds, max_rule_length, n_rules, n_samples or 0,
                          default_max_memory()):
        # short rules: every pair of boxes of the language is ruled out or scored
        return "kbox"
    if reg > 0:
        # beyond CIP_MAX_BOXES the boxes are not built: column generation prices them
        # (a valid bound > 0 on tables where the MIP's bound stays 0)
        return "cip" if count_boxes(thresholds, max_rule_length) <= CIP_MAX_BOXES else "cg"
    return "mip"


def check_solver(engine: str, solver: str | SolverBackend, *, loss: str = "squared",
                 reg: float = 1e-3) -> SolverBackend:
    """Resolve, before any work (warm starts included), the backend of ``solver`` for the
    chosen ``engine`` — the one resolution of a fit: pass the backend it returns on as
    ``solver`` (:func:`solve_exact`, :func:`solve` then only check its capabilities).
    A backend the engine cannot use is refused with
    :class:`~rulemip.exceptions.UnsupportedCapabilityError` or
    :class:`~rulemip.exceptions.BackendUnavailableError` naming the remedy; an engine that
    needs no solver still gets the named backend checked to exist (an unknown name or a
    missing package fails here, with the install hint)."""
    spec = method_spec(engine)
    if spec.solver_needs is None:
        return resolve_backend(solver, set(), outer_approximation=False)[0]
    needs, oa = spec.solver_needs(loss, reg)
    return resolve_backend(solver, needs, outer_approximation=oa)[0]


def solve_exact(dataset: Dataset, n_rules: int, *, loss: str = "squared", reg: float = 1e-3,
                fit_intercept: bool = True, thresholds: Sequence[FloatArray],
                max_rule_length: int | None = None, engine: str = "auto",
                solver: str | SolverBackend = "auto", time_limit: float | None = None,
                mip_gap: float = 1e-6, warm_start: RuleEnsemble | None = None,
                seed: int = 0, callback: Callback | None = None,
                budget: Budget | None = None) -> ExactResult:
    """Solve for the best ensemble of at most ``n_rules`` rules over ``thresholds`` with
    the engine ``engine`` (module docstring); ``budget`` is the fit's time budget
    (``time_limit`` may only shorten it). ``solver`` is resolved here once
    (:func:`check_solver`) and the engine receives the backend."""
    clock = Budget.coerce(budget, time_limit)
    chosen = choose_engine(engine, reg, thresholds, max_rule_length, n_rules=n_rules,
                           loss=loss, n_samples=dataset.X.shape[0])
    spec = method_spec(chosen)
    backend = check_solver(chosen, solver, loss=loss, reg=reg)
    if spec.losses is not None and loss not in spec.losses:
        raise InvalidParameterError(
            f"`engine='{chosen}'` is for {' or '.join(spec.losses)} loss; got loss={loss!r}. "
            "Use engine='cip' or 'mip'.")
    offered: dict[str, Any] = {
        "loss": loss, "reg": reg, "fit_intercept": fit_intercept,
        "thresholds": list(thresholds), "max_rule_length": max_rule_length,
        "solver": backend, "time_limit": clock.remaining(), "budget": clock,
        "mip_gap": mip_gap, "warm_start": warm_start, "seed": seed,
        "callback": with_gap(callback)}
    accepted = spec.accepted()
    kwargs = offered if accepted is None else {k: v for k, v in offered.items()
                                               if k in accepted}
    result = spec.function(dataset, n_rules, **kwargs)
    language = Language(n_rules, list(thresholds), max_rule_length, fit_intercept)
    result = checked(result, dataset, reg=reg, mip_gap=mip_gap, language=language)
    if warm_start is not None and not language.admits(warm_start):
        warm_start = None  # not a model of this problem: never the incumbent
    result = at_least_warm_start(result, dataset, warm_start, reg=reg, mip_gap=mip_gap,
                                 loss=loss, fit_intercept=fit_intercept)
    return with_time_limit_named(result, clock)


#: The budget counts as spent, for naming the limit, when at most this share of it (and at
#: least ``TIME_SPENT_FLOOR`` seconds) is left: engines stop a little before the deadline
#: rather than start a step they cannot finish.
TIME_SPENT_SHARE = 0.05
TIME_SPENT_FLOOR = 0.5


def with_time_limit_named(result: ExactResult, clock: Budget) -> ExactResult:
    """``result`` with ``limit=TIME`` instead of ``GAP`` (or none) when it is not optimal
    and its time budget is spent: a search that ran out of time — e.g. a tangent-cut loop
    whose last master was stopped by the clock, or pricing cut at its share of the time —
    stopped because of the time limit, whatever the phase that noticed it called it
    (``limit=gap`` is for a search that ended by itself with the gap open)."""
    left = clock.remaining()
    if result.is_optimal or left is None or result.limit not in (Limit.GAP, None) \
            or result.ensemble is None:
        return result
    total = (clock.deadline or 0.0) - clock.started
    if left > max(TIME_SPENT_FLOOR, TIME_SPENT_SHARE * total):
        return result
    note = (f"the time limit ended the search with the gap at {result.gap:.3g} "
            f"(reported as limit={None if result.limit is None else result.limit.value} by "
            "the phase that stopped).")
    return replace(result, limit=Limit.TIME, notes=(*result.notes, note))


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


def empty_model(dataset: Dataset, *, loss: str, reg: float,
                fit_intercept: bool) -> RuleEnsemble:
    """The ensemble with no rule: the optimal intercept (or the zero function), feasible
    for every k ≥ 0."""
    n = dataset.X.shape[0]
    fit = fit_weights(np.zeros((n, 0)), dataset.y, loss, reg, fit_intercept,
                      dataset.sample_weight)
    return RuleEnsemble([], intercept=float(fit.intercept), loss=loss,
                        classes=dataset.classes)


def at_least_warm_start(result: ExactResult, dataset: Dataset,
                        warm_start: RuleEnsemble | None, *, reg: float,
                        mip_gap: float, loss: str | None = None,
                        fit_intercept: bool = True) -> ExactResult:
    r"""Never return a model worse than the warm start, never no model, nor a bound
    below 0.

    An engine stopped by a limit may hold an incumbent worse than the warm start it was
    given (or none): the warm start, a feasible ensemble over the same candidate set, is
    then the incumbent. Without a warm start and without an incumbent, the ensemble with no
    rule (:func:`empty_model`; ``loss`` given) is: a limit returns the best known model,
    never nothing. :math:`R_\lambda \ge 0` for every loss, so a bound below 0 (a
    solver's ``-1e20`` for "unknown", say) is raised to 0. The status is decided again by
    :func:`promote`."""
    lb = result.lower_bound if math.isfinite(result.lower_bound) else 0.0
    lb = max(lb, 0.0)
    ensemble, risk, notes = result.ensemble, result.risk, result.notes
    if warm_start is None and ensemble is None and loss is not None:
        ensemble = empty_model(dataset, loss=loss, reg=reg, fit_intercept=fit_intercept)
        risk = float(ensemble.risk(dataset.X, dataset.y, reg=reg,
                                   sample_weight=dataset.sample_weight))
        notes = (*notes, "the engine found no ensemble before its limit; the model without "
                 "rules (intercept only) is the incumbent")
    elif warm_start is not None:
        warm_risk = float(warm_start.risk(dataset.X, dataset.y, reg=reg,
                                          sample_weight=dataset.sample_weight))
        if ensemble is None or warm_risk < risk - REFUTATION_TOL * max(1.0, abs(risk)):
            ensemble, risk = warm_start, warm_risk
            notes = (*notes, f"the warm start (risk {warm_risk:.10g}) is better than what "
                     "the engine found; it is the incumbent")
    if ensemble is result.ensemble and lb == result.lower_bound:
        return result
    verdict = promote(risk, lb, finished=result.is_optimal, mip_gap=mip_gap,
                      limit=result.limit, bound_valid=result.bound_valid, fallback_bound=0.0)
    return replace(result, ensemble=ensemble, risk=risk, lower_bound=verdict.lower_bound,
                   gap=verdict.gap, termination=verdict.termination, limit=verdict.limit,
                   notes=notes + verdict.notes)


def checked(result: ExactResult, dataset: Dataset, *, reg: float,
            mip_gap: float, language: Language | None = None) -> ExactResult:
    """``result`` with its ensemble's risk recomputed from the data; a claim of
    optimality the recomputed risk refutes is withdrawn (:func:`promote`, fallback bound
    0: :math:`R_\\lambda \\ge 0` for every loss). A model outside ``language``
    (:mod:`rulemip.rules.language`) is not a model of the problem, whatever the engine
    claims: it is dropped (the bound, proved over the language, stays) and the result is
    not optimal; :func:`at_least_warm_start` then supplies the incumbent."""
    if result.ensemble is None:
        return result
    bad = [] if language is None else language.violations(result.ensemble)
    if bad:
        return replace(result, ensemble=None, risk=math.inf, gap=math.inf,
                       termination=TerminationReason.FEASIBLE,
                       limit=result.limit or Limit.OTHER,
                       notes=(*result.notes, "the engine's model is outside the problem's "
                              "language (" + "; ".join(bad[:3]) + "): refused"))
    risk = float(result.ensemble.risk(dataset.X, dataset.y, reg=reg,
                                      sample_weight=dataset.sample_weight))
    same = abs(risk - result.risk) <= REFUTATION_TOL * max(1.0, abs(risk))
    if same and (not result.is_optimal or result.lower_bound <= risk):
        return result
    verdict = promote(risk, result.lower_bound, finished=result.is_optimal, mip_gap=mip_gap,
                      limit=result.limit, bound_valid=result.bound_valid, fallback_bound=0.0)
    recomputed = (f"the engine reported risk {result.risk:.12g}; recomputed from the data "
                  f"it is {risk:.12g}.",)
    notes = result.notes if same else result.notes + recomputed
    term, limit = verdict.termination, verdict.limit
    if not result.is_optimal:
        term, limit = result.termination, result.limit
    return replace(result, risk=risk, lower_bound=verdict.lower_bound, gap=verdict.gap,
                   termination=term, limit=limit, notes=notes + verdict.notes)


__all__ = [
    "CIP_EXPLICIT_MAX_BOXES",
    "ENGINES",
    "MethodSpec",
    "check_engine_fits",
    "check_solver",
    "checked",
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
    "solve_exact",
    "with_gap",
    "with_time_limit_named",
    "wrap_callback",
]
