"""Snapshot expiry: the window (§2.2, successor rule), what is deleted and what protects (§2.3, §2.5), consumers,
changelog decoupling (§2.8), empty directories (§2.9), validation (apache/paimon#10088), fail-closed behaviour (§2.11), dry runs,
reruns and branches (apache/paimon#9867)."""
from __future__ import annotations

import datetime as dt
import json
import os
import posixpath

import pytest

import paimon_ops as po
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, PaimonOpsError, StalePlanError
from paimon_ops.execution.executor import execute as execute_expire
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.lifecycle.expire import plan_expire_snapshots
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.helpers import (
    HOUR_MS,
    MetaSim,
    Sim,
    all_files,
    check_references,
    create_branch_from_tag,
    leaks,
    new_table,
    rel_files,
    tag_snapshot,
    write_consumer,
)


@pytest.fixture
def wh(tmp_path) -> str:
    d = tmp_path / "wh"
    d.mkdir()
    return str(d)


def _twenty(wh: str, **opts) -> MetaSim:
    """Snapshots 1..6 committed more than an hour before `sim.now`, 7..20 within the hour (§2.2 worked example)."""
    sim = MetaSim(new_table(wh, kind="append", options=opts))
    for i in range(6):
        sim.write(i)
    sim.tick(2 * HOUR_MS)
    for i in range(14):
        sim.write(i)
    sim.now = sim.table.snapshots.snapshot(7).time_millis + 30 * 60_000
    return sim


def test_worked_example_successor_rule(wh):
    sim = _twenty(wh)
    t = sim.table
    assert t.snapshots.snapshot(6).time_millis < sim.now - HOUR_MS < t.snapshots.snapshot(7).time_millis
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now, retain_min=10).execute()
    # snapshot 6 is itself older than an hour, but its successor 7 is not: 6 stays (2.0+ rule; <= 1.x expired it)
    assert r.details["expired_snapshots"] == [1, 2, 3, 4, 5]
    assert t.snapshots.list_ids() == list(range(6, 21))
    assert t.snapshots.earliest_id() == 6
    assert r.deleted["snapshot"] == 5
    check_references(t)
    assert not leaks(t)


def test_retain_max_bypasses_time_and_limit_caps(wh):
    sim = _twenty(wh)
    t = sim.table
    plan = plan_expire_snapshots(t, now=sim.now, retain_min=2, retain_max=12)
    # everything below 20 - 12 + 1 = 9 expires by count; 9's successor is young -> end 9
    assert plan.details["expired_snapshots"] == list(range(1, 9))
    plan = plan_expire_snapshots(t, now=sim.now, retain_min=2, retain_max=12, max_deletes=3)
    assert plan.details["expired_snapshots"] == [1, 2, 3]
    # defaults from the table options
    t2 = FileStoreTable(t.root, options_override={"snapshot.num-retained.max": "5", "snapshot.num-retained.min": "2",
                                         "snapshot.expire.limit": "4"})
    assert plan_expire_snapshots(t2, now=sim.now).details["expired_snapshots"] == [1, 2, 3, 4]
    # older_than as a point in time: 3 goes (its successor 4 is older), 4 stays (5 is not)
    older = t.snapshots.snapshot(4).time_millis + 1
    assert plan_expire_snapshots(t, now=sim.now, retain_min=1, older_than=older)\
        .details["expired_snapshots"] == [1, 2, 3]
    assert plan_expire_snapshots(t, now=sim.now, retain_min=1, min_age="3 h")\
        .details["expired_snapshots"] == []


def test_consumers_pin_snapshots(wh):
    sim = _twenty(wh)
    t = sim.table
    write_consumer(t, "reader", 4)
    plan = plan_expire_snapshots(t, now=sim.now, retain_min=1, retain_max=3)
    assert plan.details["expired_snapshots"] == [1, 2, 3]  # the consumer's next snapshot 4 stays
    # a consumer whose file is older than consumer.expiration-time no longer protects
    os.utime(posixpath.join(t.consumers.dir, "consumer-reader"), (1, 1))
    t2 = FileStoreTable(t.root, options_override={"consumer.expiration-time": "1 d"})
    plan = plan_expire_snapshots(t2, now=sim.now, retain_min=1, retain_max=3)
    assert plan.details["expired_snapshots"] == list(range(1, 18))
    assert any("consumer reader" in n for n in plan.details["notes"])
    # consumer.changelog-only with a decoupled lifecycle: consumers pin changelogs only
    t3 = FileStoreTable(t.root, options_override={"consumer.changelog-only": "true", "changelog.num-retained.min": "15"})
    plan = plan_expire_snapshots(t3, now=sim.now, retain_min=1, retain_max=3)
    assert plan.details["settings"]["decoupled"] and plan.details["expired_snapshots"] == list(range(1, 18))


@pytest.mark.parametrize("kw,msg", [
    (dict(retain_min=0), "retain_min must be at least 1"),
    (dict(retain_min=-3), "retain_min must be at least 1"),
    (dict(retain_min=5, retain_max=4), "must be at least the minimum retained"),
    (dict(max_deletes=0), "max_deletes"),
    (dict(older_than=1, min_age=dt.timedelta(hours=1)), "not both"),
    (dict(min_age=dt.timedelta(hours=-1)), "must not be negative"),
    (dict(older_than="yesterday"), "older_than"),
])
def test_bad_arguments_refused_before_anything_is_deleted(wh, kw, msg):
    sim = _twenty(wh)
    before = rel_files(sim.table.root)
    with pytest.raises(InvalidArgumentError, match=msg):
        po.Table(sim.table).maintenance.expire_snapshots(now=sim.now, **kw).execute()
    assert rel_files(sim.table.root) == before


def test_bad_table_options_refused(wh):
    sim = _twenty(wh)
    t = FileStoreTable(sim.table.root, options_override={"snapshot.num-retained.min": "0"})
    before = rel_files(t.root)
    # the option is named (with its table), never a flag or argument the caller did not pass
    with pytest.raises(PaimonOpsError, match="option 'snapshot.num-retained.min' on table t.*apache/paimon#10088") as e:
        po.Table(t).maintenance.expire_snapshots(now=sim.now).execute()
    assert "retain_min" not in str(e.value)
    t = FileStoreTable(sim.table.root, options_override={"snapshot.num-retained.max": "-1"})
    with pytest.raises(PaimonOpsError, match="option 'snapshot.num-retained.max' on table t") as e:
        po.Table(t).maintenance.expire_snapshots(now=sim.now).execute()
    assert "retain_max" not in str(e.value)
    assert rel_files(t.root) == before


def test_end_snapshot_missing_deletes_nothing(wh):
    sim = _twenty(wh)
    t = sim.table
    os.remove(t.snapshots.path(8))  # a hole exactly where the window ends
    before = rel_files(t.root)
    # a hole in the history is refused outright (fail closed on an inconsistent table), naming it
    with pytest.raises(CorruptMetadataError, match="snapshot-8: is missing between snapshot-1 and snapshot-20"):
        po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=13).execute()  # hi = 20 - 13 + 1 = 8
    assert rel_files(t.root) == before


def test_dry_run_plan_json_reasons_and_rerun(wh):
    sim = MetaSim(new_table(wh, kind="append"))
    for i in range(4):
        sim.write(i, extra=True)
    sim.tag("keep", 2)
    sim.compact(0)
    sim.compact(1)
    sim.write(0)
    t = sim.table
    before = rel_files(t.root)
    dry = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).dry_run_report()
    assert dry.dry_run and rel_files(t.root) == before
    d = json.loads(dry.to_json())
    reasons = {os.path.basename(f["path"]): (f["kind"], f["reason"]) for f in d["files"]}
    kinds = {k for k, _ in reasons.values()}
    assert {"data", "extra", "manifest-list", "snapshot"} <= kinds
    assert any(r.startswith("deleted by snapshot ") and r.endswith("not in tag keep") for _, r in reasons.values())
    assert "would delete" in dry.summary()
    plan = plan_expire_snapshots(t, now=sim.now + 10 * HOUR_MS, retain_min=1)
    json.loads(plan.to_json())
    assert "deleted by snapshot" in plan.summary()
    real = execute_expire(plan, t)
    assert real.deleted == dry.deleted and real.deleted_bytes == dry.deleted_bytes
    assert real.total_deleted == len(before - rel_files(t.root))
    check_references(t)
    assert not leaks(t)
    again = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert again.total_deleted == 0 and again.details["expired_snapshots"] == []


def test_small_decode_batches_plan_the_same(wh, monkeypatch):
    """The deltas are decoded in batches bounded by entries (the working set of a 10 M-entry plan): the decision
    never depends on where a batch ends; the dry-run listing streams the same lines as the summary text."""
    import paimon_ops.lifecycle.expire as ex
    sim = MetaSim(new_table(wh, kind="append"))
    for i in range(4):
        sim.write(i, extra=True)
    sim.tag("keep", 2)
    sim.compact(0)
    sim.write(1)
    sim.compact(1)
    sim.write(0)
    t = sim.table
    now = sim.now + 10 * HOUR_MS
    plan = plan_expire_snapshots(t, now=now, retain_min=1)
    monkeypatch.setattr(ex, "DELTA_BATCH_ENTRIES", 1)
    monkeypatch.setattr(ex, "DELTA_BATCH", 2)
    small = plan_expire_snapshots(t, now=now, retain_min=1)
    assert small.steps == plan.steps and small.preconditions == plan.preconditions
    assert any(a.kind == "data" for a in plan.deletes)
    for limit, files in ((None, True), (3, True), (None, False)):
        assert "\n".join(plan.summary_lines(limit, files)) == plan.summary(limit, files)


def test_tag_created_after_planning_aborts_execution(wh):
    sim = _twenty(wh)
    t = sim.table
    plan = plan_expire_snapshots(t, now=sim.now, retain_min=1, retain_max=5)
    before = rel_files(t.root)
    tag_snapshot(t, "late", 10)
    with pytest.raises(StalePlanError, match=r"tag\(s\) late created"):
        execute_expire(plan, t)
    assert rel_files(t.root) - {"tag/tag-late"} == before


def test_tag_protects_by_name_not_level_and_reads_stay(wh):
    """A file tagged at level 0, upgraded to level 5 (DELETE+ADD in one commit), then compacted away: the tag
    still protects it, although the tag's entry has another level (checklist 1, 2)."""
    sim = Sim(new_table(wh, kind="pk"))
    t = sim.table
    sim.write([("a", 1, "x"), ("a", 2, "y")])
    sim.tag("t1", 1)
    assert sim.upgrade(0) is not None
    sim.write([("a", 1, "x2")])
    sim.compact(0)
    sim.write([("b", 9, "z")])
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert r.details["expired_snapshots"] == [1, 2, 3, 4]
    check_references(t)
    assert sim.check_reads() == 2  # the latest snapshot and tag t1
    assert not leaks(t)
    # deleting the tag reclaims what only it kept
    r = po.Table(t).maintenance.delete_tags(["t1"]).execute()
    assert r.deleted["data"] >= 1
    check_references(t)
    assert not leaks(t)


def test_deletion_vector_index_files(wh):
    """Index manifests are full lists: an index file replaced by a later snapshot is deleted only when no
    protector (end snapshot, tags in / left of the window) lists it (checklist 5)."""
    sim = Sim(new_table(wh, kind="dv"))
    t = sim.table
    sim.write([("a", i, f"v{i}") for i in range(6)])
    sim.compact(0)  # level 5 file
    sim.delete_rows(0)
    sim.delete_rows(1)
    sim.tag("dv", t.snapshots.latest_id())
    tagged_index = {ie.file_name for ie in sim.scanner.index_entries(t.snapshots.latest())}
    sim.delete_rows(2)
    sim.delete_rows(3)
    sim.write([("a", 9, "n")])
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert r.deleted.get("index", 0) >= 1 and r.deleted.get("index-manifest", 0) >= 1
    for name in tagged_index:
        assert os.path.exists(posixpath.join(t.index_dir, name))
    check_references(t)
    assert sim.check_reads() == 2
    assert not leaks(t)


def test_changelog_files_are_not_protected_by_tags(wh):
    sim = MetaSim(new_table(wh, kind="append", options={"changelog-producer": "input"}))
    t = sim.table
    for i in range(4):
        sim.write(i, changelog=True)
    sim.tag("t2", 2)
    cl_files = {e.file.file_name for e in sim.store.entries_of_list(t.snapshots.snapshot(2).changelog_manifest_list)}
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert r.deleted["changelog"] == 3  # snapshots 1..3
    names = {os.path.basename(p) for p in all_files(t.root)}
    assert not cl_files & names  # Java does the same (test_expire_java: the tag's changelog list dangles)
    check_references(t)


@pytest.mark.parametrize("producer", ["input", "none"])
def test_decoupled_changelog_lifecycle(wh, producer):
    opts = {"changelog-producer": producer, "snapshot.num-retained.min": "1", "snapshot.num-retained.max": "2",
            "changelog.num-retained.max": "6", "snapshot.time-retained": "1 min", "changelog.time-retained": "1 d"}
    sim = MetaSim(new_table(wh, kind="append", options=opts))
    t = sim.table
    for i in range(5):
        sim.write(i, changelog=producer == "input")
    sim.compact(0)
    snap_json = {i: open(t.snapshots.path(i), "rb").read() for i in (1, 2, 3)}
    now = sim.now + 10 * HOUR_MS
    r = po.Table(t).maintenance.expire_snapshots(now=now).execute()
    assert r.details["settings"]["decoupled"]
    assert r.details["expired_snapshots"] == [1, 2, 3, 4, 5]  # retain max 2 of 6
    assert t.changelogs.list_ids() == [1, 2, 3, 4, 5]
    for i in (1, 2, 3):
        assert open(t.changelogs.path(i), "rb").read() == snap_json[i]  # the same JSON, kept as changelog
    assert r.written.get("changelog-metadata") == 5
    assert r.details["changelog"]["expired_changelogs"] == []  # younger than changelog.time-retained
    if producer == "input":
        assert "changelog" not in r.deleted  # changelog files outlive their snapshots
    check_references(t)  # includes what long-lived changelogs still need (changelog files / APPEND files)
    for i in range(6):
        sim.write(i, changelog=producer == "input")
    r = po.Table(t).maintenance.expire_snapshots(now=now).execute()
    assert t.snapshots.list_ids() == [12]  # 11 is above the count limit but its successor is old enough
    # changelog.num-retained.max 6: below 12 - 6 + 1 = 7 by count, 7 itself is younger than a day
    assert r.details["changelog"]["expired_changelogs"] == [1, 2, 3, 4, 5, 6]
    assert t.changelogs.list_ids() == [7, 8, 9, 10, 11]
    assert t.changelogs.earliest_id() == 7
    if producer == "input":
        assert r.deleted["changelog"] == 5  # changelog files of commits 1..5 (6 is the compaction)
    check_references(t)
    assert not leaks(t)


def test_clean_empty_directories_only_if_empty(wh):
    sim = MetaSim(new_table(wh, kind="append", options={"snapshot.clean-empty-directories": "true"}))
    t = sim.table
    sim.write(0)
    sim.write(1)
    sim.write(1)
    for _ in range(3):
        sim.overwrite(1)  # partition b loses every file
    sim.write(0)
    bdir = posixpath.join(t.root, "pt=b")
    assert os.path.isdir(posixpath.join(bdir, "bucket-0"))
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert not os.path.exists(bdir)
    assert os.path.isdir(posixpath.join(t.root, "pt=a", "bucket-0"))
    assert r.deleted.get("directory", 0) == 2
    check_references(t)
    # a directory holding anything else stays
    sim.write(1)
    foreign = posixpath.join(bdir, "bucket-0", "README")
    with open(foreign, "w") as f:
        f.write("not ours")
    sim.overwrite(1)
    sim.write(0)
    po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert os.path.exists(foreign)


def test_unreadable_delta_refuses_before_anything_is_deleted(wh):
    """A snapshot whose delta list is unreadable: what it deleted cannot be known, nor whether its lists are the
    table's — the expiry refuses naming the snapshot and the list (it used to expire the others and leak what that
    snapshot deleted), and nothing changes (table.lineage)."""
    sim = MetaSim(new_table(wh, kind="append"))
    t = sim.table
    for i in range(3):
        sim.write(i)
    sim.compact(0)  # snapshot 4 deletes partition a's files
    sim.compact(1)  # snapshot 5 deletes partition b's files
    sim.write(0)
    victim = t.snapshots.snapshot(4).delta_manifest_list
    with open(t.manifest_path(victim), "wb") as f:
        f.write(b"garbage")
    before = rel_files(t.root)
    with pytest.raises(CorruptMetadataError, match=f"{victim}: the delta manifest list of snapshot 4 is unreadable"):
        po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert rel_files(t.root) == before


@pytest.mark.parametrize("what", ["tag", "consumer", "snapshot"])
def test_unreadable_metadata_refuses(wh, what):
    sim = _twenty(wh)
    t = sim.table
    tag_snapshot(t, "t5", 5)
    if what == "tag":
        path = t.tags.path("t5")
    elif what == "consumer":
        write_consumer(t, "c", 3)
        path = posixpath.join(t.consumers.dir, "consumer-c")
    else:
        path = t.snapshots.path(1)  # inside the window: what it references is unknown
    with open(path, "w") as f:
        f.write("{ not json")
    before = rel_files(t.root)
    with pytest.raises(CorruptMetadataError):
        po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert rel_files(t.root) == before


def test_unreadable_successor_stops_the_window_before_it(wh):
    sim = _twenty(wh)
    t = sim.table
    with open(t.snapshots.path(4), "w") as f:
        f.write("{ not json")
    before = rel_files(t.root)
    # an unreadable snapshot that stays could need any file, so nothing is deleted (Java: expires up to it)
    with pytest.raises(CorruptMetadataError, match="snapshot-4: snapshot is not valid JSON"):
        po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert rel_files(t.root) == before


def test_unreadable_end_snapshot_manifests_keep_all_manifests(wh):
    sim = MetaSim(new_table(wh, kind="append"))
    t = sim.table
    for i in range(4):
        sim.write(i)
    sim.compact(0)
    sim.write(1)
    end = t.snapshots.snapshot(6)
    with open(t.manifest_path(end.base_manifest_list), "wb") as f:
        f.write(b"garbage")
    plan = plan_expire_snapshots(t, now=sim.now + 10 * HOUR_MS, retain_min=1)  # planning delete less …
    assert plan.details["expired_snapshots"] == [1, 2, 3, 4, 5]
    assert any("keeping all manifests" in w for w in plan.warnings)
    before = rel_files(t.root)
    # … and executing refuses: what the unreadable snapshot that stays keeps alive cannot be known
    with pytest.raises(CorruptMetadataError, match=end.base_manifest_list):
        plan.execute()
    assert rel_files(t.root) == before


def test_unreadable_nearest_tag_keeps_data(wh):
    sim = MetaSim(new_table(wh, kind="append"))
    t = sim.table
    for i in range(3):
        sim.write(i)
    sim.tag("t2", 2)
    sim.compact(0)
    sim.write(0)
    tag = t.tags.tag("t2")
    os.remove(t.manifest_path(tag.delta_manifest_list))
    os.remove(t.snapshots.path(2))  # only the tag still describes snapshot 2
    before = rel_files(t.root)
    with pytest.raises(CorruptMetadataError, match="snapshot-2: is missing"):  # a hole in the history: refused
        po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert rel_files(t.root) == before


def test_runner_batches_and_progress(wh):
    sim = _twenty(wh)
    t = sim.table
    seen = []
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute(runner=LocalRunner(),
        progress=lambda d, n: seen.append((d, n)), parallel_threshold=1, batch_size=3)
    assert r.details["expired_snapshots"] == list(range(1, 20))
    assert seen and seen[-1][0] == seen[-1][1]
    check_references(t)
    assert not leaks(t)


def test_branch_is_expired_against_its_own_tags(wh):
    """apache/paimon#9867: expiring a branch used main's tags. A branch-only tag must protect the branch's files."""
    sim = Sim(new_table(wh, kind="pk"))
    main = sim.table
    sim.write([("a", 1, "m1"), ("a", 2, "m2")])
    sim.write([("a", 3, "m3")])
    sim.tag("base", 2)
    sim.write([("a", 4, "m4")])
    branch = create_branch_from_tag(main, "dev", "base")
    bsim = Sim(branch, start_ms=sim.now)
    bsim.expected.update(sim.expected)
    bsim.write([("a", 5, "b5")])
    bsim.write([("a", 6, "b6")])
    bt_id = branch.snapshots.latest_id()
    bsim.tag("bt", bt_id)
    bsim.write([("a", 7, "b7")])  # after the tag: its file may go once compacted away
    for pick in range(2):
        bsim.compact(pick)  # rewrites the buckets: files of the branch's earlier snapshots are deleted
    bsim.write([("b", 7, "b7")])
    r = po.Table(branch).maintenance.expire_snapshots(now=bsim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert r.details["branch"] == "dev" and r.details["tag_set"] == [["base", 2], ["bt", bt_id]]
    assert [f.reason for f in r.files if f.kind == "data"] and\
        all(f.reason.endswith("not in tag bt") for f in r.files if f.kind == "data")
    check_references(main)  # unions every branch: branch tag bt and main's snapshots/tags all intact
    assert bsim.check_reads() >= 2  # branch latest + tags base and bt
    assert sim.check_reads() >= 3  # main untouched
    # had main's tags (only 'base') been used, bt's files (written on the branch) would have been deleted:
    bt_files = {f.name for f in bsim.scanner.scan(branch.tags.tag("bt")).files}
    base_files = {f.name for f in bsim.scanner.scan(main.tags.tag("base")).files}
    assert bt_files - base_files and all(
        os.path.exists(p) for p in all_files(branch.root) if os.path.basename(p) in bt_files)


def test_files_shared_with_another_branch_are_never_deleted(wh):
    """Java looks only at the branch being cleaned (apache/paimon#6272): a branch created from tag `base` shares its
    files with main. Deleting `base` in main, then expiring main (and the reverse on the branch) must not delete
    what the other branch still reads."""
    sim = Sim(new_table(wh, kind="pk"))
    main = sim.table
    sim.write([("a", 1, "m1"), ("a", 2, "m2")])
    sim.write([("b", 3, "m3")])
    sim.tag("base", 2)
    branch = create_branch_from_tag(main, "dev", "base")
    bsim = Sim(branch, start_ms=sim.now)
    bsim.expected.update(sim.expected)
    bsim.write([("a", 5, "b5")])
    for pick in range(2):
        sim.compact(pick)  # main rewrites everything: base's files leave main's history
        bsim.compact(pick)  # ... and the branch's
    sim.write([("a", 9, "m9")])
    bsim.write([("a", 9, "b9")])
    base_files = {f.name for f in sim.scanner.scan(main.tags.tag("base")).files}
    # main: drop the tag, expire everything old
    r = po.Table(main).maintenance.delete_tags(["base"]).execute()
    assert r.details["protected_branches"] == ["dev"]
    r = po.Table(main).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert r.details["expired_snapshots"] and r.details["protected_branches"] == ["dev"]
    # the branch: expire, drop its copy of the tag too (reclamation), expire again
    po.Table(branch).maintenance.expire_snapshots(now=bsim.now + 10 * HOUR_MS, retain_min=1).execute()
    po.Table(branch).maintenance.delete_tags(["base"]).execute()
    check_references(main)
    assert bsim.check_reads() >= 1 and sim.check_reads() >= 1
    on_disk = {os.path.basename(p) for p in all_files(main.root)}
    assert not base_files & on_disk  # nobody references them any more: the last deletion reclaimed them
    assert not leaks(main)


def test_stale_plan_refused_after_rollback_or_new_consumer(wh):
    sim = _twenty(wh)
    t = sim.table
    plan = plan_expire_snapshots(t, now=sim.now + 10 * HOUR_MS, retain_min=3)
    assert plan.details["end"] == 18
    write_consumer(t, "late-reader", 10)
    before = rel_files(t.root)
    with pytest.raises(StalePlanError, match="consumer late-reader now reads snapshot 10"):
        execute_expire(plan, t)
    assert rel_files(t.root) == before
    os.remove(posixpath.join(t.consumers.dir, "consumer-late-reader"))
    po.Table(t).maintenance.rollback(snapshot_id=12).execute()
    sim.write(0)
    sim.write(0)
    sim.write(0)
    sim.write(0)
    sim.write(0)
    sim.write(0)  # a new snapshot 18 with other content
    before = rel_files(t.root)
    with pytest.raises(StalePlanError, match="snapshot 18 was replaced"):
        execute_expire(plan, t)
    assert rel_files(t.root) == before


def test_statistics_files_follow_their_snapshots(wh):
    sim = MetaSim(new_table(wh, kind="append"))
    t = sim.table
    for i in range(6):
        sim.write(i)
    # snapshots 2..3 point at stat-x, 4..6 at stat-y (ANALYZE commits write a new statistics file)
    for sid, name in ((2, "stat-x"), (3, "stat-x"), (4, "stat-y"), (5, "stat-y"), (6, "stat-y")):
        s = t.snapshots.snapshot(sid).with_(statistics=name)
        t.io.write_bytes(t.snapshots.path(sid), s.to_json().encode())
    for name in ("stat-x", "stat-y"):
        t.io.write_bytes(posixpath.join(t.statistics_dir, name), b"{}")
    tag_snapshot(t, "t5", 5)
    r = po.Table(t).maintenance.expire_snapshots(now=sim.now + 10 * HOUR_MS, retain_min=1).execute()
    assert r.details["expired_snapshots"] == [1, 2, 3, 4, 5]
    assert r.deleted["statistics"] == 1
    assert sorted(os.listdir(t.statistics_dir)) == ["stat-y"]
    check_references(t)
    assert not leaks(t)
