"""Manual tags: create (latest / id / expired-but-tagged id / current at a time), retention fields, replace, rename,
list, delete via reclaim; bad names never reach the file system."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.format.snapshot import Tag
from paimon_ops.lifecycle import tags as tg
from paimon_ops.lifecycle.tags import (
    create_tag,
    delete_tags,
    find_snapshot,
    list_tags,
    plan_create_tag,
    rename_tag,
    replace_tag,
    snapshot_current_at,
)
from paimon_ops.table.table import Table
from tests.lifecycle.test_tags_util import drop_snapshots_below, fake_history, ms, real_table, tag_dir_listing, tag_ids

T = [ms(2026, 11, 20, h) for h in (1, 5, 9, 13)]  # snapshots 1..4


@pytest.fixture
def table(warehouse) -> Table:
    return fake_history(warehouse, "t", {"sink.process-time-zone": "Asia/Tokyo"}, T)


def test_create_latest_by_id_and_at_time(table):
    r = create_tag(table, "latest")
    assert r.written == {"tag": 1} and tag_ids(table) == {"latest": 4}
    raw = json.loads(table.io.read_bytes(table.tags.path("latest")))
    assert "tagCreateTime" not in raw and "tagTimeRetained" not in raw  # no retention: plain snapshot JSON
    create_tag(table, "two", snapshot_id=2)
    create_tag(table, "at-6am", timestamp_millis=ms(2026, 11, 20, 6))  # current at 06:00: snapshot 2 (05:00)
    create_tag(table, "at-9am", timestamp_millis=ms(2026, 11, 20, 9))  # a commit exactly at the instant counts
    assert tag_ids(table) == {"latest": 4, "two": 2, "at-6am": 2, "at-9am": 3}
    with pytest.raises(InvalidArgumentError, match="had no snapshot"):
        create_tag(table, "too-early", timestamp_millis=ms(2026, 11, 20, 0))
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        create_tag(table, "nope", snapshot_id=99)
    with pytest.raises(InvalidArgumentError, match="not both"):
        create_tag(table, "both", snapshot_id=1, timestamp_millis=T[0])


def test_exists_semantics(table):
    create_tag(table, "x", snapshot_id=1)
    r = create_tag(table, "x", snapshot_id=1)  # same name, same snapshot: no-op
    assert r.written == {} and "already exists" in r.warnings[0]
    with pytest.raises(InvalidArgumentError, match="already exists.*replace_tag"):
        create_tag(table, "x", snapshot_id=2)
    assert create_tag(table, "x", snapshot_id=2, ignore_if_exists=True).written == {}
    assert tag_ids(table) == {"x": 1}


def test_retention_fields_in_tag_local_zone(table):
    create_tag(table, "kept", time_retained="2 d", now_millis=ms(2026, 11, 21, 3))
    tag = table.tags.tag("kept")
    assert tag.tag_create_time == dt.datetime(2026, 11, 21, 12, 0)  # Asia/Tokyo local now (sink.process-time-zone)
    assert tag.tag_time_retained == dt.timedelta(days=2)
    raw = json.loads(table.io.read_bytes(table.tags.path("kept")))
    assert raw["tagCreateTime"] == [2026, 11, 21, 12, 0] and raw["tagTimeRetained"] == 172800.0
    info = {i.name: i for i in list_tags(table)}["kept"]
    assert info.expires_at == dt.datetime(2026, 11, 23, 12, 0) and info.snapshot_live
    for bad in ("0 s", "-1 d", "soon"):
        with pytest.raises(Exception, match="time_retained|duration"):
            create_tag(table, f"bad-{bad[0]}", time_retained=bad)


def test_expired_but_tagged_snapshot_is_found_like_java(table):
    create_tag(table, "keep2", snapshot_id=2)
    drop_snapshots_below(table, 3)
    t = table.refresh()
    assert find_snapshot(t, 2).id == 2
    r = create_tag(t, "again2", snapshot_id=2)
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
    create_tag(table, "one", snapshot_id=1)
    drop_snapshots_below(table, 3)  # 2 is gone: after snapshot 1 something else may have been current
    with pytest.raises(InvalidArgumentError, match="has expired.*tag-held \\[1\\].*not tagging a different"):
        snapshot_current_at(table.refresh(), ms(2026, 11, 20, 6))


BAD_NAMES = ["", "   ", "123", "0", "a/b", "..", "a..b", "../x", "x\n", "tab\there", "bell\x07", "del\x7f", " lead",
             "trail ", "back\\slash"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_names_rejected_everywhere_nothing_written(table, name):
    create_tag(table, "good", snapshot_id=1)
    before = tag_dir_listing(table)
    for call in (lambda: create_tag(table, name),
                 lambda: plan_create_tag(table, name),
                 lambda: rename_tag(table, "good", name),
                 lambda: replace_tag(table, name),
                 lambda: tg.write_new_tag(table, name, Tag.from_snapshot(table.snapshots.snapshot(1)))):
        with pytest.raises(InvalidArgumentError):
            call()
    assert tag_dir_listing(table) == before


def test_rename_keeps_content_and_is_resumable(table):
    create_tag(table, "old", snapshot_id=2, time_retained="1 d", now_millis=T[0])
    content = table.io.read_bytes(table.tags.path("old"))
    dry = rename_tag(table, "old", "new", dry_run=True)
    assert dry.dry_run and tag_ids(table) == {"old": 2}
    r = rename_tag(table, "old", "new")
    assert r.written == {"tag": 1} and r.deleted == {"tag": 1}
    assert tag_ids(table) == {"new": 2} and table.io.read_bytes(table.tags.path("new")) == content
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        rename_tag(table, "old", "newer")
    create_tag(table, "other", snapshot_id=1)
    with pytest.raises(InvalidArgumentError, match="already exists"):
        rename_tag(table, "other", "new")
    # a crash after writing the new name: only an explicit resume finishes it (issue 8: never silently delete)
    table.io.write_bytes(table.tags.path("half"), table.io.read_bytes(table.tags.path("other")))
    with pytest.raises(InvalidArgumentError, match="resume=True"):
        rename_tag(table, "other", "half")
    assert tag_ids(table) == {"new": 2, "half": 1, "other": 1}
    assert rename_tag(table, "other", "half", resume=True, dry_run=True).files[0].path.endswith("tag-other")
    assert tag_ids(table) == {"new": 2, "half": 1, "other": 1}
    assert rename_tag(table, "other", "half", resume=True).details["resumed"] is True
    assert tag_ids(table) == {"new": 2, "half": 1}
    assert rename_tag(table, "other", "half", resume=True).warnings  # already complete: nothing left to do


def test_rename_away_from_a_java_numeric_name(table):
    # Java allows numeric names; we can read and rename them, never create them
    table.io.write_bytes(table.tags.path("42"), Tag.from_snapshot(table.snapshots.snapshot(3)).to_json().encode())
    rename_tag(table, "42", "v42")
    assert tag_ids(table) == {"v42": 3}


def test_replace_moves_tag_and_warns_about_orphans(table):
    create_tag(table, "moving", snapshot_id=1)
    r = replace_tag(table, "moving", snapshot_id=2, time_retained="1 h", now_millis=T[1])
    assert tag_ids(table) == {"moving": 2} and r.warnings == ()
    assert table.tags.tag("moving").tag_time_retained == dt.timedelta(hours=1)
    drop_snapshots_below(table, 3)  # snapshot 2 now only held by the tag
    r = replace_tag(table.refresh(), "moving")
    assert tag_ids(table) == {"moving": 4} and "orphans" in r.warnings[0]
    with pytest.raises(InvalidArgumentError, match="does not exist; use create_tag"):
        replace_tag(table, "missing")


def test_list_tags_ignores_success_file_directory(table):
    create_tag(table, "b", snapshot_id=3)
    create_tag(table, "a", snapshot_id=3, time_retained="1 d", now_millis=T[3])
    table.io.mkdirs(table.tags.dir + "/tag-success-file")
    table.io.write_bytes(table.tags.dir + "/tag-success-file/a_SUCCESS", b"{}")
    infos = list_tags(table)
    assert [(i.name, i.snapshot_id, i.time_retained) for i in infos] == [("a", 3, dt.timedelta(days=1)),
                                                                           ("b", 3, None)]
    assert infos[0].snapshot_time_millis == T[2] and infos[1].expires_at is None


def test_validate_no_auto_tag_with_java_auto_creation(warehouse):
    t = fake_history(warehouse, "auto", {"tag.automatic-creation": "process-time"}, T)
    create_tag(t, "2026-11-19", snapshot_id=2)  # parses as a daily auto tag
    with pytest.raises(InvalidArgumentError, match="already carries auto tag '2026-11-19'"):
        create_tag(t, "2026-11-20", snapshot_id=2)
    create_tag(t, "release-1", snapshot_id=2)  # not an auto name: fine
    assert tag_ids(t) == {"2026-11-19": 2, "release-1": 2}


def test_delete_goes_through_reclaim(warehouse):
    t = real_table(warehouse, "del", None, [ms(2026, 11, 20, h) for h in (1, 2, 3)])
    create_tag(t, "a", snapshot_id=1)
    create_tag(t, "b", snapshot_id=2)
    dry = delete_tags(t, ["a"], dry_run=True)
    assert dry.dry_run and "a" in tag_ids(t)
    r = delete_tags(t, "a")
    assert r.deleted.get("tag") == 1 and tag_ids(t) == {"b": 2}
    with pytest.raises(InvalidArgumentError):
        delete_tags(t, ["../../etc"])


def test_rename_an_auto_tag_with_java_auto_creation(warehouse):
    t = fake_history(warehouse, "ren", {"tag.automatic-creation": "process-time"}, T)
    create_tag(t, "2026-11-19", snapshot_id=2)
    rename_tag(t, "2026-11-19", "2026-11-18")  # the tag being renamed is not a second auto tag of snapshot 2
    create_tag(t, "2026-11-17", snapshot_id=1)
    with pytest.raises(InvalidArgumentError, match="already carries auto tag"):
        replace_tag(t, "2026-11-17", snapshot_id=2)
    assert tag_ids(t) == {"2026-11-17": 1, "2026-11-18": 2}
