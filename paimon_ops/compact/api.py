"""Compaction entry points: plan → execute (tasks on a runner) → commit (one COMPACT snapshot) → report.

Failure rules: a failed task, a failed commit or a conflict leaves nothing referenced — every data and index
file this run wrote is deleted again and no snapshot is created. On a conflict (our input files were compacted
or deleted, or a bucket's deletion vectors changed since the plan) the run aborts, or re-plans on the new
latest snapshot when `max_replans` allows.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping, Sequence

from paimon_ops.compact.dv import DvChanges, rewrite_dv_indexes
from paimon_ops.compact.model import CompactionPlan, FILE_SOURCE_COMPACT, index_entry_from_json, meta_from_json
from paimon_ops.compact.planner import open_table, plan_compaction
from paimon_ops.errors import CommitConflictError, PaimonOpsError
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.plan import DATA, INDEX, FileAction, Report
from paimon_ops.runner import LocalRunner, Progress, Runner
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.scan import DELETION_VECTORS, TableScanner
from paimon_ops.table.table import Table

log = logging.getLogger(__name__)

TASK_FUNCTION = "paimon_ops.compact.rewrite.run_compaction_task"


class CompactionTaskError(PaimonOpsError):
    """A compaction task failed on an executor; nothing was committed and its output was removed."""


@dataclass
class ExecutionResult:
    plan: CompactionPlan
    results: list[dict]

    @property
    def written_paths(self) -> list[str]:
        return [p for r in self.results for p in r.get("paths", [])]


def _delete_paths(table: Table, paths: Sequence[str]) -> None:
    for p in paths:
        try:
            table.io.delete_file(p)
        except OSError as e:  # an unreferenced leftover is an orphan, never a correctness problem
            log.warning("could not delete %s: %s", p, e)


def execute_plan(table: Table | str, plan: CompactionPlan, runner: Runner | None = None,
                 progress: Progress | None = None) -> ExecutionResult:
    """Run every task; if any fails, delete what the others wrote and raise."""
    table = open_table(table)
    runner = runner or LocalRunner()
    tasks = [dict(t.to_task(plan.params), task_id=i) for i, t in enumerate(plan.tasks)]
    results = runner.run(TASK_FUNCTION, table.location, tasks, progress, options=table.io.task_options())
    failed = [(plan.tasks[i], r) for i, r in enumerate(results) if not r.get("ok")]
    if failed:
        _delete_paths(table, [p for r in results if r.get("ok") for p in r.get("paths", [])])
        t, r = failed[0]
        raise CompactionTaskError(
            f"compaction of {table.identifier} failed in {len(failed)} of {len(tasks)} task(s); nothing was committed "
            f"and the files written were removed. First failure (partition {t.partition_spec}, bucket {t.bucket}): "
            f"{r.get('error')}")
    return ExecutionResult(plan, results)


def commit_compaction(table: Table | str, executed: ExecutionResult, commit_user: str | None = None,
                      ) -> tuple[Snapshot | None, DvChanges]:
    """One COMPACT snapshot: DELETE every input exactly as it was added, ADD every output, replace DV indexes.
    On any failure every file of this run (data and index) is deleted and the error propagates."""
    table = open_table(table)
    plan = executed.plan
    scanner = TableScanner(table)
    deletes: list[ManifestEntry] = []
    adds: list[ManifestEntry] = []
    removed: set[tuple[bytes, str]] = set()
    for t, r in zip(plan.tasks, executed.results):
        part = bytes.fromhex(t.partition)
        for f in t.files:
            deletes.append(ManifestEntry(FileKind.DELETE, part, t.bucket, t.total_buckets, meta_from_json(f.meta)))
            removed.add((part, f.name))
        for m in r["files"]:
            meta = meta_from_json(m)
            if meta.file_source != FILE_SOURCE_COMPACT or meta.level < 0:
                raise PaimonOpsError(f"task for bucket {t.bucket} returned an invalid file {meta.file_name}")
            adds.append(ManifestEntry(FileKind.ADD, part, t.bucket, t.total_buckets, meta))
    index_entries = [index_entry_from_json(d) for d in plan.index_entries]
    dv = DvChanges()
    try:
        dv = rewrite_dv_indexes(table, scanner, index_entries, removed)
        changes = CommitChanges(data=tuple(deletes + adds), index_added=tuple(dv.added), index_deleted=tuple(dv.deleted))
        if changes.is_empty:
            return None, dv
        committer = FileStoreCommit(table, commit_user=commit_user)
        snap = committer.commit(changes, "COMPACT", plan.base_snapshot)
        return snap, dv
    except BaseException:
        _delete_paths(table, executed.written_paths + dv.written_paths)
        raise


def compact(
    table: Table | str,
    mode: str = "full",
    partitions: Sequence[Mapping[str, Any] | str] | Mapping[str, Any] | None = None,
    where: Any = None,
    order_by: Sequence[str] | str | None = None,
    strategy: str = "order",
    threshold: float | None = None,
    partition_idle_time: timedelta | str | None = None,
    min_files: int | None = None,
    buckets: Sequence[int] | None = None,
    dry_run: bool = False,
    runner: Runner | None = None,
    progress: Progress | None = None,
    memory_budget: int | None = None,
    force: bool = False,
    max_replans: int = 0,
    commit_user: str | None = None,
    now_millis: int | None = None,
) -> Report:
    """Plan, execute and commit a compaction; returns what was done (see `plan_compaction` for the modes)."""
    table = open_table(table)
    started = time.time()
    replans = 0
    while True:
        plan = plan_compaction(table, mode, partitions=partitions, where=where, order_by=order_by, strategy=strategy,
                               threshold=threshold, partition_idle_time=partition_idle_time, min_files=min_files,
                               buckets=buckets, memory_budget=memory_budget, force=force, now_millis=now_millis)
        if dry_run or not plan.tasks:
            return _report(table, plan, None, None, None, started, dry_run, replans)
        executed = execute_plan(table, plan, runner, progress)
        try:
            snap, dv = commit_compaction(table, executed, commit_user)
        except CommitConflictError as e:
            if replans >= max_replans:
                log.warning("compaction of %s aborted: %s", table.identifier, e)
                raise
            replans += 1
            log.info("compaction of %s conflicted (%s); re-planning (%d/%d)", table.identifier, e.detail, replans,
                     max_replans)
            continue
        return _report(table, plan, executed, snap, dv, started, False, replans)


def _report(table: Table, plan: CompactionPlan, executed: ExecutionResult | None, snap: Snapshot | None,
            dv: DvChanges | None, started: float, dry_run: bool, replans: int) -> Report:
    files_in = [f for t in plan.tasks for f in t.files]
    details: dict[str, Any] = {
        "mode": plan.mode, "base_snapshot": plan.base_snapshot, "tasks": len(plan.tasks),
        "buckets": len({(t.partition, t.bucket) for t in plan.tasks}),
        "files_in": len(files_in), "bytes_in": sum(f.file_size for f in files_in),
        "rows_in": sum(f.row_count for f in files_in), "replans": replans,
    }
    files: list[FileAction] = [FileAction(f.path, DATA, "compacted away", f.file_size) for f in files_in]
    written: dict[str, int] = {}
    written_bytes: dict[str, int] = {}
    if executed is not None:
        outs = [m for r in executed.results for m in r["files"]]
        details["live_rows_in"] = sum(int(r.get("rows_read", 0)) for r in executed.results)
        details["rows_out"] = sum(m["row_count"] for m in outs)
        details["files_out"] = len(outs)
        details["bytes_out"] = sum(m["file_size"] for m in outs)
        details["task_pids"] = sorted({int(r["pid"]) for r in executed.results if "pid" in r})
        details["merge_slices"] = sum(int(r.get("slices", 0)) for r in executed.results)
        details["task_seconds"] = round(sum(float(r.get("seconds", 0)) for r in executed.results), 3)
        written = {DATA: len(outs)}
        written_bytes = {DATA: details["bytes_out"]}
        paths = [p for r in executed.results for p in r.get("paths", [])]
        sizes = [m["file_size"] for r in executed.results for m in r["files"]]
        files += [FileAction(p, DATA, "written by compaction", s) for p, s in zip(paths, sizes)]
    if dv is not None:
        details["dv_index_files_replaced"] = len(dv.deleted)
        details["dv_index_files_written"] = len(dv.added)
        details["deletion_vectors_dropped"] = dv.dropped_vectors
        if dv.added:
            written[INDEX] = len(dv.added)
            written_bytes[INDEX] = sum(ie.file_size for ie in dv.added)
    if plan.details.get("dv_ratios") is not None:
        details["dv_ratio_threshold"] = plan.details.get("dv_ratio_threshold")
    return Report(
        operation="compact", table=table.identifier, dry_run=dry_run, duration_s=round(time.time() - started, 3),
        deleted={DATA: len(files_in)} if files_in else {},
        deleted_bytes={DATA: details["bytes_in"]} if files_in else {},
        written=written, written_bytes=written_bytes, snapshot_id=snap.id if snap else None, details=details,
        files=tuple(files), warnings=plan.warnings)


__all__ = ["compact", "plan_compaction", "execute_plan", "commit_compaction", "CompactionTaskError",
           "ExecutionResult", "TASK_FUNCTION"]
