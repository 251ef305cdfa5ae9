"""Gap-study sweeps over datasets × splits × k that outgrow one machine.

A sweep is a list of independent :class:`GapTask` s (one dataset, one split, one k). Each
task runs the boosting variants up to its k and the exact engine at k, all within its
``time_limit`` (one :class:`~rulemip.budget.Budget`, shared as in
:mod:`rulemip.certify.gap`), and returns its table rows and certificate. The driver
writes every finished task to ``out_dir/tasks/<task_id>.json`` (atomically) *as it
finishes*, so an interrupted sweep resumes by skipping the tasks whose file exists; the
final table is assembled from the files and sorted, so it does not depend on completion
order.

Execution: serial, joblib processes (``n_jobs``), or a Dask cluster (``scheduler`` = a
``tcp://`` address or a ``dask.distributed.Client``). Results travel back to the driver,
so workers need no shared filesystem.

A task's id hashes every setting *and the data's digest*
(:meth:`rulemip.data.Dataset.digest`), so editing a data file and rerunning into the same
folder recomputes its tasks instead of serving the old rows; :func:`run_sweep` refuses
data that differs from what the tasks were made for.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from rulemip._io import write_json_atomic
from rulemip.certify.certificate import Certificate
from rulemip.exceptions import InvalidParameterError

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
    data_digest: str = ""  # Dataset.digest() of the full data (before splitting)

    @property
    def task_id(self) -> str:
        """Stable file name: readable prefix plus a hash of every setting."""
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.dataset)
        return f"{safe}__s{self.split}__k{self.k}__{digest[:10]}"


def run_gap_task(task: GapTask, X: Any, y: Any) -> dict[str, Any]:
    """Run one task; returns ``{"task": ..., "rows": [...], "certificate": {...}}``."""
    from rulemip._kernels import ensure_compiled
    from rulemip.budget import Budget
    from rulemip.certify.gap import (
        SolveSpec,
        boosting_paths,
        exact_at_k,
        null_risk,
        rows_for_k,
        study_problem,
        threshold_rule,
    )
    from rulemip.data import Dataset

    ensure_compiled("box", "levels")  # on this worker, before the task's clock starts
    budget = Budget.from_time_limit(task.time_limit)  # every phase of the task
    X_arr, y_arr = _split(X, y, task.split, task.train_fraction)
    ds = Dataset.from_arrays(X_arr, y_arr, loss=task.loss)
    problem = study_problem(ds, task.k, loss=task.loss, reg=task.reg,
                            fit_intercept=task.fit_intercept,
                            max_thresholds=task.max_thresholds, thresholds=None,
                            max_rule_length=task.max_rule_length)
    solve = SolveSpec(task.engine, task.solver, task.time_limit, task.mip_gap,
                      threshold_rule=threshold_rule(task.max_thresholds, None))
    paths = boosting_paths(problem, task.variants, solve, budget)
    boost = {v: paths[v][task.k - 1] for v in task.variants}
    best = min(boost.values(), key=lambda rb: rb[0])[1]
    _, cert = exact_at_k(problem, solve, best, budget=budget)
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


def data_digest(X: Any, y: Any, loss: str = "squared") -> str:
    """:meth:`rulemip.data.Dataset.digest` of ``(X, y)`` as a task sees it."""
    from rulemip.data import Dataset

    return Dataset.from_arrays(X, y, loss=loss).digest()


def make_tasks(datasets: Iterable[str] | Mapping[str, tuple[Any, Any]], k_max: int,
               variants: Sequence[str], splits: Sequence[int] = (0,), **settings: Any
               ) -> list[GapTask]:
    """The full cross product datasets × splits × k = 1..k_max.

    ``datasets`` maps names to ``(X, y)`` (then each task carries the data's digest, so a
    changed file gets new task ids) or lists names only (no digest; the caller vouches
    that the data under a name never changes).
    """
    from rulemip.certify.gap import check_study_settings

    check_study_settings(k_max, variants, solver=settings.get("solver", "auto"),
                         max_thresholds=settings.get("max_thresholds"),
                         time_limit=settings.get("time_limit"),
                         mip_boosting_time_limit=settings.get("mip_boosting_time_limit"),
                         mip_gap=settings.get("mip_gap", 0.0), seed=settings.get("seed", 0))
    split_list = list(splits)
    bad = [s for s in split_list
           if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0]
    if bad or not split_list:
        raise InvalidParameterError(
            f"`splits` must be a non-empty list of integers >= 0 (0 = the full data, s > 0 "
            f"= a subsample with seed s); got {split_list!r}.")
    loss = settings.get("loss", "squared")
    if isinstance(datasets, Mapping):
        digests = {name: data_digest(X, y, loss=loss) for name, (X, y) in datasets.items()}
    else:
        digests = {name: "" for name in datasets}
    if not digests:
        raise InvalidParameterError("`datasets` is empty; give at least one dataset.")
    return [GapTask(name, int(s), k, tuple(variants), **settings, data_digest=digest)
            for name, digest in digests.items() for s in split_list
            for k in range(1, k_max + 1)]


def pending_tasks(tasks: Sequence[GapTask], out_dir: str | Path) -> list[GapTask]:
    """Tasks without a result file under ``out_dir/tasks``."""
    done = Path(out_dir) / "tasks"
    return [t for t in tasks if not (done / f"{t.task_id}.json").is_file()]


def run_sweep(tasks: Sequence[GapTask], data: Mapping[str, tuple[Any, Any]],
              out_dir: str | Path, *, n_jobs: int = 1, scheduler: Any = None,
              progress: Any = None, on_task: Any = None) -> Any:
    """Run the pending tasks and return the full table (a pandas DataFrame).

    ``data`` maps each task's dataset name to ``(X, y)``. ``n_jobs`` > 1 uses joblib
    processes (``-1``: one per core); ``scheduler`` (address or ``Client``) uses Dask
    instead. ``progress(message)`` is called once before and after every finished task;
    ``on_task(done, total)`` (optional) after every finished task, for a progress bar.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or not (n_jobs >= 1
                                                                        or n_jobs == -1):
        raise InvalidParameterError(
            f"`n_jobs` must be a positive integer (or -1 for one worker per core); got "
            f"{n_jobs!r}.")
    if scheduler is not None:
        _require_dask()
    out = Path(out_dir)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    todo = pending_tasks(tasks, out)
    missing = sorted({t.dataset for t in todo} - set(data))
    if missing:
        raise InvalidParameterError(f"no data given for datasets {missing}.")
    _check_digests(todo, data)
    say = progress or (lambda _msg: None)
    n_done = len(tasks) - len(todo)
    say(f"{n_done} of {len(tasks)} tasks already done; running {len(todo)}")
    for result in _execute(todo, data, n_jobs, scheduler):
        write_json_atomic(out / "tasks" / f"{result['task_id']}.json", result)
        n_done += 1
        say(f"done {result['task_id']}")
        if on_task is not None:
            on_task(n_done, len(tasks))
    table = collect_table(tasks, out)
    table.to_csv(out / "sweep_table.csv", index=False)
    return table


def _require_dask() -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise InvalidParameterError(
            "`scheduler` needs Dask's distributed scheduler, which is not installed; install "
            "it with `pip install 'dask[distributed]'` or run without a scheduler "
            "(`n_jobs` for local processes).") from None


def _check_digests(todo: Sequence[GapTask], data: Mapping[str, tuple[Any, Any]]) -> None:
    """Refuse data whose digest differs from the one its tasks were made for."""
    seen: dict[tuple[str, str], str] = {}
    for t in todo:
        if not t.data_digest or (t.dataset, t.loss) in seen:
            continue
        X, y = data[t.dataset]
        seen[(t.dataset, t.loss)] = digest = data_digest(X, y, loss=t.loss)
        if digest != t.data_digest:
            raise InvalidParameterError(
                f"the data given for dataset {t.dataset!r} differs from the data its tasks "
                "were made for (digest mismatch); make the tasks again from this data.")


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
            rows.extend(_read_task(path, "rows"))
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
            out[t.task_id] = Certificate.from_dict(_read_task(path, "certificate"))
    return out


def _read_task(path: Path, key: str) -> Any:
    """Part ``key`` of a finished task's file; a damaged file is an error that says how to
    recompute it (task files are written atomically, so only an edit damages one)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return doc[key]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError) as exc:
        from rulemip.exceptions import InvalidDataError

        raise InvalidDataError(
            f"task file {str(path)!r} is damaged ({type(exc).__name__}: {exc}); delete it and "
            "rerun the sweep to recompute that task.") from None
