"""Interop proof for tags: Java Paimon 0.9 and pypaimon 2.1.0 read the tags we create (auto daily names with and
without retention, manual tags), Java honours our retention fields and recognises our auto-tag names in its own
count-based expiry, and Java-created tags are listed and used by us."""
from __future__ import annotations

import datetime as dt
import time

import pytest

import paimon_ops as po
from paimon_ops.lifecycle.autotag import CONFLICT, EXISTS, plan_auto_tags
from paimon_ops.lifecycle.tags import list_tags
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from tests.interop import java_harness as jh
from tests.interop.java_harness import JavaTable
from tests.lifecycle.test_tags_util import ms, real_table, tag_ids
from tests.pypaimon_util import read, sorted_rows

pytestmark = [
    pytest.mark.java,
    pytest.mark.skipif(not jh.java_available(), reason=jh.skip_reason() or "java not available"),
]


def _rows(n: int) -> list[list]:
    return [[i, f"v{i}"] for i in range(n)]


def test_java_and_pypaimon_read_our_tags_and_java_honours_retention(warehouse):
    t = real_table(warehouse, "ours", {"tag.create-time": "00:00"},
                   [ms(2026, 11, 20, 10), ms(2026, 11, 21, 10), ms(2026, 11, 22, 10)])
    po.Table(t).maintenance.create_auto_tags(now=ms(2026, 11, 21, 1)).execute()  # 2026-11-20 -> snapshot 1, no retention
    long_kept = FileStoreTable(t.root, t.identifier, options_override={"tag.default-time-retained": "3650 d"}, io=t.io)
    po.Table(long_kept).maintenance.create_auto_tags(now=ms(2026, 11, 23, 1)).execute()  # 11-21 -> 2, 11-22 -> 3, with retention
    po.Table(t).tags.create("manual-short", snapshot_id=1, time_retained=dt.timedelta(days=1), now=ms(2026, 11, 20, 11)).execute()
    po.Table(t).tags.create("manual", snapshot_id=2).execute()
    assert tag_ids(t) == {"2026-11-20": 1, "2026-11-21": 2, "2026-11-22": 3, "manual-short": 1, "manual": 2}
    assert t.tags.tag("2026-11-21").tag_time_retained == dt.timedelta(days=3650)
    assert t.tags.tag("2026-11-20").tag_create_time is None

    java = JavaTable(warehouse, "db", "ours")
    expected = {"2026-11-20": _rows(1), "2026-11-21": _rows(2), "2026-11-22": _rows(3), "manual-short": _rows(1),
                "manual": _rows(2)}
    results = jh.run_many([("snapshots", java.payload())]
                          + [("read", java.payload(tag=name)) for name in expected])
    assert results[0]["tags"] == tag_ids(t)
    for (name, rows), res in zip(expected.items(), results[1:]):
        assert sorted(res["rows"]) == rows, name
        assert sorted_rows(read(warehouse, "db.ours", tag=name)) == [{"k": k, "v": v} for k, v in rows], name

    # A Java commit runs its tag time expiry (maintain step 2): it parses our tagCreateTime / tagTimeRetained and
    # deletes the tag whose retention ended (created 2026-11-20 11:00 UTC + 1 d); the 3650-day ones stay.
    java.write([{"rows": [[9, "v9"]]}])
    after = java.snapshots()["tags"]
    assert after == {"2026-11-20": 1, "2026-11-21": 2, "2026-11-22": 3, "manual": 2}


def test_java_created_tags_are_listed_and_used_by_ours(warehouse):
    java = JavaTable(warehouse, "db", "jt")
    java.create([("k", "INT"), ("v", "STRING")], options={"bucket": -1})
    before = int(time.time() * 1000)
    jh.run_many([
        ("write", java.payload(batches=[{"rows": [[i, f"v{i}"]]} for i in range(4)])),  # snapshots 1..4
        ("create_tag", java.payload(tag="java-plain", snapshot_id=2)),
        ("create_tag", java.payload(tag="java-ret", snapshot_id=3, time_retained_ms=60_000)),
        ("expire_snapshots", java.payload(retain_min=1, retain_max=1, time_retained_ms=3_600_000)),
    ])
    t = FileSystemCatalog(warehouse).get_table("db.jt")
    infos = {i.name: i for i in list_tags(t)}
    assert {n: (i.snapshot_id, i.snapshot_live) for n, i in infos.items()} == {"java-plain": (2, False),
                                                                               "java-ret": (3, False)}
    ret = infos["java-ret"]
    assert ret.time_retained == dt.timedelta(minutes=1) and infos["java-plain"].create_time is None
    # Java wrote the JVM's local now (UTC in the harness); our tag local zone defaults to UTC as well
    created_ms = int(ret.create_time.replace(tzinfo=dt.timezone.utc).timestamp() * 1000)
    assert before - 5_000 <= created_ms <= int(time.time() * 1000) + 5_000

    # ours: a tag on an expired snapshot that only a Java tag still holds (Java's findSnapshot)
    po.Table(t).tags.create("from-java", snapshot_id=2).execute()
    # ours: expire Java's retention tag (with reclamation), keep the others
    r = po.Table(t).maintenance.expire_tags(now=created_ms + 60_001).execute()
    assert list(r.details["expired_tags"]) == ["java-ret"]
    # append table: snapshot 3's data file is still live; its manifest lists were only the tag's -> reclaimed
    assert r.deleted.get("tag") == 1 and r.deleted.get("manifest-list", 0) >= 1 and not r.deleted.get("data")
    snaps, plain, latest, check = jh.run_many([
        ("snapshots", java.payload()), ("read", java.payload(tag="java-plain")), ("read", java.payload()),
        ("check_files", java.payload())])
    assert snaps["tags"] == {"from-java": 2, "java-plain": 2}
    assert sorted(plain["rows"]) == _rows(2) and sorted(latest["rows"]) == _rows(4)
    assert check["missing"] == []


def test_java_recognises_our_auto_tag_names_and_expires_them_by_count(warehouse):
    """Our daily names must be ones Java's period parser accepts: Java's own auto creation (run by its commit)
    counts auto tags by parsing names with the period formatter and deletes the oldest beyond
    tag.num-retained-max. If Java did not parse our names it would neither continue after our last tag nor
    delete ours."""
    opts = {"tag.automatic-creation": "process-time", "tag.num-retained-max": "2", "sink.process-time-zone": "UTC"}
    t = real_table(warehouse, "count", opts, [ms(2024, 1, 1, 10), ms(2024, 1, 2, 10), ms(2024, 1, 3, 10)])
    r = po.Table(t).maintenance.create_auto_tags(now=ms(2024, 1, 4, 1)).execute()
    assert r.details["created"] == ["2024-01-01", "2024-01-02", "2024-01-03"]
    assert tag_ids(t) == {"2024-01-01": 1, "2024-01-02": 2, "2024-01-03": 3}

    java = JavaTable(warehouse, "db", "count")
    day_before = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)
    java.write([{"rows": [[9, "v9"]]}])  # snapshot 4, committed now: Java's auto tag for yesterday, then count expiry
    day_after = dt.datetime.now(dt.timezone.utc).date() - dt.timedelta(days=1)
    tags = java.snapshots()["tags"]
    java_tag = next(n for n in tags if n not in ("2024-01-03",))
    assert java_tag in {day_before.isoformat(), day_after.isoformat()}  # normalizeToPreviousTag(now)
    # Java continued after OUR last auto tag (nextSnapshot = 3 + 1) and deleted OUR two oldest auto tags
    assert tags == {"2024-01-03": 3, java_tag: 4}
    assert tag_ids(t.refresh()) == tags
    # and ours leaves Java's tag alone: its snapshot choice differs from ours (first after vs last before)
    plan = plan_auto_tags(t.refresh(), periods=[java_tag])
    assert plan.details["periods"][0]["status"] in (EXISTS, CONFLICT) and not plan.writes
