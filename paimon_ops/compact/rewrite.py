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
from typing import Any

import numpy as np
import pyarrow as pa

from paimon_ops.compact.lsm import run_lsm
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
from paimon_ops.compact.rowtrack import evolution_task, rowtrack_task
from paimon_ops.compact.sort import sort_indices
from paimon_ops.compact.task_context import MAX_BATCH_ROWS, TaskContext, file_rows_with_seq, merge_slices, task_files
from paimon_ops.errors import InvalidArgumentError
from paimon_ops.format.datafile import SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.options import ZORDER_VAR_LENGTH_CONTRIBUTION

log = logging.getLogger(__name__)

def _merge_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    """Legacy MERGE task (plans made before LSM tasks): every file of a bucket merged into one output level."""

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


def _rewrite_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    """Each file alone: drop deleted rows, same level, same sequence numbers (maintenance.md §5.6 (c))."""
    out_level = ctx.task.get("output_level")
    rows = 0
    for f in files:
        w = ctx.writer(f.level if out_level is None else int(out_level))
        for t in file_rows_with_seq(ctx, f, ctx.batch_rows([f], 1)):
            rows += t.num_rows
            w.write(t)
        w.close()
    return {"rows_read": rows}


def _concat_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    """Append compaction (maintenance.md §7.1): rows in task order, fresh consecutive sequence numbers."""
    w = ctx.writer(0)
    next_seq = min(meta_from_json(f.meta).min_sequence_number for f in files)
    rows = 0
    for f in files:
        for t in file_rows_with_seq(ctx, f, ctx.batch_rows([f], 1)):
            n = t.num_rows
            t = t.set_column(t.schema.get_field_index(SEQUENCE_NUMBER), pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                             pa.array(np.arange(next_seq, next_seq + n, dtype=np.int64)))
            next_seq += n
            rows += n
            w.write(t)
    w.close()
    return {"rows_read": rows}


def _sort_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    """Sort compaction of one partition (maintenance.md §7.3): all live rows, ordered by the sort key."""

    task = ctx.task
    parts = [t for f in files for t in file_rows_with_seq(ctx, f, MAX_BATCH_ROWS)]
    w = ctx.writer(0)
    if parts:
        data = pa.concat_tables(parts).drop_columns([SEQUENCE_NUMBER])
        idx = sort_indices(data, list(task["order_by"]), task.get("strategy") or "order",
                           ctx.table.options.get(ZORDER_VAR_LENGTH_CONTRIBUTION))
        data = data.take(idx)
        start = min(meta_from_json(f.meta).min_sequence_number for f in files)
        data = data.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                                  pa.array(np.arange(start, start + data.num_rows, dtype=np.int64)))
        step = max(1, ctx.batch_rows(files, 1))
        for off in range(0, data.num_rows, step):
            w.write(data.slice(off, step))
    w.close()
    return {"rows_read": sum(p.num_rows for p in parts)}


def _lsm_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    return run_lsm(ctx, files)


def _rowtrack_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    return rowtrack_task(ctx, files)


def _evolution_task(ctx: TaskContext, files: list[InputFile]) -> dict[str, Any]:
    return evolution_task(ctx, files)


_KINDS = {MERGE: _merge_task, REWRITE: _rewrite_task, CONCAT: _concat_task, SORT: _sort_task, LSM: _lsm_task,
          ROWTRACK: _rowtrack_task, EVOLUTION: _evolution_task}


def run_compaction_task(table_location: str, task: dict[str, Any]) -> dict[str, Any]:
    """Executor entry point (see paimon_ops.execution.tasks): rewrite the task's files, return the new files' metadata."""
    started = time.time()
    kind = task.get("kind")
    if kind not in _KINDS:
        raise InvalidArgumentError(f"unknown compaction task kind {kind!r}")
    ctx = TaskContext(table_location, task)
    files = task_files(task)
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
