"""Rollback to a snapshot or a tag: metadata only (maintenance.md §3.8, checklist 12)."""
from __future__ import annotations

import json
import os

import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError, UnsafeOperationError
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.rollback import plan_rollback, require_confirmation
from paimon_ops.table.table import FileStoreTable
from tests import pypaimon_util as pu
from tests.lifecycle.helpers import HOUR_MS, Sim, check_references, new_table, rel_files


@pytest.fixture
def wh(tmp_path) -> str:
    d = tmp_path / "wh"
    d.mkdir()
    return str(d)


def _history(wh: str) -> Sim:
    sim = Sim(new_table(wh, kind="pk"))
    for i in range(6):
        sim.write([("a", i, f"v{i}"), ("b", i % 2, f"w{i}")])
        if i == 2:
            sim.compact(0)
    sim.tag("early", 2)
    sim.tag("late", 6)
    return sim


def _data_files(root: str) -> set[str]:
    return {p for p in rel_files(root) if p.startswith("pt=")}


def test_rollback_to_snapshot(wh):
    sim = _history(wh)
    t = sim.table
    want = pu.sorted_rows(pu.read(wh, "db.t", snapshot_id=4))
    data_before = _data_files(t.root)
    manifests_before = {p for p in rel_files(t.root) if p.startswith("manifest/")}
    r = po.Table(t).maintenance.rollback(snapshot_id=4).execute()
    assert t.snapshots.list_ids() == [1, 2, 3, 4]
    assert t.snapshots.latest_id() == 4
    assert open(os.path.join(t.snapshots.dir, "LATEST")).read() == "4"
    assert t.tags.names() == ["early"]
    assert r.deleted == {"snapshot": 3, "tag": 1}
    assert r.details["removed_snapshots"] == [5, 6, 7] and r.details["removed_tags"] == ["late"]
    assert _data_files(t.root) == data_before  # metadata only: the newer files are orphans now
    assert {p for p in rel_files(t.root) if p.startswith("manifest/")} == manifests_before
    assert pu.sorted_rows(pu.read(wh, "db.t")) == want
    check_references(t)
    assert sim.check_reads() == 5
    # the table goes on: the next commit reuses id 5
    s = sim.write([("a", 99, "new")])
    assert s.id == 5
    # and a rerun of the same rollback removes the new snapshot again (rollback is not a no-op after new commits)
    again = plan_rollback(t, snapshot_id=4)
    assert again.details["removed_snapshots"] == [5]


def test_confirm_required_and_dry_run(wh):
    sim = _history(wh)
    t = sim.table
    before = rel_files(t.root)
    with pytest.raises(UnsafeOperationError, match=r"would remove 3 snapshot\(s\) 5..7, tag\(s\) late.*confirm=True"):
        require_confirmation(po.Table(t).maintenance.rollback(snapshot_id=4), False)  # as the CLI without --yes
    dry = po.Table(t).maintenance.rollback(snapshot_id=4).dry_run_report()
    assert dry.dry_run and dry.deleted == {"snapshot": 3, "tag": 1}
    assert {os.path.basename(f.path) for f in dry.files if f.kind != "hint"} ==\
        {"snapshot-5", "snapshot-6", "snapshot-7", "tag-late"}
    assert [os.path.basename(f.path) for f in dry.files][:3] == ["snapshot-7", "snapshot-6", "snapshot-5"]
    json.loads(dry.to_json())
    assert rel_files(t.root) == before


@pytest.mark.parametrize("kw,msg", [
    (dict(snapshot_id=42), r"snapshot 42: it does not exist \(snapshots 1..7\) and no tag points at it"),
    (dict(tag="nope"), "tag 'nope' does not exist.*existing tags: early, late"),
    (dict(), "exactly one"),
    (dict(snapshot_id=2, tag="early"), "give snapshot_id or tag, not both"),
    (dict(snapshot_id="two"), "snapshot_id must be an integer"),  # (the facade takes Python values strictly)
])
def test_bad_targets(wh, kw, msg):
    sim = _history(wh)
    before = rel_files(sim.table.root)
    with pytest.raises(InvalidArgumentError, match=msg):
        po.Table(sim.table).maintenance.rollback(**kw).execute()
    assert rel_files(sim.table.root) == before


@pytest.mark.parametrize("how", ["tag", "snapshot_id"])
def test_rollback_to_expired_tagged_snapshot_restores_it(wh, how):
    sim = _history(wh)
    t = sim.table
    want = pu.sorted_rows(pu.read(wh, "db.t", tag="early"))
    po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=2).execute()
    assert t.snapshots.list_ids() == [6, 7]
    kw = {"tag": "early"} if how == "tag" else {"snapshot_id": 2}
    r = po.Table(t).maintenance.rollback(**kw).execute()
    assert r.details["via_tag"] == "early" and r.details["restore_snapshot_from_tag"]
    assert t.snapshots.list_ids() == [2]
    assert t.snapshots.earliest_id() == 2 and t.snapshots.latest_id() == 2
    restored = t.snapshots.snapshot(2)
    assert restored == Snapshot.from_json(t.tags.tag("early").to_snapshot().to_json(), "x")
    assert r.written == {"snapshot": 1, "hint": 2}
    assert t.tags.names() == ["early"]
    assert pu.sorted_rows(pu.read(wh, "db.t")) == want
    check_references(t)
    sim.check_reads()
    # rerun: nothing left to do
    again = po.Table(t).maintenance.rollback(**kw).execute()
    assert again.total_deleted == 0 and not again.written


def test_long_lived_changelogs_are_rolled_back(wh):
    sim = Sim(new_table(wh, kind="pk", options={"snapshot.num-retained.min": "1",
                                                "changelog.num-retained.min": "20"}))
    t = sim.table
    for i in range(6):
        sim.write([("a", i, f"v{i}")])
    sim.tag("t3", 3)
    po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=2).execute()
    assert t.changelogs.list_ids() == [1, 2, 3, 4] and t.snapshots.list_ids() == [5, 6]
    r = po.Table(t).maintenance.rollback(tag="t3").execute()
    assert r.deleted == {"snapshot": 2, "changelog-metadata": 1}
    assert t.changelogs.list_ids() == [1, 2, 3]
    assert open(os.path.join(t.changelogs.dir, "LATEST")).read() == "3"
    assert t.snapshots.list_ids() == [3]
    check_references(t)
    sim.check_reads()


def test_branch_rollback_only_touches_the_branch(wh):
    from tests.lifecycle.helpers import create_branch_from_tag
    sim = _history(wh)
    main = sim.table
    branch = create_branch_from_tag(main, "dev", "early")
    bsim = Sim(branch, start_ms=sim.now)
    bsim.write([("a", 50, "b")])
    bsim.write([("a", 51, "b")])
    main_before = rel_files(main.root) - {p for p in rel_files(main.root) if p.startswith("branch/")}
    po.Table(branch).maintenance.rollback(snapshot_id=3).execute()
    assert branch.snapshots.list_ids() == [2, 3]
    assert rel_files(main.root) - {p for p in rel_files(main.root) if p.startswith("branch/")} == main_before
    assert FileStoreTable(main.root).snapshots.latest_id() == 7
