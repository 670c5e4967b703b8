"""The task runner on a real local SparkSession (executors are Python workers started by Spark)."""
from __future__ import annotations

import os

from paimon_ops.runner import LocalRunner, SparkRunner


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
