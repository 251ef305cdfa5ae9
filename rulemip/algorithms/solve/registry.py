r"""The engine registry behind ``engine=`` and the choice of an engine.

The registry maps a name to ``factory(problem) -> Formulation``
(:class:`~rulemip.rules.problem.KRuleProblem`,
:class:`~rulemip.formulations.protocol.Formulation`): :func:`register_formulation` adds
one; the fit's engine phase builds the formulation of its problem and hands it to the
driver (:func:`rulemip.algorithms.solve.driver.solve`). An engine that is not a model
for a backend — a search of its own — is an
:class:`~rulemip.formulations.protocol.OracleFormulation` (``search`` returns what it
found, the driver decides the status). The built-in engines register themselves in their
own modules (``rulemip/algorithms/__init__.py`` imports them). :func:`choose_engine` is
``engine="auto"`` and the applicability checks of a named engine, :func:`engine_backend`
the one resolution of a fit's backend. ``docs/architecture.md`` draws the whole picture.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from rulemip.budget import default_max_memory
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.protocol import Formulation, OracleFormulation
from rulemip.formulations.sizes import CIP_MAX_BOXES, count_boxes, kbox_fits
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.base import Capability, SolverBackend, resolve_backend

#: an engine's factory: the formulation of one problem
Factory = Callable[[KRuleProblem], Formulation]
#: an engine's size guard (``EngineSpec.fits``): raises
#: :class:`~rulemip.exceptions.InvalidParameterError` naming alternatives, else returns
SizeCheck = Callable[[KRuleProblem], None]
#: what a formulation asks of a solver, declared: a set of capabilities or a function of
#: ``(loss, reg)`` returning one (:func:`register_formulation`)
StaticNeeds = AbstractSet[Capability] | Callable[[str, float], AbstractSet[Capability]]


@dataclass(frozen=True)
class EngineSpec:
    """A registered engine: its factory and what it requires of the problem.

    Attributes
    ----------
    factory : ``factory(problem) -> Formulation``.
    needs_positive_reg : refused at ``reg = 0`` (:func:`choose_engine`).
    losses : the losses it serves (``None``: every loss).
    needs, oracle : what its formulation asks of a solver (``None``: asked of a probe
        formulation of the problem) and whether it is an oracle formulation (its backend
        is its master: no tangent cuts).
    fits : ``fits(problem)`` refuses, before any work, a problem whose size the engine
        cannot hold (:func:`check_engine_fits`).
    wants_local_start : the engine profits from the fit's local phase before it (rule
        swaps from several starts, the best the warm start); an exhaustive search that
        meets the best models first by itself (``"kbox"``) declares False.
    """

    name: str
    factory: Factory
    needs_positive_reg: bool = False
    losses: tuple[str, ...] | None = None
    description: str = ""
    needs: StaticNeeds | None = None
    oracle: bool | None = None
    fits: SizeCheck | None = None
    wants_local_start: bool = True

    def solver_needs(self, problem: KRuleProblem) -> tuple[set[Capability], bool]:
        """What the engine's formulation of ``problem`` needs from a solver, and whether
        outer approximation (tangent cuts) may serve."""
        if self.needs is not None:
            declared = self.needs(problem.loss, problem.reg) if callable(self.needs) \
                else self.needs
            return set(declared), not self.oracle
        probe = self.factory(problem)
        return probe.needs(), not isinstance(probe, OracleFormulation)


_ENGINES: dict[str, EngineSpec] = {}


def register_formulation(name: str, factory: Factory, *, needs_positive_reg: bool = False,
                         losses: Sequence[str] | None = None, description: str = "",
                         fits: SizeCheck | None = None, wants_local_start: bool = True,
                         replace: bool = False, needs: StaticNeeds | None = None,
                         oracle: bool | None = None) -> None:
    """Make ``factory(problem) -> Formulation`` available as ``engine=name``
    (:class:`EngineSpec` for the keywords). ``needs`` declares what the formulation asks
    of a solver — a set of capabilities, or ``needs(loss, reg)`` returning one — and
    ``oracle`` whether it is an :class:`~rulemip.formulations.protocol.OracleFormulation`,
    so that checking a solver builds nothing; without them the registry asks a probe
    formulation of the problem."""
    if not isinstance(name, str) or not name or name == "auto":
        raise InvalidParameterError(
            f"an engine name must be a non-empty string other than 'auto'; got {name!r}.")
    if name in _ENGINES and not replace:
        raise InvalidParameterError(
            f"engine {name!r} is already registered; pass replace=True to override.")
    if not callable(factory):
        raise InvalidParameterError(f"`factory` must be callable; got {factory!r}.")
    if (needs is None) != (oracle is None):
        raise InvalidParameterError(
            "`needs` and `oracle` are declared together (what the formulation asks of a "
            "solver, and whether it is an oracle formulation).")
    _ENGINES[name] = EngineSpec(name, factory, needs_positive_reg,
                                None if losses is None else tuple(losses),
                                description or f"formulation {name!r} solved by the driver",
                                needs, oracle, fits, bool(wants_local_start))


def unregister(name: str) -> None:
    """Remove the engine ``name`` (a test's or a plugin's; a no-op when absent)."""
    _ENGINES.pop(name, None)


def engine_spec(name: str) -> EngineSpec:
    """The registered engine ``name`` (:class:`~rulemip.exceptions.InvalidParameterError`
    naming the choices otherwise)."""
    spec = _ENGINES.get(name)
    if spec is None:
        raise InvalidParameterError(f"`engine` must be one of {tuple(ENGINES)}; got {name!r}.")
    return spec


class _EngineNames(Sequence[str]):
    """``"auto"`` and every registered engine, read live from the registry."""

    def _names(self) -> tuple[str, ...]:
        return ("auto", *_ENGINES)

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


def check_engine_fits(engine: str, problem: KRuleProblem) -> None:
    """Refuse an explicitly named engine whose problem cannot be held in memory, before
    any work, naming the engines that can serve: an enumerating engine beyond
    :data:`CIP_EXPLICIT_MAX_BOXES` candidate boxes, and any engine whose registered size
    guard (``fits``, e.g. ``"cell-bnb"``'s) refuses it."""
    fits = engine_spec(engine).fits if engine in _ENGINES else None
    if fits is not None:
        fits(problem)
    if engine not in _ENUMERATING_ENGINES:
        return
    n_boxes = count_boxes(problem.language)
    if n_boxes <= CIP_EXPLICIT_MAX_BOXES:
        return
    gib = 8.0 * float(n_boxes) ** 2 / 2**30
    raise InvalidParameterError(
        f"`engine='{engine}'` enumerates every candidate box, and these thresholds give "
        f"{n_boxes:.3g} of them (more than {CIP_EXPLICIT_MAX_BOXES}; its Gram matrix alone "
        f"would need {gib:.3g} GiB). Use engine='auto' or engine='cg' (column generation "
        "prices boxes without enumerating them), or fewer boxes: a smaller "
        "`max_thresholds` or a `max_rule_length`.")


def choose_engine(engine: str, problem: KRuleProblem) -> str:
    """``"auto"``: one rule under squared loss with ``reg > 0`` by column generation,
    whose one-rule path is the exact box search (docs/explanation/box_search.md); two
    squared-loss rules of a capped length (any ``reg`` ≥ 0) by the k-box search when its
    box table fits the memory budget (the rows bound its cells; docs/explanation/
    kbox_search.md); else with ``reg > 0`` the CIP when there are at most
    ``CIP_MAX_BOXES`` candidate boxes, column generation over boxes beyond; the MIP at
    ``reg = 0``.
    A named engine is checked for applicability (``reg``, the loss, and whether its
    candidate boxes fit: :func:`check_engine_fits`)."""
    if engine not in ENGINES:
        raise InvalidParameterError(f"`engine` must be one of {tuple(ENGINES)}; got {engine!r}.")
    reg, loss, k = problem.reg, problem.loss, problem.n_rules
    if engine != "auto":
        spec = engine_spec(engine)
        if spec.needs_positive_reg and reg <= 0:
            raise InvalidParameterError(
                f"`engine='{engine}'` needs `reg` > 0 (the CIP uses γ = 1/reg); use "
                "engine='mip' or a small positive reg such as 1e-6.")
        if spec.losses is not None and loss not in spec.losses:
            raise InvalidParameterError(
                f"`engine='{engine}'` is for {' or '.join(spec.losses)} loss; got "
                f"loss={loss!r}. Use engine='cip' or 'mip'.")
        check_engine_fits(engine, problem)
        return engine
    if reg > 0 and k == 1 and loss == "squared":
        return "cg"
    if loss == "squared" and k >= 2 and "kbox" in ENGINES \
            and kbox_fits(problem.language, problem.dataset.X.shape[0], default_max_memory()):
        # short rules: every pair of boxes of the language is ruled out or scored
        return "kbox"
    if reg > 0:
        # beyond CIP_MAX_BOXES the boxes are not built: column generation prices them
        # (a valid bound > 0 on tables where the MIP's bound stays 0)
        return "cip" if count_boxes(problem.language) <= CIP_MAX_BOXES else "cg"
    return "mip"


def engine_backend(engine: str, solver: str | SolverBackend,
                   problem: KRuleProblem) -> SolverBackend:
    """Resolve, before any work (warm starts included), the backend of ``solver`` for the
    chosen ``engine`` on ``problem`` — the one resolution of a fit: the backend it
    returns is passed on to the driver, which then only checks its capabilities.
    A backend the engine cannot use is refused with
    :class:`~rulemip.exceptions.UnsupportedCapabilityError` or
    :class:`~rulemip.exceptions.BackendUnavailableError` naming the remedy; an engine that
    needs no solver still gets the named backend checked to exist (an unknown name or a
    missing package fails here, with the install hint)."""
    needs, oa = engine_spec(engine).solver_needs(problem)
    return resolve_backend(solver, needs, outer_approximation=oa)[0]


__all__ = [
    "CIP_EXPLICIT_MAX_BOXES",
    "ENGINES",
    "EngineSpec",
    "Factory",
    "SizeCheck",
    "check_engine_fits",
    "choose_engine",
    "engine_backend",
    "engine_spec",
    "register_formulation",
    "unregister",
]
