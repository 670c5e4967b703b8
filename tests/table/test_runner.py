"""The task runner on a real local SparkSession (executors are Python workers started by Spark)."""
from __future__ import annotations

import os

from paimon_ops.execution.runner import LocalRunner, SparkRunner, spark_partitions


def echo_task(table_location: str, task: dict) -> dict:
    if task.get("fail"):
        raise ValueError("boom")
    return {"location": table_location, "value": task["value"] * 2, "pid": os.getpid()}


def test_spark_runner_runs_every_task_on_executors_and_keeps_order(spark):
    tasks = [{"value": i} for i in range(7)] + [{"fail": True}]
    seen = []
    results = SparkRunner(spark).run("tests.table.test_runner.echo_task", "/tmp/t", tasks,
                                     progress=lambda d, n: seen.append((d, n)))
    assert [r["value"] for r in results[:7]] == [i * 2 for i in range(7)]
    assert all(r["ok"] and r["location"] == "/tmp/t" for r in results[:7])
    assert results[7]["ok"] is False and "ValueError: boom" in results[7]["error"]
    assert any(r["pid"] != os.getpid() for r in results[:7])  # ran in Spark's Python workers
    assert seen[-1] == (8, 8)


def test_local_runner_same_contract():
    results = LocalRunner().run("tests.table.test_runner.echo_task", "/x", [{"value": 3}, {"fail": True}])
    assert results[0]["value"] == 6 and results[0]["ok"] and not results[1]["ok"]


def test_unimportable_task_function_is_that_tasks_error():
    results = LocalRunner().run("tests.table.no_such_module.task", "/x", [{"value": 1}])
    assert results[0]["ok"] is False and "ModuleNotFoundError" in results[0]["error"]


def slow_task(table_location: str, task: dict) -> dict:
    import threading
    import time
    time.sleep(0.2)
    return {"thread": threading.get_ident(), "partition": task.get("files", [{}])[0].get("file_size")}


def test_local_runner_runs_tasks_concurrently_largest_first():
    tasks = [{"files": [{"file_size": s}]} for s in (1, 5, 3, 4)]
    results = LocalRunner(workers=4).run("tests.table.test_runner.slow_task", "/x", tasks)
    assert [r["partition"] for r in results] == [1, 5, 3, 4]  # results in task order
    assert len({r["thread"] for r in results}) > 1  # ran on several threads


def test_spark_partitions_pack_short_tasks_per_slot_and_spread_long_ones():
    """Short work: one partition per slot, balanced largest-first (each PySpark task costs ~45 ms of worker
    overhead); long work, or unknown slots: one partition per task, largest first, balanced by Spark itself."""
    mb, gb = 1 << 20, 1 << 30
    assert spark_partitions([10 * mb, 9 * mb, 8 * mb, 1 * mb], slots=2) == [[0, 3], [1, 2]]
    assert spark_partitions([1 * mb] * 5, slots=8) == [[0], [1], [2], [3], [4]]
    assert spark_partitions([gb, 2 * gb, gb, gb], slots=2) == [[1], [0], [2], [3]]
    assert spark_partitions([3, 1, 2], slots=None) == [[0], [2], [1]]
    many = spark_partitions([mb] * 100, slots=4)
    assert len(many) == 4 and sorted(i for g in many for i in g) == list(range(100))
    assert {len(g) for g in many} == {25}


def test_spark_runner_runs_packed_partitions_in_parallel(spark):
    import time
    t0 = time.time()
    results = SparkRunner(spark).run("tests.table.test_runner.slow_task", "/x",
                                     [{"files": [{"file_size": i}]} for i in range(4)])
    assert all(r["ok"] for r in results) and [r["partition"] for r in results] == [0, 1, 2, 3]
    assert time.time() - t0 < 0.2 * 4 + 5  # not a proof of parallelism, only that nothing hung


def test_auto_runner_places_small_plans_in_process_and_says_why():
    from paimon_ops.execution.placement import AutoRunner
    from paimon_ops.execution.plan import Workload
    auto = AutoRunner(max_local_bytes=100, max_local_tasks=2)
    runner, why = auto.place(Workload(tasks=0, deletes=10))
    assert runner is auto.local and "no tasks" in why["why"] and not auto.spark.started
    runner, why = auto.place(Workload(tasks=2, input_bytes=100))
    assert runner is auto.local and why["where"].startswith("in-process") and "within" in why["why"]
    runner, why = auto.place(Workload(tasks=3, input_bytes=10))
    assert runner is auto.spark and "beyond" in why["why"] and why["where"] == "Spark local[*]"
    assert not auto.spark.started  # placement alone never starts Spark


def test_auto_runner_thresholds_are_table_options(tmp_path, spark):
    from paimon_ops.compact.planner import plan_compaction
    from paimon_ops.execution.executor import execute
    from paimon_ops.execution.placement import AutoRunner
    from paimon_ops.table.table import FileStoreTable
    from tests.safety.util import partitioned_table
    wh = tmp_path / "wh"
    wh.mkdir()
    base = partitioned_table(str(wh), commits=3)
    small = execute(plan_compaction(base), base, runner=AutoRunner())
    assert small.runner["where"].startswith("in-process") and "within" in small.runner["why"]
    big = FileStoreTable(base.root, identifier="db.t", options_override={"execution.local.max-input-size": "1 b"})
    import pyarrow as pa

    from paimon_ops.table.writer import TableWriter
    w = TableWriter(big.refresh())
    w.write(pa.table({"dt": ["2024-01-01"] * 3, "k": [1, 2, 3], "v": ["a", "b", "c"]}))
    w.commit()
    report = execute(plan_compaction(big.refresh()), big.refresh(), runner=AutoRunner())
    assert report.runner["where"].startswith("Spark") and "execution.local.max-input-size" in report.runner["why"]
    assert report.details["task_pids"] and os.getpid() not in report.details["task_pids"]


def test_the_shipped_package_zip_is_the_whole_package():
    """What SparkRunner ships to executors without paimon_ops installed: every module of the package under
    `paimon_ops/` (not only the subpackage the runner lives in) and its package data."""
    import io
    import zipfile

    from paimon_ops.execution.runner import _package_zip
    names = set(zipfile.ZipFile(io.BytesIO(_package_zip())).namelist())
    for must in ("paimon_ops/__init__.py", "paimon_ops/execution/runner.py", "paimon_ops/execution/tasks.py",
                 "paimon_ops/execution/deleter.py",
                 "paimon_ops/table/references.py", "paimon_ops/schemas/plan.schema.json"):
        assert must in names, must
    assert all(n.startswith("paimon_ops/") and "__pycache__" not in n for n in names)
