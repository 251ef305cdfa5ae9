r"""The exact two-box search over a box table (docs/explanation/kbox_search.md §2).

Squared loss, ridge λ ≥ 0, with or without intercept. With the intercept profiled out
(columns and labels centred), the best weights of a two-rule model with boxes a and b
remove

.. math:: \mathrm{gain}(a, b) = g^\top (G + \lambda I)^{-1} g,
          \quad g = (S_a, S_b),\quad G + \lambda I = \begin{pmatrix} K_a & c\\ c & K_b
          \end{pmatrix},\quad c = n_{ab} - N_a N_b / W

from the weighted sum of squares (:math:`c = n_{ab}` without intercept), where
:math:`n_{ab}` is the weight of the cells both boxes cover — one popcount. So

.. math:: W\,R_\lambda(a, b) = \mathrm{base} + C - \mathrm{gain}(a, b),

base = :math:`\sum_c W_c(\bar y_c - \bar y)^2` (or :math:`\sum_c W_c \bar y_c^2`), C the
within-cell constant. An ensemble is a multiset: the pair (a, a) — one box, its weight
split over two copies — gains :math:`S_a^2/(V_a + \lambda/2)`, and a one-rule model is
never better than it. The search scores (a, a) for every box, then every pair that the
two pruning rules of :func:`rulemip.algorithms.kbox.pair_kernel.scan_pairs` cannot exclude,
in chunks between which the fit's :class:`~rulemip.budget.Budget` is asked.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.algorithms.kbox import pair_kernel as kk
from rulemip.algorithms.kbox.table import BoxTable
from rulemip.algorithms.kbox.unit_rows import unit_rows
from rulemip.boosting.boxsearch.split_search import dask_client
from rulemip.budget import Budget

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: seconds of scanning between two looks at the budget (and progress reports)
CHUNK_SECONDS = 0.25
#: the pair scan looks the trie's first two levels up by slab (a slabs × slabs table of
#: node numbers) up to this many slabs, and walks them beyond
CHILD_INDEX_MAX_SLABS = 2048


@dataclass(frozen=True)
class PairSearchResult:
    """The best pair ``(a, b)`` (``a == b``: one box, two copies) and its gain, whether
    every pair was ruled out or scored (``finished``), and the effort: pairs scored
    exactly, trie nodes tested, partners checked by their own slabs, first boxes done."""

    boxes: tuple[int, int]
    gain: float
    finished: bool
    scored: int
    nodes: int
    checked: int
    boxes_done: int
    seconds: float


@dataclass(frozen=True)
class _Trie:
    """Boxes by position (``perm[t]``: the box at position t) and the trie's inner nodes
    (:func:`rulemip.algorithms.kbox.pair_kernel.scan_pairs`)."""

    perm: IntArray
    last_slab: IntArray
    iv: IntArray
    depth: IntArray
    skip: IntArray
    box: IntArray
    run: IntArray
    rng: FloatArray


def _trie(slab: IntArray, N: FloatArray, z: FloatArray) -> _Trie:
    """The trie of the restriction lists ``slab`` (rows −1 padded): its inner nodes (those
    with a box below them) in depth-first order; each node's own box and its run — the
    boxes one slab below it with nothing below them, sorted by z — at consecutive
    positions; each node's subtree ranges of N and z and its run's range of N."""
    B = len(N)
    order = np.lexsort(slab.T[::-1]).astype(np.int64) if slab.shape[1] else \
        np.arange(B, dtype=np.int64)
    iv, depth, skip, box, parent = kk.build_trie(np.ascontiguousarray(slab[order]))
    n_nodes = len(iv)
    leaf = skip == np.arange(1, n_nodes + 1)
    leaf[0] = False
    inner = np.flatnonzero(~leaf)
    new_of = np.cumsum(~leaf) - 1  # new index of an inner node
    # every box: the inner node it belongs to, own box (0) or run member (1)
    has = box >= 0
    nodes_with_box = np.flatnonzero(has)
    owner = np.where(leaf[nodes_with_box], new_of[parent[nodes_with_box]],
                     new_of[nodes_with_box])
    kind = leaf[nodes_with_box].astype(np.int64)
    boxes = order[box[nodes_with_box]]
    pos_order = np.lexsort((z[boxes], kind, owner))
    perm = boxes[pos_order]
    pos_owner, pos_kind = owner[pos_order], kind[pos_order]
    last_slab = iv[nodes_with_box][pos_order]
    m = len(inner)
    node_box = np.full(m, -1, dtype=np.int64)
    own = np.flatnonzero(pos_kind == 0)
    node_box[pos_owner[own]] = own
    run = np.zeros((m, 2), dtype=np.int64)
    runs = np.flatnonzero(pos_kind == 1)
    if len(runs):
        first = np.searchsorted(pos_owner[runs], np.arange(m), side="left")
        last = np.searchsorted(pos_owner[runs], np.arange(m), side="right")
        run[:, 0] = np.where(last > first, runs[np.minimum(first, len(runs) - 1)], 0)
        run[:, 1] = np.where(last > first, run[:, 0] + (last - first), 0)
    # subtree ranges (N min/max, z min/max) and the run's N range
    rng = np.empty((m, 6))
    rng[:, 0::2] = np.inf
    rng[:, 1::2] = -np.inf
    Np, zp = N[perm], z[perm]
    for col, v in ((0, Np), (2, zp)):
        np.minimum.at(rng[:, col], pos_owner, v)
        np.maximum.at(rng[:, col + 1], pos_owner, v)
    if len(runs):
        np.minimum.at(rng[:, 4], pos_owner[runs], Np[runs])
        np.maximum.at(rng[:, 5], pos_owner[runs], Np[runs])
    new_parent = np.where(parent[inner] >= 0, new_of[np.maximum(parent[inner], 0)], -1)
    new_depth = depth[inner]
    for dd in range(int(new_depth.max()) if m else 0, 0, -1):
        nodes = np.flatnonzero(new_depth == dd)
        par = new_parent[nodes]
        for col in (0, 2):
            np.minimum.at(rng[:, col], par, rng[nodes, col])
            np.maximum.at(rng[:, col + 1], par, rng[nodes, col + 1])
    # an inner node's subtree ends at the first inner node at or after its old skip
    inner_after = np.searchsorted(inner, skip[inner], side="left")
    return _Trie(perm.astype(np.int64), last_slab.astype(np.int64), iv[inner],
                 new_depth.astype(np.int64), inner_after.astype(np.int64), node_box, run,
                 rng)


@dataclass(frozen=True)
class ScanLayout:
    """What every scan of a box table reads (pairs, triples and their replays): the boxes
    by position (``perm[t]``: the table's box at position t; only boxes with K > 0), their
    cover bits and sums at those positions, the order by decreasing :math:`|z|`
    (``a_order``; ``rank`` its inverse), the trie of their restrictions over the slabs
    relabelled narrowest first, and the round-off slack ``margin`` of the bounds. The bits
    (and slabs) are over rows of one weight ``unit`` whenever the cells weigh whole
    multiples of one (:func:`~rulemip.algorithms.kbox.unit_rows.unit_rows`; ``weight``
    then lists those rows), else over the cells with their ``weight`` (``unit`` 0)."""

    perm: IntArray
    bits: NDArray[np.uint64]
    N: FloatArray
    S: FloatArray
    K: FloatArray
    z: FloatArray
    a_order: IntArray
    rank: IntArray
    trie: _Trie
    slabs: NDArray[np.uint64]
    slab_weight: FloatArray
    margin: float
    W: float
    reg: float
    centred: bool
    unit: float
    weight: FloatArray

    @property
    def n(self) -> int:
        return len(self.a_order)

    def args(self) -> tuple[Any, ...]:
        """The kernels' leading arguments (before the chunk's ranks)."""
        return (self.bits, self.N, self.S, self.K, self.z, self.rank, self.trie.last_slab,
                self.a_order)

    def tail(self, *extra: Any) -> tuple[Any, ...]:
        """The kernels' arguments after the chunk's ranks (``extra`` after the slabs)."""
        t = self.trie
        return (t.iv, t.depth, t.skip, t.box, t.run, t.rng, self.slabs, self.slab_weight,
                *extra, self.W, self.reg, self.centred, self.unit, self.weight)


def scan_layout(table: BoxTable, reg: float, *, unit: float, weight: FloatArray
                ) -> ScanLayout:
    """The :class:`ScanLayout` of ``table`` at ridge ``reg``."""
    W = float(weight.sum())
    K = table.V + reg
    ok = K > 0.0
    z = np.where(ok, table.S / np.sqrt(np.where(ok, K, 1.0)), 0.0)
    boxes = np.flatnonzero(ok)
    # slabs relabelled narrowest first, each box's path listing its narrowest slab first:
    # a narrow slab holding little of a box a closes its subtree for a
    by_width = np.argsort(table.slab_weight, kind="stable")
    new_id = np.empty(len(by_width), dtype=np.int64)
    new_id[by_width] = np.arange(len(by_width))
    paths = table.slab[boxes]
    paths = np.where(paths >= 0, new_id[np.maximum(paths, 0)], np.iinfo(np.int64).max)
    paths = np.sort(paths, axis=1)
    paths[paths == np.iinfo(np.int64).max] = -1
    slabs = np.ascontiguousarray(table.slabs[by_width])
    slab_weight = np.ascontiguousarray(table.slab_weight[by_width])
    trie = _trie(paths, table.N[boxes], z[boxes])
    perm = boxes[trie.perm]  # the box at each position
    bits = np.ascontiguousarray(table.bits[perm])
    Np, Sp, Kp, zp = (np.ascontiguousarray(v[perm]) for v in (table.N, table.S, K, z))
    a_order = np.lexsort((np.arange(len(zp)), -np.abs(zp))).astype(np.int64)
    rank = np.empty(len(zp), dtype=np.int64)
    rank[a_order] = np.arange(len(a_order))
    margin = 1e-12 * max(float(np.sum(zp ** 2)), 1.0)
    if unit <= 0.0:  # cells of whole multiples of one weight: popcounts (unit_rows)
        rows = unit_rows(bits, slabs, weight)
        if rows is not None:
            bits, slabs, unit, weight = rows
    return ScanLayout(perm.astype(np.int64), bits, Np, Sp, Kp, zp, a_order, rank, trie,
                      slabs, slab_weight, margin, W, float(reg), table.centred, unit, weight)


def child_index(lay: ScanLayout) -> IntArray:
    """The pair scan's lookup of the trie's first two levels by slab
    (:func:`rulemip.algorithms.kbox.pair_kernel.child_index`), or an empty table beyond
    :data:`CHILD_INDEX_MAX_SLABS` slabs (the scan then walks every node)."""
    n_slabs = lay.slabs.shape[0]
    if n_slabs > CHILD_INDEX_MAX_SLABS:
        return np.zeros((0, 0), dtype=np.int64)
    return kk.child_index(lay.trie.iv, lay.trie.depth, n_slabs)


def pair_extras(lay: ScanLayout) -> tuple[IntArray, FloatArray, FloatArray]:
    r"""The pair kernel's arguments beyond the layout's: :func:`child_index`, each trie
    node's :math:`\sqrt{K}` at the least and the largest weight below it, and the weight
    of its region (:func:`rulemip.algorithms.kbox.pair_kernel.region_weights`)."""
    rng = lay.trie.rng
    k = np.stack([rng[:, 0], rng[:, 1]], axis=1)
    k = k * (lay.W - k) / lay.W if lay.centred else k
    node_sk = np.sqrt(np.maximum(k + lay.reg, 0.0))
    node_w = kk.region_weights(lay.trie.iv, lay.trie.depth, lay.slabs, lay.unit, lay.weight)
    return child_index(lay), np.ascontiguousarray(node_sk), node_w


def run_scan(scan: _Scan, args: tuple[Any, ...], tail: tuple[Any, ...],
             threads: int | None, scheduler: Any) -> None:
    """Hand the scan's chunks to one worker, ``threads`` threads or a Dask ``scheduler``."""
    n_workers = max(1, min(int(threads or 1), 64))
    if scheduler is not None:
        scan.work_remote(scheduler, args, tail)
    elif n_workers == 1:
        scan.work(args, tail)
    else:
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            for f in [pool.submit(scan.work, args, tail) for _ in range(n_workers)]:
                f.result()


def pair_search(table: BoxTable, reg: float, *, unit: float, weight: FloatArray,
                start: tuple[int, int] | None = None, budget: Budget | None = None,
                callback: Callable[[dict[str, Any]], Any] | None = None,
                threads: int | None = None, incumbent_gain: float | None = None,
                scheduler: Any = None, layout: ScanLayout | None = None
                ) -> PairSearchResult:
    """The best two-box ensemble of ``table`` (module docstring).

    ``unit``: the common weight of every cell (> 0), so that an intersection's weight is a
    popcount, or 0 to sum the cells' ``weight``. ``start``: a pair of boxes whose gain is
    the first incumbent (e.g. a warm start in the language). Stops between chunks when
    ``budget`` expires (``finished`` False: the incumbent is then only a model).
    ``threads``: workers scanning chunks of first boxes at once (the same optimum as one
    worker: ties go to the least pair). ``scheduler``: a Dask scheduler address or client;
    the chunks then run on its workers, one per worker thread at a time (the same
    optimum). ``incumbent_gain``: a gain to beat from the start (a claimed optimum being
    replayed); the result then reports a pair only if one reaches it. ``layout``: the
    table's :func:`scan_layout` at ``reg`` when the caller has built it already (the
    three-box search reads the same one)."""
    t0 = time.perf_counter()
    clock = Budget.of(budget)
    W = float(weight.sum())
    # one box, two copies: ridge λ/2 on its weight
    double = table.S ** 2 / np.where(table.V + reg / 2 > 0, table.V + reg / 2, np.inf)
    a0 = int(np.argmax(double)) if len(double) else 0
    gain0, pair0 = (float(double[a0]) if len(double) else 0.0), (a0, a0)
    if start is not None:
        g = _pair_value(table, reg, start[0], start[1], unit, weight, W)
        if g > gain0:
            gain0, pair0 = g, (int(start[0]), int(start[1]))
    if incumbent_gain is not None and incumbent_gain > gain0:
        gain0 = float(incumbent_gain)
    if clock.expired():  # before the layout (the trie: seconds on large languages)
        return PairSearchResult(pair0, gain0, False, 0, 0, 0, 0,
                                time.perf_counter() - t0)
    lay = layout if layout is not None else scan_layout(table, reg, unit=unit, weight=weight)
    scan = _Scan(lay.n, gain0, lay.margin, clock, callback)
    run_scan(scan, lay.args(), lay.tail(*pair_extras(lay)), threads, scheduler)
    gain, best = scan.result()
    counts = scan.counts
    found = pair0 if best[0] < 0 else (int(lay.perm[best[0]]), int(lay.perm[best[1]]))
    return PairSearchResult(found, gain, scan.finished, int(counts[0]), int(counts[1]),
                            int(counts[2]), scan.done, time.perf_counter() - t0)


class _Scan:
    """The first boxes handed out in chunks of ranks to one or more workers (threads: the
    kernel releases the GIL). Each worker scans with its own incumbent, synchronized with
    the shared one before every chunk; the shared one keeps the best gain and, among equal
    gains, the least pair of positions, so the optimum does not depend on the schedule.
    Each first box is one unit of the budget's work: under a work limit the chunks have a
    fixed size, so a stopped scan has looked at the same first boxes on every run and
    returns the same best pair among them (every pair it skipped gains less)."""

    def __init__(self, n: int, gain0: float, margin: float, clock: Budget,
                 callback: Callable[[dict[str, Any]], Any] | None, *,
                 kernel: Callable[..., None] = kk.scan_pairs, width: int = 2,
                 n_counts: int = 3, best: NDArray[np.int64] | None = None,
                 step: int = 16, cost: Callable[[int, int], int] | None = None) -> None:
        self.n = n
        self.gain = gain0
        self.margin = margin
        self.best = np.full(width, -1, dtype=np.int64) if best is None else best.copy()
        self.clock = clock
        self.callback = callback
        self.kernel = kernel
        self.next = 0
        self.done = 0
        self.step = step
        #: units of work of the first boxes at ranks r0..r1-1 (default: one each)
        self.cost = cost
        self.finished = True
        self.counts = np.zeros(n_counts, dtype=np.int64)
        self.lock = threading.Lock()

    def _take(self) -> tuple[int, int] | None:
        with self.lock:
            if self.next >= self.n or self.clock.expired():
                if self.next < self.n:
                    self.finished = False
                return None
            r0 = self.next
            r1 = min(r0 + self.step, self.n)
            self.next = r1
            self.clock.charge(r1 - r0 if self.cost is None else self.cost(r0, r1))
            return r0, r1

    def _merge(self, state: NDArray[np.float64], best: NDArray[np.int64],
               counts: NDArray[np.int64], r0: int, r1: int, dt: float) -> None:
        with self.lock:
            g = float(state[0])
            if best[0] >= 0 and (g > self.gain or (g == self.gain and (
                    self.best[0] < 0 or tuple(best) < tuple(self.best)))):
                self.gain = g
                self.best[:] = best
            self.counts += counts
            self.done += r1 - r0
            # under a work limit the chunks keep their size, so the boxes scanned do not
            # depend on time
            if self.clock.work_left() is None:
                if dt < CHUNK_SECONDS / 2:
                    self.step = min(self.step * 2, 1 << 20)
                elif dt > CHUNK_SECONDS * 2:
                    self.step = max(self.step // 2, 1)
            if self.callback is not None:
                self.callback({"boxes_done": self.done, "boxes": self.n,
                               "scored": int(self.counts[0]), "gain": self.gain})

    def work(self, args: tuple[Any, ...], tail: tuple[Any, ...]) -> None:
        state = np.zeros(2)
        best = np.full(len(self.best), -1, dtype=np.int64)
        while (chunk := self._take()) is not None:
            r0, r1 = chunk
            with self.lock:
                state[:] = (self.gain, self.margin)
                best[:] = self.best
            counts = np.zeros(len(self.counts), dtype=np.int64)
            t1 = time.perf_counter()
            scan: Any = self.kernel
            scan(*args, r0, r1, *tail, state, best, counts)
            self._merge(state, best, counts, r0, r1, time.perf_counter() - t1)

    def work_remote(self, scheduler: Any, args: tuple[Any, ...], tail: tuple[Any, ...]
                    ) -> None:
        """The chunks as tasks on a Dask cluster, in rounds of one chunk per worker
        thread: every task of a round starts from the round's incumbent, and the results
        are merged as the threads' are (the same optimum for any cluster)."""
        client = dask_client(scheduler)
        # keys of their own (hash=False): equal arrays scattered by an earlier search would
        # share their keys and vanish with that search's futures
        remote = client.scatter([args, tail], broadcast=True, hash=False)
        workers = client.scheduler_info().get("workers", {}).values()
        width = max(1, sum(int(w.get("nthreads", 1)) for w in workers))
        while True:
            chunks = [c for c in (self._take() for _ in range(width)) if c is not None]
            if not chunks:
                return
            with self.lock:
                gain, best = self.gain, self.best.copy()
            futures = [client.submit(_remote_chunk, self.kernel, remote[0], remote[1], r0,
                                     r1, gain, self.margin, best, len(self.counts),
                                     pure=False) for r0, r1 in chunks]
            for (r0, r1), (state, found, counts, dt) in zip(
                    chunks, client.gather(futures), strict=True):
                self._merge(state, found, counts, r0, r1, dt)

    def result(self) -> tuple[float, NDArray[np.int64]]:
        return self.gain, self.best


def _remote_chunk(kernel: Callable[..., None], args: tuple[Any, ...],
                  tail: tuple[Any, ...], r0: int, r1: int, gain: float, margin: float,
                  best: NDArray[np.int64], n_counts: int
                  ) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int64], float]:
    """One chunk of first boxes on a Dask worker, from the round's incumbent: its best
    pair or triple (``state``, ``best``), counts and seconds."""
    state = np.array([gain, margin])
    found = best.copy()
    counts = np.zeros(n_counts, dtype=np.int64)
    t1 = time.perf_counter()
    scan: Any = kernel
    scan(*args, r0, r1, *tail, state, found, counts)
    return state, found, counts, time.perf_counter() - t1


def _pair_value(table: BoxTable, reg: float, a: int, b: int, unit: float,
                weight: FloatArray, W: float) -> float:
    """Gain of the pair (a, b) (``a == b``: two copies of one box, ridge λ/2)."""
    if a == b:
        k2 = table.V[a] + reg / 2
        return float(table.S[a] ** 2 / k2) if k2 > 0 else 0.0
    K = table.V + reg
    if K[a] <= 0 or K[b] <= 0:
        return 0.0
    return float(kk.pair_value(table.bits, table.S, K, table.N, a, b, W, table.centred,
                               unit, weight))


def risk_of_gain(gain: float, base: float, constant: float, total_weight: float) -> float:
    """:math:`R_\\lambda = (\\mathrm{base} + C - \\mathrm{gain})/W`."""
    return (base + constant - gain) / total_weight


__all__ = ["PairSearchResult", "ScanLayout", "pair_search", "risk_of_gain", "run_scan",
           "scan_layout"]
