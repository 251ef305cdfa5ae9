"""Exported LP/MPS files read back by HiGHS (and SCIP for LP indicators), and ``to_pyomo``
solved by Pyomo solvers, reach the optimum of the StandardForm solved directly; names
survive."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.model import MIPModel
from rulemip.model.export import export_names, write_lp, write_mps
from rulemip.model.pyomo_export import column_values, to_pyomo
from rulemip.solvers import get_backend
from rulemip.testing.conformance import (
    general_integer_model,
    indicator_model,
    infeasible_model,
    knapsack_model,
    lp_model,
    qp_model,
    random_milp,
)

pytestmark = pytest.mark.solver

WRITERS = {"lp": write_lp, "mps": write_mps}


def _squared_loss_model():
    m = MIPModel("squared_loss")
    f = m.add_variables("f", 3, lb=-10.0, ub=10.0)
    m.add_constraints("sum", rows=[{0: 1.0, 1: 1.0, 2: 1.0}], upper=1.0)
    m.add_loss("squared", f.ids, [1.0, 2.0, -0.5], weights=[1.0, 2.0, 1.0], scale=0.5)
    m.add_objective(f.ids, [0.1, 0.0, -0.3])
    return m.to_standard_form()


MODELS = {"lp": lp_model, "knapsack": knapsack_model, "general_integer": general_integer_model,
          "qp": qp_model, "random_milp": lambda: random_milp(n=8, m=5, seed=3),
          "squared_loss": _squared_loss_model}


def _read_and_solve(path):
    highspy = pytest.importorskip("highspy")
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(path)) == highspy.HighsStatus.kOk
    h.run()
    return h


@pytest.mark.parametrize("fmt", ["mps", "lp"])
@pytest.mark.parametrize("case", list(MODELS))
def test_file_read_by_highs_has_the_direct_optimum(case: str, fmt: str, tmp_path) -> None:
    highspy = pytest.importorskip("highspy")
    sf = MODELS[case]()
    direct = get_backend("highs").solve(sf) if case != "squared_loss" else None
    if direct is None:  # loss terms: the scip backend solves them natively
        pytest.importorskip("pyscipopt")
        direct = get_backend("scip").solve(sf)
    assert direct.is_optimal
    path = tmp_path / f"{case}.{fmt}"
    WRITERS[fmt](sf, path)
    h = _read_and_solve(path)
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    obj = h.getInfo().objective_function_value
    assert obj == pytest.approx(direct.bounds.primal, rel=1e-6, abs=1e-7)
    cols, rows = export_names(sf)
    lp = h.getLp()
    assert list(lp.col_names_) == cols
    expected = []
    for i, r in enumerate(rows):
        lo, hi = sf.row_lower[i], sf.row_upper[i]
        if fmt == "lp" and np.isfinite(lo) and np.isfinite(hi) and lo != hi:
            expected += [f"{r}_lo", f"{r}_hi"]  # LP files split two-sided rows
        else:
            expected.append(r)
    assert list(lp.row_names_) == expected


def test_infeasible_model_stays_infeasible(tmp_path) -> None:
    highspy = pytest.importorskip("highspy")
    for fmt in ("lp", "mps"):
        path = tmp_path / f"inf.{fmt}"
        WRITERS[fmt](infeasible_model(), path)
        assert _read_and_solve(path).getModelStatus() == highspy.HighsModelStatus.kInfeasible


def test_added_constraint_survives_export(tmp_path) -> None:
    """The how-to's workflow: extend a MIPModel, export, and solve the file."""
    highspy = pytest.importorskip("highspy")
    m = MIPModel("extended")
    x = m.add_variables("x", 5, binary=True)
    m.add_constraints("cap", rows=[{int(j): float(w) for j, w in zip(x.ids, [3, 4, 2, 3, 3])}],
                      upper=8.0)
    m.add_objective(x.ids, [-10.0, -13.0, -7.0, -8.0, -9.0])
    before = get_backend("highs").solve(m).bounds.primal
    m.add_constraints("at_most_two", rows=[{int(j): 1.0 for j in x.ids}], upper=2.0)
    after = get_backend("highs").solve(m).bounds.primal
    assert after > before  # the new row cuts off the old optimum
    write_mps(m, tmp_path / "ext.mps")
    h = _read_and_solve(tmp_path / "ext.mps")
    assert h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    assert h.getInfo().objective_function_value == pytest.approx(after)
    assert "at_most_two_0" in list(h.getLp().row_names_)


def test_lp_indicators_read_by_scip(tmp_path) -> None:
    pyscipopt = pytest.importorskip("pyscipopt")
    path = tmp_path / "ind.lp"
    write_lp(indicator_model(), path)
    m = pyscipopt.Model()
    m.hideOutput()
    m.readProblem(str(path))
    m.optimize()
    assert m.getStatus() == "optimal"
    assert m.getObjVal() == pytest.approx(-3.0)
    names = {v.name for v in m.getVars()}
    assert {"xy_0", "xy_1", "z_0", "z_1"} <= names


@pytest.mark.parametrize("solver", ["highs", "appsi_highs"])
@pytest.mark.parametrize("case", ["lp", "knapsack", "general_integer", "random_milp",
                                  "indicator"])
def test_to_pyomo_solved_by_pyomo_has_the_direct_optimum(case: str, solver: str) -> None:
    pe = pytest.importorskip("pyomo.environ")
    pytest.importorskip("highspy")
    opt = pe.SolverFactory(solver)
    if not opt.available(exception_flag=False):
        pytest.skip(f"Pyomo solver {solver!r} unavailable")
    sf = indicator_model() if case == "indicator" else MODELS[case]()
    pm = to_pyomo(sf)
    results = opt.solve(pm, load_solutions=False)
    assert str(results.solver.termination_condition) == "optimal"
    pm.solutions.load_from(results)
    x = column_values(pm)
    assert sf.max_violation(x) <= 1e-6
    expected = -3.0 if case == "indicator" else get_backend("highs").solve(sf).bounds.primal
    assert pe.value(pm.objective) == pytest.approx(expected, abs=1e-7)
    assert sf.objective_value(x) == pytest.approx(expected, abs=1e-7)


def test_to_pyomo_qp_with_pyomo_highs() -> None:
    pe = pytest.importorskip("pyomo.environ")
    pytest.importorskip("highspy")
    pm = to_pyomo(qp_model())
    results = pe.SolverFactory("highs").solve(pm, load_solutions=False)
    pm.solutions.load_from(results)
    assert pe.value(pm.objective) == pytest.approx(0.5, abs=1e-7)
    assert pm.component("v")[0].value == pytest.approx(0.5, abs=1e-6)


def test_export_howto_snippet_runs(tmp_path, monkeypatch) -> None:
    """docs/howto/export.md's snippet runs as written (in a scratch directory)."""
    import pathlib
    import re

    pe = pytest.importorskip("pyomo.environ")
    pytest.importorskip("highspy")
    if not pe.SolverFactory("appsi_highs").available(exception_flag=False):
        pytest.skip("Pyomo solver 'appsi_highs' unavailable")
    doc = pathlib.Path(__file__).resolve().parents[2] / "docs" / "howto" / "export.md"
    code = re.search(r"```python\n(.*?)```", doc.read_text(), re.S)
    assert code is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(code.group(1), str(doc), "exec"), {"__name__": "howto"})
    assert (tmp_path / "knapsack.mps").exists() and (tmp_path / "knapsack.lp").exists()
