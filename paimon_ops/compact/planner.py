"""Compaction planners: read table state only (snapshot, manifests, index manifest, options) and decide which
files of which bucket to rewrite, and why (maintenance.md §5.6, §5.10, §7.1, §7.3).

Modes:
* ``full``        PK: every bucket not already fully compacted -> one merge to the max level (§5.6); a bucket whose
                  files are all at the max level only rewrites its files that have deletion vectors.
                  Append: every bucket with more than one file (or with DVs) -> one concatenation.
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
from typing import Any, Mapping, Sequence

from paimon_ops.compact.filters import PartitionPredicate, partition_predicate
from paimon_ops.compact.model import (
    COMPACTION_COMMIT,
    COMPACTION_TASKS,
    CONCAT,
    MERGE,
    REWRITE,
    SORT,
    CompactionPlan,
    CompactionTask,
    InputFile,
    InputsLive,
    index_entry_to_json,
    meta_to_json,
)
from paimon_ops.compact.rolling import WriteParams
from paimon_ops.compact.sort import STRATEGIES
from paimon_ops.errors import InvalidArgumentError, UnsafeOperationError, UnsupportedError, arg
from paimon_ops.options import parse_duration
from paimon_ops.plan import DATA, FileAction, PlanBuilder
from paimon_ops.table.scan import DELETION_VECTORS, LiveFile, ScanResult, TableScanner
from paimon_ops.table.table import Table
from paimon_ops.table.writer import DataFileWriteSpec, local_now_as_utc_millis

log = logging.getLogger(__name__)

MODES = ("full", "dv-ratio", "small-files", "sort")
DEFAULT_DV_RATIO = 0.2
LONG_MAX = 9223372036854775807
DEFAULT_ROW_GROUP_BYTES = 128 << 20


@dataclass(frozen=True)
class _FileInfo:
    file: LiveFile
    input: InputFile
    deleted: int          # DV cardinality (0 without DV)

    @property
    def ratio(self) -> float:
        return self.deleted / self.file.meta.row_count if self.file.meta.row_count else 0.0


def open_table(table: Table | str) -> Table:
    return table if isinstance(table, Table) else Table(str(table))


def dv_ratio_threshold(table: Table, threshold: float | None) -> float:
    if threshold is not None:
        t = float(threshold)
    else:
        opts = table.options
        t = opts.float("compaction.dv-ratio-threshold")
        if t is None:
            t = opts.float("compaction.delete-ratio-threshold", DEFAULT_DV_RATIO)
    if not 0.0 <= t <= 1.0:
        raise InvalidArgumentError(f"{arg('threshold')} must be within [0, 1], got {t}")
    return t  # type: ignore[return-value]


def _file_infos(scanner: TableScanner, result: ScanResult, files: list[LiveFile]) -> list[_FileInfo]:
    out = []
    for f in files:
        hit = result.dv_of(f)
        deleted = 0
        dv_path = offset = length = None
        if hit is not None:
            ie, r = hit
            dv_path, offset, length = scanner.index_file_path(ie), r.offset, r.length
            # _CARDINALITY (1.0+) when present; 0.9 index manifests lack it: decode the vector (index file only).
            deleted = r.cardinality if r.cardinality is not None else scanner.deletion_vector(ie, r).cardinality
        m = f.meta
        out.append(_FileInfo(f, InputFile(m.file_name, f.path, m.level, m.row_count, m.file_size,
                                          deleted if hit else None, dv_path, offset, length, meta_to_json(m)),
                             deleted))
    return out


def _partition_dict(scanner: TableScanner, partition: bytes) -> dict[str, Any]:
    keys = scanner.table.schema.partition_keys
    return dict(zip(keys, scanner.partition_values(partition))) if keys else {}


def _spec_text(d: dict[str, Any]) -> dict[str, str]:
    return {k: ("null" if v is None else str(v)) for k, v in d.items()}


def plan_compaction(
    table: Table | str,
    mode: str = "full",
    partitions: Sequence[Mapping[str, Any] | str] | Mapping[str, Any] | None = None,
    where: str | PartitionPredicate | None = None,
    order_by: Sequence[str] | str | None = None,
    strategy: str = "order",
    threshold: float | None = None,
    partition_idle_time: timedelta | str | None = None,
    min_files: int | None = None,
    buckets: Sequence[int] | None = None,
    memory_budget: int | None = None,
    force: bool = False,
    now_millis: int | None = None,
) -> CompactionPlan:
    """Plan a compaction (reads metadata only). See the module docstring for the modes."""
    table = open_table(table)
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown compaction {arg('mode')} {mode!r}; use one of {', '.join(MODES)}")
    opts = table.options
    if opts.write_only and not force:
        raise UnsafeOperationError(
            f"{table.identifier} has write-only=true: its writers never compact, which means a dedicated compaction "
            f"job is declared for it elsewhere; two compactors on one bucket conflict. Pass {arg('force', True)} to "
            "compact anyway.")
    pk = table.is_primary_key
    schema = table.schema
    warnings: list[str] = []
    if pk:
        from paimon_ops.merge import MergeSpec
        spec = MergeSpec.from_schema(schema, opts, f"table {table.identifier}")  # validates engines / aggregates
        needs_lookup = spec.needs_lookup
        if opts.changelog_producer in ("lookup", "full-compaction"):
            warnings.append(f"changelog-producer={opts.changelog_producer}: this compaction writes no changelog "
                            "files, so streaming readers of the changelog will not see the changes it folds")
    else:
        needs_lookup = False
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
    elif mode == "small-files" and pk:
        raise UnsupportedError(f"small-files compaction is for append tables; use {arg('mode', 'full')} for primary-key "
                               "tables")
    order_by = tuple(order_by or ())

    if memory_budget is None:  # our option, like Paimon's dotted names; the argument wins
        memory_budget = opts.memory("compaction.memory-budget")
    if memory_budget is not None and memory_budget <= 0:
        raise InvalidArgumentError(f"{arg('memory_budget')} must be positive, got {memory_budget}")
    snapshot = table.snapshots.latest()
    if snapshot is None:
        return dataclasses.replace(PlanBuilder().build(CompactionPlan, table, {"reason": "table has no snapshot"},
                                                       base_snapshot=None, warnings=warnings), mode=mode)
    scanner = TableScanner(table)
    result = scanner.scan(snapshot)

    ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
    pred = partition_predicate(list(schema.partition_keys), ptypes, opts.partition_default_name, partitions, where)
    by_bucket = result.buckets()
    pdicts = {p: _partition_dict(scanner, p) for p in {p for p, _ in by_bucket}}
    skipped: dict[str, int] = {}

    def skip(why: str) -> None:
        skipped[why] = skipped.get(why, 0) + 1

    selected: dict[tuple[bytes, int], list[LiveFile]] = {}
    idle_ms = None
    if partition_idle_time is not None:
        td = partition_idle_time if isinstance(partition_idle_time, timedelta) else \
            parse_duration(str(partition_idle_time), "partition_idle_time")
        idle_ms = int(td.total_seconds() * 1000)
    now = now_millis if now_millis is not None else local_now_as_utc_millis()
    newest: dict[bytes, int] = {}
    for (p, _), fs in by_bucket.items():
        newest[p] = max([newest.get(p, 0)] + [f.meta.creation_time or 0 for f in fs])
    for (p, b), fs in sorted(by_bucket.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        if pred is not None and not pred(pdicts[p]):
            skip("partition filtered out")
            continue
        if b == -2:  # postpone-bucket files are not yet assigned to buckets nor sorted: Paimon's own job owns them
            skip("postpone bucket (bucket = -2)")
            continue
        if buckets is not None and b not in buckets:
            skip("bucket filtered out")
            continue
        if idle_ms is not None and now - newest[p] < idle_ms:
            skip("partition written within partition_idle_time")
            continue
        selected[(p, b)] = fs

    tasks: list[CompactionTask] = []
    thr = dv_ratio_threshold(table, threshold)
    num_levels = max([opts.num_levels] + [f.level + 1 for f in result.files])
    max_level = num_levels - 1
    target = opts.target_file_size(pk)
    small_ratio = opts.float("compaction.small-file-ratio", 0.7)
    min_file_num = min_files if min_files is not None else opts.positive_int("compaction.min.file-num", 5)
    open_cost = opts.memory("split.open-file-cost", 4 << 20)
    force_all = opts.bool("compaction.force-rewrite-all-files")
    ratios_files: list[dict[str, Any]] = []
    ratios_buckets: list[dict[str, Any]] = []

    def task(kind: str, p: bytes, b: int, infos: list[_FileInfo], why: str, **kw: Any) -> None:
        tasks.append(CompactionTask(kind, p.hex(), _spec_text(pdicts[p]), b, infos[0].file.total_buckets,
                                    tuple(i.input for i in infos), why, **kw))

    for (p, b), fs in selected.items():
        infos = _file_infos(scanner, result, fs)
        with_dv = [i for i in infos if i.input.has_dv]
        if mode == "dv-ratio" or with_dv:
            for i in infos:
                ratios_files.append({"partition": _spec_text(pdicts[p]), "bucket": b, "file": i.file.name,
                                     "level": i.file.level, "rows": i.file.meta.row_count, "deleted": i.deleted,
                                     "ratio": round(i.ratio, 6)})
            rows = sum(i.file.meta.row_count for i in infos)
            deleted = sum(i.deleted for i in infos)
            ratios_buckets.append({"partition": _spec_text(pdicts[p]), "bucket": b, "files": len(infos), "rows": rows,
                                   "deleted": deleted, "ratio": round(deleted / rows, 6) if rows else 0.0})
        if mode == "full" and pk:
            if all(i.file.level == max_level for i in infos):
                todo = infos if force_all else with_dv
                if not todo:
                    skip("already fully compacted")
                    continue
                task(REWRITE, p, b, todo, "max-level files with deletion vectors", output_level=None)
            else:
                levels = sorted({i.file.level for i in infos})
                has_l0 = levels[0] == 0
                task(MERGE, p, b, infos, f"full compaction of levels {levels} into level {max_level}",
                     output_level=max_level, drop_delete=True, lookup_rewrite=needs_lookup and has_l0)
        elif mode == "full":
            if len(infos) < 2 and not with_dv:
                skip("already fully compacted")
                continue
            infos.sort(key=lambda i: i.file.meta.min_sequence_number)
            task(CONCAT, p, b, infos, f"full compaction of {len(infos)} files")
        elif mode == "dv-ratio":
            todo = [i for i in infos if i.input.has_dv and i.deleted > 0 and (i.ratio > thr or i.ratio >= 1.0)]
            if not todo:
                skip("no file above the dv-ratio threshold")
                continue
            why = f"deleted-row ratio above {thr}: " + ", ".join(f"{i.file.name}={i.ratio:.3f}" for i in todo)
            if pk:
                task(REWRITE, p, b, todo, why, output_level=None)
            else:
                todo.sort(key=lambda i: i.file.meta.min_sequence_number)
                task(CONCAT, p, b, todo, why)
        elif mode == "small-files":
            for group, why in _bin_pack(infos, target, small_ratio, min_file_num, open_cost, thr):
                task(CONCAT, p, b, group, why)
        elif mode == "sort":
            infos.sort(key=lambda i: i.file.meta.min_sequence_number)
            task(SORT, p, b, infos, f"{strategy} sort by {list(order_by)}", order_by=order_by, strategy=strategy)

    if not tasks:
        skip_total = sum(skipped.values())
        log.info("compaction of %s: nothing to do (%d buckets skipped)", table.identifier, skip_total)
    wspec = DataFileWriteSpec.of(table, scanner)
    target_rows = opts.positive_int("target-file-row-num", LONG_MAX)
    # A file can only roll at a row-group boundary: keep row groups (Arrow bytes, ~2-4x the compressed size)
    # near the target size, and within a quarter of the memory budget.
    row_group = min(DEFAULT_ROW_GROUP_BYTES, max(64 << 10, 2 * target))
    if memory_budget:
        row_group = max(64 << 10, min(row_group, memory_budget // 4))
    params = {"write": WriteParams(wspec.fmt, wspec.dense_stats, wspec.legacy_key_stats, target, target_rows,
                                   row_group).to_json(),
              "memory_budget": memory_budget}
    touched = {(bytes.fromhex(t.partition), t.bucket) for t in tasks}
    index_entries = tuple(index_entry_to_json(ie) for ie in result.index_entries
                          if ie.index_type == DELETION_VECTORS and (ie.partition, ie.bucket) in touched)
    pb = PlanBuilder()
    pb.step(f"rewrite ({len(tasks)} task(s))", COMPACTION_TASKS)
    for t in tasks:
        pb.add_all(FileAction(f.path, DATA, f"compacted: {t.why}", f.file_size) for f in t.files)
        pb.creates(FileAction(scanner.bucket_dir(bytes.fromhex(t.partition), t.bucket), DATA,
                             f"new files ({t.kind}, {t.rows_in} rows in"
                             + (f", level {t.output_level})" if t.output_level is not None else ")")))
    pb.step("commit", COMPACTION_COMMIT, keep_empty=bool(tasks))
    if tasks:
        pb.require(InputsLive(tuple((t.partition, t.bucket, f.name) for t in tasks for f in t.files),
                             tuple(d["file_name"] for d in index_entries)))
    details: dict[str, Any] = {
        "tasks": len(tasks), "buckets": len(touched), "files_in": sum(len(t.files) for t in tasks),
        "rows_in": sum(t.rows_in for t in tasks), "bytes_in": sum(t.bytes_in for t in tasks),
        "skipped": skipped, "max_level": max_level if pk else None,
    }
    if mode == "dv-ratio" or ratios_files:
        details["dv_ratio_threshold"] = thr
        details["dv_ratios"] = {"files": ratios_files, "buckets": ratios_buckets}
    return dataclasses.replace(pb.build(CompactionPlan, table, details, base_snapshot=snapshot.id, warnings=warnings),
                               mode=mode, tasks=tuple(tasks), params=params, index_entries=index_entries)


def _bin_pack(infos: list[_FileInfo], target: int, small_ratio: float, min_files: int, open_cost: int,
              dv_threshold: float) -> list[tuple[list[_FileInfo], str]]:
    """Append bin-pack (AppendCompactCoordinator, maintenance.md §7.1)."""
    limit = target * small_ratio
    cands = [i for i in infos if i.file.meta.file_size < limit or (i.input.has_dv and i.ratio > dv_threshold)]
    cands.sort(key=lambda i: i.file.meta.file_size)
    out: list[tuple[list[_FileInfo], str]] = []
    bin_: list[_FileInfo] = []
    weight = 0
    for i in cands:
        bin_.append(i)
        weight += i.file.meta.file_size + open_cost
        if len(bin_) > 1 and weight >= 2 * target:
            out.append((bin_, f"{len(bin_)} small files, {weight} bytes >= 2 x target"))
            bin_, weight = [], 0
    if bin_ and (len(bin_) >= min_files or any(i.input.has_dv for i in bin_)):
        why = f"{len(bin_)} small files (>= min {min_files})" if len(bin_) >= min_files else "files with deletion vectors"
        out.append((bin_, why))
    for group, _ in out:
        group.sort(key=lambda i: i.file.meta.min_sequence_number)
    return out


__all__ = ["plan_compaction", "MODES", "dv_ratio_threshold", "open_table"]
