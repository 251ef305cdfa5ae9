r"""The one-rule box search split into independent subtrees: every core, then a cluster
(docs/explanation/box_search.md, "Every core, then a cluster").

:func:`rulemip.boosting.boxsearch.range_search.box_search` with ``n_jobs != 1`` or a ``scheduler``
runs :func:`split_search` after its root:

1. **Ramp-up.** The serial best-first search runs for at least :data:`RAMP_MIN_EVALS`
   evaluations and until :data:`N_TASKS` nodes are open (or it is done: small searches
   never split).
2. **Tasks.** The open nodes, in the order of their bounds (ties: the order the search
   holds them in, itself deterministic), are dealt round-robin to :data:`N_TASKS` tasks; a
   task is a node pool of its own — a best-first search of its subtrees.
3. **Rounds.** A round is :data:`ROUND_EVALS` node evaluations: each task gets twice the
   number of its open nodes among the ``ROUND_EVALS / 2`` best open nodes of all tasks —
   what a best-first search of the whole tree would expand next, so the split expands few
   nodes the serial search would not. Before the round a task holding more than
   ``1/MIN_LIVE`` of it (or any task while fewer than :data:`MIN_LIVE` are live) is split
   in two, its nodes dealt alternately in the order of their bounds, so that the work
   spreads over the workers. The tasks run from the round's incumbent value (the same for
   all), on threads (the kernel releases the GIL) or Dask workers. At the barrier the
   incumbent becomes the best box any task found — equal values are decided by the total
   order on boxes of :func:`box_key` (fewer bounds, then the lexicographic order of the
   lower and the upper groups) — and finished tasks leave.

Every step depends only on the state at the barrier, never on which worker ran a task or
when: ``n_jobs=2``, ``n_jobs=8`` and a Dask cluster return identical results; a search
stopped by ``node_limit`` (split evenly over the live tasks of the last round) is
reproducible; a time limit is checked at the barriers. A finished search returns the
optimum value (a box of it, canonical among equal values found) and a bound equal to it up
to the pruning tolerance, as the serial search does. The bound reported at any time is the
largest of the incumbent, the bounds of closed nodes of every task and the bounds of the
open nodes: valid at every barrier.

**Memory.** ``max_memory`` is one total: the node slots it allows are divided among the
tasks (a split task halves its share), so all local workers together stay within it. On a
cluster the same shares apply (a task's pool travels with it), so the total over the
cluster is bounded the same way — raise ``max_memory`` to use a cluster's memory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from numpy.typing import NDArray

from rulemip.boosting.boxsearch import kernel as K
from rulemip.boosting.boxsearch.pool import ST_EXPIRED, NodePool, Pace, run_paced
from rulemip.budget import Budget
from rulemip.exceptions import InvalidParameterError

__all__ = ["N_TASKS", "box_key", "dask_client", "split_search"]

#: open subtrees handed out after the ramp-up (and the number of tasks)
N_TASKS: int = 16
#: below this many live tasks the task with the most open nodes is split in two
MIN_LIVE: int = 8
#: node evaluations of one round, shared among the tasks by their share of the best
#: open nodes (the deterministic unit of work)
ROUND_EVALS: int = 32768
#: evaluations of one step of the ramp-up
RAMP_EVALS: int = 64
#: the ramp-up runs at least this many evaluations: a search that finishes within them
#: (the many small searches of a fit) pays nothing for the split
RAMP_MIN_EVALS: int = 16384
#: seconds between two progress reports
PROGRESS_EVERY: float = 2.0

Problem = tuple[NDArray[Any], ...]     # LE, off, m, valid, S, params


def box_key(box: NDArray[np.int32], m: NDArray[np.int64]) -> tuple[int, ...]:
    """The total order on boxes that decides equal values: fewer bounds first, then the
    lower groups, then the upper groups, lexicographically."""
    a, b = box[0], box[1]
    return (int((a > 0).sum() + (b < m).sum()), *map(int, a), *map(int, b))


class _Task:
    """One subtree search: its node pool, counters and best box (module docstring)."""

    def __init__(self, R: NDArray[np.int32], bounds: NDArray[np.float64],
                 splits: NDArray[np.int32], max_slots: int, reserve: int,
                 iparams: NDArray[np.int64], initial_slots: int) -> None:
        k, d = len(bounds), R.shape[2]
        slots = int(min(max_slots, max(initial_slots, 2 * k + reserve + 16)))
        slots = max(slots, k + reserve + 16)
        self.max_slots = max(int(max_slots), slots)
        self.pool = NodePool(slots, d, reserve)
        self.pool.pool[:k] = R
        self.pool.bound[:k] = bounds
        self.pool.splits[:k] = splits
        self.pool.heap[:k] = np.arange(k)          # bounds decreasing: a valid max-heap
        self.pool.free[:slots - k] = np.arange(slots - 1, k - 1, -1)
        self.ctr = np.zeros(6, np.int64)
        self.ctr[K.C_HEAP] = k
        self.ctr[K.C_FREE] = slots - k
        self.ctr[K.C_PEAK] = k
        self.fstate = np.array([-np.inf, -np.inf])
        self.best_box = np.full((2, d), -1, np.int32)
        self.iparams = iparams.copy()
        self.iparams[K.I_CAN_GROW] = int(slots < self.max_slots)
        self.reserve = reserve
        self.improved = False
        self.done = k == 0
        self.pace = Pace()

    @classmethod
    def from_nodes(cls, pool: Any, slots: Sequence[int], max_slots: int, reserve: int,
                   iparams: NDArray[np.int64], initial_slots: int) -> _Task:
        """A task of the nodes in ``slots``, given in the order of decreasing bounds."""
        idx = np.asarray(slots, np.int64)
        return cls(pool.pool[idx], pool.bound[idx], pool.splits[idx], max_slots, reserve,
                   iparams, initial_slots)

    def open_slots(self) -> list[int]:
        """The open nodes, bounds decreasing (ties in the order the task holds them)."""
        c = self.ctr
        slots = np.concatenate([self.pool.heap[:c[K.C_HEAP]], self.pool.dfs[:c[K.C_DFS]]])
        order = np.argsort(-self.pool.bound[slots], kind="stable")
        return [int(s) for s in slots[order]]

    def open_bounds(self) -> NDArray[np.float64]:
        c = self.ctr
        return np.concatenate([self.pool.bound[self.pool.heap[:c[K.C_HEAP]]],
                               self.pool.bound[self.pool.dfs[:c[K.C_DFS]]]])

    def open_bound(self) -> float:
        return float(K.open_bound(self.pool.bound, self.pool.heap, self.pool.dfs, self.ctr))

    def run(self, problem: Problem, evals: int, incumbent: float,
            clock: Budget | None = None) -> _Task:
        """Search for ``evals`` node evaluations from the incumbent value ``incumbent``;
        stop early, between two kernel calls (:func:`run_paced`), when ``clock`` (None:
        never asked) is spent — the barrier then ends the search."""
        start = float(incumbent)
        self.fstate[K.F_BEST] = start
        target = int(self.ctr[K.C_EVALS]) + int(evals)
        while not self.done and int(self.ctr[K.C_EVALS]) < target:
            p = self.pool
            st = run_paced(p, self.ctr, self.fstate, self.best_box, problem, self.iparams,
                           target - int(self.ctr[K.C_EVALS]), clock, self.pace)
            if st == ST_EXPIRED:
                break
            if st == K.ST_DONE:
                self.done = True
            elif st == K.ST_GROW:
                p.grow(int(min(self.max_slots, 4 * p.slots)), self.ctr)
                self.iparams[K.I_CAN_GROW] = int(p.slots < self.max_slots)
        self.improved = bool(self.fstate[K.F_BEST] > start)
        return self

    def compact(self, initial_slots: int) -> _Task:
        """The same task in a pool holding only its open nodes (to travel to a worker): the
        heap keeps its layout (slot ``i`` is heap position ``i``) and the depth-first stack
        its order, so the compacted task searches exactly as the original would."""
        c = self.ctr
        nh, nd = int(c[K.C_HEAP]), int(c[K.C_DFS])
        idx = np.concatenate([self.pool.heap[:nh], self.pool.dfs[:nd]])
        new = _Task(self.pool.pool[idx], self.pool.bound[idx], self.pool.splits[idx],
                    self.max_slots, self.reserve, self.iparams, initial_slots)
        new.ctr[K.C_HEAP] = nh
        new.ctr[K.C_DFS] = nd
        new.pool.dfs[:nd] = np.arange(nh, nh + nd)
        new.ctr[[K.C_EVALS, K.C_EXPANDED]] = self.ctr[[K.C_EVALS, K.C_EXPANDED]]
        new.ctr[K.C_PEAK] = self.ctr[K.C_PEAK]
        new.fstate[:] = self.fstate
        new.best_box[:] = self.best_box
        new.improved, new.done = self.improved, self.done
        return new


def _remote_round(problem: Problem, task: _Task, evals: int, incumbent: float) -> _Task:
    """One round of one task on a Dask worker, returned compacted (which changes nothing
    in its search: :meth:`_Task.compact`)."""
    return task.run(problem, evals, incumbent).compact(0)


def dask_client(scheduler: Any) -> Any:
    """A Dask client for ``scheduler`` (a client, or an address to connect to), with the
    install hint when Dask's distributed scheduler is missing."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise InvalidParameterError(
            "`scheduler` needs Dask's distributed scheduler, which is not installed; "
            "install it with `pip install 'dask[distributed]'` or use `n_jobs`.") from None
    return scheduler if isinstance(scheduler, Client) else Client(scheduler)


class _Runner:
    """Runs a round of tasks: threads on this machine or futures on a Dask cluster."""

    def __init__(self, n_jobs: int, scheduler: Any, problem: Problem) -> None:
        self.problem = problem
        self.client = None
        self.pool: ThreadPoolExecutor | None = None
        if scheduler is not None:
            self.client = dask_client(scheduler)
            # a key of its own (hash=False): an equal problem scattered by an earlier search
            # would share its key and vanish with that search's future
            self.remote_problem = self.client.scatter(problem, broadcast=True, hash=False)
        elif n_jobs > 1:
            self.pool = ThreadPoolExecutor(max_workers=n_jobs)

    def round(self, tasks: list[_Task], evals: list[int], incumbent: float,
              clock: Budget) -> list[_Task]:
        """Run each task for its evaluations; local tasks ask ``clock`` between their kernel
        calls (a round of 32 768 evaluations takes seconds on 100 000 rows), tasks on a
        cluster only at the barrier."""
        if self.client is not None:
            futures = [self.client.submit(_remote_round, self.remote_problem, t, e, incumbent,
                                          pure=False)
                       for t, e in zip(tasks, evals, strict=True)]
            return list(self.client.gather(futures))
        if self.pool is not None:
            jobs = [self.pool.submit(t.run, self.problem, e, incumbent, clock)
                    for t, e in zip(tasks, evals, strict=True)]
            return [j.result() for j in jobs]
        return [t.run(self.problem, e, incumbent, clock)
                for t, e in zip(tasks, evals, strict=True)]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown()


def split_search(pool: Any, ctr: NDArray[np.int64], fstate: NDArray[np.float64],
                 best_box: NDArray[np.int32], problem: Problem, iparams: NDArray[np.int64],
                 *, max_slots: int, reserve: int, initial_slots: int, per_node: int,
                 clock: Budget, node_limit: int | None, n_jobs: int, scheduler: Any,
                 progress: Callable[[int, float, float], None] | None
                 ) -> tuple[str, float, int, int, int]:
    """Continue the search whose root ``pool`` holds (module docstring); ``fstate`` and
    ``best_box`` end with the incumbent. Returns ``(status, bound, branchings,
    evaluations, peak bytes of the node pools)``."""
    m = problem[2]
    status = "optimal"
    # ---- ramp-up: serial best first until N_TASKS nodes are open
    st = K.ST_EVALS
    pace = Pace()
    while ctr[K.C_HEAP] + ctr[K.C_DFS] < N_TASKS or ctr[K.C_EVALS] < RAMP_MIN_EVALS:
        if clock.expired():
            return _stopped(f"{clock.stop_reason()}_limit", pool, ctr, fstate, per_node)
        if node_limit is not None and ctr[K.C_EXPANDED] >= node_limit:
            return _stopped("node_limit", pool, ctr, fstate, per_node)
        step = RAMP_EVALS if ctr[K.C_EVALS] >= RAMP_MIN_EVALS else \
            int(min(4096, RAMP_MIN_EVALS - ctr[K.C_EVALS]))
        if node_limit is not None:
            step = int(min(step, max(2, 2 * (node_limit - ctr[K.C_EXPANDED]))))
        # the step's state does not depend on how run_paced cuts it into calls (4 096
        # evaluations take 4 s on 100 000 rows: the clock is asked in between)
        st = run_paced(pool, ctr, fstate, best_box, problem, iparams, step, clock, pace)
        if st == ST_EXPIRED:
            return _stopped(f"{clock.stop_reason()}_limit", pool, ctr, fstate, per_node)
        if st == K.ST_DONE:
            return _stopped("optimal", pool, ctr, fstate, per_node)
        if st == K.ST_GROW:
            pool.grow(int(min(max_slots, 4 * pool.slots)), ctr)
            iparams[K.I_CAN_GROW] = int(pool.slots < max_slots)
    # ---- tasks: the open nodes dealt round-robin in the order of their bounds
    c = ctr
    slots = np.concatenate([pool.heap[:c[K.C_HEAP]], pool.dfs[:c[K.C_DFS]]])
    slots = slots[np.argsort(-pool.bound[slots], kind="stable")]
    n_tasks = int(min(N_TASKS, len(slots)))
    # the ramp-up's pool stays allocated: the tasks share what it leaves of the budget
    share = max(reserve + 16, (max_slots - pool.slots) // n_tasks)
    tasks = [_Task.from_nodes(pool, [int(s) for s in slots[i::n_tasks]], share, reserve,
                              iparams, initial_slots) for i in range(n_tasks)]
    expanded, evaluated = int(ctr[K.C_EXPANDED]), int(ctr[K.C_EVALS])
    pruned = float(fstate[K.F_PRUNED])
    peak = int(ctr[K.C_PEAK]) * per_node
    best = float(fstate[K.F_BEST])
    runner = _Runner(n_jobs, scheduler, problem)
    last_report = time.perf_counter()
    try:
        while tasks:
            if clock.expired():
                status = f"{clock.stop_reason()}_limit"
                break
            total = ROUND_EVALS
            if node_limit is not None:
                left = node_limit - expanded - sum(int(t.ctr[K.C_EXPANDED]) for t in tasks)
                if left <= 0:
                    status = "node_limit"
                    break
                total = int(min(total, 2 * left))
            tasks, evals = _rebalance(tasks, initial_slots, total)
            order = sorted(range(len(tasks)), key=lambda i: -evals[i])   # largest first
            run = [i for i in order if evals[i] > 0]
            done_round = runner.round([tasks[i] for i in run], [evals[i] for i in run], best,
                                      clock)
            for i, t in zip(run, done_round, strict=True):
                tasks[i] = t
            for i in range(len(tasks)):
                if evals[i] == 0:
                    tasks[i].improved = False
            # ---- the barrier: the incumbent (equal values: the box order), retire, split
            winner = None
            for t in tasks:
                if t.improved and (t.fstate[K.F_BEST] > best or (
                        t.fstate[K.F_BEST] == best and winner is not None
                        and box_key(t.best_box, m) < box_key(winner.best_box, m))):
                    best, winner = float(t.fstate[K.F_BEST]), t
            if winner is not None:
                fstate[K.F_BEST] = best
                best_box[:] = winner.best_box
            live: list[_Task] = []
            for t in tasks:
                pruned = max(pruned, float(t.fstate[K.F_PRUNED]))
                if t.done or t.ctr[K.C_HEAP] + t.ctr[K.C_DFS] == 0:
                    expanded += int(t.ctr[K.C_EXPANDED])
                    evaluated += int(t.ctr[K.C_EVALS])
                else:
                    live.append(t)
            peak = max(peak, sum(int(t.ctr[K.C_PEAK]) for t in live) * per_node)
            tasks = live
            now = time.perf_counter()
            if progress is not None and now - last_report >= PROGRESS_EVERY:
                last_report = now
                progress(evaluated + sum(int(t.ctr[K.C_EVALS]) for t in tasks), best,
                         _bound(best, pruned, tasks))
    finally:
        runner.close()
    fstate[K.F_PRUNED] = pruned
    bound = _bound(best, pruned, tasks)
    expanded += sum(int(t.ctr[K.C_EXPANDED]) for t in tasks)
    evaluated += sum(int(t.ctr[K.C_EVALS]) for t in tasks)
    return status, bound, expanded, evaluated, peak


def _threshold(tasks: list[_Task], total: int) -> float:
    """The bound of the ``total / 2``-th best open node of all tasks (-inf: fewer)."""
    bounds = [t.open_bounds() for t in tasks]
    every = np.concatenate(bounds) if bounds else np.zeros(0)
    k = max(1, total // 2)
    if len(every) <= k:
        return -np.inf
    return float(np.partition(every, len(every) - k)[len(every) - k])


def _allowance(task: _Task, theta: float) -> int:
    """Evaluations of a task in a round: twice its open nodes with bounds at least
    ``theta`` — its share of the nodes a best-first search of the whole tree would expand
    next (ties at the threshold count for every task holding one)."""
    return 2 * int((task.open_bounds() >= theta).sum())


def _rebalance(tasks: list[_Task], initial_slots: int, total: int
               ) -> tuple[list[_Task], list[int]]:
    """Split a task in two (its open nodes dealt alternately in the order of their bounds)
    while it holds more than ``1/MIN_LIVE`` of the round's evaluations, or fewer than
    MIN_LIVE tasks are live — and it has two nodes and room to halve its memory share.
    Depends on the tasks only, never on the number of workers."""
    theta = _threshold(tasks, total)
    evals = [_allowance(t, theta) for t in tasks]
    while tasks:
        i = int(np.argmax(evals))          # ties: the first
        if len(tasks) >= MIN_LIVE and evals[i] <= total // MIN_LIVE:
            break
        t = tasks[i]
        size = int(t.ctr[K.C_HEAP] + t.ctr[K.C_DFS])
        half = t.max_slots // 2
        if size < 2 or half < size + 2 * (t.reserve + 16):
            break
        nodes = t.open_slots()
        parts = [_Task.from_nodes(t.pool, nodes[j::2], half, t.reserve, t.iparams,
                                  initial_slots) for j in (0, 1)]
        parts[0].ctr[[K.C_EVALS, K.C_EXPANDED]] = t.ctr[[K.C_EVALS, K.C_EXPANDED]]
        for p in parts:
            p.fstate[K.F_PRUNED] = t.fstate[K.F_PRUNED]
        tasks = tasks[:i] + parts + tasks[i + 1:]
        evals = evals[:i] + [_allowance(p, theta) for p in parts] + evals[i + 1:]
    return tasks, evals


def _bound(best: float, pruned: float, tasks: list[_Task]) -> float:
    return float(max([best, pruned] + [t.open_bound() for t in tasks]))


def _stopped(status: str, pool: Any, ctr: NDArray[np.int64], fstate: NDArray[np.float64],
             per_node: int) -> tuple[str, float, int, int, int]:
    """The result of a search that ended during the ramp-up."""
    bound = float(max(fstate[K.F_BEST], fstate[K.F_PRUNED],
                      K.open_bound(pool.bound, pool.heap, pool.dfs, ctr)))
    return (status, bound, int(ctr[K.C_EXPANDED]), int(ctr[K.C_EVALS]),
            int(ctr[K.C_PEAK]) * per_node)
