"""Results and speed unchanged: four quick benchmarks on two checkouts, side by side.

Runs, for a base checkout and a branch checkout, interleaved (round r: base then branch for
odd r, branch then base for even r), ``runs`` times each:

* ``box_search.py --quick``
* ``kbox.py --quick``
* ``exact_kfit.py --quick --work-limit 20000`` (rows read from its ``--jsonl`` file)
* ``pruning.py table --quick --work-limit 20``

each as its own process, from the checkout's root with ``PYTHONPATH`` set to it (so that
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
    return {"rows": rows, "returncode": code, "stderr_tail": err[-2000:], "cpu": cpu,
            "wall": wall, "load_before": load, "load_after": os.getloadavg()}


# ---------------------------------------------------------------------- parsing
def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _rows_of(text: str) -> list[dict[str, Any]]:
    """Every row of every markdown table in ``text``: ``{"key": ..., "cells": {column:
    value}}``, keyed by the table's header, the row's first cell and its repeat count."""
    lines = text.splitlines()
    rows: list[dict[str, Any]] = []
    header: list[str] | None = None
    seen: Counter[tuple[str, ...]] = Counter()
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
        if header is None:
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
        columns = [c for c in _union(r for r in (*b_runs, *n_runs) if r)
                   if not _is_clock(c)]
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
        compared += 1
        differing += not same
        mark = "same" if same else "DIFFERS"
        note = " (time-limited: status only)" if limited else ""
        lines.append(f"  [{mark}] {key}{note}: " + "; ".join(parts))
    return lines, compared, differing


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
    p.add_argument("--base", type=Path, required=True, help="the base checkout")
    p.add_argument("--branch", type=Path, default=Path("."), help="the branch checkout")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--only", nargs="*", choices=sorted(BENCHMARKS), default=None)
    p.add_argument("--json", help="write every run (rows, CPU, load) to this file")
    args = p.parse_args(argv)
    sides = {"base": args.base.resolve(), "branch": args.branch.resolve()}
    names = args.only or list(BENCHMARKS)
    print(f"# {os.cpu_count()} cores; load {os.getloadavg()}; base {sides['base']}, "
          f"branch {sides['branch']}; {args.runs} interleaved runs each", flush=True)
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
    for name in names:
        lines, compared, differing = compare(name, runs[name]["base"],
                                             runs[name]["branch"])
        print(f"\n## {' '.join(BENCHMARKS[name][:1] + BENCHMARKS[name][1:])}: "
              f"{compared} rows compared, {differing} differ")
        print("\n".join(lines))
        print("\n".join(cpu_lines(runs[name]["base"], runs[name]["branch"])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(runs, fh, indent=1)


if __name__ == "__main__":
    main()
