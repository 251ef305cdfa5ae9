"""Results and speed unchanged: four quick benchmarks on two checkouts, side by side.

Runs, for a base checkout and a branch checkout, interleaved (round r: base then branch for
odd r, branch then base for even r), ``runs`` times each:

* ``box_search.py --quick``
* ``kbox.py --quick``
* ``exact_kfit.py --quick --work-limit 20000`` (rows read from its ``--jsonl`` file)
* ``pruning.py table --quick --work-limit 20``

each as its own process (after one ``rulemip.compile_kernels()`` per checkout, so that no
timed run pays a first compile), from the checkout's root with ``PYTHONPATH`` set to it (so that
the checkout's own ``rulemip`` and its own benchmark script are measured; a benchmark
script run from a checkout otherwise imports the *installed* package). It then prints, per
benchmark, every result row with its status, objective, bound and deterministic counts —
a cell equal on every run of both sides once, a differing one as ``base → branch`` with
each run's value — and the CPU seconds (user + system of the process, from ``wait4``) of
every run, the medians and their ratio, with the load average before each run. Columns
that are clocks (seconds, wall, CPU, load) are not compared; a row whose status names a
time limit is compared on its status only (its counts depend on the clock).

Rerun (issue 40, "results and speed unchanged against 22b3c6f")::

    git worktree add --detach /tmp/base 22b3c6f
    python benchmarks/unchanged.py --base /tmp/base --branch . --runs 3 --json out.json

``--only`` picks benchmarks by name (``box_search kbox exact_kfit pruning``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: name: the script and its arguments (``{jsonl}`` is a temporary file's path)
BENCHMARKS: dict[str, list[str]] = {
    "box_search": ["benchmarks/box_search.py", "--quick"],
    "kbox": ["benchmarks/kbox.py", "--quick"],
    "exact_kfit": ["benchmarks/exact_kfit.py", "--quick", "--work-limit", "20000",
                   "--jsonl", "{jsonl}"],
    "pruning": ["benchmarks/pruning.py", "table", "--quick", "--work-limit", "20"],
}

#: run once per checkout before the rounds: every kernel group compiled (or loaded from
#: numba's cache), so that no timed run pays a first compile
WARM_UP = "import rulemip; rulemip.compile_kernels()"

#: a column or field whose name contains one of these is a clock: not compared
CLOCK_WORDS = ("second", "wall", "cpu", "time (s)", "verify s", "load", "elapsed",
               "max wall")


def _is_clock(name: str) -> bool:
    low = name.strip().lower()
    return any(w in low for w in CLOCK_WORDS) or low.endswith(" s") or low == "s"


# ---------------------------------------------------------------------- running
class _Child(subprocess.Popen):  # type: ignore[type-arg]
    """A Popen whose reaping keeps the child's resource usage (``os.wait4``)."""

    rusage: Any = None

    def _try_wait(self, wait_flags: int) -> tuple[int, int]:
        pid, sts, self.rusage = os.wait4(self.pid, wait_flags)
        return pid, sts


def _run_child(argv: list[str], checkout: Path, env: dict[str, str]
               ) -> tuple[str, str, int, float]:
    proc = _Child(argv, cwd=checkout, env=env, stdout=subprocess.PIPE,
                  stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    usage = proc.rusage
    cpu = float("nan") if usage is None else usage.ru_utime + usage.ru_stime
    return out, err, int(proc.returncode), cpu


def measure(checkout: Path, name: str) -> dict[str, Any]:
    """One benchmark process from ``checkout``: its rows, CPU seconds, wall, load."""
    with tempfile.TemporaryDirectory() as tmp:
        jsonl = os.path.join(tmp, "rows.jsonl")
        argv = [sys.executable] + [a.replace("{jsonl}", jsonl) for a in BENCHMARKS[name]]
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        load = os.getloadavg()
        t = time.perf_counter()
        out, err, code, cpu = _run_child(argv, checkout, env)
        wall = time.perf_counter() - t
        rows = _rows_of(out)
        if os.path.exists(jsonl):
            with open(jsonl) as fh:
                rows = [_json_row(json.loads(line)) for line in fh if line.strip()]
    return {"rows": rows, "returncode": code, "stdout": out, "stderr_tail": err[-2000:],
            "cpu": cpu, "wall": wall, "load_before": load, "load_after": os.getloadavg()}


# ---------------------------------------------------------------------- parsing
def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _rows_of(text: str) -> list[dict[str, Any]]:
    """Every row of every markdown table in ``text``: ``{"key": ..., "cells": {column:
    value}}``, keyed by the table's header, the row's first cell and its repeat count. A
    row must follow its header in one block of table lines; a row printed while its part
    runs and again in the part's table at the end is read once, from the table."""
    lines = text.splitlines()
    rows: list[dict[str, Any]] = []
    header: list[str] | None = None
    placed: list[tuple[int, list[str], str]] = []
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            header = None
            continue
        if set(line.replace("|", "").strip()) <= {"-", ":", " "}:
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if nxt.startswith("|---") or nxt.startswith("| ---"):
            header = _cells(line)
            continue
        if header is not None and len(_cells(line)) == len(header):
            placed.append((i, header, line))
    last_of = {line: i for i, _, line in placed}
    seen: Counter[tuple[str, ...]] = Counter()
    for i, header, line in placed:
        if last_of[line] != i:      # printed again further down: read it there
            continue
        cells = _cells(line)
        first = (header[0], cells[0])
        seen[first] += 1
        key = f"{header[0]}={cells[0]} #{seen[first]}" if seen[first] > 1 else \
            f"{header[0]}={cells[0]}"
        rows.append({"key": key, "cells": dict(zip(header, cells, strict=False))})
    return rows


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    """A JSON row of ``exact_kfit.py`` keyed by its instance (not its timings)."""
    if row.get("part") == "tiny":
        key = ("tiny seed {seed} n {n} k {k} reg {reg} intercept {fit_intercept} "
               "engine {engine}").format(**row)
    else:
        key = f"{row.get('part')} {row.get('table', '')} k {row.get('k')}"
    cells = {k: json.dumps(v) if not isinstance(v, str) else v for k, v in row.items()}
    return {"key": key, "cells": cells}


# ---------------------------------------------------------------------- comparing
def _time_limited(cells: dict[str, str]) -> bool:
    status = " ".join(v for k, v in cells.items() if "status" in k.lower()).lower()
    return "time" in status


def compare(name: str, base: list[dict[str, Any]], branch: list[dict[str, Any]]
            ) -> tuple[list[str], int, int]:
    """Side-by-side lines for one benchmark, the rows compared and the rows differing."""
    lines: list[str] = []
    keys: list[str] = []
    for run in (*base, *branch):
        for r in run["rows"]:
            if r["key"] not in keys:
                keys.append(r["key"])
    compared = differing = 0
    for key in keys:
        b_runs = [_cells_of(run, key) for run in base]
        n_runs = [_cells_of(run, key) for run in branch]
        if not any(b_runs) or not any(n_runs):
            side = "branch" if not any(b_runs) else "base"
            lines.append(f"  {key}: only on the {side} side")
            continue
        b_cols = _union(r for r in b_runs if r)
        n_cols = _union(r for r in n_runs if r)
        columns = [c for c in b_cols if c in n_cols and not _is_clock(c)]
        one_side = [c for c in (*b_cols, *n_cols) if (c in b_cols) != (c in n_cols)]
        limited = any(_time_limited(r) for r in (*b_runs, *n_runs) if r)
        if limited:
            columns = [c for c in columns if "status" in c.lower() or c == columns[0]]
        parts: list[str] = []
        same = True
        for col in columns:
            bv = [r.get(col, "-") if r else "missing" for r in b_runs]
            nv = [r.get(col, "-") if r else "missing" for r in n_runs]
            if len(set(bv) | set(nv)) == 1:
                parts.append(f"{col} {bv[0]}")
            else:
                same = False
                parts.append(f"{col} {'/'.join(bv)} → {'/'.join(nv)}")
        for col in [c for c in _union(r for r in (*b_runs, *n_runs) if r)
                    if "cpu" in c.lower()]:
            bc = _numbers(r.get(col) if r else None for r in b_runs)
            nc = _numbers(r.get(col) if r else None for r in n_runs)
            if bc and nc:
                mb, mn = statistics.median(bc), statistics.median(nc)
                ratio = f", ratio {mn / mb:.2f}" if mb > 0 else ""
                parts.append(f"{col} (median) {mb:.2f} → {mn:.2f}{ratio}")
        if one_side:
            parts.append(f"columns of one side only (its script): {', '.join(one_side)}")
        compared += 1
        differing += not same
        mark = "same" if same else "DIFFERS"
        note = " (time-limited: status only)" if limited else ""
        lines.append(f"  [{mark}] {key}{note}: " + "; ".join(parts))
    return lines, compared, differing


def _numbers(values: Iterable[str | None]) -> list[float]:
    out: list[float] = []
    for v in values:
        try:
            out.append(float(v))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
    return out


def _cells_of(run: dict[str, Any], key: str) -> dict[str, str] | None:
    for r in run["rows"]:
        if r["key"] == key:
            return dict(r["cells"])
    return None


def _union(rows: Iterable[dict[str, str]]) -> list[str]:
    out: list[str] = []
    for r in rows:
        out.extend(c for c in r if c not in out)
    return out


def cpu_lines(base: list[dict[str, Any]], branch: list[dict[str, Any]]) -> list[str]:
    """CPU seconds of every run, medians and their ratio, with the load before each run."""
    def fmt(runs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{r['cpu']:.1f} (load {r['load_before'][0]:.2f})" for r in runs)

    mb = statistics.median(r["cpu"] for r in base)
    mn = statistics.median(r["cpu"] for r in branch)
    return [f"  CPU s base:   {fmt(base)}; median {mb:.2f}",
            f"  CPU s branch: {fmt(branch)}; median {mn:.2f}",
            f"  ratio branch/base (medians): {mn / mb:.3f}"]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", type=Path, help="the base checkout (required unless --report)")
    p.add_argument("--branch", type=Path, default=Path("."), help="the branch checkout")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", nargs="*", choices=sorted(BENCHMARKS), default=None)
    p.add_argument("--json", help="write every run (rows, CPU, load) to this file")
    p.add_argument("--report", help="print the comparison of the runs saved in this JSON "
                                    "file (no run)")
    args = p.parse_args(argv)
    if args.report:
        with open(args.report) as fh:
            report(json.load(fh))
        return
    if args.base is None:
        p.error("--base is required (the checkout to compare with)")
    sides = {"base": args.base.resolve(), "branch": args.branch.resolve()}
    names = args.only or list(BENCHMARKS)
    print(f"# {os.cpu_count()} cores; load {os.getloadavg()}; base {sides['base']}, "
          f"branch {sides['branch']}; {args.runs} interleaved runs each", flush=True)
    for side, checkout in sides.items():   # numba's cache filled before any timed run
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        *_, cpu = _run_child([sys.executable, "-c", WARM_UP], checkout, env)
        print(f"# warm-up {side}: compile_kernels, CPU {cpu:.1f} s", flush=True)
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {
        n: {"base": [], "branch": []} for n in names}
    for r in range(args.runs):
        order = ("base", "branch") if r % 2 == 0 else ("branch", "base")
        for name in names:
            for side in order:
                res = measure(sides[side], name)
                runs[name][side].append(res)
                print(f"# round {r + 1} {name} {side}: CPU {res['cpu']:.1f} s, wall "
                      f"{res['wall']:.1f} s, load {res['load_before'][0]:.2f} → "
                      f"{res['load_after'][0]:.2f}, exit {res['returncode']}, "
                      f"{len(res['rows'])} rows", flush=True)
                if res["returncode"]:
                    print(res["stderr_tail"], file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(runs, fh, indent=1)
    report(runs)


def report(runs: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    """Per benchmark: every row side by side, then the processes' CPU seconds."""
    for name, sides in runs.items():
        for run in (*sides["base"], *sides["branch"]):
            if "stdout" in run and name != "exact_kfit":   # read again by this parser
                run["rows"] = _rows_of(run["stdout"])
        lines, compared, differing = compare(name, sides["base"], sides["branch"])
        command = " ".join(a for a in BENCHMARKS[name] if "jsonl" not in a)
        print(f"\n## {command}: {compared} rows compared, "
              f"{differing} differ")
        print("\n".join(lines))
        print("\n".join(cpu_lines(sides["base"], sides["branch"])))


if __name__ == "__main__":
    main()
