"""A first run on an empty numba cache returns what a second run returns: the kernels
compile before the fit's time limit starts (rulemip._kernels), so the compile cannot
shorten the search. Each run is a fresh interpreter on the same temporary
``NUMBA_CACHE_DIR``: the first compiles every kernel, the second loads them."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rulemip

pytestmark = [pytest.mark.slow, pytest.mark.solver]
pytest.importorskip("highspy")

SCRIPT = r"""
import contextlib, io, json, warnings
warnings.simplefilter("ignore")
from rulemip import ExactRuleEnsembleRegressor, RuleBoostingRegressor, load_bundled
from rulemip.cli import main

X, y = load_bundled()
exact = ExactRuleEnsembleRegressor(2, max_thresholds=2, reg=1, time_limit=5).fit(X, y)
boost = RuleBoostingRegressor(3, preset="COB", time_limit=2).fit(X, y)
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["fit", "--quiet"])
lines = [l for l in out.getvalue().splitlines() if not l.startswith("status:")]
print(json.dumps({
    "status": exact.result_.termination.value, "risk": exact.result_.risk,
    "bound": exact.result_.lower_bound, "compile": exact.timings_["compile"],
    "boosting": boost.rules_.to_text(), "boosting_limit": boost.limit_reached_,
    "cli": lines}))
"""


def _run(cache: Path) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache),
               PYTHONPATH=str(Path(rulemip.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                          text=True, timeout=900, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_first_run_on_an_empty_cache_matches_the_second(tmp_path):
    first = _run(tmp_path / "numba")
    second = _run(tmp_path / "numba")
    assert first["status"] == second["status"] == "optimal"
    assert first["risk"] == pytest.approx(second["risk"], rel=1e-12)
    assert first["bound"] == pytest.approx(second["bound"], rel=1e-9)
    assert first["boosting"] == second["boosting"]
    assert first["boosting_limit"] is None and second["boosting_limit"] is None
    # the command line prints the same model, boosting risk and certified gap
    assert first["cli"] == second["cli"]
    assert not any("cut short" in line for line in first["cli"])
    # the first run compiled (outside its time limit), the second only loaded
    assert first["compile"] > second["compile"]
