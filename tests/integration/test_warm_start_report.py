"""A printed boosting model is the boosting model: a warm start cut short by its share of
the time limit says so on the estimator, in the result's notes and on the command line;
one that ran to its end says nothing."""

import pytest

from rulemip import ExactRuleEnsembleRegressor, load_bundled
from rulemip.algorithms import fit_plan
from rulemip.cli import main

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


@pytest.fixture
def no_warm_start_time(monkeypatch):
    """The warm start's share of the budget is (deterministically) nothing: every rule
    search of the boosting warm start stops at once (and every round starts: no grace
    ends, whatever the machine's load)."""
    from rulemip.boosting import booster

    monkeypatch.setattr(fit_plan, "SHARES", fit_plan.FitShares(warm_start=1e-12))
    monkeypatch.setattr(booster, "ROUND_GRACE", 1e9)


def test_a_cut_short_warm_start_says_so(no_warm_start_time):
    X, y = load_bundled()
    est = ExactRuleEnsembleRegressor(3, max_thresholds=2, reg=1.0, time_limit=60).fit(X, y)
    assert est.warm_start_limited_
    assert est.warm_start_limit_ == "time limit: 3 of 3 rule searches stopped"
    notes = " ".join(est.result_.notes)
    assert "warm start (COB) was cut short" in notes
    assert "warm start (COB) was cut short" in " ".join(est.certificate_.notes)


def test_a_warm_start_run_to_its_end_says_nothing():
    X, y = load_bundled()
    est = ExactRuleEnsembleRegressor(3, max_thresholds=2, reg=1.0, time_limit=60).fit(X, y)
    assert not est.warm_start_limited_ and est.warm_start_limit_ is None
    assert "cut short" not in " ".join(est.result_.notes)


def test_the_command_line_prints_a_cut_short_boosting_risk_as_such(no_warm_start_time,
                                                                  capsys):
    assert main(["fit", "--quiet", "--time-limit", "60"]) == 0
    out = capsys.readouterr().out
    boosting = next(line for line in out.splitlines() if line.startswith("boosting (COB)"))
    assert "cut short by its share of the time limit, time limit: 3 of 3 rule searches" \
        in boosting
    excess = next(line for line in out.splitlines() if line.startswith("boosting's"))
    assert excess.endswith("(of the cut-short warm start above)")


def test_the_command_line_boosting_lines_are_plain_when_boosting_ran_to_its_end(capsys):
    assert main(["fit", "--quiet", "--time-limit", "60"]) == 0
    out = capsys.readouterr().out
    assert "boosting (COB) training risk: 2424.34\n" in out
    assert "cut short" not in out
