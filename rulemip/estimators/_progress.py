"""Progress lines on stderr for the estimators' ``verbose=True`` (one format for all)."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["progress_printer", "say"]


def progress_printer() -> Callable[[dict[str, Any]], None]:
    """A callback for search loops (outer approximation, branch and bound) that prints
    ``time, iteration, incumbent, bound, gap`` at most once a second (and every entry
    marked ``final``), then the search's own ``detail`` if it gives one."""
    last = [0.0]

    def show(info: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] < 1.0 and not info.get("final"):
            return
        last[0] = now
        ub, lb = info.get("ub", math.inf), info.get("lb", -math.inf)
        gap = info.get("gap", math.inf)
        detail = f"  ({info['detail']})" if info.get("detail") else ""
        print(f"  [{info.get('time', 0.0):7.1f}s] it {info.get('iteration', 0):5d}  "
              f"incumbent {ub:.6g}  bound {lb:.6g}  gap {gap:.3%}{detail}", file=sys.stderr,
              flush=True)

    return show


def say(verbose: bool, message: str) -> None:
    """Print one progress line on stderr when ``verbose``."""
    if verbose:
        print(message, file=sys.stderr, flush=True)
