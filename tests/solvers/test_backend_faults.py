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
    """Delegates to a real pyscipopt.Model, except that its solve calls (``optimize``,
    ``optimizeNogil``) fail like SCIP."""

    def __init__(self, inner):
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name):
        return getattr(self._inner, name)

    def optimize(self):
        raise Exception("SCIP: error in LP solver!")

    optimizeNogil = optimize


def test_scip_fault_is_a_solver_error_with_the_warm_start(monkeypatch):
    from rulemip.solvers import scip

    original = scip.ScipPersistent.__init__

    def init(self, model, **kwargs):
        original(self, model, **kwargs)
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


class _FlakyPersistent:
    """A persistent master whose ``fail_at``-th solve raises like a backend fault."""

    def __init__(self, inner, fail_at: int):
        self.inner, self.fail_at, self.calls = inner, fail_at, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def solve(self, options, start=None):
        self.calls += 1
        if self.calls == self.fail_at:
            raise SolverError("LP solver error (simulated)")
        return self.inner.solve(options, start)


class _FlakyBackend:
    def __init__(self, fail_at: int):
        from rulemip.solvers import get_backend

        self.inner = get_backend("highs")
        self.fail_at = fail_at
        self.name = "flaky-highs"
        self.capabilities = self.inner.capabilities
        self.unsupported_combinations = self.inner.unsupported_combinations
        self.install_hint = self.inner.install_hint

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def persistent(self, model):
        return _FlakyPersistent(self.inner.persistent(model), self.fail_at)


@pytest.mark.parametrize("fail_at", [1, 3, 40])
def test_tangent_cut_master_fault_keeps_the_incumbent_and_a_valid_bound(fail_at):
    from rulemip.algorithms.convex.tangent_cuts import solve_with_tangent_cuts
    from rulemip.model import MIPModel
    from rulemip.solvers.result import SolveOptions, TerminationReason

    # min Σ logistic(f_i; y_i) with f_i = b + 3 s_i z, z binary, b continuous
    y = np.array([1.0, 1.0, -1.0, 1.0, -1.0])
    s = np.array([1.0, -1.0, -1.0, 1.0, 1.0])
    m = MIPModel()
    f = m.add_variables("f", 5, lb=-10.0, ub=10.0)
    b = m.add_variables("b", (), lb=-5.0, ub=5.0)
    z = m.add_variables("z", (), binary=True)
    rows = [{int(f.ids[i]): 1.0, int(b.ids): -1.0, int(z.ids): -3.0 * s[i]}
            for i in range(5)]
    m.add_constraints("link", rows=rows, lower=0.0, upper=0.0)
    m.add_loss("logistic", f.ids, y)
    sf = m.to_standard_form()
    ref = solve_with_tangent_cuts(sf, "highs", SolveOptions(time_limit=30))
    out = solve_with_tangent_cuts(sf, _FlakyBackend(fail_at), SolveOptions(time_limit=30))
    assert ref.termination is TerminationReason.OPTIMAL
    assert out.bounds.dual <= ref.bounds.primal + 1e-9  # still a valid bound
    if fail_at <= out.master_solves:
        assert any("failed" in n for n in out.notes)
    if out.x is not None:
        assert sf.objective_value(out.x) >= ref.bounds.primal - 1e-9
