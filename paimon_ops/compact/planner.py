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
import functools
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.compact import levels as lv
from paimon_ops.compact.filters import PartitionPredicate, partition_predicate
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
    InputFile,
    InputsLive,
    index_entry_to_json,
    meta_to_json,
)
from paimon_ops.compact.rolling import WriteParams
from paimon_ops.compact.sort import STRATEGIES
from paimon_ops.errors import InvalidArgumentError, UnsupportedError, arg
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import DATA, FileAction, PlanBuilder, planner
from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.operations.compact import MODE_NAMES
from paimon_ops.options import (
    COMPACTION_DV_RATIO_THRESHOLD,
    COMPACTION_FORCE_REWRITE_ALL_FILES,
    COMPACTION_FORCE_UP_LEVEL_0,
    COMPACTION_INCREMENTAL_SIZE_THRESHOLD,
    COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT,
    COMPACTION_MEMORY_BUDGET,
    COMPACTION_MIN_FILE_NUM,
    COMPACTION_OFFPEAK_END_HOUR,
    COMPACTION_OFFPEAK_RATIO,
    COMPACTION_OFFPEAK_START_HOUR,
    COMPACTION_OPTIMIZATION_INTERVAL,
    COMPACTION_SIZE_RATIO,
    COMPACTION_SMALL_FILE_RATIO,
    COMPACTION_TOTAL_SIZE_THRESHOLD,
    FORCE_LOOKUP,
    LOOKUP_COMPACT,
    LOOKUP_COMPACT_MAX_INTERVAL,
    NUM_SORTED_RUN_COMPACTION_TRIGGER,
    SOURCE_SPLIT_OPEN_FILE_COST,
    TARGET_FILE_ROW_NUM,
    parse_duration,
)
from paimon_ops.table.scan import DELETION_VECTORS, LiveFile, ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import DataFileWriteSpec, local_now_as_utc_millis

log = logging.getLogger(__name__)

MODES = MODE_NAMES  # (declared with their feature gates by the operation)
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


def _resolve_now(params: dict[str, Any]) -> None:
    """The planner's clock is local wall time as UTC millis (like _CREATION_TIME); recorded in the plan."""
    if params.get("now_millis") is None:
        params["now_millis"] = local_now_as_utc_millis()


def open_table(table: FileStoreTable | str) -> FileStoreTable:
    return table if isinstance(table, FileStoreTable) else FileStoreTable(str(table))


def dv_ratio_threshold(table: FileStoreTable, threshold: float | None) -> float:
    if threshold is not None:
        t = float(threshold)
        if not 0.0 <= t <= 1.0:
            raise InvalidArgumentError(f"{arg('threshold')} must be within [0, 1], got {t}")
        return t
    return table.options.get(COMPACTION_DV_RATIO_THRESHOLD)


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


@planner("compact", resolve=_resolve_now)
def plan_compaction(
    table: FileStoreTable | str,
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
    threshold = _number(threshold, "threshold", integer=False)
    min_files = _number(min_files, "min_files", integer=True)
    memory_budget = _number(memory_budget, "memory_budget", integer=True)
    if buckets is not None and (not isinstance(buckets, (list, tuple, set, frozenset))
                                or not all(type(b) is int for b in buckets)):
        raise InvalidArgumentError(f"{arg('buckets')} must be a list of bucket numbers, got {buckets!r}")
    if mode not in MODES:
        raise InvalidArgumentError(f"unknown compaction {arg('mode')} {mode!r}; use one of {', '.join(MODES)}")
    from paimon_ops import features
    pb = PlanBuilder()
    pb.gate(table, CompactionPlan.operation, mode)  # options + the latest snapshot's metadata, before any scan
    opts = table.options
    # write-only=true declares that a dedicated compaction job maintains the table: paimon-ops is that job. A second
    # compactor on the same bucket cannot lose data either: its commit conflicts and is aborted or re-planned.
    del force
    pk = table.is_primary_key
    schema = table.schema
    warnings: list[str] = []
    if pk:
        from paimon_ops.merge import MergeSpec
        spec = MergeSpec.from_schema(schema, opts, f"table {table.identifier}")  # validates engines / aggregates
        _check_supported(table, mode, spec)
    else:
        spec = None
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
    from paimon_ops.compact import rowtrack
    row_tracking = rowtrack.enabled(table)
    if row_tracking:
        rowtrack.check_mode(table, mode)
    order_by = tuple(order_by or ())

    if memory_budget is None:  # our option, like Paimon's dotted names; the argument wins
        memory_budget = opts.get(COMPACTION_MEMORY_BUDGET)
    if memory_budget is not None and memory_budget <= 0:
        raise InvalidArgumentError(f"{arg('memory_budget')} must be positive, got {memory_budget}")
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
    bucket_option = _bucket_option(table)

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
        td = partition_idle_time if isinstance(partition_idle_time, timedelta) else\
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
        if b == -2:  # rows not yet assigned to buckets: only postpone compaction moves them (compact/postpone.py)
            raise UnsupportedError(
                f"{table.identifier} is a postpone-bucket table (bucket = -2) with rows waiting in bucket-postpone "
                f"(partition {_spec_text(pdicts[p]) or 'of the table'}): compaction cannot make them visible; run "
                "postpone compaction (`paimon-ops compact-postpone`, maintenance.compact_postpone()); nothing was changed")
        if buckets is not None and b not in buckets:
            skip("bucket filtered out")
            continue
        if idle_ms is not None and now - newest[p] < idle_ms:
            skip("partition written within partition_idle_time")
            continue
        stale = [f for f in fs if f.total_buckets > 0 and bucket_option > 0 and f.total_buckets != bucket_option]
        if stale:
            raise UnsupportedError(
                f"{table.identifier}: partition {_spec_text(pdicts[p]) or '(none)'} sits in {stale[0].total_buckets} "
                f"buckets but the table's bucket option is now {bucket_option}: compacting it would commit files "
                "into buckets of the old count. Rescaling is its own operation (Paimon's rescale procedure or INSERT "
                "OVERWRITE); compact other partitions with --partition")
        selected[(p, b)] = fs

    tasks: list[CompactionTask] = []
    thr = dv_ratio_threshold(table, threshold)
    num_levels = max([opts.num_levels] + [f.level + 1 for f in result.files])
    max_level = num_levels - 1
    target = opts.target_file_size(pk)
    small_ratio = opts.get(COMPACTION_SMALL_FILE_RATIO)
    min_file_num = min_files if min_files is not None else opts.get(COMPACTION_MIN_FILE_NUM)
    open_cost = opts.get(SOURCE_SPLIT_OPEN_FILE_COST)
    force_all = opts.get(COMPACTION_FORCE_REWRITE_ALL_FILES)
    ratios_files: list[dict[str, Any]] = []
    ratios_buckets: list[dict[str, Any]] = []

    def task(kind: str, p: bytes, b: int, infos: list[_FileInfo], why: str, **kw: Any) -> None:
        tasks.append(CompactionTask(kind, p.hex(), _spec_text(pdicts[p]), b, infos[0].file.total_buckets,
                                    tuple(i.input for i in infos), why, **kw))

    lsm = _LsmPlanner(table, spec, result, scanner, force_all, target, small_ratio, now)\
        if pk and mode in ("full", "minor") else None
    rt = rowtrack.Planner(table, target, small_ratio, min_file_num, open_cost, warnings) if row_tracking else None

    for (p, b), fs in selected.items():
        infos = _file_infos(scanner, result, fs)
        with_dv = [i for i in infos if i.input.has_dv]
        if mode == "dv-ratio" or with_dv:
            for i in infos:
                ratios_files.append({"partition": scanner.partition_json(p), "bucket": b, "file": i.file.name,
                                     "level": i.file.level, "rows": i.file.meta.row_count, "deleted": i.deleted,
                                     "ratio": round(i.ratio, 6)})
            rows = sum(i.file.meta.row_count for i in infos)
            deleted = sum(i.deleted for i in infos)
            ratios_buckets.append({"partition": scanner.partition_json(p), "bucket": b, "files": len(infos), "rows": rows,
                                   "deleted": deleted, "ratio": round(deleted / rows, 6) if rows else 0.0})
        if lsm is not None:
            lsm.bucket(p, b, infos, mode, task, skip)
        elif rt is not None:
            rt.bucket(p, b, infos, mode, task, skip)
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
    params = task_params(table, scanner, memory_budget)
    if any(t.kind == LSM for t in tasks):
        from paimon_ops.compact.dv import supports_cardinality
        params["dv_cardinality"] = supports_cardinality(scanner)
    touched = {(bytes.fromhex(t.partition), t.bucket) for t in tasks}
    index_entries = tuple(index_entry_to_json(ie) for ie in result.index_entries
                          if ie.index_type == DELETION_VECTORS and (ie.partition, ie.bucket) in touched)
    plan_pending(pb, table)  # first finish what an interrupted run left (its written, uncommitted files)
    pb.step(f"rewrite ({len(tasks)} task(s))", COMPACTION_TASKS)
    for t in tasks:
        gone, upgraded = t.effects()
        pb.add_all(FileAction(f.path, DATA, f"compacted: {t.why}", f.file_size) for f in gone)
        pb.creates(FileAction(scanner.bucket_dir(bytes.fromhex(t.partition), t.bucket), DATA,
                              f"new files ({t.kind}, {t.rows_in} rows in"
                              + (f", level {t.output_level})" if t.output_level is not None else ")")))
    upgrades = [(t, f) for t in tasks for f in t.effects()[1]]
    pb.step("metadata-only level upgrades", METADATA_UPGRADES)
    pb.add_all(FileAction(f.path, DATA, f"level {f.level} -> {t.output_level}, same file ({t.why})", f.file_size)
               for t, f in upgrades)
    pb.step("commit", COMPACTION_COMMIT, keep_empty=bool(tasks))
    if tasks:
        pb.require(InputsLive(tuple(sorted({(t.partition, t.bucket, f.name, f.level) for t in tasks
                                            for f in t.files + t.lookup_files})),
                              tuple(d["file_name"] for d in index_entries)))
    details: dict[str, Any] = {
        "tasks": len(tasks), "buckets": len(touched), "files_in": sum(len(t.files) for t in tasks),
        "rows_in": sum(t.rows_in for t in tasks), "bytes_in": sum(t.bytes_in for t in tasks),
        "skipped": skipped, "max_level": max_level if pk else None,
    }
    if lsm is not None:
        details["files_upgraded"] = sum(len(t.effects()[1]) for t in tasks)
        details["lookup_files"] = sum(len(t.lookup_files) for t in tasks)
        if lsm.units:
            details["units"] = lsm.units
    if mode == "dv-ratio" or ratios_files:
        details["dv_ratio_threshold"] = thr
        details["dv_ratios"] = {"files": ratios_files, "buckets": ratios_buckets}
    return dataclasses.replace(pb.build(CompactionPlan, table, details, base_snapshot=snapshot.id, warnings=warnings),
                               mode=mode, tasks=tuple(tasks), params=params, index_entries=index_entries)


def task_params(table: FileStoreTable, scanner: TableScanner, memory_budget: int | None) -> dict[str, Any]:
    """What every rewrite task of a plan is given: how output files are written, the memory budget."""
    wspec = DataFileWriteSpec.of(table, scanner)
    target = table.options.target_file_size(table.is_primary_key)
    target_rows = table.options.get(TARGET_FILE_ROW_NUM)
    # A file can only roll at a row-group boundary: keep row groups (Arrow bytes, ~2-4x the compressed size)
    # near the target size, and within a quarter of the memory budget.
    row_group = min(DEFAULT_ROW_GROUP_BYTES, max(64 << 10, 2 * target))
    if memory_budget:
        row_group = max(64 << 10, min(row_group, memory_budget // 4))
    return {"write": WriteParams(wspec.fmt, wspec.dense_stats, wspec.legacy_key_stats, target, target_rows,
                                 row_group, wspec.thin).to_json(),
            "memory_budget": memory_budget}


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


class _LsmPlanner:
    """Per bucket: Paimon's pick (minor) or full unit, its sections and steps (compact.levels) -> one LSM task."""

    def __init__(self, table: FileStoreTable, spec: Any, result: ScanResult, scanner: TableScanner, force_all: bool,
                 target: int, small_ratio: float, now_ms: int):
        self.table = table
        self.spec = spec
        self.result = result
        self.scanner = scanner
        opts = table.options
        self.opts = opts
        self.key_types = [f.type for f in table.schema.fields_of(table.schema.trimmed_primary_keys)]
        self.dv = opts.deletion_vectors_enabled
        producer = opts.changelog_producer
        if producer == "full-compaction":
            kind = lv.FULL_CHANGELOG
        elif spec.needs_lookup:
            kind = lv.FIRST_ROW if spec.engine == "first-row" else lv.LOOKUP
        else:
            kind = lv.PLAIN
        produce = producer == "full-compaction" or (kind in (lv.LOOKUP, lv.FIRST_ROW) and producer == "lookup")
        self.rewriter = lv.RewriterSpec(kind, self.dv, produce,
                                        spec.engine == "deduplicate" and not spec.sequence_fields, force_all)
        # Lookups are needed for first-row's contains-check, for deletion vectors, and whenever the old record's
        # value matters (changelog, engines other than deduplicate, sequence fields): LookupLevels' processors.
        self.lookup_values = kind == lv.LOOKUP and (produce or spec.engine != "deduplicate"
                                                    or bool(spec.sequence_fields))
        self.lookups = kind == lv.FIRST_ROW or (kind == lv.LOOKUP and (self.dv or self.lookup_values))
        self.min_file_size = int(target * small_ratio)
        trigger = opts.get(NUM_SORTED_RUN_COMPACTION_TRIGGER)
        gentle = opts.get(LOOKUP_COMPACT) == "gentle"
        interval = None
        if gentle:
            iv = opts.get(LOOKUP_COMPACT_MAX_INTERVAL)
            interval = max(trigger, iv if iv is not None else 2 * trigger)
        hour = (now_ms // 3_600_000) % 24  # now_ms is local wall time as UTC millis: the local hour
        self.base_cfg: dict[str, Any] = dict(
            trigger=trigger,
            max_size_amp=opts.get(COMPACTION_MAX_SIZE_AMPLIFICATION_PERCENT),
            size_ratio=opts.get(COMPACTION_SIZE_RATIO),
            offpeak_ratio=lv.offpeak_ratio(opts.get(COMPACTION_OFFPEAK_START_HOUR), opts.get(COMPACTION_OFFPEAK_END_HOUR),
                                           opts.get(COMPACTION_OFFPEAK_RATIO), hour),
            force_up_level0=spec.needs_lookup or opts.get(COMPACTION_FORCE_UP_LEVEL_0),
            gentle_interval=interval if spec.needs_lookup else None,
            full_interval_ms=_ms(opts.get(COMPACTION_OPTIMIZATION_INTERVAL)),
            total_size_threshold=opts.get(COMPACTION_TOTAL_SIZE_THRESHOLD),
            incremental_size_threshold=opts.get(COMPACTION_INCREMENTAL_SIZE_THRESHOLD),
            now_ms=now_ms,
        )
        self.units: list[dict[str, Any]] = []
        self.retracts: dict[str, bool] = {}
        self.index_by_bucket: dict[tuple[bytes, int], list] = {}
        for ie in result.index_entries:
            if ie.index_type == DELETION_VECTORS:
                self.index_by_bucket.setdefault((ie.partition, ie.bucket), []).append(ie)

    def lsm_file(self, i: _FileInfo) -> lv.LsmFile:
        m = i.file.meta
        lo = tuple(deserialize_row(m.min_key, self.key_types, m.file_name))
        hi = tuple(deserialize_row(m.max_key, self.key_types, m.file_name))
        probe = functools.partial(self.has_retracts, i) if m.delete_row_count == 0 and m.level == 0 else None
        return lv.LsmFile(m.file_name, m.level, m.file_size, lo, hi, m.min_sequence_number, m.max_sequence_number,
                          m.creation_time or 0, m.delete_row_count, i.input.has_dv, probe)

    def has_retracts(self, i: _FileInfo) -> bool:
        """Whether the file holds DELETE / UPDATE_BEFORE records, read from its _VALUE_KIND column — asked only
        when its writer claims none (`_DELETE_ROW_COUNT = 0`) and that claim would let it be upgraded without a
        rewrite. Writers' statistics are not trusted where a wrong count loses data: pypaimon 2.1.0 writes 0 for
        level-0 files full of deletes, and Java 0.9 upgrades such a file to a deletion-vector table's upper level,
        where readers take its records raw and the deleted keys come back as rows of NULLs."""
        name = i.file.name
        if name not in self.retracts:
            from paimon_ops.format.datafile import VALUE_KIND
            from paimon_ops.table.reader import iter_file_batches
            found = False
            for batch in iter_file_batches(self.scanner, i.file, None):
                kinds = batch.column(batch.schema.get_field_index(VALUE_KIND))
                if pc.any(pc.is_in(kinds, pa.array([1, 3], kinds.type))).as_py():
                    found = True
                    break
            if found:
                log.info("%s claims no delete rows but holds DELETE / UPDATE_BEFORE records: rewritten, never "
                         "upgraded as it is", i.file.path)
            self.retracts[name] = found
        return self.retracts[name]

    def bucket(self, p: bytes, b: int, infos: list[_FileInfo], mode: str, task: Any, skip: Any) -> None:
        opts = self.opts
        files = [self.lsm_file(i) for i in infos]
        by_name = {i.file.name: i for i in infos}
        highest = max(f.level for f in files)
        cfg = lv.PickConfig(num_levels=max(opts.num_levels, highest + 1), **self.base_cfg)
        max_level = cfg.max_level
        runs = lv.sorted_runs(files)
        if mode == "full" and len(runs) == 1 and runs[0].level == max_level:
            # §5.6 (c): a fully compacted bucket rewrites the files that have deletion vectors, one by one.
            todo = infos if self.rewriter.force_rewrite_all else [i for i in infos if i.input.has_dv]
            if not todo:
                skip("already fully compacted")
                return
            task(REWRITE, p, b, todo, "max-level files with deletion vectors", output_level=None)
            return
        unit = lv.pick_full(runs, cfg) if mode == "full" else lv.pick_minor(runs, cfg)
        if unit is None:
            skip("already fully compacted" if mode == "full" else "nothing picked by Paimon's compaction rules")
            return
        dd = lv.drop_delete(unit.output_level, highest, self.dv)
        steps = lv.plan_steps(unit, max_level, dd, self.min_file_size, self.rewriter)
        if not steps:
            skip("nothing to rewrite or upgrade")
            return
        in_steps = [n for s in steps for n in s.files]
        lookup_files: tuple[InputFile, ...] = ()
        if self.lookups and any(s.merge == lv.LOOKUP_MERGE for s in steps):
            lookup_files = tuple(i.input for i in infos if i.file.level > unit.output_level)
        rewritten = sum(1 for s in steps if s.op == lv.REWRITE for _ in s.files)
        why = (f"{unit.reason}: {len(unit.files)} file(s) of levels {sorted({f.level for f in unit.files})} "
               f"-> level {unit.output_level}")
        self.units.append({"partition": self.scanner.partition_json(p), "bucket": b,
                           "output_level": unit.output_level, "reason": unit.reason, "files": len(unit.files),
                           "rewritten": rewritten, "drop_delete": dd})
        task(LSM, p, b, [by_name[n] for n in in_steps], why, output_level=unit.output_level, drop_delete=dd,
             steps=tuple(s.to_json() for s in steps), rewriter=self.rewriter.kind, max_level=max_level,
             lookup_files=lookup_files, lookup_values=self.lookup_values,
             dv_index=tuple(index_entry_to_json(ie) for ie in self.index_by_bucket.get((p, b), [])))



def _ms(td: timedelta | None) -> int | None:
    return None if td is None else int(td.total_seconds() * 1000)


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


__all__ = ["plan_compaction", "MODES", "dv_ratio_threshold", "open_table", "task_params"]
