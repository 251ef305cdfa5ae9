r"""Rule swaps and proved 1-swap optimality of a k-rule ensemble, squared loss
(docs/explanation/local_optimality.md).

The model is :math:`f = \beta_0 + \sum_{l=1}^k \beta_l q_l` with boxes :math:`q_l` and
weights that minimize :math:`R_\lambda = \frac1W(\sum_i w_i (y_i - f_i)^2 +
\lambda\|\beta\|^2)` for these boxes (the convex refit, :func:`rulemip.refit.fit_weights`).

**A swap of rule j.** Freeze the other rules with their weights and let
:math:`r^{(j)} = y - \sum_{l \ne j} \beta_l q_l` be their partial residual. Over one box q
and its weight (and the intercept, refitted when ``fit_intercept``)

.. math:: \min_{\beta_0, \beta} \sum_i w_i (r^{(j)}_i - \beta_0 - \beta q_i)^2 + \lambda\beta^2
          = \sum_i w_i (r^{(j)}_i - \bar r^{(j)})^2 - \frac{S_q^2}{D(W_q)}

(:class:`~rulemip.boosting.objectives.RidgeGain`: :math:`S_q` the weighted sum of the
centered partial residual over q, :math:`D(W) = \lambda + W - W^2/W_{tot}`; without the
intercept :math:`\bar r = 0` and :math:`D = \lambda + W`). Because the model's weights are
the joint optimum, fixing the others at their values and re-optimizing
:math:`(\beta_0, \beta_j)` returns exactly the model's risk, so

.. math:: W\,R_\lambda(f) = \text{const}_j - G_j(q_j)^2, \qquad
          G_j(q) = |S_q| / \sqrt{D(W_q)},

and the best swap of rule j is the box maximizing :math:`G_j` — the exact box search
:func:`rulemip.boosting.search.find_rule` with ``ridge_gain_objective`` on the partial
residual. It lowers the risk by :math:`(G_j^{*2} - G_j(q_j)^2)/W`; refitting all weights
afterwards only lowers it further.

**1-swap optimal** means: for every j, a valid upper bound :math:`\bar G_j` of the search
(its ``bound``; exact when it finished) satisfies :math:`(\bar G_j^2 - G_j(q_j)^2)/W \le
\text{tol}\cdot S` with the scale
:math:`S = \max(R, 10^{-9} \sum_i w_i y_i^2 / W)`
(:func:`tolerance_scale`: relative to the risk, floored by the data's second moment for
rounding; no absolute unit, so rescaling y rescales the tolerance with it). No model that
differs from f in one rule — its box anywhere in the candidate language, its weight, the
intercept *and the other weights held fixed* — has a lower risk by more than the
tolerance. It is a statement about a neighbourhood, not the global optimum. A model with
fewer than k rules has empty slots; a slot's current gain is 0 and its search asks whether
one more rule helps.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.boosting.objectives import ridge_gain_objective
from rulemip.boosting.search import find_rule
from rulemip.boosting.space import SearchSpace
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import RISK_UNIT_FLOOR, risk_unit
from rulemip.refit import fit_weights
from rulemip.rules.ensemble import RuleEnsemble, conditions_from_box
from rulemip.rules.problem import KRuleProblem
from rulemip.rules.rule import Rule

__all__ = [
    "SCALE_FLOOR",
    "SWAP_TOL",
    "SwapCheck",
    "SwapOutcome",
    "check_one_swap",
    "refit_ensemble",
    "swap_descent",
]

FloatArray = NDArray[np.float64]

#: a swap counts only when it lowers the risk by more than SWAP_TOL * tolerance_scale
SWAP_TOL = 1e-9
#: the tolerance scale's floor relative to the data's second moment (rounding of risks):
#: the one risk unit of every search (:func:`~rulemip.formulations.box_oracles.risk_unit`)
SCALE_FLOOR = RISK_UNIT_FLOOR


def second_moment(dataset: Dataset) -> float:
    r""":math:`\sum_i w_i y_i^2 / W`, the risk of the zero model: the data's scale."""
    w = dataset.weights
    y = np.asarray(dataset.y, dtype=float)
    return float(w @ (y * y)) / float(w.sum())


def tolerance_scale(risk: float, moment: float) -> float:
    r"""What relative tolerances on risks multiply: :math:`\max(|R|, 10^{-9} m_2)` with
    ``moment`` :math:`m_2` from :func:`second_moment` (and a positive floor): the risk
    unit of the box searches (:func:`~rulemip.formulations.box_oracles.risk_unit`) with the
    zero model's risk as the data's scale."""
    return risk_unit(risk, moment)


@dataclass(frozen=True)
class SwapCheck:
    """The search for the best replacement of one rule (slot) of a model.

    ``current`` is :math:`G_j(q_j)^2/W` (0 for an empty slot), ``best`` the best box's
    :math:`G^2/W`, ``bound`` a proved upper bound on every box's :math:`G^2/W`, all in
    risk units; ``lower``/``upper`` the best box."""

    slot: int
    current: float
    best: float
    bound: float
    certified: bool
    lower: FloatArray
    upper: FloatArray
    admissible: bool

    def improves(self, tol: float) -> bool:
        """The best box lowers the risk by more than ``tol`` (risk units)."""
        return self.admissible and self.best - self.current > tol

    def proves_no_swap(self, tol: float) -> bool:
        """No box of the language lowers the risk by more than ``tol``."""
        return math.isfinite(self.bound) and self.bound - self.current <= tol


@dataclass(frozen=True)
class SwapOutcome:
    """Result of :func:`swap_descent`: the final model, its risk, whether the last pass of
    k searches proved it 1-swap optimal, and the effort."""

    ensemble: RuleEnsemble
    risk: float
    one_swap_optimal: bool
    swaps: int
    searches: int
    wall_time: float
    checks: tuple[SwapCheck, ...] = field(default=())


def refit_ensemble(dataset: Dataset, rules: Sequence[Rule], *, reg: float,
                   fit_intercept: bool, template: RuleEnsemble | None = None
                   ) -> tuple[RuleEnsemble, float]:
    """The boxes of ``rules`` with their jointly optimal weights (squared loss) and the
    attained risk :math:`R_\\lambda`."""
    bodies = [Rule(r.conditions, 1.0) for r in rules]
    Q = RuleEnsemble(bodies).query_matrix(dataset.X) if bodies else \
        np.zeros((dataset.n, 0))
    fit = fit_weights(Q, np.asarray(dataset.y, dtype=float), "squared", reg=reg,
                      fit_intercept=fit_intercept, sample_weight=dataset.sample_weight)
    out = [Rule(r.conditions, float(b)) for r, b in zip(bodies, fit.weights, strict=True)]
    encoder = None if template is None else template.encoder
    classes = None if template is None else template.classes
    return RuleEnsemble(out, fit.intercept, "squared", encoder, classes), float(fit.risk)


def _admissible(lower: FloatArray, upper: FloatArray, problem: KRuleProblem) -> bool:
    """The box restricts at most the problem's rule length of features."""
    cap = problem.max_rule_length
    return cap is None or int(np.sum(np.isfinite(lower) | np.isfinite(upper))) <= cap


def search_slot(problem: KRuleProblem, ensemble: RuleEnsemble, slot: int,
                space: SearchSpace, *, search: str = "bnb", beam_width: int = 10,
                budget: Budget | None = None) -> SwapCheck | None:
    """The best replacement of rule ``slot`` (``slot >= len(ensemble)``: an empty slot) by
    the exact box search on the partial residual of the other rules (module docstring),
    within ``problem``'s language. ``ensemble`` must carry jointly optimal weights. None
    when the language is empty. ``budget`` (the fit's; None: unlimited) carries the time
    and the work limit."""
    budget = Budget.coerce(budget, None)
    dataset, reg, fit_intercept = problem.dataset, problem.reg, problem.fit_intercept
    max_rule_length = problem.max_rule_length
    y = np.asarray(dataset.y, dtype=float)
    w = dataset.weights
    W = float(w.sum())
    m = len(ensemble.rules)
    Q = ensemble.query_matrix(dataset.X) if m else np.zeros((dataset.n, 0))
    beta = ensemble.weights
    others = [i for i in range(m) if i != slot]
    r = y - Q[:, others] @ beta[others]
    if fit_intercept:
        r = r - float(w @ r) / W
    objective = ridge_gain_objective(r, weights=w, reg=reg, fit_intercept=fit_intercept)
    current = objective.value(Q[:, slot] > 0.5) if slot < m else 0.0
    # "bnb": the range search, or the set enumeration when its masks would not fit the
    # memory budget; max_rule_length counts restricted features everywhere
    found = find_rule(space, objective, search=search, beam_width=beam_width,
                      max_rule_length=max_rule_length, allow_empty=not fit_intercept,
                      budget=budget)
    if found is None:
        return None
    bound = found.bound if math.isfinite(found.bound) else math.inf
    return SwapCheck(slot=slot, current=current * current / W,
                     best=found.value * found.value / W, bound=bound * bound / W,
                     certified=bool(found.certified), lower=np.asarray(found.lower),
                     upper=np.asarray(found.upper),
                     admissible=_admissible(found.lower, found.upper, problem))


def check_one_swap(problem: KRuleProblem, ensemble: RuleEnsemble, *, tol: float = SWAP_TOL,
                   atol: float | None = None,
                   budget: Budget | None = None) -> tuple[bool, tuple[SwapCheck, ...]]:
    """Replay the ``n_rules`` swap searches of ``problem`` on ``ensemble`` *with its
    weights as given*
    (they must be the joint optimum of its boxes, as the module docstring's identity
    assumes: :func:`rulemip.certify.verify` refits them first). Returns (every search
    proves that no swap lowers the risk by more than ``tol *`` :func:`tolerance_scale`,
    or by ``atol`` when given, the checks). The first check that finds an improving swap
    ends the replay. The searches share ``budget`` (None: unlimited)."""
    if ensemble.loss != "squared":
        raise InvalidParameterError(
            f"1-swap optimality is proved for squared loss only; got loss={ensemble.loss!r}.")
    dataset, n_rules = problem.dataset, problem.n_rules
    if len(ensemble.rules) > n_rules:
        return False, ()
    space = SearchSpace.build(dataset.X, thresholds=problem.thresholds)
    risk = problem.risk(ensemble)
    if atol is None:
        atol = tol * tolerance_scale(risk, second_moment(dataset))
    clock = Budget.coerce(budget, None)
    checks: list[SwapCheck] = []
    for slot in range(n_rules):
        check = search_slot(problem, ensemble, slot, space, budget=clock)
        if check is None:  # no box at all: nothing can be swapped in
            continue
        checks.append(check)
        if not check.proves_no_swap(atol):
            return False, tuple(checks)
    return True, tuple(checks)


def swap_descent(problem: KRuleProblem, ensemble: RuleEnsemble, *,
                 space: SearchSpace | None = None, budget: Budget | None = None,
                 tol: float = SWAP_TOL, beam_first: bool = True,
                 exact: bool = True) -> SwapOutcome:
    """Swap rules until a full pass of ``problem.n_rules`` searches proves the model 1-swap
    optimal (module docstring), or the budget ends (``space``: the problem's search space
    when the caller has it).

    Slots are visited cyclically; an improving swap replaces the rule by the best box and
    refits all weights (strictly lower risk, so the descent terminates). The claim
    ``one_swap_optimal`` is made only after ``n_rules`` consecutive searches on the final
    model each proved that no swap helps (a search stopped by the budget proves it only if
    its bound does). With ``beam_first`` each slot is first searched by a beam search
    (width 10): an improving box it finds is swapped in at once; the exact search runs
    only when the beam finds none, so the claim always rests on the exact search. With
    ``exact=False`` the descent stops when a beam pass finds no improving swap (no claim)."""
    if ensemble.loss != "squared":
        raise InvalidParameterError(
            f"rule swaps are exact for squared loss only; got loss={ensemble.loss!r}.")
    dataset, n_rules = problem.dataset, problem.n_rules
    reg, fit_intercept = problem.reg, problem.fit_intercept
    if space is None:
        space = SearchSpace.build(dataset.X, thresholds=problem.thresholds)
    budget = Budget.from_time_limit(None) if budget is None else budget
    t0 = time.perf_counter()
    rules = list(ensemble.rules)[:n_rules]
    model, risk = refit_ensemble(dataset, rules, reg=reg, fit_intercept=fit_intercept,
                                 template=ensemble)
    proved: dict[int, SwapCheck] = {}
    swaps = searches = 0
    moment = second_moment(dataset)
    if check_empty_language(space, fit_intercept):
        proved = {s: SwapCheck(s, 0.0, 0.0, 0.0, True, np.zeros(0), np.zeros(0), True)
                  for s in range(n_rules)}

    def apply(check: SwapCheck) -> bool:
        """Swap the check's box into its slot and refit; True if the risk dropped."""
        nonlocal model, risk, swaps
        box = Rule(conditions_from_box(check.lower, check.upper, model.encoder), 1.0)
        new_rules = list(model.rules)
        if check.slot < len(new_rules):
            new_rules[check.slot] = box
        else:
            new_rules.append(box)
        candidate, new_risk = refit_ensemble(dataset, new_rules, reg=reg,
                                             fit_intercept=fit_intercept, template=model)
        if new_risk < risk - tol * tolerance_scale(risk, moment):
            model, risk = candidate, new_risk
            swaps += 1
            return True
        return False  # rounding ate the predicted gain

    def slots() -> list[int]:  # the rules, then one empty slot (all empty ones are alike)
        m = len(model.rules)
        return list(range(m)) + ([m] if m < n_rules else [])

    while len(proved) < n_rules and not budget.expired():
        # beam passes: cheap improving swaps, until a whole pass finds none
        improved = False
        for slot in slots() if beam_first else []:
            if budget.expired():
                break
            check = search_slot(problem, model, slot, space, search="beam", budget=budget)
            searches += 1
            if check is not None and check.improves(tol * tolerance_scale(risk, moment)):
                improved = apply(check) or improved
        if improved:
            continue
        if not exact:  # beam-only descent (a heuristic step of kicks): no claim
            break
        # exact pass: every slot proved, or the first improving swap applied
        stalled = False
        for slot in slots():
            if budget.expired():
                break
            check = search_slot(problem, model, slot, space, budget=budget)
            searches += 1
            atol = tol * tolerance_scale(risk, moment)
            if check is None:
                continue
            if check.improves(atol):
                if apply(check):
                    proved = {}
                    break
                stalled = True
                break
            if not check.proves_no_swap(atol):  # stopped search: no claim
                stalled = True
                break
            m = len(model.rules)
            if slot < m:
                proved[slot] = check
            else:  # every empty slot asks the same question
                proved.update({s: check for s in range(m, n_rules)})
        else:
            if len(proved) < n_rules:  # only empty searches (no box): nothing to swap in
                proved.update({s: proved.get(s, _nothing(s)) for s in range(n_rules)})
        if stalled:
            proved = {}
            break
    complete = len(proved) >= n_rules
    return SwapOutcome(model, risk, complete, swaps, searches, time.perf_counter() - t0,
                       tuple(proved[s] for s in sorted(proved)))


def check_empty_language(space: SearchSpace, fit_intercept: bool) -> bool:
    """True when the language has no box to swap in (no thresholds, an intercept)."""
    return fit_intercept and all(len(t) == 0 for t in space.thresholds)


def _nothing(slot: int) -> SwapCheck:
    return SwapCheck(slot, 0.0, 0.0, 0.0, True, np.zeros(0), np.zeros(0), True)


def local_optimality_record(outcome: SwapOutcome, tol: float = SWAP_TOL) -> dict[str, Any]:
    """What a certificate records about 1-swap optimality (docs/explanation/
    local_optimality.md): the claim, the tolerance, and per slot the current and bounding
    gains of the replayed searches."""
    return {"kind": "1-swap", "proved": bool(outcome.one_swap_optimal), "tol": float(tol),
            "searches": [{"slot": c.slot, "current": c.current, "bound": c.bound}
                         for c in outcome.checks]}
