"""Manual tags: create (latest / id / expired-but-tagged id / current at a time), retention fields, replace, rename,
list, delete via reclaim; bad names never reach the file system."""
from __future__ import annotations

import datetime as dt
import json

import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.format.snapshot import Tag
from paimon_ops.lifecycle import tags as tg
from paimon_ops.lifecycle.tags import find_snapshot, list_tags, plan_create_tag, plan_replace_tag, snapshot_current_at
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.test_tags_util import drop_snapshots_below, fake_history, ms, real_table, tag_dir_listing, tag_ids

T = [ms(2026, 11, 20, h) for h in (1, 5, 9, 13)]  # snapshots 1..4


@pytest.fixture
def table(warehouse) -> FileStoreTable:
    return fake_history(warehouse, "t", {"sink.process-time-zone": "Asia/Tokyo"}, T)


def test_create_latest_by_id_and_at_time(table):
    r = po.Table(table).tags.create("latest").execute()
    assert r.written == {"tag": 1} and tag_ids(table) == {"latest": 4}
    raw = json.loads(table.io.read_bytes(table.tags.path("latest")))
    assert "tagCreateTime" not in raw and "tagTimeRetained" not in raw  # no retention: plain snapshot JSON
    po.Table(table).tags.create("two", snapshot_id=2).execute()
    po.Table(table).tags.create("at-6am", timestamp=ms(2026, 11, 20, 6)).execute()  # current at 06:00: snapshot 2 (05:00)
    po.Table(table).tags.create("at-9am", timestamp=ms(2026, 11, 20, 9)).execute()  # a commit exactly at the instant counts
    assert tag_ids(table) == {"latest": 4, "two": 2, "at-6am": 2, "at-9am": 3}
    with pytest.raises(InvalidArgumentError, match="had no snapshot"):
        po.Table(table).tags.create("too-early", timestamp=ms(2026, 11, 20, 0)).execute()
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        po.Table(table).tags.create("nope", snapshot_id=99).execute()
    with pytest.raises(InvalidArgumentError, match="not both"):
        po.Table(table).tags.create("both", snapshot_id=1, timestamp=T[0]).execute()


def test_exists_semantics(table):
    po.Table(table).tags.create("x", snapshot_id=1).execute()
    r = po.Table(table).tags.create("x", snapshot_id=1).execute()  # same name, same snapshot: no-op
    assert r.written == {} and "already exists" in r.warnings[0]
    with pytest.raises(InvalidArgumentError, match="already exists.*replace=True"):
        po.Table(table).tags.create("x", snapshot_id=2).execute()
    assert plan_create_tag(table, "x", snapshot_id=2, ignore_if_exists=True).execute().written == {}
    assert tag_ids(table) == {"x": 1}


def test_retention_fields_in_tag_local_zone(table):
    po.Table(table).tags.create("kept", time_retained=dt.timedelta(days=2), now=ms(2026, 11, 21, 3)).execute()
    tag = table.tags.tag("kept")
    assert tag.tag_create_time == dt.datetime(2026, 11, 21, 12, 0)  # Asia/Tokyo local now (sink.process-time-zone)
    assert tag.tag_time_retained == dt.timedelta(days=2)
    raw = json.loads(table.io.read_bytes(table.tags.path("kept")))
    assert raw["tagCreateTime"] == [2026, 11, 21, 12, 0] and raw["tagTimeRetained"] == 172800.0
    info = {i.name: i for i in list_tags(table)}["kept"]
    assert info.expires_at == dt.datetime(2026, 11, 23, 12, 0) and info.snapshot_live
    for bad in ("0 s", "-1 d", "soon"):
        with pytest.raises(Exception, match="time_retained|duration"):
            plan_create_tag(table, f"bad-{bad[0]}", time_retained=bad)


def test_expired_but_tagged_snapshot_is_found_like_java(table):
    po.Table(table).tags.create("keep2", snapshot_id=2).execute()
    drop_snapshots_below(table, 3)
    t = table.refresh()
    assert find_snapshot(t, 2).id == 2
    r = po.Table(t).tags.create("again2", snapshot_id=2).execute()
    assert r.written == {"tag": 1} and tag_ids(t)["again2"] == 2
    # the tag file is a plain snapshot JSON of snapshot 2 (retention fields of the source tag are not copied)
    assert t.tags.tag("again2").to_snapshot() == t.tags.tag("keep2").to_snapshot()
    with pytest.raises(InvalidArgumentError, match="does not exist and no tag holds it"):
        find_snapshot(t, 1)
    # current at 06:00 was snapshot 2 (expired, tag-held) and snapshot 3 is live: certain
    assert snapshot_current_at(t, ms(2026, 11, 20, 6)).id == 2
    # current at 02:00 was snapshot 1: gone and untagged -> refuse, never answer with another snapshot
    with pytest.raises(InvalidArgumentError, match="has expired"):
        snapshot_current_at(t, ms(2026, 11, 20, 2))


def test_snapshot_current_at_refuses_when_successor_unknown(table):
    po.Table(table).tags.create("one", snapshot_id=1).execute()
    drop_snapshots_below(table, 3)  # 2 is gone: after snapshot 1 something else may have been current
    with pytest.raises(InvalidArgumentError, match="has expired.*tag-held \\[1\\].*not tagging a different"):
        snapshot_current_at(table.refresh(), ms(2026, 11, 20, 6))


BAD_NAMES = ["", "   ", "123", "0", "a/b", "..", "a..b", "../x", "x\n", "tab\there", "bell\x07", "del\x7f", " lead",
             "trail ", "back\\slash"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_rejected_everywhere_nothing_written(table, name):
    po.Table(table).tags.create("good", snapshot_id=1).execute()
    before = tag_dir_listing(table)
    for call in (lambda: po.Table(table).tags.create(name).execute(),
                 lambda: plan_create_tag(table, name),
                 lambda: po.Table(table).tags.rename("good", name).execute(),
                 lambda: po.Table(table).tags.create(name, replace=True).execute(),
                 lambda: tg.write_new_tag(table, name, Tag.from_snapshot(table.snapshots.snapshot(1)))):
        with pytest.raises(InvalidArgumentError):
            call()
    assert tag_dir_listing(table) == before


def test_rename_keeps_content_and_is_resumable(table):
    po.Table(table).tags.create("old", snapshot_id=2, time_retained=dt.timedelta(days=1), now=T[0]).execute()
    content = table.io.read_bytes(table.tags.path("old"))
    dry = po.Table(table).tags.rename("old", "new").dry_run_report()
    assert dry.dry_run and tag_ids(table) == {"old": 2}
    r = po.Table(table).tags.rename("old", "new").execute()
    assert r.written == {"tag": 1} and r.deleted == {"tag": 1}
    assert tag_ids(table) == {"new": 2} and table.io.read_bytes(table.tags.path("new")) == content
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        po.Table(table).tags.rename("old", "newer").execute()
    po.Table(table).tags.create("other", snapshot_id=1).execute()
    with pytest.raises(InvalidArgumentError, match="already exists"):
        po.Table(table).tags.rename("other", "new").execute()
    # a crash after writing the new name: only an explicit resume finishes it (never silently delete)
    table.io.write_bytes(table.tags.path("half"), table.io.read_bytes(table.tags.path("other")))
    with pytest.raises(InvalidArgumentError, match="resume=True"):
        po.Table(table).tags.rename("other", "half").execute()
    assert tag_ids(table) == {"new": 2, "half": 1, "other": 1}
    assert po.Table(table).tags.rename("other", "half", resume=True).dry_run_report().files[0].path.endswith("tag-other")
    assert tag_ids(table) == {"new": 2, "half": 1, "other": 1}
    assert po.Table(table).tags.rename("other", "half", resume=True).execute().details["resumed"] is True
    assert tag_ids(table) == {"new": 2, "half": 1}
    assert po.Table(table).tags.rename("other", "half", resume=True).execute().warnings  # already complete: nothing left to do


def test_rename_away_from_a_java_numeric_name(table):
    # Java allows numeric names; we can read and rename them, never create them
    table.io.write_bytes(table.tags.path("42"), Tag.from_snapshot(table.snapshots.snapshot(3)).to_json().encode())
    po.Table(table).tags.rename("42", "v42").execute()
    assert tag_ids(table) == {"v42": 3}


def test_replace_moves_tag_and_warns_about_orphans(table):
    po.Table(table).tags.create("moving", snapshot_id=1).execute()
    r = po.Table(table).tags.create("moving", snapshot_id=2, time_retained=dt.timedelta(hours=1), now=T[1], replace=True).execute()
    assert tag_ids(table) == {"moving": 2} and r.warnings == ()
    assert table.tags.tag("moving").tag_time_retained == dt.timedelta(hours=1)
    drop_snapshots_below(table, 3)  # snapshot 2 now only held by the tag
    r = po.Table(table.refresh()).tags.create("moving", replace=True).execute()
    assert tag_ids(table) == {"moving": 4} and "orphans" in r.warnings[0]
    with pytest.raises(InvalidArgumentError, match=r"does not exist; use tags\.create\(\)"):
        plan_replace_tag(table, "missing")  # (the facade's create(replace=True) creates a missing tag)


def test_list_tags_ignores_success_file_directory(table):
    po.Table(table).tags.create("b", snapshot_id=3).execute()
    po.Table(table).tags.create("a", snapshot_id=3, time_retained=dt.timedelta(days=1), now=T[3]).execute()
    table.io.mkdirs(table.tags.dir + "/tag-success-file")
    table.io.write_bytes(table.tags.dir + "/tag-success-file/a_SUCCESS", b"{}")
    infos = list_tags(table)
    assert [(i.name, i.snapshot_id, i.time_retained) for i in infos] == [("a", 3, dt.timedelta(days=1)),
                                                                           ("b", 3, None)]
    assert infos[0].snapshot_time_millis == T[2] and infos[1].expires_at is None


def test_validate_no_auto_tag_with_java_auto_creation(warehouse):
    t = fake_history(warehouse, "auto", {"tag.automatic-creation": "process-time"}, T)
    po.Table(t).tags.create("2026-11-19", snapshot_id=2).execute()  # parses as a daily auto tag
    with pytest.raises(InvalidArgumentError, match="already carries auto tag '2026-11-19'"):
        po.Table(t).tags.create("2026-11-20", snapshot_id=2).execute()
    po.Table(t).tags.create("release-1", snapshot_id=2).execute()  # not an auto name: fine
    assert tag_ids(t) == {"2026-11-19": 2, "release-1": 2}


def test_delete_goes_through_reclaim(warehouse):
    t = real_table(warehouse, "del", None, [ms(2026, 11, 20, h) for h in (1, 2, 3)])
    po.Table(t).tags.create("a", snapshot_id=1).execute()
    po.Table(t).tags.create("b", snapshot_id=2).execute()
    dry = po.Table(t).maintenance.delete_tags(["a"]).dry_run_report()
    assert dry.dry_run and "a" in tag_ids(t)
    r = po.Table(t).maintenance.delete_tags(["a"]).execute()
    assert r.deleted.get("tag") == 1 and tag_ids(t) == {"b": 2}
    with pytest.raises(InvalidArgumentError):
        po.Table(t).maintenance.delete_tags(["../../etc"]).execute()


def test_rename_an_auto_tag_with_java_auto_creation(warehouse):
    t = fake_history(warehouse, "ren", {"tag.automatic-creation": "process-time"}, T)
    po.Table(t).tags.create("2026-11-19", snapshot_id=2).execute()
    po.Table(t).tags.rename("2026-11-19", "2026-11-18").execute()  # the tag being renamed is not a second auto tag of snapshot 2
    po.Table(t).tags.create("2026-11-17", snapshot_id=1).execute()
    with pytest.raises(InvalidArgumentError, match="already carries auto tag"):
        po.Table(t).tags.create("2026-11-17", snapshot_id=2, replace=True).execute()
    assert tag_ids(t) == {"2026-11-17": 1, "2026-11-18": 2}
