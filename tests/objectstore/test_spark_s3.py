"""Spark executors reach the object store with the driver's settings, shipped with the task (never from their own
environment, never printed). A real local SparkSession runs compaction tasks and bulk-delete tasks for a table on
the S3 server whose endpoint and credentials were given only as warehouse options; the same task without the
shipped options fails on the executor for lack of credentials. No report, plan, task result or log line carries the
secret."""
from __future__ import annotations

import json
import logging
import os

import pytest

import paimon_ops as po
from paimon_ops.execution.runner import SparkRunner
from paimon_ops.table.table import FileSystemCatalog
from paimon_ops.table.writer import write_rows
from tests.lifecycle.helpers import new_table
from tests.objectstore.conftest import ACCESS_KEY, SECRET_KEY

pytestmark = pytest.mark.filterwarnings("ignore")


def test_executors_get_store_settings_from_the_task(spark, s3_server, bucket, tmp_path, monkeypatch, caplog):
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    # the executors' own environment knows nothing about the server
    executor_env = spark.sparkContext.parallelize([0], 1).map(
        lambda _: sorted(v for k, v in __import__("os").environ.items() if k.startswith("AWS_"))).collect()[0]
    assert SECRET_KEY not in executor_env and ACCESS_KEY not in executor_env
    caplog.set_level(logging.DEBUG)
    wh = tmp_path / "wh"
    wh.mkdir()
    t = new_table(str(wh), kind="pk")
    for i in range(5):
        write_rows(t, {"pt": ["a", "b", "a"], "k": [i, i, 100 + i], "v": [f"v{i}", None, "x"]})
    s3_server.upload(wh, bucket, "warehouse")
    table = FileSystemCatalog(f"s3://{bucket}/warehouse", options=s3_server.options).get_table("db.t")
    runner = SparkRunner(spark)

    # without the shipped settings an executor cannot open the table (proves the executors do not have them)
    bare = runner.run("paimon_ops.execution.deleter.delete_task", table.location,
                      [{"roots": [table.root], "paths": [table.root + "/nothing"]}])
    assert not bare[0]["ok"] and "no credentials" in bare[0]["error"]

    report = po.Table(table).maintenance.compact(mode="full", force=True).execute(runner=runner)  # rewrite tasks run on executors
    assert report.written
    table = table.refresh()
    plan = po.Table(table).maintenance.expire_snapshots(retain_min=1, retain_max=1).dry_run_report()
    done = po.Table(table).maintenance.expire_snapshots(retain_min=1, retain_max=1).execute(runner=runner, parallel_threshold=1)
    assert sum(done.deleted.values()) == sum(plan.deleted.values()) > 0
    assert table.refresh().snapshots.list_ids() == [table.snapshots.latest_id()]
    remaining = set(s3_server.keys(bucket, "warehouse/"))
    deleted = [a for a in done.files if a.kind != "hint"]  # the report lists the hints it wrote too
    assert deleted and not any(a.path.split("/", 1)[1] in remaining for a in deleted)
    texts = [json.dumps(r.to_dict(), default=str) for r in (report, plan, done)] + [r.summary() for r in (report, done)]
    texts += [rec.getMessage() for rec in caplog.records]
    texts += [repr(table.io), repr(table.io.settings)]
    for text in texts:
        assert SECRET_KEY not in text
