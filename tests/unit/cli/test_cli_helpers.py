"""Command-line helpers: --max-thresholds parsing, output-path checks, the progress line,
dataset names of a sweep, integer k ticks."""

import io

import pytest

from rulemip._io import check_output_dir, check_output_path
from rulemip.cli._common import parse_max_thresholds
from rulemip.cli._progress import Progress, progress_wanted
from rulemip.cli.gap import dataset_names
from rulemip.exceptions import InvalidParameterError


@pytest.mark.parametrize("text,value", [("all", None), ("ALL", None), ("1", 1), ("17", 17)])
def test_max_thresholds_values(text, value):
    assert parse_max_thresholds(text) == value


@pytest.mark.parametrize("text", ["0", "-2", "many", "1.5", "none"])
def test_max_thresholds_refused(text):
    with pytest.raises(InvalidParameterError, match="--max-thresholds"):
        parse_max_thresholds(text)


def test_output_paths(tmp_path):
    f = tmp_path / "f"
    f.write_text("")
    assert check_output_path(tmp_path / "new" / "deep" / "x.json", "--o").name == "x.json"
    with pytest.raises(InvalidParameterError, match=r"`--o`.*which is a file"):
        check_output_path(f / "sub" / "x.json", "--o")
    with pytest.raises(InvalidParameterError, match="is a folder"):
        check_output_path(tmp_path, "--o")
    with pytest.raises(InvalidParameterError, match="is a file"):
        check_output_dir(f, "--out")
    assert check_output_dir(tmp_path / "d", "--out") == tmp_path / "d"


def test_dataset_names_disambiguate_same_stems(tmp_path):
    assert dataset_names(["a/x.csv", "b/x.csv", "c/y.csv"]) == ["a_x", "b_x", "y"]
    assert dataset_names(["p/a/x.csv", "q/a/x.csv"]) == ["p_a_x", "q_a_x"]
    with pytest.raises(InvalidParameterError, match="same file twice"):
        dataset_names(["a/x.csv", "a/../a/x.csv"])


def test_progress_plain_and_live_lines():
    s = io.StringIO()
    assert not progress_wanted(False, stream=s) and progress_wanted(True, stream=s)
    assert not progress_wanted(True, quiet=True, stream=s)
    p = Progress(True, stream=s)
    with p:
        p.phase("warm start")
        with p.capture(next_phase="solve"):
            import sys

            print("it 3 incumbent 2.0 bound 1.0", file=sys.stderr)
        p.bar(1, 4)
    lines = s.getvalue().splitlines()
    assert lines[0].endswith("warm start") and lines[1].endswith("solve")
    assert lines[2].endswith("| it 3 incumbent 2.0 bound 1.0")
    assert "[######..................] 1/4" in lines[-1] and "s left" in lines[-1]
    live = io.StringIO()
    with Progress(True, stream=live, live=True) as q:
        q.phase("x")
    assert live.getvalue().startswith("\r[") and live.getvalue().endswith("\n")
    silent = io.StringIO()
    with Progress(False, stream=silent) as r:
        r.phase("x")
        r.bar(1, 2)
    assert silent.getvalue() == ""


def test_risk_vs_k_ticks_are_integers(tmp_path, monkeypatch):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from rulemip.plotting import plot_risk_vs_k

    table = pd.DataFrame({"k": [1, 2, 3], "variant": "SGB", "risk_boost": [3.0, 2.0, 1.5],
                          "incumbent": [2.9, 1.9, 1.4], "bound": [2.8, 1.8, 1.3]})
    figs = []
    monkeypatch.setattr(plt, "close", figs.append)
    plot_risk_vs_k(table, tmp_path / "r.png")
    ticks = figs[0].axes[0].get_xticks()
    assert len(ticks) and all(float(t).is_integer() for t in ticks)


_PRUNE_DATA = ("--data", "d.csv", "--target", "y")


@pytest.mark.parametrize("argv,dest,value", [
    (["fit", "--preset", "SGB"], "preset", "SGB"),
    (["fit"], "preset", "COB"),
    (["prune", *_PRUNE_DATA, "--engine", "path"], "engine", "path"),
    (["prune", *_PRUNE_DATA], "engine", "exact"),
])
def test_renamed_flags_parse(argv, dest, value):
    from rulemip.cli import build_parser

    args = build_parser().parse_args(argv)
    assert getattr(args, dest) == value


@pytest.mark.parametrize("argv", [["fit", "--warm-start", "none"], ["fit", "--init", "CGB"],
                                  ["prune", *_PRUNE_DATA, "--method", "path"],
                                  ["prune", *_PRUNE_DATA, "--gamma", "0.5"]])
def test_former_flags_were_removed(argv, capsys):
    """The flags' former names were removed in 0.3 (CHANGELOG.md): argparse refuses them."""
    from rulemip.cli import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(argv)
    assert "unrecognized arguments" in capsys.readouterr().err
