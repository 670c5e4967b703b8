"""Compaction planners: read table state only (snapshot, manifests, index manifest, options) and decide which
files of which bucket to rewrite, and why (maintenance.md §5.6, §5.10, §7.1, §7.3).

Modes:
* ``full``        PK: every bucket not already fully compacted -> everything to the max level (§5.6), as Paimon's
                  MergeTreeCompactTask does it: overlapping sections and small files are merged, large files alone
                  in their key range are only upgraded; a bucket whose files are all at the max level only rewrites
                  its files that have deletion vectors, one by one.
                  Append: every bucket with more than one file (or with DVs) -> one concatenation.
* ``minor``       PK: per bucket, what Paimon's own compaction trigger would pick (universal compaction, plus
                  ForceUpLevel0 for lookup tables; §5.3, §5.4): sections, upgrades, rewrites, lookups above the
                  output level that mark deletion vectors, changelog (see compact.levels / compact.lsm).
* ``dv-ratio``    files whose deleted-row ratio exceeds the threshold are rewritten without their deleted rows
                  (PK: same level, same sequence numbers; append: concatenated per bucket).
* ``small-files`` append bin-pack (§7.1).
* ``sort``        append, unaware-bucket only: each partition sorted by order / zorder / hilbert (§7.3).
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import paimon_ops.compact.rowtrack as rowtrack
import paimon_ops.features as features
from paimon_ops.compact.buckets import (
    FileInfo,
    LsmPlanner,
    bin_pack,
    dv_ratio_threshold,
    file_infos,
    open_table,
    task_params,
)
from paimon_ops.compact.dv import supports_cardinality
from paimon_ops.compact.filters import partition_predicate
from paimon_ops.compact.model import (
    COMPACTION_COMMIT,
    COMPACTION_TASKS,
    CONCAT,
    LSM,
    METADATA_UPGRADES,
    REWRITE,
    SORT,
    CompactionPlan,
    CompactionTask,
    InputsLive,
    index_entry_to_json,
)
from paimon_ops.compact.postpone import POSTPONE_BUCKET, PostponeCompactionPlan, plan_postpone_compaction
from paimon_ops.compact.sort import STRATEGIES
from paimon_ops.errors import InvalidArgumentError, UnsupportedError, arg
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import DATA, FileAction, PlanBuilder, planner
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.operations.compact import MODE_NAMES
from paimon_ops.operations.model import InstantMs, Partitions
from paimon_ops.options import (
    COMPACTION_FORCE_REWRITE_ALL_FILES,
    COMPACTION_MEMORY_BUDGET,
    COMPACTION_MIN_FILE_NUM,
    COMPACTION_SMALL_FILE_RATIO,
    FORCE_LOOKUP,
    SOURCE_SPLIT_OPEN_FILE_COST,
    parse_duration,
)
from paimon_ops.table.scan import DELETION_VECTORS, LiveFile, ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import local_now_as_utc_millis

log = logging.getLogger(__name__)

MODES = MODE_NAMES  # (declared with their feature gates by the operation)
def _resolve_now(params: dict[str, Any]) -> None:
    """The planner's clock is local wall time as UTC millis (like _CREATION_TIME); recorded in the plan."""
    if params.get("now") is None:
        params["now"] = local_now_as_utc_millis()


def _partition_dict(scanner: TableScanner, partition: bytes) -> dict[str, Any]:
    keys = scanner.table.schema.partition_keys
    return dict(zip(keys, scanner.partition_values(partition))) if keys else {}


def _spec_text(d: dict[str, Any]) -> dict[str, str]:
    return {k: ("null" if v is None else str(v)) for k, v in d.items()}


def _number(value: Any, name: str, integer: bool) -> Any:
    """A numeric argument as given in Python or as text; anything else is refused naming the argument."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return int(value) if integer else float(value)
        except ValueError:
            raise InvalidArgumentError(f"{arg(name)} {value!r}: expected {'an integer' if integer else 'a number'}")\
                from None
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        raise InvalidArgumentError(f"{arg(name)} must be {'an integer' if integer else 'a number'}, got "
                                   f"{type(value).__name__}")
    return value


@planner(CompactionPlan, resolve=_resolve_now, renamed={"now_millis": "now"})
def plan_compaction(
    table: FileStoreTable | str,
    *,
    mode: str = "full",
    partitions: Partitions | None = None,
    where: str | None = None,
    order_by: list[str] | None = None,
    strategy: str = "order",
    threshold: float | None = None,
    buckets: list[int] | None = None,
    partition_idle_time: timedelta | None = None,
    min_files: int | None = None,
    memory_budget: int | None = None,
    force: bool = False,
    now: InstantMs | None = None,
) -> CompactionPlan | PostponeCompactionPlan:
    """Plan a compaction (reads metadata only). See the module docstring for the modes. On a postpone-bucket table
    whose selected partitions hold rows waiting in bucket-postpone, the postpone compaction (`_postpone_first`).

    In order: the arguments are checked and the feature gate asked (options, metadata) before anything is scanned;
    the latest snapshot is scanned and gated again on what its files say; the buckets are selected (`_select`); each
    selected bucket becomes tasks by the mode (`_Tasks`); the plan lists the tasks' inputs and the commit."""
    del force  # write-only=true declares that a dedicated compaction job maintains the table: paimon-ops is that job
    table = open_table(table)
    threshold = _number(threshold, "threshold", integer=False)
    min_files = _number(min_files, "min_files", integer=True)
    memory_budget = _memory_budget(table, _number(memory_budget, "memory_budget", integer=True))
    if buckets is not None and (not isinstance(buckets, (list, tuple, set, frozenset))
                                or not all(type(b) is int for b in buckets)):
        raise InvalidArgumentError(f"{arg('buckets')} must be a list of bucket numbers, got {buckets!r}")
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown compaction {arg('mode')} {mode!r}; use one of {', '.join(MODES)}")
    pb = PlanBuilder()
    pb.gate(table, CompactionPlan.operation, mode)  # options + the latest snapshot's metadata, before any scan
    spec = _check_mode(table, mode, order_by, strategy, partition_idle_time)
    row_tracking = rowtrack.enabled(table)
    if row_tracking:
        rowtrack.check_mode(table, mode)
    warnings: list[str] = []
    snapshot = table.snapshots.latest()
    if snapshot is None:
        return dataclasses.replace(pb.build(CompactionPlan, table, {"reason": "table has no snapshot"},
                                            base_snapshot=None, warnings=warnings), mode=mode)
    scanner = TableScanner(table)
    result = scanner.scan(snapshot)
    file_uses = features.file_uses(result)
    pb.gate(table, CompactionPlan.operation, mode, file_uses)  # what the files say, whatever the options claim
    if not row_tracking:
        rowtrack.check_files_without_option(table, file_uses)

    sel = _select(table, scanner, result, partitions, where, buckets, partition_idle_time,
                  now if now is not None else local_now_as_utc_millis())
    if sel.postpone_waiting:
        return _postpone_first(table, mode, partitions, where, buckets, partition_idle_time, memory_budget)
    tasks = _Tasks(table, mode, spec, scanner, result, sel, threshold, min_files, tuple(order_by or ()), strategy,
                   row_tracking, now, warnings)
    for (p, b), fs in sel.buckets.items():
        tasks.bucket(p, b, fs)
    if not tasks.tasks:
        log.info("compaction of %s: nothing to do (%d buckets skipped)", table.identifier, sum(sel.skipped.values()))
    return _compaction_plan(pb, table, snapshot, scanner, result, mode, tasks, memory_budget, warnings)


def _memory_budget(table: FileStoreTable, given: int | None) -> int | None:
    """The bytes a task may hold: the argument, else `compaction.memory-budget` (ours, dotted like Paimon's)."""
    budget = table.options.get(COMPACTION_MEMORY_BUDGET) if given is None else given
    if budget is not None and budget <= 0:
        raise InvalidArgumentError(f"{arg('memory_budget')} must be positive, got {budget}")
    return budget


def _check_mode(table: FileStoreTable, mode: str, order_by: list[str] | None, strategy: str,
                partition_idle_time: timedelta | None) -> Any:
    """Refuse a mode the table cannot have, and sort arguments outside sort compaction; the merge spec of a
    primary-key table (engines and aggregates validated), else None."""
    opts, schema, pk = table.options, table.schema, table.is_primary_key
    spec = None
    if pk:
        spec = MergeSpec.from_schema(schema, opts, f"table {table.identifier}")  # validates engines / aggregates
        _check_supported(table, mode, spec)
    if mode == "sort":
        if pk or opts.bucket != -1:
            raise UnsupportedError(f"sort compaction is only for unaware-bucket append tables (bucket = -1, no primary "
                                   f"key); {table.identifier} has bucket={opts.bucket}"
                                   + (f" and primary key {list(schema.primary_keys)}" if pk else ""))
        if isinstance(order_by, str):
            order_by = [c.strip() for c in order_by.split(",") if c.strip()]
        if not order_by:
            raise InvalidArgumentError(f"sort compaction needs {arg('order_by')} columns")
        bad = [c for c in order_by if c in schema.partition_keys]
        if bad:
            raise InvalidArgumentError(f"{arg('order_by')} must not contain partition columns {bad}")
        unknown = [c for c in order_by if c not in schema.field_names]
        if unknown:
            raise InvalidArgumentError(f"{arg('order_by')} columns {unknown} do not exist in {table.identifier}")
        if strategy not in STRATEGIES:
            raise InvalidArgumentError(f"unknown sort {arg('strategy')} {strategy!r}; use one of {', '.join(STRATEGIES)}")
        if partition_idle_time is not None:
            raise InvalidArgumentError(f"{arg('partition_idle_time')} cannot be combined with sort compaction (as in Paimon)")
    elif order_by:
        raise InvalidArgumentError(f"{arg('order_by')} orders rows only in {arg('mode', 'sort')} compaction; "
                                   f"{arg('mode', mode)} keeps the table's own order (primary key, or the order "
                                   "rows were written in) — drop it, or use sort")
    elif mode == "small-files" and pk:
        raise UnsupportedError(f"small-files compaction is for append tables; use {arg('mode', 'minor')} or "
                               f"{arg('mode', 'full')} for primary-key tables")
    elif mode == "minor" and not pk:
        raise UnsupportedError(f"minor compaction is Paimon's LSM compaction of primary-key tables; {table.identifier} "
                               f"is an append table: use {arg('mode', 'small-files')} or {arg('mode', 'full')}")
    return spec


@dataclass
class _Selection:
    """The buckets a compaction looks at: (partition, bucket) -> live files, what was skipped and why, the partitions'
    values; `postpone_waiting`: rows wait in bucket-postpone of a selected partition."""

    buckets: dict[tuple[bytes, int], list[LiveFile]]
    skipped: dict[str, int]
    partitions: dict[bytes, dict[str, Any]]
    postpone_waiting: bool = False

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


def _select(table: FileStoreTable, scanner: TableScanner, result: ScanResult, partitions: Partitions | None,
            where: str | None, buckets: list[int] | None, partition_idle_time: timedelta | None,
            now: int) -> _Selection:
    """The buckets of the latest snapshot the arguments select (partitions / where, buckets, partition_idle_time);
    a partition still in buckets of another count than the table's is refused (that is rescaling)."""
    schema, opts = table.schema, table.options
    ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
    pred = partition_predicate(list(schema.partition_keys), ptypes, opts.partition_default_name, partitions, where)
    by_bucket = result.buckets()
    pdicts = {p: _partition_dict(scanner, p) for p in {p for p, _ in by_bucket}}
    sel = _Selection({}, {}, pdicts)
    if any(b == POSTPONE_BUCKET and (pred is None or pred(pdicts[p])) for p, b in by_bucket):
        sel.postpone_waiting = True
        return sel
    bucket_option = _bucket_option(table)
    idle_ms = None
    if partition_idle_time is not None:
        td = partition_idle_time if isinstance(partition_idle_time, timedelta) else\
            parse_duration(str(partition_idle_time), "partition_idle_time")
        idle_ms = int(td.total_seconds() * 1000)
    newest: dict[bytes, int] = {}
    for (p, _), fs in by_bucket.items():
        newest[p] = max([newest.get(p, 0)] + [f.meta.creation_time or 0 for f in fs])
    for (p, b), fs in sorted(by_bucket.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if pred is not None and not pred(pdicts[p]):
            sel.skip("partition filtered out")
            continue
        if buckets is not None and b not in buckets:
            sel.skip("bucket filtered out")
            continue
        if idle_ms is not None and now - newest[p] < idle_ms:
            sel.skip("partition written within partition_idle_time")
            continue
        stale = [f for f in fs if f.total_buckets > 0 and bucket_option > 0 and f.total_buckets != bucket_option]
        if stale:
            raise UnsupportedError(
                f"{table.identifier}: partition {_spec_text(pdicts[p]) or '(none)'} sits in {stale[0].total_buckets} "
                f"buckets but the table's bucket option is now {bucket_option}: compacting it would commit files "
                "into buckets of the old count. Rescaling is its own operation (Paimon's rescale procedure or INSERT "
                "OVERWRITE); compact other partitions with --partition")
        sel.buckets[(p, b)] = fs
    return sel


class _Tasks:
    """The tasks of one compaction, bucket by bucket, by its mode: Paimon's LSM pick or full unit (primary-key tables,
    `LsmPlanner`), row-id preserving rewrites (row tracking, `rowtrack.Planner`), concatenation (append full), rewrites
    without deleted rows (dv-ratio), the bin-pack (small-files), sorting (sort); and the deletion-vector ratios seen."""

    def __init__(self, table: FileStoreTable, mode: str, spec: Any, scanner: TableScanner, result: ScanResult,
                 sel: _Selection, threshold: float | None, min_files: int | None, sort_columns: tuple[str, ...],
                 strategy: str, row_tracking: bool, now: int | None, warnings: list[str]) -> None:
        opts = table.options
        self.table, self.mode, self.scanner, self.result, self.sel = table, mode, scanner, result, sel
        self.pk = table.is_primary_key
        self.sort_columns, self.strategy = sort_columns, strategy
        self.tasks: list[CompactionTask] = []
        self.threshold = dv_ratio_threshold(table, threshold)
        self.max_level = max([opts.num_levels] + [f.level + 1 for f in result.files]) - 1
        self.target = opts.target_file_size(self.pk)
        self.small_ratio = opts.get(COMPACTION_SMALL_FILE_RATIO)
        self.min_file_num = min_files if min_files is not None else opts.get(COMPACTION_MIN_FILE_NUM)
        self.open_cost = opts.get(SOURCE_SPLIT_OPEN_FILE_COST)
        self.ratios_files: list[dict[str, Any]] = []
        self.ratios_buckets: list[dict[str, Any]] = []
        self.lsm = LsmPlanner(table, spec, result, scanner, opts.get(COMPACTION_FORCE_REWRITE_ALL_FILES), self.target,
                              self.small_ratio, now if now is not None else local_now_as_utc_millis())\
            if self.pk and mode in ("full", "minor") else None
        self.rowtrack = rowtrack.Planner(table, self.target, self.small_ratio, self.min_file_num, self.open_cost,
                                         warnings) if row_tracking else None

    def task(self, kind: str, p: bytes, b: int, infos: list[FileInfo], why: str, **kw: Any) -> None:
        self.tasks.append(CompactionTask(kind, p.hex(), _spec_text(self.sel.partitions[p]), b,
                                         infos[0].file.total_buckets, tuple(i.input for i in infos), why, **kw))

    def bucket(self, p: bytes, b: int, fs: list[LiveFile]) -> None:
        infos = file_infos(self.scanner, self.result, fs)
        with_dv = [i for i in infos if i.input.has_dv]
        mode, skip = self.mode, self.sel.skip
        if mode == "dv-ratio" or with_dv:
            self._ratios(p, b, infos)
        if self.lsm is not None:
            self.lsm.bucket(p, b, infos, mode, self.task, skip)
        elif self.rowtrack is not None:
            self.rowtrack.bucket(p, b, infos, mode, self.task, skip)
        elif mode == "full":
            if len(infos) < 2 and not with_dv:
                skip("already fully compacted")
                return
            infos.sort(key=lambda i: i.file.meta.min_sequence_number)
            self.task(CONCAT, p, b, infos, f"full compaction of {len(infos)} files")
        elif mode == "dv-ratio":
            thr = self.threshold
            todo = [i for i in infos if i.input.has_dv and i.deleted > 0 and (i.ratio > thr or i.ratio >= 1.0)]
            if not todo:
                skip("no file above the dv-ratio threshold")
                return
            why = f"deleted-row ratio above {thr}: " + ", ".join(f"{i.file.name}={i.ratio:.3f}" for i in todo)
            if self.pk:
                self.task(REWRITE, p, b, todo, why, output_level=None)
            else:
                todo.sort(key=lambda i: i.file.meta.min_sequence_number)
                self.task(CONCAT, p, b, todo, why)
        elif mode == "small-files":
            for group, why in bin_pack(infos, self.target, self.small_ratio, self.min_file_num, self.open_cost,
                                       self.threshold):
                self.task(CONCAT, p, b, group, why)
        elif mode == "sort":
            infos.sort(key=lambda i: i.file.meta.min_sequence_number)
            self.task(SORT, p, b, infos, f"{self.strategy} sort by {list(self.sort_columns)}",
                      order_by=self.sort_columns, strategy=self.strategy)

    def _ratios(self, p: bytes, b: int, infos: list[FileInfo]) -> None:
        part = self.scanner.partition_json(p)
        for i in infos:
            self.ratios_files.append({"partition": part, "bucket": b, "file": i.file.name, "level": i.file.level,
                                      "rows": i.file.meta.row_count, "deleted": i.deleted, "ratio": round(i.ratio, 6)})
        rows = sum(i.file.meta.row_count for i in infos)
        deleted = sum(i.deleted for i in infos)
        self.ratios_buckets.append({"partition": part, "bucket": b, "files": len(infos), "rows": rows,
                                    "deleted": deleted, "ratio": round(deleted / rows, 6) if rows else 0.0})


def _compaction_plan(pb: PlanBuilder, table: FileStoreTable, snapshot: Snapshot, scanner: TableScanner,
                     result: ScanResult, mode: str, t: _Tasks, memory_budget: int | None,
                     warnings: list[str]) -> CompactionPlan:
    """The plan of the tasks: their inputs (what the commit takes out of the table) and outputs, metadata-only level
    upgrades, the commit and the inputs it requires to be still live; the figures a person reads."""
    tasks = t.tasks
    params = task_params(table, scanner, memory_budget)
    if any(task.kind == LSM for task in tasks):
        params["dv_cardinality"] = supports_cardinality(scanner)
    touched = {(bytes.fromhex(task.partition), task.bucket) for task in tasks}
    index_entries = tuple(index_entry_to_json(ie) for ie in result.index_entries
                          if ie.index_type == DELETION_VECTORS and (ie.partition, ie.bucket) in touched)
    plan_pending(pb, table)  # first finish what an interrupted run left (its written, uncommitted files)
    pb.step(f"rewrite ({len(tasks)} task(s))", COMPACTION_TASKS)
    for task in tasks:
        gone, _ = task.effects()
        pb.add_all(FileAction(f.path, DATA, f"compacted: {task.why}", f.file_size) for f in gone)
        pb.creates(FileAction(scanner.bucket_dir(bytes.fromhex(task.partition), task.bucket), DATA,
                              f"new files ({task.kind}, {task.rows_in} rows in"
                              + (f", level {task.output_level})" if task.output_level is not None else ")")))
    upgrades = [(task, f) for task in tasks for f in task.effects()[1]]
    pb.step("metadata-only level upgrades", METADATA_UPGRADES)
    pb.add_all(FileAction(f.path, DATA, f"level {f.level} -> {task.output_level}, same file ({task.why})", f.file_size)
               for task, f in upgrades)
    pb.step("commit", COMPACTION_COMMIT, keep_empty=bool(tasks))
    if tasks:
        pb.require(InputsLive(tuple(sorted({(task.partition, task.bucket, f.name, f.level) for task in tasks
                                            for f in task.files + task.lookup_files})),
                              tuple(d["file_name"] for d in index_entries)))
    details: dict[str, Any] = {
        "tasks": len(tasks), "buckets": len(touched), "files_in": sum(len(task.files) for task in tasks),
        "rows_in": sum(task.rows_in for task in tasks), "bytes_in": sum(task.bytes_in for task in tasks),
        "skipped": t.sel.skipped, "max_level": t.max_level if t.pk else None,
    }
    if t.lsm is not None:
        details["files_upgraded"] = len(upgrades)
        details["lookup_files"] = sum(len(task.lookup_files) for task in tasks)
        if t.lsm.units:
            details["units"] = t.lsm.units
    if mode == "dv-ratio" or t.ratios_files:
        details["dv_ratio_threshold"] = t.threshold
        details["dv_ratios"] = {"files": t.ratios_files, "buckets": t.ratios_buckets}
    return dataclasses.replace(pb.build(CompactionPlan, table, details, base_snapshot=snapshot.id, warnings=warnings),
                               mode=mode, tasks=tuple(tasks), params=params, index_entries=index_entries)


def _postpone_first(table: FileStoreTable, mode: str, partitions: Partitions | None, where: str | None,
                    buckets: list[int] | None, partition_idle_time: timedelta | None,
                    memory_budget: int | None) -> PostponeCompactionPlan:
    """Compaction of a postpone-bucket table whose selected partitions hold rows waiting in bucket-postpone: what
    Java's compact procedure does there — the postpone compaction (compact/postpone.py), which moves the waiting rows
    into real buckets and compacts every bucket it fills and every real bucket holding level-0 files. The mode's own
    compaction of the real buckets is the next run's, once no row waits."""
    plan = plan_postpone_compaction(table, partitions=partitions, where=where, memory_budget=memory_budget)
    notes = [f"{table.identifier} is a postpone-bucket table with rows waiting in bucket-postpone: compaction moves "
             "them into real buckets first (the postpone compaction, as Java's compact procedure does)"
             + (f"; compact again for {mode} compaction of the real buckets" if mode in ("full", "dv-ratio") else "")]
    ignored = [name for name, value in (("buckets", buckets), ("partition_idle_time", partition_idle_time))
               if value is not None]
    if ignored:
        notes.append(f"{' and '.join(arg(n) for n in ignored)} do not apply to the postpone compaction: it moves every "
                     "waiting row of the selected partitions")
    for note in notes:
        log.info("%s", note)
    return dataclasses.replace(plan, warnings=tuple(notes) + tuple(plan.warnings))


def _bucket_option(table: FileStoreTable) -> int:
    """The `bucket` option, refused when it is no bucket count Paimon accepts (0, below -2), naming the option."""
    return table.options.bucket


def _check_supported(table: FileStoreTable, mode: str, spec: Any) -> None:
    """Refuse what this engine cannot do exactly as Java would (never warn and proceed: a missing changelog is data
    loss for streaming consumers)."""
    opts = table.options
    producer = opts.changelog_producer
    ident = table.identifier
    if producer == "full-compaction" and opts.deletion_vectors_enabled:
        raise UnsupportedError(f"{ident}: changelog-producer=full-compaction with deletion-vectors.enabled=true is "
                               "rejected by Paimon itself (deletion vectors need none, input or lookup)")
    if producer == "full-compaction" and mode == "minor" and (spec.engine == "first-row" or
                                                              opts.get(FORCE_LOOKUP)):
        raise UnsupportedError(
            f"{ident}: minor compaction of a changelog-producer=full-compaction table with "
            f"{'merge-engine=first-row' if spec.engine == 'first-row' else 'force-lookup=true'} is not supported: "
            "Java compacts such tables below the max level without lookups, which loses first-row's "
            "de-duplication / lookup merge semantics; use mode='full'")


__all__ = ["plan_compaction", "MODES"]
