"""A fault inside a backend (PySCIPOpt raises a bare ``Exception("SCIP: error in LP
solver!")`` on unresolved LP trouble, seen in tangent-cut masters) surfaces as a
:class:`~rulemip.exceptions.SolverError` that carries the best model known."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip import ExactRuleEnsembleRegressor
from rulemip.exceptions import SolverError

pytest.importorskip("pyscipopt")


class _FailingModel:
    """Delegates to a real pyscipopt.Model, except that ``optimize`` fails like SCIP."""

    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def optimize(self):
        raise Exception("SCIP: error in LP solver!")


def test_scip_fault_is_a_solver_error_with_the_warm_start(monkeypatch):
    from rulemip.solvers import scip

    original = scip.ScipPersistent.__init__

    def init(self, model):
        original(self, model)
        self._m = _FailingModel(self._m)

    monkeypatch.setattr(scip.ScipPersistent, "__init__", init)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = np.where(X[:, 0] > 0, 2.0, 0.0) + 0.1 * rng.normal(size=30)
    est = ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=3, engine="mip",
                                     solver="scip", time_limit=20)
    with pytest.raises(SolverError, match="SCIP failed") as info:
        est.fit(X, y)
    result = info.value.result  # type: ignore[attr-defined]
    assert result.ensemble is not None and len(result.ensemble.rules) == 1
    assert result.risk < float(np.var(y))  # the COB warm start, not an empty model
