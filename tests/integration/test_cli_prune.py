"""``rulemip prune`` on a small CSV, in-process."""

import json

import numpy as np
import pytest

from rulemip.cli import main

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


@pytest.fixture
def csv(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.normal(size=60), "dose": rng.normal(size=60),
                          "colour": rng.choice(["red", "blue"], 60)})
    frame["y"] = (2.0 * (frame["age"] > 0) + (frame["colour"] == "red")
                  + 0.1 * rng.normal(size=60))
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    return path


def test_prune_exact_prints_rules_bound_and_writes_json(csv, tmp_path, capsys):
    out_json = tmp_path / "out.json"
    assert main(["prune", "--data", str(csv), "--target", "y", "--n-rules", "3",
                 "--trees", "3", "--depth", "2", "--reg", "100", "--time-limit", "30",
                 "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "IF " in out and "THEN" in out and "age" in out
    assert "training risk (MSE)" in out and "valid lower bound" in out and "gap" in out
    doc = json.loads(out_json.read_text())
    assert doc["engine"] == "exact" and "method" not in doc and doc["budget"] == 3
    assert doc["reg"] == 100 and np.isclose(doc["gamma"], 0.01)
    assert 1 <= doc["n_rules"] <= 3 and doc["cost"] <= 3
    assert doc["lower_bound"] <= doc["objective"] + 1e-9
    assert doc["status"] == "optimal" and doc["gap"] <= 1e-4
    assert len(doc["ensemble"]["rules"]) == doc["n_rules"]
    # the training risk in the JSON is the MSE of the printed rule ensemble
    import pandas as pd

    from rulemip.rules import RuleEnsemble

    frame = pd.read_csv(csv)
    X = frame.drop(columns=["y"])  # the rules carry their one-hot encoding of `colour`
    ens = RuleEnsemble.from_dict(doc["ensemble"])
    mse = float(np.mean((frame["y"].to_numpy() - ens.predict(X)) ** 2))
    assert np.isclose(doc["train_risk"], mse)
    assert mse < np.var(frame["y"].to_numpy())  # the rules explain part of the variance


def test_prune_depth_forest_and_errors(csv, capsys):
    assert main(["prune", "--data", str(csv), "--target", "y", "--n-rules", "3",
                 "--attribute", "depth", "--forest", "--trees", "2", "--depth", "2",
                 "--reg", "20"]) == 0
    out = capsys.readouterr().out
    assert "random forest" in out and "depth budget K = 3" in out and "reg = 20" in out
    line = next(s for s in out.splitlines() if s.startswith("rules:"))
    assert float(line.split("cost ")[1].split()[0]) <= 3
    assert main(["prune", "--data", str(csv), "--target", "y", "--n-rules", "-2"]) == 2
    assert "`--n-rules` must be a non-negative integer; got -2." in capsys.readouterr().err
    assert main(["prune", "--data", str(csv), "--target", "nope"]) == 2
    assert "column 'nope' not in" in capsys.readouterr().err


def test_prune_help_documents_every_option(capsys):
    with pytest.raises(SystemExit):
        main(["prune", "--help"])
    text = capsys.readouterr().out
    for opt in ("--data", "--target", "--n-rules", "--attribute", "--engine", "--trees",
                "--depth", "--forest", "--reg", "--time-limit", "--json"):
        assert opt in text


def test_prune_relax_round(csv, capsys):
    pytest.importorskip("rulemip.algorithms.pruning.relax_and_round")
    assert main(["prune", "--data", str(csv), "--target", "y", "--n-rules", "2",
                 "--engine", "relax_round", "--trees", "3", "--depth", "2"]) == 0
    assert "relaxation lower bound" in capsys.readouterr().out


def test_prune_engine_is_any_registered_one(csv, capsys):
    # an unknown engine: the estimator's error, naming the registered engines
    assert main(["prune", "--data", str(csv), "--target", "y", "--n-rules", "2",
                 "--engine", "nope", "--trees", "2", "--depth", "2"]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and "relax_round" in err and "mip" in err
    # a third-party engine registered in-process is accepted by the command line too
    from rulemip.algorithms.pruning import driver
    from rulemip.algorithms.pruning.driver import register_pruning_engine
    from rulemip.algorithms.pruning.engines import RelaxRoundPruning

    register_pruning_engine("relax_round_again", RelaxRoundPruning, description="test")
    try:
        assert main(["prune", "--data", str(csv), "--target", "y", "--n-rules", "2",
                     "--engine", "relax_round_again", "--trees", "3", "--depth", "2"]) == 0
        assert "rules:" in capsys.readouterr().out
    finally:
        driver.PRUNING_ENGINES.pop("relax_round_again", None)
        driver.PRUNING_DESCRIPTIONS.pop("relax_round_again", None)
