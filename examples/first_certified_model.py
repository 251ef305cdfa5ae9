"""Tutorial: a first certified 3-rule model, its certificate, and boosting's gap.

Run:  python examples/first_certified_model.py [--small] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import rulemip


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", action="store_true", help="fewer rules (used by the tests)")
    parser.add_argument("--out", default=None, help="where to write the certificate")
    args = parser.parse_args(argv)

    X, y = rulemip.load_bundled()  # 100 patients: bmi, bp, s5 -> disease progression
    k = 2 if args.small else 3
    model = rulemip.ExactRuleEnsembleRegressor(n_rules=k, max_thresholds=2, reg=1.0,
                                               preset="COB", time_limit=120)
    model.fit(X, y)
    print(model.rules_)
    print(model.certificate_.summary())
    print(f"boosting (COB) risk {model.boosting_risk_:.6g} -> exact {model.certificate_.risk:.6g}")

    out = Path(args.out or tempfile.mkdtemp())
    path = model.certificate_.save(out / "certificate.json")
    report = rulemip.verify(path, X, y)
    print(report)
    assert report.ok


if __name__ == "__main__":
    main()
