"""SCIP backend: MIQP, indicators and loss terms against closed forms and brute force;
limits, callback, starts, persistence."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from rulemip.exceptions import InvalidParameterError
from rulemip.model import MIPModel
from rulemip.solvers import Limit, SolveOptions, TerminationReason, get_backend
from rulemip.testing.conformance import (
    logistic_model,
    market_split,
    miqp_model,
    random_milp,
    unbounded_model,
)

pytest.importorskip("pyscipopt")
pytestmark = pytest.mark.solver


@pytest.fixture(scope="module")
def scip():
    return get_backend("scip")


def test_version_and_agreement_with_highs(scip) -> None:
    assert scip.version().startswith("SCIP ")
    highs = pytest.importorskip("highspy") and get_backend("highs")
    for seed in range(3):
        model = random_milp(n=8, m=5, seed=seed)
        a, b = scip.solve(model), highs.solve(model)
        assert a.is_optimal and b.is_optimal
        assert a.bounds.primal == pytest.approx(b.bounds.primal, abs=1e-9)


def test_random_miqp_matches_brute_force(scip, rng) -> None:
    n = 3
    for _ in range(3):
        L = rng.normal(size=(n, n))
        Q = L @ L.T + 0.1 * np.eye(n)  # PSD
        c = rng.normal(size=n) * 3
        m = MIPModel()
        x = m.add_variables("x", n, lb=-2, ub=2, integer=True)
        ii, jj = np.nonzero(Q)
        m.add_quadratic(ii, jj, Q[ii, jj])
        m.add_objective(x.ids, c)
        m.add_constraints("s", rows=[{0: 1.0, 1: 1.0, 2: 1.0}], upper=1.0)
        model = m.to_standard_form()
        best = min(model.objective_value(np.array(p, dtype=float))
                   for p in itertools.product(range(-2, 3), repeat=n) if sum(p) <= 1)
        res = scip.solve(model)
        assert res.is_optimal
        assert res.bounds.primal == pytest.approx(best, abs=1e-6)
        assert model.objective_value(res.x) == pytest.approx(best, abs=1e-6)


def test_poisson_loss_closed_form(scip) -> None:
    # one free prediction per group of counts: optimum at log(mean)
    y = np.array([0.0, 2.0, 7.0, 1.0])
    m = MIPModel()
    f = m.add_variables("f", 4, lb=-10, ub=10)
    m.add_constraints("tie", rows=[{0: 1, 1: -1}, {1: 1, 2: -1}, {2: 1, 3: -1}], lower=0,
                      upper=0)
    m.add_loss("poisson", f.ids, y, weights=np.array([1.0, 2.0, 1.0, 1.0]), scale=0.5)
    res = scip.solve(m.to_standard_form())
    w = np.array([1.0, 2.0, 1.0, 1.0])
    assert res.is_optimal
    assert res.x[0] == pytest.approx(math.log((w @ y) / w.sum()), abs=1e-3)


def test_loss_with_integer_choice(scip) -> None:
    # choose one of two fixed predictions for all points (binary z): logistic loss picks the
    # better constant; both candidates are evaluated in closed form
    y = np.array([1.0, 1.0, 1.0, -1.0])
    m = MIPModel()
    f = m.add_variables("f", 4, lb=-5, ub=5)
    z = m.add_variables("z", binary=True)
    # f_i = -1 + 3 z
    rows = [{int(f.ids[i]): 1.0, int(z.ids): -3.0} for i in range(4)]
    m.add_constraints("tie", rows=rows, lower=-1.0, upper=-1.0)
    m.add_loss("logistic", f.ids, y)
    res = scip.solve(m.to_standard_form())
    from rulemip.losses import get_loss

    vals = [float(get_loss("logistic").value(np.full(4, v), y).sum()) for v in (-1.0, 2.0)]
    assert res.is_optimal
    assert res.bounds.primal == pytest.approx(min(vals), rel=1e-6)
    assert round(res.x[int(z.ids)]) == int(np.argmin(vals))


def test_time_and_node_limits(scip) -> None:
    model = market_split(seed=1)
    res = scip.solve(model, SolveOptions(time_limit=0.3))
    assert res.limit is Limit.TIME
    assert res.bounds.dual <= res.bounds.primal
    res = scip.solve(model, SolveOptions(node_limit=3))
    assert res.limit is Limit.NODE and res.raw_status == "nodelimit"


def test_callback_interrupt(scip) -> None:
    seen: list[dict] = []
    res = scip.solve(market_split(seed=4),
                     SolveOptions(callback=lambda info: seen.append(info) or True))
    assert res.limit is Limit.INTERRUPTED
    assert res.termination is TerminationReason.FEASIBLE
    assert math.isfinite(seen[0]["primal"])


def test_mip_start_full_and_partial(scip) -> None:
    model = market_split(seed=5)
    start = np.zeros(model.n_cols)
    start[:30] = 1.0
    ax = model.A[:, :30] @ start[:30]
    gap = model.row_lower - ax
    start[30:34] = np.maximum(gap, 0)
    start[34:38] = np.maximum(-gap, 0)
    assert model.max_violation(start) <= 1e-9
    value = model.objective_value(start)
    res = scip.solve(model, SolveOptions(node_limit=1), start=start)
    assert res.bounds.primal <= value + 1e-9
    part = start.copy()
    part[30:] = np.nan
    res = scip.solve(model, SolveOptions(node_limit=1), start=part)
    assert res.has_solution


def test_start_completes_epigraph_columns(scip) -> None:
    model = miqp_model()
    res = scip.solve(model, SolveOptions(node_limit=1), start=np.array([1.0, 3.0, 2.0]))
    assert res.bounds.primal <= model.objective_value(np.array([1.0, 3.0, 2.0])) + 1e-9
    lm = logistic_model()
    first = scip.solve(lm)
    again = scip.solve(lm, start=first.x)
    assert again.bounds.primal == pytest.approx(first.bounds.primal, rel=1e-7)


def test_persistent_edits(scip) -> None:
    model = random_milp(n=6, m=3, seed=7)
    p = scip.persistent(model)
    base = p.solve()
    p.add_columns(np.array([-100.0]), np.array([0.0]), np.array([2.0]), np.array([True]),
                  sp.csr_matrix(np.ones((model.n_rows, 1))))
    res = p.solve()
    assert res.x[-1] == pytest.approx(2.0)
    p.set_col_bounds(np.array([model.n_cols]), np.array([0.0]), np.array([0.0]))
    assert p.solve().bounds.primal == pytest.approx(base.bounds.primal)
    p.set_integrality(np.zeros(p.n_cols, dtype=bool))
    assert p.solve().bounds.primal <= base.bounds.primal + 1e-9
    p.set_integrality(np.ones(p.n_cols, dtype=bool))
    assert p.solve().bounds.primal == pytest.approx(base.bounds.primal)
    p.set_objective(np.zeros(p.n_cols), 4.0)
    assert p.solve().bounds.primal == pytest.approx(4.0)
    p.delete_rows(np.array([0]))
    assert p.n_rows == model.n_rows - 1


def test_persistent_loss_model_objective_change(scip) -> None:
    lm = logistic_model()
    p = scip.persistent(lm)
    base = p.solve().bounds.primal
    c = np.zeros(p.n_cols)
    p.set_objective(c, 1.0)  # the loss terms stay in the objective
    assert p.solve().bounds.primal == pytest.approx(base + 1.0, rel=1e-6)


def test_infeasible_or_unbounded_probe(scip) -> None:
    p = scip.persistent(unbounded_model())
    p.solve()
    notes: list[str] = []
    assert p._infeasible_or_unbounded(SolveOptions(), notes) is TerminationReason.UNBOUNDED
    m = MIPModel()
    m.add_variables("x", 2, lb=-math.inf)
    m.add_constraints("r", rows=[{0: 1.0, 1: 1.0}, {0: 1.0, 1: 1.0}], lower=[3.0, -math.inf],
                      upper=[math.inf, 2.0])
    q = scip.persistent(m.to_standard_form())
    q.solve()
    assert q._infeasible_or_unbounded(SolveOptions(), notes) is TerminationReason.INFEASIBLE
    # the objective is restored after the probe (a zero objective would be optimal)
    assert p.solve().termination is TerminationReason.UNBOUNDED


def test_bad_extra_parameter(scip) -> None:
    with pytest.raises(InvalidParameterError, match="no/such/param"):
        scip.solve(random_milp(), SolveOptions(extra={"no/such/param": 1}))


def test_watchdog_interrupts_a_solve_that_ignores_its_clock(scip) -> None:
    """SCIP's own time limit is lifted through `extra` (as a plug-in stuck past it would
    behave): the watchdog still stops the solve at 1.1·limit + WATCHDOG_SLACK."""
    import time

    from rulemip.solvers.scip import WATCHDOG_SLACK, watchdog_delay

    assert watchdog_delay(10.0) == pytest.approx(11.0 + WATCHDOG_SLACK)
    t0 = time.perf_counter()
    res = scip.solve(market_split(seed=1),
                     SolveOptions(time_limit=0.5, extra={"limits/time": 1e6}))
    wall = time.perf_counter() - t0
    assert res.limit is Limit.TIME
    assert any("watchdog" in n for n in res.notes)
    assert watchdog_delay(0.5) - 0.1 <= wall <= watchdog_delay(0.5) + 1.5


def test_nlp_plugins_are_off(scip) -> None:
    from rulemip.solvers.scip import NLP_PLUGINS_OFF, ScipPersistent

    solver = ScipPersistent(logistic_model())
    solver.solve(SolveOptions(time_limit=5))
    params = solver.scip.getParams()
    assert {"heuristics/mpec/freq", "heuristics/subnlp/freq"} <= set(NLP_PLUGINS_OFF)
    for key, value in NLP_PLUGINS_OFF.items():
        assert params[key] == value, key


def test_relaxing_a_model_with_indicators_keeps_their_binaries(scip) -> None:
    """Issue 22 (found with the mixed table): the tangent-cut driver's LP phase relaxed an
    indicator's binary, SCIP's presolve failed ("Indicator variable ... is not binary") and
    the next edit raised a raw pyscipopt exception. The binary now stays integer, so the
    "relaxed" solve is valid and the model stays usable."""
    # min x  s.t.  z = 0 ⇒ x >= 2,  z = 1 ⇒ x >= 1,  cost 5 z  (optimum z = 0, x = 2)
    m = MIPModel()
    x = m.add_variables("x", 1, lb=0, ub=10)
    z = m.add_variables("z", binary=True)
    m.add_indicator(int(z.ids), 0, {int(x.ids[0]): 1.0}, ">=", 2.0)
    m.add_indicator(int(z.ids), 1, {int(x.ids[0]): 1.0}, ">=", 1.0)
    m.add_objective([int(x.ids[0]), int(z.ids)], [1.0, 5.0])
    p = scip.persistent(m.to_standard_form())
    p.set_integrality(np.zeros(p.n_cols, dtype=bool))
    zvar = next(v for v in p.scip.getVars() if v.name == "z" or v.name.startswith("z"))
    assert zvar.vtype() in ("BINARY", "INTEGER")
    relaxed = p.solve()
    assert relaxed.bounds.primal == pytest.approx(2.0)
    assert relaxed.bounds.dual <= 2.0 + 1e-9
    p.set_integrality(np.array([False, True]))
    exact = p.solve()
    assert exact.is_optimal and exact.bounds.primal == pytest.approx(2.0)
