r"""The rule booster: sequences :math:`f^{(0)}, \dots, f^{(k)}` of additive rule ensembles
([OGB] Algorithm 1, docs/explanation/boosting.md).

Round ``t``: ``g``, ``h`` of the loss at :math:`f^{(t-1)}`; ``q_t`` = the best query for
the chosen objective (:mod:`rulemip.boosting.objectives`) found by the chosen search
(:mod:`rulemip.boosting.search`); weights by the chosen update
(:mod:`rulemip.boosting.weights`); for ogb the orthonormal basis is extended by
Gram–Schmidt. :math:`f^{(0)}` is the best constant (``fit_intercept=True``) or the zero
model (``fit_intercept=False``; then the empty query is a legal rule and counts as one of
the ``k``).

Boosting stops early — with fewer than ``n_rules`` rules — when no query has a positive
objective value (relative to ``1e-12·‖g‖₁``): no rule can then reduce the risk to first
order (e.g. the training data are fitted exactly, or no feature has two distinct values);
or when ``max_complexity`` is reached. The fit has one time/node budget (``time_limit``,
``node_limit``) shared by its rounds; a search stopped by its share (or by its memory
budget) contributes the best rule it found, with a valid bound, and the fit ends with a
``SolveLimitWarning``. Past its deadline a round still returns at least its best single
proposition, but a round starts only within :data:`ROUND_GRACE` seconds of the deadline:
the model holds the rounds finished — at least the first. A greedy or beam search scans
its first level in windows of features within the fit's deadline
(:func:`rulemip.boosting.space.expand_in_windows`), so a round started late returns the
best proposition of the windows it scanned. A spent work limit stops no round.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_choice, check_nonneg_float, check_positive_int
from rulemip.boosting.objectives import OBJECTIVES, OrthonormalBasis, make_objective
from rulemip.boosting.search import SEARCHES, SearchResult, SearchSpace, find_rule
from rulemip.boosting.weights import (
    WEIGHT_UPDATES,
    corrective_weights,
    stagewise_weight,
    xgb_weight,
)
from rulemip.budget import Budget
from rulemip.data.dataset import Dataset
from rulemip.exceptions import InvalidDataError, InvalidParameterError, SolveLimitWarning
from rulemip.losses import get_loss
from rulemip.rules import Rule, RuleEnsemble, conditions_from_box

FloatArray = NDArray[np.float64]

#: The named variants of [OGB]'s experiments (docs/explanation/boosting.md): objective, weight
#: update, search.
PRESETS: dict[str, dict[str, str]] = {
    "SGS": {"objective": "gs", "weight_update": "stagewise", "search": "greedy"},
    "SGB": {"objective": "gb", "weight_update": "stagewise", "search": "greedy"},
    "SXB": {"objective": "xgb", "weight_update": "xgb", "search": "bnb"},
    "CGB": {"objective": "gb", "weight_update": "corrective", "search": "bnb"},
    "COB": {"objective": "ogb", "weight_update": "corrective", "search": "bnb"},
}


@dataclass(frozen=True)
class BoostingRound:
    """What happened in one round: the search result and the weights after the update."""

    search: SearchResult
    intercept: float
    weights: FloatArray
    risk: float


#: seconds past its deadline during which a booster still starts rounds (each returns at
#: least its best single proposition: on small tables every round does, so a model keeps
#: its ``n_rules`` rules; on 100 000 rows one round is more than the grace)
ROUND_GRACE: float = 0.25


class _RoundBudget:
    """The fit's :class:`~rulemip.budget.Budget` and one node budget shared by all rounds."""

    def __init__(self, clock: Budget, node_limit: int | None) -> None:
        self.clock = clock
        self.node_limit = node_limit
        self.nodes = 0
        self.elapsed = 0.0

    def for_round(self, rounds_left: int) -> Budget:
        """This round's share of the remaining time (later rounds inherit what it
        leaves)."""
        return self.clock.fraction(1.0 / rounds_left)

    def nodes_for(self, rounds_left: int) -> int | None:
        if self.node_limit is None:
            return None
        return max(1, (self.node_limit - self.nodes) // rounds_left)

    def spend(self, res: SearchResult) -> None:
        self.nodes += res.n_expanded
        self.elapsed += res.elapsed

    def describe(self) -> str:
        return f"{self.clock.elapsed():.3g} s, {self.nodes} nodes"


def _printer(round_no: int) -> Callable[[int, float, float], None]:
    def show(nodes: int, best: float, bound: float) -> None:
        print(f"  rule {round_no}: {nodes} nodes, best {best:.6g}, bound {bound:.6g}",
              file=sys.stderr, flush=True)
    return show


class RuleBooster:
    r"""Gradient boosting of additive rule ensembles (SGS, SGB, SXB, CGB, COB and mixes).

    Parameters
    ----------
    n_rules : int
        Number of boosting rounds *k* (rules added; the intercept is not counted).
    objective : {"gs", "gb", "xgb", "ogb"}
        Rule objective (docs/explanation/boosting.md): gradient sum, gradient boosting, extreme
        boosting,
        orthogonal gradient boosting.
    weight_update : {"stagewise", "xgb", "corrective"}
        Weight update (docs/explanation/boosting.md eqs. 3, 6, 7).
    search : {"greedy", "beam", "bnb", "enumerate"}
        Rule search: greedy (w = 1), beam (w = ``beam_width``), branch-and-bound (w = ∞;
        ``"enumerate"``: the set-enumeration branch and bound, no prefix masks —
        :func:`~rulemip.boosting.search.find_rule`).
    beam_width : int
        Beam width *w* for ``search="beam"``.
    max_rule_length : int or None
        At most this many restricted features per rule (None = unlimited); a two-sided
        interval ``a < x_j <= b`` is one feature, as rules are printed — the meaning the
        exact estimators, ``gap_study`` and the certificate use.
    max_propositions : int or None
        At most this many propositions per rule, :math:`c(q)` of [OGB] (an interval
        counts two; None = unlimited) — realkd's rule length. Both caps hold when both
        are given.
    max_thresholds : int or None
        At most this many candidate thresholds per feature, at quantiles (None = all
        midpoints between distinct values).
    reg : float
        Ridge :math:`\lambda \ge 0` of :math:`R_\lambda` (docs/explanation/notation.md convention;
        the xgb
        objective and update use the paper's :math:`\lambda` = ``2 * reg``).
    epsilon : float
        :math:`\varepsilon > 0` of obj_ogb.
    fit_intercept : bool
        Fit the background rule :math:`\beta_0` (not counted in ``n_rules``). With False
        there is no :math:`\beta_0` and the empty query may be one of the rules.
    loss : {"squared", "logistic", "poisson"}
        Loss (logistic labels in {-1, +1}, as :class:`~rulemip.data.Dataset` encodes them).
    thresholds : sequence of d arrays or None
        Explicit candidate thresholds per feature (overrides ``max_thresholds``), e.g. to
        search the same language as an exact engine.
    max_complexity : int or None
        Stop early once :math:`C(f) = k + \sum_t c(q_t)` reaches this value ([OGB]'s
        "until complexity 50").
    time_limit : float or None
        Seconds for the whole fit, shared by all rounds (None = unlimited): each round's
        search gets an equal share of what is left. A search stopped by its share keeps
        the best rule it found (with a valid bound), and a
        :class:`~rulemip.exceptions.SolveLimitWarning` is issued at the end. Past the
        deadline each round still gets at least its best single proposition, but rounds
        start only within :data:`ROUND_GRACE` (0.25 s) of it: on a small table every
        round does (``n_rules`` rules); on 100 000 rows, where one scan of the features
        takes seconds, the model has the rules of the rounds finished (at least one;
        ``rounds_skipped_``), so that the fit ends within about one step of its limit.
    node_limit : int or None
        Node expansions of the rule searches for the whole fit (None = unlimited), shared
        like ``time_limit`` (at least one expansion per round).
    max_memory : int or None
        Bytes for the masks and open nodes of one branch-and-bound search (None: a
        quarter of the machine's available memory, at most 8 GiB,
        :func:`rulemip.budget.default_max_memory`); a full node pool makes the search
        continue depth first, so it never exceeds the budget and never stops for it.
    verbose : bool
        Print the progress of long searches (nodes, best value, bound) to stderr.

    Attributes
    ----------
    ensembles_ : list of RuleEnsemble
        :math:`f^{(0)}, \dots, f^{(k)}`; ``ensembles_[t]`` has ``t`` rules.
    rules_ : RuleEnsemble
        The final ensemble ``ensembles_[-1]``.
    risk_path_ : ndarray
        Training :math:`R_\lambda(f^{(t)})`, ``t = 0..k``.
    rounds_ : list of BoostingRound
        Per-round search results (value, ``certified``, effort) and weights.
    certified_ : bool
        Every round's query was certified optimal for its objective (its search's valid
        bound equals its value, see :class:`~rulemip.boosting.space.SearchResult`).
    limit_reached_ : str or None
        ``"time_limit"``, ``"node_limit"`` or ``"memory_limit"`` when a limit stopped at
        least one rule search or kept a round from starting (the first such limit), else
        None.
    rounds_skipped_ : int
        Rounds that did not start because the time (or work) budget was spent.
    search_time_ : float
        Wall seconds spent in the rule searches.
    """

    _PARAMS: ClassVar[tuple[str, ...]] = (
        "n_rules", "objective", "weight_update", "search", "beam_width", "max_rule_length",
        "max_thresholds", "reg", "epsilon", "fit_intercept", "loss", "max_complexity",
        "time_limit", "node_limit", "max_memory", "verbose", "max_propositions")

    def __init__(self, n_rules: int = 10, objective: str = "ogb",
                 weight_update: str = "corrective", search: str = "bnb",
                 beam_width: int = 5, max_rule_length: int | None = None,
                 max_thresholds: int | None = None, reg: float = 0.0, epsilon: float = 1e-3,
                 fit_intercept: bool = True, loss: str = "squared",
                 max_complexity: int | None = None, thresholds: Any = None, *,
                 time_limit: float | None = None, node_limit: int | None = None,
                 max_memory: int | None = None, verbose: bool = False,
                 max_propositions: int | None = None) -> None:
        self.n_rules = n_rules
        self.objective = objective
        self.weight_update = weight_update
        self.search = search
        self.beam_width = beam_width
        self.max_rule_length = max_rule_length
        self.max_propositions = max_propositions
        self.max_thresholds = max_thresholds
        self.reg = reg
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.loss = loss
        self.max_complexity = max_complexity
        self.thresholds = thresholds
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.max_memory = max_memory
        self.verbose = verbose
        self.validate()

    @classmethod
    def from_preset(cls, name: str, **params: Any) -> RuleBooster:
        """A booster with the preset's objective, weight update and search (see
        :data:`PRESETS`); other parameters from ``params``. A preset choice may not be
        overridden — pass the three choices explicitly instead."""
        preset = check_choice(name, "preset", PRESETS)
        clash = sorted(set(params) & set(PRESETS[preset]))
        if clash:
            raise InvalidParameterError(
                f"preset {preset!r} fixes {clash}; drop them or use no preset.")
        merged: dict[str, Any] = {**PRESETS[preset], **params}
        return cls(**merged)

    def get_params(self) -> dict[str, Any]:
        return {p: getattr(self, p) for p in self._PARAMS}

    def validate(self) -> None:
        """Check every parameter; raises :class:`InvalidParameterError` naming it."""
        check_positive_int(self.n_rules, "n_rules")
        check_choice(self.objective, "objective", OBJECTIVES)
        check_choice(self.weight_update, "weight_update", WEIGHT_UPDATES)
        check_choice(self.search, "search", SEARCHES)
        check_positive_int(self.beam_width, "beam_width")
        check_positive_int(self.max_rule_length, "max_rule_length", allow_none=True)
        check_positive_int(self.max_propositions, "max_propositions", allow_none=True)
        check_positive_int(self.max_thresholds, "max_thresholds", allow_none=True)
        check_positive_int(self.max_complexity, "max_complexity", allow_none=True)
        check_nonneg_float(self.reg, "reg")
        check_nonneg_float(self.epsilon, "epsilon", strictly_positive=True)
        check_nonneg_float(self.time_limit, "time_limit", allow_none=True)
        check_positive_int(self.node_limit, "node_limit", allow_none=True)
        check_positive_int(self.max_memory, "max_memory", allow_none=True)
        if not isinstance(self.verbose, bool | np.bool_):
            raise InvalidParameterError(f"`verbose` must be True or False; got {self.verbose!r}.")
        if not isinstance(self.fit_intercept, bool | np.bool_):
            raise InvalidParameterError(
                f"`fit_intercept` must be True or False; got {self.fit_intercept!r}.")
        get_loss(self.loss)

    # ------------------------------------------------------------------ fitting
    def fit(self, dataset: Dataset, budget: Budget | None = None) -> RuleBooster:
        """Run ``n_rules`` boosting rounds on ``dataset`` (labels in the loss convention)
        within ``budget`` (the caller's :class:`~rulemip.budget.Budget`; ``time_limit``
        may only shorten it)."""
        self.validate()
        if not isinstance(dataset, Dataset):
            raise InvalidDataError(
                "RuleBooster.fit needs a rulemip.data.Dataset; build one with "
                "Dataset.from_arrays(X, y, loss=...).")
        lo = get_loss(self.loss)
        X, y = dataset.X, lo.check_labels(np.asarray(dataset.y, dtype=float))
        sw = dataset.sample_weight
        w = dataset.weights
        n = dataset.n
        reg = float(self.reg)
        space = SearchSpace.build(X, self.max_thresholds, self.thresholds)
        basis = OrthonormalBasis(n, w)
        intercept = lo.best_constant(y, sw) if self.fit_intercept else 0.0
        if self.fit_intercept:
            basis.add(np.ones(n))
        f = np.full(n, intercept)
        boxes: list[tuple[FloatArray, FloatArray]] = []
        queries: list[NDArray[np.bool_]] = []
        beta = np.zeros(0)
        ensembles = [self._ensemble(dataset, boxes, intercept, beta)]
        risks = [lo.risk(f, y, sample_weight=sw)]
        rounds: list[BoostingRound] = []
        rounds_budget = _RoundBudget(Budget.coerce(budget, self.time_limit), self.node_limit)
        limit: str | None = None
        n_limited = 0
        n_skipped = 0
        for t in range(int(self.n_rules)):
            if t > 0 and rounds_budget.clock.past_deadline(ROUND_GRACE):
                # past its deadline by more than the grace no round starts (a round scans
                # every feature: seconds on 100 000 rows); a spent *work* limit never
                # stops the rounds (each then gets its best single proposition, at a
                # point that does not depend on the clock)
                limit = limit or "time_limit"
                n_skipped = int(self.n_rules) - t
                break
            g = lo.gradient(f, y)
            h = lo.hessian(f, y) if self.objective == "xgb" else None
            obj = make_objective(self.objective, g, h, weights=w, reg=reg,
                                 epsilon=float(self.epsilon), basis=basis)
            res = find_rule(space, obj, search=self.search, beam_width=self.beam_width,
                            max_rule_length=self.max_rule_length,
                            max_propositions=self.max_propositions,
                            allow_empty=not self.fit_intercept,
                            budget=rounds_budget.for_round(int(self.n_rules) - t),
                            scan_budget=rounds_budget.clock,
                            node_limit=rounds_budget.nodes_for(int(self.n_rules) - t),
                            max_memory=self.max_memory,
                            progress=_printer(t + 1) if self.verbose else None)
            tol = 1e-12 * max(float(np.sum(np.abs(w * g))), 1e-300)
            if res is not None:
                rounds_budget.spend(res)
                if res.limit_reached:
                    limit = limit or res.status
                    n_limited += 1
            if res is None or not res.value > tol:
                break
            q = res.query.astype(float)
            boxes.append((res.lower, res.upper))
            queries.append(res.query)
            if self.weight_update == "corrective":
                fit = corrective_weights(np.column_stack(queries).astype(float), y, lo, reg,
                                         self.fit_intercept, sw)
                intercept, beta = fit.intercept, np.asarray(fit.weights, dtype=float)
                f = intercept + np.column_stack(queries).astype(float) @ beta
            else:
                if self.weight_update == "stagewise":
                    b = stagewise_weight(q, f, y, lo, reg, sw)
                else:
                    b = xgb_weight(q, lo.gradient(f, y), lo.hessian(f, y), reg, sw)
                beta = np.append(beta, b)
                f = f + b * q
            basis.add(q)
            risk = lo.risk(f, y, weights=beta, reg=reg, sample_weight=sw)
            risks.append(risk)
            rounds.append(BoostingRound(res, float(intercept), beta.copy(), risk))
            ensembles.append(self._ensemble(dataset, boxes, intercept, beta))
            if self.max_complexity is not None and \
                    ensembles[-1].complexity >= self.max_complexity:
                break
        if limit is not None:
            skipped = (f"; {n_skipped} of {int(self.n_rules)} rounds did not start, the "
                       f"model has {len(rounds)} rules") if n_skipped else ""
            warnings.warn(
                f"the {limit.replace('_', ' ')} stopped {n_limited} of {len(rounds)} rule "
                f"searches ({rounds_budget.describe()}){skipped}; each of those rules is "
                "the best its search found, with a valid bound in "
                "`rounds_[t].search.bound`. Raise `time_limit`/`node_limit`/`max_memory` "
                "for proved rules.",
                SolveLimitWarning, stacklevel=2)
        self.limit_reached_ = limit
        self.rounds_skipped_ = n_skipped
        self.search_time_ = rounds_budget.elapsed
        self.space_ = space
        self.ensembles_ = ensembles
        self.rules_ = ensembles[-1]
        self.risk_path_ = np.asarray(risks, dtype=float)
        self.rounds_ = rounds
        self.certified_ = bool(rounds) and all(r.search.certified for r in rounds)
        return self

    def _ensemble(self, dataset: Dataset, boxes: list[tuple[FloatArray, FloatArray]],
                  intercept: float, beta: FloatArray) -> RuleEnsemble:
        rules = [Rule(conditions_from_box(lower, upper, dataset.encoder), float(b))
                 for (lower, upper), b in zip(boxes, beta, strict=True)]
        return RuleEnsemble(rules, float(intercept), get_loss(self.loss).name,
                            dataset.encoder, dataset.classes)

    def ensemble(self, k: int) -> RuleEnsemble:
        """The ``k``-rule model :math:`f^{(k)}` (``k`` ≤ number of fitted rounds)."""
        if not hasattr(self, "ensembles_"):
            raise InvalidParameterError("this RuleBooster is not fitted; call fit first.")
        if not 0 <= k < len(self.ensembles_):
            raise InvalidParameterError(
                f"`k` must be in 0..{len(self.ensembles_) - 1}; got {k!r}.")
        return self.ensembles_[k]

    def __repr__(self) -> str:
        args = ", ".join(f"{p}={getattr(self, p)!r}" for p in self._PARAMS)
        return f"RuleBooster({args})"
