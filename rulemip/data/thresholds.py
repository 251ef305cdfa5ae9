r"""Candidate thresholds and threshold groups (candidate thresholds:
docs/explanation/boosting.md; ties and bins: docs/explanation/interval_cover.md).

For feature ``j`` with sorted distinct values :math:`v_1 < \dots < v_m`, the full set of
candidate thresholds is the midpoints :math:`(v_a + v_{a+1})/2`. With
``max_thresholds = b`` at most ``b`` of them are kept, chosen at the empirical quantiles
:math:`a/(b+1)` of the feature (each snapped to the nearest midpoint, duplicates dropped) —
the quantile bins of [GAP]'s experiments.

Cut points ``t_1 < ... < t_g`` split the line into ``g + 1`` *threshold groups*
:math:`(-\infty, t_1], (t_1, t_2], \dots, (t_g, \infty)`; every rule interval of the form
``lower < x <= upper`` with bounds among the cut points is a union of consecutive groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip._validation import check_positive_int


def weighted_quantile(values: NDArray[np.float64], weights: NDArray[np.float64],
                      probs: NDArray[np.float64]) -> NDArray[np.float64]:
    """numpy's ``"linear"`` quantile of the sample in which row i is repeated
    :math:`w_i` times, for any non-negative weights.

    Sorted, the repeated sample has :math:`N=\\sum_i w_i` entries; entry m (0-based) is
    the value of the row whose cumulative weight range :math:`[W_{i-1}, W_i)` contains m.
    The p-quantile interpolates linearly between entries :math:`\\lfloor h\\rfloor` and
    :math:`\\lfloor h\\rfloor+1` at :math:`h=(N-1)p` — for unit weights exactly
    ``np.quantile``; for integer weights exactly the quantile of the repeated rows.
    """
    order = np.argsort(values, kind="stable")
    v, w = values[order], weights[order]
    keep = w > 0
    v, w = v[keep], w[keep]
    cum = np.cumsum(w)
    h = (cum[-1] - 1.0) * np.asarray(probs, dtype=float)
    lo = np.floor(h)

    def entry(m: NDArray[np.float64]) -> NDArray[np.float64]:
        return v[np.minimum(np.searchsorted(cum, m, side="right"), len(v) - 1)]

    a, b = entry(lo), entry(lo + 1.0)
    return a + (h - lo) * (b - a)


def feature_thresholds(values: NDArray[np.float64], max_thresholds: int | None = None,
                       weights: NDArray[np.float64] | None = None) -> NDArray[np.float64]:
    """Candidate cut points of one feature (sorted, strictly between distinct values).

    With row ``weights`` rows of weight 0 are ignored and the quantiles are those of the
    sample with row i repeated :math:`w_i` times (:func:`weighted_quantile`), so weights
    and repeated rows give the same cut points.
    """
    if weights is not None:
        values = values[np.asarray(weights) > 0]
    distinct = np.unique(values)
    if len(distinct) < 2:
        return np.empty(0)
    mids = (distinct[:-1] + distinct[1:]) / 2.0
    if max_thresholds is None or len(mids) <= max_thresholds:
        return mids
    probs = np.arange(1, max_thresholds + 1) / (max_thresholds + 1)
    if weights is None:
        qs = np.quantile(values, probs)
    else:
        w = np.asarray(weights, dtype=float)
        qs = weighted_quantile(values, w[w > 0], probs)
    # snap each quantile to the midpoint closest to it; ties of data make duplicates
    idx = np.clip(np.searchsorted(mids, qs), 0, len(mids) - 1)
    left = np.clip(idx - 1, 0, len(mids) - 1)
    return np.unique(mids[_snap_left(mids[left], mids[idx], qs, left, idx)])


def _snap_left(lo: NDArray[np.float64], hi: NDArray[np.float64], qs: NDArray[np.float64],
               left: NDArray[np.int64], idx: NDArray[np.int64]) -> NDArray[np.int64]:
    """Index of the midpoint nearest to each quantile, the lower one on a tie.

    A tie is decided up to the rounding of the computation (a few ulps of the values
    involved), not by it: on integer-valued data a quantile often lies exactly halfway
    between two midpoints, and whether ``|lo - q| <= |hi - q|`` holds in floating point
    would then depend on the scale of the feature (x and 1e36·x would get different cut
    points, and every learner built on them different rules). With the tolerance, a
    positive rescaling of a feature rescales its cut points.
    """
    d_lo, d_hi = np.abs(lo - qs), np.abs(hi - qs)
    scale = np.maximum(np.maximum(np.abs(lo), np.abs(hi)), np.abs(qs))
    tol = 16.0 * np.finfo(float).eps * scale
    return np.where(d_lo <= d_hi + tol, left, idx)


def candidate_thresholds(X: NDArray[np.float64], max_thresholds: int | None = None,
                         sample_weight: NDArray[np.float64] | None = None
                         ) -> list[NDArray[np.float64]]:
    """Cut points for every column of ``X`` (list of sorted arrays); ``sample_weight``
    as in :func:`feature_thresholds`."""
    check_positive_int(max_thresholds, "max_thresholds", allow_none=True)
    return [feature_thresholds(X[:, j], max_thresholds, sample_weight)
            for j in range(X.shape[1])]


def threshold_groups(X: NDArray[np.float64], thresholds: Sequence[NDArray[np.float64]]
                     ) -> NDArray[np.int64]:
    """Group index of every entry: ``G[i, j] = #{t in thresholds[j] : t < X[i, j]}``.

    So ``x <= t_1`` is group 0 and ``x > t_g`` is group ``g``.
    """
    n, d = X.shape
    G = np.empty((n, d), dtype=np.int64)
    for j in range(d):
        G[:, j] = np.searchsorted(np.asarray(thresholds[j]), X[:, j], side="left")
    return G


def check_thresholds(thresholds: Any, d: int, name: str = "thresholds"
                     ) -> list[NDArray[np.float64]]:
    """Validate explicit cut points: one 1-d list of finite real numbers per feature
    (``d`` of them). Returns them sorted and without duplicates.

    A NaN cut would compare false with every value (``x <= nan`` never holds), so it is
    refused instead of being dropped; so are complex, non-numeric and nested entries.
    """
    from rulemip.exceptions import InvalidParameterError

    fix = (f"Pass one 1-d list of finite cut points per feature, or `{name}=None` to "
           "derive them from the data (`max_thresholds`).")
    if isinstance(thresholds, str | bytes) or not hasattr(thresholds, "__len__"):
        raise InvalidParameterError(
            f"`{name}` must be a list of {d} arrays of cut points (one per feature); got "
            f"{type(thresholds).__name__}. {fix}")
    if len(thresholds) != d:
        raise InvalidParameterError(
            f"`{name}` must give one array of cut points per feature ({d}); got "
            f"{len(thresholds)}. {fix}")
    out: list[NDArray[np.float64]] = []
    for j, t in enumerate(thresholds):
        arr = np.asarray(t)
        if arr.dtype.kind not in "biuf" or arr.ndim > 1:
            what = "complex" if arr.dtype.kind == "c" else (
                f"{arr.ndim}-d" if arr.ndim > 1 else f"non-numeric ({arr.dtype})")
            raise InvalidParameterError(
                f"`{name}[{j}]` must be a 1-d list of real numbers; got {what} values. {fix}")
        arr = np.atleast_1d(arr).astype(float)
        bad = arr[~np.isfinite(arr)]
        if bad.size:
            raise InvalidParameterError(
                f"`{name}[{j}]` contains {float(bad[0])!r}; every cut point must be a finite "
                f"number (a NaN cut never splits the data). Drop it. {fix}")
        out.append(np.unique(arr))
    return out
