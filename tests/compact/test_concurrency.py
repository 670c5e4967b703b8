"""Writers committing while we compact never lose rows: conflicting compactions abort cleanly (no snapshot, our
files deleted) or re-plan; non-conflicting appends commit fine."""
from __future__ import annotations

import os
import shutil
import threading

import pytest

import paimon_ops as po
from paimon_ops.compact.api import commit_compaction, execute_plan
from paimon_ops.compact.planner import plan_compaction
from paimon_ops.errors import CommitConflictError
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import create_table, write_rows
from tests import pypaimon_util as pu
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable

FIELDS = [("k", "INT"), ("v", "STRING")]


def _pk_table(warehouse: str, options: dict | None = None) -> FileStoreTable:
    t = create_table(warehouse, "db.t", FIELDS, primary_keys=["k"], options={"bucket": "2", **(options or {})})
    for i in range(3):
        write_rows(t, {"k": list(range(i * 10, i * 10 + 40)), "v": [f"v{i}"] * 40})
    return t.refresh()


def _rows(warehouse: str) -> list[dict]:
    return pu.sorted_rows(pu.read(warehouse, "db.t"), ["k"])


def _files_on_disk(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if "bucket-" in d or d.endswith("index")}


def test_conflicting_compaction_aborts_cleanly(warehouse):
    t = _pk_table(warehouse)
    plan = plan_compaction(t)
    executed = execute_plan(t, plan)
    assert all(os.path.exists(p) for p in executed.written_paths)
    po.Table(t).maintenance.compact().execute()  # someone else compacts the same buckets first
    latest = t.snapshots.latest_id()
    before = _rows(warehouse)
    with pytest.raises(CommitConflictError, match="no longer live"):
        commit_compaction(t, executed)
    assert t.snapshots.latest_id() == latest  # nothing committed
    assert not any(os.path.exists(p) for p in executed.written_paths)  # our output removed
    assert _rows(warehouse) == before


def test_append_to_same_bucket_during_compaction_is_kept(warehouse):
    """Non-DV PK table: new level-0 files in the same bucket do not conflict with a full compaction."""
    t = _pk_table(warehouse)

    def concurrent_writer(done: int, total: int) -> None:  # runs after our tasks, before our commit
        if done == total:
            pu.write(pu.get_table(warehouse, "db.t"), {"k": [1, 2, 100], "v": ["late", "late", "late"]})

    r = po.Table(t).maintenance.compact().execute(progress=concurrent_writer)
    assert r.snapshot_id is not None
    rows = {d["k"]: d["v"] for d in _rows(warehouse)}
    assert rows[1] == rows[2] == rows[100] == "late" and len(rows) == 61
    res = TableScanner(t.refresh()).scan_latest()
    assert {f.level for f in res.files} == {0, 5}


def test_replan_after_conflict(warehouse):
    t = _pk_table(warehouse)
    calls = []

    def other_compactor(done: int, total: int) -> None:
        if not calls:
            calls.append(1)
            write_rows(t.refresh(), {"k": [5], "v": ["x"]})
            po.Table(t.refresh()).maintenance.compact().execute()

    r = po.Table(t).maintenance.compact().execute(progress=other_compactor, max_replans=2)
    assert r.details["replans"] == 1
    rows = {d["k"]: d["v"] for d in _rows(warehouse)}
    assert rows[5] == "x" and len(rows) == 60


def test_writer_thread_during_compactions(warehouse):
    """A real concurrent writer (pypaimon in a thread) commits batches while we compact repeatedly."""
    t = _pk_table(warehouse)
    expected = {d["k"]: d["v"] for d in _rows(warehouse)}
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for i in range(15):
                ks = [i * 3, i * 3 + 1, 200 + i]
                pu.write(pu.get_table(warehouse, "db.t"), {"k": ks, "v": [f"w{i}"] * 3})
                for k in ks:
                    expected[k] = f"w{i}"
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
        finally:
            stop.set()

    th = threading.Thread(target=writer)
    th.start()
    runs = 0
    while not stop.is_set() or runs == 0:
        try:
            po.Table(FileStoreTable(t.root)).maintenance.compact().execute(max_replans=3)
        except CommitConflictError:
            pass  # aborted cleanly; the next round re-plans
        runs += 1
    th.join()
    assert not errors
    po.Table(FileStoreTable(t.root)).maintenance.compact().execute()
    assert {d["k"]: d["v"] for d in _rows(warehouse)} == expected


def test_a_commit_while_the_history_is_checked_is_not_a_missing_manifest(warehouse, monkeypatch):
    """The lineage check reads every snapshot and lists `manifest/` once. A writer committing between the two is no
    broken history: its snapshot's manifests were written before the snapshot, so a listing taken after the
    snapshots are read holds them. (With the listing first, a loaded machine saw test_writer_thread_during_compactions
    refuse: "named by the delta manifest list … of snapshot 6, does not exist".) The commit is made by pypaimon at
    exactly that moment, and the compaction that checks the table then commits on top of it."""
    from paimon_ops.table import lineage
    t = _pk_table(warehouse)
    read_owners = lineage._owners
    raced: list[int] = []

    def owners_with_a_commit_just_before(table):
        if not raced:
            pu.write(pu.get_table(warehouse, "db.t"), {"k": [900], "v": ["racing"]})
            raced.append(FileStoreTable(t.root).snapshots.latest_id())
        return read_owners(table)

    monkeypatch.setattr(lineage, "_owners", owners_with_a_commit_just_before)
    r = po.Table(FileStoreTable(t.root)).maintenance.compact().execute(max_replans=3)
    assert raced and r.snapshot_id is not None and r.snapshot_id > raced[0]
    assert {d["k"]: d["v"] for d in _rows(warehouse)}[900] == "racing"


def test_corrupt_file_commits_nothing_and_leaves_nothing(warehouse):
    t = _pk_table(warehouse)
    res = TableScanner(t).scan_latest()
    victim = sorted(res.files, key=lambda f: (f.bucket, f.name))[-1]
    with open(victim.path, "r+b") as fh:
        fh.seek(0)
        fh.write(b"garbage!" * 8)
    on_disk = _files_on_disk(t.root)
    latest = t.snapshots.latest_id()
    from paimon_ops.compact.api import CompactionTaskError
    with pytest.raises(CompactionTaskError, match=victim.name):
        po.Table(t).maintenance.compact().execute()
    assert t.snapshots.latest_id() == latest
    assert _files_on_disk(t.root) == on_disk  # every file we wrote was removed again


@pytest.mark.java
@pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available")
def test_java_dv_writer_during_compaction(tmp_path):
    """DV table: a Java writer (another process) compacts the bucket and rewrites its deletion vectors between
    our plan and our commit. Our commit must abort (it would resurrect rows Java deleted), then re-plan."""
    jt = JavaTable(tmp_path / "wh", "db", "dv")
    rows = [[i, f"v{i}-" + "x" * 40] for i in range(2000)]  # big level-5 run: later batches stay above it
    jh.run_many([
        ("create_table", jt.payload(schema={"fields": [{"name": "k", "type": "INT NOT NULL"},
                                                       {"name": "v", "type": "STRING"}],
                                            "partition_keys": [], "primary_keys": ["k"],
                                            "options": {"bucket": "1", "deletion-vectors.enabled": "true"}})),
        ("write", jt.payload(batches=[{"rows": rows}, {"rows": [[i, "u"] for i in range(10)]},
                                      {"rows": [[i, "w"] for i in range(5, 15)]}]))])
    shutil.copytree(jt.path, tmp_path / "control")
    table = FileStoreTable(str(jt.path))
    plan = plan_compaction(table)
    assert plan.tasks and plan.index_entries  # several levels and deletion vectors in the bucket

    def java_writer(done: int, total: int) -> None:
        if not getattr(java_writer, "ran", False):
            java_writer.ran = True
            jt.write([{"rows": [[1, "java"], [2, None]], "kinds": ["+U", "-D"]}])

    with pytest.raises(CommitConflictError):
        po.Table(table).maintenance.compact().execute(progress=java_writer)
    java_writer.ran = False
    r = po.Table(FileStoreTable(str(jt.path))).maintenance.compact().execute(progress=java_writer, max_replans=1)
    assert r.details["replans"] == 1
    got, missing = jh.run_many([("read", jt.payload()), ("check_files", jt.payload())])
    expected = {i: f"v{i}-" + "x" * 40 for i in range(2000)} | {i: "u" for i in range(10)} | {i: "w" for i in range(5, 15)}
    expected[1] = "java"
    del expected[2]
    assert {r[0]: r[1] for r in got["rows"]} == expected
    assert missing["missing"] == []
