"""Issue 30, item 7: ``engine="cell-bnb"`` is refused before any work when its memory
bound exceeds the size guard, and it honours the fit's clock inside its loops (a limit
returns the incumbent with a valid bound, promptly)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from sklearn.datasets import load_diabetes

from rulemip.algorithms.fit_plan import solve_exact
from rulemip.algorithms.krule import cell_bnb
from rulemip.algorithms.krule.cell_bnb import (
    CELL_BNB_MAX_BYTES,
    CellSweepBound,
    cell_bnb_bytes,
    check_cell_bnb_fits,
    solve_cell_bnb,
)
from rulemip.algorithms.solve.registry import check_engine_fits
from rulemip.budget import Budget
from rulemip.data import Dataset
from rulemip.data.thresholds import candidate_thresholds
from rulemip.estimators import ExactRuleEnsembleRegressor
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem
from rulemip.solvers.result import Limit


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes(return_X_y=True)


def test_diabetes_at_eight_cut_points_is_refused_up_front(diabetes):
    X, _ = diabetes
    th = candidate_thresholds(X, 8)
    assert cell_bnb_bytes(Language(3, th), 442) > 1e6 * CELL_BNB_MAX_BYTES
    with pytest.raises(InvalidParameterError) as err:
        check_engine_fits("cell-bnb", KRuleProblem.of(Dataset.from_arrays(X, _), 3,
                                                      thresholds=th))
    msg = str(err.value)
    for word in ("cell-bnb", "engine='auto'", "engine='cg'", "max_thresholds",
                 "max_rule_length"):
        assert word in msg


def test_the_estimator_refuses_before_its_warm_start(diabetes):
    X, y = diabetes
    t0 = time.perf_counter()
    with pytest.raises(InvalidParameterError, match="engine='cell-bnb'"):
        ExactRuleEnsembleRegressor(3, engine="cell-bnb", reg=0.0, time_limit=5).fit(X, y)
    assert time.perf_counter() - t0 < 2.0  # no boosting, no cells, no boxes


def test_solve_cell_bnb_refuses_all_midpoints_of_many_rows(diabetes):
    X, y = diabetes
    ds = Dataset.from_arrays(X[:, [2, 3, 8]], y)
    with pytest.raises(InvalidParameterError, match="GiB"):
        # every midpoint
        solve_cell_bnb(KRuleProblem.of(ds, 2, reg=0.0, thresholds=candidate_thresholds(ds.X, None)))


def test_the_guard_accepts_what_the_engine_is_for_and_bounds_it_from_above(diabetes):
    X, y = diabetes
    cols = X[:60][:, [2, 8]]
    th = candidate_thresholds(cols, 3)
    check_cell_bnb_fits(KRuleProblem.of(Dataset.from_arrays(cols, y[:60]), 3, thresholds=th))
    # the bound's box count is at least the distinct boxes the engine builds
    prob = BoxSelectionCIP(Language(3, th), reg=1.0).build(Dataset.from_arrays(cols, y[:60]))
    from rulemip.formulations.sizes import count_boxes

    assert prob.n_boxes <= count_boxes(Language(2, th))
    assert prob.n_cells <= 60


def test_child_bounds_stop_between_chunks(monkeypatch):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + rng.normal(size=30)
    th = candidate_thresholds(X, 3)
    prob = BoxSelectionCIP(Language(2, th), reg=1.0).build(Dataset.from_arrays(X, y))
    c = prob.cells
    sb = CellSweepBound(prob.boxes.cover, c, 0.0, Language(2))
    children = np.arange(sb.n_boxes, dtype=np.int64)
    whole = np.maximum(sb.residuals((), children, sb.closed_cells(children, 1)), 0.0)
    monkeypatch.setattr(cell_bnb, "CHUNK_BYTES", 1)  # one child per chunk
    assert sb.chunk_size(0) == 1
    chunked = sb.child_bounds((), children, 0.0, Budget.unlimited())
    np.testing.assert_allclose(chunked, whole, rtol=1e-12, atol=1e-12)
    spent = Budget.from_time_limit(0.0)
    assert sb.child_bounds((), children, 0.0, spent) is None


def test_a_short_limit_ends_promptly_with_a_model_and_a_valid_bound(diabetes):
    X, y = diabetes
    cols = X[:40][:, [2, 8]]
    ds = Dataset.from_arrays(cols, y[:40])
    th = candidate_thresholds(cols)  # every midpoint: 15 490 distinct boxes
    t0 = time.perf_counter()
    res = solve_exact(KRuleProblem.of(ds, 3, reg=0.0, thresholds=th), engine="cell-bnb",
                      budget=Budget.from_time_limit(1.0))
    wall = time.perf_counter() - t0
    assert wall < 1.0 + 2.0, wall
    assert res.ensemble is not None and not res.is_optimal and res.limit is Limit.TIME
    assert 0.0 <= res.lower_bound <= res.risk


def test_the_cli_refuses_it_with_exit_2(diabetes, tmp_path, capsys):
    from rulemip.cli import main

    X, y = diabetes
    path = tmp_path / "diabetes.csv"
    header = ",".join(f"x{j}" for j in range(X.shape[1])) + ",y"
    rows = [",".join(f"{v:.6g}" for v in (*x, t)) for x, t in zip(X, y, strict=True)]
    path.write_text("\n".join([header, *rows]) + "\n")
    t0 = time.perf_counter()
    code = main(["fit", "--data", str(path), "--target", "y", "-k", "3", "--engine",
                 "cell-bnb", "--reg", "0", "--time-limit", "5", "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "engine='cell-bnb'" in err and "Traceback" not in err
    assert time.perf_counter() - t0 < 5.0


def test_a_gap_study_refuses_it_before_boosting(diabetes):
    from rulemip.certify import gap_study

    X, y = diabetes
    t0 = time.perf_counter()
    with pytest.raises(InvalidParameterError, match="engine='cell-bnb'"):
        gap_study(X, y, 2, variants=["SGB"], reg=0.0, max_thresholds=8, engine="cell-bnb",
                  time_limit=5)
    assert time.perf_counter() - t0 < 2.0
