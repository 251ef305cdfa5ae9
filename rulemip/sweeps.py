"""Gap-study sweeps over datasets × splits × k that outgrow one machine.

A sweep is a list of independent :class:`GapTask` s (one dataset, one split, one k). Each
task runs the boosting variants up to its k and the exact engine at k, and returns its
table rows and certificate. The driver writes every finished task to
``out_dir/tasks/<task_id>.json`` (atomically) *as it finishes*, so an interrupted sweep
resumes by skipping the tasks whose file exists; the final table is assembled from the
files and sorted, so it does not depend on completion order.

Execution: serial, joblib processes (``n_jobs``), or a Dask cluster (``scheduler`` = a
``tcp://`` address or a ``dask.distributed.Client``). Results travel back to the driver,
so workers need no shared filesystem.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rulemip.certify.certificate import Certificate

TABLE_ORDER = ["dataset", "split", "k", "variant"]


@dataclass(frozen=True)
class GapTask:
    """One unit of a sweep. ``split = 0`` is the full data; ``split = s > 0`` a random
    ``train_fraction`` subsample drawn with seed ``s``."""

    dataset: str
    split: int
    k: int
    variants: tuple[str, ...]
    loss: str = "squared"
    reg: float = 1e-6
    fit_intercept: bool = False
    max_thresholds: int | None = None
    max_rule_length: int | None = None
    engine: str = "auto"
    solver: str = "auto"
    time_limit: float | None = 60.0
    mip_gap: float = 1e-6
    train_fraction: float = 0.8

    @property
    def task_id(self) -> str:
        """Stable file name: readable prefix plus a hash of every setting."""
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.dataset)
        return f"{safe}__s{self.split}__k{self.k}__{digest[:10]}"


def run_gap_task(task: GapTask, X: Any, y: Any) -> dict[str, Any]:
    """Run one task; returns ``{"task": ..., "rows": [...], "certificate": {...}}``."""
    from rulemip.certify.gap import (
        ProblemSpec,
        SolveSpec,
        boosting_path,
        exact_at_k,
        make_problem,
        null_risk,
        rows_for_k,
    )
    from rulemip.data import Dataset

    X_arr, y_arr = _split(X, y, task.split, task.train_fraction)
    ds = Dataset.from_arrays(X_arr, y_arr, loss=task.loss)
    problem: ProblemSpec = make_problem(ds, loss=task.loss, reg=task.reg,
                                        fit_intercept=task.fit_intercept,
                                        max_thresholds=task.max_thresholds, thresholds=None,
                                        max_rule_length=task.max_rule_length)
    solve = SolveSpec(task.engine, task.solver, task.time_limit, task.mip_gap)
    boost = {v: boosting_path(ds, v, task.k, problem, solve)[task.k - 1]
             for v in task.variants}
    best = min(boost.values(), key=lambda rb: rb[0])[1]
    _, cert = exact_at_k(ds, task.k, problem, solve, best)
    null = null_risk(ds, task.loss, task.fit_intercept)
    rows = rows_for_k(task.k, boost, cert, null)
    for r in rows:
        r["dataset"], r["split"] = task.dataset, task.split
    return {"task": asdict(task), "task_id": task.task_id, "rows": rows,
            "certificate": cert.to_dict(), "null_risk": null}


def _split(X: Any, y: Any, split: int, fraction: float) -> tuple[Any, Any]:
    if split == 0:
        return X, y
    n = len(y)
    rng = np.random.default_rng(split)
    rows = np.sort(rng.choice(n, size=max(2, round(fraction * n)), replace=False))
    take = (lambda a: a.iloc[rows]) if hasattr(X, "iloc") else (lambda a: np.asarray(a)[rows])
    return take(X), (y.iloc[rows] if hasattr(y, "iloc") else np.asarray(y)[rows])


def make_tasks(datasets: Iterable[str], k_max: int, variants: Sequence[str],
               splits: Sequence[int] = (0,), **settings: Any) -> list[GapTask]:
    """The full cross product datasets × splits × k = 1..k_max."""
    return [GapTask(name, int(s), k, tuple(variants), **settings)
            for name in datasets for s in splits for k in range(1, k_max + 1)]


def _write_atomic(path: Path, payload: Mapping[str, Any]) -> None:
    from rulemip.cli._common import write_json_atomic

    write_json_atomic(path, payload)


def pending_tasks(tasks: Sequence[GapTask], out_dir: str | Path) -> list[GapTask]:
    """Tasks without a result file under ``out_dir/tasks``."""
    done = Path(out_dir) / "tasks"
    return [t for t in tasks if not (done / f"{t.task_id}.json").is_file()]


def run_sweep(tasks: Sequence[GapTask], data: Mapping[str, tuple[Any, Any]],
              out_dir: str | Path, *, n_jobs: int = 1, scheduler: Any = None,
              progress: Any = None) -> Any:
    """Run the pending tasks and return the full table (a pandas DataFrame).

    ``data`` maps each task's dataset name to ``(X, y)``. ``n_jobs`` > 1 uses joblib
    processes; ``scheduler`` (address or ``Client``) uses Dask instead.
    """
    out = Path(out_dir)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    todo = pending_tasks(tasks, out)
    missing = sorted({t.dataset for t in todo} - set(data))
    if missing:
        from rulemip.exceptions import InvalidParameterError

        raise InvalidParameterError(f"no data given for datasets {missing}.")
    say = progress or (lambda _msg: None)
    say(f"{len(tasks) - len(todo)} of {len(tasks)} tasks already done; running {len(todo)}")
    for result in _execute(todo, data, n_jobs, scheduler):
        _write_atomic(out / "tasks" / f"{result['task_id']}.json", result)
        say(f"done {result['task_id']}")
    table = collect_table(tasks, out)
    table.to_csv(out / "sweep_table.csv", index=False)
    return table


def _execute(todo: Sequence[GapTask], data: Mapping[str, tuple[Any, Any]], n_jobs: int,
             scheduler: Any) -> Iterator[dict[str, Any]]:
    if not todo:
        return
    if scheduler is not None:
        from dask.distributed import Client, as_completed

        client = scheduler if isinstance(scheduler, Client) else Client(scheduler)
        futures = [client.submit(run_gap_task, t, *data[t.dataset], pure=False) for t in todo]
        for fut in as_completed(futures):
            yield fut.result()
        return
    if n_jobs == 1:
        for t in todo:
            yield run_gap_task(t, *data[t.dataset])
        return
    from joblib import Parallel, delayed

    par = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    yield from par(delayed(run_gap_task)(t, *data[t.dataset]) for t in todo)


def collect_table(tasks: Sequence[GapTask], out_dir: str | Path) -> Any:
    """Assemble the finished tasks' rows into one sorted table."""
    import pandas as pd

    from rulemip.certify.gap import TABLE_COLUMNS

    rows: list[dict[str, Any]] = []
    for t in tasks:
        path = Path(out_dir) / "tasks" / f"{t.task_id}.json"
        if path.is_file():
            rows.extend(json.loads(path.read_text())["rows"])
    cols = ["dataset", "split", *TABLE_COLUMNS]
    if not rows:
        return pd.DataFrame(columns=cols)
    table = pd.DataFrame(rows)[cols]
    return table.sort_values(TABLE_ORDER, kind="stable").reset_index(drop=True)


def load_certificates(tasks: Sequence[GapTask], out_dir: str | Path) -> dict[str, Certificate]:
    """Certificates of the finished tasks by task id."""
    out: dict[str, Certificate] = {}
    for t in tasks:
        path = Path(out_dir) / "tasks" / f"{t.task_id}.json"
        if path.is_file():
            out[t.task_id] = Certificate.from_dict(json.loads(path.read_text())["certificate"])
    return out
