"""Datasets shipped inside the package (no download at run time).

``diabetes_small``: 100 patients of scikit-learn's diabetes data (Efron et al., 2004),
three standardized features (``bmi``, ``bp``, ``s5``) and the disease-progression target.
It is the default data of ``rulemip fit``. It was drawn once with
``benchmarks/make_bundled_data.py`` (fixed seed) and is stored as CSV in
``rulemip/data/bundled/``.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

BUNDLED = {"diabetes_small": ("diabetes_small.csv", "progression")}


def bundled_path(name: str = "diabetes_small") -> str:
    """Filesystem path of a bundled CSV."""
    from rulemip.exceptions import InvalidParameterError

    if name not in BUNDLED:
        raise InvalidParameterError(
            f"unknown bundled dataset {name!r}; available: {sorted(BUNDLED)}.")
    ref = resources.files("rulemip.data") / "bundled" / BUNDLED[name][0]
    return str(ref)


def load_bundled(name: str = "diabetes_small") -> tuple[Any, Any]:
    """Return ``(X, y)`` of a bundled dataset as a pandas DataFrame and Series."""
    import pandas as pd

    frame = pd.read_csv(bundled_path(name))
    target = BUNDLED[name][1]
    return frame.drop(columns=[target]), frame[target]
