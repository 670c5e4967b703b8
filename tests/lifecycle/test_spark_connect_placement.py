"""Expiry and orphan removal placed on Spark Connect (tests/conftest.py's `connect`: a real Connect server process,
this process only its client — no sparkContext, paimon_ops shipped with addArtifacts): the expired deltas decoded on
the server's executors and streamed back, the orphan candidates told from the referenced names by a join there, the
deletes run by executors through the deleter's `delete_task` — and the reports and the files left are exactly
those of the same run in-process, on two copies of one table (as tests/lifecycle/test_spark_placement.py proves
for a classic local[2] session)."""
from __future__ import annotations

import os
import time

import pytest

from paimon_ops.execution.runner import LocalRunner
from tests.lifecycle.helpers import HOUR_MS, age_files, check_references, leaks, rel_files
from tests.lifecycle.test_spark_placement import (
    DAY_S,
    RecordingSparkRunner,
    _copies,
    _plant_orphans,
    build_history,
    comparable,
    expire_snapshots,
    remove_orphans,
)

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    return build_history(tmp_path_factory)


EXPIRY_TASK = "paimon_ops.lifecycle.expire.delta_candidates_task"
NAMES_TASK = "paimon_ops.table.references.manifest_names_task"
DELETE_TASK = "paimon_ops.execution.deleter.delete_task"


def test_expiry_over_connect_same_report_and_files(history, connect, connect_server, tmp_path):
    local, remote = _copies(history, tmp_path)
    runner = RecordingSparkRunner(connect)
    now = history.now + 10 * HOUR_MS
    kw = dict(now_millis=now, retain_min=5, max_deletes=1000)
    dry_l = expire_snapshots(local, dry_run=True, runner=LocalRunner(), **kw)
    dry_s = expire_snapshots(remote, dry_run=True, runner=runner, **kw)
    assert runner.functions == [EXPIRY_TASK]
    assert comparable(dry_l, local.root) == comparable(dry_s, remote.root)
    r_l = expire_snapshots(local, runner=LocalRunner(), **kw)
    r_s = expire_snapshots(remote, runner=runner, parallel_threshold=10, **kw)
    assert r_s.runner["where"] == "Spark Connect" and r_l.runner["where"] == "in-process"
    assert DELETE_TASK in runner.functions  # the deletes ran on the server's executors
    assert r_l.deleted["data"] >= 50 and r_l.deleted["snapshot"] >= 50
    assert comparable(r_l, local.root) == comparable(r_s, remote.root)
    assert rel_files(local.root) == rel_files(remote.root)
    check_references(remote)
    assert not leaks(remote)


def test_orphans_over_connect_same_report_and_files(history, connect, tmp_path):
    local, remote = _copies(history, tmp_path)
    for t in (local, remote):
        _plant_orphans(t.root)
        age_files(t.root, 4 * DAY_S)
    outside = tmp_path / "elsewhere"  # a symlinked directory inside each table: never followed, never removed
    outside.mkdir()
    (outside / "data-outside.parquet").write_bytes(b"keep")
    for t in (local, remote):
        os.symlink(outside, os.path.join(t.root, "pt=a", "bucket-0", "link"))
    runner = RecordingSparkRunner(connect)
    now = int(time.time() * 1000)
    dry_l = remove_orphans(local, now_millis=now, dry_run=True, runner=LocalRunner())
    dry_s = remove_orphans(remote, now_millis=now, dry_run=True, runner=runner)
    assert runner.functions == [NAMES_TASK]
    assert comparable(dry_l, local.root) == comparable(dry_s, remote.root)
    assert dry_s.deleted["orphan"] == 44 and dry_s.details["referenced_names"] > 200
    r_l = remove_orphans(local, now_millis=now, runner=LocalRunner(), parallel_threshold=10)
    r_s = remove_orphans(remote, now_millis=now, runner=runner, parallel_threshold=10)
    assert runner.functions[1:] == [NAMES_TASK] * 2 + [DELETE_TASK]
    assert comparable(r_l, local.root) == comparable(r_s, remote.root)
    assert rel_files(local.root) == rel_files(remote.root)
    check_references(remote)
    assert remove_orphans(remote, now_millis=now, runner=runner).total_deleted == 0
    assert (outside / "data-outside.parquet").read_bytes() == b"keep"
