"""What used to succeed wrongly is refused with a clear message, and errors name the path,
the table and the option in the caller's words.

* `remove-orphans --min-age 0` without `--allow-short` (it silently ran with the 3-day default);
* `compact --mode full --order-by id` (`--order-by` was ignored);
* compaction after the table's `bucket` option changed — or was set to 0 — while the files sit in the old buckets:
  refused when planning, and refused at the commit when the option changes between plan and commit (the files the
  run wrote are removed); Java Paimon 0.9 reads the table as before;
* a permission error names the full path and the table (it named only `'snapshot'`)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import shutil
import subprocess
import sys

import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError, InvalidOptionError, UnsafeOperationError, UnsupportedError
from paimon_ops.table.table import FileStoreTable
from tests.cli.conftest import REPO
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.safety.java_proof import java_view
from tests.safety.util import partitioned_table, tree_digest

SCHEMA = {"fields": [{"name": "pt", "type": "STRING NOT NULL"}, {"name": "id", "type": "INT NOT NULL"},
                     {"name": "v", "type": "STRING"}],
          "partition_keys": ["pt"], "primary_keys": ["pt", "id"], "options": {"bucket": "2"}}


def test_min_age_zero_and_order_by_are_refused(tmp_path):
    partitioned_table(str(tmp_path))
    t = po.Catalog(str(tmp_path)).get_table("db.t")
    with pytest.raises(UnsafeOperationError, match="allow_short"):
        t.maintenance.remove_orphans(min_age=dt.timedelta(0))
    assert t.maintenance.remove_orphans(min_age=dt.timedelta(0), allow_short=True).details["older_than"]
    with pytest.raises(InvalidArgumentError, match="order_by.*mode='sort'"):
        t.maintenance.compact(mode="full", order_by=["v"])


def _set_bucket(table_root: str, value: str) -> None:
    """ALTER TABLE … SET ('bucket' = value): a new schema file, as Java writes it."""
    t = FileStoreTable(table_root)
    s = t.schema
    assert t.schemas.commit(dataclasses.replace(s, id=s.id + 1, options={**s.options, "bucket": value}))


@pytest.fixture(scope="module")
def java_src(tmp_path_factory):
    wh = tmp_path_factory.mktemp("bucket_java")
    t = JavaTable(wh, "db", "t")
    batches = [{"rows": [[p, i, f"v{n}-{i}"] for p in ("a", "b") for i in range(10)]} for n in range(3)]
    jh.run_many([("create_table", t.payload(schema=SCHEMA)), ("write", t.payload(batches=batches))])
    return wh


@pytest.mark.java
def test_compaction_never_rescales(java_src, tmp_path):
    wh = tmp_path / "wh"
    shutil.copytree(java_src, wh)
    root = str(wh / "db.db" / "t")
    reference = java_view(root)
    t = po.Catalog(str(wh)).get_table("db.t")
    plan = t.maintenance.compact(mode="full")  # planned while the option still says 2
    assert plan.tasks
    # the option changes before the commit: the commit refuses, removing what the tasks wrote
    _set_bucket(root, "4")
    before = tree_digest(str(wh))
    with pytest.raises(UnsupportedError, match="bucket option is now 4.*rescaling is its own operation"):
        plan.execute(runner=po.LocalRunner())
    assert tree_digest(str(wh)) == before
    # planned after the change: refused at once, naming the partition
    with pytest.raises(UnsupportedError, match="partition .*pt.* sits in 2 buckets but the table's bucket option is "
                                               "now 4"):
        po.Catalog(str(wh)).get_table("db.t").maintenance.compact(mode="full")
    assert tree_digest(str(wh)) == before
    _set_bucket(root, "0")
    before = tree_digest(str(wh))
    with pytest.raises(InvalidOptionError, match="'bucket' on table db.t"):
        po.Catalog(str(wh)).get_table("db.t").maintenance.compact(mode="full")
    assert tree_digest(str(wh)) == before
    # Java reads the table as before (its files and rows), and the CLI says it in one line
    _set_bucket(root, "2")
    r = subprocess.run([sys.executable, "-m", "paimon_ops.cli", "compact", str(wh), "db.t", "--json"], cwd=REPO,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    view = java_view(root)
    assert view["missing"] == [] and view["latest"] == reference["latest"]


def test_permission_errors_name_the_path_and_the_table(tmp_path):
    from tests.safety.test_preflight import unprivileged
    partitioned_table(str(tmp_path))
    snap = tmp_path / "db.db" / "t" / "snapshot"
    os.chmod(snap, 0)
    try:
        r = unprivileged("snapshots", tmp_path, "db.t", "--json")
    finally:
        os.chmod(snap, 0o755)
    assert r.code == 2 and len(r.err.splitlines()) == 1, r.err
    assert "db.t" in r.err and str(snap) in r.err and "ermission denied" in r.err, r.err
    assert json.loads(r.out)["error"]["message"]


def test_a_bad_table_option_is_blamed_as_the_option(tmp_path):
    """`compaction.dv-ratio-threshold = 2` on the table is reported as that option of that table, never as
    `--threshold` (which the caller did not pass); likewise `snapshot.num-retained.max = -1`, never `--retain-max`."""
    partitioned_table(str(tmp_path), **{"compaction.dv-ratio-threshold": "2", "snapshot.num-retained.max": "-1"})
    for argv, option, never in ((["compact", "--mode", "dv-ratio"], "compaction.dv-ratio-threshold", "--threshold"),
                                (["expire-snapshots"], "snapshot.num-retained.max", "--retain-max")):
        r = subprocess.run([sys.executable, "-m", "paimon_ops.cli", argv[0], str(tmp_path), "db.t", *argv[1:]],
                           cwd=REPO, capture_output=True, text=True)
        assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
        assert f"option '{option}' on table db.t" in r.stderr and never not in r.stderr, r.stderr
