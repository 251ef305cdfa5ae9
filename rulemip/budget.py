"""A time, work (and optional memory) budget threaded through a whole fit.

An estimator creates one :class:`Budget` when ``fit`` starts and hands it down; every loop
(model building, enumeration, outer approximation, boosting warm starts) asks
:meth:`Budget.expired` and every backend call receives :meth:`Budget.remaining` — the time
*left*, not the time limit the user typed. So work done before a solver starts (cells,
candidate boxes, warm starts) is counted once, and a fit ends within its limit plus the
time of one indivisible step.

The budget measures wall time with :func:`time.perf_counter`. A memory limit, when given,
is a cap in bytes for the data structures a loop allocates (e.g. candidate boxes); loops
that can estimate their allocation call :meth:`Budget.check_memory` before allocating.

**Work: the deterministic limit.** Wall time depends on the machine and its load, so a
time-limited search stops at a different node from run to run. A *work limit* counts
units the searches charge (:meth:`Budget.charge`): one unit per branching of the compiled
box search, per node of a branch and bound, per expansion of a set-enumeration or
greedy/beam search, per support evaluated by an enumeration or the local search, per
iteration of outer approximation or column generation, per solve of a backend and per
B&B node of its MIP (passed to the backend as its node limit, :meth:`Budget.work_left`),
and per :data:`LP_ITERATIONS_PER_UNIT` simplex (LP) iterations of a backend — the work
inside a node: root LP, cuts, presolve's and heuristics' LPs (passed to the backend as its
LP iteration limit, :meth:`Budget.iteration_limit`; :meth:`Budget.charge_solve`). The count depends
only on the data, the parameters and the seed, so :meth:`Budget.expired` turns true at the
same point of every search on any machine. Derived budgets share their parent's counter:
:meth:`within` shares its work too; :meth:`fraction` gets ``share`` of the work left (and
charges the parent as it spends).

Examples
--------
>>> b = Budget.from_time_limit(5.0)
>>> 0.0 < b.remaining() <= 5.0
True
>>> Budget.unlimited().remaining() is None
True
>>> w = Budget.from_time_limit(None, work_limit=10)
>>> w.charge(4); w.work_left(), w.expired()
(6, False)
>>> half = w.fraction(0.5); half.work_left()
3
>>> half.charge(3); half.expired(), w.work_left()
(True, 3)
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rulemip.exceptions import InvalidParameterError, RulemipError

#: the clock every budget reads (:func:`time.perf_counter`); :func:`use_clock` replaces
#: it — the tests' way to make a budget expire at its k-th clock check
_CLOCK: list[Callable[[], float]] = [time.perf_counter]


def _clock() -> float:
    """Now, on the budgets' clock: one *clock check*."""
    return _CLOCK[0]()


@contextmanager
def use_clock(clock: Callable[[], float]) -> Iterator[None]:
    """Within the block every budget reads ``clock`` instead of :func:`time.perf_counter`
    (a testing hook: ``tests/integration/test_clock_checks.py`` expires the budget of a fit
    at its k-th clock check for every k)."""
    _CLOCK.insert(0, clock)
    try:
        yield
    finally:
        _CLOCK.remove(clock)


class ResourceLimitError(RulemipError, MemoryError):
    """A loop would allocate more than the budget's memory cap."""


class BudgetExpired(RulemipError):
    """A step that has no partial result (building a model) found its budget spent
    (:meth:`Budget.check`); the caller returns the best model it knows."""


def _check_limit(value: float | None, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or math.isnan(float(value)) or float(value) < 0:
        raise InvalidParameterError(
            f"`{name}` must be a nonnegative number of seconds or None; got {value!r}. "
            "Pass None for no limit.")
    return float(value)


class WorkCounter:
    """Units of work spent (see the module docstring) against an optional ``limit``; a
    counter derived by :meth:`Budget.fraction` charges its ``parent`` too."""

    __slots__ = ("limit", "parent", "spent")

    def __init__(self, limit: int | None = None, parent: WorkCounter | None = None) -> None:
        self.limit = limit
        self.parent = parent
        self.spent = 0

    def charge(self, units: int) -> None:
        c: WorkCounter | None = self
        while c is not None:
            c.spent += units
            c = c.parent

    def left(self) -> int | None:
        """Units left before this counter or an ancestor reaches its limit (None: none has
        a limit)."""
        out: int | None = None
        c: WorkCounter | None = self
        while c is not None:
            if c.limit is not None:
                rest = max(c.limit - c.spent, 0)
                out = rest if out is None else min(out, rest)
            c = c.parent
        return out


def check_work_limit(value: int | None, name: str = "work_limit") -> int | None:
    """``value`` as a positive int (numpy integers accepted), or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise InvalidParameterError(
            f"`{name}` must be a positive integer (units of work: search nodes, "
            f"evaluations, iterations) or None; got {value!r}.")
    return int(value)


@dataclass(frozen=True)
class Budget:
    """A deadline on :func:`time.perf_counter` (``None``: no time limit) and an optional
    memory cap in bytes.

    Parameters
    ----------
    deadline : absolute :func:`time.perf_counter` value at which the budget is spent.
    memory_bytes : cap on the bytes one loop may allocate (``None``: no cap).
    started : :func:`time.perf_counter` value when the budget was created.
    work : the work counter (shared with derived budgets; its ``limit`` None: no work
        limit).
    """

    deadline: float | None = None
    memory_bytes: int | None = None
    started: float = 0.0
    work: WorkCounter = field(default_factory=WorkCounter, compare=False, repr=False)

    # ------------------------------------------------------------------ creation
    @classmethod
    def from_time_limit(cls, time_limit: float | None, *, memory_bytes: int | None = None,
                        work_limit: int | None = None) -> Budget:
        """A budget of ``time_limit`` seconds from now (``None``: unlimited) and of
        ``work_limit`` units of work (``None``: unlimited; the deterministic limit)."""
        limit = _check_limit(time_limit, "time_limit")
        work = WorkCounter(check_work_limit(work_limit))
        now = _clock()
        if memory_bytes is not None and (isinstance(memory_bytes, bool)
                                         or not isinstance(memory_bytes, int)
                                         or memory_bytes <= 0):
            raise InvalidParameterError(
                f"`memory_bytes` must be a positive integer or None; got {memory_bytes!r}.")
        return cls(None if limit is None else now + limit, memory_bytes, now, work)

    @classmethod
    def unlimited(cls) -> Budget:
        """No time limit, no memory cap."""
        return cls(None, None, _clock())

    @classmethod
    def coerce(cls, budget: Budget | None, time_limit: float | None) -> Budget:
        """``budget`` if given (then ``time_limit`` may only shorten it), else a budget of
        ``time_limit`` seconds from now."""
        if budget is None:
            return cls.from_time_limit(time_limit)
        if not isinstance(budget, Budget):
            raise InvalidParameterError(
                f"`budget` must be a rulemip.budget.Budget or None; got "
                f"{type(budget).__name__}. Build one with Budget.from_time_limit(seconds).")
        limit = _check_limit(time_limit, "time_limit")
        return budget if limit is None else budget.within(limit)

    @classmethod
    def of(cls, clock: Budget | float | None, name: str = "deadline") -> Budget:
        """The budget a loop asks: ``clock`` itself when it is a :class:`Budget`, an
        unlimited one for ``None``, and for a number a budget ending at that absolute
        :func:`time.perf_counter` value."""
        if clock is None:
            return cls.unlimited()
        if isinstance(clock, Budget):
            return clock
        if isinstance(clock, bool) or not isinstance(clock, (int, float)) \
                or math.isnan(float(clock)):
            raise InvalidParameterError(
                f"`{name}` must be a rulemip.budget.Budget, a time.perf_counter() value or "
                f"None; got {clock!r}. Build one with Budget.from_time_limit(seconds).")
        return cls(float(clock), None, _clock())

    # ------------------------------------------------------------------ queries
    def remaining(self) -> float | None:
        """Seconds left (≥ 0), or ``None`` without a time limit."""
        if self.deadline is None:
            return None
        return max(self.deadline - _clock(), 0.0)

    def elapsed(self) -> float:
        """Seconds since the budget was created."""
        return _clock() - self.started

    def expired(self) -> bool:
        """True once the deadline has passed or the work limit is spent."""
        left = self.work.left()
        if left is not None and left <= 0:
            return True
        return self.deadline is not None and _clock() >= self.deadline

    def past_deadline(self, by: float = 0.0) -> bool:
        """True once the deadline passed more than ``by`` seconds ago — the time limit
        only, not the work: a step that bounds its *time* (a scan asked between windows)
        must not cut a work-limited search at a point that depends on the clock."""
        return self.deadline is not None and _clock() >= self.deadline + by

    def check(self, what: str) -> None:
        """Raise :class:`BudgetExpired` when the budget is spent (a step without a partial
        result — ``what`` — asks between its blocks)."""
        if self.expired():
            raise BudgetExpired(f"the {self.stop_reason()} limit was reached while {what}.")

    def charge(self, units: int = 1) -> None:
        """Count ``units`` of work done (module docstring: what a unit is)."""
        if units > 0:
            self.work.charge(int(units))

    def work_left(self) -> int | None:
        """Units of work left (``None``: no work limit)."""
        return self.work.left()

    def iteration_limit(self) -> int | None:
        """The LP iterations a backend solve may spend: the work left in units of
        :data:`LP_ITERATIONS_PER_UNIT` iterations (``None``: no work limit)."""
        left = self.work.left()
        return None if left is None else left * LP_ITERATIONS_PER_UNIT

    def charge_solve(self, nodes: int | None, iterations: int | None) -> None:
        """Charge one backend solve: a unit for the solve, one per branch-and-bound node
        and one per :data:`LP_ITERATIONS_PER_UNIT` LP iterations begun."""
        its = max(int(iterations or 0), 0)
        self.charge(1 + max(int(nodes or 0), 0) + -(-its // LP_ITERATIONS_PER_UNIT))

    def work_spent(self) -> int:
        """Units of work charged to this budget and the budgets derived from it."""
        return self.work.spent

    def stop_reason(self) -> str:
        """``"work"`` when the work limit is spent, else ``"time"`` (the name of the limit
        an expired budget reached, for statuses such as ``"work_limit"``)."""
        left = self.work.left()
        return "work" if left is not None and left <= 0 else "time"

    @property
    def bounded(self) -> bool:
        """True when a time or a work limit ends this budget (open-ended loops, such as
        kicks, run only then)."""
        return self.deadline is not None or self.work.left() is not None

    @property
    def deterministic(self) -> bool:
        """True when a work limit bounds this budget: searches that would size a step by
        seconds size it by work instead, so the fit does not depend on the clock."""
        return self.work.left() is not None

    # ------------------------------------------------------------------ derived budgets
    def within(self, seconds: float | None) -> Budget:
        """A budget ending ``seconds`` from now or at this deadline, whichever is first."""
        limit = _check_limit(seconds, "seconds")
        if limit is None:
            return self
        end = _clock() + limit
        deadline = end if self.deadline is None else min(end, self.deadline)
        return Budget(deadline, self.memory_bytes, self.started, self.work)

    def with_work(self, units: int | None) -> Budget:
        """A budget with the same deadline whose work ends after ``units`` more units or
        with this budget's, whichever is first (``None``: this budget)."""
        if units is None:
            return self
        return Budget(self.deadline, self.memory_bytes, self.started,
                      WorkCounter(max(int(units), 0), self.work))

    def fraction(self, share: float, *, default: float | None = None) -> Budget:
        """A budget of ``share`` of the remaining time (``default`` seconds when there is
        no time limit; ``None``: unlimited) and of ``share`` of the work left (at least
        one unit)."""
        if not 0.0 < share <= 1.0:
            raise InvalidParameterError(f"`share` must lie in (0, 1]; got {share!r}.")
        left = self.remaining()
        timed = self.within(default if left is None else share * left)
        work = self.work.left()
        if work is None:
            return timed
        return timed.with_work(max(1, int(share * work)) if work > 0 else 0)

    def search_memory(self, max_memory: int | None) -> int:
        """The memory budget of one search: ``max_memory`` when given; else, under a work
        limit, the fixed :data:`DEFAULT_MEMORY_FALLBACK` (a budget read from the machine's
        free memory would make the search's path, and so the fit, machine-dependent);
        else :func:`default_max_memory`."""
        if max_memory is not None:
            return int(max_memory)
        return DEFAULT_MEMORY_FALLBACK if self.deterministic else default_max_memory()

    def check_memory(self, n_bytes: int, what: str) -> None:
        """Raise :class:`ResourceLimitError` if allocating ``n_bytes``
        for ``what`` would exceed the memory cap."""
        if self.memory_bytes is not None and n_bytes > self.memory_bytes:
            raise ResourceLimitError(
                f"{what} needs about {n_bytes / 2**20:.0f} MiB, over the memory budget of "
                f"{self.memory_bytes / 2**20:.0f} MiB. Use fewer thresholds "
                "(`max_thresholds`), a smaller `max_rule_length`, or raise the budget.")


__all__ = ["LP_ITERATIONS_PER_UNIT", "Budget", "BudgetExpired", "ResourceLimitError",
           "WorkCounter", "check_work_limit", "use_clock"]

#: simplex (LP) iterations of a backend per unit of work (module docstring): a unit is
#: about one branch-and-bound node's LP, so that ``work_limit`` bounds the work inside a
#: node too (issue 38: HiGHS ran 11 minutes in one LP on ``work_limit=40``)
LP_ITERATIONS_PER_UNIT: int = 100


#: share of the machine's available memory a search may use by default
DEFAULT_MEMORY_SHARE: float = 0.25
#: the default memory budget never exceeds this many bytes
DEFAULT_MEMORY_CAP: int = 8 * 2**30
#: the default memory budget when the available memory cannot be read
DEFAULT_MEMORY_FALLBACK: int = 1 * 2**30


def available_memory() -> int | None:
    """Bytes of memory available to new allocations (``MemAvailable`` of
    ``/proc/meminfo`` on Linux, ``os.sysconf`` elsewhere); None when unknown."""
    import os

    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def default_max_memory() -> int:
    """The default memory budget of one search: a quarter of the available memory
    (:data:`DEFAULT_MEMORY_SHARE`), at most 8 GiB, 1 GiB when it cannot be read
    (docs/reference/parameters.md)."""
    avail = available_memory()
    if avail is None:
        return DEFAULT_MEMORY_FALLBACK
    return int(max(64 * 2**20, min(DEFAULT_MEMORY_CAP, DEFAULT_MEMORY_SHARE * avail)))
