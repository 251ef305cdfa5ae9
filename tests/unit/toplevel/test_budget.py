"""The fit-wide time budget: remaining time shrinks, derived budgets never extend it."""

import time

import pytest

from rulemip.budget import Budget, ResourceLimitError
from rulemip.exceptions import InvalidParameterError


def test_remaining_counts_down_and_expires() -> None:
    b = Budget.from_time_limit(0.05)
    first = b.remaining()
    assert first is not None and 0.0 < first <= 0.05
    assert not b.expired()
    time.sleep(0.06)
    assert b.expired()
    assert b.remaining() == 0.0


def test_unlimited_never_expires() -> None:
    b = Budget.unlimited()
    assert b.remaining() is None and not b.expired()
    assert b.fraction(0.5).remaining() is None
    d = b.fraction(0.5, default=3.0).remaining()
    assert d is not None and 2.5 < d <= 3.0


def test_derived_budgets_never_outlive_the_parent() -> None:
    b = Budget.from_time_limit(1.0)
    longer = b.within(100.0)
    assert longer.deadline == b.deadline
    shorter = b.within(0.1)
    assert shorter.deadline is not None and b.deadline is not None
    assert shorter.deadline < b.deadline
    half = b.fraction(0.5).remaining()
    assert half is not None and half <= 0.5 + 1e-9


def test_coerce_prefers_the_budget_and_only_shortens() -> None:
    b = Budget.from_time_limit(10.0)
    assert Budget.coerce(b, None) is b
    c = Budget.coerce(b, 1.0).remaining()
    assert c is not None and c <= 1.0
    assert Budget.coerce(None, None).remaining() is None


@pytest.mark.parametrize("bad", [-1.0, float("nan"), "5", True])
def test_bad_limits_are_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="time_limit"):
        Budget.from_time_limit(bad)  # type: ignore[arg-type]


def test_memory_cap() -> None:
    b = Budget.from_time_limit(None, memory_bytes=1000)
    b.check_memory(999, "boxes")
    with pytest.raises(ResourceLimitError, match="boxes"):
        b.check_memory(10_000, "boxes")
    with pytest.raises(InvalidParameterError):
        Budget.coerce("x", None)  # type: ignore[arg-type]


def test_default_max_memory_is_a_share_of_available_memory(monkeypatch):
    import rulemip.budget as budget

    monkeypatch.setattr(budget, "available_memory", lambda: 16 * 2**30)
    assert budget.default_max_memory() == 4 * 2**30
    monkeypatch.setattr(budget, "available_memory", lambda: 256 * 2**30)
    assert budget.default_max_memory() == budget.DEFAULT_MEMORY_CAP
    monkeypatch.setattr(budget, "available_memory", lambda: None)
    assert budget.default_max_memory() == budget.DEFAULT_MEMORY_FALLBACK
    monkeypatch.setattr(budget, "available_memory", lambda: 10 * 2**20)
    assert budget.default_max_memory() == 64 * 2**20


def test_available_memory_reads_the_machine():
    from rulemip.budget import available_memory

    avail = available_memory()
    assert avail is None or avail > 0


def test_of_takes_a_budget_none_or_an_old_style_deadline() -> None:
    b = Budget.from_time_limit(5.0)
    assert Budget.of(b) is b
    assert Budget.of(None).remaining() is None
    past = Budget.of(time.perf_counter() - 1.0)
    assert past.expired() and past.remaining() == 0.0
    ahead = Budget.of(time.perf_counter() + 5.0).remaining()
    assert ahead is not None and 4.0 < ahead <= 5.0


@pytest.mark.parametrize("bad", ["soon", float("nan"), True])
def test_of_refuses_what_is_no_clock(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="deadline"):
        Budget.of(bad)  # type: ignore[arg-type]
