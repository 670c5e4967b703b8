"""Tag expiry: by tag.num-retained-max (auto tags only; all tags in batch mode), by retention, by older_than (tag
file mtime for tags without a create time), and with file reclamation through reclaim.delete_tags."""
from __future__ import annotations

import datetime as dt
import os

import pytest

import paimon_ops as po
from paimon_ops.errors import InvalidOptionError
from paimon_ops.execution.runner import LocalRunner
from paimon_ops.lifecycle.tag_expiry import plan_expire_tags
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from tests.lifecycle.test_tags_util import commit_rows, fake_history, ms, real_table, tag_ids

DAYS = [ms(2026, 11, d, 12) for d in range(15, 20)]  # snapshots 1..5


def test_count_counts_auto_tags_only_oldest_snapshot_first(warehouse):
    t = fake_history(warehouse, "cnt", {"tag.create-time": "00:00", "tag.num-retained-max": "2"}, DAYS)
    po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 19, 1)).execute()
    assert tag_ids(t) == {"2026-11-15": 1, "2026-11-16": 2, "2026-11-17": 3, "2026-11-18": 4}
    po.Table(t).tags.create("release", snapshot_id=1).execute()  # manual, not a period name: never counted
    po.Table(t).tags.create("2027-01-01 manual", snapshot_id=5).execute()  # parses as a daily name (text before the space): counts
    plan = plan_expire_tags(t, now=ms(2026, 11, 20))
    reasons = plan.details["expired_tags"]
    assert sorted(reasons) == ["2026-11-15", "2026-11-16", "2026-11-17"]
    assert all("tag.num-retained-max=2" in why for why in reasons.values())
    assert tag_ids(t).keys() >= {"2026-11-15"}  # planning deleted nothing
    r = po.Table(t).maintenance.expire_tags(now=ms(2026, 11, 20)).execute()
    assert r.deleted.get("tag") == 3
    assert tag_ids(t) == {"release": 1, "2026-11-18": 4, "2027-01-01 manual": 5}
    assert po.Table(t).maintenance.expire_tags(now=ms(2026, 11, 20)).execute().details["expired_tags"] == {}


def test_count_in_batch_mode_counts_all_tags_ties_by_mtime(warehouse):
    t = fake_history(warehouse, "batchcnt", {"tag.automatic-creation": "batch", "tag.num-retained-max": "2"}, DAYS)
    for name, sid in (("a", 1), ("b", 2), ("c", 2), ("d", 3)):
        po.Table(t).tags.create(name, snapshot_id=sid).execute()
    os.utime(t.tags.path("b"), (2_000_000_000, 2_000_000_000))
    os.utime(t.tags.path("c"), (1_000_000_000, 1_000_000_000))  # older file: goes first within snapshot 2
    po.Table(t).maintenance.expire_tags(now=ms(2026, 11, 20)).execute()
    assert tag_ids(t) == {"b": 2, "d": 3}


def test_count_ignored_without_automatic_tagging(warehouse):
    t = fake_history(warehouse, "nocnt", {"tag.num-retained-max": "1"}, DAYS)
    po.Table(t).tags.create("2026-01-01", snapshot_id=1).execute()
    po.Table(t).tags.create("2026-01-02", snapshot_id=2).execute()
    plan = plan_expire_tags(t, now=ms(2026, 11, 20))
    assert plan.details["expired_tags"] == {} and "not applied" in plan.warnings[0]


def test_time_retention_strictly_after_in_tag_local_zone(warehouse):
    t = fake_history(warehouse, "ret", {"sink.process-time-zone": "Asia/Tokyo"}, DAYS)
    po.Table(t).tags.create("short", snapshot_id=1, time_retained=dt.timedelta(days=1), now=ms(2026, 11, 19, 15)).execute(
        )  # 11-20 00:00 JST
    po.Table(t).tags.create("long", snapshot_id=2, time_retained=dt.timedelta(days=30), now=ms(2026, 11, 19, 15)).execute()
    po.Table(t).tags.create("forever", snapshot_id=3).execute()
    assert t.tags.tag("short").tag_create_time == dt.datetime(2026, 11, 20, 0, 0)
    at_expiry = ms(2026, 11, 20, 15)  # 11-21 00:00 JST = create time + retention: not yet (strictly after)
    assert plan_expire_tags(t, now=at_expiry).details["expired_tags"] == {}
    reasons = plan_expire_tags(t, now=at_expiry + 1).details["expired_tags"]
    assert list(reasons) == ["short"] and "retention" in reasons["short"]
    disabled = FileStoreTable(t.root, t.identifier, options_override={"tag.time-expire-enabled": "false"}, io=t.io)
    assert plan_expire_tags(disabled, now=at_expiry + 1).details["expired_tags"] == {}
    po.Table(t).maintenance.expire_tags(now=ms(2030, 1, 1)).execute()
    assert tag_ids(t) == {"forever": 3}


def test_older_than_uses_create_time_or_file_mtime(warehouse):
    t = fake_history(warehouse, "older", {"sink.process-time-zone": "Asia/Tokyo"}, DAYS)
    po.Table(t).tags.create("with-time", snapshot_id=1, time_retained=dt.timedelta(days=365), now=ms(2026, 11, 20, 1)).execute(
        )  # 10:00 JST
    po.Table(t).tags.create("old-file", snapshot_id=2).execute()
    po.Table(t).tags.create("new-file", snapshot_id=3).execute()
    os.utime(t.tags.path("old-file"), (ms(2026, 1, 1) / 1000, ms(2026, 1, 1) / 1000))
    now = ms(2026, 11, 21)
    assert plan_expire_tags(t, now=now, older_than=ms(2026, 11, 20, 1)).details["expired_tags"].keys() == {
        "old-file"}  # create time equal to older_than: kept (strictly before)
    reasons = plan_expire_tags(t, now=now, older_than=dt.datetime(2026, 11, 20, 10, 0, 1)).details[
        "expired_tags"]  # naive: tag local zone (JST)
    assert reasons.keys() == {"old-file", "with-time"}
    assert "tag file modified" in reasons["old-file"] and "created 2026-11-20T10:00" in reasons["with-time"]
    r = po.Table(t).maintenance.expire_tags(now=now, older_than=dt.datetime(2026, 11, 20, 1, 0, 1, tzinfo=dt.timezone.utc)).execute()
    assert r.deleted.get("tag") == 2 and tag_ids(t) == {"new-file": 3}


def test_bad_options_on_expiry(warehouse):
    t = fake_history(warehouse, "badexp", {"tag.create-time": "00:00", "tag.num-retained-max": "-3"}, DAYS)
    with pytest.raises(InvalidOptionError, match="'tag.num-retained-max' on table db.badexp"):
        po.Table(t).maintenance.expire_tags(now=ms(2026, 11, 20)).execute()


def _files(table: FileStoreTable, tag: str) -> set[str]:
    return {f.path for f in TableScanner(table).scan_tag(tag).files}


def test_expiry_reclaims_files_only_the_tag_kept_alive(warehouse):
    """PK table: auto tag on snapshot 1 with retention, then a full compaction rewrites everything and snapshot
    expiry removes snapshots 1..2. Expiring the tag deletes its data files (no snapshot or tag uses them any
    more); the live data stays readable."""
    opts = {"tag.create-time": "00:00", "tag.default-time-retained": "1 d"}
    t = real_table(warehouse, "reclaim", opts, [ms(2026, 11, 20, 10)], primary_key=True)
    po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 21, 1)).execute()
    assert tag_ids(t) == {"2026-11-20": 1}
    commit_rows(t, [7, 8], ms(2026, 11, 21, 2))
    po.Table(t.refresh()).maintenance.compact(mode="full").execute(runner=LocalRunner())
    t = t.refresh()
    po.Table(t).maintenance.expire_snapshots(now=ms(2030, 1, 1), retain_min=1, retain_max=1).execute()
    t = t.refresh()
    assert t.snapshots.earliest_id() == t.snapshots.latest_id() == 3
    tagged = _files(t, "2026-11-20")
    live = {f.path for f in TableScanner(t).scan(t.snapshots.latest()).files}
    assert tagged and not (tagged & live) and all(os.path.exists(p) for p in tagged)

    dry = po.Table(t).maintenance.expire_tags(now=ms(2026, 11, 23)).dry_run_report()
    assert dry.dry_run and dry.deleted.get("data") == len(tagged) and all(os.path.exists(p) for p in tagged)
    r = po.Table(t).maintenance.expire_tags(now=ms(2026, 11, 23)).execute()
    assert list(r.details["expired_tags"]) == ["2026-11-20"] and "retention" in r.details["expired_tags"]["2026-11-20"]
    assert r.deleted.get("data") == len(tagged) and r.deleted.get("tag") == 1
    assert not any(os.path.exists(p) for p in tagged)
    assert all(os.path.exists(p) for p in live) and tag_ids(t) == {}
    from tests.pypaimon_util import read, sorted_rows
    assert [r["k"] for r in sorted_rows(read(warehouse, "db.reclaim"))] == [0, 7, 8]
