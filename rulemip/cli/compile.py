"""``rulemip compile``: compile the numba kernels now (once per installation).

A fit compiles the kernels it needs before its time limit starts anyway
(:mod:`rulemip._kernels`); this command does it ahead of time — after ``pip install``, in
a container image, or on every node of a cluster — so that no fit waits for a compile.
Numba caches the compiled code on disk (``NUMBA_CACHE_DIR`` when set).
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser(
        "compile", help="compile the numba kernels now (once per installation)",
        description="Compile (or load from numba's cache) every compiled kernel of "
                    "rulemip, so that later fits start at once.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rulemip._kernels import compile_kernels

    report = compile_kernels()
    if report.compiled:
        cached = (f" ({', '.join(report.loaded)} already compiled)" if report.loaded else "")
        print(f"compiled kernels ({', '.join(report.compiled)}) in {report.seconds:.1f} s"
              f"{cached}; numba caches them for later runs")
    else:
        print(f"kernels already compiled ({', '.join(report.loaded) or 'all'}): loaded from "
              f"numba's cache in {report.seconds:.1f} s")
    return 0
