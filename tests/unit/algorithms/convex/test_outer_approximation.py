"""Outer approximation on small convex quadratics over binaries: brute-force optimum,
bounds valid at every iteration, time limits, relaxations, warm starts."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from rulemip.budget import Budget
from rulemip.model import MIPModel
from rulemip.solvers import Limit, TerminationReason

pytest.importorskip("highspy")
oa_mod = pytest.importorskip("rulemip.algorithms.convex.outer_approximation")
OAOptions, OuterApproximation = oa_mod.OAOptions, oa_mod.OuterApproximation
outer_approximation = oa_mod.outer_approximation
run_rows = oa_mod.run_rows

pytestmark = pytest.mark.solver


class Quadratic:
    """q(z) = ½ zᵀ P z + cᵀ z (P positive definite)."""

    def __init__(self, P, c):
        self.P, self.c = P, c

    def value_and_gradient(self, z):
        return float(0.5 * z @ self.P @ z + self.c @ z), self.P @ z + self.c


def _problem(rng, m=8, budget=3):
    A = rng.normal(size=(m, m))
    P = A @ A.T + 0.5 * np.eye(m)
    c = rng.normal(size=m) * 4
    model = MIPModel()
    z = model.add_variables("z", m, binary=True)
    model.add_constraints("budget", rows=[{int(i): 1.0 for i in z.ids}], upper=budget)
    best = min((0.5 * np.array(x) @ P @ np.array(x) + c @ np.array(x), x)
               for x in itertools.product((0, 1), repeat=m) if sum(x) <= budget)
    return Quadratic(P, c), model, best


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_equals_brute_force_and_bounds_valid_every_iteration(seed):
    rng = np.random.default_rng(seed)
    oracle, model, (opt, _x_opt) = _problem(rng)
    res = outer_approximation(oracle, model, options=OAOptions(rel_tol=1e-9, abs_tol=1e-9))
    assert res.termination is TerminationReason.OPTIMAL
    assert res.value == pytest.approx(opt, abs=1e-7)
    assert res.lower_bound <= opt + 1e-7
    np.testing.assert_allclose(oracle.value_and_gradient(res.z)[0], res.value)
    assert res.history
    for h in res.history:
        assert h["lb"] <= opt + 1e-7 <= h["ub"] + 2e-7
    lbs = [h["lb"] for h in res.history]
    assert all(b >= a - 1e-12 for a, b in itertools.pairwise(lbs))  # monotone


def test_warm_starts_hint_and_callback():
    rng = np.random.default_rng(5)
    oracle, model, (opt, x_opt) = _problem(rng)
    seen = []
    oa = OuterApproximation(oracle, model, options=OAOptions(callback=seen.append),
                            lower_bound_hint=opt - 100.0)
    v = oa.add_cut_at(np.array(x_opt, dtype=float))
    assert v == pytest.approx(opt) and oa.upper_bound == pytest.approx(opt)
    res = oa.run()
    assert res.termination is TerminationReason.OPTIMAL
    assert res.value == pytest.approx(opt)
    assert seen and {"iteration", "time", "ub", "lb", "gap"} <= set(seen[0])
    assert len(res.cut_points) == res.n_cuts


def test_time_limit_returns_valid_interval():
    rng = np.random.default_rng(7)
    oracle, model, (opt, _) = _problem(rng, m=14, budget=5)
    res0 = outer_approximation(oracle, model,
                               options=OAOptions(budget=Budget.from_time_limit(0.0)))
    assert res0.termination in (TerminationReason.NO_SOLUTION_FOUND,
                                TerminationReason.FEASIBLE)
    assert res0.limit is Limit.TIME and res0.lower_bound <= opt
    res = outer_approximation(oracle, model, warm_starts=[np.zeros(14)],
                              options=OAOptions(budget=Budget.from_time_limit(0.0)))
    assert res.termination is TerminationReason.FEASIBLE and res.limit is Limit.TIME
    assert res.lower_bound <= opt + 1e-9 <= res.value + 1e-9
    res2 = outer_approximation(oracle, model, options=OAOptions(max_iter=1))
    assert res2.lower_bound <= opt + 1e-9 <= res2.value + 1e-9
    if res2.termination is not TerminationReason.OPTIMAL:
        assert res2.limit is Limit.ITERATION


def test_relaxation_matches_projected_gradient():
    rng = np.random.default_rng(3)
    m = 5
    A = rng.normal(size=(m, m))
    P = A @ A.T + np.eye(m)
    c = rng.normal(size=m) * 3
    model = MIPModel()
    model.add_variables("z", m, binary=True)
    res = outer_approximation(Quadratic(P, c), model,
                              options=OAOptions(relax=True, rel_tol=1e-7, abs_tol=1e-9,
                                                max_iter=3000))
    # reference: projected gradient on the box [0, 1]^m
    z = np.zeros(m)
    step = 1.0 / np.linalg.eigvalsh(P).max()
    for _ in range(20000):
        z = np.clip(z - step * (P @ z + c), 0.0, 1.0)
    ref = 0.5 * z @ P @ z + c @ z
    assert res.termination is TerminationReason.OPTIMAL
    assert res.value == pytest.approx(ref, abs=1e-5)
    assert res.lower_bound <= ref + 1e-7


def test_infeasible_feasible_set():
    model = MIPModel()
    z = model.add_variables("z", 2, binary=True)
    model.add_constraints("impossible", rows=[{int(z.ids[0]): 1.0, int(z.ids[1]): 1.0}],
                          lower=3.0)
    res = outer_approximation(Quadratic(np.eye(2), np.zeros(2)), model)
    assert res.termination is TerminationReason.INFEASIBLE
    assert res.z is None and math.isinf(res.value)


def test_masters_near_the_limit_are_not_started(monkeypatch):
    """HiGHS does not stop every phase of a large master at its limit (presolve, a start's
    cutoff propagation, the root without presolve); once less time is left than the
    previous master took, no master is started and the loop ends at its time limit with
    its incumbent and a valid bound."""
    rng = np.random.default_rng(3)
    oracle, model, (opt, _) = _problem(rng, m=10, budget=4)
    oa = OuterApproximation(oracle, model,
                            options=OAOptions(budget=Budget.from_time_limit(1e6),
                                              rel_tol=1e-12, abs_tol=0.0, max_iter=3))
    oa.add_cut_at(np.zeros(10))
    seen = []
    solve = oa._master.solve

    def spy(options=None, start=None):
        seen.append((start is not None, options.extra.get("presolve")))
        return dataclasses.replace(solve(options, start), wall_time=10.0)  # "took" 10 s

    monkeypatch.setattr(oa._master, "solve", spy)
    left = iter([100.0, 5.0, 5.0, 5.0])   # seconds left before each master
    monkeypatch.setattr(oa, "_remaining", lambda: next(left))
    res = oa.run()
    assert res.lower_bound <= opt + 1e-9 <= res.value + 1e-9
    assert seen == [(True, None)]      # plenty of time: presolve on, incumbent as start
    assert res.limit is Limit.TIME
    assert any("less than the previous master took" in n for n in res.notes)


class _LyingOracle:
    """q = 1 at (1, 0) and 5 elsewhere, gradient 0 everywhere: not convex, so the cut at
    (0, 0) (ν ≥ 5) is not valid and the master's bound exceeds the incumbent."""

    def value_and_gradient(self, z):
        return (1.0 if z[0] > 0.5 and z[1] < 0.5 else 5.0), np.zeros(2)


def test_a_refuted_bound_is_not_a_proof():
    """The loop's own test passes (LB ≥ U) but the recomputed value refutes the bound:
    the status is decided by rulemip.solvers.status.promote, never OPTIMAL."""
    from rulemip.solvers.status import RefutedBoundWarning

    model = MIPModel()
    z = model.add_variables("z", 2, binary=True)
    model.add_constraints("budget", rows=[{int(i): 1.0 for i in z.ids}], upper=2)
    oa = OuterApproximation(_LyingOracle(), model, options=OAOptions())
    oa.add_cut(5.0, np.zeros(2), np.zeros(2))
    oa.add_cut(1.0, np.zeros(2), np.array([1.0, 0.0]))
    with pytest.warns(RefutedBoundWarning):
        res = oa.run()
    assert res.converged
    assert res.termination is TerminationReason.FEASIBLE
    assert res.value == 1.0 and res.lower_bound <= 1.0
    assert any(n.startswith("bound refuted") for n in res.notes)


def test_budget_bounds_the_run():
    """An expired rulemip.budget.Budget stops the loop before any master."""
    from rulemip.budget import Budget

    rng = np.random.default_rng(0)
    oracle, model, _ = _problem(rng)
    res = outer_approximation(oracle, model, warm_starts=[np.zeros(8)],
                              options=OAOptions(budget=Budget.from_time_limit(0.0)))
    assert res.iterations == 0
    assert res.termination is TerminationReason.FEASIBLE and res.limit is Limit.TIME


class _SquaresSeparation:
    """Tangent rows of ``t_j ≥ (x_j − a_j)²`` for a row master over columns (x, t)."""

    def __init__(self, a, polish=None):
        self.a = np.asarray(a, dtype=float)
        self.n = len(self.a)
        self._polish = polish
        self.polished = 0

    def _rows(self, p, only):
        import scipy.sparse as sp

        rows, cols, vals, lo = [], [], [], []
        for r, j in enumerate(only):
            g = 2.0 * (p[j] - self.a[j])  # t_j − g x_j ≥ (p_j − a_j)² − g p_j
            rows += [r, r]
            cols += [self.n + j, j]
            vals += [1.0, -g]
            lo.append((p[j] - self.a[j]) ** 2 - g * p[j])
        A = sp.csr_matrix((vals, (rows, cols)), shape=(len(only), 2 * self.n))
        return oa_mod.CutRows(A, np.asarray(lo, dtype=float))

    def separate(self, x):
        p, t = x[: self.n], x[self.n:]
        true = (p - self.a) ** 2
        return self._rows(p, np.flatnonzero(t < true - 1e-9).tolist())

    def point(self, x):
        return np.asarray(x[: self.n], dtype=float)

    def value(self, p):
        return None if p.sum() > 1e-9 else float(np.sum((p - self.a) ** 2))

    def cuts_at(self, p):
        return self._rows(p, list(range(self.n)))

    def master_start(self, p):
        return np.concatenate([p, (p - self.a) ** 2])

    def polish(self, p):
        if self._polish is None:
            return None
        self.polished += 1
        return self._polish(p)


def _squares_master(n):
    m = MIPModel()
    x = m.add_variables("x", n, lb=-3.0, ub=3.0, integer=True)
    t = m.add_variables("t", n, lb=0.0)
    m.add_objective(t.ids, 1.0)
    m.add_constraints("sum", rows=[{int(i): 1.0 for i in x.ids}], lower=-math.inf, upper=0.0)
    return m.to_standard_form()


@pytest.mark.parametrize("persistent", [True, False])
@pytest.mark.parametrize("lp_rounds", [0, 30])
def test_row_master_finds_brute_force_optimum(persistent, lp_rounds):
    """Kelley rows on ``min Σ (x_j − a_j)²`` over integers with ``Σ x ≤ 0``: the brute-force
    optimum, a bound below it at every iteration, on a persistent and a rebuilt master."""
    from rulemip.solvers.base import Capability, get_backend

    a = np.array([1.3, -0.6, 2.2])
    brute = min(float(np.sum((np.array(p) - a) ** 2))
                for p in itertools.product(range(-3, 4), repeat=3) if sum(p) <= 0)
    hooks = _SquaresSeparation(a)
    backend = get_backend("highs")
    if not persistent:
        class _Rebuilt:  # the same backend without in-place rows
            name, capabilities = backend.name, backend.capabilities - {Capability.PERSISTENT}
            solve, version = backend.solve, backend.version
        backend = _Rebuilt()
    initial = hooks.cuts_at(np.zeros(3))
    options = OAOptions(master_gap=lambda ub, lb: 1e-9, rel_tol=1e-9, abs_tol=1e-9,
                        lp_rounds=lp_rounds, stall_rounds=5, max_iter=1_000_000_000,
                        budget=Budget.from_time_limit(30))
    res = run_rows(hooks, _squares_master(3), backend, initial, options)
    assert res.termination is TerminationReason.OPTIMAL and res.converged
    assert res.value == pytest.approx(brute, abs=1e-9)
    assert res.lower_bound <= res.value
    assert np.sum(res.z) <= 1e-9 and float(np.sum((res.z - a) ** 2)) == res.value
    assert all(h["lb"] <= brute + 1e-9 for h in res.history)
    assert (lp_rounds > 0) == any(h["phase"] == "lp" for h in res.history)
    assert res.master_solves == len(res.history)


def test_row_master_polish_and_start_feed_the_incumbent():
    """A start is the first incumbent; the polish hook is called on every integer master
    point and its point (here the optimum itself) becomes the incumbent."""
    from rulemip.solvers.base import get_backend

    a = np.array([1.3, -0.6, 2.2])
    best = min((np.array(p, dtype=float) for p in itertools.product(range(-3, 4), repeat=3)
                if sum(p) <= 0), key=lambda p: float(np.sum((p - a) ** 2)))
    value = float(np.sum((best - a) ** 2))  # the brute-force optimum, returned by polish
    hooks = _SquaresSeparation(a, polish=lambda p: best)
    start = np.array([-1.0, -1.0, 0.0])
    options = OAOptions(master_gap=lambda ub, lb: 1e-9, rel_tol=1e-9, abs_tol=1e-9,
                        lp_rounds=0, stall_rounds=5, max_iter=1_000_000_000,
                        budget=Budget.from_time_limit(30))
    res = run_rows(
        hooks, _squares_master(3), get_backend("highs"), hooks.cuts_at(start), options,
        start=start)
    start_value = float(np.sum((start - a) ** 2))
    assert hooks.polished >= 1 and start_value > value
    assert res.value == pytest.approx(value, abs=1e-12) and np.array_equal(res.z, best)
    assert res.history[0]["ub"] == pytest.approx(value, abs=1e-12)  # polished at once
