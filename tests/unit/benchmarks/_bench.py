"""The benchmark scripts as modules, for the tests of their pure helpers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

#: the repository's ``benchmarks/`` folder (scripts, not a package)
BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def benchmark_module(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` (the folder on ``sys.path`` only while importing)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))
