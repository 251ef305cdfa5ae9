r"""Limits and settings every SCIP solve of :mod:`rulemip.solvers.scip` runs with: how
SCIP's stop statuses map to :class:`~rulemip.solvers.Limit`, the watchdog that interrupts a
solve a plug-in holds past its time limit (:func:`watchdog_delay`), the NLP plug-ins
switched off (:data:`NLP_PLUGINS_OFF`, issue 22) and the version string of the backend.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from rulemip.solvers.result import Limit

__all__ = ["LIMIT_STATUS", "NLP_PLUGINS_OFF", "WATCHDOG_SLACK", "Watchdog", "scip_version",
           "watchdog_delay"]

#: SCIP's status names of a stopped solve -> the limit reported
LIMIT_STATUS = {
    "timelimit": Limit.TIME,
    "nodelimit": Limit.NODE,
    "totalnodelimit": Limit.NODE,
    "stallnodelimit": Limit.NODE,
    "userinterrupt": Limit.INTERRUPTED,
    "terminate": Limit.INTERRUPTED,
    "memlimit": Limit.OTHER,
    "sollimit": Limit.OTHER,
    "bestsollimit": Limit.OTHER,
    "restartlimit": Limit.OTHER,
    "primallimit": Limit.OTHER,
    "duallimit": Limit.OTHER,
}

WATCHDOG_SLACK = 2.0
"""Seconds, plus 10% of the time limit, that a solve may run past ``time_limit`` before
the watchdog thread interrupts it (:func:`watchdog_delay`)."""


def watchdog_delay(time_limit: float) -> float:
    """When the watchdog interrupts a solve that SCIP's own clock did not stop:
    ``time_limit + WATCHDOG_SLACK + 0.1·time_limit`` seconds after it started."""
    return float(time_limit) * 1.1 + WATCHDOG_SLACK


#: SCIP plug-ins that call an NLP solver (Ipopt). Our nonlinear models are convex epigraph
#: models that SCIP solves by LP outer approximation; these plug-ins only look for
#: incumbents (heuristics) or tighten bounds (propagator, separators) and are not needed —
#: and SCIP's MPEC heuristic crashed the process inside Ipopt (heap corruption) on a
#: 1 070 x 6 table (issue 22). They are switched off in every solve (``extra`` may turn one
#: back on).
NLP_PLUGINS_OFF: dict[str, Any] = {
    "heuristics/subnlp/freq": -1,
    "heuristics/mpec/freq": -1,
    "heuristics/nlpdiving/freq": -1,
    "heuristics/multistart/freq": -1,
    "heuristics/dualval/freq": -1,
    "heuristics/undercover/freq": -1,
    "heuristics/undercover/postnlp": False,
    "propagating/nlobbt/freq": -1,
    "separating/convexproj/freq": -1,
    "separating/gauge/freq": -1,
}


@functools.lru_cache(maxsize=1)
def scip_version() -> str:
    import pyscipopt

    m = pyscipopt.Model()
    return (f"SCIP {m.getMajorVersion()}.{m.getMinorVersion()}.{m.getTechVersion()} "
            f"(PySCIPOpt {pyscipopt.__version__})")


class Watchdog:
    """Interrupts a SCIP solve still running :func:`watchdog_delay` seconds after it
    started (a plug-in that ignores SCIP's clock, e.g. a long NLP call); no-op without a
    time limit. SCIP stops at its next check of the interrupt flag."""

    def __init__(self, model: Any, time_limit: float | None) -> None:
        self._m = model
        self._lock = threading.Lock()
        self._running = False
        self.fired = False
        self._timer = None if time_limit is None else threading.Timer(
            watchdog_delay(time_limit), self._fire)
        if self._timer is not None:
            self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            if not self._running:
                return
            try:
                self._m.interruptSolve()
                self.fired = True
            except Exception:  # pragma: no cover - SCIP left the solving stage meanwhile
                pass

    def __enter__(self) -> Watchdog:
        self._running = True
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._running = False
        if self._timer is not None:
            self._timer.cancel()
