"""scikit-learn estimators for rule boosting ([OGB], docs/explanation/boosting.md): regression
(squared or
Poisson loss) and binary classification (logistic loss)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from numpy.typing import NDArray
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from rulemip._kernels import CompileReport, ensure_compiled
from rulemip._validation import check_choice, check_seed
from rulemip.boosting.booster import PRESETS, RuleBooster
from rulemip.data import check_thresholds
from rulemip.data.dataset import Dataset
from rulemip.estimators._inputs import binary_labels, fit_dataset, predict_matrix
from rulemip.estimators._progress import say
from rulemip.exceptions import InvalidParameterError
from rulemip.parallel import resolve_n_jobs, search_workers
from rulemip.rules import RuleEnsemble

_CHOICES = ("objective", "weight_update", "search")
#: choices when neither they nor ``preset`` are given: COB with greedy search (fast;
#: branch-and-bound over long rules can take long — bound it with ``time_limit``)
_DEFAULTS = {**PRESETS["COB"], "search": "greedy"}

_PARAM_DOC = """
    Parameters
    ----------
    n_rules : int, default=10
        Number of rules *k* (boosting rounds; the intercept is not counted).
    objective : {"gs", "gb", "xgb", "ogb"} or None, default=None
        Rule objective (docs/explanation/boosting.md). None: from ``preset`` (default preset COB:
        "ogb").
    weight_update : {"stagewise", "xgb", "corrective"} or None, default=None
        Weight update (docs/explanation/boosting.md eqs. 3, 6, 7). None: from ``preset``
        ("corrective").
    search : {"greedy", "beam", "bnb", "enumerate"} or None, default=None
        Rule search: greedy, beam of width ``beam_width``, branch-and-bound (``"enumerate"``:
        its set-enumeration form, without prefix masks, slower). None: from
        ``preset``, or "greedy" without a preset (branch-and-bound over long rules can
        take long: it is anytime — set ``time_limit`` — and proves its rules quickly
        with ``max_rule_length`` ≤ 2 or few ``max_thresholds``).
    beam_width : int, default=5
        Beam width *w* of ``search="beam"``.
    max_rule_length : int or None, default=None
        At most this many restricted features per rule (a two-sided interval
        ``a < x_j <= b`` is one, as rules are printed): the same language as the exact
        estimators with the same value.
    max_propositions : int or None, default=None
        At most this many propositions per rule, *c(q)* of [OGB] (an interval counts two;
        realkd's rule length). Both caps hold when both are given.
    max_thresholds : int or None, default=None
        At most this many quantile thresholds per feature (None: all midpoints).
    thresholds : sequence of d array-likes or None, default=None
        Explicit cut points per feature (overrides ``max_thresholds``), as in the exact
        estimators: the same query language for both (e.g. to compare with another
        learner's bins).
    reg : float, default=0.0
        Ridge λ of R_λ = (1/n) Σ l + (λ/n)‖β‖² (docs/explanation/notation.md).
    epsilon : float, default=1e-3
        ε > 0 of the ogb objective.
    fit_intercept : bool, default=True
        Fit the background rule β0 (outside the count ``n_rules``).
    time_limit : float or None, default=None
        Seconds for the whole fit, shared by all rules (None = unlimited; each rule
        search gets an equal share of what is left). A stopped search contributes the
        best rule it found; ``limit_reached_`` records it and a ``SolveLimitWarning`` is
        issued. Past the budget each rule is at least the best single proposition, but
        rule searches start only within 0.25 s of it (on 100 000 rows one search takes
        longer): then the model has the rules found so far, at least one
        (``rounds_skipped_`` counts the others).
    node_limit : int or None, default=None
        Node expansions of all rule searches together (None = unlimited); as
        ``time_limit``.
    max_memory : int or None, default=None
        Bytes for one branch-and-bound search (None: a quarter of the machine's
        available memory, at most 8 GiB); beyond it the search continues depth first
        (docs/explanation/box_search.md).
    random_state : int, RandomState or None, default=None
        Unused (the learners are deterministic); accepted for API uniformity.
    verbose : bool, default=False
        Print the progress of long rule searches (nodes, best value, bound) to stderr.
    n_jobs : int or None, default=1
        Threads of the branch-and-bound rule search (``search="bnb"``): its open subtrees
        are searched in parallel (docs/explanation/box_search.md, "Every core, then a
        cluster"); -1: one per core. A finished search returns the same rule and bound.
    scheduler : str, dask.distributed.Client or None, default=None
        A Dask scheduler address or client: the same split on a cluster.
    preset : {"SGS", "SGB", "SXB", "CGB", "COB"} or None, default=None
        Named variant filling in ``objective``, ``weight_update`` and ``search``
        (docs/explanation/boosting.md). Explicit values of those three take precedence only when
        they agree
        with the preset; a conflicting explicit value raises ``InvalidParameterError``.
        With ``preset=None`` unset choices default to ogb + corrective + greedy.
"""


def _resolve(est: Any) -> dict[str, str]:
    """The three choices after applying ``preset`` (see the parameter docs)."""
    if est.preset is None:
        return {c: getattr(est, c) if getattr(est, c) is not None else _DEFAULTS[c]
                for c in _CHOICES}
    name = check_choice(est.preset, "preset", PRESETS)
    out = dict(PRESETS[name])
    for c in _CHOICES:
        v = getattr(est, c)
        if v is not None and v != out[c]:
            raise InvalidParameterError(
                f"`{c}`={v!r} conflicts with preset {name!r} (which uses {out[c]!r}); "
                f"set `{c}=None` or `preset=None`.")
    return out


class _RuleBoostingBase(BaseEstimator):
    _loss_name: str = "squared"

    def __init__(self, n_rules: int = 10, *, objective: str | None = None,
                 weight_update: str | None = None, search: str | None = None,
                 beam_width: int = 5, max_rule_length: int | None = None,
                 max_thresholds: int | None = None, reg: float = 0.0, epsilon: float = 1e-3,
                 fit_intercept: bool = True, time_limit: float | None = None,
                 node_limit: int | None = None, max_memory: int | None = None,
                 random_state: Any = None, verbose: bool = False,
                 preset: str | None = None, thresholds: Any = None,
                 max_propositions: int | None = None, n_jobs: int | None = 1,
                 scheduler: Any = None) -> None:
        self.n_rules = n_rules
        self.max_propositions = max_propositions
        self.n_jobs = n_jobs
        self.scheduler = scheduler
        self.thresholds = thresholds
        self.time_limit = time_limit
        self.node_limit = node_limit
        self.max_memory = max_memory
        self.verbose = verbose
        self.objective = objective
        self.weight_update = weight_update
        self.search = search
        self.beam_width = beam_width
        self.max_rule_length = max_rule_length
        self.max_thresholds = max_thresholds
        self.reg = reg
        self.epsilon = epsilon
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.preset = preset

    def _booster(self, loss: str) -> RuleBooster:
        check_seed(self.random_state)
        resolve_n_jobs(self.n_jobs)
        choices: dict[str, Any] = dict(_resolve(self))
        return RuleBooster(
            n_rules=self.n_rules, beam_width=self.beam_width,
            max_rule_length=self.max_rule_length, max_propositions=self.max_propositions,
            max_thresholds=self.max_thresholds, reg=self.reg, epsilon=self.epsilon,
            fit_intercept=self.fit_intercept, loss=loss,
            time_limit=self.time_limit, node_limit=self.node_limit,
            max_memory=self.max_memory, verbose=self.verbose, **choices)

    def _fit_dataset(self, ds: Dataset, booster: RuleBooster) -> None:
        if self.thresholds is not None:
            booster.thresholds = check_thresholds(self.thresholds, ds.d)
        # the box search's kernels compile (first run) or load before the time limit
        # starts: a first fit searches as many nodes as a second
        kernels = ensure_compiled("box") if booster.search == "bnb" else CompileReport()
        if kernels.message:
            say(self.verbose, kernels.message)
        start = time.perf_counter()
        with search_workers(resolve_n_jobs(self.n_jobs), self.scheduler):
            booster.fit(ds)
        self.timings_ = {"compile": kernels.seconds, "fit": time.perf_counter() - start}
        self.booster_ = booster
        self.rules_: RuleEnsemble = booster.rules_
        self.ensembles_: list[RuleEnsemble] = booster.ensembles_
        self.risk_path_: NDArray[np.float64] = booster.risk_path_
        self.certified_: bool = booster.certified_
        self.limit_reached_: str | None = booster.limit_reached_
        self.rounds_skipped_: int = booster.rounds_skipped_

    def _decision(self, X: Any) -> NDArray[np.float64]:
        Xf = predict_matrix(self, X)  # checks that the estimator is fitted
        return self.rules_.decision_function_encoded(Xf)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True
        return tags


class RuleBoostingRegressor(RegressorMixin, _RuleBoostingBase):
    __doc__ = ("Rule boosting regressor (squared or Poisson loss); predicts "
               "μ(f(x)) of the final ensemble.\n" + _PARAM_DOC + """
    loss : {"squared", "poisson"}, default="squared"
        Squared error or Poisson deviance (y >= 0, log link).

    Attributes
    ----------
    rules_ : RuleEnsemble
        The final ensemble f^(k).
    ensembles_ : list of RuleEnsemble
        f^(0), ..., f^(k) (``ensembles_[t]`` has t rules).
    risk_path_ : ndarray
        Training R_λ after each round (index 0: intercept-only or zero model).
    certified_ : bool
        Every round's rule is proved optimal for its objective (its search's valid bound
        equals its value; ``booster_.rounds_[t].search`` has each rule's value, bound
        and status).
    limit_reached_ : str or None
        ``"time_limit"``, ``"node_limit"`` or ``"memory_limit"`` when a limit stopped a
        rule search or kept one from starting, else None.
    rounds_skipped_ : int
        Rule searches that did not start because the time budget had been spent for more
        than 0.25 s.
    timings_ : dict
        Wall seconds: ``"compile"`` — compiling (first run only) or loading the box
        search's numba kernels, before ``time_limit`` started (:mod:`rulemip._kernels`)
        — and ``"fit"``.
    n_features_in_ : int
    feature_names_in_ : ndarray of str (only when X has string column names)
    """)

    def __init__(self, n_rules: int = 10, *, loss: str = "squared",
                 objective: str | None = None, weight_update: str | None = None,
                 search: str | None = None, beam_width: int = 5,
                 max_rule_length: int | None = None, max_thresholds: int | None = None,
                 reg: float = 0.0, epsilon: float = 1e-3, fit_intercept: bool = True,
                 time_limit: float | None = None, node_limit: int | None = None,
                 max_memory: int | None = None, random_state: Any = None,
                 verbose: bool = False, preset: str | None = None,
                 thresholds: Any = None, max_propositions: int | None = None,
                 n_jobs: int | None = 1, scheduler: Any = None) -> None:
        super().__init__(n_rules, objective=objective, weight_update=weight_update,
                         search=search, beam_width=beam_width,
                         max_rule_length=max_rule_length, max_thresholds=max_thresholds,
                         reg=reg, epsilon=epsilon, fit_intercept=fit_intercept,
                         time_limit=time_limit, node_limit=node_limit,
                         max_memory=max_memory, random_state=random_state,
                         verbose=verbose, preset=preset, thresholds=thresholds,
                         max_propositions=max_propositions, n_jobs=n_jobs,
                         scheduler=scheduler)
        self.loss = loss

    def fit(self, X: Any, y: Any) -> RuleBoostingRegressor:
        loss = check_choice(self.loss, "loss", ("squared", "poisson"))
        booster = self._booster(loss)  # validates parameters before touching the data
        self._fit_dataset(fit_dataset(self, X, y, loss=loss), booster)
        return self

    def predict(self, X: Any) -> NDArray[np.float64]:
        """μ(f(x)): the mean (squared) or the rate (Poisson)."""
        f = self._decision(X)
        return np.exp(np.minimum(f, 700.0)) if self.loss == "poisson" else f

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        if self.loss == "poisson":
            tags.target_tags.positive_only = True
        return tags


class RuleBoostingClassifier(ClassifierMixin, _RuleBoostingBase):
    __doc__ = ("Binary rule boosting classifier (logistic loss); multi-class is not "
               "supported.\n" + _PARAM_DOC + """
    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        The labels; ``classes_[1]`` is the positive class (+1 of the logistic loss).
    rules_, ensembles_, risk_path_, certified_, limit_reached_, n_features_in_
    feature_names_in_
        As for :class:`RuleBoostingRegressor`.
    """)

    def fit(self, X: Any, y: Any) -> RuleBoostingClassifier:
        booster = self._booster("logistic")
        if y is not None:
            binary_labels(self, y)
        ds = fit_dataset(self, X, y, loss="logistic")
        self.classes_ = np.asarray(ds.classes)
        self._fit_dataset(ds, booster)
        return self

    def decision_function(self, X: Any) -> NDArray[np.float64]:
        """f(x), the log-odds of ``classes_[1]``."""
        return self._decision(X)

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Columns: probability of ``classes_[0]`` and of ``classes_[1]``."""
        f = self._decision(X)
        p1 = np.where(f >= 0, 1.0 / (1.0 + np.exp(-np.abs(f))),
                      np.exp(-np.abs(f)) / (1.0 + np.exp(-np.abs(f))))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: Any) -> NDArray[Any]:
        f = self._decision(X)
        return np.asarray(self.classes_[(f > 0).astype(int)])

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
