r"""Certified-optimal k-rule ensembles as scikit-learn estimators (the math:
docs/explanation/interval_cover.md, box_selection.md and solving.md).

``ExactRuleEnsembleRegressor`` / ``ExactRuleEnsembleClassifier`` learn the additive rule
ensemble of at most ``n_rules`` rules (*k* in [GAP]) minimizing the regularized risk
:math:`R_\lambda` over all conjunctions of intervals whose bounds are candidate thresholds,
and prove it: ``certificate_`` records the incumbent's risk, a valid lower bound, the gap
and how they were obtained; :func:`rulemip.verify` re-checks it.

Two exact engines solve the same problem:

* ``"cip"`` — :class:`~rulemip.formulations.box_selection.BoxSelectionCIP`, the convex
  integer program over candidate boxes by outer approximation (needs ``reg > 0``);
* ``"mip"`` — :class:`~rulemip.formulations.interval_cover.IntervalCoverMIP`, the
  interval-cover MIP of [GAP] §4.1 (also for ``reg = 0``, then optimal only within a
  proved or stated weight box).

``engine="auto"`` takes the CIP when ``reg > 0`` and the number of candidate boxes is
moderate, column generation over boxes (``"cg"``) when it is not, and the MIP at
``reg = 0``. A time limit returns the incumbent with a valid bound and a
:class:`~rulemip.exceptions.SolveLimitWarning`, never an exception.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin

from rulemip._kernels import ensure_compiled, groups_for_fit
from rulemip._validation import (
    check_bool,
    check_choice,
    check_nonneg_float,
    check_positive_int,
    check_seed,
    seed_int,
)
from rulemip.algorithms import fit_plan
from rulemip.algorithms.fit_plan import ENGINES, PRESETS, fit_exact
from rulemip.budget import Budget, check_work_limit
from rulemip.certify import make_certificate
from rulemip.data import Dataset, candidate_thresholds, check_thresholds
from rulemip.estimators._inputs import binary_labels, fit_dataset, predict_matrix
from rulemip.estimators._progress import progress_printer, say
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning, SolverError
from rulemip.losses import get_loss
from rulemip.parallel import resolve_n_jobs, search_workers
from rulemip.rules import RuleEnsemble
from rulemip.rules.canonical import canonical_ensemble
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem

#: values of ``preset``: no first incumbent, or a boosting preset (docs/explanation/boosting.md)
INITS = PRESETS


class _ExactBase(BaseEstimator):
    _loss_choices: tuple[str, ...] = ("squared",)

    def __init__(self, n_rules: int = 3, *, loss: str = "squared", reg: float = 1e-3,
                 fit_intercept: bool = True, max_thresholds: int | None = 8,
                 thresholds: Any = None, max_rule_length: int | None = None,
                 engine: str = "auto", solver: str = "auto", time_limit: float | None = 60.0,
                 mip_gap: float = 1e-6, preset: str | None = "COB", warm_start: bool = False,
                 random_state: int | None = None, verbose: bool = False,
                 work_limit: int | None = None,
                 n_jobs: int | None = -1, scheduler: Any = None) -> None:
        self.n_rules = n_rules
        self.work_limit = work_limit
        self.n_jobs = n_jobs
        self.scheduler = scheduler
        self.loss = loss
        self.reg = reg
        self.fit_intercept = fit_intercept
        self.max_thresholds = max_thresholds
        self.thresholds = thresholds
        self.max_rule_length = max_rule_length
        self.engine = engine
        self.solver = solver
        self.time_limit = time_limit
        self.mip_gap = mip_gap
        self.preset = preset
        self.warm_start = warm_start
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ fitting
    def _validate_params_(self) -> None:
        check_positive_int(self.n_rules, "n_rules")
        check_choice(self.loss, "loss", self._loss_choices)
        check_nonneg_float(self.reg, "reg")
        check_bool(self.fit_intercept, "fit_intercept")
        check_positive_int(self.max_thresholds, "max_thresholds", allow_none=True)
        check_positive_int(self.max_rule_length, "max_rule_length", allow_none=True)
        check_choice(self.engine, "engine", ENGINES)
        check_nonneg_float(self.time_limit, "time_limit", allow_none=True,
                           strictly_positive=True)
        check_nonneg_float(self.mip_gap, "mip_gap")
        check_seed(self.random_state)
        check_work_limit(self.work_limit)
        resolve_n_jobs(self.n_jobs)
        self._init_preset()
        if not isinstance(self.solver, str):
            raise InvalidParameterError(f"`solver` must be a backend name; got {self.solver!r}.")
        # unknown names and missing packages fail in fit with the install hint, before any
        # work, even for an engine that needs no solver: `check_solver` resolves the
        # backend once per fit

    def _init_preset(self) -> str | None:
        """The boosting preset of the first incumbent (``preset``), checked; ``warm_start``
        is scikit-learn's boolean (reuse the previous fit), never a preset."""
        check_bool(self.warm_start, "warm_start")
        if self.preset not in INITS:
            raise InvalidParameterError(
                f"`preset` must be None or a boosting preset {INITS[1:]}; got {self.preset!r}.")
        return self.preset

    def _previous_fit(self, ds: Dataset, thresholds: list[np.ndarray]) -> Any:
        """With ``warm_start=True``: the previous fit's rules as a first incumbent, when
        they use the same features, at most ``n_rules`` rules and only cut points of the
        current candidate set (else None: it is not a point of this problem)."""
        if self.warm_start is not True or not hasattr(self, "rules_"):
            return None
        prev = self.rules_
        same_columns = prev.encoder is not None and \
            prev.encoder.feature_names == ds.feature_names
        if not same_columns or len(prev.rules) > self.n_rules \
                or prev.loss != self.loss:
            return None
        for rule in prev.rules:
            for c in rule.conditions:
                for v in (c.lower, c.upper):
                    if math.isfinite(v) and not np.any(np.isclose(thresholds[c.feature], v,
                                                                  rtol=0, atol=1e-12)):
                        return None
        if self.max_rule_length is not None and any(
                r.n_features > self.max_rule_length for r in prev.rules):
            return None
        return prev

    def _thresholds_for(self, ds: Dataset) -> list[np.ndarray]:
        if self.thresholds is None:
            return candidate_thresholds(ds.X, self.max_thresholds, ds.sample_weight)
        return check_thresholds(self.thresholds, ds.d)

    def _fit_dataset(self, ds: Dataset) -> None:
        # every one-rule box search of the fit (the one-rule fit, the warm start's rounds,
        # pricing, the swap step) splits over ``n_jobs`` threads or ``scheduler``
        with search_workers(self.n_jobs, self.scheduler):
            self._fit_dataset_searched(ds)

    def _fit_dataset_searched(self, ds: Dataset) -> None:
        """validate → Dataset (done by ``fit``) → the exact fit's plan → certificate."""
        # the kernels are compiled (or loaded from numba's cache) before the budget
        # starts: a first run proves what a second does
        kernels = ensure_compiled(*groups_for_fit(
            Language(self.n_rules, max_rule_length=self.max_rule_length), loss=self.loss,
            reg=self.reg))
        if kernels.message:
            say(self.verbose, kernels.message)
        budget = Budget.from_time_limit(self.time_limit, work_limit=self.work_limit)
        self.timings_ = {"compile": kernels.seconds, "fit": 0.0}
        thresholds = self._thresholds_for(ds)
        seed = seed_int(self.random_state)
        problem = self._problem(ds, thresholds)
        fit = fit_exact(problem, engine=self.engine, solver=self.solver, mip_gap=self.mip_gap,
                        warm_start=self._previous_fit(ds, thresholds), seed=seed,
                        callback=progress_printer() if self.verbose else None, budget=budget,
                        preset=self._init_preset(), warm_start_source="previous fit")
        result, report = fit.result, fit.report
        self.boosting_risk_ = report.boosting_risk
        self.warm_start_limited_ = report.warm_start_limited
        self.warm_start_limit_: str | None = report.warm_start_limit
        self.init_source_ = report.init_source
        self.local_starts_: tuple[tuple[str, float, float, bool], ...] = \
            tuple(report.local_starts)
        self.result_ = result
        self.engine_ = fit.engine
        self.thresholds_ = thresholds
        if result.ensemble is None:
            raise SolverError(
                f"the {fit.engine} engine found no feasible rule ensemble "
                f"({result.termination.value}); raise `time_limit` or try another `solver`.")
        # one representative among rules tied by covering the same rows (rulemip.rules.
        # canonical): weighted and repeated data, or shuffled rows, give the same model
        self.rules_ = canonical_ensemble(_with_encoder(result.ensemble, ds), problem)
        if not result.is_optimal:
            warnings.warn(
                f"solve stopped before proving optimality ({result.termination.value}, "
                f"limit={None if result.limit is None else result.limit.value}); returning the "
                f"incumbent with risk {result.risk:.6g} and valid lower bound "
                f"{result.lower_bound:.6g} (gap {result.gap:.2%}).", SolveLimitWarning,
                stacklevel=3)
        self.certificate_ = make_certificate(
            problem, self.rules_, risk=result.risk,
            lower_bound=result.lower_bound, status=result.termination.value,
            bound_valid=result.bound_valid, engine=fit.engine, backend=result.backend,
            backend_version=result.backend_version,
            options={"time_limit": self.time_limit, "work_limit": self.work_limit,
                     "work_spent": budget.work_spent(), "mip_gap": self.mip_gap,
                     "init": self._init_preset(), "seed": seed,
                     "max_thresholds": self.max_thresholds,
                     "threshold_source": "data" if self.thresholds is None else "explicit"},
            wall_time=result.wall_time, notes=tuple(result.notes),
            **({"threshold_rule": self.max_thresholds} if self.thresholds is None else {}))
        if fit.local_optimality is not None:
            self.certificate_ = dataclasses.replace(self.certificate_,
                                                    local_optimality=fit.local_optimality)
        self.timings_["fit"] = budget.elapsed()

    # ------------------------------------------------------------ one phase of the plan
    def _problem(self, ds: Dataset, thresholds: list[np.ndarray]) -> KRuleProblem:
        """The problem this estimator fits on ``ds`` (built once, handed to the plan)."""
        return KRuleProblem.of(ds, self.n_rules, loss=self.loss, reg=self.reg,
                               fit_intercept=self.fit_intercept, thresholds=thresholds,
                               max_rule_length=self.max_rule_length)

    def _warm_start_model(self, ds: Dataset, thresholds: list[np.ndarray],
                          budget: Budget) -> Any:
        """The plan's boosting warm start alone (:class:`~rulemip.algorithms.fit_plan.
        BoostingStart`) within ``budget``, its report kept on the estimator."""
        preset = self._init_preset()
        if preset is None:
            return None
        start, report = fit_plan.first_incumbent(self._problem(ds, thresholds),
                                                 preset=preset, budget=budget)
        self.warm_start_limited_ = report.warm_start_limited
        self.warm_start_limit_ = report.warm_start_limit
        self.boosting_risk_ = report.boosting_risk
        return start

    def _two_rule_bound_phase(self, ds: Dataset, thresholds: list[np.ndarray],
                              budget: Budget, result: Any) -> Any:
        """The plan's two-rule branch and bound (:class:`~rulemip.algorithms.fit_plan.
        TwoRuleBound`) after an engine's ``result``, decided."""
        return fit_plan.after_engine(fit_plan.TwoRuleBound(), result,
                                     self._problem(ds, thresholds), budget=budget,
                                     mip_gap=self.mip_gap)

    def _decision(self, X: Any) -> np.ndarray:
        """:math:`f(x)` on the link scale."""
        Xf = predict_matrix(self, X)  # checks that the estimator is fitted
        return self.rules_.decision_function_encoded(Xf)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True  # DataFrame columns are one-hot encoded
        return tags


def _with_encoder(ensemble: Any, ds: Dataset) -> Any:
    return RuleEnsemble(ensemble.rules, ensemble.intercept, ensemble.loss, ds.encoder,
                        ds.classes)


class ExactRuleEnsembleRegressor(RegressorMixin, _ExactBase):
    """Certified-optimal additive rule ensemble for regression (squared or Poisson loss).

    Parameters
    ----------
    n_rules : int, default 3
        Maximum number of rules, *k* in [GAP] (the intercept is not counted).
    loss : {"squared", "poisson"}
    reg : float, default 1e-3
        Ridge :math:`\\lambda` in :math:`R_\\lambda = \\frac1n(\\sum l + \\lambda\\|\\beta\\|^2)`.
    fit_intercept : bool, default True
        Unpenalized background rule :math:`\\beta_0`; with False an all-covering rule may
        be one of the k rules (the setting of [GAP]).
    max_thresholds : int or None, default 8
        Candidate cut points per feature by quantile bins (None: all midpoints).
    thresholds : list of arrays, optional
        Explicit cut points per feature (overrides ``max_thresholds``).
    max_rule_length : int or None
        Maximum number of features a rule may restrict.
    engine : {"auto", "cip", "cip-bnb", "cg", "cell-bnb", "kbox", "mip"}
        ``"cip"``: box-selection CIP (enumeration or outer approximation); ``"cip-bnb"``:
        the same CIP by branch and bound over boxes (squared loss; fastest certifier at
        moderate ridges on 2–3 features); ``"cg"``: the same CIP by column generation,
        boxes priced by rule search (tables with many features;
        docs/explanation/column_generation.md); ``"cell-bnb"``: cell-sweep branch and bound
        (squared loss, any ``reg >= 0``); ``"kbox"``: the exact search over every pair or
        triple of boxes of at most ``max_rule_length`` features (squared loss, k ≤ 3, any
        ``reg >= 0``; docs/explanation/kbox_search.md); ``"mip"``: the interval-cover MIP.
        ``"auto"``: ``"kbox"`` for two squared-loss rules of a capped length when its box
        table fits in memory, else ``"cip"`` up to 20 000 candidate boxes, ``"cg"``
        beyond, ``"mip"`` at ``reg = 0``.
    solver : str, default "auto"
        Backend name (``rulemip.solvers.backend_names()``).
    time_limit : float or None, default 60
        Seconds; the incumbent and a valid bound are returned when it is hit. A fit that
        has not proved its result within ``mip_gap`` spends the whole limit: with squared
        loss the time the engine leaves goes to rule swaps and kicks, and a model no single
        rule swap improves is recorded as such (``certificate_.local_optimality``,
        docs/explanation/local_optimality.md). Wall time depends on the machine: two
        fits stopped by it may differ; use ``work_limit`` for a reproducible fit.
    work_limit : int or None, default None
        The deterministic limit: units of work (nodes of the branch and bounds and box
        searches, supports enumerated, local-search evaluations, outer-approximation
        iterations and the backend's MIP nodes — docs/explanation/solving.md, "Limits").
        Every phase gets its share of the work left as it gets its share of the time, and
        stops when it is spent; the same data, parameters and ``random_state`` then give
        the same model, bound and status on any machine (as long as ``time_limit`` is not
        reached first: give a generous one, or None). The result has a valid bound and
        status ``"feasible"`` with ``limit="node"`` when the work limit stopped it.
        ``certificate_.options`` records it and the work spent.
    mip_gap : float, default 1e-6
        Relative gap at which the solve stops and reports optimality.
    preset : boosting preset or None, default "COB"
        Boosting preset ({"SGS", "SGB", "SXB", "CGB", "COB"}, the ``preset`` of
        :class:`RuleBoostingRegressor`) whose ensemble, fitted on
        the problem's own candidate thresholds within 30 % of the time budget, is the
        first incumbent; None: none. With squared loss it is one of several starts (also
        SGB and a (k + 1)-leaf tree on the same thresholds), each ended 1-swap optimal,
        the best handed to the engine.
    warm_start : bool, default False
        scikit-learn's meaning: with True, a refit also offers the previous fit's rules
        as the first incumbent (when they are a point of the new problem; the better of
        them and ``preset`` is used). A boosting preset goes in ``preset``.
    random_state : int or None
        Seed passed to the solver.
    verbose : bool
        Print incumbent, bound and gap while solving.
    n_jobs : int or None, default -1
        Threads of the compiled searches of the fit: the one-rule box search (the one-rule
        fit, the warm start's rounds, pricing, the swap step), whose open subtrees are
        searched in parallel (docs/explanation/box_search.md, "Every core, then a
        cluster"), and the k-box search's pair scan (docs/explanation/kbox_search.md);
        -1: one per core (the default: every core), 1: serial. A finished search returns
        the same model and bound as with 1.
    scheduler : str, dask.distributed.Client or None
        A Dask scheduler address or client: the same split on a cluster.

    Attributes
    ----------
    rules_ : RuleEnsemble
    result_ : ExactResult
    certificate_ : Certificate
    boosting_risk_ : float
        Training risk of the ``preset`` boosting model (nan without one).
    warm_start_limit_ : str or None
        How the boosting warm start was cut short by its share of the time limit (e.g.
        ``"time limit: 1 of 3 rule searches stopped, 2 not started"``; then
        ``boosting_risk_`` is that of the rules it found, not of boosting run to its end,
        and the result's notes say so), or None when it ran to its end.
    timings_ : dict
        Wall seconds: ``"compile"`` — compiling (first run only) or loading the numba
        kernels, before the fit's time limit started (:mod:`rulemip._kernels`) — and
        ``"fit"``, the fit within its time limit.
    init_source_ : str or None
        Where the first incumbent came from: the ``preset``, ``"previous fit"``
        (``warm_start=True``) or None.
    """

    _loss_choices = ("squared", "poisson")

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> ExactRuleEnsembleRegressor:
        self._validate_params_()
        ds = fit_dataset(self, X, y, loss=self.loss, sample_weight=sample_weight)
        self._fit_dataset(ds)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Mean response :math:`\\mu(f(x))`."""
        f = self._decision(X)  # checks that the estimator is fitted
        return get_loss(self.rules_.loss).inverse_link(f)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        # a model of a few rules is deliberately coarse: scikit-learn's R² > 0.5 check
        # on its generic data does not apply (a k-rule fit is certified, not flexible)
        tags.regressor_tags.poor_score = True
        if self.loss == "poisson":
            tags.target_tags.positive_only = True
        return tags


class ExactRuleEnsembleClassifier(ClassifierMixin, _ExactBase):
    """Certified-optimal additive rule ensemble for binary classification (logistic loss).

    Parameters are those of :class:`ExactRuleEnsembleRegressor` (``loss`` is fixed to
    ``"logistic"``). ``classes_`` holds the two labels; the larger one is the positive class.
    """

    _loss_choices = ("logistic",)

    def __init__(self, n_rules: int = 3, *, loss: str = "logistic", reg: float = 1e-3,
                 fit_intercept: bool = True, max_thresholds: int | None = 8,
                 thresholds: Any = None, max_rule_length: int | None = None,
                 engine: str = "auto", solver: str = "auto", time_limit: float | None = 60.0,
                 mip_gap: float = 1e-6, preset: str | None = "COB", warm_start: bool = False,
                 random_state: int | None = None, verbose: bool = False,
                 work_limit: int | None = None,
                 n_jobs: int | None = -1, scheduler: Any = None) -> None:
        super().__init__(n_rules, loss=loss, reg=reg, fit_intercept=fit_intercept,
                         max_thresholds=max_thresholds, thresholds=thresholds,
                         max_rule_length=max_rule_length, engine=engine, solver=solver,
                         time_limit=time_limit, mip_gap=mip_gap, preset=preset,
                         warm_start=warm_start, random_state=random_state,
                         verbose=verbose, work_limit=work_limit, n_jobs=n_jobs,
                         scheduler=scheduler)

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> ExactRuleEnsembleClassifier:
        self._validate_params_()
        if y is not None:
            binary_labels(self, y)
        ds = fit_dataset(self, X, y, loss="logistic", sample_weight=sample_weight)
        self.classes_ = np.asarray(ds.classes)
        self._fit_dataset(ds)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """:math:`f(x)`, the log-odds of ``classes_[1]``."""
        return self._decision(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Columns: probability of ``classes_[0]`` and of ``classes_[1]``."""
        p1 = get_loss("logistic").inverse_link(self.decision_function(X))
        return np.column_stack([1.0 - p1, p1])

    def predict(self, X: Any) -> np.ndarray:
        f = self.decision_function(X)
        return self.classes_[(f > 0).astype(int)]

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        tags.classifier_tags.poor_score = True
        return tags
