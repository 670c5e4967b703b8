"""Scan: the live data files of a snapshot or tag (base + delta manifests merged by file identity) and the
deletion vectors that apply to them. Manifests are immutable, so decoded manifests are cached by name."""
from __future__ import annotations

import logging
import posixpath
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

import paimon_ops.format.manifest as mf
import paimon_ops.table.external as ext
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, MissingFileError
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.deletion_vectors import DeletionVector, read_dv
from paimon_ops.format.manifest import (
    DataFileMeta,
    DeletionVectorMeta,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
)
from paimon_ops.format.manifest_columns import read_many
from paimon_ops.format.partition import partition_json, partition_path
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)

DELETION_VECTORS = "DELETION_VECTORS"
HASH = "HASH"


class _LRU(OrderedDict):
    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity

    def get_or(self, key, load):
        if key in self:
            self.move_to_end(key)
            return self[key]
        value = load()
        self[key] = value
        if len(self) > self.capacity:
            self.popitem(last=False)
        return value


class ManifestStore:
    """Reads (and caches) manifest lists, manifests and index manifests of one table."""

    def __init__(self, table: FileStoreTable, capacity: int = 256):
        self.table = table
        self._lists: _LRU = _LRU(capacity)
        self._manifests: _LRU = _LRU(capacity)
        self._columns: _LRU = _LRU(capacity)
        self._index: _LRU = _LRU(capacity)
        self.field_sets: dict[str, object] = {}

    def _read(self, name: str, referenced_by: str) -> bytes:
        p = self.table.manifest_path(name)
        try:
            return self.table.io.read_bytes(p)
        except FileNotFoundError:
            raise MissingFileError(p, referenced_by) from None

    def manifest_list(self, name: str, referenced_by: str = "") -> list[ManifestFileMeta]:
        def load():
            metas, fs = mf.read_manifest_list(self._read(name, referenced_by), self.table.manifest_path(name))
            self.field_sets["manifest_list"] = fs
            return metas
        return self._lists.get_or(name, load)

    def manifest(self, name: str, referenced_by: str = "") -> list[ManifestEntry]:
        def load():
            entries, fs = mf.read_manifest(self._read(name, referenced_by), self.table.manifest_path(name))
            self.field_sets["manifest"] = fs
            return entries
        return self._manifests.get_or(name, load)

    def manifest_columns(self, name: str, referenced_by: str = "") -> mf.ManifestColumns:
        """The lifecycle columns of a manifest (mf.read_manifest_columns): what expiry and orphan removal read."""
        def load():
            return mf.read_manifest_columns(self._read(name, referenced_by), self.table.manifest_path(name))
        return self._columns.get_or(name, load)

    def columns_of_list(self, list_name: str, referenced_by: str = "") -> Iterator[mf.ManifestColumns]:
        for meta in self.manifest_list(list_name, referenced_by):
            yield self.manifest_columns(meta.file_name, list_name)

    def columns_many(self, names: Iterable[str], referenced_by: str = "") -> dict[str, mf.ManifestColumns]:
        """The lifecycle columns of many manifests at once, decoded together (format.manifest_columns: natively,
        many manifests per read). Manifests that do not exist are left out (the caller decides what that means);
        any other unreadable manifest raises CorruptMetadataError. Not cached: callers walk each batch once."""
        out: dict[str, mf.ManifestColumns] = {}
        todo, datas = [], []
        for n in dict.fromkeys(names):
            hit = self._columns.get(n)
            if hit is not None:
                out[n] = hit
                continue
            try:
                datas.append(self._read(n, referenced_by))
            except MissingFileError:
                continue
            todo.append(n)
        if todo:
            out.update(zip(todo, read_many(datas, [self.table.manifest_path(n) for n in todo])))
        return out

    def index_manifest(self, name: str, referenced_by: str = "") -> list[IndexManifestEntry]:
        def load():
            entries, fs = mf.read_index_manifest(self._read(name, referenced_by), self.table.manifest_path(name))
            self.field_sets["index_manifest"] = fs
            return entries
        return self._index.get_or(name, load)

    def entries_of_list(self, list_name: str, referenced_by: str = "") -> Iterator[ManifestEntry]:
        for meta in self.manifest_list(list_name, referenced_by):
            yield from self.manifest(meta.file_name, list_name)

    def snapshot_entries(self, snapshot: Snapshot) -> Iterator[ManifestEntry]:
        """Entries of base then delta manifests, in list order (the order carries meaning)."""
        ref = f"snapshot {snapshot.id}"
        yield from self.entries_of_list(snapshot.base_manifest_list, ref)
        yield from self.entries_of_list(snapshot.delta_manifest_list, ref)

    def field_set(self, kind: str, snapshot: Snapshot | None):
        """The field set the table already uses for `kind` (read from the latest files), else LATEST."""
        if snapshot is not None and kind not in self.field_sets:
            try:
                if kind == "index_manifest" and snapshot.index_manifest:
                    self.index_manifest(snapshot.index_manifest)
                elif kind in ("manifest_list", "manifest"):
                    metas = self.manifest_list(snapshot.delta_manifest_list) or self.manifest_list(snapshot.base_manifest_list)
                    if kind == "manifest" and metas:
                        self.manifest(metas[0].file_name)
            except MissingFileError:
                pass
        return self.field_sets.get(kind, mf.LATEST)


def merge_entries(entries: Iterable[ManifestEntry], where: str = "") -> tuple[dict[tuple, ManifestEntry], dict[tuple, ManifestEntry]]:
    """(live ADDs by identifier, leftover DELETEs by identifier): FileEntry.mergeEntries semantics."""
    adds: dict[tuple, ManifestEntry] = {}
    deletes: dict[tuple, ManifestEntry] = {}
    for e in entries:
        ident = e.identifier
        if e.kind == mf.FileKind.ADD:
            if ident in adds:
                raise CorruptMetadataError(where or "manifest", f"file {e.file.file_name} is added twice")
            adds[ident] = e
        else:
            if ident in adds:
                del adds[ident]
            else:
                deletes[ident] = e
    return adds, deletes


@dataclass(frozen=True)
class LiveFile:
    partition: bytes
    bucket: int
    total_buckets: int
    meta: DataFileMeta
    path: str

    @property
    def name(self) -> str:
        return self.meta.file_name

    @property
    def level(self) -> int:
        return self.meta.level

    def entry(self, kind: int = mf.FileKind.ADD) -> ManifestEntry:
        return ManifestEntry(kind, self.partition, self.bucket, self.total_buckets, self.meta)


@dataclass
class ScanResult:
    snapshot: Snapshot
    files: list[LiveFile]
    index_entries: list[IndexManifestEntry]
    _dv_by_file: dict[tuple[bytes, int, str], tuple[IndexManifestEntry, DeletionVectorMeta]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for ie in self.index_entries:
            if ie.index_type == DELETION_VECTORS and ie.dv_ranges:
                for r in ie.dv_ranges:
                    self._dv_by_file[(ie.partition, ie.bucket, r.data_file)] = (ie, r)

    def dv_of(self, f: LiveFile) -> tuple[IndexManifestEntry, DeletionVectorMeta] | None:
        # Unaware-bucket append tables keep their files, and record their DVs, under bucket 0.
        return self._dv_by_file.get((f.partition, f.bucket, f.name))

    def buckets(self) -> dict[tuple[bytes, int], list[LiveFile]]:
        out: dict[tuple[bytes, int], list[LiveFile]] = {}
        for f in self.files:
            out.setdefault((f.partition, f.bucket), []).append(f)
        return out

    @property
    def total_rows(self) -> int:
        return sum(f.meta.row_count for f in self.files)


class TableScanner:
    """Turns snapshots into live files and resolves data/index file paths for one table."""

    def __init__(self, table: FileStoreTable, store: ManifestStore | None = None):
        self.table = table
        self.store = store or ManifestStore(table)
        self._partition_dirs: dict[bytes, str] = {}
        self._bucket_dirs: dict[tuple[bytes, int], str] = {}
        self._index_files: _LRU = _LRU(64)

    # ------------------------------------------------------------------ paths
    def partition_values(self, partition: bytes) -> list:
        schema = self.table.schema
        types = [f.type for f in schema.fields_of(schema.partition_keys)]
        return deserialize_row(partition, types, f"partition of {self.table.identifier}")

    def partition_json(self, partition: bytes) -> dict:
        """The partition as typed JSON values, {key: value} (format.partition.partition_json)."""
        schema = self.table.schema
        keys = list(schema.partition_keys)
        if not keys:
            return {}
        return partition_json(self.partition_values(partition), keys, [f.type for f in schema.fields_of(keys)])

    def partition_dir(self, partition: bytes) -> str:
        """Relative directory, e.g. `dt=2024-01-01/` ('' for unpartitioned tables)."""
        d = self._partition_dirs.get(partition)
        if d is None:
            schema = self.table.schema
            if not schema.partition_keys:
                d = ""
            else:
                opts = self.table.options
                types = [f.type for f in schema.fields_of(schema.partition_keys)]
                d = partition_path(self.partition_values(partition), list(schema.partition_keys), types,
                                   legacy=opts.partition_legacy_name, default_name=opts.partition_default_name)
            self._partition_dirs[partition] = d
        return d

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        key = (partition, bucket)
        d = self._bucket_dirs.get(key)
        if d is None:
            name = "bucket-postpone" if bucket == -2 else f"bucket-{bucket}"
            d = self._bucket_dirs[key] = posixpath.join(self.table.data_root, self.partition_dir(partition), name)
        return d

    def data_file_path(self, partition: bytes, bucket: int, meta: DataFileMeta) -> str:
        if meta.external_path:
            return self._checked_external(meta.external_path, meta.file_name)
        return self.bucket_dir(partition, bucket) + "/" + meta.file_name  # (a plain name: checked when read)

    def data_file_paths(self, cols: mf.ManifestColumns, rows: Sequence[int] | None = None) -> list[str]:
        """data_file_path of every row of `cols` (or of `rows` only, for manifests without external paths): one
        dictionary lookup and one concatenation per file."""
        dirs = self._bucket_dirs
        bucket_dir = self.bucket_dir
        if rows is not None:
            if any(cols.external_path):
                raise InvalidArgumentError("data_file_paths(rows=…) is for manifests without external paths")
            partition, bucket, name = cols.partition, cols.bucket, cols.file_name
            return [(dirs.get((partition[i], bucket[i])) or bucket_dir(partition[i], bucket[i])) + "/" + name[i]
                    for i in rows]
        out = [(dirs.get(k) or bucket_dir(*k)) + "/" + n
               for k, n in zip(zip(cols.partition, cols.bucket), cols.file_name)]
        if any(cols.external_path):
            for i, ext in enumerate(cols.external_path):
                if ext:
                    out[i] = self._checked_external(ext, cols.file_name[i])
        return out

    def _checked_external(self, external: str, name: str) -> str:
        """An external path from metadata, accepted only inside a configured `data-file.external-paths` entry and
        only for the file it names; returned as the table's FileIO addresses it (table/external.py)."""
        return ext.resolve(self.table, external, name)

    def index_file_path(self, ie: IndexManifestEntry) -> str:
        if ie.external_path:
            return self._checked_external(ie.external_path, ie.file_name)
        if self.table.options.index_file_in_data_dir:
            return posixpath.join(self.bucket_dir(ie.partition, ie.bucket), ie.file_name)
        return posixpath.join(self.table.index_dir, ie.file_name)

    # ------------------------------------------------------------------ scans
    def live_entries(self, snapshot: Snapshot) -> dict[tuple, ManifestEntry]:
        adds, _ = merge_entries(self.store.snapshot_entries(snapshot), f"snapshot {snapshot.id}")
        return adds

    def index_entries(self, snapshot: Snapshot) -> list[IndexManifestEntry]:
        if not snapshot.index_manifest:
            return []
        return [e for e in self.store.index_manifest(snapshot.index_manifest, f"snapshot {snapshot.id}")
                if e.kind == mf.FileKind.ADD]

    def scan(self, snapshot: Snapshot) -> ScanResult:
        files = [LiveFile(e.partition, e.bucket, e.total_buckets, e.file, self.data_file_path(e.partition, e.bucket, e.file))
                 for e in self.live_entries(snapshot).values()]
        return ScanResult(snapshot, files, self.index_entries(snapshot))

    def scan_latest(self) -> ScanResult | None:
        s = self.table.snapshots.latest()
        return self.scan(s) if s is not None else None

    def scan_tag(self, name: str) -> ScanResult:
        return self.scan(self.table.tags.tag(name))

    # ------------------------------------------------------------------ deletion vectors
    def deletion_vector(self, ie: IndexManifestEntry, r: DeletionVectorMeta) -> DeletionVector:
        path = self.index_file_path(ie)

        def load() -> bytes:
            try:
                return self.table.io.read_bytes(path)
            except FileNotFoundError:
                raise MissingFileError(path, f"index manifest (deletion vectors of bucket {ie.bucket})") from None

        data = self._index_files.get_or(path, load)
        return read_dv(data, r.offset, r.length, path)

    def deletion_vectors(self, result: ScanResult) -> dict[str, DeletionVector]:
        """Deletion vectors of every live file that has one, by data file name."""
        out = {}
        for f in result.files:
            hit = result.dv_of(f)
            if hit is not None:
                out[f.name] = self.deletion_vector(*hit)
        return out
