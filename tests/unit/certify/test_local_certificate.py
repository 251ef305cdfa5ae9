"""The certificate's 1-swap optimality claim: recorded by the exact estimator, shown in
the summary, round-tripped through JSON, re-derived by verify — and rejected when false."""

from __future__ import annotations

import dataclasses
import time
import warnings

import numpy as np
import pytest

from rulemip.algorithms.local.rule_swaps import refit_ensemble, swap_descent
from rulemip.certify import Certificate, make_certificate, verify
from rulemip.data import Dataset, candidate_thresholds
from rulemip.estimators.exact import ExactRuleEnsembleRegressor
from rulemip.exceptions import CertificateError
from rulemip.rules.ensemble import conditions_from_box
from rulemip.rules.rule import Rule
from rulemip.testing.brute_force import distinct_boxes


def _data(seed: int = 1, n: int = 40):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = 2.0 * (X[:, 0] > 0) - 1.0 * (X[:, 1] < 0.3) + 0.4 * rng.normal(size=n)
    return X, y


def _claim(ds: Dataset, ens, th, reg: float, k: int, proved: bool = True) -> Certificate:
    risk = float(ens.risk(ds.X, ds.y, reg=reg))
    cert = make_certificate(ds, ens, loss="squared", reg=reg, fit_intercept=True, n_rules=k,
                            thresholds=th, risk=risk, lower_bound=0.0, status="feasible",
                            bound_valid=True, options={"max_thresholds": 4})
    return dataclasses.replace(cert, local_optimality={"kind": "1-swap", "proved": proved,
                                                       "tol": 1e-9, "searches": []})


def test_true_claim_verifies_and_round_trips():
    X, y = _data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 4, None)
    start, _ = refit_ensemble(ds, [], reg=0.01, fit_intercept=True)
    out = swap_descent(ds, start, 2, reg=0.01, fit_intercept=True, thresholds=th)
    assert out.one_swap_optimal
    cert = _claim(ds, out.ensemble, th, 0.01, 2)
    again = Certificate.from_json(cert.to_json())
    assert again.local_optimality == cert.local_optimality
    assert "local: 1-swap optimal" in again.summary()
    report = verify(again, X, y)
    assert report.ok, str(report)
    assert any(c.name == "1-swap optimality" and c.ok for c in report.checks)


def test_false_claim_is_rejected():
    """A model that one swap improves (brute force confirms it) claimed 1-swap optimal:
    every other check passes, the replay fails."""
    X, y = _data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 4, None)
    poor = [Rule(conditions_from_box([-np.inf, th[1][0]], [np.inf, np.inf]), 1.0)]
    ens, risk = refit_ensemble(ds, poor, reg=0.01, fit_intercept=True)
    _, Q = distinct_boxes(ds.X, th, fit_intercept=True)
    # brute force: some box added in the empty second slot lowers the risk
    Q1 = ens.query_matrix(ds.X)
    gains = [_ridge_risk(np.column_stack([Q1, Q[:, b]]), ds.y, 0.01)
             for b in range(Q.shape[1])]
    assert min(gains) < risk - 1e-6
    report = verify(_claim(ds, ens, th, 0.01, 2), X, y)
    failed = [c.name for c in report.failures]
    assert failed == ["1-swap optimality"], str(report)


def _ridge_risk(A: np.ndarray, y: np.ndarray, reg: float) -> float:
    n = len(y)
    B = np.column_stack([np.ones(n), A])
    pen = np.diag([0.0] + [reg] * A.shape[1])
    coef = np.linalg.solve(B.T @ B + pen, B.T @ y)
    res = y - B @ coef
    return float(res @ res + reg * coef[1:] @ coef[1:]) / n


def test_malformed_local_record_is_refused():
    X, y = _data()
    ds = Dataset.from_arrays(X, y, loss="squared")
    th = candidate_thresholds(ds.X, 4, None)
    ens, _ = refit_ensemble(ds, [], reg=0.01, fit_intercept=True)
    doc = _claim(ds, ens, th, 0.01, 2).to_dict()
    doc["local_optimality"] = {"kind": "2-swap", "proved": True}
    with pytest.raises(CertificateError, match="local_optimality"):
        Certificate.from_dict(doc)


def test_estimator_spends_its_budget_and_records_one_swap_optimality():
    """Not proved globally: the fit uses its time limit, ends 1-swap optimal (verified by
    replay) and is never worse than its COB warm start."""
    X, y = _data(3, n=80)
    est = ExactRuleEnsembleRegressor(n_rules=3, time_limit=6, engine="cg", max_thresholds=5)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    elapsed = time.perf_counter() - t0
    cert = est.certificate_
    if not cert.is_optimal:
        assert 0.9 * 6 <= elapsed <= 6 + 3.0
        assert cert.local_optimality is not None and cert.local_optimality["proved"]
        assert "local: 1-swap optimal" in cert.summary()
    assert cert.risk <= est.boosting_risk_ + 1e-12
    assert verify(cert, X, y).ok


def test_cli_fit_prints_the_local_line_and_verify_replays_it(tmp_path, capsys):
    """`rulemip fit` on a table the engine does not close within 8 s: the certificate
    claims 1-swap optimality, the output says so next to the gap, verify re-derives it."""
    import json

    import pandas as pd

    from rulemip.cli import main

    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 4))
    y = np.sin(2 * X[:, 0]) + X[:, 1] * (X[:, 2] > 0) + 0.3 * rng.normal(size=120)
    frame = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    frame["y"] = y
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    cert = tmp_path / "cert.json"
    assert main(["fit", "--quiet", "--data", str(path), "--target", "y", "-k", "3",
                 "--reg", "0.001", "--time-limit", "8", "--certificate", str(cert)]) == 0
    out = capsys.readouterr().out
    doc = json.loads(cert.read_text())
    if doc["claims"]["status"] != "optimal":
        assert doc["local_optimality"]["proved"] is True
        assert "local:                          1-swap optimal" in out
    assert main(["verify", str(cert), "--data", str(path), "--target", "y"]) == 0
    assert "1-swap optimality" in capsys.readouterr().out or \
        doc["claims"]["status"] == "optimal"
