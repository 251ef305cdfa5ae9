"""The fit's one decision equals its rule (rulemip.algorithms.fit_decision, module
docstring): over random sequences of phase outcomes, folding them with ``absorb`` and
deciding with ``decide_fit`` gives ``promote`` of the admitted model of least risk (the
later on ties), the best valid bound (an unproved one only when none is valid, 0 when
none) and the stop of the last phase that settled the fit."""

from __future__ import annotations

import math
import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rulemip.algorithms.fit_decision import FitState, PhaseOutcome, absorb, decide_fit
from rulemip.data import Dataset
from rulemip.formulations.result import ExactResult
from rulemip.rules import Condition, Rule, RuleEnsemble
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import Limit, TerminationReason
from rulemip.solvers.status import promote

MIP_GAP = 1e-6


def _problem() -> KRuleProblem:
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(14, 2)).astype(float)
    y = np.where(X[:, 0] > 1.5, 2.0, -1.0) + 0.5 * (X[:, 1] < 0.5) \
        + 0.1 * rng.normal(size=14)
    ds = Dataset.from_arrays(X, y)
    return KRuleProblem.of(ds, 2, reg=0.1, thresholds=[np.array([0.5, 1.5, 2.5])] * 2)


PROBLEM = _problem()
#: models offered by the phases: six in the language (one a copy of another: an exact
#: tie), two outside it (an off-grid bound, three rules)
POOL = [
    RuleEnsemble([], 0.2),
    RuleEnsemble([Rule([Condition(0, lower=1.5)], 2.5)], -1.0),
    RuleEnsemble([Rule([Condition(0, lower=1.5)], 2.9)], -1.1),
    RuleEnsemble([Rule([Condition(0, lower=1.5)], 2.9)], -1.1),
    RuleEnsemble([Rule([Condition(0, lower=1.5)], 3.0),
                  Rule([Condition(1, upper=0.5)], 0.5)], -1.0),
    RuleEnsemble([Rule([Condition(1, upper=0.5)], 1.0)], 0.0),
    RuleEnsemble([Rule([Condition(0, lower=1.7)], 3.0)], -1.0),
    RuleEnsemble([Rule([Condition(0, lower=1.5)], 3.0), Rule([Condition(1, upper=0.5)], 0.5),
                  Rule([Condition(1, lower=2.5)], 0.1)], -1.0),
]
RISKS = [PROBLEM.risk(m) for m in POOL]
ADMITTED = [not PROBLEM.violations(m) for m in POOL]
#: bounds around the risks: below all, between them, above some (refuted when claimed
#: valid above the incumbent)
BOUNDS = sorted({0.0, *(r * f for r in RISKS for f in (0.5, 0.999999, 1.0, 1.3))})

outcomes = st.builds(
    lambda m, b, valid, finished, limit: (m, PhaseOutcome(
        None if m is None else POOL[m], -math.inf if b is None else BOUNDS[b], finished,
        limit, (), valid)),
    st.none() | st.integers(0, len(POOL) - 1),
    st.none() | st.integers(0, len(BOUNDS) - 1),
    st.booleans(), st.booleans(),
    st.sampled_from([None, Limit.TIME, Limit.NODE, Limit.GAP, Limit.OTHER]))

RECORD = ExactResult(ensemble=None, risk=math.inf, lower_bound=-math.inf, gap=math.inf,
                     termination=TerminationReason.NO_SOLUTION_FOUND, engine="test")


def the_rule(models: list[int | None], sequence: list[PhaseOutcome]
             ) -> tuple[int | None, float, bool, PhaseOutcome]:
    """The rule, written out: the index in :data:`POOL` of the fit's model, its bound and
    whether it is valid, and the outcome of the phase that settled it."""
    ok = [m is not None and ADMITTED[m] for m in models]
    risks = [RISKS[m] if a and m is not None else math.inf for m, a in zip(models, ok)]
    best = min(risks, default=math.inf)
    chosen = max((i for i, r in enumerate(risks) if ok[i] and r == best), default=None)
    # a model is taken when it is no worse than every admitted model before it
    taken = [ok[i] and risks[i] <= min(risks[:i], default=math.inf)
             for i in range(len(sequence))]
    valid = [o.bound for o in sequence if math.isfinite(o.bound) and o.bound_valid]
    unproved = [o.bound for o in sequence if math.isfinite(o.bound) and not o.bound_valid]
    bound, bound_valid = (max(valid), True) if valid else \
        (max(unproved), False) if unproved else (0.0, True)
    settling = [i for i, o in enumerate(sequence) if taken[i] or math.isfinite(o.bound)]
    settled = sequence[settling[-1]] if settling else PhaseOutcome()
    model = None if chosen is None else models[chosen]
    return model, bound, bound_valid, settled


@settings(max_examples=300, deadline=None)
@given(st.lists(outcomes, min_size=1, max_size=6))
def test_decide_fit_is_the_rule(drawn: list[tuple[int | None, PhaseOutcome]]) -> None:
    models, sequence = [m for m, _ in drawn], [o for _, o in drawn]
    state = FitState(PROBLEM, MIP_GAP)
    for o in sequence:
        absorb(state, o)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a refuted bound warns; the rule decides it too
        got = decide_fit(state, RECORD)
        model, bound, valid, settled = the_rule(models, sequence)
        risk = math.inf if model is None else RISKS[model]
        want = promote(risk, bound, finished=settled.finished, mip_gap=MIP_GAP,
                       limit=settled.limit, bound_valid=valid, fallback_bound=0.0)
    assert (got.ensemble is None) == (model is None)
    if model is not None:
        assert got.ensemble is POOL[model]
        assert got.risk == risk
    assert got.termination is want.termination
    assert got.limit is want.limit
    assert got.lower_bound == want.lower_bound or (
        math.isnan(got.lower_bound) and math.isnan(want.lower_bound))
    assert got.gap == want.gap or (math.isinf(got.gap) and math.isinf(want.gap))
    assert got.bound_valid is want.bound_valid


def test_a_worse_model_later_never_replaces_the_incumbent() -> None:
    """The engine's model worse than the warm start: the warm start stays, said in the
    notes, and the engine's bound and stop still settle the fit."""
    state = FitState(PROBLEM, MIP_GAP)
    absorb(state, PhaseOutcome(POOL[2]), "warm start")
    absorb(state, PhaseOutcome(POOL[0], 0.0, False, Limit.TIME), "engine")
    assert state.model is POOL[2] and state.source == "warm start"
    assert state.limit is Limit.TIME and state.bound == 0.0
    assert any("better than the model of engine" in n for n in state.notes)
