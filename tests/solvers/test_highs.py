"""HiGHS backend: status mapping, limits, callback, MIP start, persistent masters."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from rulemip.exceptions import InvalidParameterError, UnsupportedCapabilityError
from rulemip.model import MIPModel
from rulemip.solvers import (
    Capability,
    Limit,
    SolveOptions,
    TerminationReason,
    get_backend,
    select_backend,
)
from rulemip.testing.conformance import (
    indicator_model,
    logistic_model,
    lp_model,
    market_split,
    miqp_model,
    qp_model,
    random_milp,
)

pytest.importorskip("highspy")
pytestmark = pytest.mark.solver


@pytest.fixture(scope="module")
def highs():
    return get_backend("highs")


def test_registry_and_version(highs) -> None:
    from rulemip.solvers.highs import HighsBackend

    assert isinstance(highs, HighsBackend)
    assert highs.version().startswith("1.")
    res = highs.solve(lp_model())
    assert res.backend == "highs" and res.backend_version == highs.version()
    assert res.iterations is not None and res.nodes is None  # an LP has no nodes


def test_lp_matches_scipy_linprog(highs, rng) -> None:
    from scipy.optimize import linprog

    n, m = 6, 4
    A = rng.uniform(0.1, 2.0, size=(m, n))
    b = rng.uniform(1.0, 5.0, size=m)
    c = -rng.uniform(0.5, 3.0, size=n)
    model = MIPModel()
    x = model.add_variables("x", n, lb=0.0, ub=4.0)
    model.add_constraints("r", matrix=sp.csr_matrix(A), cols=x.ids, upper=b)
    model.add_objective(x.ids, c)
    model.offset = 2.5
    res = highs.solve(model.to_standard_form())
    ref = linprog(c, A_ub=A, b_ub=b, bounds=[(0, 4)] * n, method="highs-ds")
    assert res.is_optimal
    assert res.bounds.primal == pytest.approx(ref.fun + 2.5, rel=1e-9)


def test_continuous_qp_and_miqp_rejection(highs) -> None:
    res = highs.solve(qp_model())
    assert res.is_optimal
    np.testing.assert_allclose(res.x, [0.5, 1.5], atol=1e-6)
    with pytest.raises(UnsupportedCapabilityError, match="MIQP"):
        highs.solve(miqp_model())
    with pytest.raises(UnsupportedCapabilityError):
        select_backend("highs", {Capability.INTEGER, Capability.QUADRATIC_OBJECTIVE})
    assert select_backend("highs", {Capability.LP, Capability.QUADRATIC_OBJECTIVE}) is highs


def test_indicators_and_losses_are_refused(highs) -> None:
    with pytest.raises(UnsupportedCapabilityError, match="indicator"):
        highs.solve(indicator_model())
    with pytest.raises(UnsupportedCapabilityError, match="loss"):
        highs.persistent(logistic_model())


def test_time_limit_returns_incumbent_and_valid_bound(highs) -> None:
    model = market_split(m=4, n=30, seed=1)
    res = highs.solve(model, SolveOptions(time_limit=0.3))
    assert res.limit is Limit.TIME
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND)
    assert res.bounds.dual <= res.bounds.primal
    if res.x is not None:
        assert model.max_violation(res.x) <= 1e-6
        assert model.objective_value(res.x) == pytest.approx(res.bounds.primal, abs=1e-6)


def test_gap_stop_is_feasible_not_optimal(highs) -> None:
    # with continuous slacks the LP bound of market split is 0, so a first incumbent has
    # gap 1 <= mip_gap = 1 (the time limit only guards against a regression)
    from dataclasses import replace

    model = market_split(seed=2)
    ints = model.integrality.copy()
    ints[30:] = False
    res = highs.solve(replace(model, integrality=ints),
                      SolveOptions(mip_gap=1.0, time_limit=20.0))
    assert res.termination is TerminationReason.FEASIBLE
    assert res.limit is Limit.GAP
    assert res.gap > 1e-6


def test_node_limit(highs) -> None:
    res = highs.solve(market_split(seed=3), SolveOptions(node_limit=5))
    assert res.limit is Limit.NODE
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND)


def test_callback_reports_and_interrupts(highs) -> None:
    seen: list[dict] = []

    def stop_at_first(info: dict) -> bool:
        seen.append(info)
        return True

    res = highs.solve(market_split(seed=4), SolveOptions(callback=stop_at_first))
    assert res.limit is Limit.INTERRUPTED
    assert res.termination is TerminationReason.FEASIBLE
    assert set(seen[0]) == {"time", "primal", "dual", "gap", "nodes"}
    # an LP reports once, at the end
    seen.clear()
    highs.solve(lp_model(), SolveOptions(callback=lambda info: seen.append(info)))
    assert len(seen) == 1 and seen[0]["primal"] == pytest.approx(-3.0)


def test_mip_start_is_used(highs) -> None:
    model = market_split(seed=5)
    good = highs.solve(model, SolveOptions(time_limit=1.0))
    assert good.x is not None
    # with one node and no start HiGHS's root heuristics are worse than a 1 s solve here;
    # with the start its incumbent is at least as good as the start
    res = highs.solve(model, SolveOptions(node_limit=1), start=good.x)
    assert res.bounds.primal <= good.bounds.primal + 1e-9
    partial = good.x.copy()
    partial[-8:] = np.nan  # slacks unknown: HiGHS completes the start
    res2 = highs.solve(model, SolveOptions(node_limit=1), start=partial)
    assert res2.bounds.primal <= good.bounds.primal + 1e-9


def test_persistent_master_grows(highs) -> None:
    model = random_milp(n=6, m=3, seed=7)
    p = highs.persistent(model)
    base = p.solve()
    assert base.is_optimal
    # add a column with a large reward and a row limiting it
    p.add_columns(np.array([-100.0]), np.array([0.0]), np.array([2.0]), np.array([True]),
                  sp.csr_matrix(np.ones((model.n_rows, 1))))
    assert p.n_cols == model.n_cols + 1
    res = p.solve()
    assert res.x[-1] == pytest.approx(2.0) and res.bounds.primal < base.bounds.primal
    p.set_col_bounds(np.array([model.n_cols]), np.array([0.0]), np.array([0.0]))
    assert p.solve().bounds.primal == pytest.approx(base.bounds.primal)
    # LP relaxation bounds the MIP from below, restoring integrality restores the MIP
    p.set_integrality(np.zeros(p.n_cols, dtype=bool))
    relaxed = p.solve()
    assert relaxed.nodes is None and relaxed.bounds.primal <= base.bounds.primal + 1e-9
    p.set_integrality(np.r_[model.integrality, True])
    assert p.solve().bounds.primal == pytest.approx(base.bounds.primal)
    # new objective with offset; delete_rows removes a row
    p.set_objective(np.zeros(p.n_cols), 4.0)
    assert p.solve().bounds.primal == pytest.approx(4.0)
    p.delete_rows(np.array([0]))
    assert p.n_rows == model.n_rows - 1


def test_persistent_qp_accepts_rows_and_columns(highs) -> None:
    p = highs.persistent(qp_model())
    p.add_rows(sp.csr_matrix([[1.0, -1.0]]), np.array([0.0]), np.array([0.0]))  # x = y
    res = p.solve()
    np.testing.assert_allclose(res.x, [1.0, 1.0], atol=1e-6)
    assert res.bounds.primal == pytest.approx(1.0, abs=1e-8)
    p.add_columns(np.array([1.0]), np.array([0.0]), np.array([1.0]), np.array([False]))
    assert p.solve().bounds.primal == pytest.approx(1.0, abs=1e-8)
    with pytest.raises(UnsupportedCapabilityError):
        p.set_integrality(np.array([True, False, False]))


def test_bad_inputs(highs) -> None:
    model = lp_model()
    with pytest.raises(InvalidParameterError, match="start"):
        highs.solve(model, start=np.zeros(2))
    with pytest.raises(InvalidParameterError, match="not_a_highs_option"):
        highs.solve(model, SolveOptions(extra={"not_a_highs_option": 1}))
    with pytest.raises(InvalidParameterError, match="time_limit"):
        highs.solve(model, SolveOptions(time_limit=-1.0))
    with pytest.raises(InvalidParameterError, match="threads"):
        highs.solve(model, SolveOptions(threads=0))
    p = highs.persistent(model)
    with pytest.raises(InvalidParameterError, match="columns"):
        p.add_rows(sp.csr_matrix(np.ones((1, 2))), np.array([0.0]), np.array([1.0]))


def test_threads_seed_and_extra_options(highs) -> None:
    model = random_milp(n=8, m=5, seed=11)
    a = highs.solve(model, SolveOptions(threads=1, seed=3))
    b = highs.solve(model, SolveOptions(threads=1, seed=3, extra={"presolve": "off"}))
    assert a.is_optimal and b.is_optimal
    assert a.bounds.primal == pytest.approx(b.bounds.primal)
    assert a.options["seed"] == 3 and b.options["extra"] == {"presolve": "off"}


def test_infeasible_or_unbounded_is_resolved(highs) -> None:
    # presolve often answers "infeasible or unbounded" for an unbounded MIP
    m = MIPModel()
    m.add_variables("x", 2, lb=-math.inf, integer=True)
    m.add_constraints("r", rows=[{0: 1.0, 1: 1.0}], lower=3.0)
    m.add_objective([0, 1], [1.0, 2.0])
    assert highs.solve(m.to_standard_form()).termination is TerminationReason.UNBOUNDED
    m2 = MIPModel()
    m2.add_variables("x", 2, lb=-math.inf)
    m2.add_constraints("r", rows=[{0: 1.0, 1: 1.0}, {0: 1.0, 1: 1.0}], lower=[3.0, -math.inf],
                       upper=[math.inf, 2.0])
    m2.add_objective([0, 1], [1.0, 2.0])
    assert highs.solve(m2.to_standard_form()).termination is TerminationReason.INFEASIBLE


def _slow_lp(m: int = 600, n: int = 1200):
    """A sparse random packing LP whose simplex takes about 2 000 iterations (≈ 1.4 s)."""
    rng = np.random.default_rng(0)
    M = MIPModel("slow_lp")
    x = M.add_variables("x", n, lb=0.0, ub=10.0)
    A = sp.random(m, n, density=0.05, random_state=1, format="csr")
    A.data = rng.uniform(-1, 1, A.nnz)
    M.add_constraints("r", matrix=A, cols=x.ids, lower=np.full(m, -np.inf),
                      upper=rng.uniform(0, 1, m))
    M.add_objective(x.ids, rng.uniform(-1, 0.2, n))
    return M.to_standard_form()


@pytest.mark.parametrize("kind", ["mip", "lp"])
def test_the_watchdog_holds_the_limit_where_highs_does_not_check_it(highs, kind) -> None:
    """Issue 30, item 8: HiGHS's own time limit is switched off (``extra``), so only
    rulemip's interrupt callbacks (MIP, simplex) can stop the solve; it must end within
    max(10 %, 2 s) of the limit, as a time limit with a valid bound."""
    import time

    model = market_split(m=5, n=40, seed=1) if kind == "mip" else _slow_lp()
    limit = 1.0 if kind == "mip" else 0.1  # the LP needs about 1.4 s
    t0 = time.perf_counter()
    res = highs.solve(model, SolveOptions(time_limit=limit, extra={"time_limit": 60.0}))
    wall = time.perf_counter() - t0
    assert wall <= limit + max(0.1 * limit, 2.0), wall
    assert res.limit is Limit.TIME
    assert any("deadline check" in n for n in res.notes)
    assert res.bounds.dual <= res.bounds.primal


def test_the_watchdog_leaves_a_finished_solve_alone(highs) -> None:
    res = highs.solve(random_milp(), SolveOptions(time_limit=30.0))
    assert res.termination is TerminationReason.OPTIMAL
    assert not any("deadline check" in n for n in res.notes)
