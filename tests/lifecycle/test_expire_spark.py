"""Deletes of an expiry and of a tag deletion run in batches on Spark executors (the session `spark` fixture); the
expiry's planning decodes its deltas there too (tests/lifecycle/test_spark_placement.py compares with in-process)."""
from __future__ import annotations

import paimon_ops as po
from paimon_ops.execution.placement import planning_on
from paimon_ops.execution.runner import SparkRunner
from tests.lifecycle.helpers import HOUR_MS, MetaSim, check_references, leaks, new_table


class RecordingSparkRunner(SparkRunner):
    """The real SparkRunner, remembering what it was asked to run and what came back."""

    def __init__(self, spark):
        super().__init__(spark)
        self.calls: list[tuple[str, int, list[dict]]] = []

    def run(self, function, table_location, tasks, progress=None, options=None):
        results = super().run(function, table_location, tasks, progress=progress, options=options)
        self.calls.append((function, len(tasks), results))
        return results

    def frame(self, function, table_location, tasks, schema, options=None):
        self.calls.append((function, len(tasks), []))  # rows that stay in Spark or stream back (`stream`)
        return super().frame(function, table_location, tasks, schema, options)


def test_expiry_and_tag_deletion_delete_on_executors(spark, tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    sim = MetaSim(new_table(str(wh), kind="append"))
    for i in range(12):
        sim.write(i, n=3, extra=True)
        if i % 4 == 3:
            sim.compact(i)
    sim.tag("t5", 5)
    runner = RecordingSparkRunner(spark)
    seen = []
    with planning_on(runner):  # the caller's runner places the planning too (as the CLI's --spark-master does)
        plan = po.Table(sim.table).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1)
    r = plan.execute(runner=runner, parallel_threshold=10, batch_size=8, progress=lambda d, n: seen.append((d, n)))
    assert r.deleted["data"] >= 8 and r.deleted["snapshot"] == len(r.details["expired_snapshots"])
    # the expired deltas were decoded on executors (the caller chose Spark), then the deletes ran there
    assert runner.calls[0][0] == "paimon_ops.lifecycle.expire.delta_candidates_task"
    runner.calls = runner.calls[1:]
    assert runner.calls, "no delete phase went to Spark"
    assert all(fn == "paimon_ops.execution.deleter.delete_task" for fn, _, _ in runner.calls)
    assert any(n > 1 for _, n, _ in runner.calls)  # several batches in one phase
    assert all(res["ok"] for _, _, results in runner.calls for res in results)
    executed = sum(res["deleted"] + res["missing"] for _, _, results in runner.calls for res in results)
    assert executed == r.total_deleted - r.deleted["snapshot"]  # snapshot files go one by one on the driver
    assert seen
    assert len(runner.calls) <= 3, [(n, len(res)) for _, n, res in runner.calls]
    check_references(sim.table)
    assert not leaks(sim.table)
    before = len(runner.calls)
    r = po.Table(sim.table).maintenance.delete_tags(["t5"]).execute(runner=runner, parallel_threshold=2, batch_size=2)
    assert r.deleted["data"] >= 1 and r.deleted["manifest-list"] >= 2 and len(runner.calls) > before
    check_references(sim.table)
    assert not leaks(sim.table)
