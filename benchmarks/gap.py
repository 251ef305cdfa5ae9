"""Gap-study benchmark (issue: approximation-gap studies).

(a) wall time of a full k = 1..K study per dataset size (diabetes subsamples, 2 features,
    6 threshold groups per feature, all boosting presets + MIP-boosting), and
(b) the speed-up of a joblib / Dask sweep over a serial run of the same tasks.

    python benchmarks/gap.py                      # K = 10, n in {50, 100, 200}
    python benchmarks/gap.py --quick              # K = 4, n in {50, 100}
    python benchmarks/gap.py --reg 100 --time-limit 30

Rows stopped by the time limit keep their valid interval; the table counts how many
exact rows were certified optimal and reports the largest normalized lower end of the
certified gap interval (``gap_lo_norm``, what boosting provably loses).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from sklearn.datasets import load_diabetes

from rulemip.certify.gap import gap_study
from rulemip.sweeps import make_tasks, run_sweep


def subsample(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    data = load_diabetes()
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(data.target), size=n, replace=False)
    return data.data[rows][:, [2, 8]], data.target[rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--time-limit", type=float, default=60.0,
                        help="seconds per exact solve")
    parser.add_argument("--reg", type=float, default=10.0,
                        help="ridge lambda (R = (sum loss + lambda |beta|^2) / n)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None)
    parser.add_argument("--engine", default="auto", choices=["auto", "cip", "cip-bnb", "mip"],
                        help="exact engine of every k")
    parser.add_argument("--skip-sweep", action="store_true", help="only part (a)")
    args = parser.parse_args()
    k_max = 4 if args.quick else 10
    sizes = args.sizes or ((50, 100) if args.quick else (50, 100, 200))
    common = dict(reg=args.reg, max_thresholds=5, fit_intercept=True,
                  time_limit=args.time_limit, engine=args.engine)
    print(f"reg {args.reg:g}, 5 thresholds per feature, time limit {args.time_limit:g} s, "
          f"engine {args.engine}")

    print(f"(a) full study k = 1..{k_max}, variants SGS SGB SXB CGB COB MIP-boosting")
    print(f"{'n':>5} {'wall s':>8} {'optimal rows':>13} {'max gap_lo_norm':>16}")
    summaries = []
    for n in sizes:
        X, y = subsample(n)
        t0 = time.perf_counter()
        study = gap_study(X, y, k_max, **common)
        wall = time.perf_counter() - t0
        exact = study.table.drop_duplicates("k")
        n_opt = int((exact["status"] == "optimal").sum())
        print(f"{n:>5} {wall:8.1f} {n_opt:>6}/{len(exact):<6} "
              f"{study.table['gap_lo_norm'].max():16.4f}")
        summaries.append((n, study.summary))
    for n, summary in summaries:
        print(f"\nper-variant summary, n = {n}:")
        print(summary.to_string())

    if args.skip_sweep:
        return
    print("\n(b) sweep of 3 datasets x k = 1..K: serial vs joblib(2) vs Dask LocalCluster(2)")
    data = {f"diabetes{s}": subsample(80, seed=s) for s in range(3)}
    tasks = make_tasks(data, min(k_max, 5), ["SGB", "COB"], reg=args.reg, max_thresholds=5,
                       fit_intercept=True, time_limit=args.time_limit)
    timings = {}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_sweep(tasks, data, f"{tmp}/serial")
        timings["serial"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        run_sweep(tasks, data, f"{tmp}/joblib", n_jobs=2)
        timings["joblib (2 processes)"] = time.perf_counter() - t0
        try:
            from distributed import Client, LocalCluster

            with LocalCluster(n_workers=2, threads_per_worker=1,
                              dashboard_address=None) as cluster, Client(cluster) as client:
                t0 = time.perf_counter()
                run_sweep(tasks, data, f"{tmp}/dask", scheduler=client)
                timings["dask (2 workers)"] = time.perf_counter() - t0
        except ImportError:
            print("dask.distributed not installed: skipped")
    base = timings["serial"]
    for name, t in timings.items():
        print(f"{name:>22}: {t:7.1f} s   speed-up {base / t:4.2f}x")


if __name__ == "__main__":
    main()
