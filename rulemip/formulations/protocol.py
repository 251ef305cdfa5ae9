"""The formulation contract: what the driver (:func:`rulemip.algorithms.solve.driver.solve`)
needs from a model of a rule-ensemble problem.

A formulation turns a dataset into a :class:`~rulemip.model.MIPModel`, a solution vector
back into a :class:`~rulemip.rules.RuleEnsemble` whose risk is recomputed from the data, and
a rule ensemble (a warm start) into a start vector. Everything else — choosing the backend,
native solve or tangent-cut outer approximation, the time budget, the status — is the
driver's. ``docs/howto/add_formulation.md`` adds one in a single file.

The model may hold loss terms and a quadratic ridge; backends that cannot take them natively
are driven by tangent cuts (:mod:`rulemip.algorithms.convex.tangent_cuts`), so a formulation never
names a backend.

Oracle formulations
-------------------
A convex integer program solved over an oracle rather than handed to a backend (the k-rule
box-selection CIP, docs/explanation/box_selection.md; its column generation,
docs/explanation/column_generation.md) implements the same members and, in addition, the
**search hook** of :class:`OracleFormulation`: ``search(built, ...)`` runs outer
approximation / enumeration / branch and bound / pricing over ``built``'s oracle, with the
backend the driver resolved as its master, and returns a :class:`SearchOutcome` — a point
of the built model and the bound it proved, *not* a status. The driver decodes that point,
recomputes its risk and decides the status exactly as for a backend's answer. Two further
optional hooks name the steps such searches are made of:

* :class:`RelaxationHook` — ``relaxation(built, ...)``: a valid lower bound from the
  continuous relaxation, with the points whose cuts may seed an integer master;
* :class:`PricingHook` — ``price(built, z, ...)``: the column (box) whose partial derivative
  at a relaxed point ``z`` is most negative, with a bound valid for every column.

Their default is *absent*: a formulation without ``search`` is a model formulation (native
or tangent cuts); one without ``relaxation``/``price`` simply has no such step.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.model.mip_model import MIPModel
from rulemip.rules.ensemble import RuleEnsemble
from rulemip.solvers.base import Capability, SolverBackend
from rulemip.solvers.result import Limit, TerminationReason

FloatArray = NDArray[np.float64]


@runtime_checkable
class BuiltModel(Protocol):
    """A built model plus what decoding needs.

    Attributes
    ----------
    model : the model handed to the backend.
    dataset : the data the model was built on (decoding recomputes the risk on it).
    bound_valid : ``False`` when the model restricts the problem by something not proved
        (e.g. a stated weight box), so its bound is no global certificate.
    notes : remarks made while building (carried into the result).
    safe_bound : a lower bound valid by construction (e.g. 0 for a nonnegative loss), used
        when a solver's bound is refuted by the recomputed risk.
    n_cells : occupied cells of the data reduction (0 if none).
    """

    model: MIPModel
    dataset: Dataset
    bound_valid: bool
    notes: list[str]

    def block(self, name: str) -> NDArray[np.int64]:
        """Column indices of the variable block ``name`` of :attr:`model`.

        A formulation's block names are part of its documented model (the interval-cover
        MIP's table in ``docs/explanation/interval_cover.md``: ``"beta"`` for the rule
        weights :math:`\beta_t` in rule order, ``"beta0"`` for the intercept), so a
        formulation that wraps another may add rows on them. Their values are in the
        model's units: the squared-loss interval cover is built on :math:`y/s` (its
        ``response_scale`` :math:`s`, docs/explanation/interval_cover.md, "Units")."""
        ...

    @property
    def safe_bound(self) -> float: ...

    @property
    def n_cells(self) -> int: ...


@runtime_checkable
class Formulation(Protocol):
    """A rule-ensemble problem as a MIP (module docstring).

    ``engine`` names it in results; :meth:`needs` lists the capabilities its model will
    need, known before building so that a backend is chosen — or refused — before any work.
    ``built`` is whatever :meth:`build_model` returned (typed ``Any`` so that a formulation
    may take its own built class).
    """

    engine: str

    def needs(self) -> set[Capability]:
        """Capabilities the built model needs from a backend solving it natively."""
        ...

    def build_model(self, dataset: Dataset, *, backend: SolverBackend, native: bool,
                    warm_start: RuleEnsemble | None) -> BuiltModel:
        """Build for ``backend`` (``native``: it takes loss terms / MIQP as they are). A
        formulation whose class sets ``budgeted_build = True`` also takes ``budget=`` (the
        fit's :class:`~rulemip.budget.Budget`) and raises
        :class:`~rulemip.budget.BudgetExpired` between blocks once it is spent."""
        ...

    def encode_start(self, built: Any, ensemble: RuleEnsemble) -> FloatArray | None:
        """A feasible start vector for ``ensemble`` (``None`` if it cannot be encoded)."""
        ...

    def decode_solution(self, built: Any, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        """``(ensemble, risk, notes)``: the rules of ``x`` and their regularized risk
        :math:`R_\\lambda` *recomputed from the data* (the driver's upper bound)."""
        ...

    def polish(self, built: Any, x: FloatArray) -> FloatArray | None:
        """Repair a master's point into a point feasible for *this* formulation's model
        (every row it added included), or ``None`` when it cannot (tangent cuts)."""
        ...


@dataclass(frozen=True)
class SearchOutcome:
    """What an oracle formulation's :meth:`~OracleFormulation.search` hands the driver —
    the same facts a backend's answer carries, never a status (the driver decides it once,
    :func:`rulemip.solvers.status.promote`).

    Attributes
    ----------
    x : the incumbent, a point of ``built`` (``None``: none found); decoded by the driver.
    lower_bound : the bound the search proved on the optimal :math:`R_\\lambda` over the
        formulation's whole candidate set (``-inf``: none).
    finished : the search ended by itself (exhaustive, converged, settled), not at a limit.
    limit : the limit that stopped it, if any.
    method : how it searched (``"enumeration"``, ``"oa"``, ``"bnb"``, ``"pricing"``, …).
    backend, backend_version : the master's backend (``""`` when no solver ran).
    iterations : OA iterations, nodes, supports or pricing rounds.
    objective : the search's own value at ``x`` (the driver notes a disagreement with
        the risk recomputed from the data); ``nan`` if not known.
    built : the built model ``x`` belongs to when the search replaced it (column
        generation grows its working set); ``None``: the one :meth:`build_model` returned.
    no_solution : the termination reported when ``x`` is ``None``.
    payload : the engine's own record, handed on by a family's ``decide`` (the pruning
        family's ``PruningResult.detail``).
    """

    x: FloatArray | None
    lower_bound: float = -math.inf
    finished: bool = False
    limit: Limit | None = None
    method: str = ""
    backend: str = ""
    backend_version: str = ""
    iterations: int = 0
    objective: float = math.nan
    notes: tuple[str, ...] = ()
    history: tuple[dict[str, Any], ...] = ()
    built: Any = None
    no_solution: TerminationReason = TerminationReason.NO_SOLUTION_FOUND
    payload: Any = None


@runtime_checkable
class OracleFormulation(Formulation, Protocol):
    """A formulation solved over its oracle by its own search (module docstring): the
    driver resolves the backend (``needs()`` with no tangent-cut fallback), builds,
    encodes the warm start, calls :meth:`search` within the fit's budget, then decodes and
    promotes the outcome like any other."""

    def search(self, built: Any, *, backend: SolverBackend, budget: Budget, mip_gap: float,
               start: FloatArray | None, warm_start: RuleEnsemble | None, seed: int,
               threads: int | None, callback: Callable[[dict[str, Any]], Any] | None
               ) -> SearchOutcome:
        """The oracle / separation hook: search ``built`` for the best point and a valid
        bound, within ``budget``, with ``backend`` as the master (if one is needed)."""
        ...


@dataclass(frozen=True)
class RelaxationBound:
    """A lower bound from the continuous relaxation and the points whose cuts recycle
    into an integer master (:class:`RelaxationHook`)."""

    bound: float
    points: tuple[FloatArray, ...] = ()
    iterations: int = 0
    #: ``(q(z), ∇q(z))`` at each of ``points`` when known (else they are re-evaluated)
    cuts: tuple[tuple[float, FloatArray], ...] = ()


@runtime_checkable
class RelaxationHook(Protocol):
    """Optional: the continuous relaxation of an oracle formulation."""

    def relaxation(self, built: Any, *, backend: SolverBackend, budget: Budget,
                   seed: int = 0, threads: int | None = None) -> RelaxationBound:
        """A bound valid for the problem (a relaxation's bound) and its cut points."""
        ...


@dataclass(frozen=True)
class PricedColumn:
    """What :class:`PricingHook` found at a relaxed point: the best column's bounds per
    feature (``None``: no candidate column exists), its value :math:`|c_b|`, an upper
    bound on that value over every column (valid also when the search was stopped) and
    whether that bound was proved by an exact search."""

    lower: FloatArray | None
    upper: FloatArray | None
    value: float
    bound: float
    exact: bool


@runtime_checkable
class PricingHook(Protocol):
    """Optional: the pricing step of column generation over an oracle formulation."""

    def price(self, built: Any, z: FloatArray, *, budget: Budget) -> PricedColumn:
        """The column whose partial derivative at ``z`` is most negative."""
        ...


__all__ = ["BuiltModel", "Formulation", "OracleFormulation", "PricedColumn", "PricingHook",
           "RelaxationBound", "RelaxationHook", "SearchOutcome"]
