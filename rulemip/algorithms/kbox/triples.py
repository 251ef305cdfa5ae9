r"""The exact three-box search over a box table (docs/explanation/kbox_search.md §6).

Squared loss, ridge λ ≥ 0, with or without intercept. Three boxes with normalized sums
:math:`z_x = S_x/\sqrt{K_x}` and correlations :math:`\rho_{xy}` gain
:math:`v^\top R^{-1} v` (v the z's, R the correlation matrix with the ridge inside K), and
:math:`W R_\lambda = \mathrm{base} + C - \mathrm{gain}` as for pairs
(:mod:`rulemip.algorithms.kbox.pairs`). An ensemble is a multiset: a box taken twice shares
its weight (its ridge halved), three times (a third of it).

The search first proves the best pair (:func:`~rulemip.algorithms.kbox.pairs.pair_search`):
a triple through a collinear pair gains what one of its pairs gains, so the scan may skip
those. The incumbent starts at the best of: one box three times, the best pair completed by
its best third box, the warm start; then
:func:`~rulemip.algorithms.kbox.triple_kernel.scan_triples` meets every multiset once, from
its strongest box, in chunks of first boxes between which the fit's
:class:`~rulemip.budget.Budget` is asked (one unit of work per pair a first box visits;
chunks start at one first box and grow while they take under a quarter second).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.kbox import triple_kernel as tk
from rulemip.algorithms.kbox.pairs import _Scan, pair_search, run_scan, scan_layout
from rulemip.algorithms.kbox.table import BoxTable
from rulemip.budget import Budget

FloatArray = NDArray[np.float64]

__all__ = ["TripleSearchResult", "triple_search", "triple_value"]

#: the strongest boxes whose pairs, completed and improved by single swaps, are
#: candidate first incumbents
START_BOXES = 8


@dataclass(frozen=True)
class TripleSearchResult:
    """The best multiset of three boxes (table indices, repeated for a box taken more than
    once) and its gain; whether every triple was ruled out or scored (``finished``; the
    pair search included); the effort: triples scored exactly, strips of third boxes
    searched, third boxes checked in them, pairs visited, pairs whose third boxes were
    searched, first boxes done, pairs scored by the pair search, and seconds."""

    boxes: tuple[int, int, int]
    gain: float
    finished: bool
    scored: int
    strips: int
    checked: int
    pairs: int
    searched: int
    boxes_done: int
    pair_scored: int
    seconds: float


def triple_value(table: BoxTable, reg: float, boxes: Sequence[int], *, unit: float,
                 weight: FloatArray) -> float:
    """Gain of the multiset ``boxes`` (three table indices, repeats allowed): the
    least-squares gain of their centred (or raw) indicator columns with ridge λ on each
    copy's weight, from the table's sums and the pairwise intersections."""
    idx = [int(b) for b in boxes]
    W = float(weight.sum())
    K = table.V[idx] + reg
    if np.any(K <= 0):
        keep = [b for b, k in zip(idx, K, strict=True) if k > 0]
        idx, K = keep, K[K > 0]
    if not idx:
        return 0.0
    m = len(idx)
    G = np.empty((m, m))
    for i in range(m):
        for j in range(m):
            cover = np.bitwise_and(table.bits[idx[i]], table.bits[idx[j]])
            n_ij = _weight_of(cover, unit, weight)
            G[i, j] = n_ij - (table.N[idx[i]] * table.N[idx[j]] / W if table.centred else 0.0)
    G = G + reg * np.eye(m)
    g = table.S[idx]
    sol, *_ = np.linalg.lstsq(G, g, rcond=1e-12)
    return float(g @ sol)


def _weight_of(cover: NDArray[np.uint64], unit: float, weight: FloatArray) -> float:
    bits = np.unpackbits(cover.view(np.uint8), bitorder="little")[: len(weight)]
    return float(unit * bits.sum()) if unit > 0 else float(weight @ bits)


def triple_search(table: BoxTable, reg: float, *, unit: float, weight: FloatArray,
                  start: Sequence[int] | None = None, budget: Budget | None = None,
                  callback: Callable[[dict[str, Any]], Any] | None = None,
                  threads: int | None = None, incumbent_gain: float | None = None,
                  scheduler: Any = None) -> TripleSearchResult:
    """The best three-box ensemble of ``table`` (module docstring); the parameters as for
    :func:`~rulemip.algorithms.kbox.pairs.pair_search` (``start``: three table indices,
    −1 for an unused rule)."""
    t0 = time.perf_counter()
    clock = Budget.of(budget)
    # one layout for the pair search and the scan (none once the budget is spent: the pair
    # search then returns before building its own)
    lay = None if clock.expired() else scan_layout(table, reg, unit=unit, weight=weight)
    pairs = pair_search(table, reg, unit=unit, weight=weight, budget=clock,
                        threads=threads, scheduler=scheduler, layout=lay)
    if lay is None or not pairs.finished or clock.expired():
        a, b = pairs.boxes
        return TripleSearchResult((a, b, b), triple_value(table, reg, (a, b, b), unit=unit,
                                                          weight=weight),
                                  False, 0, 0, 0, 0, 0, 0, pairs.scored,
                                  time.perf_counter() - t0)
    if lay.n == 0:
        return TripleSearchResult((-1, -1, -1), 0.0, pairs.finished, 0, 0, 0, 0, 0, 0,
                                  pairs.scored, time.perf_counter() - t0)
    pos = np.empty(table.n_boxes, dtype=np.int64)
    pos.fill(-1)
    pos[lay.perm] = np.arange(lay.n)
    # the first incumbents, as ranks of positions
    cands: list[tuple[float, tuple[int, int, int]]] = []
    triple = table.S[lay.perm] ** 2 / np.where(table.V[lay.perm] + reg / 3 > 0,
                                               table.V[lay.perm] + reg / 3, np.inf)
    p0 = int(np.argmax(triple))
    cands.append((float(triple[p0]), (p0, p0, p0)))
    pa, pb = (int(pos[b]) for b in pairs.boxes)
    if pa >= 0 and pb >= 0:
        g3, pc = tk.best_third(lay.bits, lay.N, lay.K, lay.z, pa, pb, lay.W, lay.centred,
                               lay.unit, lay.weight)
        if pc >= 0:  # at least the pair's gain: the collinear pairs may be skipped
            cands.append((float(g3), (pa, pb, int(pc))))
    if start is not None:
        sp = [int(pos[b]) for b in start if b >= 0 and pos[b] >= 0]
        if sp:
            while len(sp) < 3:
                sp.append(sp[-1])
            s_boxes = [int(lay.perm[p]) for p in sp]
            cands.append((triple_value(table, reg, s_boxes, unit=unit, weight=weight),
                          (sp[0], sp[1], sp[2])))
    # local optima under single swaps from the candidates and from pairs of the
    # strongest boxes: the scan's pruning grows with its incumbent
    top = [int(p) for p in lay.a_order[:START_BOXES]]
    for i, p in enumerate(top):
        for q in top[i + 1:]:
            if clock.expired():  # each is one pass over the boxes: ask between them
                break
            g3, pc = tk.best_third(lay.bits, lay.N, lay.K, lay.z, p, q, lay.W, lay.centred,
                                   lay.unit, lay.weight)
            if pc >= 0:
                cands.append((float(g3), (p, q, int(pc))))
    cands = [_coordinate_ascent(lay, g, t, clock) for g, t in cands]
    gain0, trip0 = max(cands, key=lambda c: c[0])
    if incumbent_gain is not None and incumbent_gain > gain0:
        gain0 = float(incumbent_gain)
    best0 = np.array(sorted(int(lay.rank[p]) for p in trip0), dtype=np.int64)
    n = lay.n
    # a first box visits every pair with a box of larger rank: the work it costs, and
    # chunks that start at one first box (the strongest take seconds each)
    scan = _Scan(lay.n, gain0, lay.margin, clock, callback, kernel=tk.scan_triples,
                 step=1, cost=lambda r0, r1: sum(n - 1 - r for r in range(r0, r1)),
                 width=3, n_counts=5, best=best0)
    if not clock.expired():
        z_order = np.argsort(lay.z, kind="stable").astype(np.int64)
        run_scan(scan, (lay.bits, lay.N, lay.S, lay.K, lay.z, lay.rank, lay.a_order),
                 (z_order, lay.W, lay.reg, lay.centred, lay.unit, lay.weight), threads,
                 scheduler)
    else:
        scan.finished = False
    gain, best = scan.result()
    found = tuple(int(lay.perm[lay.a_order[r]]) for r in best)
    # the scan's gain of its incumbent is exact up to round-off; never report less than
    # the found triple gains (the reported gain becomes the lower bound's risk)
    gain = max(float(gain), triple_value(table, reg, found, unit=unit, weight=weight))
    counts = scan.counts
    return TripleSearchResult((found[0], found[1], found[2]), float(gain),
                              pairs.finished and scan.finished and scan.done == lay.n,
                              int(counts[0]), int(counts[1]), int(counts[2]),
                              int(counts[3]), int(counts[4]), scan.done, pairs.scored,
                              time.perf_counter() - t0)


def _coordinate_ascent(lay: Any, gain: float, triple: tuple[int, int, int], clock: Budget,
                       rounds: int = 10) -> tuple[float, tuple[int, int, int]]:
    """A better first incumbent: each box of the triple (positions) in turn replaced by the
    best third box for the other two (:func:`~rulemip.algorithms.kbox.triple_kernel.
    best_third`), until no replacement gains (a local optimum under single swaps; the
    scan's pruning grows with the incumbent); stops when ``clock`` is spent."""
    cur = list(triple)
    for _ in range(rounds):
        if clock.expired():
            break
        improved = False
        for slot in range(3):
            p, q = (cur[t] for t in range(3) if t != slot)
            g, c = tk.best_third(lay.bits, lay.N, lay.K, lay.z, p, q, lay.W, lay.centred,
                                 lay.unit, lay.weight)
            if c >= 0 and g > gain * (1 + 1e-12):
                gain, cur[slot], improved = float(g), int(c), True
        if not improved:
            break
    return gain, (cur[0], cur[1], cur[2])

