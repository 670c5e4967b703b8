"""Tag deletion with file reclamation (maintenance.md §3.3, checklist 7)."""
from __future__ import annotations

import json
import os
import posixpath

import pytest

import paimon_ops as po
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError
from paimon_ops.lifecycle.tag_deletion import plan_delete_tags
from tests.lifecycle.helpers import HOUR_MS, MetaSim, Sim, all_files, check_references, copy_table, leaks, new_table, rel_files


@pytest.fixture
def wh(tmp_path) -> str:
    d = tmp_path / "wh"
    d.mkdir()
    return str(d)


def _history(wh: str) -> MetaSim:
    """Partition a rewritten three times; tags on 2 (t2), 4 (t4, t4b) and 6 (t6); snapshots 1..7 then expired so
    that only 8 and 9 remain."""
    sim = MetaSim(new_table(wh, kind="append"))
    sim.write(0)            # 1: a1
    sim.write(0)            # 2: a2          t2 = {a1, a2}
    sim.compact(0)          # 3: c3 = a1+a2
    sim.write(0)            # 4: a4          t4 = t4b = {c3, a4}
    sim.compact(0)          # 5: c5
    sim.write(0)            # 6: a6          t6 = {c5, a6}
    sim.compact(0)          # 7: c7
    sim.write(1)            # 8: b8
    sim.write(1)            # 9: b9
    for name, sid in (("t2", 2), ("t4", 4), ("t4b", 4), ("t6", 6)):
        sim.tag(name, sid)
    po.Table(sim.table).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=2).execute()
    assert sim.table.snapshots.list_ids() == [8, 9]
    return sim


def _names(sim: MetaSim, tag: str) -> set[str]:
    t = sim.table.tags.tag(tag)
    return {e.file.file_name for e in sim.scanner.live_entries(t).values()}


def test_tag_on_live_snapshot_deletes_only_the_tag_file(wh):
    sim = MetaSim(new_table(wh, kind="append"))
    for i in range(3):
        sim.write(i)
    sim.tag("t2", 2)
    sim.compact(0)
    before = rel_files(sim.table.root)
    r = po.Table(sim.table).maintenance.delete_tags(["t2"]).execute()
    assert r.deleted == {"tag": 1}
    assert before - rel_files(sim.table.root) == {"tag/tag-t2"}
    assert r.details["tags"][0]["why_not"].startswith("snapshot 2 still exists")


def test_neighbours_protect_and_unique_files_are_reclaimed(wh):
    sim = _history(wh)
    t = sim.table
    t2, t4, t6 = _names(sim, "t2"), _names(sim, "t4"), _names(sim, "t6")
    latest = {e.file.file_name for e in sim.scanner.live_entries(t.snapshots.latest()).values()}
    # another tag on the same snapshot: no reclamation
    r = po.Table(t).maintenance.delete_tags(["t4b"]).execute()
    assert r.deleted == {"tag": 1} and "same snapshot" in r.details["tags"][0]["why_not"]
    # t4's files: c3 is in nothing else... left neighbour t2 has a1, a2; right neighbour t6 has c5, a6
    plan = plan_delete_tags(t, ["t4"])
    assert plan.details["tags"][0]["protectors"] == ["tag t2", "tag t6"]
    data = {os.path.basename(a.path) for a in plan.deletes if a.kind == "data"}
    assert data == t4 - t2 - t6 - latest
    assert all("only in tag t4 (snapshot 4), not in tag t2 (2) and tag t6 (6)" == a.reason
               for a in plan.deletes if a.kind == "data")
    json.loads(plan.to_json())
    r = po.Table(t).maintenance.delete_tags(["t4"]).execute()
    assert r.deleted["data"] == len(data) and r.deleted["tag"] == 1
    check_references(t)
    assert not leaks(t)
    # the first tag: no left neighbour; right = t6
    r = po.Table(t).maintenance.delete_tags(["t2"]).execute()
    assert r.details["tags"][0]["protectors"] == ["tag t6"]
    check_references(t)
    assert not leaks(t)
    # the last tag: right neighbour = the earliest snapshot (8), which still has partition a's c7? no: c7 was
    # written at 7 and is live in 8 -> kept; c5, a6 reclaimed
    r = po.Table(t).maintenance.delete_tags(["t6"]).execute()
    assert r.details["tags"][0]["protectors"] == ["snapshot 8"]
    check_references(t)
    assert not leaks(t)
    assert not (t6 - latest) & {os.path.basename(p) for p in all_files(t.root)}


def test_batch_deletion_equals_sequential(wh, tmp_path):
    sim = _history(wh)
    other = copy_table(sim.table.root, str(tmp_path / "copy"))
    r = po.Table(sim.table).maintenance.delete_tags(["t4", "t4b", "t2"]).execute()
    from paimon_ops.table.table import FileStoreTable
    t2 = FileStoreTable(other)
    for name in ("t4", "t4b", "t2"):
        po.Table(t2).maintenance.delete_tags([name]).execute()
    assert rel_files(sim.table.root) == rel_files(other)
    assert r.deleted["tag"] == 3 and r.deleted["data"] > 0
    check_references(sim.table)
    assert not leaks(sim.table)


def test_unknown_tag_and_missing_ok(wh):
    sim = _history(wh)
    before = rel_files(sim.table.root)
    with pytest.raises(InvalidArgumentError, match="'nope'.*existing tags: t2, t4, t4b, t6"):
        po.Table(sim.table).maintenance.delete_tags(["t2", "nope"]).execute()
    assert rel_files(sim.table.root) == before
    r = po.Table(sim.table).maintenance.delete_tags(["nope"], missing_ok=True).execute()
    assert r.total_deleted == 0
    with pytest.raises(InvalidArgumentError):
        po.Table(sim.table).maintenance.delete_tags([]).execute()


@pytest.mark.parametrize("broken", ["left-tag", "right-snapshot-manifest"])
def test_unreadable_neighbour_deletes_nothing(wh, broken):
    sim = _history(wh)
    t = sim.table
    if broken == "left-tag":
        victim = t.manifest_path(t.tags.tag("t2").delta_manifest_list)
        target, names = "t4", ["t4b", "t4"]
    else:
        victim = t.manifest_path(t.snapshots.snapshot(8).base_manifest_list)
        target, names = "t6", ["t6"]
    with open(victim, "wb") as f:
        f.write(b"broken")
    before = rel_files(t.root)
    with pytest.raises(CorruptMetadataError, match=f"neighbour .* of tag '{target}'; deleting nothing"):
        po.Table(t).maintenance.delete_tags(names).execute()
    assert rel_files(t.root) == before  # the tags themselves stay as well


def test_a_tag_with_a_missing_list_refuses_before_anything_is_deleted(wh):
    """A tag whose delta list is missing: which of its files are the table's cannot be known — deleting it refuses
    naming the tag and the list (it used to delete the tag and leak its files), and nothing changes
    (table.lineage)."""
    sim = _history(wh)
    t = sim.table
    lost = t.tags.tag("t4").delta_manifest_list
    os.remove(t.manifest_path(lost))
    before = rel_files(t.root)
    with pytest.raises(CorruptMetadataError, match=f"{lost}: the delta manifest list of tag t4 does not exist"):
        po.Table(t).maintenance.delete_tags(["t4", "t4b"]).execute()
    assert rel_files(t.root) == before


def test_dry_run_and_success_file(wh):
    sim = _history(wh)
    t = sim.table
    success = posixpath.join(t.tags.dir, "tag-success-file", "t4_SUCCESS")
    os.makedirs(os.path.dirname(success))
    with open(success, "w") as f:
        f.write("{}")
    before = rel_files(t.root)
    dry = po.Table(t).maintenance.delete_tags(["t4b", "t4"]).dry_run_report()
    assert dry.dry_run and rel_files(t.root) == before
    assert t.tags.names() == ["t2", "t4", "t4b", "t6"]  # tag-success-file is a directory, not a tag
    r = po.Table(t).maintenance.delete_tags(["t4b", "t4"]).execute()
    assert r.deleted == dry.deleted
    assert not os.path.exists(success)


def test_reclaims_deletion_vector_index_files_and_reads_stay(wh):
    sim = Sim(new_table(wh, kind="dv"))
    t = sim.table
    sim.write([("a", i, f"v{i}") for i in range(5)])
    sim.compact(0)
    sim.delete_rows(0)
    sim.tag("dv1", t.snapshots.latest_id())
    tagged_index = {ie.file_name for ie in sim.scanner.index_entries(t.tags.tag("dv1"))}
    sim.delete_rows(1)
    sim.write([("a", 7, "x")])
    sim.compact(0)
    sim.write([("a", 8, "y")])
    po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert sim.check_reads() == 2
    r = po.Table(t).maintenance.delete_tags(["dv1"]).execute()
    assert r.deleted.get("index") == len(tagged_index) and r.deleted.get("index-manifest") == 1
    check_references(t)
    assert not leaks(t)
    assert sim.check_reads() == 1


@pytest.mark.parametrize("producer", ["none", "input"])
def test_long_lived_changelogs_protect_their_files(wh, producer):
    """Decoupled changelog lifecycle: a tag on a snapshot that now lives on as a long-lived changelog. Java's
    TagDeletion ignores long-lived changelogs; we count them as neighbours (the changelog still needs its delta
    and, with changelog-producer=none, the files it added)."""
    opts = {"changelog-producer": producer, "snapshot.num-retained.min": "1", "changelog.num-retained.min": "20"}
    sim = MetaSim(new_table(wh, kind="append", options=opts))
    t = sim.table
    for _ in range(3):
        sim.write(0, extra=True, changelog=producer == "input")
    sim.tag("t2", 2)
    sim.compact(0)
    sim.write(1, changelog=producer == "input")
    po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert t.changelogs.list_ids() == [1, 2, 3, 4] and t.snapshots.list_ids() == [5]
    r = po.Table(t).maintenance.delete_tags(["t2"]).execute()
    want = ["snapshot 5", "changelog 2"] if producer == "none" else ["snapshot 5"]
    assert r.details["tags"][0]["protectors"] == want
    check_references(t)  # every long-lived changelog still has what it needs
    assert not leaks(t)
