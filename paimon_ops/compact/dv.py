"""Deletion-vector bookkeeping of a compaction commit (driver side).

Files compacted away lose their DV entries (maintenance.md §5.10). The DV index files that hold a vector of a
rewritten file are replaced by a new index file with the vectors of the remaining files only, or simply removed when
none remain: per bucket for bucketed tables (a bucket keeps ONE DV index file, format.md §8.3: Java never rolls them
— its writer is given an unlimited target size unless the table is unaware-bucket — and its index manifest keeps one
entry per bucket), per index file for unaware-bucket append tables.
"""
from __future__ import annotations

import logging
import posixpath
import uuid
from dataclasses import dataclass, field

import paimon_ops.format.manifest as mf
from paimon_ops.format.deletion_vectors import DeletionVector, write_dv_index_file
from paimon_ops.format.manifest import DeletionVectorMeta, FileKind, IndexManifestEntry
from paimon_ops.table.scan import DELETION_VECTORS, TableScanner
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)


@dataclass
class DvChanges:
    added: list[IndexManifestEntry] = field(default_factory=list)
    deleted: list[IndexManifestEntry] = field(default_factory=list)
    written_paths: list[str] = field(default_factory=list)
    dropped_vectors: int = 0
    new_positions: int = 0
    moved_vectors: int = 0  # data evolution: vectors carried to the merged files (compact.rowtrack)


def _supports_cardinality(scanner: TableScanner) -> bool:
    fs = scanner.store.field_set("index_manifest", scanner.table.snapshots.latest())
    if isinstance(fs, mf.Layout):
        fs = fs.of(mf.INDEX_MANIFEST)
    return fs.has("_CARDINALITY", "_DELETIONS_VECTORS_RANGES")


def supports_cardinality(scanner: TableScanner) -> bool:
    """Whether the table's index manifests carry _CARDINALITY (1.0+); 0.9 tables keep their 0.9 layout."""
    return _supports_cardinality(scanner)


def dv_index_path(table: FileStoreTable, scanner: TableScanner, partition: bytes, bucket: int, name: str) -> str:
    if table.options.index_file_in_data_dir:
        return posixpath.join(scanner.bucket_dir(partition, bucket), name)
    return posixpath.join(table.index_dir, name)


def write_dv_index(table: FileStoreTable, scanner: TableScanner, partition: bytes, bucket: int, dvs: dict[str, DeletionVector],
                   with_cardinality: bool, name: str | None = None) -> tuple[IndexManifestEntry, str]:
    """Write one DV index file holding `dvs` (data file name -> vector) for a bucket; return its ADD entry and path.

    Java names index files `index-<uuid>-<n>` and keeps them in `index/` (or the bucket directory with
    index-file-in-data-file-dir)."""
    data, ranges = write_dv_index_file(dvs, table.options.bitmap64)
    name = name or f"index-{uuid.uuid4()}-0"
    path = dv_index_path(table, scanner, partition, bucket, name)
    table.io.write_bytes(path, data)
    entry = IndexManifestEntry(
        FileKind.ADD, partition, bucket, DELETION_VECTORS, name, len(data), len(ranges),
        tuple(DeletionVectorMeta(r.data_file, r.offset, r.length, r.cardinality if with_cardinality else None)
              for r in ranges))
    return entry, path


def rewrite_dv_indexes(table: FileStoreTable, scanner: TableScanner, index_entries: list[IndexManifestEntry],
                       removed: set[tuple[bytes, str]], token: str | None = None) -> DvChanges:
    """Replace the DV index files that hold a vector of a removed (partition, data file name) by new files without it.
    `token` (a UUID the caller's journal records) names the new files.

    A bucketed table's bucket is rewritten as a whole: ALL its DV index files (`index_entries` must hold every one of
    a touched bucket) are replaced by one file with every remaining vector — Paimon keeps one DV index file per
    bucket and replaces it by bucket, so a rewrite of only one of several would drop the others' vectors. An
    unaware-bucket table's index files are keyed by name: each is replaced by one holding its other vectors (never
    larger, so within deletion-vector.index-file.target-size as the original was)."""
    out = DvChanges()
    groups: dict[object, list[IndexManifestEntry]] = {}
    by_name = table.is_bucket_unaware
    for ie in index_entries:
        if ie.index_type == DELETION_VECTORS:
            groups.setdefault(ie.file_name if by_name else (ie.partition, ie.bucket), []).append(ie)
    with_card = None
    n = 0
    prefix = f"index-{token or uuid.uuid4()}-"
    for group in groups.values():
        ranges = [(ie, r) for ie in group for r in ie.dv_ranges or ()]
        gone = [r for ie, r in ranges if (ie.partition, r.data_file) in removed]
        if not gone:
            continue
        out.deleted += group
        out.dropped_vectors += len(gone)
        dvs: dict[str, DeletionVector] = {r.data_file: scanner.deletion_vector(ie, r) for ie, r in ranges
                                          if (ie.partition, r.data_file) not in removed}
        if not dvs:
            continue
        if with_card is None:
            with_card = _supports_cardinality(scanner)
        first = group[0]
        name = f"{prefix}{n}"
        n += 1
        out.written_paths.append(dv_index_path(table, scanner, first.partition, first.bucket, name))
        entry, _ = write_dv_index(table, scanner, first.partition, first.bucket, dvs, with_card, name)
        out.added.append(entry)
    return out


__all__ = ["DvChanges", "rewrite_dv_indexes", "write_dv_index", "dv_index_path", "supports_cardinality"]
