"""Expiry and orphan removal placed on Spark (the session `spark` fixture, local[2]): the expired deltas are decoded
on executors, the orphan candidates are told from the referenced names by a join on Spark, the deletes run on
executors through the deleter's `delete_task` — and the reports and the files left are exactly those of the same
run in-process, on two copies of one table. The default runner chooses Spark by execution.local.max-manifests /
execution.local.max-files. (The Java 0.9 proof is tests/lifecycle/test_expire_java.py::test_spark_placement_*.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.execution.placement import AutoRunner, planning_on
from paimon_ops.execution.plan import Workload
from paimon_ops.execution.runner import LocalRunner, SparkRunner
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.helpers import HOUR_MS, MetaSim, age_files, check_references, copy_table, leaks, new_table, rel_files

DAY_S = 86_400
REPO = Path(__file__).resolve().parents[2]


class RecordingSparkRunner(SparkRunner):
    """The real SparkRunner, remembering which task functions it ran (as jobs of tasks or as DataFrames)."""

    def __init__(self, spark, wave=None):
        super().__init__(spark, wave=wave)
        self.functions: list[str] = []

    def run(self, function, table_location, tasks, progress=None, options=None):
        self.functions.append(function)
        return super().run(function, table_location, tasks, progress=progress, options=options)

    def frame(self, function, table_location, tasks, schema, options=None):
        self.functions.append(function)
        return super().frame(function, table_location, tasks, schema, options)



def _run(plan_fn, table, runner, dry_run, parallel_threshold):
    """Plan with `runner` placing the planning (as the CLI does), then dry-run or execute on the same runner."""
    with planning_on(runner):
        plan = plan_fn(po.Table(table).maintenance)
    return plan.dry_run_report() if dry_run else plan.execute(table=table, runner=runner,
                                                             parallel_threshold=parallel_threshold)


def expire_snapshots(table, *, now_millis=None, time_retained=None, runner=None, dry_run=False,
                     parallel_threshold=None, **kw):
    return _run(lambda m: m.expire_snapshots(now=now_millis, min_age=time_retained, **kw), table, runner, dry_run,
                parallel_threshold)


def remove_orphans(table, *, now_millis=None, older_than=None, runner=None, dry_run=False, parallel_threshold=None,
                   **kw):
    return _run(lambda m: m.remove_orphans(now=now_millis, min_age=older_than, **kw), table, runner, dry_run,
                parallel_threshold)

def comparable(report, root: str) -> str:
    """The report (or its dict) without where it ran and how long it took, every path relative to the table root,
    files sorted (deletes within a phase run in any order)."""
    d = dict(report) if isinstance(report, dict) else report.to_dict()
    for k in ("duration_s", "runner"):
        d.pop(k, None)
    d["files"] = sorted(d["files"], key=lambda f: json.dumps(f, sort_keys=True))
    return json.dumps(d, sort_keys=True, default=str).replace(root, "<root>")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory)


def build_history(tmp_path_factory) -> MetaSim:
    """An append table with 60 snapshots (writes with extra files, compactions, DV commits, two tags): enough
    deltas for several Spark tasks."""
    wh = tmp_path_factory.mktemp("spark-placement") / "wh"
    wh.mkdir()
    sim = MetaSim(new_table(str(wh), kind="append"))
    for i in range(48):
        sim.write(i, n=4, extra=i % 3 == 0)
        if i % 6 == 5:
            sim.compact(i)
        if i % 11 == 10:
            sim.dv(i)
        if i in (9, 30):
            sim.tag(f"t{i}")
    return sim


def _copies(history, tmp_path):
    a = copy_table(history.table.root, str(tmp_path / "local"), "db", "t")
    b = copy_table(history.table.root, str(tmp_path / "spark"), "db", "t")
    return FileStoreTable(a), FileStoreTable(b)


def test_expiry_on_spark_same_report_and_files(history, spark, tmp_path):
    local, remote = _copies(history, tmp_path)
    runner = RecordingSparkRunner(spark)
    now = history.now + 10 * HOUR_MS
    dry_l = expire_snapshots(local, now_millis=now, retain_min=5, max_deletes=1000, dry_run=True, runner=LocalRunner())
    dry_s = expire_snapshots(remote, now_millis=now, retain_min=5, max_deletes=1000, dry_run=True, runner=runner)
    assert runner.functions == ["paimon_ops.lifecycle.expire.delta_candidates_task"]
    assert comparable(dry_l, local.root) == comparable(dry_s, remote.root)
    r_l = expire_snapshots(local, now_millis=now, retain_min=5, max_deletes=1000, runner=LocalRunner())
    # (phases of more than 500 files go to executors by default; this table's are smaller)
    r_s = expire_snapshots(remote, now_millis=now, retain_min=5, max_deletes=1000, runner=runner,
                           parallel_threshold=10)
    assert r_s.runner["where"].startswith("Spark") and r_l.runner["where"] == "in-process"
    assert "paimon_ops.execution.deleter.delete_task" in runner.functions  # the deletes ran on executors
    assert r_l.deleted["data"] >= 50 and r_l.deleted["snapshot"] >= 50
    assert comparable(r_l, local.root) == comparable(r_s, remote.root)
    assert rel_files(local.root) == rel_files(remote.root)
    check_references(remote)
    assert not leaks(remote)


def test_expiry_candidates_stream_back_in_waves(history, spark, tmp_path, monkeypatch):
    """The executors' candidates reach the driver a wave of tasks at a time (`SparkRunner.stream`), owners in order:
    8 snapshots a task, 2 tasks a wave — the same plan as in-process."""
    from paimon_ops.lifecycle import expire
    monkeypatch.setattr(expire, "DELTA_BATCH", 8)
    local, remote = _copies(history, tmp_path)
    runner = RecordingSparkRunner(spark, wave=2)
    now = history.now + 10 * HOUR_MS
    dry_l = expire_snapshots(local, now_millis=now, retain_min=5, dry_run=True, runner=LocalRunner())
    dry_s = expire_snapshots(remote, now_millis=now, retain_min=5, dry_run=True, runner=runner)
    expired = len(dry_l.details["expired_snapshots"])
    assert expired > 32 and runner.functions == ["paimon_ops.lifecycle.expire.delta_candidates_task"] * \
        -(-expired // 16)  # one frame per wave
    assert comparable(dry_l, local.root) == comparable(dry_s, remote.root)
    # deltas that cannot be read (one garbled manifest, one manifest gone) arrive as their owners' errors in the
    # middle of the stream: the same files kept, the same warnings, as in-process
    for t in (local, remote):
        for sid, damage in ((20, "garble"), (30, "remove")):
            lst = t.snapshots.snapshot(sid).delta_manifest_list
            path = t.manifest_path(history.store.manifest_list(lst)[0].file_name)
            if damage == "remove":
                os.remove(path)
            else:
                with open(path, "wb") as f:
                    f.write(b"garbage")
    dry_l = expire_snapshots(local, now_millis=now, retain_min=5, dry_run=True, runner=LocalRunner())
    dry_s = expire_snapshots(remote, now_millis=now, retain_min=5, dry_run=True, runner=runner)
    assert len(dry_l.warnings) >= 2, dry_l.warnings
    assert comparable(dry_l, local.root) == comparable(dry_s, remote.root)


def _plant_orphans(root: str) -> list[str]:
    rels = [f"pt=a/bucket-0/data-orphan-{i}.parquet" for i in range(40)] +\
        ["pt=b/bucket-0/data-orphan.parquet.index", "manifest/manifest-x-0", "manifest/manifest-list-x-0",
         "index/index-x-0", "snapshot/.snapshot-99.tmp"]
    for rel in rels:
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(b"junk")
    return rels


def test_orphans_on_spark_same_report_and_files(history, spark, tmp_path):
    local, remote = _copies(history, tmp_path)
    for t in (local, remote):
        _plant_orphans(t.root)
        age_files(t.root, 4 * DAY_S)
    runner = RecordingSparkRunner(spark)
    now = int(time.time() * 1000)
    dry_l = remove_orphans(local, now_millis=now, dry_run=True, runner=LocalRunner())
    dry_s = remove_orphans(remote, now_millis=now, dry_run=True, runner=runner)
    assert runner.functions == ["paimon_ops.table.references.manifest_names_task"]
    assert comparable(dry_l, local.root) == comparable(dry_s, remote.root)
    assert dry_s.deleted["orphan"] == 44 and dry_s.details["referenced_names"] > 200
    r_l = remove_orphans(local, now_millis=now, runner=LocalRunner(), parallel_threshold=10)
    r_s = remove_orphans(remote, now_millis=now, runner=runner, parallel_threshold=10)
    # planned on Spark, preflight's reference check read the manifests on Spark again, then executors deleted
    assert runner.functions[1:] == ["paimon_ops.table.references.manifest_names_task"] * 2 +\
        ["paimon_ops.execution.deleter.delete_task"]
    assert comparable(r_l, local.root) == comparable(r_s, remote.root)
    assert rel_files(local.root) == rel_files(remote.root)
    check_references(remote)
    assert remove_orphans(remote, now_millis=now, runner=runner).total_deleted == 0


def test_default_runner_places_by_manifests_and_files(history, spark, tmp_path):
    """AutoRunner: within execution.local.max-manifests / max-files in-process; beyond (here a table option set
    low), manifest reading and deletes on Spark — with the same result."""
    small = AutoRunner()
    assert small.place(Workload(manifests=10, files=10))[0] is small.local
    _, why = small.place(Workload(manifests=10_001))
    assert why["where"].startswith("Spark") and "execution.local.max-manifests 10000" in why["why"]
    _, why = small.place(Workload(files=2_000_001))
    assert why["where"].startswith("Spark") and "execution.local.max-files 2000000" in why["why"]
    local, remote = _copies(history, tmp_path)
    opts = dict(remote.options_override)
    remote = FileStoreTable(remote.root, options_override={**opts, "execution.local.max-manifests": "5"})
    now = history.now + 10 * HOUR_MS
    r_l = expire_snapshots(local, now_millis=now, retain_min=20, max_deletes=1000)  # default runner: in-process
    r_s = expire_snapshots(remote, now_millis=now, retain_min=20, max_deletes=1000)
    assert r_l.runner["where"] == "in-process" and "within execution.local.max-manifests" in r_l.runner["why"]
    assert r_s.runner["where"].startswith("Spark") and "beyond execution.local.max-manifests 5" in r_s.runner["why"]
    assert comparable(r_l, local.root) == comparable(r_s, remote.root)
    assert rel_files(local.root) == rel_files(remote.root)


def test_failing_executor_read_fails_closed(history, spark, tmp_path):
    """A manifest that cannot be decoded on an executor stops the orphan plan before anything is deleted."""
    _, remote = _copies(history, tmp_path)
    age_files(remote.root, 4 * DAY_S)
    s = remote.snapshots.latest()
    manifest = history.store.manifest_list(s.base_manifest_list)[0].file_name
    with open(remote.manifest_path(manifest), "wb") as f:
        f.write(b"garbage")
    before = rel_files(remote.root)
    from paimon_ops.errors import PaimonOpsError
    with pytest.raises(PaimonOpsError, match="manifest"):
        remove_orphans(remote, runner=SparkRunner(spark))
    assert rel_files(remote.root) == before


CLUSTER_DRIVER = r"""
import json, sys
import paimon_ops as po
from paimon_ops.execution.placement import planning_on
from paimon_ops.execution.runner import SparkRunner
from paimon_ops.execution.spark_session import local_spark
from paimon_ops.table.table import FileStoreTable
url, expiry_root, orphans_root, expiry_now, orphans_now = sys.argv[1:6]
spark = local_spark(url, "paimon-ops-lifecycle-cluster-test", {"spark.executor.memory": "1g",
                                                                "spark.executor.cores": "1"})
runner = SparkRunner(spark, wave=2)
out = {}
for what, root, plan in (
        ("expiry", expiry_root, lambda m: m.expire_snapshots(now=int(expiry_now), retain_min=5, max_deletes=1000)),
        ("orphans", orphans_root, lambda m: m.remove_orphans(now=int(orphans_now)))):
    table = FileStoreTable(root)
    with planning_on(runner):
        dry = plan(po.Table(table).maintenance).dry_run_report()
    with planning_on(runner):
        done = plan(po.Table(table).maintenance).execute(table=table, runner=runner, parallel_threshold=10)
    out[what] = {"dry": dry.to_dict(), "done": done.to_dict()}
print(json.dumps(out, default=str))
spark.stop()
"""


@pytest.mark.cluster
def test_expiry_and_orphans_on_standalone_cluster(history, standalone_cluster, tmp_path):
    """A driver process on a standalone cluster (executors: the worker's processes, paimon_ops shipped to them as a
    zip): expiry and orphan removal give the reports, and leave the files, of the same runs in-process."""
    exp_l, exp_s = _copies(history, tmp_path / "expiry")
    orp_l, orp_s = _copies(history, tmp_path / "orphans")
    for t in (orp_l, orp_s):
        _plant_orphans(t.root)
        age_files(t.root, 4 * DAY_S)
    expiry_now, orphans_now = history.now + 10 * HOUR_MS, int(time.time() * 1000)
    script = tmp_path / "driver.py"
    script.write_text(CLUSTER_DRIVER)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), standalone_cluster["url"], exp_s.root, orp_s.root,
                           str(expiry_now), str(orphans_now)], env=env, capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    remote = json.loads(proc.stdout.strip().splitlines()[-1])
    kw = dict(now_millis=expiry_now, retain_min=5, max_deletes=1000, runner=LocalRunner())
    local = {"expiry": (expire_snapshots(exp_l, dry_run=True, **kw), expire_snapshots(exp_l, **kw)),
             "orphans": (remove_orphans(orp_l, now_millis=orphans_now, dry_run=True, runner=LocalRunner()),
                         remove_orphans(orp_l, now_millis=orphans_now, runner=LocalRunner()))}
    for what, (l_t, s_t) in {"expiry": (exp_l, exp_s), "orphans": (orp_l, orp_s)}.items():
        dry, done = local[what]
        assert remote[what]["done"]["runner"]["where"] == f"Spark {standalone_cluster['url']}"
        assert comparable(dry, l_t.root) == comparable(remote[what]["dry"], s_t.root)
        assert comparable(done, l_t.root) == comparable(remote[what]["done"], s_t.root)
        assert rel_files(l_t.root) == rel_files(s_t.root)
        check_references(s_t)
    assert local["expiry"][1].deleted["data"] >= 50 and local["orphans"][1].deleted["orphan"] == 44
