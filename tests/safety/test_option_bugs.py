"""Options mean what they say everywhere — the code location's overrides reach Spark executors, a
configured 0 is never replaced by a default, one writer-settings path refuses an unknown codec before anything is
written."""
from __future__ import annotations

import os

import pyarrow.parquet as pq
import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidOptionError
from paimon_ops.execution.runner import LocalRunner, SparkRunner
from paimon_ops.options import COMMIT_MAX_RETRIES, COMPACTION_SMALL_FILE_RATIO, NUM_SORTED_RUN_COMPACTION_TRIGGER, Options
from paimon_ops.table.commit import FileStoreCommit
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests.safety.util import partitioned_table, tree_digest


def test_overrides_travel_with_the_tasks_to_spark_executors(tmp_path, spark):
    wh = tmp_path / "wh"
    wh.mkdir()
    base = partitioned_table(str(wh))  # written with file.compression=none
    table = FileStoreTable(base.root, identifier="db.t", options_override={"file.compression": "gzip"})
    report = po.Table(table).maintenance.compact(mode="full").execute(runner=SparkRunner(spark))
    assert report.details["task_pids"] and os.getpid() not in report.details["task_pids"]  # ran on executors
    written = [a.path for a in report.files if a.reason == "written by compaction"]
    assert written
    for p in written:
        assert pq.ParquetFile(p).metadata.row_group(0).column(0).compression == "GZIP"


def test_a_configured_zero_wins():
    opts = Options({"commit.max-retries": "0", "num-sorted-run.compaction-trigger": "0",
                    "compaction.small-file-ratio": "0.0"})
    assert opts.get(COMMIT_MAX_RETRIES) == 0
    assert opts.get(COMPACTION_SMALL_FILE_RATIO) == 0.0
    with pytest.raises(InvalidOptionError, match="num-sorted-run.compaction-trigger"):
        opts.get(NUM_SORTED_RUN_COMPACTION_TRIGGER)


def test_commit_max_retries_zero_means_no_retry(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    t = partitioned_table(str(wh), commits=1, **{"commit.max-retries": "0"})
    assert FileStoreCommit(t).max_retries == 0


@pytest.mark.parametrize("option,value", [("compaction.min.file-num", "0"), ("num-sorted-run.compaction-trigger", "0"),
                                          ("target-file-row-num", "0")])
def test_meaningless_zero_is_refused_not_replaced(tmp_path, option, value):
    wh = tmp_path / "wh"
    wh.mkdir()
    base = partitioned_table(str(wh))
    table = FileStoreTable(base.root, identifier="db.t", options_override={option: value})
    with pytest.raises(InvalidOptionError, match=option):
        po.Table(table).maintenance.compact(mode="full").execute(runner=LocalRunner())


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_unknown_codec_is_refused_before_anything_is_written(tmp_path, fmt):
    wh = tmp_path / "wh"
    wh.mkdir()
    base = partitioned_table(str(wh), **{"file.format": fmt})
    before = tree_digest(str(wh))
    table = FileStoreTable(base.root, identifier="db.t", options_override={"file.compression": "bogus"})
    with pytest.raises(InvalidOptionError, match="file.compression"):
        po.Table(table).maintenance.compact(mode="full").execute(runner=LocalRunner())
    assert tree_digest(str(wh)) == before
    assert len(TableScanner(base).scan(base.snapshots.latest()).files) > 0
