"""Model export without a solver: LP/MPS text, names, refusals, big-M indicators, Pyomo
structure (expressions evaluated against ``StandardForm.objective_value``)."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pytest

from rulemip.exceptions import FormulationError, InvalidParameterError
from rulemip.model import MIPModel
from rulemip.model.export import (
    _objective_parts,
    export_names,
    linearize_indicators,
    write_lp,
    write_mps,
)
from rulemip.model.pyomo_export import to_pyomo
from rulemip.testing.conformance import (
    general_integer_model,
    indicator_model,
    logistic_model,
    lp_model,
    mixed_loss_model,
    qp_model,
)

_SAFE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")


def _named_model() -> MIPModel:
    m = MIPModel("named model!")
    z = m.add_variables("z", (2, 3), binary=True)
    m.add_variables("weird name/é", lb=-1.0, ub=2.0)
    m.add_variables("1st", 2, lb=-math.inf)
    m.add_variables("inf", lb=0.0, ub=4.0, integer=True)
    m.add_constraints("cover", rows=[{int(c): 1.0 for c in z.ids[:, t]} for t in range(3)],
                      lower=1.0)
    m.add_constraints("e1", rows=[{6: 1.0, 7: 1.0}], lower=-1.0, upper=3.0)
    m.add_objective(z.ids.ravel(), 1.0)
    return m


def test_export_names_are_safe_unique_and_keep_block_structure() -> None:
    cols, rows = export_names(_named_model())
    assert len(set(cols)) == len(cols) == 10
    assert len(set(rows)) == len(rows) == 4
    assert all(_SAFE.match(n) for n in cols + rows)
    assert cols[:6] == ["z_0_0", "z_0_1", "z_0_2", "z_1_0", "z_1_1", "z_1_2"]
    assert cols[6] == "weird_name__"
    assert cols[7:9] == ["_1st_0", "_1st_1"]  # a leading digit would read as a number
    assert cols[9] == "_inf"  # an LP keyword
    assert rows == ["cover_0", "cover_1", "cover_2", "_e1_0"]  # e1... reads as exponent


def test_duplicate_names_get_suffixes() -> None:
    m = MIPModel()
    m.add_variables("a_0", lb=0.0)
    m.add_variables("a", 1, lb=0.0)  # a[0] sanitises to a_0 too
    cols, _ = export_names(m)
    assert cols == ["a_0", "a_0_2"]


def test_lp_text_has_sections_bounds_and_indicators(tmp_path) -> None:
    p = tmp_path / "ind.lp"
    write_lp(indicator_model(), p)
    text = p.read_text()
    assert text.index("Minimize") < text.index("Subject To") < text.index("Bounds") \
        < text.index("General") < text.index("End")
    assert " small: z_0 = 0 -> xy_0 <= 2" in text
    assert " tie: z_1 = 0 -> xy_0 - xy_1 = 0" in text
    assert " y_on: z_1 = 1 -> xy_1 >= 1" in text
    assert " 0 <= xy_0 <= 10" in text


def test_lp_writes_ranged_rows_as_two_rows_and_offset(tmp_path) -> None:
    p = tmp_path / "lp.lp"
    write_lp(lp_model(), p)
    text = p.read_text()
    assert " link_0_lo: x_0 - z >= -1" in text
    assert " link_0_hi: x_0 - z <= 1" in text
    assert "+ 1.5" in text.split("Subject To")[0]
    assert " z free" in text


def test_mps_sections_ranges_bounds_and_quadobj(tmp_path) -> None:
    p = tmp_path / "gi.mps"
    write_mps(general_integer_model(), p)
    text = p.read_text()
    assert "MARKER  'MARKER'  'INTORG'" in text and "'INTEND'" in text
    assert "RANGES" in text
    # rows_0: -2 <= ... <= 2.5 → G row, rhs -2, range 4.5
    assert " G  rows_0" in text and "RNG  rows_0  4.5" in text and "RHS  rows_0  -2" in text
    assert " LO BND  x_0  -3" in text and " UP BND  x_0  3" in text
    assert " PL BND  s" in text
    q = tmp_path / "qp.mps"
    write_mps(qp_model(), q)
    qtext = q.read_text()
    assert "QUADOBJ" in qtext and "v_0  v_0  2" in qtext
    assert "RHS  obj  -5" in qtext  # objective constant 5 = −RHS


def test_mps_refuses_indicators_with_the_remedy(tmp_path) -> None:
    with pytest.raises(FormulationError, match="linearize_indicators"):
        write_mps(indicator_model(), tmp_path / "x.mps")


@pytest.mark.parametrize("writer", [write_lp, write_mps])
def test_logistic_loss_refused_with_tangent_cut_remedy(writer, tmp_path) -> None:
    with pytest.raises(FormulationError, match=r"tangent_cuts\.master_model"):
        writer(logistic_model(), tmp_path / "x.out")
    m = MIPModel()
    f = m.add_variables("f", 2, lb=-3.0, ub=3.0)
    m.add_loss("poisson", f.ids, [1.0, 2.0])
    with pytest.raises(FormulationError, match="'poisson' loss term"):
        writer(m, tmp_path / "y.out")


def test_squared_loss_folds_into_the_quadratic_objective(rng) -> None:
    m = MIPModel()
    f = m.add_variables("f", 4, lb=-5.0, ub=5.0)
    m.add_objective(f.ids, [1.0, -2.0, 0.0, 0.5])
    m.add_loss("squared", f.ids[[0, 1, 1, 3]], [1.0, -2.0, 3.0, 0.5], weights=[1, 2, 3, 4],
               scale=0.25)
    m.offset = 0.75
    sf = m.to_standard_form()
    c, Q, off = _objective_parts(sf, "test")
    assert Q is not None
    for _ in range(5):
        x = rng.normal(size=4)
        assert c @ x + 0.5 * x @ (Q @ x) + off == pytest.approx(sf.objective_value(x))


def test_linearize_indicators_has_the_same_feasible_points() -> None:
    sf = indicator_model()
    lin = linearize_indicators(sf)
    assert not lin.indicators and lin.n_rows > sf.n_rows
    assert all(n.startswith("bigm_indicator[") for n in lin.row_names[sf.n_rows:])
    for z1, z2 in itertools.product((0, 1), repeat=2):
        for xv, yv in itertools.product(np.linspace(0, 10, 21), repeat=2):
            pt = np.array([xv, yv, z1, z2], dtype=float)
            assert (sf.max_violation(pt) <= 1e-9) == (lin.max_violation(pt) <= 1e-9), pt


def test_linearize_indicators_refuses_unbounded_columns() -> None:
    m = MIPModel()
    x = m.add_variables("x", lb=0.0)
    z = m.add_variables("z", binary=True)
    m.add_indicator(int(z.ids), 1, {int(x.ids): 1.0}, "<=", 3.0, "cap")
    with pytest.raises(FormulationError, match="infinite bound"):
        linearize_indicators(m)


def test_export_rejects_non_models(tmp_path) -> None:
    with pytest.raises(InvalidParameterError, match="StandardForm or a MIPModel"):
        write_lp("model", tmp_path / "x.lp")


def test_to_pyomo_blocks_bounds_and_objective(rng) -> None:
    pe = pytest.importorskip("pyomo.environ")
    m = _named_model()
    pm = to_pyomo(m)
    z = pm.component("z")
    assert isinstance(z, pe.Var) and len(z) == 6 and (1, 2) in z.index_set()
    assert z[1, 2].is_integer() and z[1, 2].lb == 0 and z[1, 2].ub == 1
    free = pm.component("1st")
    assert free[0].lb is None and free[0].ub is None and not free[0].is_integer()
    cover = pm.component("cover")
    assert isinstance(cover, pe.Constraint) and len(cover) == 3
    assert cover[0].lower == 1.0 and cover[0].upper is None
    e1 = pm.component("e1")
    assert e1[0].lower == -1.0 and e1[0].upper == 3.0
    assert len(pm.rulemip_columns) == m.n_cols


def test_to_pyomo_objective_matches_model_including_losses(rng) -> None:
    pe = pytest.importorskip("pyomo.environ")
    for sf in (mixed_loss_model(), qp_model(), lp_model()):
        pm = to_pyomo(sf)
        for _ in range(3):
            x = rng.uniform(-2.0, 2.0, size=sf.n_cols)
            for v, val in zip(pm.rulemip_columns, x.tolist()):
                v.set_value(val, skip_validation=True)
            assert pe.value(pm.objective) == pytest.approx(sf.objective_value(x), rel=1e-12)
    pm = to_pyomo(mixed_loss_model())
    assert [c.name for c in pm.component_objects(pe.Expression)] == \
        ["loss_0", "loss_1", "loss_2"]
