"""One way to say time (issue 32, item 5): below the estimators time is a
:class:`~rulemip.budget.Budget`.

(a) No public function of ``rulemip.boosting``, ``rulemip.algorithms`` or
``rulemip.formulations`` takes a ``deadline`` except as the deprecated twin of ``budget``;
every one that takes ``time_limit`` also takes ``budget`` (a settings object may take the
budget in its ``fit``), and the deprecated keywords warn (``FutureWarning``) and are still
honoured. (b) A budget stops each search with the status it reported before (a spent
budget: ``"time_limit"``, a spent work limit: ``"work_limit"``, an enumeration or a branch
and bound: incomplete), the same as the deprecated keyword it replaces.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time
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
from rulemip.budget import Budget, deprecated_deadline
from rulemip.data import Dataset, candidate_thresholds
from rulemip.exceptions import InvalidParameterError
from rulemip.formulations.box_oracles import enumerate_optimum
from rulemip.formulations.box_selection import BoxSelectionCIP

PACKAGES = ("rulemip.boosting", "rulemip.algorithms", "rulemip.formulations")

#: methods that take ``time_limit`` and no ``budget`` because the whole method is
#: deprecated (a FutureWarning names its replacement)
DEPRECATED_METHODS = {"rulemip.formulations.tree_pruning.TreePruningMIP.solve"}


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


def test_deadline_is_only_the_deprecated_twin_of_budget() -> None:
    """A ``deadline`` parameter exists only next to ``budget``, defaults to None and goes
    through :func:`deprecated_deadline` (which warns)."""
    for name, (f, _) in _public_callables().items():
        ps = _params(f)
        if "deadline" not in ps:
            continue
        assert "budget" in ps, name
        if f is deprecated_deadline:   # the deprecation itself
            continue
        assert ps["deadline"].default is None, name
        assert "deprecated_deadline(" in inspect.getsource(f), name


def test_time_limit_comes_with_budget() -> None:
    """Every public callable taking ``time_limit`` takes ``budget`` too — or is the
    constructor of a settings object whose ``fit`` takes the budget (``RuleBooster``), or
    is deprecated as a whole."""
    found = []
    for name, (f, cls) in _public_callables().items():
        if "time_limit" not in _params(f):
            continue
        found.append(name)
        if "budget" in _params(f):
            continue
        if name in DEPRECATED_METHODS:
            assert "FutureWarning" in inspect.getsource(f), name
            continue
        assert cls is not None and f.__name__ == "__init__", name
        assert any("budget" in _params(m) for m in vars(cls).values()
                   if inspect.isfunction(m) and not m.__name__.startswith("_")), name
    assert "rulemip.boosting.search.find_rule" in found


# ---------------------------------------------------------------------- the searches
def _space_and_objective(seed: int = 1) -> tuple[SearchSpace, Any, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(60, 3)).astype(float)
    y = np.where(X[:, 0] > 2, 1.0, -0.5) + 0.3 * rng.normal(size=60)
    return SearchSpace.build(X), make_objective("gs", y - y.mean()), X, y


def _box_problem(k: int = 3) -> Any:
    _, _, X, y = _space_and_objective(0)
    ds = Dataset.from_arrays(X[:40, :2], y[:40])
    return BoxSelectionCIP(k, reg=1e-3, thresholds=candidate_thresholds(ds.X, 3)).build(ds)


@pytest.mark.parametrize("search", ["greedy", "bnb"])
def test_find_rule_time_limit_warns_and_stops_as_a_spent_budget(search: str) -> None:
    space, obj, _, _ = _space_and_objective()
    with pytest.warns(FutureWarning, match=r"find_rule\(time_limit=\.\.\.\)"):
        old = find_rule(space, obj, search=search, time_limit=0.0)
    new = find_rule(space, obj, search=search, budget=Budget.from_time_limit(0.0))
    assert old is not None and new is not None
    assert old.status == new.status == "time_limit"
    assert not old.certified and not new.certified
    # a generous time limit is honoured as before: the search finishes
    with pytest.warns(FutureWarning):
        done = find_rule(space, obj, search=search, time_limit=600.0)
    assert done is not None and done.status != "time_limit"


def test_find_rule_stops_on_the_work_limit() -> None:
    space, obj, _, _ = _space_and_objective()
    res = find_rule(space, obj, budget=Budget.from_time_limit(None, work_limit=1))
    full = find_rule(space, obj, budget=Budget.unlimited())
    assert res is not None and full is not None
    assert res.status == "work_limit" and full.status == "optimal"
    assert res.bound >= full.value - 1e-12


def test_box_search_time_limit_warns_and_stops_as_a_spent_budget() -> None:
    space, obj, _, _ = _space_and_objective()
    with pytest.warns(FutureWarning, match=r"box_search\(time_limit=\.\.\.\)"):
        old = box_search(space, obj, time_limit=0.0)
    new = box_search(space, obj, budget=Budget.from_time_limit(0.0))
    assert old is not None and new is not None
    assert old.status == new.status == "time_limit"
    work = box_search(space, obj, budget=Budget.from_time_limit(None, work_limit=1))
    assert work is not None and work.status == "work_limit"


def _swap_instance() -> tuple[Dataset, Any, SearchSpace, list[np.ndarray]]:
    _, _, X, y = _space_and_objective(3)
    ds = Dataset.from_arrays(X, y)
    th = candidate_thresholds(ds.X, 3)
    empty = refit_ensemble(ds, [], reg=0.1, fit_intercept=True)[0]
    return ds, empty, SearchSpace.build(ds.X, thresholds=th), th


def test_search_slot_time_limit_warns_and_matches_the_budget() -> None:
    ds, empty, space, _ = _swap_instance()
    common: dict[str, Any] = dict(reg=0.1, fit_intercept=True, max_rule_length=None)
    with pytest.warns(FutureWarning, match=r"search_slot\(time_limit=\.\.\.\)"):
        old = search_slot(ds, empty, 0, space, time_limit=0.0, **common)
    new = search_slot(ds, empty, 0, space, budget=Budget.from_time_limit(0.0), **common)
    full = search_slot(ds, empty, 0, space, budget=Budget.unlimited(), **common)
    assert old is not None and new is not None and full is not None
    assert not old.certified and not new.certified and full.certified
    assert old.best == new.best <= full.best
    assert new.bound >= full.best - 1e-12


def test_check_one_swap_time_limit_warns() -> None:
    ds, empty, _, th = _swap_instance()
    with pytest.warns(FutureWarning, match=r"check_one_swap\(time_limit=\.\.\.\)"):
        old = check_one_swap(ds, empty, 1, reg=0.1, fit_intercept=True, thresholds=th,
                             time_limit=600.0)
    new = check_one_swap(ds, empty, 1, reg=0.1, fit_intercept=True, thresholds=th,
                         budget=Budget.from_time_limit(600.0))
    assert old[0] == new[0] and len(old[1]) == len(new[1])


def test_enumeration_deadline_warns_and_stops_as_a_spent_budget() -> None:
    prob = _box_problem()
    with pytest.warns(FutureWarning, match=r"enumerate_optimum\(deadline=\.\.\.\)"):
        old = enumerate_optimum(prob.oracle, prob.n_boxes, 3, deadline=time.perf_counter())
    new = enumerate_optimum(prob.oracle, prob.n_boxes, 3, budget=Budget.from_time_limit(0.0))
    assert old[3] is new[3] is False and old[2] == new[2] == -np.inf
    work = enumerate_optimum(prob.oracle, prob.n_boxes, 3,
                             budget=Budget.from_time_limit(None, work_limit=1))
    full = enumerate_optimum(prob.oracle, prob.n_boxes, 3)
    assert not work[3] and full[3] and work[1] >= full[1]
    with pytest.raises(InvalidParameterError, match="not both"), \
            pytest.warns(FutureWarning):
        enumerate_optimum(prob.oracle, prob.n_boxes, 3, Budget.unlimited(),
                          deadline=time.perf_counter())


def test_box_branch_and_bound_deadline_warns_and_stops_as_a_spent_budget() -> None:
    prob = _box_problem()
    with pytest.warns(FutureWarning, match=r"branch_and_bound\(deadline=\.\.\.\)"):
        old = branch_and_bound(prob.oracle, prob.n_boxes, 3, deadline=time.perf_counter(),
                               search_time=0.0)
    new = branch_and_bound(prob.oracle, prob.n_boxes, 3, budget=Budget.from_time_limit(0.0),
                           search_time=0.0)
    assert not old.complete and not new.complete and old.nodes == new.nodes == 0
    assert old.value == new.value and old.lower_bound == new.lower_bound


def test_sweep_branch_and_bound_deadline_warns_and_stops_as_a_spent_budget() -> None:
    prob = _box_problem(2)
    c = prob.cells
    sb = CellSweepBound(prob.boxes.cover, c.groups, c.y, c.weight, 1e-3, 2, True,
                        c.constant, c.total_weight)
    z0 = np.zeros(prob.n_boxes)
    v0 = float(prob.oracle.value_and_gradient(z0)[0])

    def value(z: np.ndarray) -> float:
        return float(prob.oracle.value_and_gradient(z)[0])

    with pytest.warns(FutureWarning, match=r"sweep_branch_and_bound\(deadline=\.\.\.\)"):
        old = sweep_branch_and_bound(sb, value, z0, v0, deadline=time.perf_counter())
    new = sweep_branch_and_bound(sb, value, z0, v0, budget=Budget.from_time_limit(0.0))
    full = sweep_branch_and_bound(sb, value, z0, v0, budget=Budget.unlimited())
    assert not old.complete and not new.complete and full.complete
    assert old.value == new.value == v0
    assert new.lower_bound <= full.value + 1e-9


def test_deprecated_deadline_rejects_a_number_as_budget() -> None:
    with pytest.raises(InvalidParameterError, match="Budget"):
        deprecated_deadline(5.0, None, "f")  # type: ignore[arg-type]


def test_a_search_given_a_budget_warns_nothing() -> None:
    """The package's own calls pass budgets: a search given one raises no FutureWarning."""
    space, _, _, y = _space_and_objective(4)
    obj = ridge_gain_objective(y - y.mean(), reg=0.1, fit_intercept=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        res = find_rule(space, obj, search="beam", budget=Budget.from_time_limit(0.0))
    assert res is not None and res.status == "time_limit"
