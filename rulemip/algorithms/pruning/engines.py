r"""The built-in pruning engines, registered with
:func:`~rulemip.algorithms.pruning.driver.register_pruning_engine` (docs/explanation/
tree_pruning.md):

``"exact"``
    Alg. 1 of [PRUNE] (:func:`~rulemip.algorithms.pruning.exact.prune_exact`: seed cuts →
    LP relaxation → integer outer approximation); its bound is the masters'.
``"path"``
    The penalized problem (4) over a descending grid of λ by cyclic block coordinate
    descent (:func:`rulemip.algorithms.pruning.cbcd.regularization_path`); the model kept is the
    one of largest cost within the budget, among those the least training risk. A
    heuristic: no bound.
``"relax_round"``
    The convex relaxation rounded by the knapsack-with-conflicts dynamic program
    (:func:`rulemip.algorithms.pruning.relax_and_round.relax_and_round`); the relaxation's bound is
    valid (it contains every selection).
``"perspective"``
    Best-first branch and bound with the perspective relaxation through its dual, the
    hierarchy and the budget inside (:func:`rulemip.algorithms.pruning.perspective_bnb.
    perspective_bnb`); its bound is the least open node's (docs/explanation/
    tree_pruning.md, "The perspective bound"). Warm start: greedy with local search; every
    new rounding of a node's relaxed point is improved by the same local search.
``"mip"``
    Problem (1) as a convex MIQP (:class:`~rulemip.formulations.tree_pruning.
    TreePruningMIP`) solved natively by a backend that takes it (SCIP); the backend's dual
    bound is the bound.

Each searches within the fit's budget and hands its own record to the driver as the
outcome's ``payload``; the driver decodes and decides the status
(:func:`~rulemip.algorithms.pruning.driver.decide`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from rulemip.algorithms.pruning.driver import (
    Callback,
    PruningProblem,
    Selection,
    register_pruning_engine,
)
from rulemip.budget import Budget
from rulemip.formulations.protocol import SearchOutcome
from rulemip.formulations.result import PruningResult
from rulemip.solvers.result import Limit, TerminationReason, budget_limit

__all__ = ["ExactPruning", "MIQPPruning", "PathPruning", "PerspectivePruning",
           "RelaxRoundPruning", "choose_path_model"]


def _limit(budget: Budget) -> Limit | None:
    return budget_limit(budget) if budget.expired() else None


class ExactPruning:
    """Engine ``"exact"`` (module docstring)."""

    engine = "exact"

    def __init__(self, **settings: Any) -> None:
        self.settings = settings  # the other engines' settings are not this one's

    def search(self, built: PruningProblem, *, solver: Any, budget: Budget, mip_gap: float,
               callback: Callback | None) -> SearchOutcome:
        # looked up at call time (a module attribute), so that it can be observed
        from rulemip.algorithms.convex.outer_approximation import OAOptions
        from rulemip.algorithms.pruning import exact as pe

        res, _ = pe.prune_exact(built.nodes, built.y, built.max_cost, attribute=built.attribute,
                                gamma=built.gamma, mip_gap=float(mip_gap), budget=budget,
                                options=OAOptions(solver=solver, callback=callback))
        return SearchOutcome(x=res.z, lower_bound=res.lower_bound, finished=res.converged,
                             limit=res.limit, method="oa", backend=res.backend,
                             backend_version=res.backend_version, iterations=res.iterations,
                             objective=res.value, notes=tuple(res.notes), history=res.history,
                             no_solution=res.termination, payload=res)

    def decode(self, built: PruningProblem, outcome: SearchOutcome) -> Selection:
        z = outcome.x if outcome.x is not None else np.zeros(built.nodes.n_nodes)
        return built.cip.weights(np.round(z))

    def limit_warning(self, result: PruningResult) -> str | None:
        if result.termination is TerminationReason.OPTIMAL:
            return None
        limit = "" if result.limit is None else f" ({result.limit} limit)"
        return (f"exact pruning stopped before proving optimality{limit}; the incumbent is "
                f"returned with lower bound {result.lower_bound:.6g} and relative gap "
                f"{result.gap:.3g}.")

    def fitted_attributes(self, built: PruningProblem, outcome: SearchOutcome
                          ) -> tuple[dict[str, Any], dict[str, list[Selection]]]:
        return {}, {}


def choose_path_model(path: Any, max_cost: float) -> int:
    """The index of the path model of largest cost within ``max_cost``, among those the
    least training risk; -1 when none fits."""
    best, key = -1, (-math.inf, -math.inf)
    for k, pm in enumerate(path.models):
        cost = float(pm.cost)
        if cost <= max_cost + 1e-9 and (cost, -float(pm.train_risk)) > key:
            best, key = k, (cost, -float(pm.train_risk))
    return best


class PathPruning:
    """Engine ``"path"`` (module docstring); ``n_lambdas`` values of λ."""

    engine = "path"

    def __init__(self, n_lambdas: int = 50, **settings: Any) -> None:
        self.n_lambdas = int(n_lambdas)

    def search(self, built: PruningProblem, *, solver: Any, budget: Budget, mip_gap: float,
               callback: Callback | None) -> SearchOutcome:
        from rulemip.algorithms.pruning.cbcd import regularization_path

        # the paper's separable block updates only: on 100 depth-3 trees, n = 500, the
        # extra exact profiled sweeps took 35 s instead of 1.9 s for objectives ~1 % lower
        path = regularization_path(built.nodes, built.y, n_lambdas=self.n_lambdas,
                                   attribute=built.attribute, gamma=built.gamma,
                                   budget=budget, solver=solver, exact_blocks=False)
        best = choose_path_model(path, built.max_cost)
        S = path.models[best].support if best >= 0 else np.zeros(0, dtype=np.int64)
        limit = _limit(budget)
        return SearchOutcome(x=built.point(S), finished=limit is None, limit=limit,
                             method="path", iterations=len(path.models),
                             notes=("the regularization path is a heuristic: no bound",),
                             payload=path)

    def decode(self, built: PruningProblem, outcome: SearchOutcome) -> Selection:
        path = outcome.payload
        best = choose_path_model(path, built.max_cost)
        if best < 0:  # no model within the budget: the empty rule set
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        pm = path.models[best]
        return np.asarray(pm.support, dtype=np.int64), np.asarray(pm.weights, dtype=float)

    def limit_warning(self, result: PruningResult) -> str | None:
        if result.limit is None:
            return None
        path = result.detail
        return (f"the regularization path stopped at the time limit after "
                f"{len(path.models)} of {len(path.lambdas)} lambda values.")

    def fitted_attributes(self, built: PruningProblem, outcome: SearchOutcome
                          ) -> tuple[dict[str, Any], dict[str, list[Selection]]]:
        path = outcome.payload
        return ({"path_": path, "path_index_": choose_path_model(path, built.max_cost)},
                {"path_models_": [(pm.support, pm.weights) for pm in path.models]})


class RelaxRoundPruning:
    """Engine ``"relax_round"`` (module docstring)."""

    engine = "relax_round"

    def __init__(self, **settings: Any) -> None:
        self.settings = settings

    def search(self, built: PruningProblem, *, solver: Any, budget: Budget, mip_gap: float,
               callback: Callback | None) -> SearchOutcome:
        from rulemip.algorithms.pruning.relax_and_round import relax_and_round

        res = relax_and_round(built.nodes, built.y, max_cost=built.max_cost,
                              attribute=built.attribute, gamma=built.gamma, budget=budget,
                              solver=solver)
        limit = _limit(budget)
        return SearchOutcome(x=built.point(res.support),
                             lower_bound=float(res.relaxation_lower_bound),
                             finished=limit is None, limit=limit, method="relax_round",
                             payload=res)

    def decode(self, built: PruningProblem, outcome: SearchOutcome) -> Selection:
        res = outcome.payload
        return np.asarray(res.support, dtype=np.int64), np.asarray(res.weights, dtype=float)

    def limit_warning(self, result: PruningResult) -> str | None:
        if result.limit is not Limit.TIME and result.limit is not Limit.NODE:
            return None
        return ("relax-and-round stopped at the time limit; the relaxation bound may be "
                "loose and the rounded selection is a heuristic.")

    def fitted_attributes(self, built: PruningProblem, outcome: SearchOutcome
                          ) -> tuple[dict[str, Any], dict[str, list[Selection]]]:
        return {}, {}


class PerspectivePruning:
    """Engine ``"perspective"`` (module docstring); ``node_iterations`` Frank–Wolfe
    iterations per branch-and-bound node."""

    engine = "perspective"

    def __init__(self, node_iterations: int = 300, **settings: Any) -> None:
        self.node_iterations = int(node_iterations)

    def search(self, built: PruningProblem, *, solver: Any, budget: Budget, mip_gap: float,
               callback: Callback | None) -> SearchOutcome:
        from threadpoolctl import threadpool_limits

        from rulemip.algorithms.pruning.exact import local_search_improver, local_search_prune
        from rulemip.algorithms.pruning.perspective_bnb import perspective_bnb

        with threadpool_limits(limits=1, user_api="blas"):
            improve = local_search_improver(built.nodes, built.y, built.max_cost,
                                            attribute=built.attribute, gamma=built.gamma,
                                            budget=budget)
            z0, _ = local_search_prune(built.nodes, built.y, built.max_cost,
                                       attribute=built.attribute, gamma=built.gamma,
                                       budget=budget)
            res = perspective_bnb(built.nodes, built.y, built.max_cost,
                                  attribute=built.attribute, gamma=built.gamma,
                                  budget=budget, mip_gap=float(mip_gap),
                                  warm_starts=[np.flatnonzero(z0 > 0.5)], improve=improve,
                                  callback=callback, node_iterations=self.node_iterations)
        return SearchOutcome(x=res.z, lower_bound=res.lower_bound, finished=res.finished,
                             limit=res.limit, method="bnb", iterations=res.nodes,
                             objective=res.value, payload=res)

    def decode(self, built: PruningProblem, outcome: SearchOutcome) -> Selection:
        z = outcome.x if outcome.x is not None else np.zeros(built.nodes.n_nodes)
        return built.cip.weights(np.round(z))

    def limit_warning(self, result: PruningResult) -> str | None:
        return ExactPruning().limit_warning(result)

    def fitted_attributes(self, built: PruningProblem, outcome: SearchOutcome
                          ) -> tuple[dict[str, Any], dict[str, list[Selection]]]:
        return {}, {}


class MIQPPruning:
    """Engine ``"mip"`` (module docstring); ``complementarity`` as in
    :class:`~rulemip.formulations.tree_pruning.TreePruningMIP`."""

    engine = "mip"

    def __init__(self, complementarity: str = "indicator", **settings: Any) -> None:
        self.complementarity = complementarity

    def search(self, built: PruningProblem, *, solver: Any, budget: Budget, mip_gap: float,
               callback: Callback | None) -> SearchOutcome:
        from rulemip.formulations.tree_pruning import TreePruningMIP
        from rulemip.solvers.base import required_capabilities, resolve_backend
        from rulemip.solvers.result import SolveOptions

        mip = TreePruningMIP(built.nodes, built.y, built.max_cost, attribute=built.attribute,
                             gamma=built.gamma, complementarity=self.complementarity)
        model = mip.build()
        sf = model.to_standard_form()
        backend = resolve_backend(solver, required_capabilities(sf),
                                  outer_approximation=False)[0]
        res = backend.solve(sf, SolveOptions(time_limit=budget.remaining(), mip_gap=mip_gap,
                                             node_limit=budget.work_left(),
                                             iteration_limit=budget.iteration_limit()))
        budget.charge_solve(res.nodes, res.iterations)
        z = None if res.x is None else mip.decode(model, res.x)[0]
        return SearchOutcome(
            x=z, lower_bound=float(res.bounds.dual),
            finished=res.termination in (TerminationReason.OPTIMAL, TerminationReason.FEASIBLE),
            limit=res.limit, method="native", backend=res.backend,
            backend_version=res.backend_version, iterations=int(res.nodes or 0),
            notes=tuple(res.notes), no_solution=res.termination, payload=res)

    def decode(self, built: PruningProblem, outcome: SearchOutcome) -> Selection:
        z = outcome.x if outcome.x is not None else np.zeros(built.nodes.n_nodes)
        return built.cip.weights(np.round(z))  # the ridge refit: q(z), at most (1)'s value

    def limit_warning(self, result: PruningResult) -> str | None:
        return ExactPruning().limit_warning(result)

    def fitted_attributes(self, built: PruningProblem, outcome: SearchOutcome
                          ) -> tuple[dict[str, Any], dict[str, list[Selection]]]:
        return {}, {}


register_pruning_engine("exact", ExactPruning,
                        description="Alg. 1: seed cuts, LP relaxation, integer OA")
register_pruning_engine("path", PathPruning,
                        description="regularization path by block coordinate descent")
register_pruning_engine("relax_round", RelaxRoundPruning,
                        description="convex relaxation rounded by the knapsack DP")
register_pruning_engine("perspective", PerspectivePruning,
                        description="branch and bound on the perspective bound's dual")
register_pruning_engine("mip", MIQPPruning,
                        description="problem (1) as a convex MIQP, solved by the backend")
