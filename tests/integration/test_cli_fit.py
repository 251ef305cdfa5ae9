"""The main job on the command line: rulemip fit, then rulemip verify on its certificate."""

import json

import pytest

from rulemip.cli import main

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")


def test_fit_on_bundled_data_then_verify(tmp_path, capsys):
    cert = tmp_path / "cert.json"
    assert main(["fit", "--quiet", "--time-limit", "120", "--certificate", str(cert)]) == 0
    out = capsys.readouterr().out
    assert "IF " in out and "THEN" in out
    assert "valid lower bound" in out and "gap" in out
    doc = json.loads(cert.read_text())
    assert doc["claims"]["status"] == "optimal"
    assert main(["verify", str(cert), "--bundled"]) == 0
    assert "certificate verified" in capsys.readouterr().out
    # a tampered weight is caught, with the reason
    doc["ensemble"]["rules"][0]["weight"] += 1.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    assert main(["verify", str(bad), "--bundled"]) == 1
    assert "differs from the claimed" in capsys.readouterr().out


def test_fit_on_csv_and_errors(tmp_path, capsys):
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.normal(size=40), "colour": rng.choice(["red", "blue"], 40)})
    frame["y"] = 2.0 * (frame["a"] > 0) + (frame["colour"] == "red") + 0.1 * rng.normal(size=40)
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    assert main(["fit", "--quiet", "--data", str(path), "--target", "y", "-k", "2",
                 "--max-thresholds", "3"]) == 0
    out = capsys.readouterr().out
    assert "colour" in out
    assert main(["fit", "--data", str(path), "--target", "nope"]) == 2
    assert "column 'nope' not in" in capsys.readouterr().err
    assert main(["fit", "--data", str(path), "--target", "y", "-k", "0"]) == 2
    assert "`--n-rules` must be a positive integer" in capsys.readouterr().err
