"""The tangent-cut outer-approximation driver on small convex MINLPs with known optima."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from rulemip.algorithms.convex.tangent_cuts import (
    TangentCutBackend,
    solve_model,
    solve_with_tangent_cuts,
)
from rulemip.model import MIPModel
from rulemip.solvers.base import Capability, get_backend
from rulemip.solvers.result import Limit, SolveOptions, TerminationReason

pytestmark = pytest.mark.solver
highspy = pytest.importorskip("highspy")

T = np.array([1.4, -2.6, 0.3])


def _model(loss: str = "squared", offdiag: bool = False) -> MIPModel:
    m = MIPModel("toy")
    x = m.add_variables("x", (3,), lb=-3, ub=3, integer=True)
    m.add_constraints("sum", rows=[{int(c): 1.0 for c in x.ids}], upper=1.0)
    y = {"squared": T, "logistic": np.array([1.0, -1.0, 1.0]),
         "poisson": np.array([2.0, 0.0, 1.0])}[loss]
    m.add_loss(loss, x.ids, y, weights=[1.0, 2.0, 0.5], scale=0.5)
    m.add_square(x.ids, 0.3)
    if offdiag:  # + 0.2 (x0 + x1)^2 as a non-diagonal PSD quadratic
        m.add_quadratic([x.ids[0], x.ids[1], x.ids[0], x.ids[1]],
                        [x.ids[0], x.ids[1], x.ids[1], x.ids[0]], [0.4, 0.4, 0.4, 0.4])
    return m


def _brute(m: MIPModel) -> float:
    sf = m.to_standard_form()
    best = math.inf
    for pt in itertools.product(range(-3, 4), repeat=3):
        x = np.asarray(pt, dtype=float)
        if sf.max_violation(x) <= 1e-9:
            best = min(best, sf.objective_value(x))
    return best


@pytest.mark.parametrize("loss", ["squared", "logistic", "poisson"])
@pytest.mark.parametrize("offdiag", [False, True])
def test_driver_finds_brute_force_optimum(loss: str, offdiag: bool) -> None:
    m = _model(loss, offdiag)
    sf = m.to_standard_form()
    opt = _brute(m)
    res = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=30))
    assert res.termination is TerminationReason.OPTIMAL
    assert res.bounds.primal == pytest.approx(opt, rel=1e-7, abs=1e-9)
    assert res.bounds.dual <= opt + 1e-9
    assert res.x is not None and sf.max_violation(res.x) < 1e-7
    lbs = [h["lb"] for h in res.history]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(lbs))
    assert all(h["lb"] <= opt + 1e-9 for h in res.history)  # valid at every iteration


class _NonPersistent:
    """HiGHS without the PERSISTENT capability: the driver must rebuild masters."""

    def __init__(self) -> None:
        self.inner = get_backend("highs")
        self.name = "highs-rebuild"
        self.capabilities = frozenset(set(self.inner.capabilities) - {Capability.PERSISTENT})
        self.install_hint = ""
        self.unsupported_combinations = self.inner.unsupported_combinations

    def available(self) -> bool:
        return True

    def version(self) -> str:
        return self.inner.version()

    def solve(self, model, options=None, start=None):  # type: ignore[no-untyped-def]
        return self.inner.solve(model, options, start)


def test_rebuild_path_and_wrapper_backend_agree() -> None:
    m = _model("squared", offdiag=True)
    sf = m.to_standard_form()
    opt = _brute(m)
    a = solve_with_tangent_cuts(sf, _NonPersistent(), SolveOptions(time_limit=30))
    b = TangentCutBackend("highs").solve(sf, SolveOptions(time_limit=30))
    c = solve_model(sf, get_backend("highs"), SolveOptions(time_limit=30))
    for r in (a, b, c):
        assert r.termination is TerminationReason.OPTIMAL
        assert r.bounds.primal == pytest.approx(opt, rel=1e-7)
    assert "rebuilt" in a.notes[0]


def test_time_limit_keeps_a_valid_bound() -> None:
    m = _model("logistic")
    sf = m.to_standard_form()
    opt = _brute(m)
    res = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=0.0))
    assert res.bounds.dual <= opt + 1e-9
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND,
                               TerminationReason.OPTIMAL)
    if res.termination is not TerminationReason.OPTIMAL:
        assert res.limit is not None


def test_start_is_used_as_incumbent() -> None:
    m = _model("poisson")
    sf = m.to_standard_form()
    start = np.array([1.0, -2.0, 0.0])
    res = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=30), start=start,
                                  lp_rounds=0)
    assert res.history[0]["ub"] <= sf.objective_value(start) + 1e-12
    assert res.bounds.primal == pytest.approx(_brute(m), rel=1e-7)


#: (objective, bound) of the tangent-cut driver on ``_model(loss, offdiag)`` as the
#: closure-based driver returned them before issue 23 (HiGHS, time limit 30 s, defaults):
#: a refactor of the loop must reproduce them with the same status (OPTIMAL)
PREVIOUS = {
    ("squared", False): (1.9625000000000001, 1.9624998884200802),
    ("squared", True): (2.162499999999999, 2.1624999999999988),
    ("logistic", False): (1.1331220729381286, 1.1331220729381286),
    ("logistic", True): (1.2130075659799042, 1.2130075659799042),
    ("poisson", False): (0.8610266217313876, 0.8610266217313876),
    ("poisson", True): (1.0201675359609101, 1.0201675359609101),
}


@pytest.mark.parametrize(("loss", "offdiag"), sorted(PREVIOUS))
def test_same_objective_bound_and_status_as_before(loss: str, offdiag: bool) -> None:
    sf = _model(loss, offdiag).to_standard_form()
    res = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=30))
    objective, bound = PREVIOUS[(loss, offdiag)]
    assert res.termination is TerminationReason.OPTIMAL and res.limit is None
    assert res.bounds.primal == pytest.approx(objective, rel=1e-9, abs=1e-12)
    assert res.bounds.dual == pytest.approx(bound, rel=1e-9, abs=1e-12)
    assert res.bounds.primal == pytest.approx(_brute(_model(loss, offdiag)), rel=1e-9)


def test_a_spent_budget_stops_like_a_zero_time_limit() -> None:
    from rulemip.budget import Budget

    sf = _model("logistic").to_standard_form()
    spent = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=30),
                                    budget=Budget.from_time_limit(0.0))
    zero = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=0.0))
    for res in (spent, zero):
        assert res.termination is not TerminationReason.OPTIMAL
        assert res.limit is Limit.TIME and res.master_solves == 0
    assert spent.bounds.dual == zero.bounds.dual


def test_auto_default_resolves_a_persistent_milp_master() -> None:
    """The default backend is ``"auto"``: a MILP master with rows in place (no rebuild
    note) that reaches the same optimum as the brute force."""
    m = _model("logistic", True)
    res = solve_with_tangent_cuts(m.to_standard_form(), options=SolveOptions(time_limit=30))
    assert Capability.PERSISTENT in get_backend(res.backend).capabilities
    assert "rebuilt" not in res.notes[0]
    assert res.termination is TerminationReason.OPTIMAL
    assert res.bounds.primal == pytest.approx(_brute(m), rel=1e-9)
    assert TangentCutBackend().inner.name == res.backend


def test_optimal_bound_never_above_the_objective() -> None:
    """The status comes from ``promote``: a converged run whose master bound overshoots
    the incumbent by rounding (logistic, adaptive gap, no LP rounds: 1 ulp above before
    issue 23) reports the bound clamped to the objective."""
    sf = _model("logistic", True).to_standard_form()
    res = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=30),
                                  adaptive_gap=True, lp_rounds=0)
    assert res.termination is TerminationReason.OPTIMAL
    assert res.bounds.dual <= res.bounds.primal
