"""Conditions, rules, ensembles: evaluation, complexity, text, JSON round trip."""

import math

import numpy as np
import pandas as pd
import pytest

from rulemip.data import Dataset
from rulemip.rules import Condition, Rule, RuleEnsemble, conditions_from_box


def test_condition_interval_semantics_and_text():
    c = Condition(0, 3.5, 7.0, "x1")
    X = np.array([[3.5], [3.6], [7.0], [7.1]])
    np.testing.assert_array_equal(c.evaluate(X), [False, True, True, False])
    assert c.to_text() == "3.5 < x1 <= 7"
    assert c.n_propositions == 2
    assert Condition(0, upper=2.0, name="a").to_text() == "a <= 2"
    with pytest.raises(ValueError):
        Condition(0, 2.0, 1.0)


def test_rule_merges_conditions_and_counts_length():
    r = Rule([Condition(1, 0.0, name="b"), Condition(0, upper=5.0, name="a"),
              Condition(1, upper=3.0, name="b")], 2.13)
    assert [c.feature for c in r.conditions] == [0, 1]
    assert r.length == 3
    assert r.to_text() == "IF a <= 5 AND 0 < b <= 3 THEN +2.13"
    assert Rule([], 1.0).query(np.zeros((3, 2))).all()


def test_ensemble_predictions_complexity_and_json_round_trip():
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "colour": ["red", "blue", "red", "green"]})
    ds = Dataset.from_arrays(df, [1, 0, 1, 1], loss="logistic")
    red = ds.feature_names.index("colour == red")
    conds = conditions_from_box([1.5, -math.inf, -math.inf, 0.5],
                                [3.5, math.inf, math.inf, math.inf], ds.encoder)
    rule = Rule(conds, 2.0)
    assert rule.to_text() == "IF 1.5 < a <= 3.5 AND colour == red THEN +2"
    ens = RuleEnsemble([rule], -1.0, "logistic", ds.encoder, ds.classes)
    f = ens.decision_function(df)
    np.testing.assert_allclose(f, [-1.0, -1.0, 1.0, -1.0])
    np.testing.assert_allclose(ens.predict(df), 1 / (1 + np.exp(-f)))
    assert ens.complexity == 1 + 3
    back = RuleEnsemble.from_json(ens.to_json())
    np.testing.assert_allclose(back.decision_function(df), f)
    assert back.to_text() == ens.to_text()
    assert back.classes == (0, 1)
    assert ds.X[:, red].sum() == 2


def test_ensemble_risk_matches_loss():
    X = np.array([[0.0], [1.0], [2.0]])
    y = np.array([1.0, 2.0, 4.0])
    ens = RuleEnsemble([Rule([Condition(0, 0.5, name="x")], 2.0)], 1.0)
    # f = (1, 3, 3): squared errors 0, 1, 1; ridge 0.3·4
    assert ens.risk(X, y, reg=0.3) == pytest.approx((0 + 1 + 1 + 1.2) / 3)


def test_identical_rules_print_merged_and_predict_the_same():
    a = Rule([Condition(0, 0.5, math.inf, "a")], 1.0)
    b = Rule([Condition(1, -math.inf, 0.2, "b")], -2.0)
    ens = RuleEnsemble([a, b, a.with_weight(0.5)], 0.1)
    text = ens.to_text().splitlines()
    assert text[:3] == ["BASE +0.1", "IF a > 0.5 THEN +1.5", "IF b <= 0.2 THEN -2"]
    assert len(text) == 4 and "rule 1 = rule 3" in text[3] and "3 rules, shown as 2" in text[3]
    assert str(ens) == ens.to_text()
    # the raw listing keeps every rule; the ensemble itself is not changed
    assert len(ens.to_text(merge_identical=False).splitlines()) == 4 and len(ens) == 3
    merged = RuleEnsemble([r for r, _ in ens.merged_rules()], ens.intercept)
    X = np.random.default_rng(0).normal(size=(50, 2))
    np.testing.assert_allclose(merged.predict(X), ens.predict(X), rtol=0, atol=1e-12)
    # but the ridge penalty differs: the split weights cost less
    y = ens.predict(X)
    assert ens.risk(X, y, reg=1.0) < merged.risk(X, y, reg=1.0)
    # no note when nothing is repeated
    assert "merged" not in RuleEnsemble([a, b]).to_text()


def test_exact_classifier_repeated_rule_is_printed_once():
    """Under a ridge the exact 2-rule optimum may hold one rule twice (seed 1): printed
    as one rule with a note, predictions unchanged. Column generation certifies this
    optimum in 0.3 s (the default engine, the CIP, took 11-15 s of its 20 s)."""
    from rulemip import ExactRuleEnsembleClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=40) > 0).astype(int)
    m = ExactRuleEnsembleClassifier(2, reg=1.0, max_thresholds=4, engine="cg",
                                    time_limit=20).fit(X, y)
    assert m.result_.is_optimal
    assert len(m.rules_) == 2 and len(m.rules_.merged_rules()) == 1
    assert "identical conditions merged" in str(m.rules_)
