"""Sweeps: parallel execution, resumption after a kill, identical final tables."""

import json
import subprocess
import sys
import textwrap
import time

import pandas as pd
import pytest

from rulemip.data import alternating
from rulemip.sweeps import make_tasks, pending_tasks, run_sweep

pytestmark = pytest.mark.solver
pytest.importorskip("highspy")

SETTINGS = dict(reg=1e-6, fit_intercept=False, time_limit=30)


def data():
    return {"alt2": alternating(2, 0.02), "alt3": alternating(3, 0.02)}


def test_serial_and_joblib_sweeps_agree(tmp_path):
    tasks = make_tasks(["alt2", "alt3"], 2, ["SGB", "COB"], **SETTINGS)
    serial = run_sweep(tasks, data(), tmp_path / "serial")
    parallel = run_sweep(tasks, data(), tmp_path / "par", n_jobs=2)
    pd.testing.assert_frame_equal(serial, parallel)
    assert len(serial) == 2 * 2 * 2
    # a second call finds everything done and recomputes nothing
    assert pending_tasks(tasks, tmp_path / "serial") == []


def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip("distributed")
    tasks = make_tasks(["alt2"], 2, ["SGB"], **SETTINGS)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        table = run_sweep(tasks, data(), tmp_path / "dask", scheduler=client)
    reference = run_sweep(tasks, data(), tmp_path / "ref")
    pd.testing.assert_frame_equal(table, reference)


SCRIPT = textwrap.dedent("""
    import sys, time
    from rulemip.data import alternating
    import rulemip.sweeps as sw
    out = sys.argv[1]
    real = sw.run_gap_task
    def slow(task, X, y):
        with open(out + "/executed.log", "a") as fh:
            fh.write(task.task_id + "\\n")
        res = real(task, X, y)
        time.sleep(float(sys.argv[2]))
        return res
    sw.run_gap_task = slow
    data = {"alt2": alternating(2, 0.02), "alt3": alternating(3, 0.02)}
    tasks = sw.make_tasks(["alt2", "alt3"], 2, ["SGB"], reg=1e-6, fit_intercept=False,
                          time_limit=30)
    sw.run_sweep(tasks, data, out)
""")


def test_killed_sweep_resumes_without_redoing_finished_tasks(tmp_path):
    out = tmp_path / "sweep"
    out.mkdir()
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(out), "3.0"])
    done_dir = out / "tasks"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(done_dir.glob("*.json"))) < 1:
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    finished = {p.stem for p in done_dir.glob("*.json")}
    assert 1 <= len(finished) < 4
    (out / "executed.log").unlink()
    subprocess.run([sys.executable, str(script), str(out), "0"], check=True, timeout=300)
    rerun = set((out / "executed.log").read_text().split())
    assert rerun.isdisjoint(finished)
    assert len(rerun) + len(finished) == 4
    resumed = pd.read_csv(out / "sweep_table.csv")
    fresh = tmp_path / "fresh"
    tasks = make_tasks(["alt2", "alt3"], 2, ["SGB"], **SETTINGS)
    reference = run_sweep(tasks, data(), fresh)
    pd.testing.assert_frame_equal(resumed, pd.read_csv(fresh / "sweep_table.csv"))
    assert len(reference) == 4
    payload = json.loads(next(done_dir.glob("*.json")).read_text())
    assert payload["certificate"]["format"] == "rulemip.Certificate"


def test_damaged_task_file_is_a_clear_error(tmp_path):
    from rulemip.exceptions import InvalidDataError

    tasks = make_tasks(data(), 1, ["SGB"], **SETTINGS)
    run_sweep(tasks, data(), tmp_path)
    (tmp_path / "tasks" / f"{tasks[0].task_id}.json").write_text("{")
    with pytest.raises(InvalidDataError, match="delete it and rerun"):
        run_sweep(tasks, data(), tmp_path)


def test_changed_data_gets_new_task_ids_and_is_refused_for_old_tasks(tmp_path):
    from rulemip.exceptions import InvalidParameterError

    first = make_tasks(data(), 1, ["SGB"], **SETTINGS)
    changed = {"alt2": alternating(2, 0.05), "alt3": alternating(3, 0.02)}
    second = make_tasks(changed, 1, ["SGB"], **SETTINGS)
    assert first[0].task_id != second[0].task_id and first[1].task_id == second[1].task_id
    with pytest.raises(InvalidParameterError, match="differs from the data its tasks"):
        run_sweep(first, changed, tmp_path)
