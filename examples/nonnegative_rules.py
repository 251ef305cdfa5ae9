"""A new exact formulation in one file: k rules whose weights are all nonnegative.

Every rule may only *raise* the prediction ("monotone" ensembles: risk factors that add
up). The file implements the formulation protocol
(:class:`rulemip.Formulation`) by reusing the interval-cover model and adding one row
block, using only what the protocol declares (``build_model``, ``decode_solution``,
``encode_start``, ``polish``, and the built model's ``model``, ``dataset`` and ``block``),
then registers it as ``engine="mip-nonneg"``; the driver does the rest — backend choice,
native solve or tangent cuts, the time budget, the status.
``docs/howto/add_formulation.md`` walks through it; ``tests/integration/test_add_formulation.py``
checks it against brute force on every backend that can take it.

Run: ``python examples/nonnegative_rules.py``.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import lsq_linear

from rulemip import (
    Dataset,
    KRuleProblem,
    Language,
    RuleEnsemble,
    get_loss,
    register_formulation,
)
from rulemip.algorithms.fit_plan import ENGINES, solve_exact
from rulemip.budget import Budget
from rulemip.formulations.interval_cover import IntervalCoverMIP
from rulemip.formulations.protocol import BuiltModel
from rulemip.solvers.base import Capability, SolverBackend
from rulemip.testing.brute_force import distinct_boxes

FloatArray = NDArray[np.float64]


class NonnegativeRulesMIP:
    r"""Best ensemble of at most k rules with :math:`\beta_t \ge 0` for every rule.

    Model: the interval-cover MIP (its rule, cover and weight blocks) plus the row block
    ``"nonnegative"``: :math:`\beta_t \ge 0`. Its weight box stays valid because it comes
    from the ridge (:math:`\lambda\beta_t^2 \le W R_{\mathrm{ref}}`), which holds for every
    ensemble at most as risky as the reference — so ``reg`` must be positive.
    """

    engine = "mip-nonneg"

    def __init__(self, language: Language, *, loss: str = "squared", reg: float = 0.01
                 ) -> None:
        if reg <= 0:
            raise ValueError(f"`reg` must be > 0 for nonnegative rules; got {reg!r}.")
        self.loss, self.reg, self.fit_intercept = loss, reg, language.fit_intercept
        self.base = IntervalCoverMIP(language, loss=loss, reg=reg)

    # -- the protocol ------------------------------------------------------------------
    def needs(self) -> set[Capability]:
        return self.base.needs()

    def build_model(self, dataset: Dataset, *, backend: SolverBackend, native: bool,
                    warm_start: RuleEnsemble | None = None) -> BuiltModel:
        built = self.base.build_model(dataset, backend=backend, native=native,
                                      warm_start=None)  # a signed warm start may not fit
        beta = built.block("beta")
        built.model.add_constraints("nonnegative", rows=[{int(b): 1.0} for b in beta],
                                    lower=0.0)
        return built

    def encode_start(self, built: BuiltModel, ensemble: RuleEnsemble
                     ) -> FloatArray | None:
        if any(r.weight < 0 for r in ensemble.rules):
            return None
        return self.base.encode_start(built, ensemble)

    def decode_solution(self, built: BuiltModel, x: FloatArray
                        ) -> tuple[RuleEnsemble, float, list[str]]:
        # the rules of x (the base decodes them, one per rule slot, in slot order) with the
        # solver's own weights — the base's refit would drop the sign constraint — clipped
        # at 0 against solver tolerances, and the risk recomputed from the data
        # (the base builds on y/s: its columns times `response_scale` are in data units)
        x = np.asarray(x, dtype=float)
        rules = self.base.decode_solution(built, x)[0].rules
        unit = float(getattr(built, "response_scale", 1.0))
        beta = np.maximum(unit * x[built.block("beta")], 0.0)
        b0 = unit * float(x[built.block("beta0")][0]) if self.fit_intercept else 0.0
        ens = RuleEnsemble([r.with_weight(float(b)) for r, b in zip(rules, beta, strict=True)],
                           b0, self.loss)
        ds = built.dataset
        risk = get_loss(self.loss).risk(ens.decision_function_encoded(ds.X), ds.y,
                                        weights=ens.weights, reg=self.reg,
                                        sample_weight=ds.sample_weight)
        return ens, float(risk), []

    def polish(self, built: BuiltModel, x: FloatArray) -> FloatArray | None:
        # the base refits the weights without the sign constraint: keep its point only
        # when it is feasible for this model too (β ≥ 0), else there is no repair
        polished = self.base.polish(built, x)
        if polished is None or np.any(polished[built.block("beta")] < 0.0):
            return None
        return polished


def brute_force_nonnegative(problem: KRuleProblem) -> float | None:
    """The optimum of the nonnegative problem on a tiny instance, by enumeration: every
    multiset of k candidate boxes (a zero weight drops a rule, so "at most k" is covered),
    weights ``β ≥ 0`` (and a free intercept) by bounded least squares on the
    ridge-augmented system. Squared loss only (``None`` otherwise)."""
    if problem.loss != "squared":
        return None
    ds, k, reg = problem.dataset, problem.n_rules, problem.reg
    _, Q = distinct_boxes(ds.X, problem.thresholds, problem.fit_intercept,
                          problem.max_rule_length)
    w = np.ones(ds.n) if ds.sample_weight is None else np.asarray(ds.sample_weight)
    root = np.sqrt(w)
    free = [root[:, None]] if problem.fit_intercept else []
    lower = np.r_[np.zeros(k), np.full(len(free), -np.inf)]
    best = np.inf
    for combo in itertools.combinations_with_replacement(range(Q.shape[1]), k):
        A = np.vstack([np.hstack([root[:, None] * Q[:, combo], *free]),
                       np.hstack([np.sqrt(reg) * np.eye(k), np.zeros((k, len(free)))])])
        b = np.r_[root * ds.y, np.zeros(k)]
        fit = lsq_linear(A, b, bounds=(lower, np.inf), method="bvls")
        best = min(best, 2.0 * float(fit.cost) / float(w.sum()))
    return float(best)


def nonnegative_rules(problem: KRuleProblem) -> NonnegativeRulesMIP:
    """The formulation of one problem: the registry's factory."""
    return NonnegativeRulesMIP(problem.language, **problem.keywords())


# one call makes it an engine of solve_exact (and so of the estimators)
if "mip-nonneg" not in ENGINES:
    register_formulation("mip-nonneg", nonnegative_rules, needs_positive_reg=True,
                         description="k rules with nonnegative weights")


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 2.0, -1.0) + rng.normal(scale=0.3, size=30)
    ds = Dataset.from_arrays(X, y)
    ths = [np.quantile(X[:, j], [0.25, 0.5, 0.75]) for j in range(2)]
    res = solve_exact(KRuleProblem.of(ds, 2, reg=0.01, thresholds=ths), engine="mip-nonneg",
                      budget=Budget.from_time_limit(60))
    print(res.termination.value, f"risk {res.risk:.6f}, bound {res.lower_bound:.6f}")
    assert res.ensemble is not None
    print(res.ensemble.to_text())
