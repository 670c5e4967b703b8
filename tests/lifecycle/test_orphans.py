"""Orphan-file removal (maintenance.md §4, checklist 9)."""
from __future__ import annotations

import datetime as dt
import os
import posixpath
import time

import pytest

import paimon_ops as po
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, UnsafeOperationError, UnsupportedError
from paimon_ops.lifecycle.orphans import plan_remove_orphans
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.lifecycle.helpers import HOUR_MS, MetaSim, Sim, age_files, check_references, create_branch_from_tag, leaks, new_table, rel_files

DAY_S = 86400


@pytest.fixture
def wh(tmp_path) -> str:
    d = tmp_path / "wh"
    d.mkdir()
    return str(d)


def _plant(root: str, rel: str, age_s: float = 4 * DAY_S, data: bytes = b"junk") -> str:
    p = os.path.join(root, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(data)
    t = time.time() - age_s
    os.utime(p, (t, t))
    return p


def _table(wh: str) -> MetaSim:
    sim = MetaSim(new_table(wh, kind="append"))
    for i in range(4):
        sim.write(i, extra=True)
    sim.tag("t2", 2)
    sim.compact(0)
    sim.dv(1)
    sim.write(1)
    po.Table(sim.table).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=2).execute()
    age_files(sim.table.root, 4 * DAY_S)  # referenced files are old too: only references keep them
    return sim


def test_removes_only_unreferenced_old_files(wh):
    sim = _table(wh)
    t = sim.table
    old = ["pt=a/bucket-0/data-orphan.parquet", "pt=a/bucket-0/data-orphan.parquet.index", "manifest/manifest-x-0",
           "manifest/manifest-list-x-0", "index/index-x-0", "statistics/stat-x", "pt=b/bucket-0/.hidden.crc"]
    for rel in old:
        _plant(t.root, rel)
    temps = ["snapshot/.snapshot-9.1f6c.tmp", "snapshot/junk", "changelog/.changelog-3.tmp"]
    for rel in temps:
        _plant(t.root, rel)
    young = [_plant(t.root, "pt=a/bucket-0/data-young.parquet", age_s=3600),
             _plant(t.root, "snapshot/.snapshot-10.tmp", age_s=3600)]
    # never touched: directories (even named like files), unknown top-level dirs, schema/tag/consumer dirs, and
    # anything outside the table root
    os.makedirs(os.path.join(t.root, "pt=a", "bucket-0", "data-dir.parquet"))
    keep = [_plant(t.root, "pt=a/bucket-0/data-dir.parquet/inner"), _plant(t.root, "misc/notes.txt"),
            _plant(t.root, "tag/whatever"), _plant(t.root, "schema/.schema-1.tmp"),
            _plant(os.path.dirname(t.root), "t-sibling/pt=a/bucket-0/data-orphan.parquet")]
    before = rel_files(t.root)
    dry = po.Table(t).maintenance.remove_orphans().dry_run_report()
    assert rel_files(t.root) == before
    r = po.Table(t).maintenance.remove_orphans().execute()
    assert r.deleted == dry.deleted
    gone = before - rel_files(t.root)
    assert gone == set(old) | set(temps)
    assert r.deleted["orphan"] == len(old) and r.deleted["temp"] == len(temps)
    assert r.deleted_bytes["orphan"] == 4 * len(old)
    assert all(os.path.exists(p) for p in young + keep)
    check_references(t)
    assert not leaks(t) - {os.path.join(t.root, "pt=a/bucket-0/data-young.parquet"),
                           os.path.join(t.root, "misc/notes.txt"), keep[0]}
    assert po.Table(t).maintenance.remove_orphans().execute().total_deleted == 0  # idempotent


@pytest.mark.parametrize("older_than,err,msg", [
    (dt.timedelta(hours=12), UnsafeOperationError, "at least 1 day"),
    (dt.timedelta(days=-1), InvalidArgumentError, "negative"),
    ("3 days", InvalidArgumentError, "timedelta"),
])
def test_threshold_validation(wh, older_than, err, msg):
    sim = _table(wh)
    _plant(sim.table.root, "manifest/manifest-x-0")
    before = rel_files(sim.table.root)
    with pytest.raises(err, match=msg):
        plan_remove_orphans(sim.table, older_than=older_than)
    assert rel_files(sim.table.root) == before


def test_threshold_in_future_refused_and_short_needs_override(wh):
    sim = _table(wh)
    t = sim.table
    p = _plant(t.root, "manifest/manifest-x-0", age_s=7200)
    now = int(time.time() * 1000)
    with pytest.raises(InvalidArgumentError, match="in the future"):
        po.Table(t).maintenance.remove_orphans(older_than=now + 60_000, now=now).execute()
    with pytest.raises(InvalidArgumentError, match="in the future"):
        po.Table(t).maintenance.remove_orphans(older_than=dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)).execute()
    with pytest.raises(UnsafeOperationError):
        po.Table(t).maintenance.remove_orphans(older_than=now - HOUR_MS, now=now).execute()
    assert os.path.exists(p)
    r = po.Table(t).maintenance.remove_orphans(min_age=dt.timedelta(minutes=30), allow_short=True).execute()
    assert r.deleted == {"orphan": 1} and not os.path.exists(p)
    check_references(t)


def _break_snapshot(t: FileStoreTable):
    with open(t.snapshots.path(t.snapshots.latest_id()), "w") as f:
        f.write("{ broken")


def _break_manifest(t: FileStoreTable):
    s = t.snapshots.latest()
    with open(t.manifest_path(s.base_manifest_list), "wb") as f:
        f.write(b"broken")


def _lose_manifest(t: FileStoreTable):
    s = t.snapshots.latest()
    os.remove(t.manifest_path(s.delta_manifest_list))


def _lose_tag_manifest(t: FileStoreTable):
    os.remove(t.manifest_path(t.tags.tag("t2").delta_manifest_list))


def _branch_without_schema(t: FileStoreTable):
    os.makedirs(os.path.join(t.root, "branch", "branch-ghost", "snapshot"))


def _empty_branch_schema(t: FileStoreTable):
    os.makedirs(os.path.join(t.root, "branch", "branch-ghost", "schema"))


def _foreign_external_path(t: FileStoreTable):
    import dataclasses
    s = t.schema
    s2 = dataclasses.replace(s, id=s.id + 1, options={**s.options, "data-file.external-paths": "s3://other/x"})
    t.schemas.commit(s2)


@pytest.mark.parametrize("breaker,err", [
    (_break_snapshot, CorruptMetadataError), (_break_manifest, CorruptMetadataError),
    (_lose_manifest, UnsafeOperationError), (_lose_tag_manifest, UnsafeOperationError),
    (_branch_without_schema, UnsafeOperationError), (_empty_branch_schema, UnsafeOperationError),
    (_foreign_external_path, UnsupportedError),  # the feature gate: roots on another file system
])
def test_refuses_on_incomplete_information(wh, breaker, err):
    sim = _table(wh)
    t = sim.table
    _plant(t.root, "manifest/manifest-x-0")
    breaker(t)
    t = FileStoreTable(t.root)
    before = rel_files(t.root)
    with pytest.raises(err):
        po.Table(t).maintenance.remove_orphans().execute()
    assert rel_files(t.root) == before


def test_files_of_branches_and_long_lived_changelogs_are_kept(wh):
    sim = Sim(new_table(wh, kind="pk", options={"snapshot.num-retained.min": "1",
                                                "changelog.num-retained.min": "3"}))
    main = sim.table
    for i in range(3):
        sim.write([("a", i, f"m{i}")])
    sim.tag("base", 2)
    branch = create_branch_from_tag(main, "dev", "base")
    bsim = Sim(branch, start_ms=sim.now)
    bsim.write([("a", 7, "b7")])
    bsim.compact(0)
    sim.write([("b", 9, "x")])
    sim.compact(0)
    r = po.Table(main).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert main.changelogs.list_ids()  # decoupled: expired snapshots kept as changelogs
    age_files(main.root, 4 * DAY_S)
    r = po.Table(main).maintenance.remove_orphans().execute()
    assert r.total_deleted == 0, [f.path for f in r.files]
    assert r.details["branches"] == ["main", "dev"]
    check_references(main)
    assert bsim.check_reads() >= 2 and sim.check_reads() >= 2


def test_tag_with_dangling_changelog_list_does_not_block(wh):
    sim = MetaSim(new_table(wh, kind="append", options={"changelog-producer": "input"}))
    for i in range(4):
        sim.write(i, changelog=True)
    sim.tag("t2", 2)
    po.Table(sim.table).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert not os.path.exists(sim.table.manifest_path(sim.table.tags.tag("t2").changelog_manifest_list))
    age_files(sim.table.root, 4 * DAY_S)
    p = _plant(sim.table.root, "pt=a/bucket-0/changelog-orphan.parquet")
    r = po.Table(sim.table).maintenance.remove_orphans().execute()
    assert r.deleted == {"orphan": 1} and not os.path.exists(p)
    check_references(sim.table)


def test_empty_directories_and_partition_without_buckets(wh):
    sim = _table(wh)
    t = sim.table
    _plant(t.root, "pt=zz/bucket-0/data-lost.parquet")
    _plant(t.root, "pt=zz/bucket-1/data-lost2.parquet")
    success = _plant(t.root, "pt=yy/_SUCCESS")  # a partition directory without bucket dirs (apache/paimon#7295)
    age_files(os.path.join(t.root, "pt=zz"), 4 * DAY_S)
    age_files(os.path.join(t.root, "pt=yy"), 4 * DAY_S)
    os.makedirs(os.path.join(t.root, "pt=ww", "bucket-0"))  # an empty, old bucket directory
    age_files(os.path.join(t.root, "pt=ww"), 4 * DAY_S)
    r = po.Table(t).maintenance.remove_orphans().execute()
    assert r.deleted["orphan"] == 3
    for d in ("pt=zz", "pt=yy", "pt=ww"):
        assert not os.path.exists(os.path.join(t.root, d)), d
    assert not os.path.exists(success)
    assert os.path.isdir(os.path.join(t.root, "pt=a", "bucket-0"))
    assert r.deleted["directory"] == 6  # 3 bucket dirs, pt=yy itself, then the emptied pt=zz and pt=ww
    check_references(t)


def test_orphans_left_by_rollback_are_reclaimed_and_table_reads(wh):
    sim = Sim(new_table(wh, kind="pk"))
    t = sim.table
    for i in range(3):
        sim.write([("a", i, f"v{i}"), ("b", i, f"w{i}")])
    want = pu.sorted_rows(pu.read(wh, "db.t", snapshot_id=2))
    sim.compact(0)
    sim.write([("a", 9, "late")])
    po.Table(t).maintenance.rollback(snapshot_id=2).execute()
    age_files(t.root, 4 * DAY_S)
    lost = leaks(t)
    assert lost  # files written after snapshot 2
    r = po.Table(t).maintenance.remove_orphans().execute()
    assert {f.path for f in r.files if f.kind == "orphan"} == lost
    assert not leaks(t)
    check_references(t)
    assert pu.sorted_rows(pu.read(wh, "db.t")) == want
    sim.check_reads()


def test_plan_details(wh):
    sim = _table(wh)
    _plant(sim.table.root, "index/index-x-0")
    plan = plan_remove_orphans(sim.table)
    assert plan.details["branches"] == ["main"] and plan.details["referenced_names"] > 0
    assert [a.kind for a in plan.deletes] == ["orphan"]
    assert "referenced by no snapshot, tag or changelog" in plan.deletes[0].reason
    assert posixpath.basename(plan.deletes[0].path) == "index-x-0"
