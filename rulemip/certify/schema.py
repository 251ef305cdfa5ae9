"""Strict reading of certificate documents: every field with its type, or a clear error.

A certificate is evidence; a document whose ``bound_valid`` is the *string* ``"false"``
(truthy in Python) or whose format version is unknown must be rejected, not coerced. The
readers here raise :class:`~rulemip.exceptions.CertificateError` naming the field (as a
JSON path such as ``claims.bound_valid``) and what it must be.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

from rulemip.exceptions import CertificateError
from rulemip.losses import LOSSES

STATUSES = ("optimal", "feasible", "no_solution_found", "infeasible", "unbounded",
            "numerical_error", "error")


def _fail(path: str, must: str, value: Any) -> CertificateError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return CertificateError(f"malformed certificate: `{path}` must be {must}; got {shown}.")


def section(doc: dict[str, Any], key: str, path: str = "") -> dict[str, Any]:
    """The JSON object ``doc[key]`` (required)."""
    where = f"{path}.{key}" if path else key
    if key not in doc:
        raise CertificateError(f"malformed certificate: `{where}` is missing.")
    value = doc[key]
    if not isinstance(value, dict):
        raise _fail(where, "a JSON object", value)
    return value


def required(doc: dict[str, Any], key: str, path: str) -> Any:
    if key not in doc:
        raise CertificateError(f"malformed certificate: `{path}.{key}` is missing.")
    return doc[key]


def as_bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise _fail(path, "true or false (a JSON boolean, not a string)", value)
    return value


def as_str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, "a string", value)
    return value


def as_int(value: Any, path: str, *, minimum: int | None = None,
           allow_none: bool = False) -> int | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise _fail(path, "an integer" + (" or null" if allow_none else ""), value)
    if minimum is not None and value < minimum:
        raise _fail(path, f"an integer >= {minimum}", value)
    return int(value)


def as_number(value: Any, path: str, *, finite: bool = False, allow_missing: bool = False
              ) -> float:
    """A JSON number; ``"inf"``/``"-inf"`` (how infinities are written) unless ``finite``;
    ``null`` reads as NaN only when ``allow_missing``."""
    if value is None and allow_missing:
        return math.nan
    if isinstance(value, str) and not finite and value in ("inf", "-inf"):
        return math.inf if value == "inf" else -math.inf
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(path, "a finite number" if finite else 'a number, "inf" or "-inf"', value)
    v = float(value)
    if math.isnan(v) or (finite and math.isinf(v)):
        raise _fail(path, "a finite number", value)
    return v


def as_loss(value: Any, path: str) -> str:
    if value not in LOSSES:
        raise _fail(path, f"one of {', '.join(LOSSES)}", value)
    return str(value)


def as_status(value: Any, path: str) -> str:
    if value not in STATUSES:
        raise _fail(path, f"one of {', '.join(STATUSES)}", value)
    return str(value)


def as_thresholds(value: Any, path: str) -> tuple[tuple[float, ...], ...]:
    if not isinstance(value, list):
        raise _fail(path, "a list (one list of cut points per feature)", value)
    out = []
    for j, cuts in enumerate(value):
        if not isinstance(cuts, list):
            raise _fail(f"{path}[{j}]", "a list of numbers", cuts)
        out.append(tuple(as_number(v, f"{path}[{j}][{i}]", finite=True)
                         for i, v in enumerate(cuts)))
    return tuple(out)


def as_str_list(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, "a list of strings", value)
    return tuple(value)


def as_threshold_rule(value: Any, path: str) -> int | str | None:
    """``{"kind": "midpoints", "max_thresholds": b | null}`` -> ``b`` (``None`` = all
    midpoints); ``{"kind": "explicit"}`` -> ``"explicit"``."""
    if not isinstance(value, dict):
        raise _fail(path, 'an object {"kind": "midpoints" | "explicit", ...}', value)
    kind = value.get("kind")
    if kind == "explicit":
        return "explicit"
    if kind == "midpoints":
        return as_int(value.get("max_thresholds"), f"{path}.max_thresholds", minimum=1,
                      allow_none=True)
    raise _fail(f"{path}.kind", '"midpoints" or "explicit"', kind)
