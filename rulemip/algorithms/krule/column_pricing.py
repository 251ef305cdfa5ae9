r"""Pricing for column generation over the box-selection CIP
(docs/explanation/column_generation.md, steps 1-3): the growing working set of boxes, the
restricted relaxation over it, pricing by the rule search and the Farley-type bound valid
at every round. The engine that drives it is :mod:`rulemip.algorithms.krule.column_generation`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.convex.outer_approximation import OAOptions, OuterApproximation
from rulemip.boosting.objectives import make_objective
from rulemip.boosting.search import find_rule
from rulemip.boosting.space import SearchSpace
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.formulations.box_oracles import CandidateBoxes
from rulemip.formulations.box_selection import BoxSelectionCIP, BoxSelectionProblem
from rulemip.formulations.cells import CellReduction
from rulemip.formulations.protocol import PricingHook
from rulemip.losses import get_loss
from rulemip.rules.language import Language
from rulemip.solvers.base import SolverBackend
from rulemip.solvers.result import relative_gap

FloatArray = NDArray[np.float64]

#: share of a pricing round's budget (time and work left) the restricted relaxation's outer
#: approximation gets (docs/architecture.md, "Time shares")
RELAXATION_SHARE: float = 0.25
IntArray = NDArray[np.int64]


class WorkingSet:
    """Boxes generated so far, as threshold-group ranges with their cell covers; admitted
    are the boxes of ``language`` (its rule length cap; with its intercept, not the
    all-covering box)."""

    def __init__(self, cells: CellReduction, language: Language) -> None:
        self.cells = cells
        self.n_groups = np.array([len(t) + 1 for t in cells.thresholds], dtype=np.int64)
        self.max_rule_length = language.max_rule_length
        self.fit_intercept = language.fit_intercept
        self.lower: list[IntArray] = []
        self.upper: list[IntArray] = []
        self.covers: list[NDArray[np.bool_]] = []
        self._keys: set[bytes] = set()

    def __len__(self) -> int:
        return len(self.covers)

    def add_bounds(self, lower: Sequence[float] | FloatArray,
                   upper: Sequence[float] | FloatArray) -> bool:
        """Add the box ``lower_j < x_j <= upper_j`` (bounds snapped to the nearest cut
        point); False when it is not a new admissible box (same cover as one in the set,
        empty, all-covering with an intercept, or too many restricted features)."""
        d = len(self.n_groups)
        a = np.zeros(d, dtype=np.int64)
        u = self.n_groups - 1
        for j in range(d):
            t = self.cells.thresholds[j]
            if len(t) == 0:
                continue
            if math.isfinite(lower[j]):
                a[j] = int(np.argmin(np.abs(t - lower[j]))) + 1
            if math.isfinite(upper[j]):
                u[j] = int(np.argmin(np.abs(t - upper[j])))
        restricted = int(np.sum((a > 0) | (u < self.n_groups - 1)))
        if self.max_rule_length is not None and restricted > self.max_rule_length:
            return False
        g = self.cells.groups
        cover = np.all((g >= a) & (g <= u), axis=1)
        if not cover.any() or (self.fit_intercept and cover.all()):
            return False
        key = np.packbits(cover).tobytes()
        if key in self._keys:
            return False
        self._keys.add(key)
        self.lower.append(a)
        self.upper.append(u)
        self.covers.append(cover)
        return True

    def candidate_boxes(self) -> CandidateBoxes:
        d = len(self.n_groups)
        if not self.covers:
            return CandidateBoxes(np.zeros((0, d), dtype=np.int64),
                                  np.zeros((0, d), dtype=np.int64),
                                  np.zeros((self.cells.n_cells, 0), dtype=bool), self.n_groups)
        return CandidateBoxes(np.asarray(self.lower), np.asarray(self.upper),
                              np.column_stack(self.covers), self.n_groups)


def _row_gradient(prob: BoxSelectionProblem, z: FloatArray, dataset: Dataset) -> FloatArray:
    """:math:`w_i l'(f_i, y_i)` of every row at the optimal fit for ``z`` (0 for rows of
    weight 0)."""
    S, beta, b0 = prob.oracle.fit(z)
    f_cell = b0 + prob.boxes.cover[:, S].astype(float) @ beta
    rows = prob.cells.cell_of_row
    f = np.where(rows >= 0, f_cell[np.maximum(rows, 0)], 0.0)
    lo = get_loss(prob.loss)
    y = lo.check_labels(np.asarray(dataset.y))
    return np.where(rows >= 0, dataset.weights * lo.gradient(f, y), 0.0)


def farley_bound(value: float, grad: FloatArray, z: FloatArray, k: int,
                 best_column: float, reg: float, total_weight: float) -> float:
    r"""The bound of the module docstring (step 3): :math:`R(\bar z) - g^\top \bar z +
    k \min(0, -G^{*2}/(4\lambda W))` with ``best_column`` :math:`= G^*`."""
    g_min = -(best_column ** 2) / (4.0 * reg * total_weight)
    return float(value - grad @ z + k * min(0.0, g_min, float(grad.min(initial=0.0))))


def _price_exactly(space: SearchSpace, objective: Any, max_len: int | None,
                   fit_intercept: bool, budget: Budget) -> Any:
    """Exact pricing (step 3): the rule search by branch and bound on the gradient-sum
    ``objective`` over ``space`` within ``budget``; its ``bound`` holds for every box."""
    return find_rule(space, objective, max_rule_length=max_len,
                     allow_empty=not fit_intercept, budget=budget)


class _Pricer:
    """Steps 1-3 of the module docstring over a growing working set; keeps the best Farley
    bound, the pricing counts and whether pricing converged (no box prices out)."""

    def __init__(self, cip: BoxSelectionCIP, dataset: Dataset, cells: CellReduction,
                 work: WorkingSet, space: SearchSpace, *, solver: str | SolverBackend,
                 seed: int, beam_width: int, max_columns: int, bound: float,
                 callback: Callable[[dict[str, Any]], None] | None, clock: Budget,
                 pricing: PricingHook, built: Any) -> None:
        self.cip, self.dataset, self.cells, self.work, self.space = \
            cip, dataset, cells, work, space
        # the problem's parts, from the CIP priced
        self.n_rules, self.reg, self.fit_intercept = cip.n_rules, cip.reg, cip.fit_intercept
        self.max_len, self.solver, self.seed = cip.max_rule_length, solver, seed
        self.beam_width, self.max_columns = beam_width, max_columns
        self.callback, self.clock = callback, clock
        #: exact pricing is the formulation's :class:`PricingHook` on its built model
        self.pricing, self.built = pricing, built
        self.prob = cip.problem_over(dataset, cells, work.candidate_boxes(), budget=clock)
        self.bound = max(self.prob.bound, bound)
        self.z = np.zeros(len(work))
        self.cuts: list[FloatArray] = []
        self.rounds = self.priced_exactly = 0
        self.converged = False
        #: risk of the best *model* known (a warm start or an integer phase's ensemble);
        #: the restricted relaxation's value R(z̄) is not a model's risk and never goes here
        self.incumbent = math.inf

    def refresh(self) -> BoxSelectionProblem:
        """Rebuild the problem after boxes were added from outside (rule swaps)."""
        grown = len(self.work) - len(self.z)
        if grown > 0:
            self.z = np.append(self.z, np.zeros(grown))
            self.cuts = [np.append(c, np.zeros(grown)) for c in self.cuts]
            self.prob = self.cip.problem_over(self.dataset, self.cells,
                                              self.work.candidate_boxes())
        return self.prob

    def run(self, share: Budget) -> None:
        """Price within ``share`` (a budget derived from the fit's), until convergence or
        the column cap."""
        self.refresh()
        cells, reg = self.cells, self.reg
        while len(self.work) < self.max_columns:
            if share.expired():
                return
            share.charge()                  # a pricing round is a unit of work
            if len(self.work):
                self.z = _restricted_relaxation(self.prob, self.cuts, self.z, share,
                                                self.solver, self.seed)
            value, grad = self.prob.oracle.value_and_gradient(self.z)
            objective = make_objective("gs", _row_gradient(self.prob, self.z, self.dataset))
            best_inside = float(-grad.min(initial=0.0))
            # cheap pricing first (beam search: columns, no bound); branch and bound only
            # when the beam finds nothing that prices out — it proves that, or finds one
            found: Any = find_rule(self.space, objective, search="beam",
                                   beam_width=self.beam_width, max_rule_length=self.max_len,
                                   allow_empty=not self.fit_intercept, budget=share)
            exact = found is None or not _prices_out(found.value, best_inside, reg,
                                                     cells.total_weight)
            if exact:
                self.built.problem = self.prob   # the point z̄ is one of this problem
                col = self.pricing.price(self.built, self.z, budget=share)
                found = None if col.lower is None else col
            self.rounds += 1
            if found is None:  # no candidate box at all
                self.converged = True
                return
            if exact:
                self.priced_exactly += 1
                self.bound = max(self.bound, farley_bound(
                    value, grad, self.z, self.n_rules, found.bound, reg, cells.total_weight))
            if self.callback is not None:
                self.callback({"iteration": self.rounds, "ub": self.incumbent,
                               "lb": self.bound,
                               "gap": relative_gap(self.incumbent, self.bound),
                               "relaxation": value, "time": self.clock.elapsed(),
                               "columns": len(self.work)})
            if not _prices_out(found.value, best_inside, reg, cells.total_weight):
                self.converged = exact and bool(found.exact)
                return
            if not self.work.add_bounds(found.lower, found.upper):
                self.converged = False
                return
            self.refresh()

    def summary(self) -> str:
        return (f"column generation: {len(self.work)} boxes generated in {self.rounds} "
                f"pricing rounds ({self.priced_exactly} by branch and bound); relaxation "
                f"bound {self.bound:.10g}" + (" (no box prices out)" if self.converged else
                                              " (stopped before pricing converged)"))


def _prices_out(column_value: float, best_inside: float, reg: float,
                total_weight: float) -> bool:
    """Whether a box with :math:`|c_b|` = ``column_value`` has a more negative partial
    derivative than the best column of the working set (``best_inside`` = its
    :math:`c^2/(4\\lambda W)`)."""
    return column_value ** 2 / (4.0 * reg * total_weight) > best_inside * (1.0 + 1e-9) + 1e-15


def _restricted_relaxation(prob: BoxSelectionProblem, cuts: list[FloatArray], z0: FloatArray,
                           budget: Budget, solver: str | SolverBackend, seed: int
                           ) -> FloatArray:
    """A good point of the continuous relaxation over the working set (outer approximation
    with LP masters; any feasible point keeps the Farley bound valid), within a quarter of
    ``budget``'s time and work."""
    oa = OuterApproximation(prob.oracle, prob.model, "z",
                            OAOptions(budget=budget.fraction(RELAXATION_SHARE), rel_tol=1e-8,
                                      abs_tol=1e-12,
                                      max_iter=400, relax=True, solver=solver, seed=seed),
                            lower_bound_hint=prob.bound)
    oa.add_cut_at(np.zeros(prob.n_boxes))
    oa.add_cut_at(z0)
    for c in cuts[-50:]:
        oa.add_cut_at(c)
    res = oa.run()
    z = z0 if res.z is None else np.clip(np.asarray(res.z, dtype=float), 0.0, None)
    total = float(z.sum())
    if total > prob.n_rules:  # round-off of the LP: stay inside the feasible set
        z = z * (prob.n_rules / total)
    cuts.append(z.copy())
    return z


__all__ = ["WorkingSet", "farley_bound"]
