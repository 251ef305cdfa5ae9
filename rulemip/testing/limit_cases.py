"""What the limit checks share: the exact-estimator settings they measure and the
injected clock.

:func:`exact_engine_cases` is every registered engine
(:data:`rulemip.algorithms.solve.registry.ENGINES`), ``"mip"`` once per backend that holds
the interval-cover model natively (SCIP and HiGHS), so that an engine registered later is
measured without anyone adding it.

:class:`ExpiringClock` is the machine-independent form of a time limit: a fit's
:class:`~rulemip.budget.Budget` reads one clock (:func:`~rulemip.budget.use_clock`);
this clock is the real one until its k-th check and then jumps 10⁹ s per check, so the
budget expires right after the k-th check, and :func:`cpu_after_expiry` measures the CPU
a fit spends from that check to its return — work that does not ask the budget, on any
machine and load. Used by ``tests/integration/test_clock_checks.py`` (a 40 × 3 table) and
``benchmarks/clock_checks.py`` (the benchmark tables of ``benchmarks/limits.py``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from rulemip.budget import use_clock

__all__ = ["MIP_BACKENDS", "ExpiringClock", "checks_to_expire", "cpu_after_expiry",
           "exact_engine_cases", "run_with_clock"]

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


class ExpiringClock:
    """:func:`time.perf_counter` for the first ``k`` checks, then 10⁹ s later per check
    (``k=None``: never); counts the checks and notes the CPU time of the k-th."""

    def __init__(self, k: int | None) -> None:
        self.k = k
        self.calls = 0
        self.expired_cpu: float | None = None

    def __call__(self) -> float:
        self.calls += 1
        now = time.perf_counter()
        if self.k is not None and self.calls >= self.k:
            if self.expired_cpu is None:
                self.expired_cpu = time.process_time()
            now += 1e9 * (self.calls - self.k)
        return now


def checks_to_expire(n_checks: int, samples: int) -> list[int]:
    """The k at which the budget expires: 1, 2, 3 and ``samples`` more spread evenly
    over the ``n_checks`` checks of a run that never expires (every k when that is at
    most ``samples + 3``)."""
    if n_checks <= samples + 3:
        return list(range(1, n_checks + 1))
    spread = np.linspace(4, n_checks, samples).round().astype(int).tolist()
    return sorted({1, 2, 3, *spread})


def run_with_clock(fit: Callable[[], Any], clock: ExpiringClock | None) -> Any:
    """``fit()`` with every budget reading ``clock`` (None: the real one), warnings off."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if clock is None:
            return fit()
        with use_clock(clock):
            return fit()


def cpu_after_expiry(fit: Callable[[], Any], samples: int) -> list[tuple[int, float]]:
    """``(k, CPU seconds from the k-th check to the return)`` for each k of
    :func:`checks_to_expire` (caches warmed by the first run, which counts the checks: a
    k beyond the checks of a later run is skipped)."""
    counter = ExpiringClock(None)
    run_with_clock(fit, counter)
    out = []
    for k in checks_to_expire(counter.calls, samples):
        clock = ExpiringClock(k)
        run_with_clock(fit, clock)
        if clock.expired_cpu is None:   # this run ended before its k-th check (the
            continue                    # number of checks of a timed phase varies)
        out.append((k, time.process_time() - clock.expired_cpu))
    return out
