"""Writing new data files (level 0) into a table and committing them — used by tests, the demo warehouse and
anything that needs to add rows. Maintenance itself rewrites files through the compaction engine.

Rows are split by partition and bucket (Java's bucket function, vectorised), sorted by key, given sequence
numbers after the bucket's current maximum, and written with the system columns, stats and min/max keys
Java expects (format.md §7.1, §11.1).
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import paimon_ops.format.manifest as mf
from paimon_ops.errors import InvalidArgumentError, InvalidOptionError, UnsupportedError
from paimon_ops.format.binary_row import bucket_ids, serialize_row
from paimon_ops.format.datafile import SEQUENCE_NUMBER, VALUE_KIND, validate_write_options, write_data_file
from paimon_ops.format.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.format.stats import column_stats_modes, compute_stats, dense_store, key_stats, min_max_key
from paimon_ops.format.types import DataField, arrow_schema, max_field_id, parse_type
from paimon_ops.options import (
    BUCKET,
    BUCKET_FUNCTION_TYPE,
    CHANGELOG_FILE_PREFIX,
    DATA_FILE_PREFIX,
    DATA_FILE_THIN_MODE,
    FILE_FORMAT,
    ROW_TRACKING_ENABLED,
)
from paimon_ops.table.commit import CommitChanges, FileStoreCommit, check_commit_options
from paimon_ops.table.external import write_roots
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable, FileSystemCatalog, Identifier

_EXT = {"parquet": ".parquet", "orc": ".orc", "avro": ".avro"}


def local_now_as_utc_millis() -> int:
    """Java's `_CREATION_TIME`: the local wall clock encoded as if it were UTC."""
    now = datetime.now()
    return int((now - datetime(1970, 1, 1)).total_seconds() * 1000)


@dataclass(frozen=True)
class DataFileWriteSpec:
    """How files of one table are written: format, stats layout (follows the table's manifest field set)."""

    fmt: str
    dense_stats: bool
    legacy_key_stats: bool
    thin: bool = False  # data-file.thin-mode (1.0+): primary-key files without the `_KEY_*` columns

    @staticmethod
    def of(table: FileStoreTable, scanner: TableScanner) -> DataFileWriteSpec:
        latest = table.snapshots.latest()
        fs = scanner.store.field_set("manifest", latest)
        if isinstance(fs, mf.Layout):
            fs = fs.of(mf.MANIFEST)
        has_cols = fs.has("_VALUE_STATS_COLS", "_FILE")
        fmt = table.options.file_format
        if fmt not in _EXT:
            raise UnsupportedError(f"writing {fmt!r} data files for {table.identifier} is not supported (parquet, orc, "
                                   "avro)")
        try:  # every option a write reads — codecs, sizes, stats modes, the commit's — checked once, here, for the
            # table writer and compaction alike: before anything is written, never in a task half-way through a run
            raw = dict(table.options.raw)
            validate_write_options(fmt, raw)
            column_stats_modes(table.schema.field_names, raw)
            for option in (DATA_FILE_PREFIX, CHANGELOG_FILE_PREFIX):  # (the names of the new files)
                table.options.get(option)
        except InvalidOptionError as e:
            raise InvalidOptionError(e.name, e.value, e.expected, f"table {table.identifier}") from None
        check_commit_options(table)
        write_roots(table)  # where new files go (data-file.external-paths): refused now, naming the option
        # 0.9 manifests have no _VALUE_STATS_COLS: all-mode value stats and 0.9's key-stats modes. 0.9 readers need
        # the `_KEY_*` columns, so a table still written in the 0.9 layout never gets thin files.
        return DataFileWriteSpec(fmt, has_cols and dense_store(dict(table.options.raw)), not has_cols,
                                 has_cols and thin_mode(table))


def thin_mode(table: FileStoreTable) -> bool:
    """Java writes thin primary-key files when `data-file.thin-mode` is set and every key column is a value column
    (KeyValueFileWriterFactory.supportsThinMode: always so for a table's own trimmed primary key)."""
    return table.is_primary_key and table.options.get(DATA_FILE_THIN_MODE)


class FileNamer:
    def __init__(self, prefix: str, ext: str):
        self.prefix = prefix
        self.ext = ext
        self.uuid = str(uuid.uuid4())
        self.n = 0

    def next(self) -> str:
        name = f"{self.prefix}{self.uuid}-{self.n}{self.ext}"
        self.n += 1
        return name


def write_file(table: FileStoreTable, scanner: TableScanner, spec: DataFileWriteSpec, namer: FileNamer, data: pa.Table,
               partition: bytes, bucket: int, level: int, file_source: int) -> DataFileMeta:
    """Write one data file (rows already in file order, system columns present for PK tables)."""
    schema = table.schema
    opts = dict(table.options.raw)
    name = namer.next()
    path = scanner.bucket_dir(partition, bucket) + "/" + name
    thin = spec.thin and table.is_primary_key
    with table.io.open_output(path) as sink:
        write_data_file(data, sink, spec.fmt, schema, opts, thin=thin)
    size = table.io.size(path)
    names = schema.field_names
    types = [f.type for f in schema.fields]
    key_names = schema.trimmed_primary_keys
    value_stats, stats_cols = compute_stats(data, names, types, opts, spec.dense_stats,
                                            key_names=key_names if thin else ())
    if table.is_primary_key:
        key_types = [f.type for f in schema.fields_of(key_names)]
        min_key, max_key = min_max_key(data, key_names, key_types)
        kstats = key_stats(data, key_names, key_types, opts, legacy=spec.legacy_key_stats, thin=thin)
        kinds = data.column(VALUE_KIND).to_numpy()
        deletes = int(np.count_nonzero((kinds == 1) | (kinds == 3)))
    else:
        min_key = max_key = mf.EMPTY_ROW
        kstats = mf.EMPTY_STATS
        deletes = 0
    seq = data.column(SEQUENCE_NUMBER)
    mm = pc.min_max(seq)
    return DataFileMeta(
        file_name=name, file_size=size, row_count=data.num_rows, min_key=min_key, max_key=max_key,
        key_stats=kstats, value_stats=value_stats,
        min_sequence_number=mm["min"].as_py(), max_sequence_number=mm["max"].as_py(),
        schema_id=schema.id, level=level, extra_files=(), creation_time=local_now_as_utc_millis(),
        delete_row_count=deletes, embedded_index=None, file_source=file_source, value_stats_cols=stats_cols,
        external_path=None, first_row_id=None, write_cols=None, write_cols_sequences=None,
    )


class TableWriter:
    """Append new rows to a table as level-0 files; `commit()` makes them visible in one APPEND snapshot."""

    def __init__(self, table: FileStoreTable, commit_user: str | None = None):
        if table.options.get(ROW_TRACKING_ENABLED):
            # new files get their row ids (`_FIRST_ROW_ID`, `nextRowId`) at commit, which this writer does not assign
            raise UnsupportedError(f"{table.identifier}: writing rows into a row-tracking table is not supported by "
                                   "paimon-ops (row ids are assigned by Paimon's writers)")
        self.table = table
        self.scanner = TableScanner(table)
        self.committer = FileStoreCommit(table, commit_user, store=self.scanner.store)
        self.spec = DataFileWriteSpec.of(table, self.scanner)
        self.namer = FileNamer(table.options.data_file_prefix, _EXT[self.spec.fmt])
        self.entries: list[ManifestEntry] = []
        self.base = table.snapshots.latest()
        self._next_seq: dict[tuple[bytes, int], int] | None = None

    def _bucket_next_seq(self) -> dict[tuple[bytes, int], int]:
        if self._next_seq is None:
            self._next_seq = {}
            if self.base is not None:
                for e in self.scanner.live_entries(self.base).values():
                    k = (e.partition, e.bucket)
                    self._next_seq[k] = max(self._next_seq.get(k, 0), e.file.max_sequence_number + 1)
        return self._next_seq

    def write(self, data: pa.Table, row_kinds: Sequence[int] | pa.Array | None = None) -> list[ManifestEntry]:
        table = self.table
        schema = table.schema
        target = arrow_schema(schema.row_type)
        missing = [n for n in schema.field_names if n not in data.column_names]
        if missing:
            raise InvalidArgumentError(f"writing to {table.identifier}: columns {missing} are missing")
        data = data.select(schema.field_names)
        try:
            data = data.cast(target)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as e:
            raise InvalidArgumentError(f"writing to {table.identifier}: data does not fit the schema ({e})") from None
        n = data.num_rows
        if n == 0:
            return []
        # Read everything the commit will check *before* writing a data file: unreadable metadata must fail
        # the write without leaving files behind (the manifest store caches it for the commit).
        self._bucket_next_seq()
        if self.base is not None:
            self.scanner.index_entries(self.base)
        kinds = np.zeros(n, np.int8) if row_kinds is None else np.asarray(row_kinds, dtype=np.int8)
        if len(kinds) != n or ((kinds < 0) | (kinds > 3)).any():
            raise InvalidArgumentError("row_kinds must hold one value in 0..3 (+I, -U, +U, -D) per row")
        if not table.is_primary_key and (kinds != 0).any():
            raise InvalidArgumentError(f"{table.identifier} is an append table: only inserts can be written")
        data = data.append_column(pa.field("__order", pa.int64()), pa.array(np.arange(n, dtype=np.int64)))
        data = data.append_column(pa.field(VALUE_KIND, pa.int8(), False), pa.array(kinds, pa.int8()))
        data = data.append_column(pa.field("__bucket", pa.int32()), pa.array(self._buckets(data), pa.int32()))
        new = []
        groups = list(schema.partition_keys) + ["__bucket"]
        distinct = data.select(groups).group_by(groups).aggregate([]).to_pylist()
        ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
        for g in distinct:
            mask = pc.equal(data.column("__bucket"), g["__bucket"])
            for k in schema.partition_keys:
                v = g[k]
                mask = pc.and_(mask, pc.is_null(data.column(k)) if v is None else pc.equal(data.column(k), v))
            part_rows = data.filter(mask)
            partition = serialize_row([g[k] for k in schema.partition_keys], ptypes)
            new += self._write_bucket(part_rows, partition, int(g["__bucket"]))
        self.entries += new
        return new

    def _buckets(self, data: pa.Table) -> np.ndarray:
        table, schema = self.table, self.table.schema
        n = table.options.bucket
        if n > 0:
            keys = schema.bucket_keys
            if not keys:
                raise UnsupportedError(f"{table.identifier}: fixed-bucket append table without bucket-key")
            func = table.options.get(BUCKET_FUNCTION_TYPE)
            return bucket_ids([data.column(k) for k in keys], [f.type for f in schema.fields_of(keys)], n, func)
        if n == -1 and table.is_primary_key:
            raise UnsupportedError(f"{table.identifier}: writing to dynamic-bucket primary-key tables "
                                   "(bucket = -1) needs the hash index; not supported by the writer")
        if n not in (-1,):
            raise UnsupportedError(f"{table.identifier}: bucket mode {n} is not supported by the writer")
        return np.zeros(data.num_rows, np.int32)

    def _write_bucket(self, rows: pa.Table, partition: bytes, bucket: int) -> list[ManifestEntry]:
        table, schema = self.table, self.table.schema
        nxt = self._bucket_next_seq()
        start = nxt.get((partition, bucket), 0)
        rows = rows.sort_by([("__order", "ascending")])
        seq = pa.array(np.arange(start, start + rows.num_rows, dtype=np.int64))
        nxt[(partition, bucket)] = start + rows.num_rows
        rows = rows.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False), seq)
        total_buckets = table.options.bucket
        files: list[pa.Table] = []
        if table.is_primary_key:
            keys = schema.trimmed_primary_keys
            # k-th occurrence of a key goes to the k-th file: each file holds a key at most once (Java's rule),
            # and no record is merged away here, so every merge engine sees every record.
            occ = _occurrence_index(rows, keys)
            if table.options.merge_engine == "deduplicate":
                last = _last_occurrence_mask(rows, keys)
                files = [rows.filter(pa.array(last))]
            else:
                for k in range(int(occ.max()) + 1):
                    files.append(rows.filter(pa.array(occ == k)))
            files = [f.sort_by([(k, "ascending") for k in keys]) for f in files]
        else:
            files = [rows]
        out = []
        for f in files:
            f = f.drop_columns(["__order", "__bucket"])
            meta = write_file(table, self.scanner, self.spec, self.namer, f, partition, bucket, level=0, file_source=0)
            out.append(ManifestEntry(FileKind.ADD, partition, bucket, total_buckets, meta))
        return out

    def commit(self, properties: dict[str, str] | None = None, now_millis: int | None = None,
               watermark: int | None = None) -> Snapshot | None:
        """Commit what was written (None if nothing); `watermark`: the writer's event-time watermark (epoch ms)."""
        if not self.entries:
            return None
        snap = self.committer.commit(CommitChanges(data=tuple(self.entries)), "APPEND",
                                     self.base.id if self.base else None, properties=properties, now_millis=now_millis,
                                     watermark=watermark)
        self.entries = []
        self.base = snap
        return snap


def _key_codes(rows: pa.Table, keys: list[str]) -> np.ndarray:
    """A dense integer code per distinct key: sort once, number the runs (no loop per row or key)."""
    n = rows.num_rows
    keyed = rows.select(keys)
    order = pc.sort_indices(keyed, sort_keys=[(k, "ascending") for k in keys]).to_numpy()
    sorted_keys = keyed.take(order)
    change = np.zeros(n, bool)
    change[0] = True
    for k in keys:
        col = sorted_keys.column(k).combine_chunks()
        ne = pc.fill_null(pc.not_equal(col.slice(1), col.slice(0, n - 1)), True)
        change[1:] |= ne.to_numpy(zero_copy_only=False)
    codes = np.empty(n, np.int64)
    codes[order] = np.cumsum(change) - 1
    return codes


def _occurrence_index(rows: pa.Table, keys: list[str]) -> np.ndarray:
    """For each row, how many earlier rows (in current order) share its key."""
    codes = _key_codes(rows, keys)
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
    run_start = np.repeat(starts, np.diff(np.r_[starts, len(codes)]))
    occ = np.empty(len(codes), np.int64)
    occ[order] = np.arange(len(codes)) - run_start
    return occ


def _last_occurrence_mask(rows: pa.Table, keys: list[str]) -> np.ndarray:
    codes = _key_codes(rows, keys)
    rev_first = np.unique(codes[::-1], return_index=True)[1]
    mask = np.zeros(len(codes), bool)
    mask[len(codes) - 1 - rev_first] = True
    return mask


def write_rows(table: FileStoreTable, data: pa.Table | dict, row_kinds: Sequence[int] | None = None,
               commit_user: str | None = None) -> Snapshot | None:
    """Write and commit one batch (an APPEND snapshot)."""
    if isinstance(data, dict):
        target = arrow_schema(table.schema.row_type)
        data = pa.Table.from_pydict(data, schema=pa.schema([f for f in target if f.name in data]))
    w = TableWriter(table, commit_user)
    w.write(data, row_kinds)
    return w.commit()


def create_table(warehouse: str, identifier: str, fields: Sequence, partition_keys: Sequence[str] = (),
                 primary_keys: Sequence[str] = (), options: dict[str, str] | None = None,
                 comment: str | None = None) -> FileStoreTable:
    """Create a table (schema-0) in a filesystem warehouse. `fields`: DataFields or (name, type-string) pairs."""

    ident = Identifier.parse(identifier)
    io, root = FileIO.resolve(warehouse)
    io.mkdirs(root)  # creating a table may create its warehouse, as Paimon's filesystem catalog does
    cat = FileSystemCatalog(warehouse)
    path = cat.table_path(ident)
    dfs = []
    next_id = 0
    for f in fields:
        if isinstance(f, DataField):
            dfs.append(f)
            next_id = max(next_id, f.id + 1)
        else:
            name, type_text = f
            t = parse_type(type_text, f"column {name}")
            if name in primary_keys:
                t = t.with_nullable(False)
            dfs.append(DataField(next_id, name, t))
            next_id += 1
    opts = {BUCKET.key: str(BUCKET.default), FILE_FORMAT.key: FILE_FORMAT.default, **(options or {})}
    schema = TableSchema(id=0, fields=tuple(dfs), partition_keys=tuple(partition_keys),
                         primary_keys=tuple(primary_keys), options=opts, comment=comment,
                         highest_field_id=max_field_id(dfs), time_millis=int(time.time() * 1000))
    cat.io.mkdirs(path + "/schema")
    if not cat.io.write_atomic_if_absent(path + "/schema/schema-0", schema.to_json().encode()):
        raise InvalidArgumentError(f"table {identifier} already exists at {path}")
    return cat.get_table(ident)
