"""Issue 38, item 5: numpy scalars as parameters. ``max_rule_length=np.int64(2)`` failed
after the solve ("Object of type int64 is not JSON serializable"), numpy
``max_thresholds``, ``time_limit``, ``mip_gap`` or ``work_limit`` fitted but the
certificate could not be saved, and ``gap_study`` refused ``max_thresholds=np.int64(2)``.
Parameters are normalized where they enter (:func:`rulemip._validation.python_scalar`):
every fit below saves and reloads its certificate, which verifies."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from rulemip import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor, load_bundled
from rulemip.certify import Certificate, gap_study, make_certificate, verify
from rulemip.data import Dataset, candidate_thresholds
from rulemip.rules import RuleEnsemble
from rulemip.rules.problem import KRuleProblem

NUMPY_PARAMS = {
    "max_rule_length": [np.int64(2), np.int32(2)],
    "max_thresholds": [np.int64(3), np.uint8(3)],
    "time_limit": [np.int64(30), np.float32(30.0), np.float64(30.0)],
    "mip_gap": [np.float32(1e-6), np.float64(1e-6)],
    "work_limit": [np.int64(100_000)],
    "n_rules": [np.int64(2)],
    "reg": [np.float32(1e-3)],
}
CASES = [(name, value) for name, values in NUMPY_PARAMS.items() for value in values]


def test_python_scalar_unwraps_numpy_scalars_and_nothing_else():
    from rulemip._validation import python_scalar

    for value, expected in ((np.int64(2), 2), (np.float32(0.5), 0.5), (np.bool_(True), True),
                            (np.uint8(3), 3)):
        out = python_scalar(value)
        assert out == expected and type(out) is type(expected)
    assert python_scalar({"a": [np.int64(1), (np.float64(2.0), None)], "b": "x"}) == \
        {"a": [1, (2.0, None)], "b": "x"}
    assert json.dumps(python_scalar({"a": [np.int64(1), np.float32(2.0)]}))
    arr = np.arange(3)
    assert python_scalar(arr) is arr      # arrays are not scalars: left alone


@pytest.mark.filterwarnings("ignore::rulemip.exceptions.SolveLimitWarning")
@pytest.mark.parametrize(("name", "value"), CASES,
                         ids=[f"{n}={type(v).__name__}" for n, v in CASES])
def test_a_numpy_parameter_fits_and_its_certificate_saves_and_loads(name, value, tmp_path):
    X, y = load_bundled("diabetes_small")
    params = {"n_rules": 2, "max_thresholds": 3, "max_rule_length": 2, name: value}
    cert = ExactRuleEnsembleRegressor(**params).fit(X, y).certificate_
    again = Certificate.load(cert.save(tmp_path / "c.json"))
    assert again.to_dict() == cert.to_dict()
    recorded = {"max_rule_length": again.max_rule_length, "n_rules": again.n_rules,
                "reg": again.reg, **again.options}[name]
    assert type(recorded) in (int, float) and recorded == pytest.approx(float(value))
    assert verify(again, X, y).ok


def test_a_numpy_parameter_of_the_classifier(tmp_path):
    X, y = load_bundled("diabetes_small")
    labels = (y > np.median(y)).astype(int)
    cert = ExactRuleEnsembleClassifier(n_rules=1, max_thresholds=np.int64(3),
                                       max_rule_length=np.int64(2), mip_gap=np.float32(1e-6),
                                       work_limit=np.int64(100_000)).fit(X, labels).certificate_
    assert verify(Certificate.load(cert.save(tmp_path / "c.json")), X, labels).ok


def test_make_certificate_records_numpy_options_as_python_numbers(tmp_path):
    X, y = load_bundled("diabetes_small")
    ds = Dataset.from_arrays(X, y)
    ens = RuleEnsemble([], float(np.mean(y)), "squared", ds.encoder)
    risk = float(ens.risk(ds.X, ds.y))
    problem = KRuleProblem.of(ds, 1, loss="squared", reg=0.0, fit_intercept=True,
                              thresholds=candidate_thresholds(ds.X, 2), max_rule_length=np.int64(1))
    cert = make_certificate(problem, ens, risk=risk, lower_bound=0.0, status="feasible",
                            bound_valid=True, options={"max_thresholds": np.int64(2),
                                     "limits": [np.float32(1.5), np.int64(3)]})
    assert cert.threshold_rule == 2       # the numpy hint is recognised
    doc = json.loads(cert.to_json())
    assert doc["problem"]["max_rule_length"] == 1
    assert doc["solver"]["options"] == {"max_thresholds": 2, "limits": [1.5, 3]}
    assert verify(Certificate.load(cert.save(tmp_path / "c.json")), X, y).ok


def test_verify_takes_a_numpy_tolerance():
    X, y = load_bundled("diabetes_small")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cert = ExactRuleEnsembleRegressor(n_rules=1, max_thresholds=3).fit(X, y).certificate_
    assert verify(cert, X, y, tol=np.float32(1e-7), mip_gap=np.float64(1e-6)).ok


@pytest.mark.filterwarnings("ignore::rulemip.exceptions.SolveLimitWarning")
def test_gap_study_accepts_numpy_integers(tmp_path):
    X, y = load_bundled("diabetes_small")
    study = gap_study(X[:40], y[:40], np.int64(1), ["SGB"], max_thresholds=np.int64(2),
                      max_rule_length=np.int64(1), time_limit=np.float32(20.0),
                      mip_gap=np.float32(1e-6), work_limit=np.int64(10_000))
    cert = study.certificates[1]
    assert cert.threshold_rule == 2
    assert verify(Certificate.load(cert.save(tmp_path / "c.json")), X[:40], y[:40]).ok
