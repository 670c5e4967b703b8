"""Newer metadata survives our rewrites, field by field, with Java's meaning.

pypaimon 2.1.0 writes the tables (data evolution with deletion vectors and external data paths; a primary-key
table with deletion vectors; a table with `metadata.stats-dense-store = false`). The fields pypaimon leaves empty
are then filled in the latest snapshot's metadata (`_EXTRA_FILES`, `_EMBEDDED_FILE_INDEX`, `_WRITE_COLS_SEQUENCES`,
an index file with `_GLOBAL_INDEX` and `_EXTERNAL_PATH`, snapshot `properties` / `operation` / `watermark`), and
every operation that rewrites manifests, manifest lists, index manifests or snapshots runs: manifest compaction,
partition expiry, compaction (with the base manifests merged), tags and rollback. Every entry we did not mean to
change is compared field by field (all 21 data-file fields, all 12 manifest-file fields, every index-file field),
the new files keep the Avro field sets of the table, and the new snapshots carry what Java carries:

* manifest compaction: `nextRowId`, `properties`, `watermark`, `statistics`, the index manifest of the latest
  snapshot (FileStoreCommitImpl.compactManifest); no `operation`;
* a commit (compaction, partition drop): `nextRowId` and `watermark` of the latest snapshot, the commit's own
  `properties` (none), no `operation` (FileStoreCommitImpl.tryCommitOnce);
* tags and rollback: the snapshot as it was.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import os

import pyarrow as pa
import pytest

import paimon_ops as po
from paimon_ops.format import manifest as mf
from paimon_ops.format.manifest import FileKind, IndexManifestEntry
from paimon_ops.table.scan import TableScanner, merge_entries
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog
from tests import pypaimon_util as pu

S = pa.schema([("p", pa.string()), ("id", pa.int32()), ("a", pa.int64()), ("b", pa.string())])
OLD, NEW = "2000-01-01", "2999-01-01"
SNAP_EXTRA = {"properties": {"k": "v"}, "operation": "WRITE", "watermark": 1234}


# ---------------------------------------------------------------------------------------------- enrichment

def _entries(table: FileStoreTable, list_name: str) -> list[tuple[mf.ManifestFileMeta, list[mf.ManifestEntry], mf.FieldSet]]:
    out = []
    for m in TableScanner(table).store.manifest_list(list_name):
        entries, fs = mf.read_manifest(table.io.read_bytes(table.manifest_path(m.file_name)), m.file_name)
        out.append((m, entries, fs))
    return out


def _enrich_entry(table: FileStoreTable, e: mf.ManifestEntry) -> mf.ManifestEntry:
    """Values for every optional field pypaimon leaves empty, a function of the file (ADD and DELETE entries of one
    file stay identical). The extra file exists, so nothing dangles."""
    f = e.file
    extra = f.file_name + ".index"
    bucket_dir = TableScanner(table).bucket_dir(e.partition, e.bucket)
    if not f.external_path:
        table.io.write_bytes(f"{bucket_dir}/{extra}", b"")
    return e.with_(file=f.with_(
        extra_files=(extra,) if not f.external_path else f.extra_files,
        embedded_index=b"\x00emb-" + f.file_name.encode(),
        write_cols_sequences=tuple(f.max_sequence_number for _ in (f.write_cols or ("*",)))))


def _enrich(table: FileStoreTable, index_extra: tuple[IndexManifestEntry, ...] = ()) -> None:
    """Rewrite the latest snapshot's manifests (new names), lists and index manifest with the enriched values, and
    set snapshot fields, in place of the latest snapshot (a metadata-only edit of a test table)."""
    codec = mf.avro_codec_from_options(dict(table.options.raw))
    snap = table.snapshots.latest()
    names = {}
    for kind in ("base", "delta"):
        list_name = getattr(snap, f"{kind}_manifest_list")
        metas = []
        for i, (m, entries, fs) in enumerate(_entries(table, list_name)):
            name = f"manifest-enriched-{kind}-{i}"
            data = mf.write_manifest([_enrich_entry(table, e) for e in entries], fs, *codec)
            table.io.write_bytes(table.manifest_path(name), data)
            metas.append(m.with_(file_name=name, file_size=len(data)))
        _, lfs = mf.read_manifest_list(table.io.read_bytes(table.manifest_path(list_name)), list_name)
        lname = f"manifest-list-enriched-{kind}"
        data = mf.write_manifest_list(metas, lfs, *codec)
        table.io.write_bytes(table.manifest_path(lname), data)
        names[f"{kind}_manifest_list"], names[f"{kind}_manifest_list_size"] = lname, len(data)
    if index_extra:
        ies, fs = mf.read_index_manifest(table.io.read_bytes(table.manifest_path(snap.index_manifest)),
                                         snap.index_manifest)
        data = mf.write_index_manifest(list(ies) + list(index_extra), mf.LATEST, *codec)
        table.io.write_bytes(table.manifest_path("index-manifest-enriched"), data)
        names["index_manifest"] = "index-manifest-enriched"
    new = snap.with_(**names, **SNAP_EXTRA)
    table.io.write_bytes(table.snapshots.path(snap.id), new.to_json().encode())


def _live(table: FileStoreTable, snap=None) -> dict[tuple, mf.ManifestEntry]:
    return TableScanner(table).live_entries(snap or table.snapshots.latest())


def _check_manifest_metas(table: FileStoreTable, snap, field_sets: dict[str, mf.FieldSet]) -> None:
    """Every manifest of the snapshot: its meta says what Java's ManifestEntryWriter says of its entries, and new
    files keep the table's field sets."""
    for list_name in (snap.base_manifest_list, snap.delta_manifest_list):
        _, lfs = mf.read_manifest_list(table.io.read_bytes(table.manifest_path(list_name)), list_name)
        assert lfs.records == field_sets["manifest_list"].records, list_name
        for m, entries, fs in _entries(table, list_name):
            assert fs.records == field_sets["manifest"].records, m.file_name
            assert (m.num_added_files, m.num_deleted_files) == (
                sum(e.kind == FileKind.ADD for e in entries), sum(e.kind == FileKind.DELETE for e in entries))
            assert (m.min_bucket, m.max_bucket) == (min(e.bucket for e in entries), max(e.bucket for e in entries))
            assert (m.min_level, m.max_level) == (min(e.file.level for e in entries),
                                                  max(e.file.level for e in entries))
            ids = [e.file.first_row_id for e in entries]
            if all(i is not None for i in ids):
                assert (m.min_row_id, m.max_row_id) == (
                    min(ids), max(e.file.first_row_id + e.file.row_count - 1 for e in entries))  # type: ignore
            else:
                assert (m.min_row_id, m.max_row_id) == (None, None)


def _field_sets(table: FileStoreTable, snap) -> dict[str, mf.FieldSet]:
    (_, _, fs), *_ = _entries(table, snap.base_manifest_list) or _entries(table, snap.delta_manifest_list)
    _, lfs = mf.read_manifest_list(table.io.read_bytes(table.manifest_path(snap.base_manifest_list)), "l")
    return {"manifest": fs, "manifest_list": lfs}


# ---------------------------------------------------------------------------------------------- data evolution

@pytest.fixture(scope="module")
def de_table(tmp_path_factory):
    top = tmp_path_factory.mktemp("meta")
    wh, ext = str(top / "wh"), top / "ext"
    os.makedirs(wh)
    os.makedirs(ext)
    pu.create_table(wh, "db.de", S, partition_keys=["p"],
                    options={"row-tracking.enabled": "true", "data-evolution.enabled": "true",
                             "deletion-vectors.enabled": "true", "data-file.external-paths": f"file://{ext}",
                             "data-file.external-paths.strategy": "round-robin"})
    for p, ids in ((OLD, [1, 2]), (NEW, [3, 4]), (OLD, [5])):
        pu.write(pu.get_table(wh, "db.de"), {"p": [p] * len(ids), "id": ids, "a": ids, "b": [str(i) for i in ids]})
    t = pu.get_table(wh, "db.de")
    wb = t.new_batch_write_builder()
    c = wb.new_commit()
    c.commit(wb.new_update().with_update_type(["b"]).update_by_arrow_with_row_id(
        pa.table({"_ROW_ID": pa.array([0, 2], pa.int64()), "b": ["B0", "B2"]})))
    c.close()
    t = pu.get_table(wh, "db.de")
    wb = t.new_batch_write_builder()
    c = wb.new_commit()
    c.commit(wb.new_update().delete_by_row_id([1, 3]))
    c.close()
    return wh, ext


def test_data_evolution_metadata_carried_by_manifest_compaction_partition_expiry_tags_rollback(de_table):
    wh, ext = de_table
    table = FileSystemCatalog(wh).get_table("db.de")
    table.snapshots.latest()  # readable
    new_part = next(e.partition for e in _live(table).values()
                    if TableScanner(table).partition_values(e.partition) == [NEW])
    (ext / "index-global-0").write_bytes(b"global")
    global_ie = IndexManifestEntry(
        FileKind.ADD, new_part, 0, "btree", "index-global-0", 6, 2, None, external_path=f"file:{ext}/index-global-0",
        global_index={"row_range_start": 2, "row_range_end": 3, "index_field_id": 1, "extra_field_ids": (2,),
                      "index_meta": b"meta", "source_meta": b"src"})
    _enrich(table, (global_ie,))
    table = FileSystemCatalog(wh).get_table("db.de")
    enriched_snap = table.snapshots.latest()
    enriched = _live(table)
    assert any(e.file.external_path for e in enriched.values())  # pypaimon's own _EXTERNAL_PATH values
    assert any(e.file.write_cols for e in enriched.values()) and all(e.file.first_row_id is not None
                                                                     for e in enriched.values())
    index_before = TableScanner(table).index_entries(enriched_snap)
    fsets = _field_sets(table, enriched_snap)

    # manifest compaction: every entry carried, the snapshot keeps what Java's compactManifest keeps
    po.Table(table).maintenance.compact_manifests().execute()
    table = FileSystemCatalog(wh).get_table("db.de")
    s2 = table.snapshots.latest()
    assert s2.id == enriched_snap.id + 1 and s2.commit_kind == "COMPACT"
    assert _live(table) == enriched
    assert (s2.next_row_id, s2.properties, s2.watermark, s2.statistics, s2.index_manifest, s2.operation) == (
        enriched_snap.next_row_id, {"k": "v"}, 1234, enriched_snap.statistics, enriched_snap.index_manifest, None)
    _check_manifest_metas(table, s2, fsets)

    # a tag is the snapshot as it was
    po.Table(table).tags.create("t", snapshot_id=s2.id).execute()
    tag = FileSystemCatalog(wh).get_table("db.de").tags.tag("t")
    assert dataclasses.replace(tag.to_snapshot(), extra={}) == dataclasses.replace(s2, extra={})

    # partition expiry (a commit): the old partition's entries are deleted exactly as added, everything else and
    # the global index file of the new partition are carried; nextRowId / watermark carried, properties are the
    # commit's own (none)
    po.Table(table).maintenance.expire_partitions(now=int(dt.datetime(2024, 6, 1).timestamp() * 1000), expiration_time=dt.timedelta(
        days=1)).execute()
    table = FileSystemCatalog(wh).get_table("db.de")
    s3 = table.snapshots.latest()
    assert (s3.commit_kind, s3.next_row_id, s3.watermark, s3.properties, s3.operation) == (
        "OVERWRITE", enriched_snap.next_row_id, 1234, None, None)
    new_live = {k: e for k, e in enriched.items() if e.partition == new_part}
    assert new_live and _live(table) == new_live
    delta = [e for _, es, _ in _entries(table, s3.delta_manifest_list) for e in es]
    assert sorted((e.identifier, e.with_(kind=FileKind.ADD)) for e in delta) == sorted(
        (k, e) for k, e in enriched.items() if e.partition != new_part)
    assert all(e.kind == FileKind.DELETE for e in delta)
    _check_manifest_metas(table, s3, fsets)
    index_after = TableScanner(table).index_entries(s3)
    assert [ie for ie in index_after if ie.partition == new_part] ==\
        [ie for ie in index_before if ie.partition == new_part]  # _EXTERNAL_PATH, _GLOBAL_INDEX, _CARDINALITY
    assert global_ie in index_after

    # rollback to the tag: the snapshot as tagged, every entry as enriched
    po.Table(table).maintenance.rollback(tag="t").execute()
    table = FileSystemCatalog(wh).get_table("db.de")
    assert table.snapshots.latest() == s2 and _live(table) == enriched
    merged, _ = merge_entries([e for _, es, _ in _entries(table, s2.base_manifest_list) for e in es], "x")
    assert merged == enriched


# ---------------------------------------------------------------------------------------------- primary key

def test_compaction_commit_carries_untouched_entries_and_snapshot_fields(tmp_path):
    wh = str(tmp_path / "wh")
    os.makedirs(wh)
    pu.create_table(wh, "db.pk", S.remove(0), primary_keys=["id"],
                    options={"bucket": "2", "deletion-vectors.enabled": "true", "metadata.stats-dense-store": "false",
                             "fields.b.stats-mode": "none"})
    for k in range(3):
        pu.write(pu.get_table(wh, "db.pk"), {"id": [1, 2, 3, 4, 10 + k], "a": [k] * 5, "b": [str(k)] * 5})
    po.Table(FileSystemCatalog(wh).get_table("db.pk")).maintenance.compact(mode="full").execute()  # max-level files in both buckets
    pu.write(pu.get_table(wh, "db.pk"), {"id": [1, 2, 3, 4, 5], "a": [8] * 5, "b": ["8"] * 5})
    _enrich(FileSystemCatalog(wh).get_table("db.pk"))
    table = FileSystemCatalog(wh).get_table("db.pk")
    enriched_snap = table.snapshots.latest()
    enriched = _live(table)
    fsets = _field_sets(table, enriched_snap)

    # compact bucket 0 only, with the base manifests merged by the commit (manifest.merge-min-count = 1)
    merging = FileStoreTable(table.location, options_override={"manifest.merge-min-count": "1"})
    r = po.Table(merging).maintenance.compact(mode="full", buckets=[0]).execute()
    assert r.details["files_in"]
    table = FileSystemCatalog(wh).get_table("db.pk")
    snap = table.snapshots.latest()
    assert (snap.commit_kind, snap.next_row_id, snap.watermark, snap.properties, snap.operation) == (
        "COMPACT", enriched_snap.next_row_id, 1234, None, None)
    live = _live(table)
    untouched = {k: e for k, e in enriched.items() if e.bucket == 1}
    assert untouched and all(live[k] == e for k, e in untouched.items())  # every field, through the base merge
    delta = [e for _, es, _ in _entries(table, snap.delta_manifest_list) for e in es]
    deleted = [e for e in delta if e.kind == FileKind.DELETE]
    assert deleted and all(enriched[e.identifier] == e.with_(kind=FileKind.ADD) for e in deleted)
    _check_manifest_metas(table, snap, fsets)
    # metadata.stats-dense-store = false: our files have all-mode value stats (one field per column, b unknown)
    ours = [e.file for e in live.values() if e.file.file_source == 1 and e.bucket == 0]
    assert ours
    for f in ours:
        assert f.value_stats_cols is None and f.value_stats.null_counts is not None
        assert len(f.value_stats.null_counts) == 3 and f.value_stats.null_counts[2] is None
    pu.both_read(wh, "db.pk", ["id", "a", "b"])  # both readers still read the table, and agree
