"""A first run on an empty numba cache returns what a second run returns: the kernels
compile before the fit's time limit starts (rulemip._kernels), so the compile cannot
shorten the search, and no fit (squared, weighted, logistic, boosting, the command line)
compiles anything after that warm-up. Each run is a fresh interpreter on the same
temporary ``NUMBA_CACHE_DIR``: the first compiles every kernel, the second loads them."""

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
import numpy as np
from numba.core import event
from rulemip import _kernels
from rulemip import (ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor,
                     RuleBoostingRegressor, load_bundled)
from rulemip.cli import main

# numba compiles outside the warm-up of rulemip._kernels: a signature a fit needs that the
# warm-up did not compile (it would compile inside the fit's time limit)
state = {"warming": False, "late": []}
for group, warm in list(_kernels._WARM.items()):
    def wrapped(warm=warm):
        state["warming"] = True
        try:
            warm()
        finally:
            state["warming"] = False
    _kernels._WARM[group] = wrapped

class Late(event.Listener):
    def on_start(self, ev):
        if not state["warming"]:
            state["late"].append(ev.data["dispatcher"].py_func.__qualname__)
    def on_end(self, ev):
        pass

event.register("numba:compile", Late())
X, y = load_bundled()
exact = ExactRuleEnsembleRegressor(2, max_thresholds=2, reg=1, time_limit=5).fit(X, y)
boost = RuleBoostingRegressor(3, preset="COB", time_limit=2).fit(X, y)
ExactRuleEnsembleRegressor(3, max_thresholds=2, reg=1, time_limit=10).fit(
    X, y, sample_weight=np.arange(len(y)) % 3 + 1.0)
ExactRuleEnsembleClassifier(2, max_thresholds=2, reg=1, time_limit=5).fit(X, y > np.median(y))
out = io.StringIO()
with contextlib.redirect_stdout(out):
    main(["fit", "--quiet"])
lines = [l for l in out.getvalue().splitlines() if not l.startswith("status:")]
print(json.dumps({
    "status": exact.result_.termination.value, "risk": exact.result_.risk,
    "bound": exact.result_.lower_bound, "compile": exact.timings_["compile"],
    "boosting": boost.rules_.to_text(), "boosting_limit": boost.limit_reached_,
    "cli": lines, "late": state["late"]}))
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
    # the first run compiled (outside its time limit), the second only loaded; no fit
    # compiled a signature the warm-up had not (each kernel compiles one signature)
    assert first["compile"] > second["compile"]
    assert first["late"] == [] and second["late"] == []
