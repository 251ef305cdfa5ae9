r"""Approximation-gap studies: boosting against the certified optimum, k by k ([GAP] §3–4).

For every k = 1..k_max and every boosting variant b this computes the boosting risk
:math:`R_b(k)`, and — once per k — the exact engine's incumbent :math:`UB(k)` (risk of a
decoded model recomputed from data) and valid lower bound :math:`LB(k)`, warm-started from
the best boosting model of that k. The certified gap interval is

.. math:: R_b(k) - \min R_\lambda \in [R_b(k) - UB(k),\; R_b(k) - LB(k)],

and normalized by :math:`R(f_\emptyset)`, the risk of the best constant model
(``fit_intercept=True``) or of the zero model (``fit_intercept=False``, the setting of
[GAP]'s theory). Per variant, ``diff_max = max_k (R_b(k) − UB(k))`` and ``k_star`` its
argmax, as in [GAP] Table 1 (``diff_max`` is certified: the true gap is at least it).

Time: ``time_limit`` is seconds *per k, every phase included*. A study runs under one
:class:`~rulemip.budget.Budget` of ``k_max · time_limit`` seconds: the boosting runs
(one per variant, up to ``k_max``) share at most :data:`BOOSTING_SHARE` of it, each an
equal share of what is left to them (a booster stopped by its share keeps the best rules
its searches found, :class:`~rulemip.boosting.RuleBooster`), and the exact solve at each k
gets an equal share of what is left for the remaining k (at most ``time_limit`` more than
that share is never given). A sweep task (one k, :mod:`rulemip.sweeps`) does the same
within ``time_limit``. So a study ends within its budget plus the time of one
indivisible step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from rulemip.budget import Budget
from rulemip.certify.certificate import Certificate, make_certificate
from rulemip.certify.theory import GapClassification, classify_gaps
from rulemip.data import Dataset, candidate_thresholds, check_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.losses import get_loss
from rulemip.rules import RuleEnsemble
from rulemip.rules.problem import KRuleProblem

BOOSTING_VARIANTS = ("SGS", "SGB", "SXB", "CGB", "COB")
MIP_BOOSTING = "MIP-boosting"
VARIANTS = (*BOOSTING_VARIANTS, MIP_BOOSTING)
COLUMNS = ["k", "variant", "risk_boost", "incumbent", "bound", "gap_lo", "gap_hi",
           "gap_lo_norm", "gap_hi_norm", "status"]
TABLE_COLUMNS = [*COLUMNS, "null_risk"]  # R(f_∅), kept so a table normalizes on its own

BOOSTING_SHARE = 0.5
"""Largest share of a study's (or a sweep task's) time budget that its boosting runs may
use together; the exact solves get the rest (module docstring)."""


@dataclass(frozen=True)
class SolveSpec:
    """How the exact engine is run at every k."""

    engine: str = "auto"
    solver: str = "auto"
    time_limit: float | None = 60.0
    mip_gap: float = 1e-6
    seed: int = 0
    mip_boosting_time_limit: float | None = 30.0
    #: ``max_thresholds`` the problem's thresholds were derived with (``None``: all
    #: midpoints), or ``"explicit"`` for thresholds given by the caller; recorded in
    #: certificates
    threshold_rule: int | str | None = "explicit"


@dataclass
class GapStudy:
    """Result of :func:`gap_study`.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per (k, variant), columns ``k, variant, risk_boost, incumbent, bound,
        gap_lo, gap_hi, gap_lo_norm, gap_hi_norm, status``.
    summary : pandas.DataFrame
        Indexed by variant, with ``diff_max``, ``diff_max_norm`` and ``k_star``.
    null_risk : float
        :math:`R(f_\\emptyset)`, used for normalizing.
    certificates : dict
        The exact solve's certificate per k.
    """

    table: Any
    summary: Any
    null_risk: float
    certificates: dict[int, Certificate] = field(default_factory=dict)
    boosting_models: dict[tuple[int, str], RuleEnsemble] = field(default_factory=dict)

    def classify(self, variant: str | None = None) -> GapClassification:
        """Classify ``diff_max_norm`` at ``k_star`` against Theorem 1 (one dataset, so
        one gap per variant, or the given variant only)."""
        s = self.summary if variant is None else self.summary.loc[[variant]]
        s = s[s["k_star"] > 0]
        return classify_gaps(s["diff_max_norm"].to_numpy(), s["k_star"].astype(int).tolist())

    def save(self, out_dir: str | Path) -> Path:
        """Write ``gap_table.csv``, ``gap_table.json``, ``gap_summary.csv`` and
        ``certificates/k{k}.json`` under ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.table.to_csv(out / "gap_table.csv", index=False)
        self.table.to_json(out / "gap_table.json", orient="records", indent=2)
        self.summary.to_csv(out / "gap_summary.csv")
        cert_dir = out / "certificates"
        for k, cert in self.certificates.items():
            cert.save(cert_dir / f"k{k}.json")
        return out


def null_risk(ds: Dataset, loss: str, fit_intercept: bool) -> float:
    """:math:`R(f_\\emptyset)`: best constant model, or the zero model without intercept."""
    lo = get_loss(loss)
    c = lo.best_constant(ds.y, ds.sample_weight) if fit_intercept else 0.0
    return lo.risk(np.full(ds.n, c), ds.y, sample_weight=ds.sample_weight)


def boosting_path(problem: KRuleProblem, variant: str, solve: SolveSpec,
                  budget: Budget | None = None) -> list[tuple[float, RuleEnsemble]]:
    """``[(R_b(k), f_k) for k = 1..k_max]`` of one variant, ``k_max = problem.n_rules``
    (one boosting run: the k-rule model of a boosting run is its state after k rounds),
    within ``budget`` (default unlimited): a booster gets its remaining time as
    ``time_limit``, MIP-boosting at most an equal share of it per round."""
    ds, k_max = problem.dataset, problem.n_rules
    seconds = None if budget is None else budget.remaining()
    if variant == MIP_BOOSTING:
        from rulemip.algorithms.krule.mip_boosting import mip_boosting

        per_round = solve.mip_boosting_time_limit
        if seconds is not None:
            share = seconds / k_max
            per_round = share if per_round is None else min(per_round, share)
        rounds = mip_boosting(problem, variant="stagewise", solver=solve.solver,
                              time_limit_per_round=per_round)
        path = [(float(r.risk), r.ensemble) for r in rounds if r.ensemble is not None]
        empty = problem.empty_model()
        return _pad_path(path, k_max, (problem.risk(empty), _with_encoder(empty, ds)))
    from rulemip.boosting import RuleBooster

    booster = RuleBooster.from_preset(variant, n_rules=k_max, loss=problem.loss,
                                      reg=problem.reg, fit_intercept=problem.fit_intercept,
                                      max_thresholds=None,
                                      max_rule_length=problem.max_rule_length,
                                      time_limit=None)
    booster.thresholds = problem.thresholds  # same language as the exact engine
    booster.fit(ds, budget=budget)  # the study's budget: its time and its work
    path = [(float(booster.risk_path_[k]), booster.ensembles_[k])
            for k in range(1, len(booster.ensembles_))]
    start = (float(booster.risk_path_[0]), booster.ensembles_[0])
    return _pad_path(path, k_max, start)


def _with_encoder(ensemble: RuleEnsemble, ds: Dataset) -> RuleEnsemble:
    return RuleEnsemble(ensemble.rules, ensemble.intercept, ensemble.loss, ds.encoder,
                        ds.classes)


def _pad_path(path: list[tuple[float, RuleEnsemble]], k_max: int,
              start: tuple[float, RuleEnsemble]) -> list[tuple[float, RuleEnsemble]]:
    """Extend a run that stopped early (no rule improved the objective) to ``k_max``: its
    last model — the rule-free ``start`` if it added none (constant gradient: constant
    ``y`` with an intercept, one row, identical rows) — is a valid model with at most
    ``k`` rules for every later ``k``."""
    if not path:
        path = [start]
    return path + [path[-1]] * (k_max - len(path))


def exact_at_k(problem: KRuleProblem, solve: SolveSpec, warm_start: RuleEnsemble | None,
               callback: Callable[[dict[str, Any]], None] | None = None,
               budget: Budget | None = None) -> tuple[Any, Certificate]:
    """The exact fit of ``problem`` (one k) — the estimators' plan
    (:data:`~rulemip.algorithms.fit_plan.FIT_PLAN`) from the boosting model
    ``warm_start`` — with its certificate, within ``budget`` and at most
    ``solve.time_limit`` seconds."""
    from rulemip.algorithms.fit_plan import fit_exact

    ds = problem.dataset
    fit = fit_exact(problem, engine=solve.engine, solver=solve.solver, mip_gap=solve.mip_gap,
                    warm_start=warm_start, seed=solve.seed, callback=callback,
                    budget=Budget.coerce(budget, solve.time_limit), warm_start_source="boosting")
    res, engine = fit.result, fit.engine
    ens = res.ensemble if res.ensemble is not None else RuleEnsemble(loss=problem.loss)
    ens = RuleEnsemble(ens.rules, ens.intercept, ens.loss, ds.encoder, ds.classes)
    cert = make_certificate(
        problem, ens, risk=res.risk, lower_bound=res.lower_bound,
        status=res.termination.value, bound_valid=res.bound_valid, engine=engine,
        backend=res.backend, backend_version=res.backend_version,
        options={"time_limit": solve.time_limit, "mip_gap": solve.mip_gap,
                 "seed": solve.seed, "max_thresholds": solve.threshold_rule,
                 "threshold_source": "explicit" if solve.threshold_rule == "explicit"
                 else "data"},
        wall_time=res.wall_time, notes=res.notes,
        # made by candidate_thresholds(X, max_thresholds) (study_problem): not derived again
        **({} if solve.threshold_rule == "explicit"
           else {"threshold_rule": solve.threshold_rule}))
    if fit.local_optimality is not None:
        cert = replace(cert, local_optimality=fit.local_optimality)
    return res, cert


def rows_for_k(k: int, boost: dict[str, tuple[float, RuleEnsemble]], cert: Certificate,
               null: float) -> list[dict[str, Any]]:
    """One table row per variant at one k (see the module docstring)."""
    rows = []
    status = cert.status if cert.bound_valid else f"{cert.status} (bound not proved)"
    for variant, (rb, _) in boost.items():
        lo, hi = rb - cert.risk, rb - cert.lower_bound
        rows.append({"k": k, "variant": variant, "risk_boost": rb, "incumbent": cert.risk,
                     "bound": cert.lower_bound, "gap_lo": lo, "gap_hi": hi,
                     "gap_lo_norm": lo / null if null > 0 else math.nan,
                     "gap_hi_norm": hi / null if null > 0 else math.nan, "status": status,
                     "null_risk": null})
    return rows


def summarize(table: Any, null: float) -> Any:
    """``diff_max``, ``diff_max_norm`` and ``k_star`` per variant."""
    import pandas as pd

    out = []
    for variant, grp in table.groupby("variant", sort=False):
        i = int(np.argmax(grp["gap_lo"].to_numpy()))
        row = grp.iloc[i]
        out.append({"variant": variant, "diff_max": float(row["gap_lo"]),
                    "diff_max_norm": float(row["gap_lo"]) / null if null > 0 else math.nan,
                    "k_star": int(row["k"])})
    return pd.DataFrame(out).set_index("variant")


def boosting_paths(problem: KRuleProblem, variants: Sequence[str], solve: SolveSpec,
                   budget: Budget,
                   say: Callable[[str], None] = lambda _msg: None
                   ) -> dict[str, list[tuple[float, RuleEnsemble]]]:
    """:func:`boosting_path` of every variant up to ``problem.n_rules`` rules, together
    within :data:`BOOSTING_SHARE` of ``budget``, each variant an equal share of what is
    left to them."""
    boost_budget = budget.fraction(BOOSTING_SHARE)
    paths = {}
    for i, v in enumerate(variants):
        say(f"boosting {v} up to k={problem.n_rules}")
        paths[v] = boosting_path(problem, v, solve,
                                 boost_budget.fraction(1.0 / (len(variants) - i)))
    return paths


def study_problem(ds: Dataset, k_max: int, *, loss: str, reg: float, fit_intercept: bool,
                  max_thresholds: int | None, thresholds: Sequence[Any] | None,
                  max_rule_length: int | None) -> KRuleProblem:
    """The problem every method of the study solves (at ``k_max`` rules; one k is
    :meth:`~rulemip.rules.problem.KRuleProblem.with_rules`), its settings checked as the
    estimators check them (:mod:`rulemip._validation`, :func:`rulemip.data.check_thresholds`)."""
    from rulemip._validation import check_bool, check_nonneg_float, check_positive_int

    check_nonneg_float(reg, "reg")
    check_bool(fit_intercept, "fit_intercept")
    check_positive_int(max_rule_length, "max_rule_length", allow_none=True)
    ths = (candidate_thresholds(ds.X, max_thresholds) if thresholds is None
           else check_thresholds(thresholds, ds.d))
    return KRuleProblem.of(ds, k_max, loss=loss, reg=float(reg),
                           fit_intercept=bool(fit_intercept), thresholds=ths,
                           max_rule_length=max_rule_length)


def threshold_rule(max_thresholds: int | None, thresholds: Sequence[Any] | None
                   ) -> int | str | None:
    """How a study's thresholds were made, as certificates record it."""
    return max_thresholds if thresholds is None else "explicit"


def check_study_settings(k_max: Any, variants: Sequence[str], *, solver: Any,
                         max_thresholds: Any, time_limit: Any = None,
                         mip_boosting_time_limit: Any = None, mip_gap: Any = 0.0,
                         seed: Any = 0) -> None:
    """Refuse settings of a study before any work: ``k_max``, ``variants``, ``solver``
    (installed, see :func:`rulemip._solver_names.check_solver_name`), ``max_thresholds``, and
    each limit by its own name and value (``time_limit`` is per k: the study's budget
    ``k_max · time_limit`` is derived after this check, so a message never shows the
    product)."""
    from rulemip._solver_names import check_solver_name
    from rulemip._validation import check_nonneg_float, check_positive_int, check_seed

    check_positive_int(k_max, "k_max")
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown or not variants:
        raise InvalidParameterError(
            f"`variants` must be a non-empty subset of {VARIANTS}; unknown: {unknown}.")
    check_positive_int(max_thresholds, "max_thresholds", allow_none=True)
    check_nonneg_float(time_limit, "time_limit", allow_none=True, strictly_positive=True)
    check_nonneg_float(mip_boosting_time_limit, "mip_boosting_time_limit", allow_none=True,
                       strictly_positive=True)
    check_nonneg_float(mip_gap, "mip_gap")
    check_seed(seed, "seed")
    check_solver_name(solver)


def gap_study(X: Any, y: Any, k_max: int, variants: Sequence[str] = VARIANTS, *,
              loss: str = "squared", reg: float = 1e-6, fit_intercept: bool = False,
              max_thresholds: int | None = None, thresholds: Sequence[Any] | None = None,
              max_rule_length: int | None = None, engine: str = "auto", solver: str = "auto",
              time_limit: float | None = 60.0, mip_gap: float = 1e-6, seed: int = 0,
              mip_boosting_time_limit: float | None = 30.0,
              progress: Callable[[str], None] | None = None,
              work_limit: int | None = None) -> GapStudy:
    """How far from optimal is boosting on this data, k by k? (module docstring)

    Parameters
    ----------
    X, y : data (numpy or pandas; for ``loss="logistic"`` any two labels).
    k_max : largest number of rules studied.
    variants : boosting presets (``"SGS", "SGB", "SXB", "CGB", "COB"``) and/or
        ``"MIP-boosting"`` (idealized stagewise boosting: each round solves the MIP for the
        truly best single rule).
    loss, reg, fit_intercept, max_thresholds, thresholds, max_rule_length : the problem
        (the same for every method; ``fit_intercept=False`` is the setting of the theory).
    engine, solver, time_limit, mip_gap, seed : the exact solve at every k (a row stopped
        by its limit keeps its valid interval and says so in ``status``). ``time_limit``
        is seconds per k for every phase, boosting included: the study ends within
        ``k_max · time_limit`` (module docstring). Every k runs the exact estimators'
        plan (:data:`~rulemip.algorithms.fit_plan.FIT_PLAN`) from the best boosting model.
    work_limit : the deterministic limit of the whole study (units of work,
        docs/explanation/solving.md, "Limits"), shared as its time is; None: none.
    """
    import pandas as pd

    from rulemip._kernels import ensure_compiled
    from rulemip._validation import python_scalar, seed_int

    check_study_settings(k_max, variants, solver=solver, max_thresholds=max_thresholds,
                         time_limit=time_limit, mip_boosting_time_limit=mip_boosting_time_limit,
                         mip_gap=mip_gap, seed=seed)
    from rulemip._kernels import groups_for_fit
    from rulemip.budget import check_work_limit
    from rulemip.rules.language import Language

    check_work_limit(work_limit)
    # checked as given (messages show the user's value); numpy scalars (np.int64(2)) then
    # go on as the Python numbers they hold
    k_max, reg, max_thresholds, max_rule_length, time_limit, mip_gap, seed, \
        mip_boosting_time_limit, work_limit = python_scalar(
            (k_max, reg, max_thresholds, max_rule_length, time_limit, mip_gap, seed,
             mip_boosting_time_limit, work_limit))
    seed = seed_int(seed, "seed")
    # compiled (first run) before the study's clock starts
    ensure_compiled(*sorted({g for k in range(1, k_max + 1)
                             for g in groups_for_fit(Language(k, max_rule_length=max_rule_length),
                                                     loss=loss, reg=reg)}))
    budget = Budget.from_time_limit(None if time_limit is None else float(time_limit) * k_max,
                                    work_limit=work_limit)
    ds = Dataset.from_arrays(X, y, loss=loss)
    problem = study_problem(ds, k_max, loss=loss, reg=reg, fit_intercept=fit_intercept,
                            max_thresholds=max_thresholds, thresholds=thresholds,
                            max_rule_length=max_rule_length)
    solve = SolveSpec(engine, solver, time_limit, mip_gap, seed, mip_boosting_time_limit,
                      threshold_rule(max_thresholds, thresholds))
    # a named engine that cannot hold the problem (its size guard) fails before boosting
    from rulemip.algorithms.solve.registry import choose_engine

    choose_engine(engine, problem)
    say = progress or (lambda _msg: None)
    paths = boosting_paths(problem, variants, solve, budget, say)
    null = null_risk(ds, loss, fit_intercept)
    rows: list[dict[str, Any]] = []
    certs: dict[int, Certificate] = {}
    models: dict[tuple[int, str], RuleEnsemble] = {}
    for k in range(1, k_max + 1):
        boost = {v: paths[v][k - 1] for v in variants}
        best = min(boost.values(), key=lambda rb: rb[0])[1]
        say(f"exact k={k} (warm start risk {min(r for r, _ in boost.values()):.6g})")
        _, cert = exact_at_k(problem.with_rules(k), solve, best,
                             budget=budget.fraction(1.0 / (k_max - k + 1)))
        certs[k] = cert
        rows.extend(rows_for_k(k, boost, cert, null))
        for v in variants:
            models[(k, v)] = boost[v][1]
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    return GapStudy(table, summarize(table, null), null, certs, models)
