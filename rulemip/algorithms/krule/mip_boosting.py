r"""MIP-boosting: idealized boosting by the interval-cover MIP ([GAP] §4.1,
docs/explanation/interval_cover.md).

Round :math:`m = 1..k` solves the interval-cover MIP with :math:`m` rules in which rules
:math:`t < m` are fixed to the previous round's solution (their :math:`r, p, z` columns
fixed through :meth:`~rulemip.model.MIPModel.set_bounds`); only rule :math:`m` is free. So
each round adds the single rule that lowers :math:`R_\lambda` the most:

* ``variant="stagewise"``: the earlier weights and the intercept are fixed too (the
  intercept at the best constant :math:`f^{(0)}`, docs/explanation/boosting.md); round :math:`m`
  solves
  :math:`\min_{q, \beta} R_\lambda(f^{(m-1)} + \beta q)` exactly;
* ``variant="corrective"``: the earlier weights (and the intercept) stay free, so round
  :math:`m` picks the rule that is best *after* re-optimizing all weights.

Every round is a certified solve (its lower bound is valid for that round's problem), so
the sequence is the idealized boosting of [GAP] §3 — e.g. on :math:`D(k, \Delta)` it
reproduces Lemma 2's risk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice
from rulemip.algorithms.solve.driver import solve
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.formulations.interval_cover import BuiltIntervalCover, FixedRules, IntervalCoverMIP
from rulemip.formulations.result import ExactResult
from rulemip.losses import get_loss
from rulemip.rules import RuleEnsemble
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.base import Capability, SolverBackend, resolve_backend
from rulemip.solvers.result import TerminationReason

VARIANTS = ("stagewise", "corrective")


@dataclass(frozen=True)
class MIPBoostingRound:
    """One round of MIP-boosting: the ensemble after the round, its recomputed risk
    :math:`R_\\lambda` (UB), the round's valid lower bound and its status."""

    round: int
    ensemble: RuleEnsemble | None
    risk: float
    bound: float
    status: TerminationReason
    result: ExactResult

    @property
    def is_optimal(self) -> bool:
        return self.status is TerminationReason.OPTIMAL


class RoundFormulation:
    """One round of MIP-boosting as a formulation for the driver
    (:func:`rulemip.algorithms.solve.driver.solve`): ``problem`` built with the earlier rounds'
    rules ``fixed``; it keeps the built model and the backend's point for the next round
    (``x`` is ``None`` when the backend found none and the driver decoded the start)."""

    engine = "mip"

    def __init__(self, problem: IntervalCoverMIP, fixed: FixedRules | None) -> None:
        self.problem = problem
        self.fixed = fixed
        self.built: BuiltIntervalCover | None = None
        self.start: NDArray[np.float64] | None = None
        self.x: NDArray[np.float64] | None = None

    def needs(self) -> set[Capability]:
        return self.problem.needs()

    def build_model(self, dataset: Dataset, *, backend: SolverBackend, native: bool,
                    warm_start: RuleEnsemble | None = None) -> BuiltIntervalCover:
        self.built = self.problem.build_for(dataset, backend, native, fixed=self.fixed)
        return self.built

    def encode_start(self, built: BuiltIntervalCover, ensemble: RuleEnsemble
                     ) -> NDArray[np.float64] | None:
        self.start = self.problem.encode_start(built, ensemble)
        return self.start

    def decode_solution(self, built: BuiltIntervalCover, x: NDArray[np.float64]
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        self.x = None if x is self.start else np.asarray(x, dtype=float)
        return self.problem.decode_solution(built, x)

    def polish(self, built: BuiltIntervalCover, x: NDArray[np.float64]
               ) -> NDArray[np.float64] | None:
        return self.problem.polish(built, x)


def mip_boosting(problem: KRuleProblem, *, variant: str = "stagewise",
                 solver: str | SolverBackend = "auto",
                 time_limit_per_round: float | None = None, mip_gap: float = 1e-6,
                 seed: int = 0, threads: int | None = None,
                 weight_bound: float | None = None, callback: Any = None
                 ) -> list[MIPBoostingRound]:
    """Run ``problem.n_rules`` rounds of MIP-boosting (module docstring), each round's
    rule in the problem's language.

    Parameters
    ----------
    problem : the data, the risk :math:`R_\\lambda` (docs/explanation/notation.md), the
        number of rounds *k* and the language of the rules.
    variant : ``"stagewise"`` (earlier weights fixed) or ``"corrective"`` (free).
    solver : backend name, ``"auto"`` or backend object; MILP backends run the tangent-cut
        driver.
    time_limit_per_round : seconds per round (the round's incumbent and bound are kept).

    Returns
    -------
    list of :class:`MIPBoostingRound`, one per round.
    """
    k = problem.n_rules
    check_choice(variant, "variant", VARIANTS)
    dataset, reg, fit_intercept = problem.dataset, problem.reg, problem.fit_intercept
    lo = get_loss(problem.loss)
    rounds: list[MIPBoostingRound] = []
    fixed: FixedRules | None = None
    if variant == "stagewise":
        c0 = lo.best_constant(np.asarray(dataset.y), dataset.sample_weight) \
            if fit_intercept else None
        fixed = FixedRules(np.zeros((0, 0)), np.zeros((0, 0)), np.zeros(0), c0)
    prev_x: np.ndarray | None = None
    prev_built: BuiltIntervalCover | None = None
    prev_weights: np.ndarray | None = None
    backend: SolverBackend | None = None
    for m in range(1, k + 1):
        model = IntervalCoverMIP(problem.with_rules(m).language, loss=lo.name, reg=reg,
                                 symmetry_breaking=False, weight_bound=weight_bound)
        if backend is None:  # once per run: every round's model needs the same
            backend = resolve_backend(solver, model.needs())[0]
        if prev_x is not None and prev_built is not None:
            r = np.round(prev_x[prev_built.block("r")])
            p = np.round(prev_x[prev_built.block("p")])
            if variant == "stagewise":
                assert fixed is not None and prev_weights is not None
                fixed = FixedRules(r, p, prev_weights, fixed.intercept)
            else:
                fixed = FixedRules(r, p, None, None)
        elif fixed is not None:
            # round 1, stagewise: no fixed rules yet, the intercept fixed at f^(0)
            probe = model.build(dataset, linearization="bigm")
            S = int(probe.offsets[-1])
            fixed = FixedRules(np.zeros((0, S)), np.zeros((0, S)), np.zeros(0),
                               fixed.intercept)
        # warm start: the previous model plus the new rule as the all-covering box with
        # its best weight (feasible; its risk is at most the previous round's)
        this_round = RoundFormulation(model, fixed)
        result = solve(this_round, dataset, solver=backend,
                       budget=Budget.from_time_limit(time_limit_per_round),
                       mip_gap=mip_gap, warm_start=RuleEnsemble([], 0.0, lo.name),
                       callback=callback, seed=seed, threads=threads)
        rounds.append(MIPBoostingRound(m, result.ensemble, result.risk, result.lower_bound,
                                    result.termination, result))
        if this_round.x is None or result.ensemble is None:
            break
        # the next round fixes this round's covers (and, stagewise, its decoded weights)
        prev_x = this_round.x
        prev_built = this_round.built
        prev_weights = result.ensemble.weights
    return rounds


def boosting_risks(rounds: list[MIPBoostingRound]) -> list[float]:
    """The risk path :math:`R_\\lambda(f^{(1)}), …` of a MIP-boosting run (``inf`` for a
    round that found no solution)."""
    return [r.risk if r.ensemble is not None else math.inf for r in rounds]


__all__ = ["VARIANTS", "MIPBoostingRound", "RoundFormulation", "boosting_risks", "mip_boosting"]

