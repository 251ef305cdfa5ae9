"""Loading a model counts against the time limit (issue 38, item 6).

SCIP's model is built row by row in Python (about 10 µs a row): on friedman1 5 000 × 10
the interval-cover model took 5.6 s to load on a 5 s limit, and the fit ran 7.9–15.5 s.
The loader now checks the deadline every ``LOAD_CHECK_EVERY`` rows; names of a model's
rows and columns are spelled on demand (a tuple of a million names cost 0.4 s per
``to_standard_form``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest
import scipy.sparse as sp

from rulemip.model import MIPModel
from rulemip.solvers.result import Limit, SolveOptions, TerminationReason


def _many_rows(n_rows: int = 200_000) -> MIPModel:
    model = MIPModel("many_rows")
    x = model.add_variables("x", (50, 4), lb=0.0, ub=1.0, binary=True)
    rng = np.random.default_rng(0)
    cols = rng.integers(0, x.size, size=(n_rows, 2))
    A = sp.csr_matrix((np.ones(2 * n_rows), (np.repeat(np.arange(n_rows), 2), cols.ravel())),
                      shape=(n_rows, model.n_cols))
    model.add_constraints("pairs", matrix=A, upper=1.0)
    model.add_objective(x.ids.ravel(), -np.ones(x.size))
    return model


@pytest.mark.solver
def test_scip_stops_loading_at_the_time_limit() -> None:
    pytest.importorskip("pyscipopt")
    from rulemip.solvers.scip import ScipBackend

    sf = _many_rows().to_standard_form()
    t0 = time.process_time()
    res = ScipBackend().solve(sf, SolveOptions(time_limit=0.05))
    cpu = time.process_time() - t0
    assert res.termination is TerminationReason.NO_SOLUTION_FOUND
    assert res.limit is Limit.TIME
    assert any("loaded into SCIP" in n for n in res.notes)
    assert cpu < 0.5   # loading all 200 000 rows takes seconds


def test_names_are_spelled_on_demand_and_the_same() -> None:
    model = MIPModel("names")
    model.add_variables("z", (3, 2), binary=True)
    model.add_variables("b", ())
    model.add_constraints("row", rows=[{0: 1.0}, {1: 1.0}], upper=1.0)
    sf = model.to_standard_form()
    expected = ("z[0,0]", "z[0,1]", "z[1,0]", "z[1,1]", "z[2,0]", "z[2,1]", "b")
    assert tuple(sf.col_names) == expected and sf.col_names == expected
    assert [sf.col_names[i] for i in range(-7, 7)] == list(expected) * 2
    assert sf.col_names[2:5] == expected[2:5]
    assert tuple(sf.row_names) == ("row[0]", "row[1]") and len(sf.row_names) == 2
    with pytest.raises(IndexError):
        sf.col_names[7]
    big = _many_rows(1_000_000)
    t0 = time.process_time()
    sf = big.to_standard_form()
    assert time.process_time() - t0 < 1.0 and sf.row_names[999_999] == "pairs[999999]"
