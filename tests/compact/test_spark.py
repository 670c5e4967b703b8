"""Compaction tasks on Spark: the session's local SparkSession, and a standalone cluster on 127.0.0.1 whose
executors are separate processes that receive only the table path and the task JSON."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

import paimon_ops as po
from paimon_ops.execution.runner import SparkRunner
from paimon_ops.table.table import FileSystemCatalog
from tests import pypaimon_util as pu
from tests.compact.test_pypaimon import SCHEMA, _rows, _write_history

REPO = Path(__file__).resolve().parents[2]


def _make_table(warehouse: str, ident: str = "db.t", options: dict | None = None):
    t = pu.create_table(warehouse, ident, SCHEMA, partition_keys=["pt"], primary_keys=["pt", "id"],
                        options={"bucket": "3", "merge-engine": "partial-update", **(options or {})})
    _write_history(t)


def test_compaction_on_local_spark(spark, warehouse):
    _make_table(warehouse, options={"deletion-vectors.enabled": "true"})
    table = FileSystemCatalog(warehouse).get_table("db.t")
    r0 = po.Table(table).maintenance.compact().execute()  # level 0 -> max level (DV readers now see the rows)
    before = _rows(warehouse, "db.t")
    pu.write(pu.get_table(warehouse, "db.t"), {"pt": ["x"] * 3, "id": [1, 2, 77], "a": [9, None, 7],
                                               "b": [None, "q", "r"]})
    seen = []
    r = po.Table(table.refresh()).maintenance.compact().execute(runner=SparkRunner(spark), progress=lambda d, n: seen.append((d, n)))
    assert r.snapshot_id and r0.snapshot_id and seen[-1] == (r.details["tasks"], r.details["tasks"])
    rows = {(d["pt"], d["id"]): d for d in _rows(warehouse, "db.t")}
    assert rows[("x", 1)]["a"] == 9 and rows[("x", 1)]["b"] == {(d["pt"], d["id"]): d for d in before}[("x", 1)]["b"]
    assert rows[("x", 2)]["b"] == "q" and rows[("x", 77)]["a"] == 7
    assert len(rows) == len(before) + 1


DRIVER = r"""
import json, os, sys
import paimon_ops as po
from paimon_ops.execution.runner import SparkRunner
from paimon_ops.execution.spark_session import local_spark
spark = local_spark(sys.argv[1], "paimon-ops-cluster-test", {"spark.executor.memory": "1g", "spark.executor.cores": "1"})
report = po.Table.open(sys.argv[2]).maintenance.compact(memory_budget=1 << 20).execute(runner=SparkRunner(spark))
print(json.dumps({"report": report.to_dict(), "driver_pid": os.getpid()}))
spark.stop()
"""


@pytest.mark.cluster
def test_compaction_on_standalone_cluster(standalone_cluster, warehouse, tmp_path):
    _make_table(warehouse)
    before = _rows(warehouse, "db.t")
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    # The driver runs from a directory without the repository on sys.path: executors get paimon_ops only from
    # the zip SparkRunner ships; the package itself is installed in the venv, so make sure the shipped copy works
    # by running the executors' Python from a clean working directory.
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, str(script), standalone_cluster["url"], FileSystemCatalog(warehouse).table_path("db.t")],
                          env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    report = out["report"]
    assert report["snapshot_id"] and report["details"]["tasks"] >= 3
    assert out["driver_pid"] not in report["details"]["task_pids"]  # tasks ran in executor processes
    assert _rows(warehouse, "db.t") == before
    state = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{standalone_cluster['ui']}/json/").read())
    assert any(a["name"] == "paimon-ops-cluster-test" for a in state.get("completedapps", []) + state.get("activeapps", []))
