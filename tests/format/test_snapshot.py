"""Snapshot / tag / changelog / consumer JSON and hint files (paimon_ops.format.snapshot)."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_ops.errors import CorruptMetadataError
from paimon_ops.format.snapshot import (
    Changelog,
    Consumer,
    Snapshot,
    Tag,
    format_hint,
    jackson_dumps,
    parse_hint,
)

# What Java master writes (Jackson DefaultPrettyPrinter, Java key order, every optional field present).
JAVA_MASTER = """{
  "version" : 3,
  "uuid" : "2b0f3a4e-7c55-4f6a-9d0e-1a2b3c4d5e6f",
  "id" : 7,
  "schemaId" : 1,
  "baseManifestList" : "manifest-list-5d1c-0",
  "baseManifestListSize" : 1234,
  "deltaManifestList" : "manifest-list-5d1c-1",
  "deltaManifestListSize" : 1000,
  "changelogManifestList" : "manifest-list-5d1c-2",
  "changelogManifestListSize" : 900,
  "indexManifest" : "index-manifest-77aa-0",
  "commitUser" : "a9b8c7",
  "writerVersion" : "java-2.1-SNAPSHOT-abc123",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "COMPACT",
  "timeMillis" : 1724300000123,
  "totalRecordCount" : 10,
  "deltaRecordCount" : -2,
  "changelogRecordCount" : 2,
  "watermark" : -9223372036854775808,
  "statistics" : "stat-0c1d-0",
  "properties" : {
    "k" : "v",
    "é" : "tab\\there"
  },
  "nextRowId" : 10,
  "operation" : "WRITE"
}"""

# What Java 0.9 writes: explicit null changelog list, logOffsets always present, no sizes.
JAVA_0_9 = """{
  "version" : 3,
  "id" : 5,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-aa-0",
  "deltaManifestList" : "manifest-list-aa-1",
  "changelogManifestList" : null,
  "commitUser" : "u-1",
  "commitIdentifier" : 12,
  "commitKind" : "APPEND",
  "timeMillis" : 1726000000000,
  "logOffsets" : { },
  "totalRecordCount" : 15,
  "deltaRecordCount" : 5,
  "changelogRecordCount" : 0
}"""

TAG_SUFFIX = """,
  "tagCreateTime" : [ 2024, 1, 2, 3, 4 ],
  "tagTimeRetained" : 86400.000000000
}"""


def test_parse_java_master_snapshot_and_write_it_back_identically() -> None:
    s = Snapshot.from_json(JAVA_MASTER, "/t/snapshot/snapshot-7")
    assert (s.version, s.uuid, s.id, s.schema_id) == (3, "2b0f3a4e-7c55-4f6a-9d0e-1a2b3c4d5e6f", 7, 1)
    assert (s.base_manifest_list, s.base_manifest_list_size) == ("manifest-list-5d1c-0", 1234)
    assert (s.delta_manifest_list, s.delta_manifest_list_size) == ("manifest-list-5d1c-1", 1000)
    assert (s.changelog_manifest_list, s.changelog_manifest_list_size) == ("manifest-list-5d1c-2", 900)
    assert s.index_manifest == "index-manifest-77aa-0"
    assert (s.commit_user, s.writer_version) == ("a9b8c7", "java-2.1-SNAPSHOT-abc123")
    assert (s.commit_identifier, s.commit_kind, s.time_millis) == (2 ** 63 - 1, "COMPACT", 1724300000123)
    assert (s.total_record_count, s.delta_record_count, s.changelog_record_count) == (10, -2, 2)
    assert s.watermark == -(2 ** 63) and s.statistics == "stat-0c1d-0"
    assert s.properties == {"k": "v", "é": "tab\there"}
    assert (s.next_row_id, s.operation, s.log_offsets, s.extra) == (10, "WRITE", None, {})
    assert s.to_json() == JAVA_MASTER
    assert hash(s) == hash(Snapshot.from_json(s.to_json(), "x"))


def test_parse_java_0_9_snapshot() -> None:
    s = Snapshot.from_json(JAVA_0_9.encode(), "/t/snapshot/snapshot-5")
    assert s.changelog_manifest_list is None and s.log_offsets == {} and s.changelog_record_count == 0
    assert s.base_manifest_list_size is None and s.uuid is None and s.properties is None
    # Java >= 1.0 omits nulls; the explicit null of 0.9 is not needed by any reader.
    assert s.to_json() == JAVA_0_9.replace('  "changelogManifestList" : null,\n', "")


def test_version_defaults_and_unknown_keys_are_kept() -> None:
    text = JAVA_0_9.replace('  "version" : 3,\n', "")[:-2] + (
        ',\n  "totalFileSize" : 77,\n  "futureThing" : {"a": [1, 2.50, null, true]}\n}')
    s = Snapshot.from_json(text, "p")
    assert s.version == 1  # absent => 1 as Java reads it
    assert list(s.extra) == ["totalFileSize", "futureThing"] and s.extra["totalFileSize"] == 77
    out = s.to_json()
    # Unknown keys follow the known ones; numbers keep their digits.
    assert out.endswith('"totalFileSize" : 77,\n  "futureThing" : {\n    "a" : [ 1, 2.50, null, true ]\n  }\n}')
    assert Snapshot.from_json(out, "p") == s


def test_minimal_snapshot_to_json_format() -> None:
    s = Snapshot(id=1, schema_id=0, base_manifest_list="b", delta_manifest_list="d", commit_user="u",
                 commit_identifier=1, commit_kind="APPEND", time_millis=5, total_record_count=0,
                 delta_record_count=0)
    assert s.to_json() == (
        '{\n  "version" : 3,\n  "id" : 1,\n  "schemaId" : 0,\n  "baseManifestList" : "b",\n'
        '  "deltaManifestList" : "d",\n  "commitUser" : "u",\n  "commitIdentifier" : 1,\n'
        '  "commitKind" : "APPEND",\n  "timeMillis" : 5,\n  "totalRecordCount" : 0,\n  "deltaRecordCount" : 0\n}')
    assert Changelog.from_json(s.to_json(), "c") == s
    assert s.with_(changelog_manifest_list="c").to_json().count("changelogManifestList") == 1


def test_jackson_string_escapes() -> None:
    assert jackson_dumps({"a": 'q"\\\n\x01é\u2028/'}) == '{\n  "a" : "q\\"\\\\\\n\\u0001é\u2028/"\n}'
    assert jackson_dumps({"e": {}, "l": []}) == '{\n  "e" : { },\n  "l" : [ ]\n}'


@pytest.mark.parametrize("drop", ["id", "schemaId", "baseManifestList", "deltaManifestList", "commitUser",
                                  "commitIdentifier", "commitKind", "timeMillis"])
def test_missing_required_key(drop: str) -> None:
    obj = json.loads(JAVA_0_9)
    del obj[drop]
    with pytest.raises(CorruptMetadataError, match=repr(drop)) as ei:
        Snapshot.from_json(json.dumps(obj), "/t/snapshot/snapshot-5")
    assert ei.value.path == "/t/snapshot/snapshot-5"


@pytest.mark.parametrize("text,match", [
    ("{", "not valid JSON"), ("", "not valid JSON"), (b"\xff\xfe", "not valid JSON"), ("[1]", "not an object"),
    ('{"id": "x"}', "'id' is not an integer"),
])
def test_invalid_snapshot_json(text, match: str) -> None:
    with pytest.raises(CorruptMetadataError, match=match) as ei:
        Snapshot.from_json(text, "/p/s")
    assert ei.value.path == "/p/s"


def test_wrong_types_and_kinds() -> None:
    for key, value, match in [("commitKind", "MERGE", "commitKind"), ("schemaId", True, "schemaId"),
                              ("baseManifestList", 3, "baseManifestList"), ("logOffsets", [1], "logOffsets"),
                              ("timeMillis", 1.5, "timeMillis")]:
        obj = json.loads(JAVA_0_9)
        obj[key] = value
        with pytest.raises(CorruptMetadataError, match=match):
            Snapshot.from_json(json.dumps(obj), "p")
    obj = json.loads(JAVA_0_9)
    obj["id"] = "5"  # Jackson coerces numeric strings for long fields
    assert Snapshot.from_json(json.dumps(obj), "p").id == 5


# ---------------------------------------------------------------------------------------------- tags


def test_java_tag_round_trip() -> None:
    text = JAVA_0_9.replace('  "changelogManifestList" : null,\n', "")[:-2] + TAG_SUFFIX
    t = Tag.from_json(text, "/t/tag/tag-x")
    assert t.tag_create_time == dt.datetime(2024, 1, 2, 3, 4)
    assert t.tag_time_retained == dt.timedelta(days=1)
    assert t.extra == {}
    assert t.to_json() == text
    # Read as a plain snapshot, the tag keys are kept as unknown keys.
    as_snapshot = Snapshot.from_json(text, "p")
    assert set(as_snapshot.extra) == {"tagCreateTime", "tagTimeRetained"}
    assert t.to_snapshot() == as_snapshot.with_(extra={})


@pytest.mark.parametrize("value,nanos,expected", [
    (dt.datetime(1969, 1, 1, 0, 0, 0, 123456), 123456789, [1969, 1, 1, 0, 0, 0, 123456789]),
    (dt.datetime(2024, 1, 2, 3, 4), None, [2024, 1, 2, 3, 4]),
    (dt.datetime(2024, 1, 2, 3, 4, 5), None, [2024, 1, 2, 3, 4, 5]),
    (dt.datetime(2024, 1, 2, 0, 0, 0, 1), None, [2024, 1, 2, 0, 0, 0, 1000]),
    (dt.datetime(2024, 12, 31, 23, 59, 0, 500000), None, [2024, 12, 31, 23, 59, 0, 500000000]),
    (dt.datetime(2024, 1, 2, 3, 4, 5, 6), 999, [2024, 1, 2, 3, 4, 5, 6000]),  # inconsistent nanos: datetime wins
])
def test_tag_create_time_trimming(value: dt.datetime, nanos, expected: list[int]) -> None:
    base = Snapshot.from_json(JAVA_0_9, "p")
    t = Tag.from_snapshot(base, dt.timedelta(seconds=5), value)
    if nanos is not None:
        t = t.with_(tag_create_nanos=nanos)
    obj = json.loads(t.to_json())
    assert obj["tagCreateTime"] == expected
    assert '"tagTimeRetained" : 5.000000000' in t.to_json()
    assert f'"tagCreateTime" : [ {", ".join(map(str, expected))} ]' in t.to_json()
    back = Tag.from_json(t.to_json(), "p")
    assert back.tag_create_time == value
    assert json.loads(back.to_json())["tagCreateTime"] == expected


@pytest.mark.parametrize("raw,expected", [
    ("86400.000000000", dt.timedelta(days=1)), ("86400", dt.timedelta(days=1)), ("0.0", dt.timedelta(0)),
    ("1.000001000", dt.timedelta(seconds=1, microseconds=1)), ('"PT24H"', dt.timedelta(days=1)),
    ('"PT1H30M"', dt.timedelta(minutes=90)), ('"P2DT0.5S"', dt.timedelta(days=2, milliseconds=500)),
    ('"3600.5"', dt.timedelta(seconds=3600.5)), ("5E+1", dt.timedelta(seconds=50)),
])
def test_tag_time_retained_reading(raw: str, expected: dt.timedelta) -> None:
    text = JAVA_0_9[:-2] + f',\n  "tagTimeRetained" : {raw}\n}}'
    t = Tag.from_json(text, "p")
    assert t.tag_time_retained == expected and t.tag_create_time is None


@pytest.mark.parametrize("td,expected", [
    (dt.timedelta(days=1), "86400.000000000"), (dt.timedelta(seconds=5), "5.000000000"), (dt.timedelta(0), "0.0"),
    (dt.timedelta(seconds=1, microseconds=5), "1.000005000"), (dt.timedelta(hours=1, milliseconds=250),
                                                               "3600.250000000"),
])
def test_tag_time_retained_writing(td: dt.timedelta, expected: str) -> None:
    t = Tag.from_snapshot(Snapshot.from_json(JAVA_0_9, "p"), td, dt.datetime(2024, 5, 6, 7, 8, 9))
    assert t.to_json().endswith(f'"tagTimeRetained" : {expected}\n}}')


def test_tag_create_time_reading_variants() -> None:
    for raw, expected, nanos in [
        ('[ 2024, 1, 2, 3, 4 ]', dt.datetime(2024, 1, 2, 3, 4), 0),
        ('[ "2024", "1", "2", "3", "4", "5" ]', dt.datetime(2024, 1, 2, 3, 4, 5), 0),
        ('[ 1969, 1, 1, 0, 0, 0, 123456789 ]', dt.datetime(1969, 1, 1, 0, 0, 0, 123456), 123456789),
        ('"2024-01-02T03:04:05.123456789"', dt.datetime(2024, 1, 2, 3, 4, 5, 123456), 123456789),
        ('"2024-01-02T03:04"', dt.datetime(2024, 1, 2, 3, 4), 0),
    ]:
        t = Tag.from_json(JAVA_0_9[:-2] + f',\n  "tagCreateTime" : {raw}\n}}', "p")
        assert (t.tag_create_time, t.tag_create_nanos) == (expected, nanos)
    for bad in ('[ 2024, 1 ]', '"yesterday"', '[ 2024, 13, 1, 0, 0 ]', "true"):
        with pytest.raises(CorruptMetadataError, match="tagCreateTime"):
            Tag.from_json(JAVA_0_9[:-2] + f',\n  "tagCreateTime" : {bad}\n}}', "p")
    with pytest.raises(CorruptMetadataError, match="tagTimeRetained"):
        Tag.from_json(JAVA_0_9[:-2] + ',\n  "tagTimeRetained" : "forever"\n}', "p")


def test_tag_without_retention_is_a_plain_snapshot() -> None:
    s = Snapshot.from_json(JAVA_MASTER, "p")
    t = Tag.from_snapshot(s, None, dt.datetime(2024, 1, 1))
    assert t.tag_create_time is None and t.to_json() == s.to_json()
    t2 = Tag.from_snapshot(s, dt.timedelta(hours=1))
    assert t2.tag_create_time is not None and abs(t2.tag_create_time - dt.datetime.now()) < dt.timedelta(minutes=5)


@settings(max_examples=100, deadline=None)
@given(st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 12, 31)),
       st.timedeltas(min_value=dt.timedelta(0), max_value=dt.timedelta(days=10 ** 6)))
def test_tag_round_trip_property(created: dt.datetime, retained: dt.timedelta) -> None:
    t = Tag.from_snapshot(Snapshot.from_json(JAVA_0_9, "p"), retained, created)
    back = Tag.from_json(t.to_json(), "p")
    assert (back.tag_create_time, back.tag_time_retained) == (created, retained)


# ---------------------------------------------------------------------------------------------- hints, consumer


def test_hints() -> None:
    assert parse_hint(b"42", "p") == 42
    assert parse_hint(b" 42\n", "p") == 42
    assert parse_hint("7") == 7
    for junk in [b"", b"abc", b"4 2", b"\xff", b"99999999999999999999999", b"1.0"]:
        assert parse_hint(junk, "p") is None
    assert format_hint(123) == b"123"


def test_consumer() -> None:
    c = Consumer.from_json('{\n  "nextSnapshot" : 5\n}', "p")
    assert c == Consumer(5)
    assert c.to_json() == '{\n  "nextSnapshot" : 5\n}'
    assert Consumer.from_json('{"nextSnapshot": 6, "other": 1}', "p") == Consumer(6)
    for bad in ["{}", "[]", '{"nextSnapshot": "x"}', "nope"]:
        with pytest.raises(CorruptMetadataError) as ei:
            Consumer.from_json(bad, "/t/consumer/consumer-a")
        assert ei.value.path == "/t/consumer/consumer-a"


# ---------------------------------------------------------------------------------------------- pypaimon


@pytest.fixture(scope="module")
def pp_table(tmp_path_factory: pytest.TempPathFactory):
    from pypaimon import CatalogFactory, Schema
    from pypaimon.consumer.consumer import Consumer as PPConsumer
    from pypaimon.consumer.consumer_manager import ConsumerManager

    wh = str(tmp_path_factory.mktemp("wh"))
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", False)
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("v", pa.string())])
    cat.create_table("db.t", Schema.from_pyarrow_schema(schema, primary_keys=["id"], options={"bucket": "1"}), False)
    t = cat.get_table("db.t")
    for i in range(2):
        wb = t.new_batch_write_builder()
        w, c = wb.new_write(), wb.new_commit()
        w.write_arrow(pa.table({"id": [i, i + 10], "v": ["a", "b"]}, schema=schema))
        c.commit(w.prepare_commit())
        w.close()
        c.close()
    t.create_tag("plain", snapshot_id=1)
    t.create_tag("ttl", snapshot_id=2, time_retained="1d")
    ConsumerManager(t.file_io, t.table_path).reset_consumer("c1", PPConsumer(next_snapshot=2))
    return t, Path(t.table_path)


def test_read_pypaimon_snapshots_tags_consumers(pp_table) -> None:
    _t, root = pp_table
    snaps = [Snapshot.from_json((root / "snapshot" / f"snapshot-{i}").read_bytes(), f"snapshot-{i}")
             for i in (1, 2)]
    assert [s.id for s in snaps] == [1, 2]
    assert [s.total_record_count for s in snaps] == [2, 4]
    assert all(s.commit_kind == "APPEND" and s.uuid and s.writer_version.startswith("python-") for s in snaps)
    for s in snaps:
        assert (root / "manifest" / s.base_manifest_list).stat().st_size == s.base_manifest_list_size
    assert parse_hint((root / "snapshot" / "LATEST").read_bytes(), "LATEST") == 2
    plain = Tag.from_json((root / "tag" / "tag-plain").read_bytes(), "tag-plain")
    assert plain.tag_create_time is None and plain.to_snapshot() == snaps[0]
    ttl = Tag.from_json((root / "tag" / "tag-ttl").read_bytes(), "tag-ttl")
    assert ttl.tag_time_retained == dt.timedelta(days=1) and ttl.id == 2
    assert abs(ttl.tag_create_time - dt.datetime.now()) < dt.timedelta(hours=1)
    c = Consumer.from_json((root / "consumer" / "consumer-c1").read_bytes(), "consumer-c1")
    assert c == Consumer(2)


def test_pypaimon_reads_our_json(pp_table) -> None:
    from pypaimon.common.json_util import JSON
    from pypaimon.consumer.consumer import Consumer as PPConsumer
    from pypaimon.snapshot.snapshot import Snapshot as PPSnapshot
    from pypaimon.tag.tag import Tag as PPTag

    _t, root = pp_table
    ours = Snapshot.from_json((root / "snapshot" / "snapshot-2").read_bytes(), "s2")
    pp = JSON.from_json(ours.to_json(), PPSnapshot)
    assert (pp.id, pp.schema_id, pp.base_manifest_list, pp.delta_manifest_list, pp.total_record_count,
            pp.commit_identifier, pp.uuid, pp.writer_version) == (
        ours.id, ours.schema_id, ours.base_manifest_list, ours.delta_manifest_list, ours.total_record_count,
        ours.commit_identifier, ours.uuid, ours.writer_version)
    tag = Tag.from_snapshot(ours, dt.timedelta(hours=36), dt.datetime(2024, 2, 3, 4, 5, 6, 700000))
    pt = JSON.from_json(tag.to_json(), PPTag)
    assert pt.tag_create_time == dt.datetime(2024, 2, 3, 4, 5, 6, 700000)
    assert pt.tag_time_retained == dt.timedelta(hours=36) and pt.id == ours.id
    assert PPConsumer.from_json(Consumer(9).to_json()).next_snapshot == 9


def test_pypaimon_reads_table_through_our_snapshot_and_hint(pp_table, tmp_path: Path) -> None:
    """Rewrite every snapshot file and the LATEST hint with our codec; pypaimon must still read the table."""
    import shutil

    from pypaimon import CatalogFactory

    t, root = pp_table
    rb = t.new_read_builder()
    before = sorted(rb.new_read().to_arrow(rb.new_scan().plan().splits()).column("id").to_pylist())
    wh2 = tmp_path / "wh"
    shutil.copytree(root.parent.parent, wh2)
    root2 = wh2 / root.parent.name / root.name
    for p in (root2 / "snapshot").glob("snapshot-*"):
        p.write_text(Snapshot.from_json(p.read_bytes(), str(p)).to_json(), encoding="utf-8")
    (root2 / "snapshot" / "LATEST").write_bytes(format_hint(2))
    t2 = CatalogFactory.create({"warehouse": str(wh2)}).get_table("db.t")
    rb2 = t2.new_read_builder()
    assert sorted(rb2.new_read().to_arrow(rb2.new_scan().plan().splits()).column("id").to_pylist()) == before
    assert before == [0, 1, 10, 11]
