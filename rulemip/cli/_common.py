"""Helpers shared by the sub-commands: reading a CSV with a target column, writing JSON."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from rulemip.exceptions import InvalidDataError


def read_table(path: str, target: str) -> tuple[Any, Any]:
    """Read ``path`` (CSV) and split off column ``target``: returns ``(X, y)``."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InvalidDataError(f"--data: no such file {path!r}.")
    frame = pd.read_csv(p)
    if target not in frame.columns:
        raise InvalidDataError(
            f"--target: column {target!r} not in {path}; columns are {list(frame.columns)}.")
    return frame.drop(columns=[target]), frame[target]


def write_json_atomic(path: str | os.PathLike[str], payload: Any) -> None:
    """Write JSON to ``path`` via a temporary file and rename, so a crash never leaves a
    half-written file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, indent=2, sort_keys=False)
            fh.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def add_data_arguments(parser: Any, *, required: bool = True) -> None:
    parser.add_argument("--data", required=required, metavar="FILE.csv",
                        help="CSV file with one row per sample and a header line.")
    parser.add_argument("--target", required=required, metavar="COLUMN",
                        help="name of the column to predict.")
