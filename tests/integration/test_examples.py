"""Every script in examples/ runs at its small size."""

import runpy
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.py"))

pytestmark = pytest.mark.solver


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_small(script, tmp_path, monkeypatch):
    pytest.importorskip("highspy")
    monkeypatch.setattr(sys, "argv", [str(script), "--small", "--out", str(tmp_path)])
    runpy.run_path(str(script), run_name="__main__")
