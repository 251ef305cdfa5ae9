"""Every available backend × every conformance case it claims (rulemip.testing.conformance).

Cases a backend does not claim must be refused by ``select_backend(name, needs)`` with
UnsupportedCapabilityError — a backend never silently mis-solves a model it cannot take.
"""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest

from rulemip.exceptions import BackendUnavailableError, UnsupportedCapabilityError
from rulemip.solvers import get_backend, select_backend
from rulemip.solvers.base import backend_names
from rulemip.testing.conformance import (
    CASES,
    backend_claims,
    check_case,
    check_persistent_rows,
    knapsack_model,
    random_milp,
)

pytestmark = pytest.mark.solver


def _backend(name: str):
    try:
        return get_backend(name)
    except (BackendUnavailableError, ImportError) as exc:
        pytest.skip(f"backend {name!r} unavailable: {exc}")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
@pytest.mark.parametrize("name", backend_names())
def test_case(name: str, case) -> None:
    backend = _backend(name)
    if not backend_claims(backend, case):
        with pytest.raises(UnsupportedCapabilityError):
            select_backend(name, case.needs())
        with pytest.raises(UnsupportedCapabilityError):
            backend.solve(case.build())
        return
    assert select_backend(name, case.needs()) is backend
    check_case(backend, case)


@pytest.mark.parametrize("name", backend_names())
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("integer", [False, True], ids=["lp", "milp"])
def test_persistent_rows_match_fresh_solves(name: str, seed: int, integer: bool) -> None:
    from rulemip.solvers.base import Capability

    backend = _backend(name)
    if Capability.PERSISTENT not in backend.capabilities:
        pytest.skip(f"{name} is not persistent")
    model = random_milp(n=7, m=6, seed=seed, integer=integer)
    if integer and Capability.INTEGER not in backend.capabilities:
        pytest.skip("no integers")
    if not integer and not backend_claims(backend, CASES[0]):  # CASES[0] is the LP
        pytest.skip(f"{name} takes no continuous columns")
    results = check_persistent_rows(backend, model, n_hold=4)
    # adding rows to a minimization can only raise its optimum
    objs = [r.bounds.primal for r in results]
    assert all(b >= a - 1e-9 for a, b in itertools.pairwise(objs))


@pytest.mark.parametrize("name", backend_names())
def test_persistent_knapsack_last_row(name: str) -> None:
    from rulemip.solvers.base import Capability

    backend = _backend(name)
    if Capability.PERSISTENT not in backend.capabilities:
        pytest.skip(f"{name} is not persistent")
    check_persistent_rows(backend, knapsack_model(), n_hold=1)


def test_auto_prefers_highs_for_milp_and_never_for_miqp() -> None:
    pytest.importorskip("highspy")
    from rulemip.solvers.base import Capability

    assert select_backend("auto", {Capability.LP, Capability.INTEGER}).name == "highs"
    try:
        chosen = select_backend("auto", {Capability.LP, Capability.INTEGER,
                                         Capability.QUADRATIC_OBJECTIVE})
    except BackendUnavailableError:
        return
    assert chosen.name != "highs"


_IMPORT_BOTH = "import {a}; import {b}; print('ok')"


@pytest.mark.parametrize("order", [("highspy", "ortools.linear_solver.pywraplp"),
                                   ("ortools.linear_solver.pywraplp", "highspy"),
                                   ("highspy", "ortools.sat.python.cp_model"),
                                   ("ortools.sat.python.cp_model", "highspy")],
                         ids=["highspy_first", "ortools_first", "highspy_then_cpsat",
                              "cpsat_then_highspy"])
def test_highspy_and_ortools_import_in_one_process(order: tuple[str, str]) -> None:
    pytest.importorskip("highspy")
    pytest.importorskip("ortools")
    code = (f"import {order[0]}, {order[1]}\n"
            "import highspy\n"
            "from ortools.linear_solver import pywraplp\n"
            "h = highspy.Highs(); h.setOptionValue('output_flag', False)\n"
            "h.addVar(0, 1); h.changeColCost(0, -1.0); h.run()\n"
            "assert abs(h.getInfo().objective_function_value + 1.0) < 1e-9\n"
            "s = pywraplp.Solver.CreateSolver('CBC'); x = s.IntVar(0, 3, 'x')\n"
            "s.Maximize(x); assert s.Solve() == s.OPTIMAL and x.solution_value() == 3\n"
            "from ortools.sat.python import cp_model\n"
            "m = cp_model.CpModel(); y = m.new_int_var(0, 4, 'y'); m.maximize(y)\n"
            "c = cp_model.CpSolver(); assert c.solve(m) == cp_model.OPTIMAL\n"
            "assert c.value(y) == 4\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")
