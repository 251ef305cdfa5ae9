"""Numba's disk cache for kernels split over several modules.

Numba keys a cached function by the stamp of the one source file that defines it: a
caller cached in one module keeps the machine code of callees it inlined from another,
even after that other module changed (a stale kernel that passes or fails tests for the
wrong reason). :func:`guard_kernel_cache` declares the modules of one kernel: every
function cached from any of them is stamped with the contents of all of them, so a change
to any module of the kernel recompiles the whole kernel. Users never see a difference
(installed sources do not change); developers get no stale code.

It wraps numba's own locators (the cache stays where numba puts it: next to the sources
or in ``NUMBA_CACHE_DIR``). Should a numba version not have the hook, nothing is guarded
and everything else works as before.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

__all__ = ["guard_kernel_cache"]

_GROUPS: dict[str, tuple[str, ...]] = {}     # file -> every file of its kernel


def _digest(files: tuple[str, ...]) -> bytes:
    h = hashlib.sha256()
    for f in files:
        with open(f, "rb") as fh:
            h.update(fh.read())
    return h.digest()


def _install() -> bool:
    try:
        from numba.core import caching
    except ImportError:        # pragma: no cover - numba without the module
        return False
    impl: Any = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    base: Any = getattr(caching, "_CacheLocator", None)
    if impl is None or base is None or not hasattr(impl, "_locator_classes"):
        return False           # pragma: no cover - another numba layout
    if any(getattr(c, "_rulemip_group", False) for c in impl._locator_classes):
        return True

    class KernelGroupLocator(base):  # type: ignore[misc, valid-type]
        """numba's locator for a file, stamped with every file of its kernel."""

        _rulemip_group = True

        def __init__(self, inner: Any, files: tuple[str, ...]) -> None:
            self._inner = inner
            self._files = files

        def ensure_cache_path(self) -> None:
            self._inner.ensure_cache_path()

        def get_cache_path(self) -> str:
            return str(self._inner.get_cache_path())

        def get_disambiguator(self) -> str:
            return str(self._inner.get_disambiguator())

        def get_source_stamp(self) -> Any:
            return (self._inner.get_source_stamp(), _digest(self._files))

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            files = _GROUPS.get(os.path.abspath(py_file))
            if files is None:
                return None
            for other in impl._locator_classes:
                if other is cls:
                    continue
                inner = other.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner, files)
            return None

    impl._locator_classes.insert(0, KernelGroupLocator)
    return True


def guard_kernel_cache(module_file: str, *siblings: str) -> bool:
    """Stamp the cache of every function of ``module_file`` (and of each sibling module,
    given by file name in the same folder) with the contents of all of them. Call it at
    the top of each module of the kernel, before its first ``@njit(cache=True)``, with
    the same sibling list. Returns whether numba offers the hook."""
    folder = os.path.dirname(os.path.abspath(module_file))
    files = tuple(sorted({os.path.abspath(module_file),
                          *(os.path.join(folder, s) for s in siblings)}))
    for f in files:
        _GROUPS[f] = files
    return _install()
