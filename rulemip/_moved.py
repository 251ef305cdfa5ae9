"""Former module addresses, kept for one release (rulemip 0.3 removes them).

The re-cut of ``algorithms/`` and ``boosting/`` into folders by family
(docs/architecture.md, "Rooms") moved modules. Importing a module under its former
address still works and warns (:class:`FutureWarning`): a meta-path finder installed by
``import rulemip`` answers every address in :data:`MOVED` with a thin module that reads
its names from the new one (:data:`FORMER_NAMES` adds names that lived in a moved module
and now live elsewhere). The package itself never imports a former address (a test says
so), so the folders hold only the modules that are there.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

__all__ = ["FORMER_NAMES", "MOVED", "install"]

#: former address (below ``rulemip.``) -> current address
MOVED: dict[str, str] = {
    "algorithms.driver": "algorithms.solve.driver",
    "algorithms.engine_registry": "algorithms.solve.registry",
    "algorithms.tangent_cuts": "algorithms.convex.tangent_cuts",
    "algorithms.outer_approximation": "algorithms.convex.outer_approximation",
    "algorithms.oa_loop": "algorithms.convex.oa_loop",
    "algorithms.oa_options": "algorithms.convex.oa_options",
    "algorithms.oa_relaxation": "algorithms.convex.oa_relaxation",
    "algorithms.frank_wolfe": "algorithms.convex.frank_wolfe",
    "algorithms.interval_cover_engine": "algorithms.krule.interval_cover",
    "algorithms.mip_boosting": "algorithms.krule.mip_boosting",
    "algorithms.box_selection_methods": "algorithms.krule.box_selection",
    "algorithms.box_bnb": "algorithms.krule.box_bnb",
    "algorithms.column_generation": "algorithms.krule.column_generation",
    "algorithms.column_pricing": "algorithms.krule.column_pricing",
    "algorithms.cell_bnb": "algorithms.krule.cell_bnb",
    "algorithms.two_rule_bound": "algorithms.krule.two_rule_bound",
    "algorithms.box_search": "algorithms.local.box_swaps",
    "algorithms.local_swap": "algorithms.local.rule_swaps",
    "algorithms.multi_start": "algorithms.local.multi_start",
    "algorithms.kbox_table": "algorithms.kbox.table",
    "algorithms.kbox_table_kernel": "algorithms.kbox.table_kernel",
    "algorithms.kbox_pairs": "algorithms.kbox.pairs",
    "algorithms.kbox_kernel": "algorithms.kbox.pair_kernel",
    "algorithms.pruning_driver": "algorithms.pruning.driver",
    "algorithms.pruning_engines": "algorithms.pruning.engines",
    "algorithms.pruning_oracle": "algorithms.pruning.oracle",
    "algorithms.prune_exact": "algorithms.pruning.exact",
    "algorithms.cbcd": "algorithms.pruning.cbcd",
    "algorithms.cbcd_model": "algorithms.pruning.cbcd_model",
    "algorithms.relax_and_round": "algorithms.pruning.relax_and_round",
    "algorithms.knapsack_conflicts": "algorithms.pruning.knapsack_conflicts",
    "boosting.box_words": "boosting.boxsearch.words",
    "boosting.box_bounds": "boosting.boxsearch.bounds",
    "boosting.box_node": "boosting.boxsearch.node",
    "boosting.box_kernel": "boosting.boxsearch.kernel",
    "boosting.range_search": "boosting.boxsearch.range_search",
    "boosting.split_search": "boosting.boxsearch.split_search",
    "boosting.rgb_families": "boosting.rgb.families",
    "boosting.rgb_rules": "boosting.rgb.rules",
    "boosting.rgb_select": "boosting.rgb.select",
    "formulations.engines": "formulations.sizes",
}

#: names a former module held that now live in another module than its successor
FORMER_NAMES: dict[str, dict[str, str]] = {
    "algorithms.driver": {
        "solve_exact": "algorithms.fit_plan",
        **{name: "algorithms.fit_decision" for name in (
            "FitState", "PhaseOutcome", "absorb", "at_least_warm_start", "checked",
            "decide_fit", "empty_model", "with_time_limit_named")},
    },
}


class _FormerModule(types.ModuleType):
    """A former address: every attribute is read from the current module."""

    def __getattr__(self, name: str) -> Any:
        target = self.__dict__.get("_rulemip_target")
        if target is None or name.startswith("__"):
            raise AttributeError(name)
        extra = FORMER_NAMES.get(self.__name__[len("rulemip."):], {})
        if name in extra:
            return getattr(importlib.import_module("rulemip." + extra[name]), name)
        return getattr(importlib.import_module(target), name)

    def __dir__(self) -> list[str]:
        target = importlib.import_module(self.__dict__["_rulemip_target"])
        return sorted(set(dir(target)) | set(FORMER_NAMES.get(self.__name__[8:], {})))


class _FormerLoader(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _FormerModule(spec.name)
        module.__dict__["_rulemip_target"] = self.target
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        warnings.warn(f"{module.__name__} moved to {self.target}; the former address "
                      "is removed in rulemip 0.3.", FutureWarning, stacklevel=2)
        current = importlib.import_module(self.target)
        module.__dict__["__all__"] = list(getattr(current, "__all__", []))
        module.__dict__["__doc__"] = f"Former address of :mod:`{self.target}`."


class _FormerFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith("rulemip."):
            return None
        current = MOVED.get(fullname[len("rulemip."):])
        if current is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _FormerLoader("rulemip." + current))


def install() -> None:
    """Put the finder on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, _FormerFinder) for f in sys.meta_path):
        sys.meta_path.append(_FormerFinder())
