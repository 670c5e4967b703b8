"""Compaction over Spark Connect for real: a Spark Connect server (pyspark's own jars) runs as a separate process on
127.0.0.1, this process is only a Connect client, and the tasks run in the server's Python workers. The package
reaches them the way SparkRunner ships it over Connect (`addArtifacts(..., pyfile=True)`, there is no sparkContext).
The server and the client session are tests/conftest.py's `connect_server` / `connect` (tests/spark_connect.py)."""
from __future__ import annotations

import os

import pytest

from paimon_ops.execution.runner import SparkRunner
from tests.spark_connect import ship_test_modules

pytestmark = pytest.mark.cluster

THIS_MODULE = "tests.compact.test_spark_connect"


def probe_task(table_location: str, task: dict) -> dict:
    """A test task for the runner's contract; runs in the Connect server's Python workers."""
    if task.get("fail"):
        raise ValueError(f"boom {task['n']}")
    import paimon_ops
    return {"location": table_location, "value": task["n"] * 2, "pid": os.getpid(),
            "paimon_ops_file": paimon_ops.__file__}


def _expected_and_table(warehouse: str):
    from paimon_ops.table.writer import create_table, write_rows
    table = create_table(warehouse, "db.t", [("k", "BIGINT"), ("v", "STRING")], primary_keys=["k"],
                         options={"bucket": "2"})
    write_rows(table, {"k": [1, 2, 3, 4, 5, 6], "v": [f"a{i}" for i in range(1, 7)]})
    write_rows(table.refresh(), {"k": [4, 5, 6, 7, 8, 9], "v": [f"b{i}" for i in range(4, 10)]})
    write_rows(table.refresh(), {"k": [2, 10, 5, 8], "v": ["c2", "c10", None, None]}, row_kinds=[0, 0, 3, 3])
    expected = [{"k": 1, "v": "a1"}, {"k": 2, "v": "c2"}, {"k": 3, "v": "a3"}, {"k": 4, "v": "b4"},
                {"k": 6, "v": "b6"}, {"k": 7, "v": "b7"}, {"k": 9, "v": "b9"}, {"k": 10, "v": "c10"}]
    return table.refresh(), expected


def test_full_compaction_runs_on_spark_connect(connect, connect_server, warehouse):
    import paimon_ops as po
    from paimon_ops.table.scan import TableScanner
    from tests import pypaimon_util as pu

    table, expected = _expected_and_table(warehouse)
    before = TableScanner(table).scan_latest()
    assert {f.level for f in before.files} == {0} and len(before.files) >= 5  # three writes into two buckets
    assert pu.sorted_rows(pu.read(warehouse, "db.t"), ["k"]) == expected  # pypaimon merges level 0 the same way

    seen = []
    report = po.Table(table).maintenance.compact(mode="full").execute(runner=SparkRunner(connect), progress=lambda d, n: seen.append((d,
        n)))

    assert report.snapshot_id is not None and report.details["tasks"] == 2 and seen[-1] == (2, 2)
    pids = report.details["task_pids"]
    assert pids and os.getpid() not in pids and connect_server["pid"] not in pids  # the server's Python workers
    assert report.details["rows_out"] == len(expected)
    after = TableScanner(table.refresh()).scan_latest()
    assert after.snapshot.id == report.snapshot_id and after.snapshot.commit_kind == "COMPACT"
    assert after.files and {f.level for f in after.files} == {5}, [(f.name, f.level) for f in after.files]
    assert after.total_rows == len(expected)  # deletes dropped at the max level
    assert pu.sorted_rows(pu.read(warehouse, "db.t"), ["k"]) == expected


def _ship_test_module(connect, tmp_path) -> None:
    ship_test_modules(connect, tmp_path, ("tests/__init__.py", "tests/pypaimon_util.py", "tests/spark_connect.py",
                                          "tests/net.py",
                                          "tests/compact/__init__.py",
                                          "tests/compact/test_spark_connect.py"))


def test_runner_error_path_over_connect(connect, tmp_path):
    runner = SparkRunner(connect)
    # A paimon_ops task that raises (a path outside the allowed roots) next to one that succeeds.
    allowed, outside = tmp_path / "table", tmp_path / "elsewhere"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "data-1.parquet").write_bytes(b"x")
    (outside / "keep.txt").write_bytes(b"y")
    roots = [str(allowed)]
    results = runner.run("paimon_ops.execution.deleter.delete_task", str(allowed), [
        {"roots": roots, "paths": [str(allowed / "data-1.parquet")]},
        {"roots": roots, "paths": [str(outside / "keep.txt")]},
    ])
    assert results[0]["ok"] is True and results[0]["deleted"] == 1
    assert results[1]["ok"] is False and "UnsafeOperationError" in results[1]["error"]
    assert str(outside / "keep.txt") in results[1]["error"]
    assert not (allowed / "data-1.parquet").exists() and (outside / "keep.txt").read_bytes() == b"y"

    # A module-level task function of this test module: the failing task is reported, the others keep their order.
    _ship_test_module(connect, tmp_path)
    seen = []
    results = runner.run(f"{THIS_MODULE}.probe_task", "/tmp/t", [{"n": 0}, {"n": 1, "fail": True}, {"n": 2}],
                         progress=lambda d, n: seen.append((d, n)))
    assert [r["ok"] for r in results] == [True, False, True] and seen[-1] == (3, 3), results
    assert results[1]["error"] == "ValueError: boom 1" and "duration_s" in results[1]
    assert [results[0]["value"], results[2]["value"]] == [0, 4] and results[0]["location"] == "/tmp/t"
    assert os.getpid() not in {results[0]["pid"], results[2]["pid"]}
    # the executors imported paimon_ops from the zip SparkRunner shipped with addArtifacts, not from this checkout
    assert all("paimon_ops.zip" in r["paimon_ops_file"] for r in (results[0], results[2])), results[0]
