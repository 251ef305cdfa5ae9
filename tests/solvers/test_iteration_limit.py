"""A work limit bounds the work inside a backend's solve (issue 38, item 9).

A unit of work is also :data:`~rulemip.budget.LP_ITERATIONS_PER_UNIT` simplex iterations
(``rulemip/budget.py``): a work-limited solve passes ``iteration_limit`` to the backend
(SCIP: ``lp/iterlim`` and an ``LPSOLVED`` event on the sum of all LPs; HiGHS:
``simplex_iteration_limit``) and is charged its iterations. Before, only the nodes were
charged: ``work_limit=40`` on friedman1 ran more than 11 minutes inside one HiGHS LP.
"""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.budget import LP_ITERATIONS_PER_UNIT, Budget
from rulemip.exceptions import InvalidParameterError
from rulemip.model import MIPModel
from rulemip.rules.language import Language
from rulemip.solvers.base import get_backend
from rulemip.solvers.result import Limit, SolveOptions

pytestmark = pytest.mark.solver


def _backend(name: str):  # type: ignore[no-untyped-def]
    try:
        return get_backend(name)
    except (ImportError, ValueError) as exc:
        pytest.skip(f"backend {name!r} unavailable: {exc}")


def _knapsacks(m: int = 30, n: int = 300, *, integer: bool = True) -> MIPModel:
    """A multi-dimensional knapsack: thousands of LP iterations before it is proved."""
    rng = np.random.default_rng(0)
    A = rng.integers(1, 1000, (m, n)).astype(float)
    value = A.sum(axis=0) / m + rng.integers(1, 200, n)
    model = MIPModel("knapsacks")
    x = model.add_variables("x", (n,), lb=0.0, ub=1.0, binary=integer)
    import scipy.sparse as sp

    model.add_constraints("capacity", matrix=sp.csr_matrix(A), upper=A.sum(axis=1) / 2)
    model.add_objective(x.ids, -value)
    return model


def test_a_unit_of_work_is_a_solve_a_node_or_a_hundred_lp_iterations() -> None:
    b = Budget.from_time_limit(None, work_limit=50)
    assert b.iteration_limit() == 50 * LP_ITERATIONS_PER_UNIT
    b.charge_solve(nodes=3, iterations=2 * LP_ITERATIONS_PER_UNIT + 1)
    assert b.work_spent() == 1 + 3 + 3      # the solve, its nodes, 201 iterations begun
    assert b.iteration_limit() == 43 * LP_ITERATIONS_PER_UNIT
    b.charge_solve(nodes=None, iterations=None)
    assert b.work_spent() == 8
    assert Budget.unlimited().iteration_limit() is None
    with pytest.raises(InvalidParameterError):
        from rulemip.solvers._common import check_options

        check_options(SolveOptions(iteration_limit=-1))


def test_scip_caps_the_lp_iterations_of_the_whole_solve() -> None:
    scip = _backend("scip")
    sf = _knapsacks().to_standard_form()
    free = scip.solve(sf, SolveOptions(time_limit=60, node_limit=30))
    assert free.iterations is not None and free.iterations > 1500
    capped = scip.solve(sf, SolveOptions(time_limit=60, iteration_limit=500))
    assert capped.limit is Limit.ITERATION
    # the cap is checked after each LP, and one LP is itself capped by lp/iterlim
    assert capped.iterations is not None and 500 <= capped.iterations < 1000
    again = scip.solve(sf, SolveOptions(time_limit=60, iteration_limit=500))
    assert again.iterations == capped.iterations   # deterministic: no clock involved


def test_highs_caps_the_iterations_of_an_lp() -> None:
    highs = _backend("highs")
    sf = _knapsacks(m=200, n=1500, integer=False).to_standard_form()
    free = highs.solve(sf, SolveOptions(time_limit=60))
    assert free.iterations is not None and free.iterations > 300
    capped = highs.solve(sf, SolveOptions(time_limit=60, iteration_limit=100))
    assert capped.limit is Limit.ITERATION
    assert capped.iterations is not None and capped.iterations <= 100


def test_a_work_limited_solve_is_charged_its_lp_iterations() -> None:
    _backend("scip")
    from rulemip.algorithms.solve.driver import solve
    from rulemip.data import Dataset, load_bundled
    from rulemip.formulations.interval_cover import IntervalCoverMIP

    X, y = load_bundled()
    ds = Dataset.from_arrays(np.asarray(X, float)[:40], np.asarray(y, float)[:40])
    budget = Budget.from_time_limit(None, work_limit=400)
    res = solve(IntervalCoverMIP(Language(1), reg=1.0, max_thresholds=2), ds, solver="scip",
                budget=budget)
    # the driver charged the solve, its nodes and its LP iterations
    assert res.iterations > 0
    assert budget.work_spent() >= 1 + res.iterations // LP_ITERATIONS_PER_UNIT
