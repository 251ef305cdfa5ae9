"""MIPModel blocks and the StandardForm snapshot (no solver needed)."""

import math

import numpy as np
import pytest

from rulemip.exceptions import FormulationError
from rulemip.model import MIPModel
from rulemip.solvers import Capability, relative_gap, required_capabilities
from rulemip.solvers.result import ObjectiveBounds, SolveResult, TerminationReason


def small_model() -> MIPModel:
    m = MIPModel("demo")
    z = m.add_variables("z", (3, 2), binary=True)
    b = m.add_variables("beta", 2, lb=-5, ub=5)
    m.add_constraints("cover", rows=[{int(c): 1.0 for c in z[:, t]} for t in range(2)], lower=1)
    m.add_objective(b.ids, [1.0, -1.0])
    m.add_square(b.ids, 3.0)
    return m


def test_blocks_map_domain_indices_to_columns():
    m = small_model()
    z = m.var("z")
    assert z[2, 1] == 5 and m.var("beta")[0] == 6
    sf = m.to_standard_form()
    assert sf.col_names[5] == "z[2,1]"
    np.testing.assert_array_equal(sf.A.toarray()[0], [1, 0, 1, 0, 1, 0, 0, 0])
    assert sf.integrality.sum() == 6
    with pytest.raises(FormulationError, match="no variable block"):
        m.var("w")


def test_objective_value_and_violation():
    sf = small_model().to_standard_form()
    x = np.array([1, 0, 0, 1, 0, 0, 2.0, -1.0])
    assert sf.objective_value(x) == pytest.approx(2.0 + 1.0 + 3 * (4 + 1))
    assert sf.max_violation(x) == 0.0
    x_bad = x.copy()
    x_bad[[0, 2, 4]] = 0.0  # rule 0 covers nothing
    assert sf.max_violation(x_bad) == pytest.approx(1.0)


def test_capabilities_follow_the_model():
    m = small_model()
    assert required_capabilities(m.to_standard_form()) == {
        Capability.LP, Capability.INTEGER, Capability.QUADRATIC_OBJECTIVE}
    m.add_indicator(0, 1, {6: 1.0}, ">=", 0.0)
    f = m.add_variables("f", 2, lb=-math.inf)
    m.add_loss("logistic", f.ids, [1.0, -1.0])
    caps = required_capabilities(m.to_standard_form())
    assert {Capability.INDICATOR, Capability.NONLINEAR_LOSS} <= caps
    sf = m.to_standard_form()
    x = np.zeros(sf.n_cols)
    assert sf.objective_value(x) == pytest.approx(2 * math.log(2))


def test_set_bounds_fixes_columns():
    m = small_model()
    m.set_bounds(m.var("z")[:, 0], lb=1.0)
    sf = m.to_standard_form()
    assert sf.col_lower[[0, 2, 4]].tolist() == [1.0, 1.0, 1.0]
    assert sf.integrality.sum() == 6


def test_gap_formula():
    assert relative_gap(10.0, 9.0) == pytest.approx(0.1)
    assert relative_gap(10.0, 11.0) == 0.0
    assert relative_gap(math.inf, 1.0) == math.inf
    r = SolveResult(TerminationReason.FEASIBLE, ObjectiveBounds(2.0, 1.0))
    assert r.gap == pytest.approx(0.5)
    assert r.to_dict()["termination"] == "feasible"
