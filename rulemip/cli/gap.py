"""``rulemip gap``: how far from optimal is boosting on this data, k by k?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rulemip.cli._common import read_table


def register(sub: Any) -> None:
    p = sub.add_parser(
        "gap", help="boosting vs the certified optimum, k by k (approximation gaps)",
        description="Run boosting variants and the exact engine for k = 1..K and write the "
                    "certified gap table (CSV, JSON), the certificates and figures. Several "
                    "--data files make a sweep (resumable; parallel with --jobs or a Dask "
                    "--scheduler) and add the gap-distribution figure against Theorem 1.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--data", nargs="+", required=True, metavar="FILE.csv",
                   help="one or more CSV files (all with the --target column)")
    p.add_argument("--target", required=True, metavar="COLUMN", help="column to predict")
    p.add_argument("--k-max", type=int, default=5, help="largest number of rules")
    p.add_argument("--variants", nargs="+",
                   default=["SGS", "SGB", "SXB", "CGB", "COB", "MIP-boosting"],
                   help="boosting presets and/or MIP-boosting")
    p.add_argument("--loss", choices=["squared", "logistic", "poisson"], default="squared")
    p.add_argument("--reg", type=float, default=1e-6, help="ridge lambda")
    p.add_argument("--intercept", action="store_true",
                   help="fit an intercept (the theory of [GAP] has none)")
    p.add_argument("--max-thresholds", type=int, default=5,
                   help="cut points per feature (0 = all midpoints)")
    p.add_argument("--max-rule-length", type=int, default=None)
    p.add_argument("--engine", choices=["auto", "cip", "cip-bnb", "mip"], default="auto")
    p.add_argument("--solver", default="auto")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per exact solve")
    p.add_argument("--splits", type=int, default=0,
                   help="number of random 80%% subsamples per dataset (0 = full data only)")
    p.add_argument("--jobs", type=int, default=1, help="parallel joblib workers")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run the sweep on this Dask scheduler")
    p.add_argument("--out", default="gap-study", metavar="DIR", help="output directory")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rulemip.certify.gap import summarize
    from rulemip.certify.theory import classify_gaps
    from rulemip.plotting import plot_gap_cdf, plot_risk_vs_k
    from rulemip.sweeps import load_certificates, make_tasks, run_sweep

    data = {}
    for path in args.data:
        data[Path(path).stem] = read_table(path, args.target)
    splits = [0] if args.splits == 0 else list(range(1, args.splits + 1))
    tasks = make_tasks(data, args.k_max, args.variants, splits, loss=args.loss, reg=args.reg,
                       fit_intercept=args.intercept,
                       max_thresholds=None if args.max_thresholds == 0 else args.max_thresholds,
                       max_rule_length=args.max_rule_length, engine=args.engine,
                       solver=args.solver, time_limit=args.time_limit)
    out = Path(args.out)
    table = run_sweep(tasks, data, out, n_jobs=args.jobs, scheduler=args.scheduler,
                      progress=print)
    table.to_csv(out / "gap_table.csv", index=False)
    table.to_json(out / "gap_table.json", orient="records", indent=2)
    cert_dir = out / "certificates"
    for task_id, cert in load_certificates(tasks, out).items():
        cert.save(cert_dir / f"{task_id}.json")
    gaps, ks = [], []
    for (name, split), grp in table.groupby(["dataset", "split"], sort=True):
        null = float(grp["null_risk"].iloc[0])
        summary = summarize(grp, null)
        print(f"\n{name} (split {split}):")
        print(summary.to_string())
        plot_risk_vs_k(grp, out / "figures" / f"risk_vs_k_{name}_s{split}.png", title=name)
        best = summary["diff_max_norm"].idxmax()
        gaps.append(float(summary.loc[best, "diff_max_norm"]))
        ks.append(int(summary.loc[best, "k_star"]))
    if gaps:
        plot_gap_cdf(gaps, ks, out / "figures" / "gap_cdf.png")
        cls = classify_gaps(gaps, ks)
        print(f"\nagainst Theorem 1: {cls.quadrant}")
    print(f"\nwritten to {out}/ (gap_table.csv, gap_table.json, certificates/, figures/)")
    return 0

