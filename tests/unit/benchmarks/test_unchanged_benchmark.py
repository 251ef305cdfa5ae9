"""benchmarks/unchanged.py: its table reader takes every row once, under its own header
(a row a part prints while it runs and again in the part's table is read from the table),
and its comparison marks a differing cell, skips clocks, and compares a time-limited row
on its status only."""

from __future__ import annotations

import pytest

from ._bench import benchmark_module

OUTPUT = """# machine: 2 cores
| a 1 | 0.5 | optimal |
| workload | seconds | status |
|---|---|---|
| a 1 | 0.5 | optimal |
| x 1 | 0.1 | optimal | 10 |
| x 1 | 9.9 | time_limit | 77 |
| rule | status | nodes | seconds |
|---|---|---|---|
| x 1 | 0.1 | optimal | 10 |
| x 1 | 9.9 | time_limit | 77 |
| 1 | optimal | 5 | 0.2 |
| 2 | time_limit | 9 | 9.1 |
| rule | status | nodes | seconds |
|---|---|---|---|
| 1 | optimal | 5 | 0.2 |
| 2 | time_limit | 9 | 9.1 |
"""


@pytest.fixture(scope="module")
def unchanged():  # type: ignore[no-untyped-def]
    return benchmark_module("unchanged")


def test_every_row_is_read_once_under_its_own_header(unchanged) -> None:  # type: ignore[no-untyped-def]
    rows = unchanged._rows_of(OUTPUT)
    assert [r["key"] for r in rows] == ["workload=a 1", "rule=x 1", "rule=x 1 #2",
                                        "rule=1", "rule=2"]
    assert rows[1]["cells"] == {"rule": "x 1", "status": "0.1", "nodes": "optimal",
                                "seconds": "10"}


def _run(text: str) -> dict:  # type: ignore[type-arg]
    return {"rows": [], "stdout": text, "cpu": 1.0, "load_before": [1.0, 1.0, 1.0]}


def test_a_differing_count_is_marked_and_clocks_are_not_compared(unchanged) -> None:  # type: ignore[no-untyped-def]
    slower = OUTPUT.replace("| 5 | 0.2 |", "| 5 | 0.7 |")
    more = OUTPUT.replace("| 1 | optimal | 5 |", "| 1 | optimal | 6 |")
    later = OUTPUT.replace("| time_limit | 9 |", "| time_limit | 12 |")
    for text, differing in ((slower, 0), (more, 1), (later, 0)):
        base = [_run(OUTPUT)]
        branch = [_run(text)]
        for run in (*base, *branch):
            run["rows"] = unchanged._rows_of(run["stdout"])
        lines, compared, differ = unchanged.compare("box_search", base, branch)
        assert (compared, differ) == (5, differing), lines
    assert any("nodes 5 → 6" in line for line in
               unchanged.compare("box_search", [{"rows": unchanged._rows_of(OUTPUT)}],
                                 [{"rows": unchanged._rows_of(more)}])[0])
