"""``rulemip verify``: re-check a certificate against data."""

from __future__ import annotations

import argparse
from typing import Any

from rulemip.cli._common import add_data_arguments, read_table


def register(sub: Any) -> None:
    p = sub.add_parser(
        "verify", help="re-check a certificate against the data",
        description="Recompute the certified model's risk from the data and check every "
                    "claim of the certificate that can be checked without re-solving. "
                    "Exit code 0 if it verifies, 1 if any check fails.")
    p.add_argument("certificate", metavar="CERT.json", help="certificate written by `fit`")
    add_data_arguments(p, required=False)
    p.add_argument("--bundled", action="store_true",
                   help="check against the bundled diabetes_small data (what `rulemip fit` "
                        "uses without --data) instead of --data/--target")
    p.add_argument("--tol", type=float, default=1e-7,
                   help="relative tolerance on risks, >= 0 (relative to the recomputed risk; on "
                        "a lower bound, relative to the bound with a round-off floor of "
                        "1e-12 times the data's second moment)")
    p.add_argument("--mip-gap", type=float, default=1e-6,
                   help="verify's own relative gap for status 'optimal' (default 1e-6): within "
                        "only the looser mip_gap the fit recorded, 'optimal' is taken on trust "
                        "(and fails --strict)")
    p.add_argument("--thresholds", metavar="FILE.json",
                   help="the explicit cut points the fit was given (a JSON list with one list "
                        "per feature): re-derives a certificate's explicit thresholds "
                        "instead of taking them on trust")
    p.add_argument("--strict", action="store_true",
                   help="fail when the thresholds or an 'optimal' status are taken on trust "
                        "(only the lower bound, which a new solve re-derives, may be)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from rulemip.certify import Certificate, verify
    from rulemip.data import load_bundled
    from rulemip.exceptions import InvalidParameterError

    if args.bundled and args.data is not None:
        raise InvalidParameterError("give either --data/--target or --bundled, not both.")
    if not args.bundled and (args.data is None or args.target is None):
        raise InvalidParameterError(
            "a certificate is checked against data: give --data FILE.csv --target COLUMN "
            "(the data it was fitted on), or --bundled for the bundled diabetes_small data.")
    cert = Certificate.load(args.certificate)
    if args.bundled:
        X, y = load_bundled("diabetes_small")
        print("data: bundled diabetes_small (100 rows; bmi, bp, s5 -> progression)")
    else:
        # the columns the model encoded by level are read as text, as `--categorical` did
        encoder = cert.ensemble.encoder
        categorical = tuple(encoder.categories) if encoder is not None else ()
        X, y = read_table(args.data, args.target, categorical=[
            c for c in categorical if c != args.target])
        print(f"data: {args.data} (target {args.target!r}, {len(X)} rows)")
    thresholds = None if args.thresholds is None else _read_thresholds(args.thresholds)
    report = verify(cert, X, y, tol=args.tol, thresholds=thresholds, strict=args.strict,
                    mip_gap=args.mip_gap)
    print(report)
    return 0 if report.ok else 1


def _read_thresholds(path: str) -> Any:
    """``--thresholds FILE.json``: a JSON list with one list of cut points per feature
    (checked against the data's feature count by :func:`rulemip.certify.verify`)."""
    import json
    from pathlib import Path

    from rulemip.exceptions import InvalidParameterError

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidParameterError(
            f"`--thresholds`: cannot read {path!r} as JSON ({exc}); give a file with a JSON "
            "list of cut-point lists, one per feature, e.g. [[0.5, 1.5], [2.0]].") from None
    if not isinstance(doc, list) or not all(isinstance(t, list) for t in doc):
        raise InvalidParameterError(
            f"`--thresholds`: {path!r} must hold a JSON list of cut-point lists, one per "
            "feature, e.g. [[0.5, 1.5], [2.0]].")
    return doc
