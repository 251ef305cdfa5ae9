r"""The engine registries behind ``engine=`` and the choice of an engine.

:func:`register_method` adds a function with the signature of
:func:`~rulemip.algorithms.fit_plan.solve_exact`'s keywords (it receives those it
accepts), :func:`register_formulation` adds a formulation solved by
:func:`rulemip.algorithms.solve.driver.solve`. The built-in engines register themselves in
their own modules (``rulemip/algorithms/__init__.py`` imports them). :func:`choose_engine`
is ``engine="auto"`` and the applicability checks of a named engine,
:func:`check_solver` the one resolution of a fit's backend. ``docs/architecture.md``
draws the whole picture.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.budget import Budget, default_max_memory
from rulemip.data import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.protocol import Formulation, OracleFormulation
from rulemip.formulations.result import ExactResult
from rulemip.formulations.sizes import CIP_MAX_BOXES, count_boxes, kbox_fits
from rulemip.rules import RuleEnsemble
from rulemip.solvers.base import Capability, SolverBackend, resolve_backend

FloatArray = NDArray[np.float64]
Callback = Callable[[dict[str, Any]], Any]
Method = Callable[..., ExactResult]

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
    #: the keywords the function takes, declared (a formulation's method); ``None``: read
    #: from its signature (an engine of the deprecated :func:`register_method`)
    keywords: frozenset[str] | None = None

    def accepted(self) -> set[str] | None:
        """Keyword names the function takes (``None``: it takes ``**kwargs``)."""
        if self.keywords is not None:
            return set(self.keywords)
        params = inspect.signature(self.function).parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return None
        return {p.name for p in params}


_METHODS: dict[str, MethodSpec] = {}

#: what the method of a registered formulation receives (:func:`register_formulation`)
FORMULATION_KEYWORDS = frozenset({"loss", "reg", "fit_intercept", "thresholds",
                                  "max_rule_length", "solver", "budget", "mip_gap",
                                  "warm_start", "seed", "callback"})


#: what a formulation asks of a solver, declared: a set of capabilities or a function of
#: ``(loss, reg)`` returning one (:func:`register_formulation`)
StaticNeeds = AbstractSet[Capability] | Callable[[str, float], AbstractSet[Capability]]


def register_method(name: str, function: Method, *, needs_positive_reg: bool = False,
                    losses: Sequence[str] | None = None, description: str = "",
                    solver_needs: Callable[[str, float], tuple[set[Capability], bool]]
                    | None = None, fits: SizeCheck | None = None,
                    wants_local_start: bool = True, replace: bool = False) -> None:
    """Deprecated (a ``FutureWarning``; it still works): every engine is a formulation —
    register it with :func:`register_formulation`
    (docs/howto/add_formulation.md). Makes ``function`` available as ``engine=name`` in
    :func:`~rulemip.algorithms.fit_plan.solve_exact`.

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
    warnings.warn("`register_method` is deprecated and will be removed: every engine is a "
                  "formulation; register one with `register_formulation` "
                  "(docs/howto/add_formulation.md).", FutureWarning, stacklevel=2)
    _register(name, function, needs_positive_reg=needs_positive_reg, losses=losses,
              description=description, solver_needs=solver_needs, fits=fits,
              wants_local_start=wants_local_start, replace=replace)


def _register(name: str, function: Method, *, needs_positive_reg: bool = False,
              losses: Sequence[str] | None = None, description: str = "",
              solver_needs: Callable[[str, float], tuple[set[Capability], bool]]
              | None = None, fits: SizeCheck | None = None,
              wants_local_start: bool = True, replace: bool = False,
              keywords: frozenset[str] | None = None) -> None:
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
                                solver_needs, fits, bool(wants_local_start), keywords)


def register_formulation(name: str, factory: Callable[..., Formulation], *,
                         needs_positive_reg: bool = False,
                         losses: Sequence[str] | None = None, description: str = "",
                         fits: SizeCheck | None = None, wants_local_start: bool = True,
                         replace: bool = False,
                         needs: StaticNeeds | None = None, oracle: bool | None = None
                         ) -> None:
    """Make a formulation available as ``engine=name``, solved by :func:`solve`
    (the keywords as for :func:`register_method`).

    ``factory(n_rules, loss=, reg=, fit_intercept=, thresholds=, max_rule_length=)``
    returns the formulation (a formulation class with that constructor qualifies);
    ``fits`` is its size guard (:func:`register_method`).

    ``needs`` declares what the formulation asks of a solver — a set of capabilities, or
    ``needs(loss, reg)`` returning one — and ``oracle`` whether it is an
    :class:`~rulemip.formulations.protocol.OracleFormulation` (its backend is its master:
    no tangent cuts), so that checking a solver builds nothing. Without them the registry
    builds a probe formulation and asks its ``needs()`` (what a third-party formulation
    gets without declaring).
    """
    if (needs is None) != (oracle is None):
        raise InvalidParameterError(
            "`needs` and `oracle` are declared together (what the formulation asks of a "
            "solver, and whether it is an oracle formulation).")
    def method(dataset: Dataset, n_rules: int, *, loss: str, reg: float,
               fit_intercept: bool, thresholds: Sequence[FloatArray],
               max_rule_length: int | None, solver: str | SolverBackend, budget: Budget,
               mip_gap: float, warm_start: RuleEnsemble | None, seed: int,
               callback: Callback | None) -> ExactResult:
        from rulemip.algorithms.solve.driver import solve  # the driver imports this module

        formulation = factory(n_rules, loss=loss, reg=reg, fit_intercept=fit_intercept,
                              thresholds=list(thresholds), max_rule_length=max_rule_length)
        return solve(formulation, dataset, solver=solver, budget=budget, mip_gap=mip_gap,
                     warm_start=warm_start, callback=callback, seed=seed)

    def solver_needs(loss: str, reg: float) -> tuple[set[Capability], bool]:
        if needs is not None:
            declared = needs(loss, reg) if callable(needs) else needs
            return set(declared), not oracle
        probe = factory(1, loss=loss, reg=reg if reg > 0 else 1e-3, fit_intercept=True,
                        thresholds=None, max_rule_length=None)
        # an oracle formulation needs its backend as its master: no tangent cuts
        return probe.needs(), not isinstance(probe, OracleFormulation)

    _register(name, method, needs_positive_reg=needs_positive_reg, losses=losses,
              description=description or f"formulation {name!r} solved by the driver",
              solver_needs=solver_needs, fits=fits, wants_local_start=wants_local_start,
              replace=replace, keywords=FORMULATION_KEYWORDS)


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


# ---------------------------------------------------------------------- choosing an engine
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


__all__ = [
    "CIP_EXPLICIT_MAX_BOXES",
    "ENGINES",
    "MethodSpec",
    "check_engine_fits",
    "check_solver",
    "choose_engine",
    "method_spec",
    "register_formulation",
    "register_method",
]
