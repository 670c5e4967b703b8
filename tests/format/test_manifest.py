"""Avro metadata codecs (paimon_ops.format.manifest), checked against pypaimon-written tables and Java schemas."""
from __future__ import annotations

import io
import json
import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paimon_ops.errors import CorruptMetadataError, InvalidOptionError, UnsupportedError
from paimon_ops.format.manifest import (
    EMPTY_STATS,
    INDEX_MANIFEST,
    LATEST,
    MANIFEST,
    MANIFEST_LIST,
    V0_9,
    V1_0,
    V1_1,
    V1_3,
    V1_4,
    DataFileMeta,
    DeletionVectorMeta,
    FieldSet,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    avro_codec_from_options,
    read_index_manifest,
    read_manifest,
    read_manifest_list,
    write_index_manifest,
    write_manifest,
    write_manifest_list,
    writer_schema,
)
from paimon_ops.format.names import is_plain_name
from paimon_ops.format.snapshot import Snapshot

# Exact schemas Java master generates (format.md §4.3-4.5), verbatim.
JAVA_MANIFEST_LIST_SCHEMA = '{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[{"name":"_VERSION","type":"int"},{"name":"_FILE_NAME","type":"string"},{"name":"_FILE_SIZE","type":"long"},{"name":"_NUM_ADDED_FILES","type":"long"},{"name":"_NUM_DELETED_FILES","type":"long"},{"name":"_PARTITION_STATS","type":{"type":"record","name":"record__PARTITION_STATS","fields":[{"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},{"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}},{"name":"_SCHEMA_ID","type":"long"},{"name":"_MIN_BUCKET","type":["null","int"],"default":null},{"name":"_MAX_BUCKET","type":["null","int"],"default":null},{"name":"_MIN_LEVEL","type":["null","int"],"default":null},{"name":"_MAX_LEVEL","type":["null","int"],"default":null},{"name":"_MIN_ROW_ID","type":["null","long"],"default":null},{"name":"_MAX_ROW_ID","type":["null","long"],"default":null}]}'  # noqa: E501
JAVA_MANIFEST_SCHEMA = '{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[{"name":"_VERSION","type":"int"},{"name":"_KIND","type":"int"},{"name":"_PARTITION","type":"bytes"},{"name":"_BUCKET","type":"int"},{"name":"_TOTAL_BUCKETS","type":"int"},{"name":"_FILE","type":{"type":"record","name":"record__FILE","fields":[{"name":"_FILE_NAME","type":"string"},{"name":"_FILE_SIZE","type":"long"},{"name":"_ROW_COUNT","type":"long"},{"name":"_MIN_KEY","type":"bytes"},{"name":"_MAX_KEY","type":"bytes"},{"name":"_KEY_STATS","type":{"type":"record","name":"record__FILE__KEY_STATS","fields":[{"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},{"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}},{"name":"_VALUE_STATS","type":{"type":"record","name":"record__FILE__VALUE_STATS","fields":[{"name":"_MIN_VALUES","type":"bytes"},{"name":"_MAX_VALUES","type":"bytes"},{"name":"_NULL_COUNTS","type":["null",{"type":"array","items":["null","long"]}],"default":null}]}},{"name":"_MIN_SEQUENCE_NUMBER","type":"long"},{"name":"_MAX_SEQUENCE_NUMBER","type":"long"},{"name":"_SCHEMA_ID","type":"long"},{"name":"_LEVEL","type":"int"},{"name":"_EXTRA_FILES","type":{"type":"array","items":"string"}},{"name":"_CREATION_TIME","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},{"name":"_DELETE_ROW_COUNT","type":["null","long"],"default":null},{"name":"_EMBEDDED_FILE_INDEX","type":["null","bytes"],"default":null},{"name":"_FILE_SOURCE","type":["null","int"],"default":null},{"name":"_VALUE_STATS_COLS","type":["null",{"type":"array","items":"string"}],"default":null},{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null},{"name":"_FIRST_ROW_ID","type":["null","long"],"default":null},{"name":"_WRITE_COLS","type":["null",{"type":"array","items":"string"}],"default":null},{"name":"_WRITE_COLS_SEQUENCES","type":["null",{"type":"array","items":"long"}],"default":null}]}}]}'  # noqa: E501
JAVA_INDEX_MANIFEST_SCHEMA = '{"type":"record","name":"record","namespace":"org.apache.paimon.avro.generated","fields":[{"name":"_VERSION","type":"int"},{"name":"_KIND","type":"int"},{"name":"_PARTITION","type":"bytes"},{"name":"_BUCKET","type":"int"},{"name":"_INDEX_TYPE","type":"string"},{"name":"_FILE_NAME","type":"string"},{"name":"_FILE_SIZE","type":"long"},{"name":"_ROW_COUNT","type":"long"},{"name":"_DELETIONS_VECTORS_RANGES","type":["null",{"type":"array","items":["null",{"type":"record","name":"record__DELETIONS_VECTORS_RANGES","fields":[{"name":"f0","type":"string"},{"name":"f1","type":"int"},{"name":"f2","type":"int"},{"name":"_CARDINALITY","type":["null","long"],"default":null}]}]}],"default":null},{"name":"_EXTERNAL_PATH","type":["null","string"],"default":null},{"name":"_GLOBAL_INDEX","type":["null",{"type":"record","name":"record__GLOBAL_INDEX","fields":[{"name":"_ROW_RANGE_START","type":"long"},{"name":"_ROW_RANGE_END","type":"long"},{"name":"_INDEX_FIELD_ID","type":"int"},{"name":"_EXTRA_FIELD_IDS","type":["null",{"type":"array","items":"int"}],"default":null},{"name":"_INDEX_META","type":["null","bytes"],"default":null},{"name":"_SOURCE_META","type":["null","bytes"],"default":null}]}],"default":null}]}'  # noqa: E501

ROW_A = b"\x00\x00\x00\x01" + b"\x00" * 8 + b"a\x00\x00\x00\x00\x00\x00\x81"  # partition ('a',) as Java writes it


def _header(data: bytes) -> tuple[dict, str]:
    r = fastavro.reader(io.BytesIO(data))
    return r.metadata, r.codec


def _raw_creation_times(data: bytes) -> list:
    """_CREATION_TIME longs decoded independently: the file's own schema minus the logical type."""
    def strip(s):
        if isinstance(s, dict):
            return {k: strip(v) for k, v in s.items() if k != "logicalType"}
        return [strip(v) for v in s] if isinstance(s, list) else s

    plain = fastavro.parse_schema(strip(json.loads(_header(data)[0]["avro.schema"])))
    out = []
    for block in fastavro.block_reader(io.BytesIO(data)):
        buf = io.BytesIO(block.bytes_.getvalue())
        out += [fastavro.schemaless_reader(buf, plain)["_FILE"]["_CREATION_TIME"] for _ in range(block.num_records)]
    return out


def _stats(n: int) -> SimpleStats:
    return SimpleStats(ROW_A, ROW_A, tuple([0] * n))


def _entry(i: int, **file_kw) -> ManifestEntry:
    f = DataFileMeta(f"data-{i:08d}-0.parquet", 1000 + i, 10 + i, ROW_A, ROW_A, _stats(1), _stats(2), i, i + 9, 0,
                     i % 3, (), 1_700_000_000_123 + i, 0, None, 0, None, None, None, None, None)
    return ManifestEntry(int(FileKind.ADD), ROW_A, i % 4, 4, f.with_(**file_kw) if file_kw else f)


# ---------------------------------------------------------------------------------------------- pypaimon tables

PA_SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), pa.field("dt", pa.string(), nullable=False),
                       pa.field("v", pa.string())])
TABLES = {
    # name: (create options, primary keys, whether to run a row-id delete afterwards)
    "pk": ({"bucket": "2"}, ["id", "dt"], False),
    "dyn": ({"bucket": "-1"}, ["id", "dt"], False),  # dynamic bucket => HASH index manifests
    "app": ({}, None, False),
    "de": ({"row-tracking.enabled": "true", "data-evolution.enabled": "true",
            "deletion-vectors.enabled": "true"}, None, True),  # DELETION_VECTORS index manifests, row ids
}
COMMITS = 3
ROWS_PER_COMMIT = 5
DELETED_ROW_IDS = [0, 3, 7]


def _batch(i: int) -> pa.Table:
    return pa.table({"id": [i * 10 + j for j in range(ROWS_PER_COMMIT)], "dt": ["a", "b", "a", "b", "c"],
                     "v": [f"x{i}{j}" for j in range(ROWS_PER_COMMIT)]}, schema=PA_SCHEMA)


def _read_all(wh: str, name: str) -> list[tuple]:
    from pypaimon import CatalogFactory

    t = CatalogFactory.create({"warehouse": wh}).get_table(f"db.{name}")
    rb = t.new_read_builder()
    tbl = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    return sorted(zip(*(tbl.column(c).to_pylist() for c in ("id", "dt", "v"))))


@pytest.fixture(scope="module")
def pp_warehouse(tmp_path_factory: pytest.TempPathFactory) -> str:
    from pypaimon import CatalogFactory, Schema

    wh = str(tmp_path_factory.mktemp("wh"))
    cat = CatalogFactory.create({"warehouse": wh})
    cat.create_database("db", False)
    for name, (options, pks, delete) in TABLES.items():
        schema = Schema.from_pyarrow_schema(PA_SCHEMA, partition_keys=["dt"], primary_keys=pks, options=options)
        cat.create_table(f"db.{name}", schema, False)
        t = cat.get_table(f"db.{name}")
        for i in range(COMMITS):
            wb = t.new_batch_write_builder()
            w, c = wb.new_write(), wb.new_commit()
            w.write_arrow(_batch(i))
            c.commit(w.prepare_commit())
            w.close()
            c.close()
        if delete:
            wb = t.new_batch_write_builder()
            c = wb.new_commit()
            c.commit(wb.new_update().delete_by_row_id(DELETED_ROW_IDS))
            c.close()
    return wh


def _table_dir(wh: str, name: str) -> Path:
    return Path(wh) / "db.db" / name


def _data_files(table: Path) -> dict[str, int]:
    out = {}
    for root, _dirs, files in os.walk(table):
        rel = os.path.relpath(root, table)
        if rel.split(os.sep)[0] in ("manifest", "snapshot", "schema", "index", "tag", "consumer"):
            continue
        for f in files:
            out[f] = os.path.getsize(os.path.join(root, f))
    return out


def _snapshots(table: Path) -> list[Snapshot]:
    snaps = []
    for p in sorted((table / "snapshot").glob("snapshot-*"), key=lambda p: int(p.name.split("-")[1])):
        snaps.append(Snapshot.from_json(p.read_bytes(), str(p)))
    return snaps


def _merge(entries: list[ManifestEntry]) -> dict:
    live: dict = {}
    for e in entries:
        if e.kind == FileKind.ADD:
            assert e.identifier not in live
            live[e.identifier] = e
        else:
            assert e.identifier in live, "DELETE of a file that was never added"
            del live[e.identifier]
    return live


def _read_list(table: Path, name: str, expected_size: int | None):
    p = table / "manifest" / name
    data = p.read_bytes()
    if expected_size is not None:
        assert expected_size == len(data)
    metas, fs = read_manifest_list(data, str(p))
    assert fs.kind == MANIFEST_LIST
    return metas, fs


def _read_entries(table: Path, meta: ManifestFileMeta) -> tuple[list[ManifestEntry], FieldSet]:
    p = table / "manifest" / meta.file_name
    assert p.exists(), p
    assert meta.file_size == os.path.getsize(p)
    entries, fs = read_manifest(p.read_bytes(), str(p))
    kinds = Counter(e.kind for e in entries)
    assert kinds[FileKind.ADD] == meta.num_added_files and kinds[FileKind.DELETE] == meta.num_deleted_files
    assert meta.schema_id == max(e.file.schema_id for e in entries)
    if meta.min_bucket is not None:
        assert meta.min_bucket == min(e.bucket for e in entries)
        assert meta.max_bucket == max(e.bucket for e in entries)
        assert meta.min_level == min(e.file.level for e in entries)
        assert meta.max_level == max(e.file.level for e in entries)
    return entries, fs


@pytest.mark.parametrize("name", list(TABLES))
def test_read_pypaimon_table_consistently(pp_warehouse: str, name: str) -> None:
    table = _table_dir(pp_warehouse, name)
    files_on_disk = _data_files(table)
    snaps = _snapshots(table)
    assert [s.id for s in snaps] == list(range(1, len(snaps) + 1))
    total_prev = 0
    for s in snaps:
        base, fs_base = _read_list(table, s.base_manifest_list, s.base_manifest_list_size)
        delta, _ = _read_list(table, s.delta_manifest_list, s.delta_manifest_list_size)
        # pypaimon writes all LATEST list fields plus two of its own (_TOTAL_BUCKETS, _EXTRA_FILES).
        assert set(LATEST.manifest_list.names()) <= set(fs_base.names())
        all_entries, delta_entries = [], []
        for m in base + delta:
            entries, fs = _read_entries(table, m)
            assert fs == LATEST.manifest  # pypaimon 2.1.0 writes the master manifest layout
            all_entries += entries
            if m in delta:
                delta_entries += entries
        live = _merge(all_entries)
        for e in live.values():
            assert e.file.file_name in files_on_disk
            assert e.file.file_size == files_on_disk[e.file.file_name]
            assert e.file.creation_time is not None and e.file.creation_time > 1_600_000_000_000
        assert sum(e.file.row_count for e in live.values()) == s.total_record_count
        delta_count = sum(e.file.row_count * (1 if e.kind == FileKind.ADD else -1) for e in delta_entries)
        assert delta_count == s.delta_record_count
        assert s.total_record_count == total_prev + s.delta_record_count
        total_prev = s.total_record_count
        if name == "de":
            assert all(e.file.first_row_id is not None for e in live.values())
    assert total_prev == COMMITS * ROWS_PER_COMMIT


@pytest.mark.parametrize("name", ["dyn", "de"])
def test_read_pypaimon_index_manifests(pp_warehouse: str, name: str) -> None:
    table = _table_dir(pp_warehouse, name)
    last = _snapshots(table)[-1]
    assert last.index_manifest is not None
    p = table / "manifest" / last.index_manifest
    entries, fs = read_index_manifest(p.read_bytes(), str(p))
    assert fs.kind == INDEX_MANIFEST and fs.names() == LATEST.index_manifest.names()
    data_files = _data_files(table)
    for e in entries:
        assert e.kind == FileKind.ADD
        f = table / "index" / e.file_name
        assert f.exists() and e.file_size == os.path.getsize(f)
    if name == "dyn":
        assert {e.index_type for e in entries} == {"HASH"}
        # A HASH index file is a sequence of big-endian int32 key hashes, one per key of its bucket.
        assert all(e.row_count * 4 == e.file_size for e in entries)
        assert sum(e.row_count for e in entries) == COMMITS * ROWS_PER_COMMIT
    else:
        assert {e.index_type for e in entries} == {"DELETION_VECTORS"}
        ranges = [r for e in entries for r in e.dv_ranges]
        assert all(e.row_count == len(e.dv_ranges) for e in entries)
        assert sum(r.cardinality for r in ranges) == len(DELETED_ROW_IDS)
        assert all(r.data_file in data_files for r in ranges)
        assert all(r.offset + r.length <= e.file_size for e in entries for r in e.dv_ranges)


def test_creation_time_is_the_raw_long(pp_warehouse: str) -> None:
    """_CREATION_TIME must come back as the stored long, not shifted by any time zone."""
    table = _table_dir(pp_warehouse, "pk")
    for p in (table / "manifest").glob("manifest-[0-9a-f]*"):
        raw = _raw_creation_times(p.read_bytes())
        ours = [e.file.creation_time for e in read_manifest(p.read_bytes(), str(p))[0]]
        assert ours == raw and all(isinstance(v, int) for v in raw)


def _reencode_table(src: Path, dst: Path) -> int:
    """Rewrite every manifest, manifest list, index manifest and snapshot of ``dst`` (a copy of ``src``) with our
    codecs, keeping each file's field set and fixing the sizes recorded by its parents."""
    man = dst / "manifest"
    new_size: dict[str, int] = {}
    count = 0
    for p in sorted(man.iterdir()):
        if p.name.startswith("manifest-") and not p.name.startswith("manifest-list-"):
            entries, fs = read_manifest(p.read_bytes(), str(p))
            data = write_manifest(entries, fs)
            assert read_manifest(data, "re-encoded")[0] == entries
        elif p.name.startswith("index-manifest-"):
            entries, fs = read_index_manifest(p.read_bytes(), str(p))
            data = write_index_manifest(entries, fs)
            assert read_index_manifest(data, "re-encoded")[0] == entries
        else:
            continue
        assert json.loads(_header(data)[0]["avro.schema"]) == writer_schema(fs)
        p.write_bytes(data)
        new_size[p.name] = len(data)
        count += 1
    for p in sorted(man.glob("manifest-list-*")):
        metas, fs = read_manifest_list(p.read_bytes(), str(p))
        metas = [m.with_(file_size=new_size[m.file_name]) for m in metas]
        data = write_manifest_list(metas, fs)
        assert read_manifest_list(data, "re-encoded")[0] == metas
        p.write_bytes(data)
        new_size[p.name] = len(data)
        count += 1
    for p in sorted((dst / "snapshot").glob("snapshot-*")):
        s = Snapshot.from_json(p.read_bytes(), str(p))
        s = s.with_(base_manifest_list_size=new_size[s.base_manifest_list],
                    delta_manifest_list_size=new_size[s.delta_manifest_list])
        p.write_text(s.to_json(), encoding="utf-8")
    return count


@pytest.mark.parametrize("name", list(TABLES))
def test_pypaimon_reads_our_reencoded_metadata(pp_warehouse: str, tmp_path: Path, name: str) -> None:
    before = _read_all(pp_warehouse, name)
    expected_rows = COMMITS * ROWS_PER_COMMIT - (len(DELETED_ROW_IDS) if TABLES[name][2] else 0)
    assert len(before) == expected_rows
    wh2 = tmp_path / "wh"
    shutil.copytree(pp_warehouse, wh2)
    n = _reencode_table(_table_dir(pp_warehouse, name), _table_dir(str(wh2), name))
    assert n >= 2 * COMMITS
    # The originals were really replaced (our header carries Java's record names, pypaimon's does not).
    some = next((_table_dir(str(wh2), name) / "manifest").glob("manifest-list-*"))
    assert '"namespace":"org.apache.paimon.avro.generated"' in _header(some.read_bytes())[0]["avro.schema"]
    assert _read_all(str(wh2), name) == before


# ---------------------------------------------------------------------------------------------- Java schemas


@pytest.mark.parametrize("kind,java", [(MANIFEST_LIST, JAVA_MANIFEST_LIST_SCHEMA), (MANIFEST, JAVA_MANIFEST_SCHEMA),
                                       (INDEX_MANIFEST, JAVA_INDEX_MANIFEST_SCHEMA)])
def test_latest_writer_schema_is_javas(kind: str, java: str) -> None:
    assert writer_schema(LATEST, kind) == json.loads(java)
    writer = {MANIFEST_LIST: write_manifest_list, MANIFEST: write_manifest, INDEX_MANIFEST: write_index_manifest}
    meta, codec = _header(writer[kind]([], LATEST))
    assert json.loads(meta["avro.schema"]) == json.loads(java)
    assert meta["avro.schema"] == java  # even the text, as Java's Schema.toString() prints it
    assert codec == "zstandard"
    assert FieldSet.of_schema(kind, json.loads(java)) == LATEST.of(kind)


@pytest.mark.parametrize("layout", [LATEST, V1_4, V1_3, V1_1, V1_0, V0_9])
def test_manifest_top_level_is_always_the_strict_six(layout) -> None:
    """Java master's block reader demands exactly these six top-level fields in this order."""
    s = writer_schema(layout, MANIFEST)
    assert [(f["name"], f["type"] if isinstance(f["type"], str) else f["type"]["type"]) for f in s["fields"]] == [
        ("_VERSION", "int"), ("_KIND", "int"), ("_PARTITION", "bytes"), ("_BUCKET", "int"),
        ("_TOTAL_BUCKETS", "int"), ("_FILE", "record")]


def test_version_layouts() -> None:
    assert V0_9.manifest_list.names() == ("_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES",
                                          "_NUM_DELETED_FILES", "_PARTITION_STATS", "_SCHEMA_ID")
    assert V0_9.manifest.names("_FILE")[-1] == "_FILE_SOURCE" and len(V0_9.manifest.names("_FILE")) == 16
    assert V1_0.manifest.names("_FILE")[-1] == "_EXTERNAL_PATH"
    assert V1_1.manifest_list.names()[-1] == "_MAX_LEVEL"
    assert V1_3.manifest.names("_FILE")[-1] == "_WRITE_COLS"
    assert V1_4.manifest_list == LATEST.manifest_list and V1_4.index_manifest == LATEST.index_manifest
    assert LATEST.manifest.names("_FILE")[-1] == "_WRITE_COLS_SEQUENCES"
    assert V0_9.index_manifest.names() == ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE",
                                           "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_DELETIONS_VECTORS_RANGES")
    assert V0_9.index_manifest.names("_DELETIONS_VECTORS_RANGES") == ("f0", "f1", "f2")
    assert V1_3.index_manifest.names()[-1] == "_EXTERNAL_PATH"
    assert V1_0.index_manifest.names("_DELETIONS_VECTORS_RANGES")[-1] == "_CARDINALITY"


# ---------------------------------------------------------------------------------------------- field sets


def test_v0_9_manifest_round_trip() -> None:
    entries = [_entry(i) for i in range(20)] + [_entry(99, embedded_index=b"\x01\x02").with_(kind=FileKind.DELETE)]
    data = write_manifest(entries, V0_9)
    schema = json.loads(_header(data)[0]["avro.schema"])
    file_fields = [f["name"] for f in schema["fields"][5]["type"]["fields"]]
    assert "_VALUE_STATS_COLS" not in file_fields and file_fields[-1] == "_FILE_SOURCE"
    back, fs = read_manifest(data, "m")
    assert fs == V0_9.manifest
    assert back == entries
    assert all(e.file.value_stats_cols is None and e.file.write_cols_sequences is None for e in back)


def test_v0_9_list_and_index_drop_newer_hint_fields() -> None:
    metas = [ManifestFileMeta("manifest-x-0", 123, 2, 1, EMPTY_STATS, 3, 0, 3, 0, 5, 10, 20)]
    back, fs = read_manifest_list(write_manifest_list(metas, V0_9), "l")
    assert fs == V0_9.manifest_list
    assert back == [ManifestFileMeta("manifest-x-0", 123, 2, 1, EMPTY_STATS, 3)]  # pruning hints -> None
    idx = [IndexManifestEntry(0, ROW_A, 0, "DELETION_VECTORS", "index-1", 61, 2,
                              (DeletionVectorMeta("data-1.parquet", 1, 22, 1), DeletionVectorMeta("d2", 31, 22, 5)))]
    back_i, fs_i = read_index_manifest(write_index_manifest(idx, V0_9), "i")
    assert fs_i == V0_9.index_manifest
    assert back_i == [idx[0].with_(dv_ranges=tuple(DeletionVectorMeta(d.data_file, d.offset, d.length, None)
                                                   for d in idx[0].dv_ranges))]


def test_writer_refuses_to_drop_meaningful_values() -> None:
    with pytest.raises(UnsupportedError, match="_EXTERNAL_PATH"):
        write_manifest([_entry(1, external_path="s3://b/x.parquet")], V0_9)
    with pytest.raises(UnsupportedError, match="_VALUE_STATS_COLS"):
        write_manifest([_entry(1, value_stats_cols=())], V0_9)
    with pytest.raises(UnsupportedError, match="_WRITE_COLS_SEQUENCES"):
        write_manifest([_entry(1, write_cols_sequences=(1, 2))], V1_4)
    with pytest.raises(UnsupportedError, match="_EXTERNAL_PATH"):
        write_index_manifest([IndexManifestEntry(0, ROW_A, 0, "HASH", "i", 4, 1, external_path="/x")], V1_1)
    with pytest.raises(ValueError):
        write_manifest([], LATEST.manifest_list)  # wrong kind of field set


@pytest.mark.parametrize("layout", [LATEST, V1_4, V1_3, V1_1, V1_0, V0_9])
def test_reading_returns_the_written_field_set(layout) -> None:
    assert read_manifest(write_manifest([_entry(1)], layout), "m")[1] == layout.manifest
    assert read_manifest_list(write_manifest_list([], layout), "l")[1] == layout.manifest_list
    assert read_index_manifest(write_index_manifest([], layout), "i")[1] == layout.index_manifest


def test_unknown_fields_of_other_writers_are_reported_but_not_written() -> None:
    # pypaimon's manifest list has two extra nullable fields no Java version defines.
    schema = json.loads(JAVA_MANIFEST_LIST_SCHEMA)
    schema["fields"] += [{"name": "_TOTAL_BUCKETS", "type": ["null", "int"], "default": None}]
    buf = io.BytesIO()
    rec = {"_VERSION": 2, "_FILE_NAME": "m", "_FILE_SIZE": 1, "_NUM_ADDED_FILES": 1, "_NUM_DELETED_FILES": 0,
           "_PARTITION_STATS": {"_MIN_VALUES": ROW_A, "_MAX_VALUES": ROW_A, "_NULL_COUNTS": [None]},
           "_SCHEMA_ID": 0, "_TOTAL_BUCKETS": 4}
    fastavro.writer(buf, fastavro.parse_schema(schema), [rec], codec="deflate")
    metas, fs = read_manifest_list(buf.getvalue(), "l")
    assert "_TOTAL_BUCKETS" in fs.names()
    assert metas[0].partition_stats.null_counts == (None,)
    out = write_manifest_list(metas, fs)
    assert writer_schema(fs) == json.loads(JAVA_MANIFEST_LIST_SCHEMA)
    assert read_manifest_list(out, "l2")[0] == metas


# ---------------------------------------------------------------------------------------------- values


def test_entry_identity_and_helpers() -> None:
    e = _entry(7, extra_files=("data-x.index",), embedded_index=b"ix", external_path="/ext/f")
    assert e.identifier == (ROW_A, 3, 1, "data-00000007-0.parquet", ("data-x.index",), b"ix", "/ext/f")
    assert e.file.with_level(5).level == 5 and e.file.level == 1
    assert EMPTY_STATS.min_values == b"\0" * 12 and EMPTY_STATS.null_counts == ()
    assert len({e, e.with_(kind=1)}) == 2  # hashable


@pytest.mark.parametrize("millis", [0, -1, -86_400_001, 1_700_000_000_123, 253_402_300_799_999, None])
def test_creation_time_round_trip_exact(millis) -> None:
    e = _entry(1, creation_time=millis)
    data = write_manifest([e], LATEST)
    assert read_manifest(data, "m")[0][0].file.creation_time == millis
    assert _raw_creation_times(data) == [millis]


def test_all_fields_round_trip() -> None:
    full = _entry(3, extra_files=("a", "b"), delete_row_count=4, embedded_index=b"\x00\xff", file_source=1,
                  value_stats_cols=("v",), external_path="oss://b/p", first_row_id=100, write_cols=("id", "v"),
                  write_cols_sequences=(5, 6), key_stats=SimpleStats(b"k1", b"k2", None),
                  value_stats=SimpleStats(b"", b"", (None, 3)))
    assert read_manifest(write_manifest([full], LATEST), "m")[0] == [full]
    gi = {"row_range_start": 0, "row_range_end": 99, "index_field_id": 3, "extra_field_ids": (4, 5),
          "index_meta": b"m", "source_meta": None}
    idx = IndexManifestEntry(0, ROW_A, 1, "btree", "index-9", 10, 100, None, "/ext/i", gi)
    assert read_index_manifest(write_index_manifest([idx], LATEST), "i")[0] == [idx]


_text = st.text(max_size=12)
_bytes = st.binary(max_size=24)
_long = st.integers(-(2 ** 63), 2 ** 63 - 1)
_int = st.integers(-(2 ** 31), 2 ** 31 - 1)
_opt = st.none() | _long
_stats_st = st.builds(SimpleStats, _bytes, _bytes, st.none() | st.tuples(st.none() | _long, st.none() | _long))
_strs = st.lists(_text, max_size=3).map(tuple)
# file names read from metadata must be plain names (format/names.py); anything else is refused on read
_name = st.text(min_size=1, max_size=12).filter(is_plain_name)
_names = st.lists(_name, max_size=3).map(tuple)
_file_st = st.builds(
    DataFileMeta, _name, _long, _long, _bytes, _bytes, _stats_st, _stats_st, _long, _long, _long, _int, _names,
    st.none() | st.integers(-(10 ** 12), 10 ** 13), _opt, st.none() | _bytes, st.none() | st.integers(0, 1),
    st.none() | _strs, st.none() | _text, _opt, st.none() | _strs, st.none() | st.lists(_long, max_size=3).map(tuple))
_entry_st = st.builds(ManifestEntry, st.integers(0, 1), _bytes, _int, _int, _file_st)


@settings(max_examples=60, deadline=None)
@given(st.lists(_entry_st, max_size=5))
def test_manifest_round_trip_property(entries) -> None:
    assert read_manifest(write_manifest(entries, LATEST, codec="null"), "m")[0] == entries


@pytest.mark.parametrize("codec,level", [("null", None), ("deflate", 6), ("zstandard", 3), ("zstandard", None),
                                         ("bzip2", None)])
def test_codecs(codec: str, level) -> None:
    entries = [_entry(i) for i in range(50)]
    data = write_manifest(entries, LATEST, codec=codec, level=level)
    assert _header(data)[1] == codec
    assert read_manifest(data, "m")[0] == entries


def test_avro_codec_from_options() -> None:
    assert avro_codec_from_options({}) == ("zstandard", 1)
    assert avro_codec_from_options({"file.compression.zstd-level": "9"}) == ("zstandard", 9)
    assert avro_codec_from_options({"manifest.compression": "ZSTD"}) == ("zstandard", 1)
    assert avro_codec_from_options({"manifest.compression": "deflate"}) == ("deflate", None)
    assert avro_codec_from_options({"manifest.compression": "null"}) == ("null", None)
    assert avro_codec_from_options({"manifest.compression": "zstd", "avro.codec": "snappy"}) == ("snappy", None)
    assert avro_codec_from_options({"avro.codec": "zstandard"}) == ("zstandard", 3)
    with pytest.raises(InvalidOptionError):
        avro_codec_from_options({"manifest.compression": "lz4"})
    with pytest.raises(InvalidOptionError):
        avro_codec_from_options({"file.compression.zstd-level": "high"})


# ---------------------------------------------------------------------------------------------- corrupt input


def _raw_manifest(version: int = 2, kind: int = 0, drop: str | None = None) -> bytes:
    schema = json.loads(JAVA_MANIFEST_SCHEMA)
    rec: dict = {"_VERSION": version, "_KIND": kind, "_PARTITION": ROW_A, "_BUCKET": 0, "_TOTAL_BUCKETS": 1}
    rec["_FILE"] = {"_FILE_NAME": "f", "_FILE_SIZE": 1, "_ROW_COUNT": 1, "_MIN_KEY": ROW_A, "_MAX_KEY": ROW_A,
                    "_KEY_STATS": {"_MIN_VALUES": ROW_A, "_MAX_VALUES": ROW_A, "_NULL_COUNTS": []},
                    "_VALUE_STATS": {"_MIN_VALUES": ROW_A, "_MAX_VALUES": ROW_A, "_NULL_COUNTS": []},
                    "_MIN_SEQUENCE_NUMBER": 0, "_MAX_SEQUENCE_NUMBER": 0, "_SCHEMA_ID": 0, "_LEVEL": 0,
                    "_EXTRA_FILES": []}
    if drop:
        file_schema = schema["fields"][5]["type"]
        file_schema["fields"] = [f for f in file_schema["fields"] if f["name"] != drop]
        del rec["_FILE"][drop]
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), [rec], codec="zstandard")
    return buf.getvalue()


def test_wrong_version_and_kind() -> None:
    read_manifest(_raw_manifest(), "ok")
    with pytest.raises(CorruptMetadataError, match="_VERSION 1") as ei:
        read_manifest(_raw_manifest(version=1), "/t/manifest/manifest-1")
    assert ei.value.path == "/t/manifest/manifest-1"
    with pytest.raises(CorruptMetadataError, match="_KIND 7"):
        read_manifest(_raw_manifest(kind=7), "p")
    with pytest.raises(CorruptMetadataError, match="_VERSION 2"):
        read_index_manifest(_raw_index(version=2), "p")
    lst = write_manifest_list([ManifestFileMeta("m", 1, 1, 0, EMPTY_STATS, 0)], LATEST)
    read_manifest_list(lst, "p")
    with pytest.raises(CorruptMetadataError, match="lacks required field"):
        read_manifest(lst, "p")  # a manifest list is not a manifest


def _raw_index(version: int) -> bytes:
    buf = io.BytesIO()
    rec = {"_VERSION": version, "_KIND": 0, "_PARTITION": ROW_A, "_BUCKET": 0, "_INDEX_TYPE": "HASH",
           "_FILE_NAME": "i", "_FILE_SIZE": 4, "_ROW_COUNT": 1}
    fastavro.writer(buf, fastavro.parse_schema(json.loads(JAVA_INDEX_MANIFEST_SCHEMA)), [rec])
    return buf.getvalue()


def test_missing_required_field() -> None:
    with pytest.raises(CorruptMetadataError, match="_FILE_SIZE") as ei:
        read_manifest(_raw_manifest(drop="_FILE_SIZE"), "/p/m")
    assert ei.value.path == "/p/m"


@pytest.mark.parametrize("reader", [read_manifest, read_manifest_list, read_index_manifest])
def test_garbage_is_corrupt(reader) -> None:
    rnd = random.Random(7)
    for data in [b"", b"Obj", b"Obj\x01", bytes(rnd.getrandbits(8) for _ in range(300)),
                 b"Obj\x01" + bytes(rnd.getrandbits(8) for _ in range(300)), b'{"json": true}']:
        with pytest.raises(CorruptMetadataError, match="not a readable Avro manifest") as ei:
            reader(data, "/x/manifest/f")
        assert ei.value.path == "/x/manifest/f"


@pytest.mark.parametrize("codec", ["zstandard", "null", "deflate"])
def test_truncated_is_corrupt_or_a_block_prefix(codec: str) -> None:
    entries = [_entry(i) for i in range(300)]
    data = write_manifest(entries, LATEST, codec=codec)
    blocks = sum(1 for _ in fastavro.block_reader(io.BytesIO(data)))
    corrupt = 0
    for cut in range(0, len(data) - 1, max(1, len(data) // 400)):
        try:
            got, _ = read_manifest(data[:cut], "/m")
        except CorruptMetadataError as e:
            assert e.path == "/m"
            corrupt += 1
        else:
            # Avro has no footer: a cut exactly at a block boundary is a valid shorter file.
            assert got == entries[:len(got)] and len(got) < len(entries)
    assert corrupt > 0 and blocks >= 1


@pytest.mark.parametrize("pos", [40, 200, -30, -5])
def test_flipped_bytes(pos: int) -> None:
    data = bytearray(write_manifest([_entry(i) for i in range(30)], LATEST))
    data[pos] ^= 0xFF
    try:
        read_manifest(bytes(data), "/m")
    except CorruptMetadataError as e:
        assert e.path == "/m"


# ---------------------------------------------------------------------------------------------- speed


def test_decode_rate() -> None:
    n = 100_000
    entries = [_entry(i) for i in range(n)]
    t0 = time.perf_counter()
    data = write_manifest(entries, LATEST)
    t1 = time.perf_counter()
    back, _ = read_manifest(data, "m")
    t2 = time.perf_counter()
    assert len(back) == n and back[-1] == entries[-1]
    print(f"\nmanifest: {n} entries, {len(data)} bytes; encode {n / (t1 - t0):,.0f} entries/s, "
          f"decode {n / (t2 - t1):,.0f} entries/s")


# ---------------------------------------------------------------------------------------------- column-wise reads


def _projected(entries: list[ManifestEntry]) -> tuple:
    return tuple(zip(*[(e.kind, e.partition, e.bucket, e.file.level, e.file.file_name, e.file.file_size,
                        e.file.extra_files, e.file.embedded_index, e.file.external_path, e.file.file_source)
                       for e in entries])) or ((),) * 10


def _columns_tuple(c) -> tuple:
    return tuple(tuple(getattr(c, k)) for k in c.__slots__)


def _native_many(monkeypatch: pytest.MonkeyPatch, datas: list[bytes], paths: list[str]) -> list:
    from paimon_ops.format import manifest_columns as mc
    monkeypatch.setattr(mc, "MIN_NATIVE_BYTES", 0)
    assert mc._context() is not None, "the native Avro reader (datafusion) must be installed"
    return mc.read_many(datas, paths)


def test_columns_native_and_fastavro_agree_on_pypaimon_manifests(pp_warehouse: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """pypaimon 2.1.0's manifests of every table, decoded natively in one batch, by fastavro column-wise and as
    entries: the same columns row for row."""
    from paimon_ops.format.manifest import read_manifest_columns
    datas, paths = [], []
    for name in TABLES:
        mdir = Path(_table_dir(pp_warehouse, name)) / "manifest"
        for f in sorted(mdir.iterdir()):
            if f.name.startswith("manifest-") and not f.name.startswith("manifest-list-"):
                datas.append(f.read_bytes())
                paths.append(str(f))
    assert len(datas) >= 8
    native = _native_many(monkeypatch, datas, paths)
    for d, p, n in zip(datas, paths, native):
        entries, _ = read_manifest(d, p)
        assert _columns_tuple(n) == _columns_tuple(read_manifest_columns(d, p)) == _projected(entries), p


def test_columns_native_batches_mixed_layouts_and_refuses_crafted_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Manifests of different field sets in one batch decode right; a crafted name or kind in any of them is refused
    naming that manifest, exactly as fastavro refuses it."""
    from paimon_ops.errors import UnsafeNameError
    from paimon_ops.format.manifest import read_manifest_columns
    entries = [_entry(i, extra_files=("x.index",) if i % 5 == 0 else ()) for i in range(300)]
    datas = [write_manifest(entries[:100], V0_9), write_manifest(entries[100:], LATEST),
             write_manifest(entries[:7], V0_9)]
    paths = ["/m/a", "/m/b", "/m/c"]
    got = _native_many(monkeypatch, datas, paths)
    for g, d, p in zip(got, datas, paths):
        assert _columns_tuple(g) == _columns_tuple(read_manifest_columns(d, p)) == _projected(read_manifest(d, p)[0])
    for bad, err in ((dict(file_name="../escape.parquet"), UnsafeNameError),
                     (dict(extra_files=("ok", "a/b")), UnsafeNameError)):
        crafted = write_manifest(entries[:50] + [_entry(999, **bad)], V0_9)
        with pytest.raises(err, match="/m/crafted"):
            _native_many(monkeypatch, [datas[0], crafted], ["/m/a", "/m/crafted"])
    bad_kind = write_manifest([ManifestEntry(7, ROW_A, 0, 4, entries[0].file)] + entries[:50], V0_9)
    with pytest.raises(CorruptMetadataError, match="_KIND 7"):
        _native_many(monkeypatch, [datas[0], bad_kind], ["/m/a", "/m/kind"])
    with pytest.raises(CorruptMetadataError, match="/m/junk"):
        _native_many(monkeypatch, [datas[0], b"Obj\x01junk"], ["/m/a", "/m/junk"])


def test_native_reader_does_not_import_pandas():
    """DataFusion's import would pull pandas in (~55 MiB) through pyarrow's pandas shim; it is kept out, and pandas
    still works through pyarrow once something asks for it."""
    import subprocess
    import sys
    code = ("import sys, pyarrow as pa\n"
            "from paimon_ops.format import manifest_columns as mc\n"
            "assert mc._context() is not None\n"
            "assert mc._int_list(pa.chunked_array([[1, -2], [3]], pa.int8())) == [1, -2, 3]\n"
            "assert mc._int_list(pa.array([5, 6, 7], pa.int64()).slice(1)) == [6, 7]\n"
            "assert 'pandas' not in sys.modules\n"
            "assert pa.table({'a': [1]}).to_pandas()['a'].tolist() == [1]\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
