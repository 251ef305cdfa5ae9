r"""Column generation for the box-selection CIP: boxes are priced by rule search, never
enumerated (docs/explanation/column_generation.md).

The box-selection CIP (:mod:`rulemip.formulations.box_selection`) minimizes the convex
:math:`R(z)` over :math:`z \in \{0..k\}^B`, :math:`\sum_b z_b \le k`, with one column per
candidate box — millions on a table of 10 features. Here a *working set* :math:`W` of boxes
grows by pricing:

1. **Restricted master.** The continuous relaxation over :math:`W` (outer approximation
   with LP masters) gives a point :math:`\bar z \ge 0`, :math:`\sum \bar z \le k`, zero
   outside :math:`W`.
2. **Pricing.** At :math:`\bar z` the ensemble's predictions :math:`f` give per-row loss
   gradients :math:`l'_i`; for every box b (in :math:`W` or not),
   :math:`\partial R/\partial z_b(\bar z) = -c_b^2/(4\lambda W_{tot})` with
   :math:`c_b = \sum_{i \in b} w_i l'_i`. The most negative one is the box maximizing
   :math:`|c_b|`: the *gradient-sum* rule objective, maximized exactly by the rule
   search's branch and bound (:func:`rulemip.boosting.search.find_rule`), which also
   returns a valid upper bound :math:`G^*` on :math:`\max_b |c_b|` when a time limit stops
   it.
3. **Farley-type bound, valid at every iteration.** :math:`R` is convex on
   :math:`z \ge 0`, so for every feasible z,
   :math:`R(z) \ge R(\bar z) + \nabla R(\bar z)^\top (z - \bar z)`, and minimizing the
   right-hand side over :math:`\{z \ge 0, \sum z \le k\}` (a relaxation of the integer set)
   gives

   .. math:: R^* \ \ge\ R(\bar z) - \nabla R(\bar z)^\top \bar z
             + k \min\Big(0,\ -\frac{(G^*)^2}{4 \lambda W_{tot}}\Big).

   No optimality of :math:`\bar z` is needed, and :math:`G^*` may come from a stopped
   search. When pricing proves that no box prices out, this equals the relaxation's
   optimum.
4. **Integer phase (price and branch).** The integer CIP over the final working set is
   solved by the box-selection methods; its ensemble is the incumbent. Its own bound holds
   for the working set only and is *not* reported: the reported bound is the best of the
   Farley bounds and the combinatorial bounds (which depend on the cells only).
5. **All boxes, when few.** With time left and the gap open, a language of at most
   :data:`FULL_CIP_MAX_BOXES` candidate boxes gets a last integer solve over *all* of them,
   warm-started with the incumbent: its bound is valid for the whole problem. A run that
   ends with time left and the gap open reports ``limit="other"`` (no limit of the user's
   was hit); the exact estimators spend the time left on rule swaps
   (docs/explanation/local_optimality.md).

Every step reads the fit's one :class:`~rulemip.budget.Budget`. Steps 1-3 (the working set,
the restricted relaxation, pricing, the Farley bound) are
:mod:`rulemip.algorithms.krule.column_pricing`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.krule.box_selection import BoxSelectionSearch
from rulemip.algorithms.krule.column_pricing import (
    WorkingSet,
    _price_exactly,
    _Pricer,
    _row_gradient,
    farley_bound,
)
from rulemip.algorithms.solve.driver import decide, solve, status_of
from rulemip.algorithms.solve.registry import register_formulation
from rulemip.boosting.objectives import make_objective, ridge_gain_objective
from rulemip.boosting.search import find_rule
from rulemip.boosting.space import SearchSpace
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.formulations.box_oracles import CandidateBoxes, enumerate_boxes
from rulemip.formulations.box_selection import BoxSelectionCIP, BoxSelectionProblem
from rulemip.formulations.cells import CellReduction
from rulemip.formulations.protocol import PricedColumn, SearchOutcome
from rulemip.formulations.result import ExactResult
from rulemip.formulations.sizes import CIP_MAX_BOXES, count_boxes
from rulemip.model.mip_model import MIPModel
from rulemip.rules.ensemble import RuleEnsemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.base import PERSISTENT_MASTER_NEEDS, Capability, SolverBackend
from rulemip.solvers.result import Limit, TerminationReason, budget_limit, relative_gap
from rulemip.solvers.status import Verdict

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: share of the remaining budget spent generating columns (the rest: the integer phase)
PRICING_SHARE = 0.5
#: languages with at most this many candidate boxes get a last integer solve over all of
#: them when the gap is still open (its bound is then valid for the whole problem)
FULL_CIP_MAX_BOXES = CIP_MAX_BOXES
#: share of what is left after the integer phase kept for a last integer solve, when
#: pricing resumes to raise the bound
FINAL_INTEGER_SHARE = 0.25


class ColumnGenerationModel:
    """What :meth:`ColumnGeneration.build_model` builds (a
    :class:`~rulemip.formulations.protocol.BuiltModel`): the cells, the working set, the
    rule-search space, and the box-selection problem over the working set, built on first
    use (its combinatorial bounds cost a dynamic program the one-rule path does without).
    The search replaces :attr:`problem` by the one its incumbent is a point of."""

    bound_valid = True

    def __init__(self, cip: BoxSelectionCIP, dataset: Dataset, cells: CellReduction,
                 work: WorkingSet, space: SearchSpace) -> None:
        self.cip, self.dataset, self.cells, self.work, self.space = \
            cip, dataset, cells, work, space
        self.notes: list[str] = []
        self._problem: BoxSelectionProblem | None = None

    @property
    def problem(self) -> BoxSelectionProblem:
        if self._problem is None:
            self._problem = self.cip.problem_over(self.dataset, self.cells,
                                                  self.work.candidate_boxes())
        return self._problem

    @problem.setter
    def problem(self, prob: BoxSelectionProblem) -> None:
        self._problem = prob

    @property
    def model(self) -> MIPModel:
        return self.problem.model

    @model.setter
    def model(self, model: MIPModel) -> None:
        raise AttributeError("the model of column generation is its problem's; set `problem`")

    def block(self, name: str) -> NDArray[np.int64]:
        return self.problem.block(name)

    @property
    def safe_bound(self) -> float:
        """The reduction constant (losses are ≥ 0 after it), valid for every box set."""
        return self.cells.constant / self.cells.total_weight

    @property
    def n_cells(self) -> int:
        return self.cells.n_cells

    @property
    def n_boxes(self) -> int:
        """Boxes generated (the working set)."""
        return len(self.work)


class ColumnGeneration:
    """The box-selection CIP by column generation (module docstring): an
    :class:`~rulemip.formulations.protocol.OracleFormulation` whose search prices boxes
    (the :class:`~rulemip.formulations.protocol.PricingHook`, :meth:`price`) instead of
    enumerating them; the driver decodes its incumbent and decides its status.

    ``language``, ``loss``, ``reg`` and ``max_thresholds`` are those of
    :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`; ``max_columns`` caps the
    working set, ``beam_width`` is the cheap pricing's beam, ``max_swap_rounds`` caps the
    rounds of rule-swap pricing.
    """

    engine = "cg"
    #: :meth:`build_model` takes the fit's budget (rulemip.algorithms.solve.driver)
    budgeted_build = True

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 1e-3,
                 max_thresholds: int | None = None, max_columns: int = 2_000,
                 beam_width: int = 5, max_swap_rounds: int = 20) -> None:
        #: the box-selection CIP this searches (its cells, boxes, oracle and decoding)
        self.cip = BoxSelectionCIP(language, loss=loss, reg=reg,
                                   max_thresholds=max_thresholds)
        self.language = self.cip.language
        self.n_rules, self.loss, self.reg = self.cip.n_rules, self.cip.loss, self.cip.reg
        self.fit_intercept = self.cip.fit_intercept
        self.max_rule_length = self.cip.max_rule_length
        self.max_columns = int(max_columns)
        self.beam_width = int(beam_width)
        self.max_swap_rounds = int(max_swap_rounds)

    # ------------------------------------------------------------------ the protocol
    def needs(self) -> set[Capability]:
        """A persistent MILP master (the restricted relaxations and integer phases)."""
        return set(PERSISTENT_MASTER_NEEDS)

    def build_model(self, dataset: Dataset, *, backend: SolverBackend | None = None,
                    native: bool = True, warm_start: RuleEnsemble | None = None,
                    budget: Budget | None = None) -> ColumnGenerationModel:
        """Cells, the working set (seeded with the warm start's rules) and the search
        space of the pricing; :class:`~rulemip.budget.BudgetExpired` between these steps
        once ``budget`` is spent (each is O(n d) to O(n d log n): 0.5 s on 100 000 × 20)."""
        clock = Budget.coerce(budget, None)
        clock.check("building the column-generation model (before the cell reduction)")
        cells = self.cip.reduce(dataset)
        clock.check("building the column-generation model (after the cell reduction)")
        work = WorkingSet(cells, self.language)
        if warm_start is not None:
            for rule in warm_start.rules:
                work.add_bounds(*_rule_bounds(rule, dataset.d))
        clock.check("building the column-generation model (before the search space)")
        space = SearchSpace.build(dataset.X, thresholds=cells.thresholds)
        return ColumnGenerationModel(self.cip, dataset, cells, work, space)

    def encode_start(self, built: Any, ensemble: RuleEnsemble) -> FloatArray | None:
        """None: the warm start's rules join the working set instead (build_model) and
        seed every integer phase."""
        return None

    def decode_solution(self, built: Any, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        prob = built.problem if isinstance(built, ColumnGenerationModel) else built
        ensemble, risk = prob.decode(x)
        return ensemble, risk, []

    def polish(self, built: Any, x: FloatArray) -> FloatArray | None:
        """No master point to repair (the integer phases evaluate the oracle)."""
        return None

    def price(self, built: ColumnGenerationModel, z: FloatArray, *, budget: Budget
              ) -> PricedColumn:
        """The box whose partial derivative at ``z`` (a point over the working set) is
        most negative, by the exact rule search on the gradient-sum objective, with its
        bound :math:`G^*` on every box's :math:`|c_b|` (module docstring, steps 2-3); the
        search's pricing loop calls it when the beam finds no box that prices out."""
        max_len = self.max_rule_length   # restricted features, as find_rule counts
        found = _price_exactly(built.space, make_objective(
            "gs", _row_gradient(built.problem, z, built.dataset)), max_len,
            self.fit_intercept, budget)
        if found is None:
            return PricedColumn(None, None, 0.0, 0.0, True)
        return PricedColumn(np.asarray(found.lower, dtype=float),
                            np.asarray(found.upper, dtype=float), float(found.value),
                            float(found.bound), bool(found.certified))

    def search(self, built: ColumnGenerationModel, *, backend: SolverBackend, budget: Budget,
               mip_gap: float, start: FloatArray | None = None,
               warm_start: RuleEnsemble | None = None, seed: int = 0,
               threads: int | None = None, callback: Callable[[dict[str, Any]], None]
               | None = None) -> SearchOutcome:
        """Steps 1-5 of the module docstring; the reported bound is valid for the whole
        candidate set."""
        dataset, cells, work, space = built.dataset, built.cells, built.work, built.space
        n_rules, reg = self.n_rules, self.reg
        max_len = self.max_rule_length   # restricted features, as find_rule counts
        one_rule_bound = -math.inf
        if n_rules == 1 and self.loss == "squared":
            single, prob1 = _one_rule(self.cip, dataset, cells, space, budget)
            verdict = _verdict(prob1, single, mip_gap)
            if verdict.termination is TerminationReason.OPTIMAL or budget.expired():
                return single
            one_rule_bound = verdict.lower_bound
            assert single.x is not None
            ensemble, _ = prob1.decode(single.x)
            for rule in ensemble.rules:
                work.add_bounds(*_rule_bounds(rule, dataset.d))
        remaining = budget.remaining()
        pricer = _Pricer(self.cip, dataset, cells, work, space,
                         solver=backend, seed=seed, beam_width=self.beam_width,
                         max_columns=self.max_columns, bound=one_rule_bound,
                         callback=callback, clock=budget, pricing=self, built=built)
        if warm_start is not None:
            pricer.incumbent = float(warm_start.risk(dataset.X, dataset.y, reg=reg,
                                                     sample_weight=dataset.sample_weight))
        pricer.run(budget.fraction(PRICING_SHARE))   # of the time and of the work left
        prob = pricer.prob
        if len(work) == 0:
            built.problem = prob
            return SearchOutcome(x=np.zeros(0), lower_bound=pricer.bound, finished=True,
                                 method="pricing", notes=(pricer.summary(),))

        def integer_phase(over: BoxSelectionProblem, start_model: RuleEnsemble | None
                          ) -> _Phase:
            return _integer_phase(self.cip, over, start_model, backend=backend, budget=budget,
                                  mip_gap=mip_gap, seed=seed, threads=threads)

        sub = integer_phase(prob, warm_start)
        pricer.incumbent = min(pricer.incumbent, sub.result.risk)
        first_risk, swaps = sub.result.risk, 0
        # rule swaps: price the best replacement of every rule of the incumbent, then solve
        # the integer problem over the grown working set again, while that improves
        while sub.result.ensemble is not None and not budget.expired() \
                and swaps < self.max_swap_rounds:
            added = _swap_columns(sub.problem, work, sub.result, dataset, space, max_len,
                                  self.fit_intercept, self.beam_width, budget)
            if not added:
                break
            swaps += 1
            prob = pricer.refresh()
            again = integer_phase(prob, sub.result.ensemble)
            if not again.result.risk < sub.result.risk - 1e-12 * max(1.0,
                                                                     abs(sub.result.risk)):
                sub = again if again.result.risk <= sub.result.risk else sub
                break
            sub = again
            pricer.incumbent = min(pricer.incumbent, sub.result.risk)
        # time left and pricing not converged: raise the bound further, then try the grown
        # working set once more (the budget keeps FINAL_INTEGER_SHARE for that last solve)
        remaining = budget.remaining()
        if not pricer.converged and sub.result.ensemble is not None and \
                (remaining is None or remaining > 0.5):
            n_before = len(work)
            pricer.run(budget.fraction(1.0 - FINAL_INTEGER_SHARE))
            prob = pricer.prob
            if len(work) > n_before and not budget.expired():
                again = integer_phase(prob, sub.result.ensemble)
                if again.result.ensemble is not None and again.result.risk < sub.result.risk:
                    sub = again
        notes = [pricer.summary()]
        notes.append(f"integer phase over the {len(work)} generated boxes: "
                     f"{sub.result.termination.value}, risk {sub.result.risk:.10g} (its bound "
                     f"{sub.result.lower_bound:.10g} holds for these boxes only; not used)")
        if swaps:
            notes.append(f"rule swaps: {swaps} rounds of replacement pricing, risk "
                         f"{first_risk:.10g} -> {sub.result.risk:.10g}")
        bound = pricer.bound
        # time left and the gap open: when the whole language is small, solve the integer
        # CIP over *every* candidate box — its bound is then valid for the problem
        # (branching on top of pricing, the step pricing alone cannot do)
        if sub.result.ensemble is not None and not budget.expired() and \
                relative_gap(sub.result.risk, bound) > mip_gap and \
                count_boxes(replace(self.language, thresholds=cells.thresholds)) \
                <= FULL_CIP_MAX_BOXES:
            full = integer_phase(self.cip.problem_over(dataset, cells,
                                                       _all_boxes(cells, self.cip)),
                                 sub.result.ensemble)
            notes.append(f"integer phase over all candidate boxes: "
                         f"{full.result.termination.value}, risk {full.result.risk:.10g}, "
                         f"bound {full.result.lower_bound:.10g}")
            if full.result.bound_valid and math.isfinite(full.result.lower_bound):
                bound = max(bound, full.result.lower_bound)
            if full.result.ensemble is not None and full.result.risk < sub.result.risk:
                sub = full
        out_of_time = budget.expired()
        built.problem = sub.problem
        # stopped with time left and the gap open (pricing converged or the column cap): no
        # limit of the user's was hit; "gap" would claim the requested gap was reached
        return SearchOutcome(
            x=sub.z, lower_bound=bound, finished=not out_of_time,
            limit=budget_limit(budget) if out_of_time else
            (Limit.OTHER if relative_gap(sub.result.risk, bound) > mip_gap else None),
            # the restricted relaxations ran on the master backend (whatever searched the
            # last integer phase: its method is in the notes)
            method="pricing", backend=backend.name, backend_version=backend.version(),
            iterations=pricer.rounds,
            notes=(*notes, *sub.result.notes), no_solution=sub.result.termination)


def solve_column_generation(problem: KRuleProblem, *, solver: str | SolverBackend = "auto",
                            budget: Budget | None = None, mip_gap: float = 1e-6,
                            warm_start: RuleEnsemble | None = None, seed: int = 0,
                            callback: Callable[[dict[str, Any]], None] | None = None,
                            max_columns: int = 2_000, beam_width: int = 5,
                            max_swap_rounds: int = 20) -> ExactResult:
    """Best ensemble of ``problem`` by column generation over boxes (module docstring), through
    the driver (:func:`rulemip.algorithms.solve.driver.solve`); the reported bound is valid for
    the whole candidate set."""
    cg = ColumnGeneration(problem.language, **problem.keywords(), max_columns=max_columns,
                          beam_width=beam_width, max_swap_rounds=max_swap_rounds)
    return solve(cg, problem.dataset, solver=solver, budget=budget, mip_gap=mip_gap,
                 warm_start=warm_start, seed=seed, callback=callback)


@dataclass(frozen=True)
class _Phase:
    """An integer phase: its decoded result, the problem it searched and its point."""

    result: ExactResult
    problem: BoxSelectionProblem
    z: FloatArray | None


def _integer_phase(cip: BoxSelectionCIP, prob: BoxSelectionProblem,
                   start_model: RuleEnsemble | None, *, backend: SolverBackend,
                   budget: Budget, mip_gap: float, seed: int, threads: int | None) -> _Phase:
    """The integer CIP over ``prob``'s boxes (:class:`BoxSelectionSearch`, the backend the
    driver resolved as its master), decoded and promoted by :func:`decide`."""
    search = BoxSelectionSearch.of(cip, problem=prob)
    start = None if start_model is None else prob.encode(start_model)
    outcome = search.search(prob, backend=backend, budget=budget, mip_gap=mip_gap,
                            start=start, warm_start=start_model, seed=seed, threads=threads,
                            callback=None)
    result = decide(search, prob, outcome, wall_time=0.0, mip_gap=mip_gap, start=start)
    return _Phase(result, prob, outcome.x if outcome.x is not None else start)


def _all_boxes(cells: CellReduction, cip: BoxSelectionCIP) -> CandidateBoxes:
    """Every candidate box over the cells (what :meth:`BoxSelectionCIP.build` enumerates)."""
    n_groups = np.array([len(t) + 1 for t in cells.thresholds], dtype=np.int64)
    return enumerate_boxes(cells.groups, n_groups, max_rule_length=cip.max_rule_length,
                           drop_full=cip.fit_intercept)


def _verdict(prob: BoxSelectionProblem, outcome: SearchOutcome, mip_gap: float) -> Verdict:
    """What the driver would decide for ``outcome`` (to stop early; not reported)."""
    assert outcome.x is not None
    _, risk = prob.decode(outcome.x)
    return status_of(prob, outcome, risk, mip_gap=mip_gap, warn=False)


def _swap_columns(prob: BoxSelectionProblem, work: WorkingSet, incumbent: ExactResult,
                  dataset: Dataset, space: SearchSpace, max_len: int | None,
                  fit_intercept: bool, beam_width: int, budget: Budget) -> int:
    """For every rule of the incumbent: the best box to put in its place (beam search on
    the gradient of the ensemble without it) joins the working set. Returns how many new
    boxes were added."""
    assert incumbent.ensemble is not None
    z_inc = np.zeros(prob.n_boxes)
    index: dict[bytes, int] = prob.boxes.key_index()
    for rule in incumbent.ensemble.rules:
        cover = np.all(np.column_stack([
            (prob.cells.groups[:, c.feature] >= _group_lo(prob, c))
            & (prob.cells.groups[:, c.feature] <= _group_hi(prob, c))
            for c in rule.conditions]), axis=1) if rule.conditions else \
            np.ones(prob.cells.n_cells, dtype=bool)
        hit = index.get(np.packbits(cover[:, None], axis=0)[:, 0].tobytes())
        if hit is not None:
            z_inc[hit] += 1.0
    added = 0
    for b in np.flatnonzero(z_inc > 0):
        if budget.expired():
            break
        z = z_inc.copy()
        z[b] -= 1.0
        g_rows = _row_gradient(prob, z, dataset)
        found = find_rule(space, make_objective("gs", g_rows), search="beam",
                          beam_width=beam_width, max_rule_length=max_len,
                          allow_empty=not fit_intercept, budget=budget)
        if found is not None and work.add_bounds(found.lower, found.upper):
            added += 1
    return added


def _group_lo(prob: BoxSelectionProblem, c: Any) -> int:
    t = prob.cells.thresholds[c.feature]
    return int(np.argmin(np.abs(t - c.lower))) + 1 if math.isfinite(c.lower) and len(t) else 0


def _group_hi(prob: BoxSelectionProblem, c: Any) -> int:
    t = prob.cells.thresholds[c.feature]
    return int(np.argmin(np.abs(t - c.upper))) if math.isfinite(c.upper) and len(t) \
        else len(t)


def _one_rule(cip: BoxSelectionCIP, dataset: Dataset, cells: CellReduction,
              space: SearchSpace, budget: Budget
              ) -> tuple[SearchOutcome, BoxSelectionProblem]:
    r"""k = 1, squared loss, exactly: adding one box b to the intercept-only model lowers
    :math:`\sum_i w_i r_i^2` by exactly :math:`S_b^2/D(W_b)`
    (:class:`~rulemip.boosting.objectives.RidgeGain`), so the best rule is the maximizer of
    that objective — branch and bound over the rules, whose bound G gives the valid lower
    bound :math:`(\sum w r^2 - G^2)/W` also when a limit stops it. Returns the outcome
    (its ``built``: the one-box problem it is a point of) and that problem."""
    w = dataset.weights
    y = np.asarray(dataset.y, dtype=float)
    W = float(w.sum())
    r = y - (float(w @ y) / W if cip.fit_intercept else 0.0)
    sst = float(w @ (r * r))
    objective = ridge_gain_objective(r, weights=w, reg=cip.reg,
                                     fit_intercept=cip.fit_intercept)
    # the range search, or the set enumeration when its masks would not fit the memory
    # budget (every distinct value of 100 000 rows: tens of GiB of masks)
    found = find_rule(space, objective, search="bnb", max_rule_length=cip.max_rule_length,
                      allow_empty=not cip.fit_intercept, budget=budget)
    one = WorkingSet(cells, cip.language)
    admissible = found is not None and one.add_bounds(found.lower, found.upper)
    # the search's bound is the proof: the combinatorial bounds (the levels DP costs
    # seconds on thousands of cells) only when it did not finish
    prob = cip.problem_over(dataset, cells, one.candidate_boxes(),
                            combinatorial=found is None or not found.certified, budget=budget)
    z = np.ones(1) if admissible else np.zeros(prob.n_boxes)
    if found is None:
        lb = prob.decode(z)[1]
        note = "one rule: no candidate box; the intercept-only model is optimal"
    else:
        lb = (sst - found.bound ** 2) / W if math.isfinite(found.bound) else 0.0
        note = (f"one rule exactly: branch and bound on the ridge gain, {found.n_expanded} "
                f"nodes, status {found.status}")
        if not admissible:
            note += " (its best box breaks max_rule_length or repeats the intercept: " \
                    "bound only)"
    finished = found is None or (found.certified and admissible)
    outcome = SearchOutcome(x=z, lower_bound=lb, finished=finished,
                            limit=None if finished else budget_limit(budget), method="box search",
                            iterations=0 if found is None else found.n_expanded,
                            notes=(note,), built=prob)
    return outcome, prob


def _rule_bounds(rule: Any, d: int) -> tuple[list[float], list[float]]:
    lo = [-math.inf] * d
    hi = [math.inf] * d
    for c in rule.conditions:
        lo[c.feature] = max(lo[c.feature], c.lower)
        hi[c.feature] = min(hi[c.feature], c.upper)
    return lo, hi


register_formulation("cg", lambda p: ColumnGeneration(p.language, **p.keywords()),
                     needs_positive_reg=True,
                     needs=PERSISTENT_MASTER_NEEDS, oracle=True,
                     description="box-selection CIP by column generation: boxes priced by "
                                 "the rule search, never enumerated "
                                 "(docs/explanation/column_generation.md)")


__all__ = ["ColumnGeneration", "ColumnGenerationModel", "WorkingSet", "farley_bound",
           "solve_column_generation"]
