"""The exact-estimator settings whose time limits the limit checks measure: every
registered engine (:data:`rulemip.algorithms.solve.registry.ENGINES`), ``"mip"`` once per
backend that holds the interval-cover model natively (SCIP and HiGHS). Shared by
``benchmarks/limits.py`` (wall and CPU seconds on the benchmark tables) and
``tests/integration/test_clock_checks.py`` (the injected clock), so that an engine
registered later is measured by both without anyone adding it."""

from __future__ import annotations

from typing import Any

__all__ = ["MIP_BACKENDS", "exact_engine_cases"]

#: the backends the ``"mip"`` engine is measured on
MIP_BACKENDS = ("scip", "highs")


def exact_engine_cases() -> dict[str, dict[str, Any]]:
    """``{case name: ExactRuleEnsembleRegressor keywords}``: ``{"engine": name}`` per
    registered engine, and ``"mip-<backend>"`` with ``solver`` for each of
    :data:`MIP_BACKENDS`."""
    from rulemip.algorithms.solve.registry import ENGINES

    cases: dict[str, dict[str, Any]] = {}
    for engine in ENGINES:
        if engine == "mip":
            for backend in MIP_BACKENDS:
                cases[f"mip-{backend}"] = {"engine": "mip", "solver": backend}
        else:
            cases[engine] = {"engine": engine}
    return cases
