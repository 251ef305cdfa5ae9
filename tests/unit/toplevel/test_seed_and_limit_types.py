"""Issue 30, items 9 and 10: seeds follow scikit-learn's convention and are refused up
front by their own name; time limits accept any real number type (numpy integers too) and
are checked by the value the user gave."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip import (
    ExactRuleEnsembleClassifier,
    ExactRuleEnsembleRegressor,
    RGBClassifier,
    RGBRegressor,
    RuleBoostingClassifier,
    RuleBoostingRegressor,
    TreeRuleExtractor,
)
from rulemip._validation import check_seed, seed_int
from rulemip.budget import Budget
from rulemip.certify import gap_study
from rulemip.exceptions import InvalidParameterError

ESTIMATORS = {
    "exact-reg": lambda **kw: ExactRuleEnsembleRegressor(1, max_thresholds=2, **kw),
    "exact-clf": lambda **kw: ExactRuleEnsembleClassifier(1, max_thresholds=2, **kw),
    "boost-reg": lambda **kw: RuleBoostingRegressor(2, **kw),
    "boost-clf": lambda **kw: RuleBoostingClassifier(2, **kw),
    "rgb-reg": lambda **kw: RGBRegressor(3, **kw),
    "rgb-clf": lambda **kw: RGBClassifier(3, **kw),
    "extractor": lambda **kw: TreeRuleExtractor(n_rules=2, **kw),
}


def _data(name):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + 0.1 * rng.normal(size=30)
    return X, ((y > 0).astype(int) if name.endswith("clf") else y)


@pytest.mark.parametrize("bad", [-5, 2**32, True, 1.5, "0", np.int64(-1)])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_bad_seed_is_refused_by_its_name_before_any_work(name, bad):
    est = ESTIMATORS[name](random_state=bad)
    X, y = _data(name)
    with pytest.raises(InvalidParameterError, match="`random_state` must be None, an integer"):
        est.fit(X, y)


def test_check_seed_follows_scikit_learns_convention():
    rs = np.random.RandomState(3)
    assert check_seed(None) is None and check_seed(rs) is rs
    assert check_seed(0) == 0 and check_seed(np.uint32(2**32 - 1)) == 2**32 - 1
    assert seed_int(None) == 0 and seed_int(np.int64(7)) == 7
    assert 0 <= seed_int(np.random.RandomState(0)) < 2**31
    with pytest.raises(InvalidParameterError, match="`--seed` must be"):
        check_seed(-5, "--seed")


@pytest.mark.filterwarnings("ignore::rulemip.exceptions.SolveLimitWarning")
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_numpy_integer_time_limits_are_accepted(name):
    limit = np.int64(1) if name == "extractor" else np.int64(5)
    X, y = _data(name)
    est = ESTIMATORS[name](time_limit=limit, random_state=np.random.RandomState(0)).fit(X, y)
    assert np.all(np.isfinite(est.predict(X)))


def test_budget_accepts_every_real_type_and_refuses_bool():
    for v in (np.int64(2), np.float32(2.0), np.uint8(2), 2, 2.0):
        assert 0 < Budget.from_time_limit(v).remaining() <= 2.0
    with pytest.raises(InvalidParameterError):
        Budget.from_time_limit(True)


@pytest.mark.parametrize("kw, message", [
    ({"time_limit": -1}, "`time_limit` must be > 0; got -1."),
    ({"time_limit": np.int64(-3)}, "got np.int64(-3)"),
    ({"mip_boosting_time_limit": -2}, "`mip_boosting_time_limit` must be > 0; got -2."),
    ({"seed": -5}, "`seed` must be None, an integer"),
])
def test_gap_study_checks_the_users_own_values(kw, message):
    X, y = _data("reg")
    with pytest.raises(InvalidParameterError) as err:
        gap_study(X, y, 2, **kw)
    assert message in str(err.value)


@pytest.mark.parametrize("command", [
    ["fit", "-k", "1", "--time-limit", "5"],
    ["prune", "--trees", "2", "--depth", "1", "--time-limit", "5"],
])
def test_cli_refuses_a_negative_seed_by_its_flag(command, tmp_path, capsys):
    pytest.importorskip("highspy")
    from rulemip.cli import main

    rng = np.random.default_rng(0)
    path = tmp_path / "t.csv"
    rows = ["a,b,y"] + [f"{a},{b},{a + b}" for a, b in rng.normal(size=(12, 2))]
    path.write_text("\n".join(rows) + "\n")
    code = main([*command, "--data", str(path), "--target", "y", "--seed", "-5"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "`--seed` must be None, an integer in [0, 2**32)" in err
    assert "Traceback" not in err


def test_pruning_loops_accept_numpy_reals_and_refuse_bools():
    from rulemip._validation import is_real
    from rulemip.algorithms.pruning.cbcd import _check_common

    assert is_real(np.int64(2)) and is_real(np.float32(0.5)) and is_real(3)
    assert not is_real(True) and not is_real(np.bool_(True)) and not is_real("1")
    _check_common(np.int64(1), 5, 0.0)
    with pytest.raises(InvalidParameterError, match="`lam`"):
        _check_common(True, 5, 0.0)
