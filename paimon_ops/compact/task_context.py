"""What a compaction task reads: its context on the executor (`TaskContext`: the table, its input files with their
deletion vectors, the writers of its output, cancellation) and its input as record batches — one file in file order
(`file_rows_with_seq`), or sorted runs merged by key range (`merge_slices`, the streaming k-way merge of bounded
memory). Shared by the task kinds of `rewrite`, `lsm` and `rescale`."""
from __future__ import annotations

import time
import uuid
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from paimon_ops.compact.model import InputFile, meta_from_json
from paimon_ops.compact.rolling import RollingWriter, WriteParams
from paimon_ops.errors import CancelledError, MissingFileError
from paimon_ops.execution.tasks import check_cancelled
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.datafile import KEY_PREFIX, SEQUENCE_NUMBER
from paimon_ops.format.deletion_vectors import DeletionVector, read_dv
from paimon_ops.table.external import allowed_roots
from paimon_ops.table.reader import iter_file_batches
from paimon_ops.table.removal import remove_written
from paimon_ops.table.scan import LiveFile, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import FileNamer

LEVEL = "_LEVEL"
MAX_BATCH_ROWS = 65536
MIN_BATCH_ROWS = 256
# Rough expansion of on-disk (compressed) bytes to Arrow bytes, and of a merge slice while it is sorted,
# merged and written; used only to size batches from a memory budget.
_INFLATE = 4
_WORKING_COPIES = 4


class TaskContext:
    """Per-task state on the executor: the table, a scanner for paths, and a DV loader with a tiny cache."""

    def __init__(self, table_location: str, task: dict[str, Any]):
        self.table = FileStoreTable(table_location, options_override=task.get("_options"))
        # new files may go to the configured external paths: writes are confined to the table root and those
        self.table.io = self.table.io.with_roots(allowed_roots(self.table))
        self.scanner = TableScanner(self.table)
        self.task = task
        self.partition = bytes.fromhex(task["partition"])
        self.bucket = int(task["bucket"])
        self.total_buckets = int(task["total_buckets"])
        self.params = WriteParams.from_json(task["write"])
        self.memory_budget: int | None = task.get("memory_budget")
        self._index: dict[str, bytes] = {}
        self.writers: list[RollingWriter] = []            # data files
        self.changelog_writers: list[RollingWriter] = []  # changelog files (LSM tasks)
        self.extra_paths: list[str] = []                  # other files written (a bucket's new DV index)
        # Every file this task writes carries its token (the driver's journal names it), so that what a killed or
        # cancelled run wrote can be found and removed: `data-<token>-<n>`, `changelog-<token>-<n>`, `index-<token>-0`.
        self.token: str = str(uuid.UUID(task["file_uuid"])) if task.get("file_uuid") else str(uuid.uuid4())
        self.data_namer = FileNamer(self.table.options.data_file_prefix, "." + self.params.fmt)
        self.data_namer.uuid = self.token
        self.changelog_namer = FileNamer(self.table.options.changelog_file_prefix,
                                         "." + self.params.fmt)
        self.changelog_namer.uuid = self.token
        self._marker_checked = 0.0

    def check_cancelled(self) -> None:
        """Between batches: stop (CancelledError; the task then removes what it wrote) once the run was cancelled —
        in-process, the runner's event; on Spark executors, the driver's cancel marker file (looked for at most
        every half second)."""
        check_cancelled()
        marker = self.task.get("_cancel_marker")
        if marker:
            now = time.monotonic()
            if now - self._marker_checked >= 0.5:
                self._marker_checked = now
                if self.table.io.exists(marker):
                    raise CancelledError("cancelled by the driver")

    def live_file(self, f: InputFile) -> LiveFile:
        return LiveFile(self.partition, self.bucket, self.total_buckets, meta_from_json(f.meta), f.path)

    def dv(self, f: InputFile) -> DeletionVector | None:
        if not f.dv_index_file:
            return None
        data = self._index.get(f.dv_index_file)
        if data is None:
            try:
                data = self.table.io.read_bytes(f.dv_index_file)
            except FileNotFoundError:
                raise MissingFileError(f.dv_index_file, f"deletion vectors of {f.name}") from None
            self._index = {f.dv_index_file: data}
        assert f.dv_offset is not None and f.dv_length is not None
        return read_dv(data, f.dv_offset, f.dv_length, f.dv_index_file)

    def writer(self, level: int, **kw: Any) -> RollingWriter:
        kw.setdefault("namer", self.data_namer)
        w = RollingWriter(self.table, self.scanner, self.params, self.partition, self.bucket, level, **kw)
        self.writers.append(w)
        return w

    def changelog_writer(self, level: int) -> RollingWriter:
        """Changelog files: `changelog-<uuid>-<n>`, the output level, file source APPEND (KeyValueFileWriterFactory)."""
        w = RollingWriter(self.table, self.scanner, self.params, self.partition, self.bucket, level, file_source=0,
                          namer=self.changelog_namer)
        self.changelog_writers.append(w)
        return w

    def abort(self) -> None:
        for w in self.writers + self.changelog_writers:
            w.abort()
        remove_written(self.table, self.extra_paths, "a failed compaction")

    def batch_rows(self, files: list[InputFile], streams: int) -> int:
        if not self.memory_budget:
            return MAX_BATCH_ROWS
        rows = max(1, sum(f.row_count for f in files))
        row_bytes = max(16.0, sum(f.file_size for f in files) / rows * _INFLATE)
        n = int(self.memory_budget / (max(1, streams) * row_bytes * _WORKING_COPIES))
        return max(MIN_BATCH_ROWS, min(MAX_BATCH_ROWS, n))


def task_files(task: dict[str, Any]) -> list[InputFile]:
    return [InputFile(**f) for f in task["files"]]


# ---------------------------------------------------------------------------------------------- PK merge

def run_batches(ctx: TaskContext, run: list[InputFile], batch_rows: int) -> Iterator[pa.Table]:
    """Batches of one sorted run in key order: value columns + _SEQUENCE_NUMBER + _VALUE_KIND + _LEVEL."""
    for f in run:
        lf = ctx.live_file(f)
        for batch in iter_file_batches(ctx.scanner, lf, ctx.dv(f), batch_size=batch_rows):
            ctx.check_cancelled()
            if not batch.num_rows:
                continue
            t = pa.Table.from_batches([batch])
            t = t.drop_columns([c for c in t.column_names if c.startswith(KEY_PREFIX)])
            yield t.append_column(pa.field(LEVEL, pa.int32(), False), pa.repeat(pa.scalar(f.level, pa.int32()), t.num_rows))


def sorted_runs(ctx: TaskContext, files: list[InputFile]) -> list[list[InputFile]]:
    """Level 0: one run per file; level >= 1: one run per level, files in key order (maintenance.md §5.1)."""
    schema = ctx.table.schema
    key_types = [f.type for f in schema.fields_of(schema.trimmed_primary_keys)]
    runs: list[list[InputFile]] = [[f] for f in files if f.level == 0]
    by_level: dict[int, list[InputFile]] = {}
    for f in files:
        if f.level > 0:
            by_level.setdefault(f.level, []).append(f)
    for level in sorted(by_level):
        fs = by_level[level]
        fs.sort(key=lambda f: tuple(deserialize_row(meta_from_json(f.meta).min_key, key_types, f.name)))
        runs.append(fs)
    return runs


def key_at(cols: list[pa.Array], i: int) -> tuple:
    return tuple(c[i].as_py() for c in cols)


def count_le(cols: list[pa.Array], n: int, cutoff: tuple) -> int:
    """How many leading rows of a key-sorted run have a key <= `cutoff`: a binary search over Python scalars
    (primary keys are never null; str/bytes/int/decimal/date/time order as Paimon's key comparator does)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if key_at(cols, mid) <= cutoff:
            lo = mid + 1
        else:
            hi = mid
    return lo


def merge_slices(ctx: TaskContext, files: list[InputFile], keys: list[str], stats: dict[str, int]) -> Iterator[pa.Table]:
    """All records of `files` (DVs applied) in key-range slices: every record of a key is in the same slice.

    Each sorted run is read in batches; the cutoff is the smallest last key over the runs' current batches, and
    every buffered record with key <= cutoff forms the next slice. Runs are sorted, so the cut in each buffer is
    found by binary search and taken as zero-copy slices."""
    runs = sorted_runs(ctx, files)
    batch_rows = ctx.batch_rows(files, len(runs))
    iters = [run_batches(ctx, run, batch_rows) for run in runs]
    buffers: list[pa.Table | None] = [None] * len(iters)
    key_cols: list[list[pa.Array]] = [[] for _ in iters]
    active = list(range(len(iters)))
    while True:
        still = []
        for i in active:
            if buffers[i] is None or buffers[i].num_rows == 0:  # type: ignore[union-attr]
                nxt = next(iters[i], None)
                if nxt is not None:
                    nxt = nxt.combine_chunks()
                    stats["rows_read"] = stats.get("rows_read", 0) + nxt.num_rows
                    key_cols[i] = [nxt.column(k).chunk(0) for k in keys]
                buffers[i] = nxt
            if buffers[i] is not None:
                still.append(i)
        active = still
        if not active:
            break
        cutoff = min(key_at(key_cols[i], buffers[i].num_rows - 1) for i in active)  # type: ignore[union-attr]
        parts = []
        for i in active:
            buf = buffers[i]
            assert buf is not None
            n = count_le(key_cols[i], buf.num_rows, cutoff)
            if n:
                parts.append(buf.slice(0, n))
            if n == buf.num_rows:
                buffers[i] = None
            else:
                buffers[i] = buf.slice(n)
                key_cols[i] = [c.slice(n) for c in key_cols[i]]
        stats["slices"] = stats.get("slices", 0) + 1
        yield pa.concat_tables(parts, promote_options="none") if len(parts) > 1 else parts[0]


# ---------------------------------------------------------------------------------------------- single files

def file_rows_with_seq(ctx: TaskContext, f: InputFile, batch_rows: int) -> Iterator[pa.Table]:
    """Live rows of one file in file order with _SEQUENCE_NUMBER (append files: min_seq + position)."""
    lf = ctx.live_file(f)
    dv = ctx.dv(f)
    pk = ctx.table.is_primary_key
    keep = dv.keep_mask(f.row_count) if dv is not None and dv.cardinality else None
    offset = 0
    for batch in iter_file_batches(ctx.scanner, lf, None, batch_size=batch_rows):
        ctx.check_cancelled()
        n = batch.num_rows
        t = pa.Table.from_batches([batch])
        if pk:
            t = t.drop_columns([c for c in t.column_names if c.startswith(KEY_PREFIX)])
        else:
            seq = np.arange(lf.meta.min_sequence_number + offset, lf.meta.min_sequence_number + offset + n,
                            dtype=np.int64)
            t = t.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(seq))
        if keep is not None:
            t = t.filter(pa.array(keep[offset:offset + n]))
        offset += n
        if t.num_rows:
            yield t


__all__ = ["TaskContext", "task_files", "merge_slices", "file_rows_with_seq", "sorted_runs", "run_batches",
           "LEVEL", "MAX_BATCH_ROWS", "MIN_BATCH_ROWS"]
