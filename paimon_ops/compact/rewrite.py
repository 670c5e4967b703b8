"""The bucket rewriter: the task function executors run (`run_compaction_task(table_location, task) -> dict`).

It reads its input files itself (deletion vectors applied), writes new files next to them and returns their
DataFileMeta as JSON; it never commits. If anything fails, every file it wrote is deleted before the error
propagates, so a failed task leaves nothing behind.

PK merge is a streaming k-way merge by key range (bounded memory, maintenance.md §5.7): each sorted run
(a level-0 file, or all files of one level >= 1 in key order) is read in key-sorted batches; the cutoff is the
smallest "last key of the current batch" over all runs; every record with key <= cutoff is merged by the merge
engine (all records of those keys are guaranteed to be in memory), written, and the loop continues.
Batch sizes follow `memory_budget` (split over the runs); output row groups are at most a quarter of it.

Memory note: the budget covers our batches, merge slices and output row groups. The Parquet reader underneath
(format.datafile) holds one whole column chunk of every open input file (pyarrow's default unbuffered reads), so
inputs with huge row groups (Java's 128 MB default) add roughly one compressed row group per sorted run on top.
Sort compaction sorts one partition in memory (as one Spark task does in Paimon); it is not budget-bound.
"""
from __future__ import annotations

import logging
import os
import time
import uuid
from typing import Any, Iterator

import numpy as np
import pyarrow as pa

from paimon_ops.compact.model import (
    CONCAT,
    EVOLUTION,
    LSM,
    MERGE,
    REWRITE,
    ROWTRACK,
    SORT,
    InputFile,
    meta_from_json,
    meta_to_json,
)
from paimon_ops.compact.rolling import RollingWriter, WriteParams
from paimon_ops.errors import InvalidArgumentError, MissingFileError
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.datafile import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.format.deletion_vectors import DeletionVector, read_dv
from paimon_ops.runner import check_cancelled
from paimon_ops.table.reader import iter_file_batches
from paimon_ops.table.scan import LiveFile, TableScanner
from paimon_ops.table.table import Table

log = logging.getLogger(__name__)

LEVEL = "_LEVEL"
MAX_BATCH_ROWS = 65536
MIN_BATCH_ROWS = 256
# Rough expansion of on-disk (compressed) bytes to Arrow bytes, and of a merge slice while it is sorted,
# merged and written; used only to size batches from a memory budget.
_INFLATE = 4
_WORKING_COPIES = 4


class _Ctx:
    """Per-task state on the executor: the table, a scanner for paths, and a DV loader with a tiny cache."""

    def __init__(self, table_location: str, task: dict[str, Any]):
        self.table = Table(table_location, options_override=task.get("_options"))
        from paimon_ops.table.external import allowed_roots
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
        from paimon_ops.table.writer import FileNamer
        self.token: str = str(uuid.UUID(task["file_uuid"])) if task.get("file_uuid") else str(uuid.uuid4())
        self.data_namer = FileNamer(self.table.options.data_file_prefix, "." + self.params.fmt)
        self.data_namer.uuid = self.token
        self.changelog_namer = FileNamer(self.table.options.str("changelog-file.prefix", "changelog-") or "changelog-",
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
                    from paimon_ops.errors import CancelledError
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
        from paimon_ops.lifecycle.deleter import remove_written
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


def _files(task: dict[str, Any]) -> list[InputFile]:
    return [InputFile(**f) for f in task["files"]]


# ---------------------------------------------------------------------------------------------- PK merge

def _run_batches(ctx: _Ctx, run: list[InputFile], batch_rows: int) -> Iterator[pa.Table]:
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


def _sorted_runs(ctx: _Ctx, files: list[InputFile]) -> list[list[InputFile]]:
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


def _key_at(cols: list[pa.Array], i: int) -> tuple:
    return tuple(c[i].as_py() for c in cols)


def _count_le(cols: list[pa.Array], n: int, cutoff: tuple) -> int:
    """How many leading rows of a key-sorted run have a key <= `cutoff`: a binary search over Python scalars
    (primary keys are never null; str/bytes/int/decimal/date/time order as Paimon's key comparator does)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) // 2
        if _key_at(cols, mid) <= cutoff:
            lo = mid + 1
        else:
            hi = mid
    return lo


def merge_slices(ctx: _Ctx, files: list[InputFile], keys: list[str], stats: dict[str, int]) -> Iterator[pa.Table]:
    """All records of `files` (DVs applied) in key-range slices: every record of a key is in the same slice.

    Each sorted run is read in batches; the cutoff is the smallest last key over the runs' current batches, and
    every buffered record with key <= cutoff forms the next slice. Runs are sorted, so the cut in each buffer is
    found by binary search and taken as zero-copy slices."""
    runs = _sorted_runs(ctx, files)
    batch_rows = ctx.batch_rows(files, len(runs))
    iters = [_run_batches(ctx, run, batch_rows) for run in runs]
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
        cutoff = min(_key_at(key_cols[i], buffers[i].num_rows - 1) for i in active)  # type: ignore[union-attr]
        parts = []
        for i in active:
            buf = buffers[i]
            assert buf is not None
            n = _count_le(key_cols[i], buf.num_rows, cutoff)
            if n:
                parts.append(buf.slice(0, n))
            if n == buf.num_rows:
                buffers[i] = None
            else:
                buffers[i] = buf.slice(n)
                key_cols[i] = [c.slice(n) for c in key_cols[i]]
        stats["slices"] = stats.get("slices", 0) + 1
        yield pa.concat_tables(parts, promote_options="none") if len(parts) > 1 else parts[0]


def _merge_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    """Legacy MERGE task (plans made before LSM tasks): every file of a bucket merged into one output level."""
    from paimon_ops.merge import MergeSpec, merge_records

    table, task = ctx.table, ctx.task
    spec = MergeSpec.from_schema(table.schema, table.options, f"table {table.identifier}")
    keys = list(spec.key_fields)
    writer = ctx.writer(int(task["output_level"]))
    drop_delete = bool(task["drop_delete"])
    lookup_rewrite = bool(task.get("lookup_rewrite"))
    stats: dict[str, int] = {"rows_read": 0, "slices": 0}
    for records in merge_slices(ctx, files, keys, stats):
        merged = merge_records(records, spec, drop_delete, lookup_rewrite=lookup_rewrite)
        if merged.num_rows:
            writer.write(merged.select(table.schema.field_names + [SEQUENCE_NUMBER, VALUE_KIND]))
    writer.close()
    log.info("merged %d files (%d rows) into %d rows in %d slices", len(files), stats["rows_read"],
             writer.rows_written, stats["slices"])
    return stats


# ---------------------------------------------------------------------------------------------- single files

def _file_rows_with_seq(ctx: _Ctx, f: InputFile, batch_rows: int) -> Iterator[pa.Table]:
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


def _rewrite_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    """Each file alone: drop deleted rows, same level, same sequence numbers (maintenance.md §5.6 (c))."""
    out_level = ctx.task.get("output_level")
    rows = 0
    for f in files:
        w = ctx.writer(f.level if out_level is None else int(out_level))
        for t in _file_rows_with_seq(ctx, f, ctx.batch_rows([f], 1)):
            rows += t.num_rows
            w.write(t)
        w.close()
    return {"rows_read": rows}


def _concat_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    """Append compaction (maintenance.md §7.1): rows in task order, fresh consecutive sequence numbers."""
    w = ctx.writer(0)
    next_seq = min(meta_from_json(f.meta).min_sequence_number for f in files)
    rows = 0
    for f in files:
        for t in _file_rows_with_seq(ctx, f, ctx.batch_rows([f], 1)):
            n = t.num_rows
            t = t.set_column(t.schema.get_field_index(SEQUENCE_NUMBER), pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                             pa.array(np.arange(next_seq, next_seq + n, dtype=np.int64)))
            next_seq += n
            rows += n
            w.write(t)
    w.close()
    return {"rows_read": rows}


def _sort_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    """Sort compaction of one partition (maintenance.md §7.3): all live rows, ordered by the sort key."""
    from paimon_ops.compact.sort import sort_indices

    task = ctx.task
    parts = [t for f in files for t in _file_rows_with_seq(ctx, f, MAX_BATCH_ROWS)]
    w = ctx.writer(0)
    if parts:
        data = pa.concat_tables(parts).drop_columns([SEQUENCE_NUMBER])
        idx = sort_indices(data, list(task["order_by"]), task.get("strategy") or "order",
                           ctx.table.options.positive_int("zorder.var-length-contribution", 8))
        data = data.take(idx)
        start = min(meta_from_json(f.meta).min_sequence_number for f in files)
        data = data.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                                  pa.array(np.arange(start, start + data.num_rows, dtype=np.int64)))
        step = max(1, ctx.batch_rows(files, 1))
        for off in range(0, data.num_rows, step):
            w.write(data.slice(off, step))
    w.close()
    return {"rows_read": sum(p.num_rows for p in parts)}


def _lsm_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    from paimon_ops.compact.lsm import run_lsm
    return run_lsm(ctx, files)


def _rowtrack_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    from paimon_ops.compact.rowtrack import rowtrack_task
    return rowtrack_task(ctx, files)


def _evolution_task(ctx: _Ctx, files: list[InputFile]) -> dict[str, Any]:
    from paimon_ops.compact.rowtrack import evolution_task
    return evolution_task(ctx, files)


_KINDS = {MERGE: _merge_task, REWRITE: _rewrite_task, CONCAT: _concat_task, SORT: _sort_task, LSM: _lsm_task,
          ROWTRACK: _rowtrack_task, EVOLUTION: _evolution_task}


def run_compaction_task(table_location: str, task: dict[str, Any]) -> dict[str, Any]:
    """Executor entry point (see paimon_ops.runner): rewrite the task's files, return the new files' metadata."""
    started = time.time()
    kind = task.get("kind")
    if kind not in _KINDS:
        raise InvalidArgumentError(f"unknown compaction task kind {kind!r}")
    ctx = _Ctx(table_location, task)
    files = _files(task)
    try:
        stats = _KINDS[kind](ctx, files)
    except BaseException:
        ctx.abort()
        raise
    metas = [m for w in ctx.writers for m in w.files]
    changelog = [m for w in ctx.changelog_writers for m in w.files]
    return {
        "task": task.get("task_id"),
        "files": [meta_to_json(m) for m in metas],
        "changelog": [meta_to_json(m) for m in changelog],
        "paths": [p for w in ctx.writers + ctx.changelog_writers for p in w.paths] + list(ctx.extra_paths),
        "rows_out": sum(m.row_count for m in metas),
        "bytes_out": sum(m.file_size for m in metas),
        "seconds": round(time.time() - started, 3),
        "pid": os.getpid(),  # which process ran it (executors are other processes on Spark)
        **stats,
    }


__all__ = ["run_compaction_task"]
