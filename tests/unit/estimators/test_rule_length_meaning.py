"""One meaning of ``max_rule_length`` (issue 30, item 13): it counts the features a rule
restricts — an interval ``a < x_j <= b`` is one, as rules are printed — in boosting, the
exact estimators' warm start, the exact fit and the certificate; ``max_propositions``
counts propositions (an interval is two)."""

from __future__ import annotations

import numpy as np
import pytest

from rulemip.boosting import RuleBooster
from rulemip.budget import Budget
from rulemip.certify import Certificate
from rulemip.data import Dataset
from rulemip.estimators import ExactRuleEnsembleRegressor
from rulemip.estimators.boosting import RuleBoostingRegressor
from rulemip.exceptions import CertificateError, InvalidParameterError


def _interval_data(seed: int = 0, n: int = 60):
    """y is high exactly on a middle interval of x_0 (a two-sided, one-feature rule);
    x_1 is noise."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, 2))
    y = np.where((X[:, 0] > 0.35) & (X[:, 0] <= 0.7), 3.0, 0.0) + 0.05 * rng.normal(size=n)
    return X, y


def _two_sided(rule) -> bool:
    return any(np.isfinite(c.lower) and np.isfinite(c.upper) for c in rule.conditions)


def test_cob_with_one_feature_finds_the_interval():
    """COB with ``max_rule_length=1`` returns one-feature rules only, and the interval
    (two propositions on one feature) is among them."""
    X, y = _interval_data()
    b = RuleBooster.from_preset("COB", n_rules=2, max_rule_length=1,
                                max_thresholds=8).fit(Dataset.from_arrays(X, y))
    rules = b.rules_.rules
    assert rules and all(r.n_features == 1 for r in rules)
    assert any(_two_sided(r) for r in rules)


def test_max_propositions_is_the_proposition_count():
    """``max_propositions=1`` excludes the interval (two propositions): every rule has one
    proposition."""
    X, y = _interval_data()
    est = RuleBoostingRegressor(2, preset="COB", max_propositions=1, max_thresholds=8)
    est.fit(X, y)
    assert est.rules_.rules and all(r.length == 1 for r in est.rules_.rules)
    assert "max_propositions" in est.get_params()
    with pytest.raises(InvalidParameterError, match="max_propositions"):
        RuleBooster(max_propositions=0)


def test_exact_warm_start_and_fit_search_the_same_language():
    """The exact estimator's COB warm start and its exact fit with ``max_rule_length=1``
    use one language: one feature per rule, intervals allowed."""
    X, y = _interval_data()
    est = ExactRuleEnsembleRegressor(1, max_rule_length=1, preset="COB", max_thresholds=8,
                                     time_limit=30)
    ds = Dataset.from_arrays(X, y)
    start = est._warm_start_model(ds, est._thresholds_for(ds), Budget.unlimited())
    assert start.rules and all(r.n_features == 1 for r in start.rules)
    assert any(_two_sided(r) for r in start.rules)
    est.fit(X, y)
    assert all(r.n_features == 1 for r in est.rules_.rules)
    assert any(_two_sided(r) for r in est.rules_.rules)
    # the exact optimum is never worse than the warm start of the same language
    assert est.result_.risk <= est.boosting_risk_ + 1e-9


def test_certificate_records_the_meaning():
    X, y = _interval_data()
    est = ExactRuleEnsembleRegressor(1, max_rule_length=1, preset=None, max_thresholds=4,
                                     time_limit=30).fit(X, y)
    doc = est.certificate_.to_dict()
    assert doc["problem"]["max_rule_length"] == 1
    assert doc["problem"]["max_rule_length_counts"] == "features"
    Certificate.from_dict(doc)                     # round-trips
    doc["problem"]["max_rule_length_counts"] = "propositions"
    with pytest.raises(CertificateError, match="max_rule_length_counts"):
        Certificate.from_dict(doc)
    del doc["problem"]["max_rule_length_counts"]   # older certificates counted features
    assert Certificate.from_dict(doc).max_rule_length == 1


def test_cli_boost_counts_features_and_propositions(tmp_path, capsys):
    """``rulemip boost --max-rule-length 1`` keeps the interval (one feature);
    ``--max-propositions 1`` does not."""
    import json

    from rulemip.cli import main
    from rulemip.rules import RuleEnsemble

    X, y = _interval_data()
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,y\n" + "\n".join(f"{a},{b},{t}" for (a, b), t in zip(X, y,
                                                                              strict=True)))
    rules = {}
    for flag in ("--max-rule-length", "--max-propositions"):
        out = tmp_path / f"{flag}.json"
        assert main(["boost", "--quiet", "--data", str(csv), "--target", "y", "--n-rules", "2",
                     "--preset", "COB", flag, "1", "--max-thresholds", "8",
                     "--json", str(out)]) == 0
        rules[flag] = RuleEnsemble.from_dict(json.loads(out.read_text())["ensemble"]).rules
    capsys.readouterr()
    assert all(r.n_features == 1 for r in rules["--max-rule-length"])
    assert any(_two_sided(r) for r in rules["--max-rule-length"])
    assert all(r.length == 1 for r in rules["--max-propositions"])
