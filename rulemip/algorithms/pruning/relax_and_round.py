r"""Relax-and-round for tree pruning ([PRUNE] App. D, Alg. 4; docs/explanation/tree_pruning.md).

**Relaxation.**  Replace ``z ∈ {0,1}^m`` by ``z ∈ [0,1]^m`` in CIP (2) (budgeted:
``Σ a_i z_i ≤ K``) or in problem (16) (penalized: objective ``q(z) + λ Σ a_i z_i``).  The
conflicts are written as one row per root-to-leaf path, ``Σ_{j ∈ path} z_j ≤ 1``: the
paths are the maximal cliques of the conflict graph, which is perfect (a comparability
graph), so these rows describe exactly the convex hull of the feasible antichains — a
relaxation at least as tight as the pairwise rows ``z_i + z_j ≤ 1`` or the aggregated rows
(16a), and with far fewer rows.  ``q`` is convex on [0,1]^m (a matrix-fractional
function).  Two solvers:

* ``relaxation="frank_wolfe"``: pairwise Frank–Wolfe with an exact line search
  and an exact linear minimization oracle — the forest DP over antichains (the path
  polytope is integral), with the budget row handled by an exact Lagrangian breakpoint
  search (:mod:`rulemip.algorithms.convex.frank_wolfe`).  Its upper value is ``q`` at the
  iterate, its lower bound the best Frank–Wolfe gap bound
  ``f(z) + min_{s∈P} ∇f(z)ᵀ(s − z)``, valid at every iteration.
* ``relaxation="oa"`` (default): outer approximation with LP masters (D.2, eq. 19):
  :class:`~rulemip.algorithms.convex.outer_approximation.OuterApproximation` with
  ``OAOptions(relax=True)``; its master bound is the lower bound.

Either lower bound is a valid lower bound on the relaxation, hence on the integer problem.
OA stays the default: on realistic ensembles (100 trees, n = 700) Frank–Wolfe gets much
closer to the relaxation optimum, but that optimum is tiny (≈ 10 against integer values
≈ 1000: the perspective relaxation is weak when ‖M_i‖² ≫ 1/γ), and rounding the spread
fractional point gives far worse models than the OA run, whose best relaxed point is the
greedy warm start (``docs/benchmarks/pruning_paths.md``).

**Rounding.**  With ``ζ`` the relaxed solution, solve the knapsack with conflict graph
(ILP (17)): ``max Σ ζ_i z_i`` over binary antichains of the forest, plus ``Σ a_i z_i ≤ K``
when budgeted — exactly by the forest DP (integer costs), or by the FPTAS (``fptas_eps``,
or non-integer costs; value ≥ (1 − ε)·OPT of (17)).  Entries ``ζ_i ≤ 1e-9`` count as 0 so
that solver noise selects nothing.  The rounded support is refit by ridge (w_S).  The
result is a heuristic solution (feasible, not certified optimal); the relaxation value is
a lower bound on the optimum.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import is_real as _real
from rulemip.algorithms.convex.frank_wolfe import ForestLMO, FWIteration, frank_wolfe_relaxation
from rulemip.algorithms.convex.outer_approximation import OAOptions, OuterApproximation
from rulemip.algorithms.pruning.exact import clique_pruning_model, greedy_prune
from rulemip.algorithms.pruning.knapsack_conflicts import (
    forest_knapsack,
    forest_knapsack_fptas,
    forest_penalized,
)
from rulemip.budget import Budget
from rulemip.exceptions import InvalidDataError, InvalidParameterError
from rulemip.formulations.node_matrix import NodeMatrix
from rulemip.formulations.tree_pruning import TreePruningCIP
from rulemip.model import MIPModel
from rulemip.solvers.result import TerminationReason

__all__ = ["RelaxRoundResult", "relax_and_round", "relaxation_model"]

FloatArray = NDArray[np.float64]
_ZETA_ZERO = 1e-9


@dataclass(frozen=True)
class RelaxRoundResult:
    """Result of :func:`relax_and_round` (see the module docstring)."""

    z: FloatArray
    support: NDArray[np.int64]
    weights: FloatArray
    value: float
    relaxation_value: float
    relaxation_lower_bound: float
    z_relaxed: FloatArray
    wall_time: float
    relaxation_converged: bool = True
    relaxation_upper: float = math.nan
    cost: float = 0.0
    rounding: str = ""
    relaxation_termination: str = ""
    relaxation_iterations: int = 0
    relaxation: str = "oa"
    relaxation_history: tuple[FWIteration, ...] = ()


class _Penalized:
    """Oracle of ``q(z) + λ aᵀz`` (convex; the linear term is carried exactly by the cuts)."""

    def __init__(self, base: TreePruningCIP, lam: float, a: FloatArray) -> None:
        self.base, self.lam, self.a = base, lam, a

    def value_and_gradient(self, z: FloatArray) -> tuple[float, FloatArray]:
        v, g = self.base.value_and_gradient(z)
        return v + self.lam * float(self.a @ z), g + self.lam * self.a

    def value(self, z: FloatArray) -> float:
        return self.value_and_gradient(z)[0]


def relaxation_model(nodes: NodeMatrix, n_rules: float | None = None,
                     attribute: str = "rule") -> MIPModel:
    """Feasible set of the relaxation: ``z`` in [0,1] (declared binary; relax it), one row
    ``Σ_{j∈path} z_j ≤ 1`` per root-to-leaf path, and ``Σ a_i z_i ≤ K`` if ``n_rules``
    (:func:`~rulemip.algorithms.pruning.exact.clique_pruning_model`)."""
    model = clique_pruning_model(nodes, n_rules, attribute)
    model.name = "relax_and_round"
    return model


def relax_and_round(nodes: NodeMatrix, y: NDArray[np.float64], *, n_rules: float | None = None,
                    lam: float | None = None, attribute: str = "rule", gamma: float = 1.0,
                    fptas_eps: float | None = None,
                    solver: str = "auto", rel_tol: float = 1e-6,
                    abs_tol: float = 1e-9, relaxation: str = "oa",
                    max_iter: int = 2000, budget: Budget | None = None) -> RelaxRoundResult:
    r"""Alg. 4 of [PRUNE]: solve the convex relaxation, round by the knapsack DP, refit.

    Parameters
    ----------
    nodes : candidate nodes; y : (n,) response used as given (center it first).
    n_rules : budget K of ``Σ a_i z_i ≤ K`` (budgeted CIP (2)); exclusive with ``lam``.
    lam : penalty λ ≥ 0 of problem (16); exclusive with ``n_rules``.
    attribute : node cost a_i (``"rule"``, ``"depth"``, ``"feature"``).
    gamma : ridge parameter γ > 0.
    fptas_eps : use the FPTAS with this ε ∈ (0, 1) for the budgeted rounding (also used,
        with ε = 0.05, when the costs are not integers).
    solver : LP backend of the OA masters (unused by Frank–Wolfe).
    rel_tol, abs_tol : stopping tolerance of the relaxation: converged when
        ``upper − lower ≤ max(abs_tol·max(1, yᵀy), rel_tol·|upper|)`` (FW) or at the OA
        engine's tolerance (OA).
    relaxation : ``"oa"`` (outer approximation with LP masters; default) or
        ``"frank_wolfe"`` (pairwise FW with an exact LMO).
    max_iter : iteration cap of Frank–Wolfe.
    budget : the fit's :class:`~rulemip.budget.Budget` (None: unlimited); the relaxation's
        loop asks it. When it stops the relaxation early, ζ is the best relaxed point
        found (for OA possibly the greedy warm start itself: then ``rounding`` says so and
        the result is the greedy model).

    Returns
    -------
    RelaxRoundResult : ``value`` = q(z) (+ λ·cost) of the rounded, feasible selection (a
        heuristic, never certified optimal); ``relaxation_value`` = the relaxed objective
        at ``z_relaxed`` (feasible for the relaxation: an upper bound of its optimum, equal
        to it within the tolerance when ``relaxation_converged``; same as
        ``relaxation_upper``); ``relaxation_lower_bound`` = a valid lower bound of the
        relaxation, hence of the integer optimum (FW gap bound, or OA master bound);
        ``relaxation_history`` = the FW iterations (empty for OA).
    """
    t0 = time.perf_counter()
    if (n_rules is None) == (lam is None):
        raise InvalidParameterError("give exactly one of `n_rules` (budgeted) or `lam` "
                                    "(penalized).")
    if n_rules is not None and not (_real(n_rules) and n_rules >= 0):
        raise InvalidParameterError(f"`n_rules` must be >= 0; got {n_rules}.")
    if lam is not None and not (_real(lam) and math.isfinite(lam)
                                and lam >= 0):
        raise InvalidParameterError(f"`lam` must be >= 0; got {lam}.")
    if fptas_eps is not None and not 0 < fptas_eps < 1:
        raise InvalidParameterError(f"`fptas_eps` must be in (0, 1); got {fptas_eps}.")
    if relaxation not in ("frank_wolfe", "oa"):
        raise InvalidParameterError("`relaxation` must be 'frank_wolfe' or 'oa'; "
                                    f"got {relaxation!r}.")
    yv = np.asarray(y, dtype=float).reshape(-1)
    if not np.all(np.isfinite(yv)):
        raise InvalidDataError("`y` must be finite.")
    clock = Budget.coerce(budget, None)
    base = TreePruningCIP(nodes.M, yv, gamma)
    a = nodes.attribute(attribute)  # type: ignore[arg-type]
    m = nodes.n_nodes
    z_greedy = None
    history: tuple[FWIteration, ...] = ()
    if relaxation == "frank_wolfe":
        lmo = ForestLMO(nodes.parent, a, None if n_rules is None else float(n_rules))
        fw = frank_wolfe_relaxation(base, lmo, lin=None if lam is None else float(lam) * a,
                                    budget=clock, max_iter=max_iter,
                                    rel_tol=rel_tol, abs_tol=abs_tol * max(1.0, base.yty))
        zr = np.clip(fw.z, 0.0, 1.0)
        lower = fw.lower_bound
        converged = fw.converged
        termination, iterations, history = fw.termination, fw.iterations, fw.history
    else:
        oracle: TreePruningCIP | _Penalized = (base if lam is None
                                               else _Penalized(base, float(lam), a))
        model = relaxation_model(nodes, n_rules, attribute)
        opts = OAOptions(relax=True, budget=clock, solver=solver, rel_tol=rel_tol,
                         abs_tol=abs_tol * max(1.0, base.yty))
        oa = OuterApproximation(oracle, model, "z", opts, lower_bound_hint=0.0)
        oa.add_cut_at(np.zeros(m))
        if n_rules is not None:
            z_greedy = greedy_prune(base, nodes, n_rules, attribute)
            oa.add_cut_at(z_greedy)
        res = oa.run()
        if res.z is None:
            raise InvalidDataError(f"the relaxation found no point ({res.termination.value}).")
        converged = res.termination is TerminationReason.OPTIMAL
        zr = np.clip(res.z, 0.0, 1.0)
        lower = float(res.lower_bound)
        termination = res.termination.value + (f"/{res.limit.value}" if res.limit else "")
        iterations = res.iterations
    relax_upper = base.value(zr) + (0.0 if lam is None else float(lam) * float(a @ zr))
    lower = min(lower, relax_upper)
    zeta = np.where(zr > _ZETA_ZERO, zr, 0.0)
    if n_rules is None:
        _, zb = forest_penalized(zeta, nodes.parent)
        how = "forest_penalized"
    elif fptas_eps is None and np.allclose(a, np.round(a)):
        _, zb = forest_knapsack(zeta, np.round(a).astype(np.int64),
                                math.floor(n_rules + 1e-9), nodes.parent)
        how = "forest_knapsack"
    else:
        eps = 0.05 if fptas_eps is None else float(fptas_eps)
        _, zb = forest_knapsack_fptas(zeta, a, float(n_rules), nodes.parent, eps)
        how = f"forest_knapsack_fptas(eps={eps})"
    if z_greedy is not None and np.array_equal(zr, z_greedy):
        how += " (ζ = the greedy warm start: the relaxation found no better point)"
    zb = np.asarray(zb, dtype=float)
    S, w = base.weights(zb)
    cost = float(a @ zb)
    value = base.value(zb) + (0.0 if lam is None else float(lam) * cost)
    return RelaxRoundResult(z=zb, support=S.astype(np.int64), weights=w, value=value,
                            relaxation_value=float(relax_upper),
                            relaxation_lower_bound=float(lower), z_relaxed=zr,
                            wall_time=time.perf_counter() - t0,
                            relaxation_converged=converged,
                            relaxation_upper=float(relax_upper), cost=cost, rounding=how,
                            relaxation_termination=termination,
                            relaxation_iterations=iterations, relaxation=relaxation,
                            relaxation_history=history)
