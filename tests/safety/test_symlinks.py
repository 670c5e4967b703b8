"""Nothing is ever listed, deleted or written through a symbolic link, on the in-process runner and
on Spark executors. A victim directory beside the warehouse and the warehouse itself are checksummed before and
after every operation: outside the table root nothing changes, ever."""
from __future__ import annotations

import json
import os
import shutil
import time

import pytest

import paimon_ops as po
from paimon_ops.errors import PaimonOpsError, UnsafeOperationError
from paimon_ops.execution.deleter import delete_task
from paimon_ops.execution.runner import LocalRunner, SparkRunner
from paimon_ops.table.fileio import FileIO
from tests.safety.util import age, make_victim, partitioned_table, tree_digest

SHAPES = ["partition-dir", "statistics-dir", "bucket-dir"]


def _plant(table_root: str, victim: str, shape: str) -> str:
    """A symlinked directory inside the table pointing at the victim; returns the link path."""
    if shape == "partition-dir":
        link = os.path.join(table_root, "dt=2099-01-01")
        os.symlink(victim, link)
    elif shape == "statistics-dir":
        link = os.path.join(table_root, "statistics")
        os.symlink(victim, link)
    else:
        link = os.path.join(table_root, "dt=2024-01-01", "bucket-9")
        os.symlink(os.path.join(victim, "bucket-0"), link)
    return link


@pytest.fixture
def setup(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh))
    victim = make_victim(str(tmp_path))
    # a genuine orphan inside the table: it must still be removed
    orphan = os.path.join(table.root, "dt=2024-01-01", "bucket-0", "data-orphan-0.parquet")
    with open(orphan, "wb") as f:
        f.write(b"orphan")
    age(str(wh))
    return table, victim, orphan


@pytest.mark.parametrize("runner_kind", ["local", "spark"])
@pytest.mark.parametrize("shape", SHAPES)
def test_remove_orphans_never_follows_a_symlink(setup, shape, runner_kind, request):
    table, victim, orphan = setup
    link = _plant(table.root, victim, shape)
    victim_before = tree_digest(victim)
    runner = LocalRunner() if runner_kind == "local" else SparkRunner(request.getfixturevalue("spark"))

    dry = po.Table(table).maintenance.remove_orphans().dry_run_report()
    listed = {a.path for a in dry.files}
    assert orphan in listed
    assert not any(p.startswith(link + "/") or p == link or p.startswith(victim) for p in listed)
    assert {"path": link, "target": os.readlink(link)} in dry.details["symlinks"]
    assert any(link in w and "left alone" in w for w in dry.warnings)
    json.loads(dry.to_json())

    # parallel_threshold=1: every delete phase goes to the runner (Spark executors for "spark")
    report = po.Table(table).maintenance.remove_orphans().execute(runner=runner, parallel_threshold=1)
    assert not os.path.exists(orphan)
    assert os.path.islink(link)
    assert {"path": link, "target": os.readlink(link)} in report.details["symlinks"]
    assert tree_digest(victim) == victim_before


@pytest.mark.parametrize("runner_kind", ["local", "spark"])
def test_a_delete_through_a_symlink_is_refused_by_the_executor_too(setup, runner_kind, request):
    """Even a path that passes the text check (inside the root) is refused when a component is a link."""
    table, victim, _ = setup
    link = _plant(table.root, victim, "bucket-dir")
    target = os.path.join(link, "data-x.parquet")
    before = tree_digest(victim)
    task = {"roots": [table.root], "paths": [target]}
    if runner_kind == "local":
        with pytest.raises(UnsafeOperationError, match="symbolic link"):
            delete_task(table.location, task)
    else:
        runner = SparkRunner(request.getfixturevalue("spark"))
        [result] = runner.run("paimon_ops.execution.deleter.delete_task", table.location, [task])
        assert not result["ok"] and "symbolic link" in result["error"]
    assert tree_digest(victim) == before


def test_a_data_file_that_is_a_symlink_is_never_deleted(setup):
    table, victim, _ = setup
    bucket = os.path.join(table.root, "dt=2024-01-02", "bucket-1")
    link = os.path.join(bucket, "data-looks-like-an-orphan.parquet")
    os.symlink(os.path.join(victim, "data-precious-1.parquet"), link)
    before = tree_digest(victim)
    report = po.Table(table).maintenance.remove_orphans().execute()
    assert os.path.islink(link)
    assert any(s["path"] == link for s in report.details["symlinks"])
    io, _ = FileIO.resolve(table.root)
    with pytest.raises(UnsafeOperationError, match="symbolic link"):
        io.delete_file(link)
    assert tree_digest(victim) == before


def test_compaction_never_writes_through_a_symlinked_bucket(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh))
    victim = tmp_path / "elsewhere"
    bucket = os.path.join(table.root, "dt=2024-01-01", "bucket-0")
    shutil.move(bucket, victim)  # the bucket's files now live elsewhere; the table reaches them through a link
    os.symlink(victim, bucket)
    before_victim, before_wh = tree_digest(str(victim)), tree_digest(str(wh))
    snapshots_before = table.snapshots.list_ids()
    with pytest.raises(PaimonOpsError, match="symbolic link"):
        po.Table(table).maintenance.compact(mode="full").execute(runner=LocalRunner())
    assert tree_digest(str(victim)) == before_victim
    after = tree_digest(str(wh))
    assert {k: v for k, v in after.items() if not k.startswith("db.db/t/dt=2024-01-02")} ==\
        {k: v for k, v in before_wh.items() if not k.startswith("db.db/t/dt=2024-01-02")}
    assert table.refresh().snapshots.list_ids() == snapshots_before  # nothing committed


def test_expiry_refuses_to_delete_through_a_symlinked_bucket(tmp_path):
    wh = tmp_path / "wh"
    wh.mkdir()
    table = partitioned_table(str(wh), commits=4, **{"snapshot.num-retained.min": "1",
                                                    "snapshot.num-retained.max": "1"})
    po.Table(table).maintenance.compact(mode="full").execute(runner=LocalRunner())  # older files become deletable by expiry
    victim = tmp_path / "elsewhere"
    bucket = os.path.join(table.root, "dt=2024-01-01", "bucket-0")
    shutil.move(bucket, victim)
    os.symlink(victim, bucket)
    before = tree_digest(str(victim))
    with pytest.raises(UnsafeOperationError, match="symbolic link"):
        po.Table(table.refresh()).maintenance.expire_snapshots(now=int(time.time() * 1000) + 10**9).execute(runner=LocalRunner())
    assert tree_digest(str(victim)) == before


def test_the_warehouse_root_itself_may_be_a_symlink(tmp_path):
    """The root the user gives is resolved once (its real path); only links *inside* the tree are refused."""
    real = tmp_path / "real"
    real.mkdir()
    table = partitioned_table(str(real))
    os.symlink(real, tmp_path / "alias")
    from paimon_ops.table.table import FileSystemCatalog
    t = FileSystemCatalog(str(tmp_path / "alias")).get_table("db.t")
    assert t.root == os.path.realpath(table.root)
    report = po.Table(t).maintenance.compact(mode="full").execute(runner=LocalRunner())
    assert report.snapshot_id is not None


def test_many_files_of_one_directory_are_listed_once_and_a_link_among_them_is_refused(setup):
    """a directory holding many of the files to delete is listed once instead of an lstat per file; a
    symbolic link among them (swapped in after planning) is refused exactly as before — the files before it are
    gone, the link, the files after it and the victim stay — on FileIO.delete_files and on the Deleter's grouped
    path (preflight bypassed: the executor's own checks)."""
    from paimon_ops.execution.deleter import Deleter
    from paimon_ops.execution.plan import DATA, FileAction
    from paimon_ops.table.local_fileio import DELETE_LISTING_RUN
    table, victim, _ = setup
    bucket = os.path.join(table.root, "dt=2024-01-02", "bucket-3")
    os.makedirs(bucket)
    names = [f"data-many-{i:03d}.parquet" for i in range(2 * DELETE_LISTING_RUN)]
    for n in names:
        with open(os.path.join(bucket, n), "wb") as f:
            f.write(b"x")
    paths = [os.path.join(bucket, n) for n in names]
    io, _ = FileIO.resolve(table.root)
    assert io.delete_files(paths[:DELETE_LISTING_RUN]) == [True] * DELETE_LISTING_RUN  # the listing path
    assert io.delete_files(paths[:3]) == [False] * 3  # quiet about missing files
    rest = paths[DELETE_LISTING_RUN:]
    link = rest[5]
    os.unlink(link)
    os.symlink(os.path.join(victim, "data-precious-1.parquet"), link)
    before = tree_digest(victim)
    other = os.path.join(table.root, "dt=2024-01-01", "bucket-0")
    actions = [FileAction(p, DATA, "test") for p in rest]
    with pytest.raises(UnsafeOperationError, match="symbolic link"):
        Deleter(table).delete(actions)
    assert os.path.islink(link) and all(not os.path.exists(p) for p in rest[:5])
    assert all(os.path.isfile(p) for p in rest[6:])
    assert tree_digest(victim) == before and os.path.isdir(other)
