"""CBC backend (through OR-Tools): brute force, LP, refusals, limits, notes."""

from __future__ import annotations

import pytest

from rulemip.exceptions import UnsupportedCapabilityError
from rulemip.solvers import Limit, SolveOptions, TerminationReason, get_backend
from rulemip.testing.conformance import (
    indicator_model,
    knapsack_model,
    logistic_model,
    lp_model,
    market_split,
    qp_model,
)

pytest.importorskip("ortools")
pytestmark = pytest.mark.solver


@pytest.fixture(scope="module")
def cbc():
    backend = get_backend("cbc")  # raises BackendUnavailableError without CBC
    return backend


def test_version_names_cbc(cbc) -> None:
    assert cbc.version().startswith("Cbc ")
    res = cbc.solve(knapsack_model())
    assert res.backend == "cbc" and res.backend_version == cbc.version()
    assert res.nodes is not None


def test_lp_dual_equals_primal(cbc) -> None:
    res = cbc.solve(lp_model())
    assert res.is_optimal and res.bounds.primal == pytest.approx(-3.0)
    assert res.bounds.dual == res.bounds.primal and res.nodes is None


@pytest.mark.parametrize("build", [qp_model, indicator_model, logistic_model])
def test_refuses_what_cbc_cannot_take(cbc, build) -> None:
    with pytest.raises(UnsupportedCapabilityError, match="solver 'cbc' cannot handle"):
        cbc.solve(build())


def test_time_limit_stops_with_valid_bound(cbc) -> None:
    res = cbc.solve(market_split(), SolveOptions(time_limit=0.5))
    assert res.limit is Limit.TIME
    assert res.termination in (TerminationReason.FEASIBLE, TerminationReason.NO_SOLUTION_FOUND)
    assert res.wall_time < 3.0
    assert res.bounds.dual <= res.bounds.primal


def test_unpassable_options_and_start_are_noted(cbc) -> None:
    model = knapsack_model()
    best = cbc.solve(model)
    res = cbc.solve(model, SolveOptions(threads=2, seed=3, node_limit=5), start=best.x)
    assert res.is_optimal
    text = " ".join(res.notes)
    for word in ("`threads`", "`seed`", "`node_limit`", "`start`"):
        assert word in text
