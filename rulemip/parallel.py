"""The workers of the compiled searches: how many threads (or which Dask cluster) a search
splits its work over when it does not name its own (docs/explanation/box_search.md,
"Every core, then a cluster").

The estimators' ``n_jobs`` and ``scheduler`` parameters and ``rulemip boost --n-jobs`` set
them for the duration of a fit with :func:`search_workers`; the one-rule box search
(:func:`rulemip.boosting.boxsearch.range_search.box_search`: boosting rounds, the one-rule
fit, pricing, the swap step) and the k-box pair scan read them with
:func:`current_workers`. A finished search returns the same model and bound whatever the
number of workers, so the setting changes the speed of a fit, never its result.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from rulemip.exceptions import InvalidParameterError

__all__ = ["current_workers", "resolve_n_jobs", "search_workers"]

#: ``(n_jobs, scheduler)`` of the searches that do not name their own
#: (:func:`search_workers`; the estimators set it for the duration of a fit)
_WORKERS: ContextVar[tuple[int | None, Any]] = ContextVar("rulemip_search_workers",
                                                          default=(1, None))


def current_workers() -> tuple[int | None, Any]:
    """``(n_jobs, scheduler)`` set by the innermost :func:`search_workers` block (the
    estimators' parameters), or the default ``(1, None)``."""
    return _WORKERS.get()


@contextmanager
def search_workers(n_jobs: int | None = 1, scheduler: Any = None) -> Iterator[None]:
    """Within the block, searches without their own ``n_jobs``/``scheduler`` split their
    work over ``n_jobs`` threads or the Dask ``scheduler`` (an address or a ``Client``;
    :mod:`rulemip.boosting.boxsearch.split_search`)."""
    token = _WORKERS.set((n_jobs, scheduler))
    try:
        yield
    finally:
        _WORKERS.reset(token)


def resolve_n_jobs(n_jobs: int | None) -> int:
    """Workers of ``n_jobs`` (``None`` = 1, ``-1`` = one per core, ``-k`` = all but k - 1)."""
    if n_jobs is None:
        return 1
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int | np.integer) or n_jobs == 0:
        raise InvalidParameterError(
            f"`n_jobs` must be a non-zero integer (-1: one per core) or None; got {n_jobs!r}.")
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)
