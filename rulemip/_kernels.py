"""Compile the numba kernels before a fit's clock starts, and say how long it took.

The package's compiled kernels (the box search of :mod:`rulemip.boosting.boxsearch.kernel`, the
levels bound of :mod:`rulemip.formulations.levels`, the two-rule branch and bound of
:mod:`rulemip.algorithms.krule.two_rule_bound`, the knapsack-with-conflicts dynamic program
of :mod:`rulemip.algorithms.pruning.perspective`) are compiled by numba on their first call and
cached on disk (``cache=True``; numba's cache directory, ``NUMBA_CACHE_DIR`` when set).
A later process loads them in a fraction of a second. Compiling them takes seconds, and
before this module a fit paid that inside its time limit: the first run of a fresh
install could return a different model, boosting risk and certified gap than the second.

:func:`ensure_compiled` runs each kernel group once on a tiny problem, so that numba
compiles (or loads from its cache) exactly the specializations the fits call. The
estimators call it at the start of ``fit``, *before* they create the fit's
:class:`~rulemip.budget.Budget`, and record its wall time as ``timings_["compile"]``; the
command line reports a compile once on its progress line ("compiling kernels, first run
only: 8.1 s"). Within a process a group is prepared at most once. :func:`compile_kernels`
(``rulemip.compile_kernels``, ``rulemip compile``) prepares every group, e.g. right after
installing the package.

Nothing compiles in the background: a compile thread would take the CPU (and the GIL)
from the fit it is meant to help.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba.core import event

from rulemip.rules.language import Language

__all__ = ["GROUPS", "CompileReport", "compile_kernels", "ensure_compiled", "groups_for_fit"]

#: kernel groups in the order they are prepared
GROUPS: tuple[str, ...] = ("box", "levels", "two_rule", "kbox", "kbox3", "pruning")

_LOCK = threading.Lock()
_READY: set[str] = set()


@dataclass(frozen=True)
class CompileReport:
    """What :func:`ensure_compiled` did.

    Attributes
    ----------
    seconds : wall time of the call (compiling, or loading from numba's cache; 0 when
        every group was already prepared in this process).
    compiled : the groups numba compiled (not found in its cache).
    loaded : the groups loaded from numba's cache.
    """

    seconds: float = 0.0
    compiled: tuple[str, ...] = ()
    loaded: tuple[str, ...] = ()

    @property
    def message(self) -> str | None:
        """The one progress line of a compile ("compiling kernels, first run only:
        8.1 s"), or None when nothing was compiled."""
        if not self.compiled:
            return None
        return f"compiling kernels, first run only: {self.seconds:.1f} s"


def groups_for_fit(language: Language, *, loss: str, reg: float = 1.0,
                   box_search: bool = True) -> tuple[str, ...]:
    """The kernel groups an exact fit over ``language`` (its rule count; known before the
    data, so its thresholds may be None) under ``loss`` may call: the box search
    (boosting warm starts, rule swaps, pricing), the levels bound (the box-selection
    CIP), for two squared-loss rules at ``reg > 0`` the two-rule branch and bound, and for
    two squared-loss rules, or three of a capped length, the k-box search (any ``reg``;
    for three rules its three-box scan as well)."""
    n_rules = language.n_rules
    groups = ["box"] if box_search else []
    groups.append("levels")
    if n_rules == 2 and loss == "squared" and reg > 0:
        groups.append("two_rule")
    if loss == "squared" and (n_rules == 2 or (
            n_rules == 3 and language.max_rule_length is not None)):
        groups.append("kbox")
        if n_rules == 3:
            groups.append("kbox3")
    return tuple(groups)


# ---------------------------------------------------------------------- warm-up problems
def _tiny_data() -> tuple[np.ndarray, np.ndarray]:
    """12 rows, 2 features, a target with structure on both (deterministic)."""
    i = np.arange(12, dtype=float)
    X = np.column_stack([i, (7.0 * i) % 12.0])
    y = np.where(X[:, 0] > 5.0, 2.0, 0.0) + np.where(X[:, 1] > 6.0, 1.0, -1.0) + 0.1 * i
    return X, y


def _warm_box() -> None:
    """One box search (init_root, run, open_bound and every callee of evaluate)."""
    from rulemip.boosting.boxsearch.range_search import box_search
    from rulemip.boosting.objectives import make_objective
    from rulemip.boosting.space import SearchSpace

    X, y = _tiny_data()
    space = SearchSpace.build(X, max_thresholds=4)
    box_search(space, make_objective("gs", y - y.mean()))


def _warm_levels() -> None:
    from rulemip.formulations import levels

    v = np.linspace(-1.0, 1.0, 9)
    levels.levels_bound(v, np.ones_like(v), 4)


def _warm_two_rule() -> None:
    from rulemip.algorithms.krule import two_rule_bound as trb
    from rulemip.data import Dataset, candidate_thresholds
    from rulemip.formulations.box_selection import BoxSelectionCIP

    X, y = _tiny_data()
    ds = Dataset.from_arrays(X, y)
    thresholds = candidate_thresholds(ds.X, 3)
    cells = BoxSelectionCIP(Language(2, thresholds, fit_intercept=True), reg=1.0).reduce(ds)
    trb.two_rule_bound(cells, 1.0, True, upper=float(np.var(y)) + 1.0, max_memory=1 << 16)


def _warm_kbox() -> None:
    """The k-box table (enumeration, duplicates, sums), a start pair's gain and the pair
    scan on cells of unequal weight (the equal-weight rows of
    :mod:`~rulemip.algorithms.kbox.unit_rows`), one thread."""
    from rulemip.algorithms.kbox.engine import KBoxSearch
    from rulemip.budget import Budget

    search = KBoxSearch(Language(2, max_rule_length=2), reg=1.0, max_thresholds=3)
    built = search.build_model(_twice_data())
    search.search(built, budget=Budget.unlimited(), threads=1, start=np.array([0.0, 1.0]))


def _warm_kbox3() -> None:
    """The three-box scan (its pair search, ascents, strips and linked test), one
    thread."""
    from rulemip.algorithms.kbox.engine import KBoxSearch
    from rulemip.budget import Budget

    search = KBoxSearch(Language(3, max_rule_length=1), reg=1.0, max_thresholds=2)
    search.search(search.build_model(_twice_data()), budget=Budget.unlimited(), threads=1)


def _twice_data() -> Any:
    """The tiny data with three rows repeated: cells of weight 2."""
    from rulemip.data import Dataset

    X, y = _tiny_data()
    return Dataset.from_arrays(np.vstack([X, X[:3]]), np.r_[y, y[:3]])


def _warm_pruning() -> None:
    """The knapsack-with-conflicts dynamic program of the perspective bound (a root with
    two leaves, one fixed out)."""
    from rulemip.algorithms.pruning.perspective import ForestArrays, knapsack_dp

    forest = ForestArrays.of(np.array([-1, 0, 0], dtype=np.int64))
    knapsack_dp(np.array([1.0, 0.6, 0.7]), np.ones(3, dtype=np.int64), 2, forest,
                np.array([0, 0, -1], dtype=np.int8))


_WARM: dict[str, Callable[[], None]] = {
    "box": _warm_box, "levels": _warm_levels, "two_rule": _warm_two_rule, "kbox": _warm_kbox,
    "kbox3": _warm_kbox3, "pruning": _warm_pruning}


class _Compiles(event.Listener):
    """Counts numba's compile events: numba fires one only when a specialization is not
    in its cache (also for a signature compiled when its module is imported)."""

    def __init__(self) -> None:
        self.count = 0

    def on_start(self, event: Any) -> None:
        self.count += 1

    def on_end(self, event: Any) -> None:
        pass


def ensure_compiled(*groups: str) -> CompileReport:
    """Compile (or load from numba's cache) the kernels of ``groups`` (default: all of
    :data:`GROUPS`) by running each once on a tiny problem; a group already prepared in
    this process costs nothing. Call it before a fit's budget starts."""
    wanted = groups or GROUPS
    unknown = [g for g in wanted if g not in _WARM]
    if unknown:
        raise ValueError(f"unknown kernel group(s) {unknown}; known: {list(GROUPS)}")
    compiled: list[str] = []
    loaded: list[str] = []
    start = time.perf_counter()
    with _LOCK:
        for group in GROUPS:
            if group not in wanted or group in _READY:
                continue
            seen = _Compiles()
            with event.install_listener("numba:compile", seen):
                _WARM[group]()
            (compiled if seen.count else loaded).append(group)
            _READY.add(group)
    seconds = time.perf_counter() - start if compiled or loaded else 0.0
    return CompileReport(seconds, tuple(compiled), tuple(loaded))


def compile_kernels() -> CompileReport:
    """Compile every kernel group now (``rulemip compile``): after an install, in a
    container image or on each node of a cluster, so that no fit waits for a compile."""
    return ensure_compiled(*GROUPS)
