"""Helpers shared by the sub-commands: reading a CSV with a target column, parsing the
options several commands share, checking output paths before any work."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rulemip._io import check_output_dir, check_output_path, write_json_atomic
from rulemip.exceptions import InvalidDataError, InvalidParameterError

__all__ = [
    "add_data_arguments",
    "add_max_thresholds_argument",
    "check_output_dir",
    "check_output_path",
    "parse_max_thresholds",
    "read_table",
    "warnings_as_lines",
    "write_json_atomic",
]

MAX_THRESHOLDS_HELP = ("candidate cut points per feature (quantile bins), a positive "
                       "integer, or 'all' for every midpoint between distinct values")


def read_table(path: str, target: str, option: str = "--data",
               categorical: Any = ()) -> tuple[Any, Any]:
    """Read ``path`` (CSV) and split off column ``target``: returns ``(X, y)``.

    Empty, ragged or header-only files, a missing target column and a target-only file
    raise :class:`~rulemip.exceptions.InvalidDataError` naming the file and the fix.
    Columns named in ``categorical`` are read as text and given the pandas ``category``
    dtype, so they are one-hot encoded by level even when their values are numbers
    (``--categorical``). A column not named there whose
    values are mostly numbers but has a typo is refused by the encoder
    (:mod:`rulemip.data.encoding`), not one-hot encoded.
    """
    import pandas as pd

    cats = parse_categorical(categorical)

    p = Path(path)
    if not p.is_file():
        what = "is a folder" if p.is_dir() else "does not exist"
        raise InvalidDataError(f"{option}: {path!r} {what}; give a CSV file.")
    try:
        frame = pd.read_csv(p, dtype=dict.fromkeys(cats, str) or None)
    except pd.errors.EmptyDataError:
        raise InvalidDataError(
            f"{option}: {path} is empty; give a CSV file with a header line and one row "
            "per sample.") from None
    except pd.errors.ParserError as exc:
        detail = str(exc).strip().splitlines()[-1]
        raise InvalidDataError(
            f"{option}: {path} is not a well-formed CSV file ({detail}); every row needs "
            "as many fields as the header.") from None
    except (UnicodeDecodeError, OSError) as exc:
        raise InvalidDataError(f"{option}: cannot read {path} as CSV text ({exc}).") from None
    if target not in frame.columns:
        raise InvalidDataError(
            f"--target: column {target!r} not in {path}; columns are {list(frame.columns)}.")
    if len(frame) == 0:
        raise InvalidDataError(
            f"{option}: {path} has a header line but no rows; at least one sample is needed.")
    if frame.shape[1] < 2:
        raise InvalidDataError(
            f"{option}: {path} has only the target column {target!r}; at least one feature "
            "column is needed.")
    unknown = [c for c in cats if c not in frame.columns]
    if unknown:
        raise InvalidParameterError(
            f"`--categorical`: no column {unknown[0]!r} in {path}; columns are "
            f"{list(frame.columns)}.")
    if target in cats:
        raise InvalidParameterError(
            f"`--categorical` names the target {target!r}; list feature columns only.")
    for c in cats:
        frame[c] = frame[c].astype("category")
    return frame.drop(columns=[target]), frame[target]


def parse_categorical(value: Any) -> tuple[str, ...]:
    """``--categorical a,b`` (or repeated) -> ``("a", "b")``; empty names are refused."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    names = tuple(n.strip() for item in items for n in str(item).split(","))
    if any(not n for n in names):
        raise InvalidParameterError(
            f"`--categorical` takes column names separated by commas; got {value!r}.")
    return tuple(dict.fromkeys(names))


def add_categorical_argument(parser: Any) -> None:
    """``--categorical COL[,COL...]``: columns to one-hot encode even if they hold numbers."""
    parser.add_argument(
        "--categorical", action="append", metavar="COL[,COL...]",
        help="feature columns to treat as categorical (one indicator per level) even when "
             "their values are numbers; a column that is mostly numbers with a few typos is "
             "refused unless named here")


def add_data_arguments(parser: Any, *, required: bool = True) -> None:
    parser.add_argument("--data", required=required, metavar="FILE.csv",
                        help="CSV file with one row per sample and a header line.")
    parser.add_argument("--target", required=required, metavar="COLUMN",
                        help="name of the column to predict.")


def add_engine_arguments(parser: Any) -> None:
    """``--engine``: the exact engines of ``rulemip fit`` and ``rulemip gap``."""
    parser.add_argument(
        "--engine", choices=["auto", "cip", "cip-bnb", "cg", "cell-bnb", "kbox", "mip"],
        default="auto",
        help="exact engine: convex integer program over boxes (cip; cip-bnb = by branch and "
             "bound, squared loss; cg = by column generation, boxes priced by rule search, "
             "for tables with many features), cell-sweep branch and bound (cell-bnb: "
             "squared loss, any reg >= 0), the k-box search (kbox: k <= 2 squared-loss "
             "rules of a capped length, any reg >= 0), or interval-cover MIP")


def add_max_thresholds_argument(parser: Any, default: int | str) -> None:
    """``--max-thresholds`` with one meaning in every command (see
    :func:`parse_max_thresholds`)."""
    parser.add_argument("--max-thresholds", default=str(default), metavar="B|all",
                        help=MAX_THRESHOLDS_HELP)


def parse_max_thresholds(text: Any) -> int | None:
    """``--max-thresholds``: a positive integer, or ``all`` (-> ``None``, every midpoint,
    as ``max_thresholds=None`` in Python). ``0`` is refused with the hint to say ``all``."""
    s = str(text).strip().lower()
    if s == "all":
        return None
    try:
        value = int(s)
    except ValueError:
        value = -1
    if value < 1:
        hint = " (for every midpoint write --max-thresholds all)" if s in ("0", "none") else ""
        raise InvalidParameterError(
            f"`--max-thresholds` must be a positive integer or 'all'; got {text!r}{hint}.")
    return value


def check_positive(value: Any, option: str, *, integer: bool = False,
                   allow_zero: bool = False) -> Any:
    """Refuse a non-positive (or non-finite) option value with a one-line error."""
    import math

    ok = value is not None and math.isfinite(float(value)) and (
        value >= 0 if allow_zero else value > 0)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        kind = "an integer" if integer else "a number"
        raise InvalidParameterError(f"`{option}` must be {kind} {bound}; got {value!r}.")
    return value


@contextlib.contextmanager
def warnings_as_lines() -> Iterator[list[Any]]:
    """Collect the warnings of a command (every :class:`SolveLimitWarning`, not only the
    first) and print each distinct one on exit as one clean line on stderr,
    ``warning: <message>`` — no file path, no source line (the form of Python's default
    warning display, which is meant for programmers, not for command-line users)."""
    from rulemip.exceptions import SolveLimitWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SolveLimitWarning)
        try:
            yield caught
        finally:
            seen: set[str] = set()
            for w in caught:
                line = " ".join(str(w.message).split())
                if line not in seen:
                    seen.add(line)
                    print(f"warning: {line}", file=sys.stderr)
