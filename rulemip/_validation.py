"""Small parameter checks shared by estimators, formulations and the command line."""

from __future__ import annotations

import numbers
from collections.abc import Iterable
from typing import Any

from rulemip.exceptions import InvalidParameterError


def python_scalar(value: Any) -> Any:
    """A numpy scalar (``np.int64(2)``, ``np.float32(0.5)``, ``np.bool_(True)``) as the
    Python ``int``, ``float`` or ``bool`` it holds; lists, tuples and dicts element by
    element; anything else unchanged. Parameters pass through it where they enter the
    package (the estimators' certificates, :func:`rulemip.certify.gap_study`,
    :func:`rulemip.certify.verify`), so nothing downstream — JSON certificates, digests,
    messages — sees a numpy type (issue 38, item 5)."""
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {k: python_scalar(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(python_scalar(v) for v in value)
    return value


def check_positive_int(value: Any, name: str, *, allow_none: bool = False) -> int | None:
    """Return ``value`` as an ``int`` if it is an integer >= 1, else raise."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        hint = ""
        if allow_none and isinstance(value, numbers.Integral) and not isinstance(value, bool) \
                and value == 0:
            hint = " Use None for no limit" + (" (all midpoints)." if name == "max_thresholds"
                                              else ".")
        raise InvalidParameterError(
            f"`{name}` must be a positive integer{' or None' if allow_none else ''}; "
            f"got {value!r}.{hint}")
    return int(value)


def is_real(value: Any) -> bool:
    """Whether ``value`` is a real number of any type (Python or numpy integers and
    floats, ``numbers.Real``), not a ``bool``."""
    import numpy as np

    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def check_nonneg_float(value: Any, name: str, *, allow_none: bool = False,
                       strictly_positive: bool = False) -> float | None:
    """Return ``value`` as a finite ``float`` >= 0 (> 0 if ``strictly_positive``)."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameterError(f"`{name}` must be a number; got {value!r}.")
    v = float(value)
    if v != v or v in (float("inf"), float("-inf")):
        raise InvalidParameterError(f"`{name}` must be finite; got {value!r}.")
    if v < 0 or (strictly_positive and v == 0):
        bound = "> 0" if strictly_positive else ">= 0"
        raise InvalidParameterError(f"`{name}` must be {bound}; got {value!r}.")
    return v


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices`` (case-sensitive)."""
    options = tuple(choices)
    if value not in options:
        listed = ", ".join(repr(c) for c in options)
        raise InvalidParameterError(f"`{name}` must be one of {listed}; got {value!r}.")
    return str(value)


#: scikit-learn's range of an integer seed (``numpy.random.RandomState`` takes [0, 2**32))
SEED_BOUND = 2**32


def check_seed(value: Any, name: str = "random_state") -> Any:
    """Return ``value`` if it is a seed by scikit-learn's convention — ``None``, an integer
    in [0, 2**32) (numpy integers too, not ``bool``) or a ``numpy.random.RandomState`` —
    else raise :class:`InvalidParameterError` naming the parameter ``name`` (the
    estimators' ``random_state``, the command line's ``--seed``). Checked before any work:
    a negative seed used to reach numpy deep inside the fit."""
    import numpy as np

    if value is None or isinstance(value, np.random.RandomState):
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_) \
            and 0 <= int(value) < SEED_BOUND:
        return int(value)
    raise InvalidParameterError(
        f"`{name}` must be None, an integer in [0, 2**32) or a numpy.random.RandomState; "
        f"got {value!r}.")


def seed_int(value: Any, name: str = "random_state") -> int:
    """An integer seed for the searches that take one (:func:`check_seed` first): 0 for
    ``None``, the integer itself, or one draw from a ``RandomState`` (scikit-learn's
    reading of a ``RandomState``: the fit consumes its stream)."""
    checked = check_seed(value, name)
    if checked is None:
        return 0
    if isinstance(checked, int):
        return checked
    return int(checked.randint(0, 2**31 - 1))


def check_random_state(seed: Any, name: str = "random_state") -> Any:
    """:func:`sklearn.utils.check_random_state` of a seed checked by :func:`check_seed`
    (refused by its own ``name``)."""
    from sklearn.utils import check_random_state as _crs

    return _crs(check_seed(seed, name))


def check_bool(value: Any, name: str) -> bool:
    """Return ``value`` as a ``bool`` if it is True or False (numpy booleans too); a string
    such as ``"yes"`` or a number is refused rather than read by its truthiness."""
    import numpy as np

    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise InvalidParameterError(f"`{name}` must be True or False; got {value!r}.")
