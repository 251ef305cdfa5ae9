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
    DEPRECATED,
    check_bool,
    check_choice,
    check_nonneg_float,
    check_positive_int,
    check_seed,
    renamed_param,
    seed_int,
)
from rulemip.algorithms.driver import (
    ENGINES,
    check_solver,
    choose_engine,
    method_spec,
    solve_exact,
)
from rulemip.boosting.range_search import search_workers
from rulemip.boosting.split_search import resolve_n_jobs
from rulemip.budget import Budget, check_work_limit
from rulemip.data import Dataset, candidate_thresholds, check_thresholds
from rulemip.estimators._inputs import binary_labels, fit_dataset, predict_matrix
from rulemip.estimators._progress import progress_printer, say
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning
from rulemip.losses import get_loss
from rulemip.rules.canonical import canonical_ensemble

#: values of ``preset``: no first incumbent, or a boosting preset (docs/explanation/boosting.md)
INITS = (None, "SGS", "SGB", "SXB", "CGB", "COB")
WARM_STARTS = INITS  # the former name of INITS (``warm_start`` held a preset until 0.3)
#: share of the fit's remaining time the boosting warm start may use; the exact engine gets
#: the rest (a warm start stopped by its share keeps the rules found so far)
WARM_START_SHARE = 0.3
#: squared loss: share of the time left after the warm start for the local phase (every
#: start ended 1-swap optimal, docs/explanation/local_optimality.md) before the engine
LOCAL_START_SHARE = 0.25
#: squared loss: share of the time left that the SGB start of the local phase may use
SGB_START_SHARE = 0.1
#: share of the time left after the local phase given to the exact engine; the rest (and
#: whatever the engine leaves unspent) goes to swaps and kicks from the engine's model
ENGINE_SHARE = 0.8
#: two squared-loss rules: share of the time left after the engine given to swaps and
#: kicks; the rest goes to the two-rule branch and bound, which raises the global bound
#: (rulemip.algorithms.two_rule_bound, docs/explanation/weak_ridge_bounds.md)
TWO_RULE_KICK_SHARE = 0.3
#: two squared-loss rules: the engine's share (its relaxation bound is the levels bound
#: there; the branch and bound's is higher, docs/benchmarks/exact.md §11)
TWO_RULE_ENGINE_SHARE = 0.4
#: memory of the two-rule branch and bound's node pool (it stops when the pool is full)
TWO_RULE_POOL_BYTES = 256 << 20


class _ExactBase(BaseEstimator):
    _loss_choices: tuple[str, ...] = ("squared",)

    def __init__(self, n_rules: int = 3, *, loss: str = "squared", reg: float = 1e-3,
                 fit_intercept: bool = True, max_thresholds: int | None = 8,
                 thresholds: Any = None, max_rule_length: int | None = None,
                 engine: str = "auto", solver: str = "auto", time_limit: float | None = 60.0,
                 mip_gap: float = 1e-6, preset: str | None = "COB", warm_start: Any = False,
                 random_state: int | None = None, verbose: bool = False,
                 init: Any = DEPRECATED, work_limit: int | None = None,
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
        self.init = init
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
        """The boosting preset of the first incumbent: ``preset``, or — deprecated — the
        same given as ``init`` (its name in 0.3) or as ``warm_start`` (which now has
        scikit-learn's meaning: reuse the previous fit)."""
        preset = renamed_param(self.preset, self.init, new="preset", old="init",
                               new_default="COB", stacklevel=5)
        given = "preset" if self.init is DEPRECATED or self.init == DEPRECATED else "init"
        if self.warm_start is None or isinstance(self.warm_start, str):
            warnings.warn(
                f"`warm_start={self.warm_start!r}` as a boosting preset is deprecated and "
                f"will be removed; use `preset={self.warm_start!r}` (`warm_start` is now "
                "scikit-learn's boolean: start from the previous fit).", FutureWarning,
                stacklevel=4)
            preset, given = self.warm_start, "warm_start"
        elif not isinstance(self.warm_start, bool | np.bool_):
            raise InvalidParameterError(
                f"`warm_start` must be True or False; got {self.warm_start!r}.")
        if preset not in INITS:
            raise InvalidParameterError(
                f"`{given}` must be None or a boosting preset {INITS[1:]}; got {preset!r}.")
        return preset

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

    def _warm_start_model(self, ds: Dataset, thresholds: list[np.ndarray],
                          budget: Budget) -> Any:
        """The boosting warm start on the problem's own candidate thresholds, within
        :data:`WARM_START_SHARE` of the fit's remaining time (a limit there keeps the rules
        found so far; the exact engine gets the rest)."""
        preset = self._init_preset()
        if preset is None:
            return None
        from rulemip.boosting import RuleBooster

        booster = RuleBooster.from_preset(
            preset, n_rules=self.n_rules, loss=self.loss, reg=self.reg,
            fit_intercept=self.fit_intercept, thresholds=thresholds,
            max_rule_length=self.max_rule_length)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SolveLimitWarning)
            booster.fit(ds, budget=budget.fraction(WARM_START_SHARE))
        self.warm_start_limited_ = bool(getattr(booster, "limit_reached_", False)) or any(
            issubclass(w.category, SolveLimitWarning) for w in caught)
        self.warm_start_limit_: str | None = (
            _warm_start_limit(booster) if self.warm_start_limited_ else None)
        self.boosting_risk_ = float(booster.risk_path_[-1])
        return booster.ensembles_[-1]

    def _fit_dataset(self, ds: Dataset) -> None:
        # every one-rule box search of the fit (the one-rule fit, the warm start's rounds,
        # pricing, the swap step) splits over ``n_jobs`` threads or ``scheduler``
        with search_workers(self.n_jobs, self.scheduler):
            self._fit_dataset_searched(ds)

    def _fit_dataset_searched(self, ds: Dataset) -> None:
        # parameters were validated by fit; the kernels are compiled (or loaded from
        # numba's cache) before the budget starts: a first run proves what a second does
        kernels = ensure_compiled(*groups_for_fit(n_rules=self.n_rules, loss=self.loss,
                                                   reg=self.reg))
        if kernels.message:
            say(self.verbose, kernels.message)
        # the backend is resolved once, here, and handed on (solve_exact and the driver
        # only check its capabilities)
        budget = Budget.from_time_limit(self.time_limit, work_limit=self.work_limit)
        self.timings_ = {"compile": kernels.seconds, "fit": 0.0}
        thresholds = self._thresholds_for(ds)
        engine = choose_engine(self.engine, self.reg, thresholds, self.max_rule_length,
                               n_rules=self.n_rules, loss=self.loss, n_samples=ds.X.shape[0])
        backend = check_solver(engine, self.solver, loss=self.loss, reg=self.reg)
        self.boosting_risk_ = math.nan
        self.warm_start_limited_ = False
        self.warm_start_limit_ = None
        previous = self._previous_fit(ds, thresholds)
        start = self._warm_start_model(ds, thresholds, budget)
        self.init_source_ = None if start is None else self._init_preset()
        if previous is not None and (start is None or _risk(previous, ds, self.reg)
                                     < _risk(start, ds, self.reg)):
            start, self.init_source_ = previous, "previous fit"
        callback = progress_printer() if self.verbose else None
        seed = seed_int(self.random_state)
        local = self.loss == "squared"
        two_rules = local and self.n_rules == 2
        engine_share = TWO_RULE_ENGINE_SHARE if two_rules else ENGINE_SHARE
        self.local_starts_: tuple[tuple[str, float, float, bool], ...] = ()
        # preset=None: the engine starts cold; an engine that meets the best models first by
        # itself declares so when it registers (MethodSpec.wants_local_start)
        if local and self._init_preset() is not None and \
                method_spec(engine).wants_local_start:
            start = self._local_phase(ds, thresholds, budget, start, seed)
        result = solve_exact(ds, self.n_rules, loss=self.loss, reg=self.reg,
                             fit_intercept=self.fit_intercept, thresholds=thresholds,
                             max_rule_length=self.max_rule_length, engine=engine,
                             solver=backend, mip_gap=self.mip_gap, warm_start=start,
                             seed=seed, callback=callback,
                             budget=budget.fraction(engine_share) if local else budget)
        local_record = None
        if local:
            kick_budget = budget.fraction(TWO_RULE_KICK_SHARE) if two_rules else budget
            result, local_record = self._swap_engine_model(ds, thresholds, kick_budget,
                                                           result, start, seed)
        if two_rules and result.ensemble is not None and not result.is_optimal:
            swapped = result.ensemble
            result = self._two_rule_bound_phase(ds, thresholds, budget, result)
            if result.ensemble is not swapped:
                local_record = None  # the 1-swap proof was about the model it replaced
        if self.warm_start_limit_ is not None:
            result = dataclasses.replace(result, notes=(
                *result.notes, f"the boosting warm start ({self._init_preset()}) was cut "
                f"short by its share of the time limit ({self.warm_start_limit_}); "
                "boosting_risk_ is the risk of the rules it found"))
        self.result_ = result
        self.engine_ = engine
        self.thresholds_ = thresholds
        if result.ensemble is None:
            from rulemip.exceptions import SolverError

            raise SolverError(
                f"the {engine} engine found no feasible rule ensemble "
                f"({result.termination.value}); raise `time_limit` or try another `solver`.")
        # one representative among rules tied by covering the same rows (rulemip.rules.
        # canonical): weighted and repeated data, or shuffled rows, give the same model
        self.rules_ = canonical_ensemble(_with_encoder(result.ensemble, ds), ds.X,
                                         thresholds, ds.sample_weight,
                                         fit_intercept=self.fit_intercept,
                                         max_rule_length=self.max_rule_length)
        if not result.is_optimal:
            warnings.warn(
                f"solve stopped before proving optimality ({result.termination.value}, "
                f"limit={None if result.limit is None else result.limit.value}); returning the "
                f"incumbent with risk {result.risk:.6g} and valid lower bound "
                f"{result.lower_bound:.6g} (gap {result.gap:.2%}).", SolveLimitWarning,
                stacklevel=3)
        from rulemip.certify import make_certificate

        self.certificate_ = make_certificate(
            ds, self.rules_, loss=self.loss, reg=self.reg, fit_intercept=self.fit_intercept,
            n_rules=self.n_rules, thresholds=thresholds, risk=result.risk,
            lower_bound=result.lower_bound, status=result.termination.value,
            bound_valid=result.bound_valid, engine=engine, backend=result.backend,
            backend_version=result.backend_version,
            options={"time_limit": self.time_limit, "work_limit": self.work_limit,
                     "work_spent": budget.work_spent(), "mip_gap": self.mip_gap,
                     "init": self._init_preset(), "seed": seed,
                     "max_thresholds": self.max_thresholds,
                     "threshold_source": "data" if self.thresholds is None else "explicit"},
            wall_time=result.wall_time, max_rule_length=self.max_rule_length,
            notes=tuple(result.notes))
        if local_record is not None:
            self.certificate_ = dataclasses.replace(self.certificate_,
                                                    local_optimality=local_record)
        self.timings_["fit"] = budget.elapsed()

    def _local_starts(self, ds: Dataset, thresholds: list[np.ndarray], budget: Budget,
                      start: Any) -> list[tuple[str, Any]]:
        """Starting models of the local phase: the warm start, SGB (when COB was the warm
        start) and the leaves of a (k + 1)-leaf tree on the candidate thresholds."""
        from rulemip.algorithms.multi_start import threshold_tree_rules
        from rulemip.boosting import RuleBooster
        from rulemip.rules import RuleEnsemble

        starts: list[tuple[str, Any]] = []
        if start is not None:
            starts.append((self.init_source_ or "warm start", start))
        if self._init_preset() != "SGB" and not budget.expired():
            sgb = RuleBooster.from_preset(
                "SGB", n_rules=self.n_rules, loss=self.loss, reg=self.reg,
                fit_intercept=self.fit_intercept, thresholds=thresholds,
                max_rule_length=self.max_rule_length)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SolveLimitWarning)
                sgb.fit(ds, budget=budget.fraction(SGB_START_SHARE))
            starts.append(("SGB", sgb.ensembles_[-1]))
        tree = threshold_tree_rules(ds, thresholds, self.n_rules + 1, self.max_rule_length)
        if tree:
            starts.append(("tree", RuleEnsemble(tree, 0.0, "squared", ds.encoder)))
        return starts

    def _local_phase(self, ds: Dataset, thresholds: list[np.ndarray], budget: Budget,
                     start: Any, seed: int) -> Any:
        """Squared loss: every start ended 1-swap optimal within
        :data:`LOCAL_START_SHARE` of the time left; the best becomes the engine's warm
        start (docs/explanation/local_optimality.md)."""
        from rulemip.algorithms.multi_start import best_local_model

        starts = self._local_starts(ds, thresholds, budget, start)
        found = best_local_model(ds, starts, self.n_rules, reg=self.reg,
                                 fit_intercept=self.fit_intercept, thresholds=thresholds,
                                 max_rule_length=self.max_rule_length,
                                 budget=budget.fraction(LOCAL_START_SHARE), kicks=False,
                                 seed=seed)
        if found is None:
            return start
        self.local_starts_ = found.starts
        if start is None or found.best.risk < _risk(start, ds, self.reg):
            self.init_source_ = f"{found.source}, then rule swaps"
            return _with_encoder(found.best.ensemble, ds)
        return start

    def _swap_engine_model(self, ds: Dataset, thresholds: list[np.ndarray], budget: Budget,
                           result: Any, start: Any, seed: int) -> tuple[Any, Any]:
        """Squared loss, engine not optimal: the rest of the budget goes to swaps from the
        engine's model (and the start), then kicks; a better model replaces the engine's
        (the engine's bound holds for every model of the language). Returns the result and
        the certificate's 1-swap record (None when nothing was proved)."""
        from rulemip.algorithms.local_swap import local_optimality_record
        from rulemip.algorithms.multi_start import best_local_model
        from rulemip.solvers.result import Limit, budget_limit
        from rulemip.solvers.status import promote

        if result.ensemble is None or result.is_optimal:
            return result, None
        starts = [("engine", result.ensemble)]
        if start is not None:
            starts.append(("start", start))
        found = best_local_model(ds, starts, self.n_rules, reg=self.reg,
                                 fit_intercept=self.fit_intercept, thresholds=thresholds,
                                 max_rule_length=self.max_rule_length, budget=budget,
                                 kicks=True, seed=seed)
        if found is None:
            return result, None
        best = found.best
        if not self._admits(best.ensemble, thresholds, []):
            return result, None
        note = (f"local phase: {len(found.starts)} start(s) "
                + ", ".join(f"{n} {a:.8g} -> {b:.8g}{' (1-swap optimal)' if ok else ''}"
                            for n, a, b, ok in found.starts)
                + f"; {found.kicks} kicks, {found.kicks_kept} kept")
        notes = (*result.notes, note)
        self.local_starts_ = (*self.local_starts_, *found.starts)
        if best.risk <= result.risk + 1e-12 * max(1.0, abs(result.risk)):
            # the engine's bound holds for every model of the language: the status of the
            # better model is decided by the one status rule
            verdict = promote(best.risk, result.lower_bound, finished=True,
                              mip_gap=self.mip_gap,
                              limit=budget_limit(budget) if budget.expired() else
                              (result.limit or Limit.OTHER),
                              bound_valid=result.bound_valid)
            result = dataclasses.replace(
                result, ensemble=best.ensemble, risk=best.risk, gap=verdict.gap,
                lower_bound=verdict.lower_bound, termination=verdict.termination,
                limit=verdict.limit,
                notes=(*notes, *verdict.notes, f"model from the local phase ({found.source}) "
                                               "replaces the engine's"))
        else:
            result = dataclasses.replace(result, notes=notes)
        result = dataclasses.replace(result, wall_time=budget.elapsed())  # the whole fit
        record = local_optimality_record(best) \
            if best.one_swap_optimal and result.ensemble is best.ensemble else None
        return result, record

    def _two_rule_bound_phase(self, ds: Dataset, thresholds: list[np.ndarray],
                              budget: Budget, result: Any) -> Any:
        """Two squared-loss rules, not proved: the rest of the budget goes to the branch
        and bound over both boxes (:mod:`rulemip.algorithms.two_rule_bound`). Its bound
        replaces the engine's when higher; a better model it meets replaces the incumbent;
        when it prunes every node the incumbent is optimal. Status through ``promote``."""
        from rulemip.algorithms.local_swap import refit_ensemble
        from rulemip.algorithms.two_rule_bound import two_rule_bound
        from rulemip.formulations.box_selection import BoxSelectionCIP
        from rulemip.rules import Rule
        from rulemip.rules.ensemble import conditions_from_box
        from rulemip.solvers.result import Limit, budget_limit
        from rulemip.solvers.status import promote

        if budget.expired() or self.reg <= 0.0:
            return result
        cells = BoxSelectionCIP(2, reg=self.reg, fit_intercept=self.fit_intercept,
                                thresholds=thresholds).reduce(ds)
        found = two_rule_bound(cells, self.reg, self.fit_intercept, upper=result.risk,
                               budget=budget, max_memory=TWO_RULE_POOL_BYTES,
                               max_rule_length=self.max_rule_length)
        ensemble, risk = result.ensemble, result.risk
        notes = [f"two-rule branch and bound: bound {found.bound:.8g} after {found.nodes} "
                 f"nodes in {found.seconds:.3g} s ({found.open_nodes} open"
                 f"{', node pool full' if found.pool_full else ''})"]
        if found.boxes is not None:
            rules = [Rule(conditions_from_box(lo, hi, ds.encoder), 1.0)
                     for lo, hi in found.boxes]
            cand, cand_risk = refit_ensemble(ds, rules, reg=self.reg,
                                             fit_intercept=self.fit_intercept,
                                             template=result.ensemble)
            if cand_risk < risk and self._admits(cand, thresholds, notes):
                ensemble, risk = cand, cand_risk
                notes.append("the two-rule branch and bound found the better model returned")
        lower = max(result.lower_bound, found.bound) if result.bound_valid else found.bound
        verdict = promote(risk, lower, finished=found.proved, mip_gap=self.mip_gap,
                          limit=None if found.proved else
                          (budget_limit(budget) if budget.expired() else Limit.OTHER),
                          bound_valid=True)
        return dataclasses.replace(
            result, ensemble=ensemble, risk=risk, lower_bound=verdict.lower_bound,
            gap=verdict.gap, termination=verdict.termination, limit=verdict.limit,
            bound_valid=verdict.bound_valid, wall_time=budget.elapsed(),
            notes=(*result.notes, *notes, *verdict.notes))

    def _admits(self, ensemble: Any, thresholds: list[np.ndarray], notes: list[str]) -> bool:
        """A model another phase offers is a model of this fit only in the fit's language
        (:mod:`rulemip.rules.language`: ``n_rules``, ``max_rule_length``, the candidate
        thresholds); else it is refused, with a note."""
        from rulemip.rules.language import language_violations

        bad = language_violations(ensemble, thresholds, n_rules=self.n_rules,
                                  max_rule_length=self.max_rule_length,
                                  fit_intercept=self.fit_intercept)
        if bad:
            notes.append("a model outside the language was refused (" + "; ".join(bad[:3])
                         + ")")
        return not bad

    def _decision(self, X: Any) -> np.ndarray:
        """:math:`f(x)` on the link scale."""
        Xf = predict_matrix(self, X)  # checks that the estimator is fitted
        return self.rules_.decision_function_encoded(Xf)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        tags.input_tags.categorical = True  # DataFrame columns are one-hot encoded
        return tags


def _warm_start_limit(booster: Any) -> str:
    """How a boosting warm start was cut short: the limit and how many of its rule
    searches it stopped (e.g. ``"time limit: 2 of 3 rule searches stopped"``)."""
    limit = str(getattr(booster, "limit_reached_", None) or "time_limit").replace("_", " ")
    rounds = getattr(booster, "rounds_", [])
    stopped = sum(1 for r in rounds if getattr(r.search, "limit_reached", False))
    return f"{limit}: {stopped} of {booster.n_rules} rule searches stopped"


def _risk(ensemble: Any, ds: Dataset, reg: float) -> float:
    return float(ensemble.risk(ds.X, ds.y, reg=reg, sample_weight=ds.sample_weight))


def _with_encoder(ensemble: Any, ds: Dataset) -> Any:
    from rulemip.rules import RuleEnsemble

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
        (squared loss, any ``reg >= 0``); ``"kbox"``: the exact search over every pair of
        boxes of at most ``max_rule_length`` features (squared loss, k ≤ 2, any
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
        them and ``preset`` is used). A boosting preset given here (the meaning before 0.3)
        still works with a ``FutureWarning``: pass it as ``preset``.
    random_state : int or None
        Seed passed to the solver.
    verbose : bool
        Print incumbent, bound and gap while solving.
    init : deprecated
        The name of ``preset`` in 0.3; still accepted with a ``FutureWarning`` at fit.
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
        ``"time limit: 2 of 3 rule searches stopped"``; then ``boosting_risk_`` is that
        of the rules it found, not of boosting run to its end, and the result's notes say
        so), or None when it ran to its end.
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
                 mip_gap: float = 1e-6, preset: str | None = "COB", warm_start: Any = False,
                 random_state: int | None = None, verbose: bool = False,
                 init: Any = DEPRECATED, work_limit: int | None = None,
                 n_jobs: int | None = -1, scheduler: Any = None) -> None:
        super().__init__(n_rules, loss=loss, reg=reg, fit_intercept=fit_intercept,
                         max_thresholds=max_thresholds, thresholds=thresholds,
                         max_rule_length=max_rule_length, engine=engine, solver=solver,
                         time_limit=time_limit, mip_gap=mip_gap, preset=preset,
                         warm_start=warm_start, random_state=random_state,
                         verbose=verbose, init=init, work_limit=work_limit, n_jobs=n_jobs,
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
