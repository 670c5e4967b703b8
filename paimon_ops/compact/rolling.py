"""A streaming rolling data-file writer: chunks in, files of about `target-file-size` out.

Unlike `table.writer.write_file` (one whole Arrow table per file), this writer never holds more than one row
group in memory, so a bucket larger than memory can be rewritten. Statistics stay exact: per chunk only the
per-column minimum and maximum (a 2-row table) and null counts are kept; at close the table's own stats code
runs over those extremes, so truncation and float rules are the same as for whole-file writes.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import paimon_ops.format.manifest as mf
import paimon_ops.format.stats as st
from paimon_ops.errors import PaimonOpsError
from paimon_ops.format.datafile import ROW_ID, SEQUENCE_NUMBER, VALUE_KIND, DataFileWriter, validate_write_options
from paimon_ops.format.manifest import DataFileMeta
from paimon_ops.format.schema import TableSchema
from paimon_ops.table.external import ExternalPathProvider
from paimon_ops.table.removal import remove_written
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import FileNamer, local_now_as_utc_millis

log = logging.getLogger(__name__)

_EXT = {"parquet": ".parquet", "orc": ".orc", "avro": ".avro"}


@dataclass(frozen=True)
class WriteParams:
    """How output files are written; computed once on the driver and shipped in the task."""

    fmt: str
    dense_stats: bool
    legacy_key_stats: bool
    target_file_size: int
    target_rows: int
    row_group_bytes: int
    thin: bool = False  # data-file.thin-mode: primary-key files without `_KEY_*` columns

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    @staticmethod
    def from_json(d: dict[str, Any]) -> WriteParams:
        return WriteParams(**d)


def _extremes(chunk: pa.Table, names: list[str], types: list) -> pa.Table:
    """A 2-row table: per column the chunk's minimum (row 0) and maximum (row 1), null when unknown."""
    cols = []
    for name, t in zip(names, types):
        col = chunk.column(name)
        if not st.has_minmax(t) or col.null_count == len(col):
            cols.append(pa.nulls(2, col.type))
        elif t.root in ("FLOAT", "DOUBLE"):
            mn, mx = st.float_min_max(col)
            cols.append(pa.array([mn, mx], col.type))
        else:
            mm = pc.min_max(col)
            cols.append(pa.array([mm["min"], mm["max"]], col.type))
    return pa.Table.from_arrays(cols, names=names)


class RollingWriter:
    """Writes sorted chunks of one (partition, bucket, level) into files rolled at the target size / rows.

    Row tracking (append tables): with `row_ids`, chunks carry `_ROW_ID` and `_SEQUENCE_NUMBER`, which are written as
    physical columns (Java's append compaction of row-tracking tables) and every file gets the `_FIRST_ROW_ID` of
    its first row; the ids of a file must be consecutive, in order (checked), so every reader derives the same ids
    from `_FIRST_ROW_ID` + position. `write_schema` / `write_cols` / `first_row_id` write one data-evolution file:
    only the columns of `write_schema` (the table's columns outside BLOB files), `_WRITE_COLS` as given, and the one
    first row id of the row range it covers (such a writer must not roll)."""

    def __init__(self, table: FileStoreTable, scanner: TableScanner, params: WriteParams, partition: bytes, bucket: int,
                 level: int, file_source: int = 1, namer: FileNamer | None = None, *, row_ids: bool = False,
                 write_schema: TableSchema | None = None, write_cols: tuple[str, ...] | None = None,
                 first_row_id: int | None = None):
        self.table = table
        self.schema = write_schema or table.schema
        self.row_ids = row_ids
        self.write_cols = write_cols
        self.fixed_first_row_id = first_row_id
        self.scanner = scanner
        self.params = params
        self.partition = partition
        self.bucket = bucket
        self.level = level
        self.file_source = file_source
        self.pk = table.is_primary_key
        self.thin = params.thin and self.pk
        self.options = dict(table.options.raw)
        validate_write_options(params.fmt, self.options)  # refuse a bad codec before the first file is opened
        self.namer = namer or FileNamer(table.options.data_file_prefix, _EXT[params.fmt])
        self.names = self.schema.field_names
        self.types = [f.type for f in self.schema.fields]
        self.key_names = list(self.schema.trimmed_primary_keys) if self.pk else []
        self.key_types = [f.type for f in self.schema.fields_of(self.key_names)] if self.pk else []
        self.files: list[DataFileMeta] = []
        self.paths: list[str] = []
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0
        self._pending_rows = 0
        self._open = False
        self.rows_written = 0
        self._external: Any = None  # ExternalPathProvider, made with the first file
        self._external_path: str | None = None

    # ------------------------------------------------------------------ public
    def write(self, chunk: pa.Table) -> None:
        """Append rows (value columns + _SEQUENCE_NUMBER [+ _VALUE_KIND for PK]) in file order."""
        while chunk.num_rows:
            room = self.params.target_rows - self._file_rows - self._pending_rows
            part = chunk if chunk.num_rows <= room else chunk.slice(0, room)
            chunk = chunk.slice(part.num_rows) if part.num_rows < chunk.num_rows else chunk.slice(0, 0)
            self._pending.append(part)
            self._pending_bytes += part.nbytes
            self._pending_rows += part.num_rows
            if self._file_rows + self._pending_rows >= self.params.target_rows:
                self._flush_row_group()
                self._close_file()
            elif self._pending_bytes >= self.params.row_group_bytes:
                self._flush_row_group()
                if self._sink.tell() >= self.params.target_file_size:
                    self._close_file()

    def close(self) -> list[DataFileMeta]:
        if self._pending_rows:
            self._flush_row_group()
        if self._open:
            self._close_file()
        return self.files

    def abort(self) -> None:
        """Delete every file this writer created (used when the task or the commit fails)."""
        if self._open:
            try:
                self._writer.close()
                self._sink.close()
            except Exception:  # noqa: BLE001 - best effort, the file is deleted next
                pass
            self._open = False
        remove_written(self.table, self.paths, "a failed compaction")

    # ------------------------------------------------------------------ files
    def _start_file(self) -> None:
        name = self.namer.next()
        bucket_dir = self.scanner.bucket_dir(self.partition, self.bucket)
        if self._external is None:
            rel = bucket_dir[len(self.table.root):] if bucket_dir.startswith(self.table.root + "/") else bucket_dir
            self._external = ExternalPathProvider(self.table, rel)
        where = self._external.next(name)
        path, self._external_path = (bucket_dir + "/" + name, None) if where is None else where
        self._name, self._path = name, path
        self.paths.append(path)
        if self.fixed_first_row_id is not None and self.files:
            raise PaimonOpsError(f"a data-evolution compaction of {self.table.identifier} must write one file per row "
                                 "range; it would roll into a second file")
        self._sink = self.table.io.open_output(path)
        self._writer = DataFileWriter(self._sink, self.params.fmt, self.schema, self.options, self.pk,
                                      thin=self.thin, row_ids=self.row_ids)
        self._open = True
        self._file_rows = 0
        self._extremes: list[pa.Table] = []
        self._nulls = np.zeros(len(self.names), np.int64)
        self._first_key: pa.Table | None = None
        self._last_key: pa.Table | None = None
        self._min_seq: int | None = None
        self._max_seq: int | None = None
        self._deletes = 0
        self._first_row_id: int | None = None
        self._next_row_id: int | None = None

    _file_rows = 0

    def _flush_row_group(self) -> None:
        if not self._pending_rows:
            return
        data = pa.concat_tables(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_bytes, self._pending_rows = [], 0, 0
        if not self._open:
            self._start_file()
        self._writer.write(data)
        self._track(data)

    def _track(self, data: pa.Table) -> None:
        n = data.num_rows
        self._file_rows += n
        self.rows_written += n
        self._extremes.append(_extremes(data, self.names, self.types))
        self._nulls += np.array([data.column(c).null_count for c in self.names], np.int64)
        seq = pc.min_max(data.column(SEQUENCE_NUMBER))
        lo, hi = seq["min"].as_py(), seq["max"].as_py()
        self._min_seq = lo if self._min_seq is None else min(self._min_seq, lo)
        self._max_seq = hi if self._max_seq is None else max(self._max_seq, hi)
        if self.row_ids:
            ids = data.column(ROW_ID).to_numpy()
            start = int(ids[0]) if self._next_row_id is None else self._next_row_id
            if not np.array_equal(ids, np.arange(start, start + n, dtype=np.int64)):
                raise PaimonOpsError(f"row ids written into {self._name} of {self.table.identifier} are not consecutive "
                                     f"from {start}: a rewrite must keep every row's id")
            if self._first_row_id is None:
                self._first_row_id = start
            self._next_row_id = start + n
        if self.pk:
            if self._first_key is None:
                self._first_key = data.select(self.key_names).slice(0, 1)
            self._last_key = data.select(self.key_names).slice(n - 1, 1)
            kinds = data.column(VALUE_KIND).to_numpy()
            self._deletes += int(np.count_nonzero((kinds == 1) | (kinds == 3)))

    def _close_file(self) -> None:
        if not self._open:
            return
        self._writer.close()
        self._sink.close()
        self._open = False
        size = self.table.io.size(self._path)
        ext = pa.concat_tables(self._extremes)
        value_stats, stats_cols = st.compute_stats(
            ext, self.names, self.types, self.options, self.params.dense_stats,
            key_names=self.key_names if self.thin else ())
        kept = list(stats_cols) if stats_cols is not None else self.names
        real_nulls = dict(zip(self.names, self._nulls.tolist()))
        if value_stats.null_counts is not None:
            nulls = tuple(None if nc is None else real_nulls[name] for name, nc in zip(kept, value_stats.null_counts))
            value_stats = mf.SimpleStats(value_stats.min_values, value_stats.max_values, nulls)
        if self.pk:
            ends = pa.concat_tables([self._first_key, self._last_key])
            min_key, max_key = st.min_max_key(ends, self.key_names, self.key_types)
            kstats = st.key_stats(ext, self.key_names, self.key_types, self.options,
                                  legacy=self.params.legacy_key_stats, thin=self.thin)
        else:
            min_key = max_key = mf.EMPTY_ROW
            kstats = mf.EMPTY_STATS
        assert self._min_seq is not None and self._max_seq is not None
        self.files.append(DataFileMeta(
            file_name=self._name, file_size=size, row_count=self._file_rows, min_key=min_key, max_key=max_key,
            key_stats=kstats, value_stats=value_stats, min_sequence_number=self._min_seq,
            max_sequence_number=self._max_seq, schema_id=self.schema.id, level=self.level, extra_files=(),
            creation_time=local_now_as_utc_millis(), delete_row_count=self._deletes, embedded_index=None,
            file_source=self.file_source, value_stats_cols=stats_cols, external_path=self._external_path,
            first_row_id=self._first_row_id if self.row_ids else self.fixed_first_row_id,
            write_cols=self.write_cols, write_cols_sequences=None))
        self._file_rows = 0


__all__ = ["RollingWriter", "WriteParams"]
