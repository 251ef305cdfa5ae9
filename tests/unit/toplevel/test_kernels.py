"""Compiling the numba kernels before a fit's clock starts (rulemip._kernels): each group
is prepared once per process, the report says whether numba compiled, and the estimators
wait for it outside their time limit and record it in ``timings_``."""

import time

import pytest

from rulemip import _kernels
from rulemip._kernels import CompileReport, ensure_compiled, groups_for_fit
from rulemip.rules.language import Language


def test_a_group_is_prepared_once_per_process():
    ensure_compiled("levels")
    again = ensure_compiled("levels")
    assert again == CompileReport()          # nothing left to do: no time, no compile
    assert again.message is None


def test_unknown_groups_are_refused():
    with pytest.raises(ValueError, match="unknown kernel group"):
        ensure_compiled("nope")


def test_the_message_names_a_compile_and_only_a_compile():
    assert CompileReport(8.06, ("box",), ()).message == \
        "compiling kernels, first run only: 8.1 s"
    assert CompileReport(0.3, (), ("box", "levels")).message is None


def test_groups_for_fit():
    assert groups_for_fit(Language(3), loss="squared") == ("box", "levels")
    assert groups_for_fit(Language(3, max_rule_length=2), loss="squared") == \
        ("box", "levels", "kbox", "kbox3")
    assert groups_for_fit(Language(2), loss="squared") == ("box", "levels", "two_rule", "kbox")
    assert groups_for_fit(Language(2), loss="logistic") == ("box", "levels")
    assert groups_for_fit(Language(2), loss="squared", reg=0.0) == ("box", "levels", "kbox")
    assert groups_for_fit(Language(1), loss="squared", box_search=False) == ("levels",)


def test_every_group_is_compiled_or_loaded_once():
    report = ensure_compiled()               # the rest of the groups, if any
    assert set(report.compiled) | set(report.loaded) <= set(_kernels.GROUPS)
    assert set(_kernels.GROUPS) == _kernels._READY


def _slow_compile(seconds):
    """A stand-in for ensure_compiled that prepares the real kernels, then takes
    ``seconds`` more, as a compile on a cold numba cache does."""
    def fake(*groups):
        real = ensure_compiled(*groups)
        time.sleep(seconds)
        return CompileReport(real.seconds + seconds, groups, ())
    return fake


def test_the_exact_estimator_compiles_before_its_time_limit_starts(monkeypatch, capsys):
    """A compile longer than the whole time limit leaves the fit its full budget: the fit
    still proves optimality, and the compile is reported once and in ``timings_``."""
    from rulemip import ExactRuleEnsembleRegressor, load_bundled
    from rulemip.estimators import exact

    monkeypatch.setattr(exact, "ensure_compiled", _slow_compile(2.5))
    X, y = load_bundled()
    est = ExactRuleEnsembleRegressor(1, max_thresholds=2, reg=1.0, time_limit=2.0,
                                     verbose=True).fit(X, y)
    assert est.result_.is_optimal
    assert est.timings_["compile"] >= 2.5
    assert est.timings_["fit"] < 2.5
    assert "compiling kernels, first run only: " in capsys.readouterr().err


def test_the_boosting_estimator_compiles_before_its_time_limit_starts(monkeypatch):
    from rulemip import RuleBoostingRegressor, load_bundled
    from rulemip.estimators import boosting

    monkeypatch.setattr(boosting, "ensure_compiled", _slow_compile(2.5))
    X, y = load_bundled()
    est = RuleBoostingRegressor(2, preset="COB", max_thresholds=2, time_limit=2.0).fit(X, y)
    assert est.limit_reached_ is None and est.certified_
    assert est.timings_["compile"] >= 2.5


def test_rulemip_compile_prepares_every_group(capsys):
    from rulemip.cli import main

    assert main(["compile"]) == 0
    out = capsys.readouterr().out
    assert "kernels" in out and "numba" in out
    assert set(_kernels.GROUPS) == _kernels._READY
