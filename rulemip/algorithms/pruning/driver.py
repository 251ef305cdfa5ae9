r"""One driver for the tree-pruning family (docs/explanation/tree_pruning.md): the engines'
registry, :func:`solve_pruning` and the one :func:`decide`.

A pruning engine is an oracle formulation of CIP (2) — select nodes ``z`` of a tree
ensemble under :math:`\sum_i a_i z_i \le K` minimizing
:math:`q(z) = \tfrac12 y^\top (I + \gamma \sum_i z_i M_i M_i^\top)^{-1} y` — in the shape of
the k-rule family's :class:`~rulemip.formulations.protocol.OracleFormulation`: it builds a
:class:`PruningProblem` from the nodes and the response, its ``search`` returns a
:class:`~rulemip.formulations.protocol.SearchOutcome` (a selection, a proved bound,
finished or limit, its own record as ``payload``) and never a status; ``decode`` turns the
outcome into the selected nodes and their weights. :func:`decide` — the family's only
status rule — recomputes :math:`q` from the data at the decoded selection and decides the
status once by :func:`rulemip.solvers.status.promote` (fallback bound 0: :math:`q \ge 0`);
an engine without a bound (the regularization path) is a heuristic: ``feasible``, no
gap. The built-in engines ``"exact"``, ``"path"`` and ``"relax_round"`` register
themselves in :mod:`rulemip.algorithms.pruning.engines`, as a third-party one would, with
:func:`register_pruning_engine`; this module imports none of them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.result import PruningResult
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.solvers.result import Limit, TerminationReason
from rulemip.solvers.status import Verdict, promote

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
Callback = Callable[[dict[str, Any]], Any]
Selection = tuple[IntArray, FloatArray]

__all__ = ["PRUNING_ENGINES", "PruningFit", "PruningFormulation", "PruningProblem", "decide",
           "drop_null_columns", "register_pruning_engine", "run_pruning", "solve_pruning",
           "status_of"]


@dataclass
class PruningProblem:
    """The built model of a pruning engine: the candidate nodes, the (standardized)
    response, the budget and the oracle of CIP (2) (:class:`TreePruningCIP`)."""

    nodes: NodeMatrix
    y: FloatArray
    max_cost: float
    attribute: str
    gamma: float
    cip: TreePruningCIP
    notes: list[str] = field(default_factory=list)
    bound_valid: bool = True
    #: a bound valid by construction: q ≥ 0 (I + γ Σ z_i M_i M_iᵀ is positive definite)
    safe_bound: float = 0.0

    def point(self, S: Any) -> FloatArray:
        z = np.zeros(self.nodes.n_nodes)
        z[np.asarray(S, dtype=np.int64)] = 1.0
        return z


class PruningFormulation(Protocol):
    """A registered pruning engine (module docstring)."""

    engine: str

    def search(self, built: PruningProblem, *, solver: Any, budget: Budget, mip_gap: float,
               callback: Callback | None) -> SearchOutcome:
        """Search ``built`` within ``budget``; the selection as a 0/1 point ``x``."""
        ...

    def decode(self, built: PruningProblem, outcome: SearchOutcome) -> Selection:
        """The selected nodes and their weights (on the standardized response)."""
        ...

    def limit_warning(self, result: PruningResult) -> str | None:
        """What a :class:`~rulemip.exceptions.SolveLimitWarning` says about ``result``
        (``None``: nothing to warn about)."""
        ...

    def fitted_attributes(self, built: PruningProblem, outcome: SearchOutcome
                          ) -> tuple[dict[str, Any], dict[str, list[Selection]]]:
        """Engine-specific estimator attributes: values, and lists of selections the
        estimator turns into rule ensembles (e.g. the regularization path's models)."""
        ...


PRUNING_ENGINES: dict[str, Callable[..., PruningFormulation]] = {}
PRUNING_DESCRIPTIONS: dict[str, str] = {}


def register_pruning_engine(name: str, factory: Callable[..., PruningFormulation], *,
                            description: str = "") -> None:
    """Register a pruning engine: ``factory(**settings)`` returns the formulation
    (settings: those :func:`solve_pruning` was given beyond its own parameters)."""
    if not isinstance(name, str) or not name:
        raise InvalidParameterError(f"an engine name must be a non-empty string; got {name!r}.")
    PRUNING_ENGINES[name] = factory
    PRUNING_DESCRIPTIONS[name] = description


def drop_null_columns(nodes: NodeMatrix, S: Any, w: Any) -> Selection:
    """Drop selected nodes whose column is zero (their weight is 0 and they change
    nothing but the rule count; ties can select them when their cost is 0)."""
    S = np.asarray(S, dtype=np.int64)
    w = np.asarray(w, dtype=float)
    live = np.diff(nodes.M.indptr)[S] > 0 if S.size else np.zeros(0, dtype=bool)
    return S[live], w[live]


@dataclass(frozen=True)
class PruningFit:
    """What :func:`solve_pruning` returns: the status (:class:`PruningResult`), the
    selection (nodes ``support``, ``weights`` on the standardized response, its
    ``objective`` q), the warning to issue, and the engine's estimator attributes."""

    result: PruningResult
    support: IntArray
    weights: FloatArray
    objective: float
    warning: str | None = None
    attributes: dict[str, Any] = dataclasses.field(default_factory=dict)
    model_lists: dict[str, list[Selection]] = dataclasses.field(default_factory=dict)


def status_of(objective: float, outcome: SearchOutcome, *, mip_gap: float,
              bound_valid: bool = True, safe_bound: float = 0.0,
              warn: bool = False) -> Verdict:
    """The family's status rule: :func:`~rulemip.solvers.status.promote` on ``objective``
    (q recomputed from the data at the outcome's selection) and the outcome's bound,
    ``finished`` and ``limit``; a refuted bound falls back to ``safe_bound`` (0: q ≥ 0).
    :func:`decide` applies it to every engine; ``prune_exact`` applies it to its own
    result (``warn=True``: its callers get the
    :class:`~rulemip.solvers.status.RefutedBoundWarning`), so that the public function
    and the engine ``"exact"`` are decided by the same rule."""
    return promote(float(objective), outcome.lower_bound, finished=outcome.finished,
                   mip_gap=mip_gap, limit=outcome.limit, bound_valid=bound_valid,
                   fallback_bound=safe_bound, warn=warn)


def decide(formulation: PruningFormulation, built: PruningProblem, outcome: SearchOutcome,
           *, mip_gap: float, wall_time: float) -> PruningFit:
    """The one decode and the one status of every pruning engine (module docstring)."""
    S, w = drop_null_columns(built.nodes, *formulation.decode(built, outcome))
    objective = float(built.cip.value(built.point(S)))
    wall = float(getattr(outcome.payload, "wall_time", wall_time))
    common: dict[str, Any] = {"wall_time": wall, "engine": formulation.engine,
                              "bound_valid": built.bound_valid, "detail": outcome.payload}
    notes = (*built.notes, *outcome.notes)
    if outcome.x is None:
        result = PruningResult(value=math.inf, lower_bound=outcome.lower_bound, gap=math.inf,
                               termination=outcome.no_solution, limit=outcome.limit,
                               notes=notes, **common)
    elif not math.isfinite(outcome.lower_bound):
        # a heuristic without a bound: a feasible selection, no gap
        result = PruningResult(value=objective, lower_bound=-math.inf,
                               gap=math.inf,
                               termination=TerminationReason.FEASIBLE, limit=outcome.limit,
                               notes=notes, **common)
    else:
        verdict = status_of(objective, outcome, mip_gap=mip_gap,
                            bound_valid=built.bound_valid, safe_bound=built.safe_bound)
        result = PruningResult(value=objective, lower_bound=verdict.lower_bound,
                               gap=verdict.gap, termination=verdict.termination,
                               limit=verdict.limit, notes=(*notes, *verdict.notes), **common)
    attributes, lists = formulation.fitted_attributes(built, outcome)
    return PruningFit(result=result, support=S, weights=w, objective=objective,
                      warning=formulation.limit_warning(result), attributes=attributes,
                      model_lists={k: [drop_null_columns(built.nodes, *m) for m in v]
                                   for k, v in lists.items()})


def solve_pruning(nodes: NodeMatrix, y: FloatArray, *, engine: str = "exact",
                  max_cost: float, attribute: str = "rule", gamma: float = 1.0,
                  solver: Any = "auto", budget: Budget | None = None, mip_gap: float = 1e-4,
                  callback: Callback | None = None, **settings: Any) -> PruningFit:
    """Select nodes for CIP (2) with the registered ``engine`` (module docstring): build,
    search within ``budget``, :func:`decide`.

    Parameters
    ----------
    nodes, y : candidate rules and the response as the engine sees it (standardized by
        the estimator).
    max_cost, attribute, gamma : the budget :math:`\\sum_i a_i z_i \\le K`, the cost
        :math:`a_i` and the ridge γ = 1/λ.
    solver : the backend name (or object) for the engines' (I)LPs.
    budget : the selection's clock; mip_gap : the relative gap certified as optimal.
    settings : the engine's own settings (e.g. ``n_lambdas`` of the path).
    """
    if engine not in PRUNING_ENGINES:
        raise InvalidParameterError(f"unknown pruning engine {engine!r}; registered: "
                                    f"{sorted(PRUNING_ENGINES)}.")
    return run_pruning(PRUNING_ENGINES[engine](**settings), nodes, y, max_cost=max_cost,
                       attribute=attribute, gamma=gamma, solver=solver, budget=budget,
                       mip_gap=mip_gap, callback=callback)


def run_pruning(formulation: PruningFormulation, nodes: NodeMatrix, y: FloatArray, *,
                max_cost: float, attribute: str = "rule", gamma: float = 1.0,
                solver: Any = "auto", budget: Budget | None = None, mip_gap: float = 1e-4,
                callback: Callback | None = None) -> PruningFit:
    """:func:`solve_pruning` with the engine's ``formulation`` itself (an engine not
    registered: :func:`rulemip.testing.check_engine`)."""
    clock = budget if budget is not None else Budget.from_time_limit(None)
    built = PruningProblem(nodes, np.asarray(y, dtype=float), float(max_cost), attribute,
                           float(gamma), TreePruningCIP(nodes.M, y, gamma))
    outcome = formulation.search(built, solver=solver, budget=clock, mip_gap=mip_gap,
                                 callback=callback)
    if not nodes.complete:
        outcome = _over_a_subset(outcome, built)
    return decide(formulation, built, outcome, mip_gap=mip_gap, wall_time=clock.elapsed())


def _over_a_subset(outcome: SearchOutcome, built: PruningProblem) -> SearchOutcome:
    """A budget stopped the extraction (:attr:`NodeMatrix.complete` False): the selection is
    feasible (its nodes are the ensemble's), but a bound over a subset of the nodes bounds
    only that subset's problem, so the bound is the one valid by construction (q ≥ 0) and
    the search counts as stopped by the time limit."""
    nodes = built.nodes
    built.notes.append(
        f"the time limit stopped the node extraction after {nodes.trees_extracted} of "
        f"{nodes.trees_total} trees: the selection is among their nodes, and the bound is "
        f"the one valid for every selection, q >= {built.safe_bound:g}.")
    return dataclasses.replace(outcome, lower_bound=min(outcome.lower_bound, built.safe_bound),
                               finished=False, limit=Limit.TIME)
