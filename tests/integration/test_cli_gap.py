"""``rulemip gap`` end to end: table, certificates and figures for a small sweep."""

import json

import numpy as np
import pandas as pd
import pytest

from rulemip.certify import Certificate, verify
from rulemip.certify.theory import lemma2_risk
from rulemip.cli import main
from rulemip.data import alternating

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


def _write(path, k, delta):
    X, y = alternating(k, delta)
    pd.DataFrame({"x": X[:, 0], "y": y}).to_csv(path, index=False)
    return X, y


def test_gap_command_writes_table_certificates_and_figures(tmp_path, capsys):
    data = {}
    for k in (2, 3):
        path = tmp_path / f"alt{k}.csv"
        data[path.stem] = _write(path, k, 0.04)
    out = tmp_path / "study"
    argv = ["gap", "--data", *(str(tmp_path / f"{s}.csv") for s in data), "--target", "y",
            "--k-max", "2", "--variants", "SGB", "MIP-boosting", "--max-thresholds", "all",
            "--reg", "1e-9", "--time-limit", "30", "--out", str(out)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "against Theorem 1" in text

    table = pd.read_csv(out / "gap_table.csv")
    assert len(table) == 2 * 2 * 2  # datasets × k × variants
    assert json.loads((out / "gap_table.json").read_text())[0].keys() >= {
        "k", "variant", "risk_boost", "incumbent", "bound", "gap_lo", "gap_hi", "status"}
    tol = 1e-6
    assert np.all(table["bound"] <= table["incumbent"] + tol)
    assert np.all(table["incumbent"] <= table["risk_boost"] + tol)
    # idealized boosting on D(2, Δ) is Lemma 2's risk
    row = table.query("dataset == 'alt2' and k == 2 and variant == 'MIP-boosting'").iloc[0]
    assert row["risk_boost"] == pytest.approx(lemma2_risk(2, 0.04), abs=1e-6)

    certs = sorted((out / "certificates").glob("*.json"))
    assert certs
    for path in certs:
        cert = Certificate.load(path)
        X, y = data["alt3" if "alt3" in path.name else "alt2"]
        assert verify(cert, X, y).ok
    figures = {p.name for p in (out / "figures").glob("*.png")}
    assert "gap_cdf.png" in figures and any(f.startswith("risk_vs_k_alt3") for f in figures)

    # a second run resumes: nothing is recomputed and the table is identical
    assert main(argv) == 0
    again = pd.read_csv(out / "gap_table.csv")
    pd.testing.assert_frame_equal(table, again)


def test_gap_command_time_limit_covers_boosting(tmp_path, capsys):
    """Issue 22: `--time-limit 5` with `--variants COB` on diabetes spent 88 s of CPU in
    the boosting rule search; every phase of a task now runs within its limit."""
    import time
    import warnings

    from sklearn.datasets import load_diabetes

    path = tmp_path / "diabetes.csv"
    load_diabetes(as_frame=True).frame.to_csv(path, index=False)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["gap", "--data", str(path), "--target", "target", "--k-max", "2",
                     "--variants", "COB", "--time-limit", "3", "--out", str(tmp_path / "o"),
                     "--quiet"])
    assert code == 0
    assert time.perf_counter() - t0 <= 2 * 3 + 5.0  # two tasks; slack: steps + figures
    table = pd.read_csv(tmp_path / "o" / "gap_table.csv")
    assert len(table) == 2 and (table["bound"] <= table["incumbent"] + 1e-9).all()


@pytest.mark.parametrize("rows", ["const_y", "one_row", "identical_rows"])
def test_gap_command_on_data_the_constant_model_fits_exactly(rows, tmp_path, capsys):
    """Issue 22: `--intercept` on constant y (also one row, identical rows) ended in
    pandas' `ValueError: Encountered all NA values`: R(f_∅) = 0 leaves no normalized gap."""
    frames = {"const_y": pd.DataFrame({"a": [1.0, 2, 3, 4, 5], "b": [2.0, 3, 1, 4, 0],
                                       "target": 5.0}),
              "one_row": pd.DataFrame({"a": [1.0], "b": [2.0], "target": [5.0]}),
              "identical_rows": pd.DataFrame({"a": [1.0] * 3, "b": [2.0] * 3,
                                              "target": [5.0] * 3})}
    path = tmp_path / f"{rows}.csv"
    frames[rows].to_csv(path, index=False)
    out = tmp_path / "o"
    code = main(["gap", "--data", str(path), "--target", "target", "--k-max", "2",
                 "--variants", "COB", "--intercept", "--time-limit", "10", "--out", str(out),
                 "--quiet"])
    text = capsys.readouterr().out
    assert code == 0
    assert "cannot be normalized" in text and "against Theorem 1" not in text
    table = pd.read_csv(out / "gap_table.csv")
    assert len(table) == 2 and np.allclose(table["incumbent"], 0.0, atol=1e-9)
    assert not (out / "figures" / "gap_cdf.png").exists()


def test_gap_command_removes_its_stale_certificates_after_a_data_change(tmp_path, capsys):
    """Issue 22: rerunning `gap` into the same folder after editing the data left the old
    run's certificate next to the new one. Files that are not ours stay."""
    path = tmp_path / "d.csv"
    _write(path, 2, 0.04)
    out = tmp_path / "o"
    argv = ["gap", "--data", str(path), "--target", "y", "--k-max", "1", "--variants", "SGB",
            "--time-limit", "10", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    first = sorted(p.name for p in (out / "certificates").iterdir())
    (out / "certificates" / "notes.json").write_text("{}")
    _write(path, 2, 0.05)  # the data change: new task ids
    assert main(argv) == 0
    capsys.readouterr()
    second = sorted(p.name for p in (out / "certificates").iterdir())
    assert len(first) == 1 and first[0] not in second
    assert second == sorted([*[n for n in second if n != "notes.json"], "notes.json"])
    assert len(second) == 2  # the new certificate and the file that is not ours
    doc = json.loads((out / "certificates" / next(n for n in second
                                                   if n != "notes.json")).read_text())
    assert Certificate.from_dict(doc).n_rules == 1


@pytest.mark.parametrize("k_max", [1, 2, 7, 30])
def test_risk_vs_k_ticks_are_integers(k_max):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rulemip.plotting import set_k_ticks

    fig, ax = plt.subplots()
    ks = np.arange(1, k_max + 1)
    ax.plot(ks, 1.0 / ks)
    set_k_ticks(ax, ks)
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
    plt.close(fig)
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def test_gap_command_with_a_60_level_categorical_column_ends_near_its_limit(tmp_path,
                                                                             capsys):
    """Issue 22: a table with a 60-level categorical column was still running at 400 s
    with `--time-limit 10`; every phase (all variants, MIP-boosting included) now shares
    the task's limit."""
    import time

    gen = np.random.default_rng(0)
    n = 300
    level = gen.integers(0, 60, n)
    frame = pd.DataFrame({"x1": gen.normal(size=n), "x2": gen.normal(size=n),
                          "cat": [f"L{i}" for i in level]})
    frame["target"] = 2.0 * frame["x1"] + level % 7 + gen.normal(size=n)
    path = tmp_path / "cat60.csv"
    frame.to_csv(path, index=False)
    t0 = time.perf_counter()
    code = main(["gap", "--data", str(path), "--target", "target", "--k-max", "1",
                 "--time-limit", "4", "--out", str(tmp_path / "o"), "--quiet"])
    capsys.readouterr()
    assert code == 0
    assert time.perf_counter() - t0 <= 4 + 8.0  # indivisible steps (model builds), figures
    table = pd.read_csv(tmp_path / "o" / "gap_table.csv")
    assert len(table) == 6 and (table["bound"] <= table["incumbent"] + 1e-9).all()
