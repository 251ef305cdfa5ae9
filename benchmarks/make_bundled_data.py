"""Regenerate ``rulemip/data/bundled/diabetes_small.csv`` from scikit-learn's diabetes data."""

from pathlib import Path

import numpy as np
from sklearn.datasets import load_diabetes


def main() -> None:
    data = load_diabetes(as_frame=True)
    frame = data.frame[["bmi", "bp", "s5", "target"]].rename(columns={"target": "progression"})
    rng = np.random.default_rng(2024)
    rows = np.sort(rng.choice(len(frame), size=100, replace=False))
    sub = frame.iloc[rows].round(5)
    bundled = Path(__file__).resolve().parents[1] / "rulemip" / "data" / "bundled"
    out = bundled / "diabetes_small.csv"
    sub.to_csv(out, index=False)
    print(f"wrote {out} ({len(sub)} rows)")


if __name__ == "__main__":
    main()
