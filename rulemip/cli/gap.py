"""``rulemip gap``: how far from optimal is boosting on this data, k by k?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rulemip.cli._common import (
    add_categorical_argument,
    add_engine_arguments,
    add_max_thresholds_argument,
    check_output_dir,
    parse_max_thresholds,
    read_table,
)
from rulemip.cli._progress import Progress, progress_wanted


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
    add_categorical_argument(p)
    p.add_argument("--variants", nargs="+",
                   default=["SGS", "SGB", "SXB", "CGB", "COB", "MIP-boosting"],
                   help="boosting presets and/or MIP-boosting")
    p.add_argument("--loss", choices=["squared", "logistic", "poisson"], default="squared",
                   help="loss; logistic needs a two-class target, poisson y >= 0")
    p.add_argument("--reg", type=float, default=1e-6, help="ridge lambda")
    p.add_argument("--intercept", action="store_true",
                   help="fit an intercept (the theory of the gap paper has none)")
    add_max_thresholds_argument(p, 5)
    p.add_argument("--max-rule-length", type=int, default=None,
                   help="maximum number of features one rule may restrict (default: no "
                        "limit)")
    add_engine_arguments(p)
    p.add_argument("--solver", default="auto",
                   help="backend: auto, highs, scip, cpsat, cbc, pyomo or pyomo:NAME")
    p.add_argument("--time-limit", type=float, default=60.0,
                   help="seconds per k and dataset, every phase (boosting and the exact "
                        "solve) included")
    p.add_argument("--splits", type=int, default=0,
                   help="number of random 80%% subsamples per dataset (0 = full data only)")
    p.add_argument("--jobs", type=int, default=1,
                   help="parallel joblib workers (-1: one per core)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                   help="run the sweep on this Dask scheduler")
    p.add_argument("--out", default="gap-study", metavar="DIR", help="output directory")
    p.add_argument("--progress", action="store_true",
                   help="show a live progress bar on stderr even when it is not a terminal")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rulemip.certify.gap import summarize
    from rulemip.certify.theory import classify_gaps
    from rulemip.exceptions import InvalidParameterError
    from rulemip.plotting import plot_gap_cdf, plot_risk_vs_k
    from rulemip.sweeps import load_certificates, make_tasks, run_sweep

    if args.k_max < 1:
        raise InvalidParameterError(f"`--k-max` must be a positive integer; got {args.k_max}.")
    if args.splits < 0:
        raise InvalidParameterError(
            f"`--splits` must be >= 0 (0 = the full data only); got {args.splits}.")
    if args.jobs < 1 and args.jobs != -1:
        raise InvalidParameterError(
            f"`--jobs` must be a positive integer (or -1 for one per core); got {args.jobs}.")
    max_thresholds = parse_max_thresholds(args.max_thresholds)
    out = check_output_dir(args.out, "--out")
    data = {name: read_table(path, args.target, categorical=args.categorical)
            for name, path in zip(dataset_names(args.data), args.data, strict=True)}
    splits = [0] if args.splits == 0 else list(range(1, args.splits + 1))
    tasks = make_tasks(data, args.k_max, args.variants, splits, loss=args.loss, reg=args.reg,
                       fit_intercept=args.intercept, max_thresholds=max_thresholds,
                       max_rule_length=args.max_rule_length, engine=args.engine,
                       solver=args.solver, time_limit=args.time_limit)
    progress = Progress(progress_wanted(args.progress, args.quiet))
    with progress:
        progress.phase(f"gap sweep: {len(tasks)} task(s)")
        table = run_sweep(tasks, data, out, n_jobs=args.jobs, scheduler=args.scheduler,
                          progress=print, on_task=progress.bar)
    table.to_csv(out / "gap_table.csv", index=False)
    table.to_json(out / "gap_table.json", orient="records", indent=2)
    cert_dir = out / "certificates"
    remove_stale_certificates(cert_dir, tasks)
    for task_id, cert in load_certificates(tasks, out).items():
        cert.save(cert_dir / f"{task_id}.json")
    gaps, ks = [], []
    for (name, split), grp in table.groupby(["dataset", "split"], sort=True):
        null = float(grp["null_risk"].iloc[0])
        summary = summarize(grp, null)
        print(f"\n{name} (split {split}):")
        print(summary.to_string())
        plot_risk_vs_k(grp, out / "figures" / f"risk_vs_k_{name}_s{split}.png", title=name)
        norm = summary["diff_max_norm"]
        if not norm.notna().any():
            # R(f_∅) = 0 (constant y with an intercept, one row, identical rows): the
            # constant model is exact, and a gap normalized by it is undefined
            print(f"R(f_∅) = {null:.6g}: the model without rules fits exactly, so this "
                  "gap cannot be normalized; it is left out of the comparison with "
                  "Theorem 1.")
            continue
        best = norm.idxmax()
        gaps.append(float(summary.loc[best, "diff_max_norm"]))
        ks.append(int(summary.loc[best, "k_star"]))
    if gaps:
        plot_gap_cdf(gaps, ks, out / "figures" / "gap_cdf.png")
        cls = classify_gaps(gaps, ks)
        print(f"\nagainst Theorem 1: {cls.quadrant}")
    else:
        (out / "figures" / "gap_cdf.png").unlink(missing_ok=True)  # a previous run's
    print(f"\nwritten to {out}/ (gap_table.csv, gap_table.json, certificates/, figures/)")
    return 0



def remove_stale_certificates(cert_dir: Path, tasks: list[Any]) -> list[Path]:
    """Delete the certificates a previous ``rulemip gap`` wrote into ``cert_dir`` that
    belong to no task of this run (e.g. the data changed, so the task ids did): files
    named like a task id (``<dataset>__s<split>__k<k>__<10 hex>.json``) only — other
    files are not ours and stay. Returns the removed paths."""
    import re

    if not cert_dir.is_dir():
        return []
    ours = re.compile(r".+__s\d+__k\d+__[0-9a-f]{10}\.json")
    current = {f"{t.task_id}.json" for t in tasks}
    removed = []
    for path in cert_dir.iterdir():
        if path.is_file() and ours.fullmatch(path.name) and path.name not in current:
            path.unlink()
            removed.append(path)
    return removed


def dataset_names(paths: list[str]) -> list[str]:
    """One distinct name per input file: its stem, lengthened by parent folders where two
    stems collide (``a/x.csv``, ``b/x.csv`` -> ``a_x``, ``b_x``); the same file given twice
    is refused."""
    from rulemip.exceptions import InvalidParameterError

    resolved = [Path(p).resolve() for p in paths]
    if len(set(resolved)) != len(resolved):
        dup = sorted({str(p) for p in paths if resolved.count(Path(p).resolve()) > 1})
        raise InvalidParameterError(f"`--data` lists the same file twice: {dup}.")
    def name(r: Path, depth: int) -> str:
        return "_".join([*r.parent.parts[len(r.parent.parts) - depth + 1:], r.stem])

    depths = [1] * len(resolved)
    while True:
        names = [name(r, d) for r, d in zip(resolved, depths, strict=True)]
        clash = [i for i, n in enumerate(names) if names.count(n) > 1]
        if not clash:
            return names
        for i in clash:
            depths[i] += 1
