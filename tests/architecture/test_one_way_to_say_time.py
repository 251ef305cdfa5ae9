"""One way to say time (issue 32, item 5): below the estimators time is a
:class:`~rulemip.budget.Budget`.

(a) No public function of ``rulemip.boosting``, ``rulemip.algorithms`` or
``rulemip.formulations`` takes a second way to say time beside ``budget``: no
``deadline``, ``time_budget`` or ``time_limit`` keyword (their twins were removed in 0.3,
CHANGELOG.md); ``time_limit`` is left only to the constructor of a settings object whose
``fit`` takes the budget (``RuleBooster``). (b) A budget stops each search with its status
(a spent budget: ``"time_limit"``, a spent work limit: ``"work_limit"``, an enumeration or
a branch and bound: incomplete).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from rulemip.algorithms.krule.box_bnb import branch_and_bound
from rulemip.algorithms.krule.cell_bnb import CellSweepBound, sweep_branch_and_bound
from rulemip.algorithms.local.rule_swaps import check_one_swap, refit_ensemble, search_slot
from rulemip.boosting import SearchSpace, find_rule, make_objective
from rulemip.boosting.boxsearch.range_search import box_search
from rulemip.boosting.objectives import ridge_gain_objective
from rulemip.budget import Budget
from rulemip.data import Dataset, candidate_thresholds
from rulemip.formulations.box_oracles import enumerate_optimum
from rulemip.formulations.box_selection import BoxSelectionCIP
from rulemip.rules.language import Language
from rulemip.rules.problem import KRuleProblem

PACKAGES = ("rulemip.boosting", "rulemip.algorithms", "rulemip.formulations")
#: the other names of time a signature could carry beside ``budget``
TIME_TWINS = ("deadline", "time_budget", "time_limit")


def _modules() -> Iterator[Any]:
    for name in PACKAGES:
        pkg = importlib.import_module(name)
        yield pkg
        for info in pkgutil.walk_packages(pkg.__path__, name + "."):
            yield importlib.import_module(info.name)


def _public_callables() -> dict[str, tuple[Callable[..., Any], type | None]]:
    """Every public function and public method (``__init__`` included) defined in the
    three packages, by qualified name, with its class (None for a function)."""
    out: dict[str, tuple[Callable[..., Any], type | None]] = {}
    for mod in _modules():
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != mod.__name__:
                continue
            if inspect.isfunction(obj):
                out[f"{mod.__name__}.{attr}"] = (obj, None)
            elif inspect.isclass(obj):
                for meth, f in vars(obj).items():
                    if inspect.isfunction(f) and (meth == "__init__" or not meth.startswith("_")):
                        out[f"{mod.__name__}.{attr}.{meth}"] = (f, obj)
    return out


def _params(f: Callable[..., Any]) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(f).parameters)


def test_the_walk_sees_the_searches() -> None:
    names = _public_callables()
    for want in ("rulemip.boosting.search.find_rule",
                 "rulemip.boosting.boxsearch.range_search.box_search",
                 "rulemip.algorithms.local.rule_swaps.search_slot",
                 "rulemip.formulations.box_oracles.enumerate_optimum",
                 "rulemip.algorithms.krule.box_bnb.branch_and_bound",
                 "rulemip.algorithms.krule.cell_bnb.sweep_branch_and_bound"):
        assert want in names


def test_no_search_takes_a_second_way_to_say_time() -> None:
    """No public callable takes ``budget`` and a twin (``deadline``, ``time_budget``,
    ``time_limit``) beside it, and none takes ``deadline`` or ``time_budget`` at all."""
    for name, (f, _) in _public_callables().items():
        ps = _params(f)
        assert "deadline" not in ps and "time_budget" not in ps, name
        if "budget" in ps:
            assert not any(t in ps for t in TIME_TWINS), name


def test_time_limit_is_only_a_settings_constructor() -> None:
    """A public callable taking ``time_limit`` is the constructor of a settings object
    whose ``fit`` takes the budget (``RuleBooster``)."""
    found = []
    for name, (f, cls) in _public_callables().items():
        if "time_limit" not in _params(f):
            continue
        found.append(name)
        assert cls is not None and f.__name__ == "__init__", name
        assert any("budget" in _params(m) for m in vars(cls).values()
                   if inspect.isfunction(m) and not m.__name__.startswith("_")), name
    assert "rulemip.boosting.booster.RuleBooster.__init__" in found


# ---------------------------------------------------------------------- the searches
def _space_and_objective(seed: int = 1) -> tuple[SearchSpace, Any, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(60, 3)).astype(float)
    y = np.where(X[:, 0] > 2, 1.0, -0.5) + 0.3 * rng.normal(size=60)
    return SearchSpace.build(X), make_objective("gs", y - y.mean()), X, y


def _box_problem(k: int = 3) -> Any:
    _, _, X, y = _space_and_objective(0)
    ds = Dataset.from_arrays(X[:40, :2], y[:40])
    return BoxSelectionCIP(Language(k, candidate_thresholds(ds.X, 3)), reg=1e-3).build(ds)


@pytest.mark.parametrize("search", ["greedy", "bnb", "enumerate"])
def test_find_rule_stops_on_a_spent_budget(search: str) -> None:
    space, obj, _, _ = _space_and_objective()
    new = find_rule(space, obj, search=search, budget=Budget.from_time_limit(0.0))
    assert new is not None and new.status == "time_limit" and not new.certified
    # a generous budget lets the search finish
    done = find_rule(space, obj, search=search, budget=Budget.from_time_limit(600.0))
    assert done is not None and done.status != "time_limit"
    assert new.bound >= done.value - 1e-12


def test_find_rule_stops_on_the_work_limit() -> None:
    space, obj, _, _ = _space_and_objective()
    res = find_rule(space, obj, budget=Budget.from_time_limit(None, work_limit=1))
    full = find_rule(space, obj, budget=Budget.unlimited())
    assert res is not None and full is not None
    assert res.status == "work_limit" and full.status == "optimal"
    assert res.bound >= full.value - 1e-12


def test_box_search_stops_on_a_spent_budget() -> None:
    space, obj, _, _ = _space_and_objective()
    new = box_search(space, obj, budget=Budget.from_time_limit(0.0))
    assert new is not None and new.status == "time_limit"
    work = box_search(space, obj, budget=Budget.from_time_limit(None, work_limit=1))
    assert work is not None and work.status == "work_limit"


def _swap_instance() -> tuple[Dataset, Any, SearchSpace, list[np.ndarray]]:
    _, _, X, y = _space_and_objective(3)
    ds = Dataset.from_arrays(X, y)
    th = candidate_thresholds(ds.X, 3)
    empty = refit_ensemble(ds, [], reg=0.1, fit_intercept=True)[0]
    return ds, empty, SearchSpace.build(ds.X, thresholds=th), th


def test_search_slot_stops_on_a_spent_budget() -> None:
    ds, empty, space, th = _swap_instance()
    problem = KRuleProblem.of(ds, 1, reg=0.1, fit_intercept=True, thresholds=th)
    new = search_slot(problem, empty, 0, space, budget=Budget.from_time_limit(0.0))
    full = search_slot(problem, empty, 0, space, budget=Budget.unlimited())
    assert new is not None and full is not None
    assert not new.certified and full.certified
    assert new.best <= full.best and new.bound >= full.best - 1e-12


def test_check_one_swap_within_a_budget_equals_unlimited() -> None:
    ds, empty, _, th = _swap_instance()
    problem = KRuleProblem.of(ds, 1, reg=0.1, fit_intercept=True, thresholds=th)
    timed = check_one_swap(problem, empty, budget=Budget.from_time_limit(600.0))
    free = check_one_swap(problem, empty)
    assert timed[0] == free[0] and len(timed[1]) == len(free[1])


def test_enumeration_stops_on_a_spent_budget() -> None:
    prob = _box_problem()
    new = enumerate_optimum(prob.oracle, prob.n_boxes, 3, budget=Budget.from_time_limit(0.0))
    assert new[3] is False and new[2] == -np.inf
    work = enumerate_optimum(prob.oracle, prob.n_boxes, 3,
                             budget=Budget.from_time_limit(None, work_limit=1))
    full = enumerate_optimum(prob.oracle, prob.n_boxes, 3)
    assert not work[3] and full[3] and work[1] >= full[1]


def test_box_branch_and_bound_stops_on_a_spent_budget() -> None:
    prob = _box_problem()
    new = branch_and_bound(prob.oracle, prob.n_boxes, 3, budget=Budget.from_time_limit(0.0),
                           search_time=0.0)
    full = branch_and_bound(prob.oracle, prob.n_boxes, 3, search_time=0.0)
    assert not new.complete and new.nodes == 0 and full.complete
    assert new.lower_bound <= full.value + 1e-9 and new.value >= full.value - 1e-9


def test_sweep_branch_and_bound_stops_on_a_spent_budget() -> None:
    prob = _box_problem(2)
    c = prob.cells
    sb = CellSweepBound(prob.boxes.cover, c, 1e-3, Language(2))
    z0 = np.zeros(prob.n_boxes)
    v0 = float(prob.oracle.value_and_gradient(z0)[0])

    def value(z: np.ndarray) -> float:
        return float(prob.oracle.value_and_gradient(z)[0])

    new = sweep_branch_and_bound(sb, value, z0, v0, budget=Budget.from_time_limit(0.0))
    full = sweep_branch_and_bound(sb, value, z0, v0, budget=Budget.unlimited())
    assert not new.complete and full.complete
    assert new.value == v0
    assert new.lower_bound <= full.value + 1e-9


def test_a_search_given_a_budget_warns_nothing() -> None:
    """The package's own calls pass budgets: a search given one raises no warning."""
    space, _, _, y = _space_and_objective(4)
    obj = ridge_gain_objective(y - y.mean(), reg=0.1, fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = find_rule(space, obj, search="beam", budget=Budget.from_time_limit(0.0))
    assert res is not None and res.status == "time_limit"
