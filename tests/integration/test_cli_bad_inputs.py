"""Bad inputs on every entry point: a one-line rulemip error naming the option and the fix
(exit code 2 on the command line, no traceback), or a correct result."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from rulemip.certify import gap_study, verify
from rulemip.cli import main
from rulemip.exceptions import CertificateError, InvalidParameterError

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")

FAST = ["--time-limit", "20"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 12-row, 2-feature table with a step in ``a``."""
    d = tmp_path_factory.mktemp("tiny")
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=12), rng.normal(size=12)
    frame = pd.DataFrame({"a": a, "b": b, "y": 2.0 * (a > 0) + 0.1 * b})
    path = d / "t.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def cert(tiny, tmp_path_factory):
    """A certificate of ``rulemip fit`` on ``tiny``, written into a folder that did not
    exist (created on writing)."""
    path = tmp_path_factory.mktemp("c") / "new" / "folder" / "cert.json"
    assert main(["fit", "--data", str(tiny), "--target", "y", "-k", "1", "--max-thresholds",
                 "3", "--preset", "none", "--quiet", "--certificate", str(path),
                 *FAST]) == 0
    return path


def bad_files(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,y\n1,2,3\n4,5,6,7,8\n")
    header = tmp_path / "header.csv"
    header.write_text("a,b,y\n")
    return {"empty": (empty, "is empty"), "ragged": (ragged, "not a well-formed CSV"),
            "header-only": (header, "no rows")}


def run(argv, capsys):
    code = main(argv)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def assert_one_line_error(code, err, *words):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rulemip ") and ": error: " in lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])


COMMANDS = {
    "fit": ["fit", "-k", "1", *FAST],
    "boost": ["boost", "--n-rules", "1"],
    "gap": ["gap", "--k-max", "1", "--variants", "SGB", *FAST],
    "prune": ["prune", "--trees", "2", "--depth", "1", *FAST],
}


@pytest.mark.parametrize("kind", ["empty", "ragged", "header-only"])
@pytest.mark.parametrize("command", [*COMMANDS, "verify"])
def test_unusable_csv_is_one_line_error(command, kind, tmp_path, capsys, cert):
    path, words = bad_files(tmp_path)[kind]
    if command == "verify":
        argv = ["verify", str(cert), "--data", str(path), "--target", "y"]
    else:
        argv = [*COMMANDS[command], "--data", str(path), "--target", "y"]
        if command == "gap":
            argv += ["--out", str(tmp_path / "out")]
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, "--data", words)


@pytest.mark.parametrize("command,option", [("fit", "--certificate"), ("boost", "--json"),
                                            ("prune", "--json"), ("gap", "--out")])
def test_output_below_a_file_is_refused_before_any_work(command, option, tiny, tmp_path,
                                                         capsys):
    blocker = tmp_path / "plain-file"
    blocker.write_text("x")
    target = blocker if command == "gap" else blocker / "out.json"
    argv = [*COMMANDS[command], "--data", str(tiny), "--target", "y", option, str(target)]
    code, out, err = run(argv, capsys)
    assert_one_line_error(code, err, option, "is a file")
    assert "risk" not in out  # refused up front: nothing was fitted


def test_fit_certificate_into_missing_folder_verifies(cert, tiny, capsys):
    assert cert.is_file()
    code, out, _ = run(["verify", str(cert), "--data", str(tiny), "--target", "y"], capsys)
    assert code == 0 and "certificate verified" in out and str(tiny) in out


def test_files_follow_the_umask(cert, tiny, tmp_path):
    from rulemip._io import write_json_atomic
    from rulemip.certify import Certificate

    old = os.umask(0o027)
    try:
        p = write_json_atomic(tmp_path / "a.json", {"x": 1})
        c = Certificate.load(cert).save(tmp_path / "c.json")
    finally:
        os.umask(old)
    assert p.stat().st_mode & 0o777 == 0o640
    assert c.stat().st_mode & 0o777 == 0o640


# ---------------------------------------------------------------------- verify
def _tampered(cert, tmp_path, edit):
    doc = json.loads(cert.read_text())
    edit(doc)
    path = tmp_path / "tampered.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("root", ["[]", "null", '"a string"', "3"])
def test_verify_non_object_root(root, tiny, tmp_path, capsys):
    path = tmp_path / "r.json"
    path.write_text(root)
    code, _, err = run(["verify", str(path), "--data", str(tiny), "--target", "y"], capsys)
    assert_one_line_error(code, err, "JSON root")


@pytest.mark.parametrize("field,value,words", [
    (("claims", "bound_valid"), "false", "claims.bound_valid"),
    (("claims", "status"), "proved", "claims.status"),
    (("claims", "risk"), "0.5", "claims.risk"),
    (("problem", "n_rules"), 1.5, "problem.n_rules"),
    (("version",), 99, "version"),
    (("version",), True, "version"),
])
def test_verify_strict_schema(field, value, words, cert, tiny, tmp_path, capsys):
    def edit(doc):
        node = doc
        for key in field[:-1]:
            node = node[key]
        node[field[-1]] = value

    path = _tampered(cert, tmp_path, edit)
    code, _, err = run(["verify", str(path), "--data", str(tiny), "--target", "y"], capsys)
    assert_one_line_error(code, err, words)


@pytest.mark.parametrize("edit,failed", [
    # a threshold no rule uses moved, or a far-away one added: the candidate set the bound
    # speaks about is no longer the solved one
    (lambda d: d["problem"]["thresholds"][1].__setitem__(0, -0.123), "thresholds"),
    (lambda d: d["problem"]["thresholds"][0].append(1234.5), "thresholds"),
    (lambda d: d["problem"].__setitem__("n_rules", 5), "problem"),
    (lambda d: d["problem"].__setitem__("reg", 2.0), "problem"),
    (lambda d: d["problem"].__setitem__("max_rule_length", 1), "problem"),
    (lambda d: d["ensemble"]["rules"][0]["conditions"][0].__setitem__("feature", 7),
     "features"),
])
def test_verify_rejects_tampered_problem(edit, failed, cert, tiny, tmp_path, capsys):
    path = _tampered(cert, tmp_path, edit)
    code, out, err = run(["verify", str(path), "--data", str(tiny), "--target", "y"], capsys)
    assert code == 1, err
    assert f"FAIL  {failed}" in out and "REJECTED" in out


def test_verify_digest_recomputed_still_caught_by_rederived_thresholds(cert, tiny):
    from rulemip.certify import Certificate
    from rulemip.certify.certificate import problem_digest

    c = Certificate.load(cert)
    assert c.threshold_rule == 3
    moved = (*c.thresholds[:1], (*c.thresholds[1], 1234.5))
    forged = dataclasses.replace(c, thresholds=moved, problem_digest=problem_digest(
        c.dataset_digest, loss=c.loss, reg=c.reg, fit_intercept=c.fit_intercept,
        n_rules=c.n_rules, max_rule_length=c.max_rule_length, thresholds=moved,
        threshold_rule=c.threshold_rule))
    X = pd.read_csv(tiny)
    report = verify(forged, X.drop(columns="y"), X["y"])
    assert [f.name for f in report.failures] == ["thresholds"]


@pytest.mark.parametrize("argv,words", [
    (["--tol", "-1"], "tol"),
    (["--tol", "nan"], "tol"),
    (["--mip-gap", "-1"], "--mip-gap"),
    (["--mip-gap", "1"], "--mip-gap"),
    (["--mip-gap", "nan"], "--mip-gap"),
    ([], "--data"),
])
def test_verify_bad_options(argv, words, cert, tiny, capsys):
    data = [] if not argv else ["--data", str(tiny), "--target", "y"]
    code, _, err = run(["verify", str(cert), *data, *argv], capsys)
    assert_one_line_error(code, err, words)


def test_verify_python_tol_and_raise(cert, tiny):
    X = pd.read_csv(tiny)
    with pytest.raises(InvalidParameterError, match="`tol`"):
        verify(cert, X.drop(columns="y"), X["y"], tol=-1.0)
    with pytest.raises(CertificateError, match="JSON root"):
        from rulemip.certify import Certificate

        Certificate.from_dict([])


# ---------------------------------------------------------------------- options
@pytest.mark.parametrize("command", ["fit", "boost", "gap"])
def test_max_thresholds_zero_is_refused_with_hint(command, tiny, tmp_path, capsys):
    argv = [*COMMANDS[command], "--data", str(tiny), "--target", "y",
            "--max-thresholds", "0"]
    if command == "gap":
        argv += ["--out", str(tmp_path / "o")]
    code, _, err = run(argv, capsys)
    assert_one_line_error(code, err, "--max-thresholds", "all")


def test_max_thresholds_all_means_every_midpoint(tiny, tmp_path, capsys):
    out = tmp_path / "b.json"
    code, _, err = run([*COMMANDS["boost"], "--data", str(tiny), "--target", "y",
                        "--max-thresholds", "all", "--json", str(out)], capsys)
    assert code == 0, err
    assert json.loads(out.read_text())["options"]["max_thresholds"] is None


@pytest.mark.parametrize("argv,words", [
    (["--solver", "foo"], "solver"),
    (["--k-max", "0"], "--k-max"),
    (["--splits", "-1"], "--splits"),
    (["--jobs", "0"], "--jobs"),
])
def test_gap_bad_options(argv, words, tiny, tmp_path, capsys):
    out = tmp_path / "o"
    code, _, err = run(["gap", "--data", str(tiny), "--target", "y", "--variants", "SGB",
                        "--out", str(out), *FAST, *argv], capsys)
    assert_one_line_error(code, err, words)
    assert not (out / "gap_table.csv").exists()


def test_gap_scheduler_without_dask_says_how_to_install(tiny, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import fails
    code, _, err = run(["gap", "--data", str(tiny), "--target", "y", "--variants", "SGB",
                        "--k-max", "1", "--scheduler", "tcp://127.0.0.1:1", "--out",
                        str(tmp_path / "o"), *FAST], capsys)
    assert_one_line_error(code, err, "scheduler", "pip install")


def test_gap_study_python_refuses_unknown_solver_and_zero_thresholds():
    X, y = np.arange(6.0)[:, None], np.arange(6.0)
    with pytest.raises(InvalidParameterError, match="`solver`"):
        gap_study(X, y, 1, ["SGB"], solver="foo")
    with pytest.raises(InvalidParameterError, match=r"`max_thresholds`.*None.*all midpoints"):
        gap_study(X, y, 1, ["SGB"], max_thresholds=0)


@pytest.mark.parametrize("X,y", [
    (np.array([[1.0], [2.0], [3.0], [4.0]]), np.full(4, 2.5)),   # constant y
    (np.array([[1.0, 2.0]]), np.array([3.0])),                    # one row
    (np.ones((3, 1)), np.array([1.0, 2.0, 3.0])),                 # identical rows
])
def test_gap_study_degenerate_data_with_intercept(X, y):
    study = gap_study(X, y, 2, ["SGB", "MIP-boosting"], fit_intercept=True, time_limit=20)
    # no rule can beat the best constant: every risk is the constant model's
    best_constant = float(np.mean((y - y.mean()) ** 2))
    assert np.allclose(study.table["risk_boost"], best_constant, atol=1e-9)
    assert np.allclose(study.table["incumbent"], best_constant, atol=1e-9)
    assert (study.table["status"] == "optimal").all()


def test_gap_serves_no_stale_rows_and_keeps_same_named_files(tmp_path, capsys):
    rng = np.random.default_rng(1)
    x = rng.normal(size=10)
    paths = []
    for sub, scale in (("a", 1.0), ("b", 3.0)):
        (tmp_path / sub).mkdir()
        p = tmp_path / sub / "x.csv"
        pd.DataFrame({"x": x, "y": scale * (x > 0)}).to_csv(p, index=False)
        paths.append(p)
    out = tmp_path / "out"
    argv = ["gap", "--data", *map(str, paths), "--target", "y", "--k-max", "1",
            "--variants", "SGB", "--max-thresholds", "2", "--reg", "0.1", "--out", str(out),
            "--quiet", *FAST]
    assert run(argv, capsys)[0] == 0
    table = pd.read_csv(out / "gap_table.csv")
    assert sorted(table["dataset"]) == ["a_x", "b_x"]
    # edit a file, rerun into the same folder: its rows are recomputed from the new data
    pd.DataFrame({"x": x, "y": 10.0 * (x > 0) + x}).to_csv(paths[0], index=False)
    assert run(argv, capsys)[0] == 0
    again = pd.read_csv(out / "gap_table.csv").set_index("dataset")
    fresh = gap_study(x[:, None], 10.0 * (x > 0) + x, 1, ["SGB"], max_thresholds=2,
                      reg=0.1, time_limit=20)
    assert again.loc["a_x", "risk_boost"] == pytest.approx(fresh.table["risk_boost"][0])
    assert again.loc["b_x", "risk_boost"] == pytest.approx(
        table.set_index("dataset").loc["b_x", "risk_boost"])


def test_cli_as_a_process_prints_one_line_and_no_traceback(tiny, tmp_path):
    """The true entry point: module execution, Pyomo's own logging silenced."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cases = [
        (["fit", "--data", str(tiny), "--target", "y", "--solver", "pyomo:foo"], "Pyomo"),
        (["verify", str(tmp_path / "missing.json"), "--data", str(tiny), "--target", "y"],
         "cannot read certificate"),
    ]
    for argv, words in cases:
        proc = subprocess.run([sys.executable, "-m", "rulemip.cli", *argv],
                              capture_output=True, text=True, timeout=120, env=env)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], proc.stderr


# ---------------------------------------------------------------------- progress
def test_progress_only_when_asked_or_on_a_terminal(tiny, tmp_path, capsys):
    base = ["fit", "--data", str(tiny), "--target", "y", "-k", "1", "--max-thresholds", "2",
            *FAST]
    code, _, err = run(base, capsys)  # stderr is not a terminal here
    assert code == 0 and err == ""
    code, _, err = run([*base, "--progress"], capsys)
    assert code == 0 and "warm start (boosting COB)" in err and "done" in err
    out = tmp_path / "g"
    code, _, err = run(["gap", "--data", str(tiny), "--target", "y", "--k-max", "2",
                        "--variants", "SGB", "--out", str(out), "--progress", *FAST], capsys)
    assert code == 0 and "2/2" in err and "[" + "#" * 24 + "]" in err


@pytest.mark.parametrize("command", ["fit", "boost", "prune"])
def test_text_target_for_a_regression_is_one_line_error(command, tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("a,b,y\n1,2,x\n2,3,y\n3,1,z\n")
    code, _, err = run([*COMMANDS[command], "--data", str(path), "--target", "y"], capsys)
    assert_one_line_error(code, err, "numeric")


def test_verify_unknown_loss_is_a_schema_error(cert, tiny, tmp_path, capsys):
    path = _tampered(cert, tmp_path, lambda d: d["problem"].__setitem__("loss", "hinge"))
    code, _, err = run(["verify", str(path), "--data", str(tiny), "--target", "y"], capsys)
    assert_one_line_error(code, err, "problem.loss", "squared")


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf"])
def test_boost_max_memory_must_be_positive(value, tiny, capsys):
    code, out, err = run([*COMMANDS["boost"], "--data", str(tiny), "--target", "y",
                          "--max-memory", value], capsys)
    assert_one_line_error(code, err, "--max-memory", "positive")
    assert "risk" not in out


def test_boost_limit_warning_is_one_clean_line(tmp_path, capsys):
    """A SolveLimitWarning is printed as `warning: ...` on one line: no file path, no
    source line of Python's default warning display."""
    rng = np.random.default_rng(0)
    X = rng.random((400, 6))
    frame = pd.DataFrame(X, columns=list("abcdef")).assign(y=X[:, 0] * X[:, 1])
    frame.to_csv(tmp_path / "w.csv", index=False)
    code, _out, err = run(["boost", "--data", str(tmp_path / "w.csv"), "--target", "y",
                          "--n-rules", "2", "--time-limit", "0.001", "--max-thresholds", "all",
                          "--max-rule-length", "3", "--quiet"], capsys)
    assert code == 0, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("warning: ") and "time limit" in lines[0], err
    assert ".py:" not in err and "SolveLimitWarning" not in err


@pytest.fixture(scope="module")
def typo_table(tmp_path_factory):
    """59 numbers and one "abc" in column ``age``; a clean numeric column ``b``."""
    rng = np.random.default_rng(5)
    age = rng.normal(size=60).round(3).astype(object)
    age[17] = "abc"
    b = rng.normal(size=60)
    path = tmp_path_factory.mktemp("typo") / "typo.csv"
    pd.DataFrame({"age": age, "b": b, "y": 2.0 * (b > 0)}).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("command", ["fit", "boost", "prune", "gap"])
def test_numeric_column_with_a_typo_is_refused_not_one_hot_encoded(command, typo_table,
                                                                   capsys):
    code, _out, err = run([*COMMANDS[command], "--data", str(typo_table), "--target", "y",
                           "--quiet"], capsys)
    assert_one_line_error(code, err, "column 'age'", "1 of its 60 values is not a number",
                          "'abc'", "row index 17", "--categorical age", "Clean the data")


def test_declared_categorical_column_is_one_hot_encoded_and_verifies(typo_table, tmp_path,
                                                                    capsys):
    cert = tmp_path / "c.json"
    code, out, err = run([*COMMANDS["fit"], "--data", str(typo_table), "--target", "y",
                          "--quiet", "--categorical", "age", "--certificate", str(cert)],
                         capsys)
    assert code == 0, err
    doc = json.loads(cert.read_text())
    assert len(doc["ensemble"]["encoder"]["categories"]["age"]) == 60
    # verify reads the columns the model encoded by level as text, as fit did
    code, out, err = run(["verify", str(cert), "--data", str(typo_table), "--target", "y"],
                         capsys)
    assert code == 0, out + err
    assert "certificate verified" in out


@pytest.mark.parametrize("value,words", [("nope", "no column 'nope'"),
                                         ("y", "names the target 'y'"),
                                         ("age,", "column names separated by commas")])
def test_categorical_option_bad_values(value, words, typo_table, capsys):
    code, _out, err = run([*COMMANDS["boost"], "--data", str(typo_table), "--target", "y",
                           "--categorical", value], capsys)
    assert_one_line_error(code, err, words)


def test_verify_report_says_what_was_taken_on_trust(cert, tiny, capsys):
    code, out, _ = run(["verify", str(cert), "--data", str(tiny), "--target", "y",
                        "--strict"], capsys)
    assert code == 0
    # one rule under squared loss: the bound is re-derived by replaying the box search
    assert "  thresholds   re-derived" in out and "  lower bound  re-derived" in out
    assert "replayed" in out
    assert out.strip().endswith("certificate verified")


def test_verify_forged_explicit_thresholds(cert, tiny, tmp_path, capsys):
    """Data-derived thresholds switched to an explicit, shorter list with the digest
    recomputed: rejected; with the recorded provenance rewritten too: only on trust, which
    --strict refuses and --thresholds (the data's list) exposes."""
    from rulemip.certify import Certificate
    from rulemip.certify.certificate import problem_digest

    c = Certificate.load(cert)
    used = {(cd.feature, v) for r in c.ensemble.rules for cd in r.conditions
            for v in (cd.lower, cd.upper)}
    ths = tuple(tuple(v for v in t if (j, v) in used) for j, t in enumerate(c.thresholds))
    assert ths != c.thresholds

    def forged(**options):
        f = dataclasses.replace(
            c, thresholds=ths, threshold_rule="explicit", options={**c.options, **options},
            problem_digest=problem_digest(
                c.dataset_digest, loss=c.loss, reg=c.reg, fit_intercept=c.fit_intercept,
                n_rules=c.n_rules, max_rule_length=c.max_rule_length, thresholds=ths,
                threshold_rule="explicit"))
        path = tmp_path / f"forged{len(options)}.json"
        f.save(path)
        return str(path)

    data = ["--data", str(tiny), "--target", "y"]
    code, out, _ = run(["verify", forged(), *data], capsys)
    assert code == 1 and "FAIL  thresholds" in out and "switched" in out
    rewritten = forged(threshold_source="explicit")
    code, out, _ = run(["verify", rewritten, *data], capsys)
    # the one-rule bound is replayed on the claimed (shorter) list: only thresholds remain
    assert code == 0 and "taken on trust: thresholds)" in out
    code, out, _ = run(["verify", rewritten, *data, "--strict"], capsys)
    assert code == 1 and "FAIL  thresholds" in out
    listed = tmp_path / "ths.json"
    listed.write_text(json.dumps([list(t) for t in c.thresholds]))
    code, out, _ = run(["verify", rewritten, *data, "--thresholds", str(listed)], capsys)
    assert code == 1 and "differ from the ones you gave" in out
    code, out, _ = run(["verify", str(cert), *data, "--thresholds", str(listed)], capsys)
    assert code == 0, out


@pytest.mark.parametrize("content,words", [
    ("{", "--thresholds"), ('{"a": 1}', "JSON list of cut-point lists"),
    ("[[0.1]]", "one array of cut points per feature (2); got 1"),
    ("[[NaN], [0.1]]", "contains nan"),
])
def test_verify_bad_thresholds_file(content, words, cert, tiny, tmp_path, capsys):
    path = tmp_path / "t.json"
    path.write_text(content)
    code, _, err = run(["verify", str(cert), "--data", str(tiny), "--target", "y",
                        "--thresholds", str(path)], capsys)
    assert_one_line_error(code, err, words)
