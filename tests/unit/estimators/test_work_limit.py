"""The deterministic work limit (issue 30, item 11): a fit limited by work, not by the
clock, returns the same model, bound and status on every run; a tiny work limit ends with
a valid bound and status ``feasible``."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from rulemip.budget import Budget
from rulemip.estimators import ExactRuleEnsembleClassifier, ExactRuleEnsembleRegressor
from rulemip.exceptions import InvalidParameterError, SolveLimitWarning
from rulemip.testing.brute_force import brute_force_optimum

pytest.importorskip("highspy")

#: the wall-clock limit of these tests is a safety net only: the work limit must end them
GENEROUS = 300.0


# ------------------------------------------------------------------ the counter
def test_work_counter_is_shared_and_split_like_time():
    b = Budget.from_time_limit(None, work_limit=100)
    assert b.deterministic and b.bounded and b.work_left() == 100
    b.charge(10)
    part = b.fraction(0.5)                   # half of the 90 left
    assert part.work_left() == 45
    part.charge(45)
    assert part.expired() and part.stop_reason() == "work"
    assert not b.expired() and b.work_left() == 45 and b.work_spent() == 55
    same = b.within(10.0)                    # a shorter clock shares the work
    same.charge(45)
    assert b.expired() and b.stop_reason() == "work"
    free = Budget.unlimited()
    free.charge(10**9)
    assert not free.expired() and not free.deterministic and not free.bounded


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "10"])
def test_bad_work_limits_are_refused_by_name(bad):
    with pytest.raises(InvalidParameterError, match="work_limit"):
        Budget.from_time_limit(None, work_limit=bad)
    with pytest.raises(InvalidParameterError, match="work_limit"):
        ExactRuleEnsembleRegressor(work_limit=bad).fit(np.eye(4), np.arange(4.0))


def test_numpy_integer_work_limit_is_accepted():
    assert Budget.from_time_limit(None, work_limit=np.int64(7)).work_left() == 7


# ------------------------------------------------------------------ the estimators
def _data(seed=0, n=80, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = X[:, 0] * (X[:, 1] > 0) + np.sin(2 * X[:, 2]) + 0.3 * rng.normal(size=n)
    return X, y


def _fingerprint(est):
    r = est.result_
    return (json.dumps(est.rules_.to_dict(), sort_keys=True), r.risk, r.lower_bound,
            r.termination, r.limit, est.certificate_.options["work_spent"])


# units are not seconds: a node of the box branch and bound (a Frank-Wolfe bound) or an
# OA master costs far more than a branching of the compiled box search
@pytest.mark.parametrize("params,work", [
    (dict(n_rules=3), 1500),                   # COB start, local phase, CIP, swaps, kicks
    (dict(n_rules=2), 1500),                   # ... and the two-rule branch and bound
    (dict(n_rules=3, engine="cg"), 1500),
    (dict(n_rules=2, engine="cip-bnb", preset=None), 30),
    # the interval-cover MIP on the default backend (SCIP natively, else tangent cuts)
    (dict(n_rules=2, engine="mip", reg=0.0, preset=None, max_thresholds=3), 12),
], ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()) if isinstance(p, dict) else p)
def test_work_limited_fits_repeat_exactly(params, work):
    X, y = _data()
    fits = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolveLimitWarning)
            est = ExactRuleEnsembleRegressor(**({"max_thresholds": 6} | params),
                                             work_limit=work, time_limit=GENEROUS).fit(X, y)
        fits.append(_fingerprint(est))
    assert fits[0] == fits[1]
    assert est.certificate_.options["work_limit"] == work
    assert est.certificate_.options["work_spent"] > 0


def test_classifier_work_limited_fits_repeat_exactly():
    X, y = _data(1)
    labels = (y > np.median(y)).astype(int)
    fits = []
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SolveLimitWarning)
            est = ExactRuleEnsembleClassifier(2, max_thresholds=3, work_limit=20,
                                              time_limit=GENEROUS).fit(X, labels)
        fits.append(_fingerprint(est))
    assert fits[0] == fits[1]


def test_tiny_work_limit_ends_with_a_valid_bound():
    """A work limit far too small to prove anything: the fit returns a model of the
    language, status ``feasible`` with the node (work) limit named, and a lower bound
    at most the brute-force optimum."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(14, 2))
    y = 2.0 * (X[:, 0] > 0.2) - (X[:, 1] > -0.3) + 0.5 * rng.normal(size=14)
    opt = brute_force_optimum(X, y, 2, reg=0.05, max_thresholds=3)
    with pytest.warns(SolveLimitWarning):
        est = ExactRuleEnsembleRegressor(2, reg=0.05, max_thresholds=3, preset=None,
                                         engine="cip-bnb", work_limit=1,
                                         time_limit=GENEROUS).fit(X, y)
    r = est.result_
    assert r.termination.value == "feasible" and r.limit is not None
    assert r.limit.value == "node"
    assert r.lower_bound <= opt.risk * (1 + 1e-9)
    assert r.risk >= opt.risk * (1 - 1e-9)
    assert len(est.rules_.rules) <= 2
    assert est.certificate_.status == "feasible"


def test_check_regressors_int_with_a_work_limit():
    """scikit-learn's integer-vs-float check at the default n_rules: under a time limit
    the two fits stopped at different nodes (failed 1 run in 2 at 2 s); under a work
    limit they stop at the same one."""
    from sklearn.utils.estimator_checks import check_regressors_int

    est = ExactRuleEnsembleRegressor(work_limit=500, time_limit=GENEROUS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(2):
            check_regressors_int(type(est).__name__, est)


def test_cli_fit_work_limit_repeats(tmp_path, capsys):
    from rulemip.cli import main

    X, y = _data(2, n=60)
    X = X[:, :2]
    path = tmp_path / "d.csv"
    path.write_text("a,b,y\n" + "\n".join(f"{a},{b},{t}" for (a, b), t in zip(X, y,
                                                                              strict=True)))
    outs = []
    for i in range(2):
        cert = tmp_path / f"c{i}.json"
        assert main(["fit", "--quiet", "--data", str(path), "--target", "y", "-k", "2",
                     "--work-limit", "400", "--time-limit", str(GENEROUS),
                     "--certificate", str(cert)]) == 0
        doc = json.loads(cert.read_text())
        outs.append((doc["ensemble"], doc["claims"]))
        assert doc["solver"]["options"]["work_limit"] == 400
    capsys.readouterr()
    assert outs[0] == outs[1]
    assert main(["fit", "--quiet", "--data", str(path), "--target", "y",
                 "--work-limit", "0"]) == 2
