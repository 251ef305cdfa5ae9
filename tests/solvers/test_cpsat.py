"""CP-SAT backend: exact integer scaling, refusals, limits, starts, callback, brute force."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rulemip.exceptions import UnsupportedCapabilityError
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
    brute_force_integer_optimum,
    general_integer_model,
    knapsack_model,
    lp_model,
    market_split,
    qp_model,
    random_milp,
)

pytest.importorskip("ortools")
pytestmark = pytest.mark.solver


@pytest.fixture(scope="module")
def cpsat():
    return get_backend("cpsat")


def test_version_and_capabilities(cpsat) -> None:
    assert cpsat.version().startswith("OR-Tools 9.")
    assert Capability.LP not in cpsat.capabilities  # no continuous variables
    res = cpsat.solve(knapsack_model())
    assert res.backend == "cpsat" and res.backend_version == cpsat.version()
    assert res.nodes is not None and res.nodes >= 0


def test_decimal_coefficients_are_scaled_exactly(cpsat) -> None:
    # fractional data: the scaled rows must describe exactly the same integer points
    m = MIPModel()
    x = m.add_variables("x", 3, lb=-2, ub=3, integer=True)
    m.add_constraints("r", matrix=sp.csr_matrix([[0.5, 1.25, -0.3], [0.1, 0.2, 0.7]]),
                      cols=x.ids, lower=[-1.05, 0.15], upper=[1.2, 1.3])
    m.add_objective(x.ids, [0.7, -1.1, 0.35])
    m.offset = 0.125
    model = m.to_standard_form()
    best = brute_force_integer_optimum(model, range(-2, 4))
    res = cpsat.solve(model)
    assert res.is_optimal
    assert res.bounds.primal == pytest.approx(best, abs=1e-12)
    assert res.bounds.dual == pytest.approx(best, abs=1e-12)


def test_integer_infeasible_row_after_scaling(cpsat) -> None:
    # 2x = 3 has no integer solution: the row is infeasible, not rounded
    m = MIPModel()
    m.add_variables("x", lb=0, ub=5, integer=True)
    m.add_constraints("odd", rows=[{0: 2.0}], lower=3.0, upper=3.0)
    res = cpsat.solve(m.to_standard_form())
    assert res.termination is TerminationReason.INFEASIBLE and res.x is None


def test_unscalable_coefficient_is_refused(cpsat) -> None:
    m = MIPModel()
    m.add_variables("x", 2, lb=0, ub=3, integer=True)
    m.add_constraints("third", rows=[{0: 1.0 / 3.0, 1: 1.0}], upper=2.0)
    with pytest.raises(UnsupportedCapabilityError, match="scale factor"):
        cpsat.solve(m.to_standard_form())


def test_refuses_continuous_quadratic_and_unbounded_columns(cpsat) -> None:
    with pytest.raises(UnsupportedCapabilityError, match="continuous"):
        cpsat.solve(lp_model())
    with pytest.raises(UnsupportedCapabilityError, match="continuous"):
        cpsat.solve(general_integer_model())  # one continuous slack column
    with pytest.raises(UnsupportedCapabilityError):
        cpsat.solve(qp_model())
    with pytest.raises(UnsupportedCapabilityError):
        select_backend("cpsat", {Capability.LP, Capability.INTEGER})
    m = MIPModel()
    m.add_variables("x", lb=0, integer=True)
    with pytest.raises(UnsupportedCapabilityError, match="infinite bound"):
        cpsat.solve(m.to_standard_form())


def test_time_limit_stops_with_valid_bound(cpsat) -> None:
    res = cpsat.solve(market_split(), SolveOptions(time_limit=0.5, threads=1))
    assert res.limit is Limit.TIME
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND)
    assert res.wall_time < 3.0
    assert res.bounds.dual >= 0.0  # the slack objective is non-negative; bound valid
    assert res.bounds.dual <= res.bounds.primal


def test_mip_start_is_accepted_and_kept_as_hint(cpsat) -> None:
    model = knapsack_model()
    best = cpsat.solve(model)
    res = cpsat.solve(model, start=best.x)
    assert res.is_optimal and res.bounds.primal == pytest.approx(best.bounds.primal)
    partial = np.full(model.n_cols, np.nan)
    partial[0] = 1.0
    assert cpsat.solve(model, start=partial).is_optimal


def test_seed_and_single_thread_are_reproducible(cpsat) -> None:
    model = random_milp(n=10, m=6, seed=7)
    a = cpsat.solve(model, SolveOptions(threads=1, seed=11))
    b = cpsat.solve(model, SolveOptions(threads=1, seed=11))
    assert a.options["seed"] == 11 and a.options["threads"] == 1
    assert np.array_equal(a.x, b.x) and a.nodes == b.nodes


def test_callback_interrupts(cpsat) -> None:
    seen: list[dict] = []

    def stop(info: dict) -> bool:
        seen.append(info)
        return True

    res = cpsat.solve(market_split(), SolveOptions(time_limit=5.0, threads=1, callback=stop))
    assert seen and res.limit is Limit.INTERRUPTED
    assert res.termination is TerminationReason.FEASIBLE and res.wall_time < 4.0


def test_node_limit_is_noted_not_silently_dropped(cpsat) -> None:
    res = cpsat.solve(knapsack_model(), SolveOptions(node_limit=10))
    assert any("node limit" in n for n in res.notes)
