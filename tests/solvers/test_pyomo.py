"""Pyomo backend: default and named solvers ('pyomo:NAME'), refusals, limits, starts."""

from __future__ import annotations

import math

import pytest

from rulemip.exceptions import (
    BackendUnavailableError,
    InvalidParameterError,
    UnsupportedCapabilityError,
)
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
    knapsack_model,
    logistic_model,
    market_split,
    miqp_model,
    qp_model,
    random_milp,
)

pytest.importorskip("pyomo")
pytest.importorskip("highspy")
pytestmark = pytest.mark.solver


@pytest.fixture(scope="module")
def pyomo():
    return get_backend("pyomo")


@pytest.fixture(scope="module")
def appsi():
    return get_backend("pyomo:appsi_highs")


def test_default_solver_and_named_solver(pyomo, appsi) -> None:
    assert pyomo.name == "pyomo" and pyomo.solver_name == "highs"
    assert appsi.name == "pyomo:appsi_highs" and appsi.solver_name == "appsi_highs"
    assert get_backend("pyomo:appsi_highs") is appsi  # cached like plain names
    assert pyomo.version().startswith("Pyomo 6.") and "highs" in pyomo.version()
    res = appsi.solve(knapsack_model())
    assert res.backend == "pyomo:appsi_highs" and res.is_optimal
    assert select_backend("pyomo:appsi_highs", {Capability.INTEGER}) is appsi


def test_bad_names_are_refused() -> None:
    with pytest.raises(BackendUnavailableError, match="not installed"):
        get_backend("pyomo:no_such_solver_xyz")
    with pytest.raises(InvalidParameterError, match="sub-solver"):
        get_backend("highs:appsi_highs")
    with pytest.raises(InvalidParameterError, match="pyomo:NAME"):
        get_backend("pyomo:")


def test_qp_and_indicators(pyomo) -> None:
    res = pyomo.solve(qp_model())
    assert res.is_optimal and res.bounds.primal == pytest.approx(0.5, abs=1e-7)
    res = pyomo.solve(indicator_model())  # exact big-M rows from the bounds
    assert res.is_optimal and res.bounds.primal == pytest.approx(-3.0)
    assert indicator_model().max_violation(res.x) <= 1e-6


def test_refusals(pyomo, appsi) -> None:
    with pytest.raises(UnsupportedCapabilityError, match="MIQP"):
        pyomo.solve(miqp_model())
    with pytest.raises(UnsupportedCapabilityError, match="loss terms"):
        pyomo.solve(logistic_model())
    with pytest.raises(UnsupportedCapabilityError, match="quadratic"):
        appsi.solve(qp_model())  # appsi's HiGHS interface is linear only
    with pytest.raises(UnsupportedCapabilityError):
        select_backend("pyomo", {Capability.INTEGER, Capability.QUADRATIC_OBJECTIVE})


@pytest.mark.parametrize("which", ["pyomo", "pyomo:appsi_highs"])
def test_time_limit_stops_with_valid_bound(which: str) -> None:
    backend = get_backend(which)
    res = backend.solve(market_split(), SolveOptions(time_limit=0.5))
    assert res.limit is Limit.TIME
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND)
    assert res.wall_time < 3.0
    assert res.bounds.dual >= 0.0 or res.bounds.dual == -math.inf
    assert res.bounds.dual <= res.bounds.primal


def test_mip_start(pyomo, appsi) -> None:
    model = knapsack_model()
    best = appsi.solve(model)
    res = appsi.solve(model, start=best.x)  # appsi_highs is warm-start capable
    assert res.is_optimal and not any("`start`" in n for n in res.notes)
    res = pyomo.solve(model, start=best.x)  # the contrib HiGHS interface is not
    assert res.is_optimal and any("`start` ignored" in n for n in res.notes)


def test_options_reach_the_solver(appsi) -> None:
    # market split has a root bound of 0: with a relative gap above 1 HiGHS stops at its
    # first incumbent, which rulemip reports as FEASIBLE with Limit.GAP (gap still open)
    for opts in (SolveOptions(mip_gap=2.0, time_limit=10.0),
                 SolveOptions(extra={"mip_rel_gap": 2.0}, time_limit=10.0)):
        res = appsi.solve(market_split(), opts)
        assert res.termination is TerminationReason.FEASIBLE and res.limit is Limit.GAP
        assert res.wall_time < 3.0 and res.bounds.primal > 0.0


def test_changing_thread_counts_still_solves(appsi) -> None:
    # HiGHS keeps one thread pool per process; a new size needs a restart, not an error
    model = random_milp(n=8, m=5, seed=2)
    objs = []
    for threads in (1, 2, 1):
        res = appsi.solve(model, SolveOptions(threads=threads, seed=5))
        assert res.is_optimal and res.options["threads"] == threads
        objs.append(res.bounds.primal)
    assert objs[0] == objs[1] == objs[2]
