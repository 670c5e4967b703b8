"""Postpone-bucket compaction (Paimon's `compact` on a `bucket = -2` table; Java 2.0: CompactAction
.buildForPostponeBucketCompaction, PostponeBucketCompactSplitSource, PostponeBucketCompactOperator, PostponeUtils).

Writers of a postpone-bucket table append rows to `bucket-postpone` unsorted and unmerged; no reader sees them until
a compaction moves them into real buckets. Per partition with postpone rows:

1. **Bucket count.** The partition's known count (the `_TOTAL_BUCKETS` of its real-bucket files; two different
   counts are corrupt metadata), else `ceil(postpone rows / postpone.target-row-num-per-bucket)` (at least 1) when
   that option is set, else `postpone.default-bucket-num` (default 1) — Paimon 2.0's order (apache/paimon#8434).
   (Paimon master since apache/paimon#9067 lets an explicitly set `postpone.default-bucket-num` win over the row-count estimate
   and estimates from `postpone.target-size-per-bucket` otherwise; we follow the released 2.0 rule.)
2. **Writer order.** Files are grouped by writer — the file-name prefix up to `-w-` (`data-…-u-<commit user>-s-<write
   id>-w-`) — and replayed per writer in creation-time order (ties: sequence numbers, then scan order), rows in file
   order. Different writers have no order among themselves (Java interleaves them as they arrive); we take them by
   their first creation time, then by prefix, so a rerun replays the same order. Each row gets a new sequence number:
   the target bucket's current maximum + 1 + the row's position in the partition's replay, so later rows win.
3. **Route and write** (tasks on the runner, `run_route_task`): each row's bucket is Paimon's bucket function of its
   bucket key (`bucket-key`, else the trimmed primary key; `bucket-function.type`) over the partition's count. Rows
   are buffered up to `write-buffer-size` (Java's write buffer), then per bucket sorted by key and merged by the
   table's merge engine and written as a level-0 sorted run into `bucket-N` (Java's MergeTreeWriter flush);
   `changelog-producer = input` also writes every routed record, in key order, as changelog.
4. **Compact** each bucket that received rows (and each real bucket of the partition holding level-0 files, as Java
   does) with Paimon's own trigger (the minor pick of compact.levels: universal compaction, ForceUpLevel0 for lookup
   and deletion-vector tables) on the compaction engine (compact.lsm): deletion vectors, lookup changelog.
5. **Commit** one COMPACT snapshot: the postpone files DELETEd, the new files ADDed with the partition's bucket count
   (files consumed by step 4 are never committed, and are removed), changelog and deletion-vector index changes.

Stale plans and concurrent writers: the plan requires its postpone inputs to be live and the real buckets of its
partitions (files and deletion vectors) to be exactly those planned; the commit checks both again against the
snapshot it commits on (a writer that appended to a real bucket meanwhile would share our sequence numbers). Rows
written to `bucket-postpone` meanwhile are left for the next run. A failure leaves nothing referenced: every file
this run wrote is deleted again.
"""
from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Mapping, Sequence

import numpy as np
import pyarrow as pa

from paimon_ops.compact.api import execute_plan
from paimon_ops.compact.buckets import LsmPlanner, file_infos, task_params
from paimon_ops.compact.dv import supports_cardinality
from paimon_ops.compact.filters import partition_predicate
from paimon_ops.compact.model import (
    FILE_SOURCE_COMPACT,
    CompactionPlan,
    CompactionTask,
    InputFile,
    index_entry_from_json,
    meta_from_json,
    meta_to_json,
)
from paimon_ops.compact.rolling import RollingWriter, WriteParams
from paimon_ops.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    CompactionTaskError,
    CorruptMetadataError,
    InvalidArgumentError,
    InvalidOptionError,
    PaimonOpsError,
    UnsupportedError,
    arg,
)
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.plan import (
    CHANGELOG,
    DATA,
    INDEX,
    FileAction,
    Plan,
    PlanBuilder,
    Precondition,
    Step,
    Workload,
    declare_step_action,
    planner,
)
from paimon_ops.format.binary_row import bucket_ids
from paimon_ops.format.datafile import KEY_PREFIX, SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.format.manifest import DataFileMeta, FileKind, ManifestEntry
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.operations.compact_postpone import OPERATION as COMPACT_POSTPONE
from paimon_ops.operations.model import Partitions
from paimon_ops.options import (
    BUCKET_FUNCTION_TYPE,
    BUCKET_KEY,
    COMPACTION_FORCE_REWRITE_ALL_FILES,
    COMPACTION_MEMORY_BUDGET,
    COMPACTION_SMALL_FILE_RATIO,
    POSTPONE_DEFAULT_BUCKET_NUM,
    POSTPONE_TARGET_ROW_NUM_PER_BUCKET,
    WRITE_BUFFER_SIZE,
)
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.reader import iter_file_batches
from paimon_ops.table.removal import remove_written
from paimon_ops.table.scan import LiveFile, ScanResult, TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import FileNamer

log = logging.getLogger(__name__)

POSTPONE_BUCKET = -2
ROUTE_FUNCTION = "paimon_ops.compact.postpone.run_route_task"
DEFAULT_WRITE_BUFFER = WRITE_BUFFER_SIZE.default
SEGMENT_BYTES = 256 << 20              # postpone input bytes per route task (a partition splits at file boundaries)
INT_MAX = 2147483647
LEVEL = "_LEVEL"
WRITER_MARK = "-w-"

POSTPONE_ROUTE = "postpone-route"
POSTPONE_COMMIT = "postpone-commit"
declare_step_action(POSTPONE_ROUTE, deletes=True, verb="would move into real buckets",
                    done="moved into real buckets (the postpone files stay on disk until snapshot expiry)", removal="moved")


# ---------------------------------------------------------------------------------------------- bucket counts
def writer_prefix(file_name: str) -> str:
    """The writer a postpone file comes from: its name up to and including the last `-w-`."""
    i = file_name.rfind(WRITER_MARK)
    if i < 0:
        raise UnsupportedError(f"postpone file {file_name} does not name its writer (no '{WRITER_MARK}' in the name, "
                               "as Paimon's postpone writers write it); its rows' order cannot be known")
    return file_name[:i + len(WRITER_MARK)]


def bucket_num_by_rows(rows: int, target: int) -> int:
    """ceil(rows / target), at least 1 (PostponeUtils.computeBucketNumByRowCount)."""
    if target <= 0:
        raise InvalidOptionError(POSTPONE_TARGET_ROW_NUM_PER_BUCKET.key, str(target), "an integer greater than 0")
    n = 1 if rows <= 0 else (rows - 1) // target + 1
    if n > INT_MAX:
        raise InvalidOptionError(POSTPONE_TARGET_ROW_NUM_PER_BUCKET.key, str(target),
                                 f"a larger value: {rows} rows would need {n} buckets (more than {INT_MAX})")
    return n


def known_bucket_counts(files: Sequence[LiveFile], where: str) -> dict[bytes, int]:
    """Per partition, the bucket count of its real-bucket files (PostponeUtils.getKnownNumBuckets)."""
    out: dict[bytes, int] = {}
    for f in files:
        if f.bucket < 0 or f.total_buckets <= 0:
            continue
        prev = out.setdefault(f.partition, f.total_buckets)
        if prev != f.total_buckets:
            raise CorruptMetadataError(where, f"a partition has real-bucket files of two bucket counts ({prev} and "
                                              f"{f.total_buckets}, e.g. {f.name})")
    return out


def resolve_bucket_count(table: FileStoreTable, partition: bytes, known: Mapping[bytes, int],
                         postpone_rows: int) -> tuple[int, str]:
    """(bucket count, why) for a partition, in Paimon 2.0's order (module docstring)."""
    if partition in known:
        return known[partition], "known: the partition's existing buckets"
    opts = table.options
    target = opts.get(POSTPONE_TARGET_ROW_NUM_PER_BUCKET)
    if target is not None:
        n = bucket_num_by_rows(postpone_rows, target)
        return n, f"ceil({postpone_rows} rows / {POSTPONE_TARGET_ROW_NUM_PER_BUCKET.key} {target})"
    n = opts.get(POSTPONE_DEFAULT_BUCKET_NUM)
    return n, f"{POSTPONE_DEFAULT_BUCKET_NUM.key} {n}" + ("" if opts.is_set(POSTPONE_DEFAULT_BUCKET_NUM) else " (default)")


def replay_order(files: Sequence[LiveFile]) -> list[LiveFile]:
    """Postpone files of one partition in replay order (module docstring, step 2)."""
    by_writer: dict[str, list[tuple[int, LiveFile]]] = {}
    for pos, f in enumerate(files):
        by_writer.setdefault(writer_prefix(f.name), []).append((pos, f))
    groups = []
    for prefix, fs in by_writer.items():
        fs.sort(key=lambda pf: (pf[1].meta.creation_time or 0, pf[1].meta.min_sequence_number, pf[0]))
        groups.append((fs[0][1].meta.creation_time or 0, prefix, [f for _, f in fs]))
    groups.sort(key=lambda g: (g[0], g[1]))
    return [f for _, _, fs in groups for f in fs]


def real_state_digest(scanner: TableScanner, live: Mapping[tuple, ManifestEntry], index_entries: Sequence[Any],
                      partition: bytes) -> str:
    """A digest of a partition's real buckets: live files (bucket, level, name) and their index files."""
    h = hashlib.sha1()
    for item in sorted((e.bucket, e.file.level, e.file.file_name) for e in live.values()
                       if e.partition == partition and e.bucket >= 0):
        h.update(repr(item).encode())
    h.update(b"|")
    for name in sorted(ie.file_name for ie in index_entries if ie.partition == partition and ie.bucket >= 0):
        h.update(name.encode())
    return h.hexdigest()


# ---------------------------------------------------------------------------------------------- plan data
@dataclass(frozen=True)
class RouteSegment:
    """One route task: consecutive postpone files of one partition in replay order."""

    partition: str                   # BinaryRow hex
    partition_spec: dict
    num_buckets: int
    files: tuple[InputFile, ...]
    row_offset: int                  # replay position of the segment's first row
    base_seq: tuple[int, ...]        # per target bucket: its first new sequence number

    @property
    def bytes_in(self) -> int:
        return sum(f.file_size for f in self.files)

    def to_task(self, params: Mapping[str, Any]) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["files"] = [dataclasses.asdict(f) for f in self.files]
        d["base_seq"] = list(self.base_seq)
        d.update(params)
        return d


@dataclass(frozen=True)
class PostponeInputsUnchanged(Precondition):
    """The postpone files to move are still live, and each partition's real buckets (files and index files) are
    exactly those planned on."""

    kind: ClassVar[str] = "postpone-inputs"
    files: tuple[tuple[str, str], ...]          # (partition hex, postpone file name)
    real_buckets: tuple[tuple[str, str], ...]   # (partition hex, real_state_digest)

    def check(self, table: Any) -> str | None:
        latest = table.snapshots.latest()
        if latest is None:
            return "the table has no snapshot any more"
        return postpone_state_changes(TableScanner(table), latest, self)

    def describe(self) -> str:
        return (f"{len(self.files)} postpone file(s) still live, the real buckets of {len(self.real_buckets)} "
                "partition(s) unchanged")


def postpone_state_changes(scanner: TableScanner, snapshot: Snapshot, cond: PostponeInputsUnchanged) -> str | None:
    live = scanner.live_entries(snapshot)
    names = {(e.partition.hex(), e.file.file_name) for e in live.values() if e.bucket == POSTPONE_BUCKET}
    gone = [n for p, n in cond.files if (p, n) not in names]
    if gone:
        more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
        return f"postpone file {gone[0]}{more} is no longer live: another job compacted or dropped it"
    index = scanner.index_entries(snapshot)
    for p, digest in cond.real_buckets:
        if real_state_digest(scanner, live, index, bytes.fromhex(p)) != digest:
            d = scanner.partition_dir(bytes.fromhex(p)).rstrip("/") or "the table"
            return (f"the real buckets of {d} changed (another writer or compaction committed to them); their "
                    "sequence numbers would clash with ours")
    return None


@dataclass(frozen=True)
class PostponeCompactionPlan(Plan):
    """Moving the rows of `bucket-postpone` into real buckets: route tasks, per-bucket compaction, one COMPACT
    commit (module docstring)."""

    operation: ClassVar[str] = "compact_postpone"
    op = COMPACT_POSTPONE  # its operation (the feature gate, the planner's parameters)

    segments: tuple[RouteSegment, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    # real buckets (partition hex, bucket) with level-0 files at plan time: compacted too, as Java does
    level0_buckets: tuple[tuple[str, int], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.segments and not self.level0_buckets

    def workload(self) -> Any:
        return Workload(tasks=len(self.segments), input_bytes=sum(s.bytes_in for s in self.segments))


# ---------------------------------------------------------------------------------------------- planning
def open_table(table: FileStoreTable | str) -> FileStoreTable:
    return table if isinstance(table, FileStoreTable) else FileStoreTable(str(table))


def check_postpone_table(table: FileStoreTable, what: str) -> None:
    if table.options.bucket != POSTPONE_BUCKET:
        raise UnsupportedError(f"{what} is for postpone-bucket tables (bucket = -2); {table.identifier} has "
                               f"bucket = {table.options.bucket}")
    if not table.is_primary_key:
        raise UnsupportedError(f"{table.identifier}: a postpone-bucket table needs a primary key")
    bad = [k for k in table.schema.bucket_keys if k not in table.schema.trimmed_primary_keys]
    if bad:
        raise InvalidOptionError(BUCKET_KEY.key, ",".join(table.schema.bucket_keys),
                                 "columns of the primary key (without partition columns)", table.options.where)


@planner(PostponeCompactionPlan)  # a saved plan is re-planned with its recorded arguments before it runs
def plan_postpone_compaction(table: FileStoreTable | str, *, partitions: Partitions | None = None,
                             where: str | None = None, memory_budget: int | None = None) -> PostponeCompactionPlan:
    """Plan moving every postpone row of the selected partitions into real buckets (reads metadata only)."""

    table = open_table(table)
    check_postpone_table(table, "postpone compaction")
    MergeSpec.from_schema(table.schema, table.options, f"table {table.identifier}")  # engines validated up front
    opts = table.options
    if memory_budget is None:
        memory_budget = opts.get(COMPACTION_MEMORY_BUDGET)
    if memory_budget is not None and memory_budget <= 0:
        raise InvalidArgumentError(f"{arg('memory_budget')} must be positive, got {memory_budget}")
    snapshot = table.snapshots.latest()
    if snapshot is None:
        return PlanBuilder().build(PostponeCompactionPlan, table, {"reason": "table has no snapshot"},
                                   base_snapshot=None)
    scanner = TableScanner(table)
    result = scanner.scan(snapshot)
    schema = table.schema
    ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
    pred = partition_predicate(list(schema.partition_keys), ptypes, opts.partition_default_name, partitions, where)

    def spec_of(p: bytes) -> dict[str, str]:
        values = scanner.partition_values(p) if schema.partition_keys else []
        return {k: ("null" if v is None else str(v)) for k, v in zip(schema.partition_keys, values)}

    def selected(p: bytes) -> bool:
        if pred is None:
            return True
        keys = schema.partition_keys
        return pred(dict(zip(keys, scanner.partition_values(p))) if keys else {})

    postpone: dict[bytes, list[LiveFile]] = {}
    level0: set[tuple[bytes, int]] = set()
    max_seq: dict[tuple[bytes, int], int] = {}
    for f in result.files:
        if not selected(f.partition):
            continue
        if f.bucket == POSTPONE_BUCKET:
            postpone.setdefault(f.partition, []).append(f)
        elif f.bucket >= 0:
            k = (f.partition, f.bucket)
            max_seq[k] = max(max_seq.get(k, -1), f.meta.max_sequence_number)
            if f.level == 0:
                level0.add(k)
    for ie in result.index_entries:
        if ie.bucket == POSTPONE_BUCKET and ie.partition in postpone:
            raise UnsupportedError(f"{table.identifier}: bucket-postpone of {scanner.partition_dir(ie.partition)} has "
                                   f"a {ie.index_type} index file ({ie.file_name}); postpone files with index files "
                                   "are not supported")
    known = known_bucket_counts(result.files, f"snapshot {snapshot.id} of {table.identifier}")
    segments: list[RouteSegment] = []
    parts_info: list[dict[str, Any]] = []
    pb = PlanBuilder()
    pb.step(f"move postpone rows ({len(postpone)} partition(s))", POSTPONE_ROUTE)
    for p in sorted(postpone):
        files = replay_order(postpone[p])
        rows = sum(f.meta.row_count for f in files)
        n, why = resolve_bucket_count(table, p, known, rows)
        spec = spec_of(p)
        writers = len({writer_prefix(f.name) for f in files})
        base = tuple(max_seq.get((p, b), -1) + 1 for b in range(n))
        pdir = scanner.partition_dir(p).rstrip("/") or "(unpartitioned)"
        parts_info.append({"partition": scanner.partition_json(p), "postpone_files": len(files),
                           "postpone_rows": rows, "writers": writers, "buckets": n, "bucket_count_from": why})
        offset, seg, seg_bytes = 0, [], 0
        for f in files:
            pb.add(FileAction(f.path, DATA, f"postpone rows of {pdir} -> {n} bucket(s) ({why})", f.meta.file_size))
            seg.append(f)
            seg_bytes += f.meta.file_size
            if seg_bytes >= SEGMENT_BYTES:
                segments.append(_segment(p, spec, n, seg, offset, base))
                offset += sum(x.meta.row_count for x in seg)
                seg, seg_bytes = [], 0
        if seg:
            segments.append(_segment(p, spec, n, seg, offset, base))
        for b in range(n):
            pb.creates(FileAction(scanner.bucket_dir(p, b), DATA, f"new level-0 files of {pdir} (bucket {b} of {n})"))
    l0 = sorted((p.hex(), b) for p, b in level0)
    pb.step("commit", POSTPONE_COMMIT, keep_empty=bool(segments or l0))
    touched = sorted(set(postpone) | {p for p, _ in level0})
    if segments or l0:
        live = scanner.live_entries(snapshot)
        pb.require(PostponeInputsUnchanged(
            tuple(sorted((f.partition.hex(), f.name) for fs in postpone.values() for f in fs)),
            tuple((p.hex(), real_state_digest(scanner, live, result.index_entries, p)) for p in touched)))
    params = task_params(table, scanner, memory_budget)
    params["dv_cardinality"] = supports_cardinality(scanner)
    buf = opts.get(WRITE_BUFFER_SIZE) or DEFAULT_WRITE_BUFFER
    params["buffer_bytes"] = int(min(buf, memory_budget // 2) if memory_budget else buf)
    details: dict[str, Any] = {
        "partitions": parts_info, "postpone_files": sum(len(fs) for fs in postpone.values()),
        "postpone_rows": sum(i["postpone_rows"] for i in parts_info),
        "postpone_bytes": sum(f.meta.file_size for fs in postpone.values() for f in fs),
        "route_tasks": len(segments), "level0_buckets": len(l0),
        "then": "each bucket that receives rows (and each real bucket holding level-0 files) is compacted as "
                "Paimon's own writer would (universal pick; lookup / deletion-vector tables: level 0 always up)",
    }
    if not segments and not l0:
        details["reason"] = "no postpone rows" + (" in the selected partitions" if pred is not None else "")
    plan = pb.build(PostponeCompactionPlan, table, details, base_snapshot=snapshot.id)
    return dataclasses.replace(plan, segments=tuple(segments), params=params, level0_buckets=tuple(l0))


def _segment(p: bytes, spec: dict, n: int, files: list[LiveFile], offset: int, base: tuple[int, ...]) -> RouteSegment:
    return RouteSegment(p.hex(), spec, n, tuple(InputFile(f.name, f.path, f.level, f.meta.row_count, f.meta.file_size,
                                                          meta=meta_to_json(f.meta)) for f in files), offset, base)


# ---------------------------------------------------------------------------------------------- route task
def run_route_task(table_location: str, task: dict[str, Any]) -> dict[str, Any]:
    """Executor entry point: replay a segment's postpone rows into level-0 sorted runs of their real buckets."""
    return _Router(table_location, task).run()


class _Router:
    def __init__(self, table_location: str, task: dict[str, Any]):

        self.table = table = FileStoreTable(table_location, options_override=task.get("_options"))
        self.scanner = TableScanner(table)
        self.task = task
        schema, opts = table.schema, table.options
        self.spec = MergeSpec.from_schema(schema, opts, f"table {table.identifier}")
        self.keys = list(self.spec.key_fields)
        self.columns = schema.field_names + [SEQUENCE_NUMBER, VALUE_KIND]
        self.partition = bytes.fromhex(task["partition"])
        self.n = int(task["num_buckets"])
        self.base = np.asarray(task["base_seq"], dtype=np.int64)
        if len(self.base) != self.n:
            raise InvalidArgumentError(f"route task: {len(self.base)} base sequence numbers for {self.n} buckets")
        self.bucket_keys = list(schema.bucket_keys)
        self.bucket_types = [f.type for f in schema.fields_of(self.bucket_keys)]
        self.function = opts.get(BUCKET_FUNCTION_TYPE)
        self.input_changelog = opts.changelog_producer == "input"
        self.params = WriteParams.from_json(task["write"])
        self.buffer_bytes = int(task.get("buffer_bytes") or DEFAULT_WRITE_BUFFER)
        self.namer = FileNamer(opts.data_file_prefix, "." + self.params.fmt)
        self.changelog_namer = FileNamer(opts.changelog_file_prefix, "." + self.params.fmt)
        self.writers: list[tuple[int, RollingWriter]] = []
        self.changelog_writers: list[tuple[int, RollingWriter]] = []
        self.rows_read = 0
        self.flushes = 0

    def _writer(self, bucket: int, changelog: bool) -> RollingWriter:
        w = RollingWriter(self.table, self.scanner, self.params, self.partition, bucket, 0, file_source=0,
                          namer=self.changelog_namer if changelog else self.namer)
        (self.changelog_writers if changelog else self.writers).append((bucket, w))
        return w

    def _batches(self) -> Any:
        for fd in self.task["files"]:
            f = InputFile(**fd)
            lf = LiveFile(self.partition, POSTPONE_BUCKET, POSTPONE_BUCKET, meta_from_json(f.meta), f.path)
            for batch in iter_file_batches(self.scanner, lf, None):
                if batch.num_rows:
                    t = pa.Table.from_batches([batch])
                    yield t.drop_columns([c for c in t.column_names if c.startswith(KEY_PREFIX)])

    def run(self) -> dict[str, Any]:

        started = time.time()
        pos = int(self.task["row_offset"])
        pending: list[pa.Table] = []
        pending_bytes = 0
        try:
            for t in self._batches():
                m = t.num_rows
                buckets = bucket_ids([t.column(k) for k in self.bucket_keys], self.bucket_types, self.n,
                                     self.function)
                seq = self.base[buckets] + np.arange(pos, pos + m, dtype=np.int64)
                pos += m
                self.rows_read += m
                t = t.select(self.columns)
                t = t.set_column(t.schema.get_field_index(SEQUENCE_NUMBER),
                                 pa.field(SEQUENCE_NUMBER, pa.int64(), False), pa.array(seq))
                t = t.append_column("__bucket", pa.array(buckets, pa.int32()))
                pending.append(t)
                pending_bytes += t.nbytes
                if pending_bytes >= self.buffer_bytes:
                    self._flush(pending)
                    pending, pending_bytes = [], 0
            if pending:
                self._flush(pending)
        except BaseException:
            self.abort()
            raise
        files: dict[str, list[dict]] = {}
        for b, w in self.writers:
            files.setdefault(str(b), []).extend(meta_to_json(m) for m in w.files)
        changelog: dict[str, list[dict]] = {}
        for b, w in self.changelog_writers:
            changelog.setdefault(str(b), []).extend(meta_to_json(m) for m in w.files)
        return {"files": files, "changelog": changelog,
                "paths": [p for _, w in self.writers + self.changelog_writers for p in w.paths],
                "rows_read": self.rows_read, "rows_out": sum(w.rows_written for _, w in self.writers),
                "flushes": self.flushes, "seconds": round(time.time() - started, 3), "pid": os.getpid()}

    def _flush(self, parts: list[pa.Table]) -> None:
        """Java's write-buffer flush: per bucket, records sorted by key and merged, one level-0 sorted run."""

        self.flushes += 1
        data = pa.concat_tables(parts).combine_chunks() if len(parts) > 1 else parts[0].combine_chunks()
        buckets = data.column("__bucket").to_numpy()
        order = np.argsort(buckets, kind="stable")
        sorted_b = buckets[order]
        starts = np.flatnonzero(np.r_[True, sorted_b[1:] != sorted_b[:-1]])
        ends = np.r_[starts[1:], len(order)]
        data = data.drop_columns(["__bucket"])
        for s, e in zip(starts, ends):
            b = int(sorted_b[s])
            rows = data.take(pa.array(order[s:e]))
            if self.input_changelog:
                w = self._writer(b, changelog=True)
                w.write(rows.sort_by([(k, "ascending") for k in self.keys] + [(SEQUENCE_NUMBER, "ascending")]))
                w.close()
            rows = rows.append_column(pa.field(LEVEL, pa.int32(), False),
                                      pa.array(np.zeros(rows.num_rows, np.int32)))
            merged = merge_records(rows, self.spec, False)
            if merged.num_rows:
                w = self._writer(b, changelog=False)
                w.write(merged.select(self.columns))
                w.close()

    def abort(self) -> None:
        for _, w in self.writers + self.changelog_writers:
            w.abort()


# ---------------------------------------------------------------------------------------------- execution
@dataclass
class _Run:
    """What the route tasks and the bucket compactions wrote (the commit's inputs)."""

    new_files: dict[tuple[bytes, int], list[DataFileMeta]] = field(default_factory=dict)
    changelog: dict[tuple[bytes, int], list[DataFileMeta]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    totals: dict[bytes, int] = field(default_factory=dict)
    compaction: Any = None          # compact.api.ExecutionResult of the bucket compactions
    rows_read: int = 0
    task_pids: set[int] = field(default_factory=set)


def _delete_quietly(table: FileStoreTable, paths: Sequence[str]) -> None:
    """Remove uncommitted output through the one deletion path (an unreferenced leftover that cannot be removed is
    an orphan, never a correctness problem)."""
    remove_written(table, list(paths), "uncommitted output")


def run_tasks(ex: Execution, function: str, items: Sequence[Any], params: Mapping[str, Any], what: str,
              describe: Callable[[Any], str]) -> tuple[list[dict[str, Any]], list[str]]:
    """Run one task per item (`item.to_task(params)`); (results, paths written). When any task failed, what the
    others wrote is removed and the first failure is raised, named by `describe(item)`."""
    table = ex.table
    tasks = [dict(it.to_task(params), task_id=i) for i, it in enumerate(items)]
    assert ex.runner is not None
    results = ex.runner.run(function, table.location, tasks, ex.progress,
                            options={**table.io.task_options(), **table.options_override})
    written = [p for r in results if r.get("ok") for p in r.get("paths", [])]
    failed = [(items[i], r) for i, r in enumerate(results) if not r.get("ok")]
    if failed:
        _delete_quietly(table, written)
        it, r = failed[0]
        raise CompactionTaskError(f"{what} of {table.identifier} failed in {len(failed)} of {len(tasks)} task(s); "
                                  f"nothing was committed and the files written were removed. First failure "
                                  f"({describe(it)}): {r.get('error')}")
    return results, written


def _route(ex: Execution, plan: PostponeCompactionPlan) -> _Run:
    run = _Run()
    if not plan.segments:
        return run
    results, written = run_tasks(ex, ROUTE_FUNCTION, plan.segments, plan.params, "postpone compaction (routing)",
                                 lambda s: f"partition {s.partition_spec}")
    run.paths += written
    for s, r in zip(plan.segments, results):
        p = bytes.fromhex(s.partition)
        run.totals[p] = s.num_buckets
        for b, metas in r["files"].items():
            run.new_files.setdefault((p, int(b)), []).extend(meta_from_json(m) for m in metas)
        for b, metas in r["changelog"].items():
            run.changelog.setdefault((p, int(b)), []).extend(meta_from_json(m) for m in metas)
        run.rows_read += int(r.get("rows_read", 0))
        if "pid" in r:
            run.task_pids.add(int(r["pid"]))
    return run


def _compact_buckets(ex: Execution, plan: PostponeCompactionPlan, run: _Run) -> None:
    """Paimon's writer-side compaction of every bucket that got rows, and of every real bucket with level-0 files."""

    table = ex.table
    opts = table.options
    scanner = TableScanner(table)
    assert plan.base_snapshot is not None
    base = scanner.scan(table.snapshots.snapshot(plan.base_snapshot))
    by_bucket = base.buckets()
    wanted = set(run.new_files) | {(bytes.fromhex(p), b) for p, b in plan.level0_buckets}
    files: list[LiveFile] = [f for k in wanted for f in by_bucket.get(k, [])]
    new: list[LiveFile] = []
    for (p, b), metas in run.new_files.items():
        n = run.totals[p]
        new += [LiveFile(p, b, n, m, scanner.bucket_dir(p, b) + "/" + m.file_name) for m in metas]
    result = ScanResult(base.snapshot, files + new, base.index_entries)
    spec = MergeSpec.from_schema(table.schema, opts, f"table {table.identifier}")
    target = opts.target_file_size(True)
    lsm = LsmPlanner(table, spec, result, scanner, opts.get(COMPACTION_FORCE_REWRITE_ALL_FILES), target,
                      opts.get(COMPACTION_SMALL_FILE_RATIO), int(time.time() * 1000))
    tasks: list[CompactionTask] = []
    keys = table.schema.partition_keys

    def task(kind: str, p: bytes, b: int, infos: list, why: str, **kw: Any) -> None:
        values = scanner.partition_values(p) if keys else []
        spec_text = {k: ("null" if v is None else str(v)) for k, v in zip(keys, values)}
        tasks.append(CompactionTask(kind, p.hex(), spec_text, b, infos[0].file.total_buckets,
                                    tuple(i.input for i in infos), why, **kw))

    grouped = result.buckets()
    for (p, b) in sorted(wanted):
        lsm.bucket(p, b, file_infos(scanner, result, grouped.get((p, b), [])), "minor", task, lambda why: None)
    if not tasks:
        return
    cplan = CompactionPlan(table=table.identifier, location=table.location, branch=table.branch,
                           base_snapshot=plan.base_snapshot, mode="minor", tasks=tuple(tasks), params=plan.params)
    run.compaction = execute_plan(table, cplan, ex.runner, ex.progress)
    run.paths += run.compaction.written_paths
    for r in run.compaction.results:
        d = r.get("dv")
        if d and d.get("added"):
            run.paths.append(scanner.index_file_path(index_entry_from_json(d["added"])))
        if "pid" in r:
            run.task_pids.add(int(r["pid"]))


class _PostponeCommit(FileStoreCommit):
    """The commit re-checks, against the snapshot it commits on, what the plan required (postpone_state_changes)."""

    def __init__(self, table: FileStoreTable, cond: PostponeInputsUnchanged | None, **kw: Any):
        super().__init__(table, **kw)
        self.cond = cond

    def check_conflicts(self, changes: CommitChanges, latest: Snapshot | None, base_snapshot_id: int | None,
                        kind: str) -> None:
        if self.cond is not None and latest is not None and latest.id != base_snapshot_id:
            msg = postpone_state_changes(self.scanner, latest, self.cond)
            if msg:
                raise CommitConflictError(self.table.identifier, base_snapshot_id, latest.id, msg)
        super().check_conflicts(changes, latest, base_snapshot_id, kind)


@register_step(POSTPONE_ROUTE)
def _route_step(ex: Execution, step: Step) -> None:
    plan = ex.plan
    assert isinstance(plan, PostponeCompactionPlan)
    run = _route(ex, plan)
    try:
        _compact_buckets(ex, plan, run)
    except BaseException:
        _delete_quietly(ex.table, run.paths)
        raise
    ex.state["postpone"] = run


@register_step(POSTPONE_COMMIT)
def _commit_step(ex: Execution, step: Step) -> None:
    plan = ex.plan
    assert isinstance(plan, PostponeCompactionPlan)
    run: _Run = ex.state.get("postpone") or _Run()
    table = ex.table
    try:
        _commit(ex, plan, run)
    except CommitOutcomeUnknownError:
        raise  # maybe committed: its files may be the table's now
    except BaseException:
        _delete_quietly(table, run.paths)
        raise


def _commit(ex: Execution, plan: PostponeCompactionPlan, run: _Run) -> None:

    table = ex.table
    scanner = TableScanner(table)
    assert plan.base_snapshot is not None
    base = table.snapshots.snapshot(plan.base_snapshot)
    live = scanner.live_entries(base)
    cond = next((c for c in plan.preconditions if isinstance(c, PostponeInputsUnchanged)), None)
    inputs = set(cond.files) if cond else set()
    deletes: list[ManifestEntry] = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
                                    for e in live.values() if e.bucket == POSTPONE_BUCKET
                                    and (e.partition.hex(), e.file.file_name) in inputs]
    new: dict[tuple[bytes, int, str], DataFileMeta] = {(p, b, m.file_name): m for (p, b), ms in run.new_files.items()
                                                       for m in ms}
    adds: list[ManifestEntry] = []
    changelog: list[ManifestEntry] = [ManifestEntry(FileKind.ADD, p, b, run.totals[p], m)
                                      for (p, b), ms in run.changelog.items() for m in ms]
    consumed: list[str] = []
    index_added, index_deleted = [], []
    c = run.compaction
    for t, r in zip(c.plan.tasks, c.results) if c is not None else ():
        p = bytes.fromhex(t.partition)
        gone, upgraded = t.effects()
        for f in gone:
            if (p, t.bucket, f.name) in new:
                del new[(p, t.bucket, f.name)]
                consumed.append(f.path)
            else:
                deletes.append(ManifestEntry(FileKind.DELETE, p, t.bucket, t.total_buckets, meta_from_json(f.meta)))
        for f in upgraded:
            meta = meta_from_json(f.meta)
            assert t.output_level is not None and t.output_level > meta.level
            if (p, t.bucket, f.name) in new:
                new[(p, t.bucket, f.name)] = meta.with_level(t.output_level)
            else:
                deletes.append(ManifestEntry(FileKind.DELETE, p, t.bucket, t.total_buckets, meta))
                adds.append(ManifestEntry(FileKind.ADD, p, t.bucket, t.total_buckets, meta.with_level(t.output_level)))
        for m in r["files"]:
            meta = meta_from_json(m)
            if meta.file_source != FILE_SOURCE_COMPACT or meta.level < 0:
                raise PaimonOpsError(f"task for bucket {t.bucket} returned an invalid file {meta.file_name}")
            adds.append(ManifestEntry(FileKind.ADD, p, t.bucket, t.total_buckets, meta))
        changelog += [ManifestEntry(FileKind.ADD, p, t.bucket, t.total_buckets, meta_from_json(m))
                      for m in r.get("changelog") or []]
        d = r.get("dv")
        if d:
            index_deleted += [index_entry_from_json(e) for e in d["deleted"]]
            if d.get("added"):
                index_added.append(index_entry_from_json(d["added"]))
    adds = [ManifestEntry(FileKind.ADD, p, b, run.totals[p], m) for (p, b, _), m in new.items()] + adds
    changes = CommitChanges(data=tuple(deletes + adds), index_added=tuple(index_added),
                            index_deleted=tuple(index_deleted), changelog=tuple(changelog))
    if changes.is_empty:
        return
    committer = _PostponeCommit(table, cond, commit_user=ex.state.get("commit_user"))
    snap = committer.commit(changes, "COMPACT", plan.base_snapshot, now_millis=ex.state.get("commit_time_millis"))
    ex.snapshot_id = snap.id
    _delete_quietly(table, consumed)  # level-0 runs merged before they were ever committed (Java's BucketFiles)
    _record(ex, plan, run, deletes, adds, changelog, index_added, len(consumed))


def _record(ex: Execution, plan: PostponeCompactionPlan, run: _Run, deletes: list[ManifestEntry],
            adds: list[ManifestEntry], changelog: list[ManifestEntry], index_added: list, consumed: int) -> None:
    scanner = TableScanner(ex.table)
    ex.done += [FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA,
                           "moved into real buckets" if e.bucket == POSTPONE_BUCKET else "compacted away",
                           e.file.file_size) for e in deletes]
    ex.written += [FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA,
                              f"bucket {e.bucket} of {e.total_buckets}, level {e.file.level}", e.file.file_size)
                   for e in adds if not any(d.file.file_name == e.file.file_name for d in deletes)]
    ex.written += [FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), CHANGELOG,
                              "changelog of postpone compaction", e.file.file_size) for e in changelog]
    ex.written += [FileAction(scanner.index_file_path(ie), INDEX, "deletion vectors", ie.file_size)
                   for ie in index_added]
    moved = [e for e in deletes if e.bucket == POSTPONE_BUCKET]
    data_adds = adds
    ex.details.update({
        "postpone_files_moved": len(moved), "postpone_rows_moved": sum(e.file.row_count for e in moved),
        "rows_routed": run.rows_read, "files_out": len(data_adds),
        "rows_out": sum(e.file.row_count for e in data_adds), "bytes_out": sum(e.file.file_size for e in data_adds),
        "real_files_compacted": sum(1 for e in deletes if e.bucket != POSTPONE_BUCKET),
        "level0_runs_merged_before_commit": consumed,
        "buckets_compacted": len(run.compaction.plan.tasks) if run.compaction is not None else 0,
        "changelog_files": len(changelog), "dv_index_files_written": len(index_added),
        "task_pids": sorted(run.task_pids),
    })


# ---------------------------------------------------------------------------------------------- entry point
__all__ = ["plan_postpone_compaction", "PostponeCompactionPlan", "PostponeInputsUnchanged",
           "run_route_task", "resolve_bucket_count", "replay_order", "writer_prefix", "bucket_num_by_rows",
           "known_bucket_counts", "POSTPONE_BUCKET"]
