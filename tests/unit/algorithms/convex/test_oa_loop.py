"""One outer-approximation loop (issue 32, item 2): one master-gap schedule, one history
record and the near-limit guard for both kinds of master."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from rulemip.algorithms.convex.oa_loop import NearLimitGuard, run_rows
from rulemip.algorithms.convex.oa_options import MasterGapSchedule, OAIteration, OAOptions
from rulemip.budget import Budget
from rulemip.solvers.result import Limit, TerminationReason

pytest.importorskip("highspy")
pytestmark = pytest.mark.solver

KEYS = set(OAIteration.__dataclass_fields__) | {"gap"}


def test_adaptive_schedule_follows_the_outer_gap_and_tightens_on_a_repeat():
    s = OAOptions(rel_tol=1e-4).schedule()
    assert s.first(10.0, 0.0) == 0.1                  # starts at 0.1
    g = s.next(0.1, 10.0, 9.0, new_point=True)        # a quarter of the outer gap
    assert g == pytest.approx(0.025)
    assert s.next(g, 10.0, 5.0, new_point=True) == g  # never looser (monotone)
    assert s.next(g, 10.0, 9.0, new_point=False) == pytest.approx(0.0025)  # a repeat
    assert s.next(1e-5, 10.0, 9.0, new_point=False) == 5e-5  # not below rel_tol / 2
    fb = OAOptions(rel_tol=1e-4, master_gap_from_bounds=True, gap_factor=0.5).schedule()
    assert fb.first(10.0, 9.9) == pytest.approx(0.005)
    fixed = OAOptions(rel_tol=1e-4, adaptive_master_gap=False).schedule()
    assert fixed.first(10.0, 0.0) == fixed.next(0.3, 10.0, 0.0, True) == 5e-5


def test_tangent_schedule_and_a_rule():
    from rulemip.algorithms.convex.tangent_cuts import _master_gap_schedule

    s = _master_gap_schedule(1e-4, adaptive=True)
    assert s.first(10.0, -math.inf) == 1e-5          # unknown outer gap: the floor
    assert s.first(10.0, 0.0) == 0.05                # capped at 5 %
    assert s.next(0.05, 10.0, 9.9, True) == pytest.approx(0.0025)
    assert _master_gap_schedule(1e-4, adaptive=False).first(10.0, 0.0) == 1e-5
    rule = MasterGapSchedule.of(lambda ub, lb: 0.125)
    assert rule.first(1.0, 0.0) == rule.next(0.3, 1.0, 0.0, False) == 0.125


def test_guard_applies_to_highs_near_the_limit_only():
    guard = NearLimitGuard("highs")
    assert not guard.near(10.0) and not guard.near(None)
    notes: list[str] = []
    guard.observe(3.0, 10.0, 1, notes)
    assert guard.near(2.0) and not guard.near(5.0) and not notes
    guard.observe(12.0, 10.0, 2, notes)             # overran its limit: from now on
    assert guard.near(100.0) and "no master is started after it" in notes[0]
    assert "overran" in guard.stop_note(100.0)
    assert not NearLimitGuard("scip").near(0.1)


def test_both_masters_write_one_history_record():
    from rulemip.algorithms.convex.outer_approximation import outer_approximation
    from rulemip.model import MIPModel
    from rulemip.solvers.base import get_backend

    from .test_outer_approximation import (
        _problem,
        _squares_master,
        _SquaresSeparation,
    )

    oracle, model, (_opt, _) = _problem(np.random.default_rng(0))
    seen: list[dict] = []
    res = outer_approximation(oracle, model, options=OAOptions(rel_tol=1e-9, abs_tol=1e-9,
                                                               callback=seen.append))
    assert res.history and all(set(h) == KEYS for h in res.history)
    assert seen == list(res.history) and res.master_solves == len(res.history)
    a = np.array([1.3, -0.6, 2.2])
    hooks = _SquaresSeparation(a)
    rows = run_rows(hooks, _squares_master(3), get_backend("highs"),
                    hooks.cuts_at(np.zeros(3)),
                    OAOptions(master_gap=lambda ub, lb: 1e-9, rel_tol=1e-9, abs_tol=1e-9,
                              lp_rounds=5, stall_rounds=5, optimality_tol=1e-6,
                              budget=Budget.from_time_limit(30)))
    assert rows.termination is TerminationReason.OPTIMAL
    assert rows.history and all(set(h) == KEYS for h in rows.history)
    brute = min(float(np.sum((np.array(p) - a) ** 2))
                for p in itertools.product(range(-3, 4), repeat=3) if sum(p) <= 0)
    assert rows.value == pytest.approx(brute, abs=1e-9)
    assert isinstance(model, MIPModel)


def test_row_masters_get_the_near_limit_guard(monkeypatch):
    """Every master — here the tangent-cut row master — is not started once less time is
    left than the previous master took: the loop ends at its time limit."""
    from rulemip.budget import Budget
    from rulemip.solvers.base import get_backend

    from .test_outer_approximation import _squares_master, _SquaresSeparation

    seen: list[tuple[bool, object]] = []
    backend = get_backend("highs")
    solve = backend.persistent

    def persistent(model):
        master = solve(model)
        inner = master.solve

        def recording(options=None, start=None):
            seen.append((start is not None, options.extra.get("presolve")))
            return dataclasses.replace(inner(options, start), wall_time=10.0)  # "took" 10 s

        master.solve = recording
        return master

    left = itertools.chain([100.0], itertools.repeat(5.0))   # seconds left before each
    monkeypatch.setattr(backend, "persistent", persistent)
    monkeypatch.setattr(Budget, "remaining", lambda self: next(left))
    a = np.array([1.3, -0.6, 2.2])
    hooks = _SquaresSeparation(a)
    start = np.array([-1.0, -1.0, 0.0])
    res = run_rows(hooks, _squares_master(3), backend, hooks.cuts_at(start),
                   OAOptions(master_gap=lambda ub, lb: 1e-9, rel_tol=1e-9, abs_tol=1e-9,
                             stall_rounds=5, budget=Budget.from_time_limit(30)), start=start)
    assert seen == [(True, None)]   # the first master with its start, then none
    assert res.limit is Limit.TIME
    assert any("less than the previous master took" in n for n in res.notes)
    assert res.lower_bound <= res.value
