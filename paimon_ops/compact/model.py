"""Plain data of the compaction engine: tasks shipped to executors, their results, the plan, JSON codecs.

Executors receive only the table path and a task dict (JSON): every input file travels with its full
DataFileMeta and a pointer to its deletion vector, so a task never needs the driver's scan.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

from paimon_ops.execution.plan import Plan, Precondition, Workload, declare_step_action
from paimon_ops.format.manifest import DataFileMeta, DeletionVectorMeta, IndexManifestEntry, SimpleStats
from paimon_ops.operations.compact import OPERATION as COMPACT
from paimon_ops.table.scan import DELETION_VECTORS, TableScanner

# Task kinds.
MERGE = "merge"        # PK: k-way merge of all files of a bucket through the merge engine -> output level
REWRITE = "rewrite"    # one file at a time: drop DV-deleted rows, keep level and sequence numbers
CONCAT = "concat"      # append: concatenate files (DV rows dropped), fresh consecutive sequence numbers
SORT = "sort"          # append: read files, sort by order / zorder / hilbert key, write
ROWTRACK = "rowtrack"  # append, row tracking: one adjacent row-id run concatenated, row ids kept (compact.rowtrack)
EVOLUTION = "evolution"  # append, data evolution: row-range groups merged by row id into one file (compact.rowtrack)
LSM = "lsm"            # PK: one compaction unit of a bucket's LSM tree (compact.levels): rewrite / upgrade steps,
#                        lookups above the output level, deletion vectors, changelog

FILE_SOURCE_COMPACT = 1


# ---------------------------------------------------------------------------------------------- JSON codecs

def stats_to_json(s: SimpleStats) -> dict:
    return {"min": s.min_values.hex(), "max": s.max_values.hex(),
            "nulls": None if s.null_counts is None else list(s.null_counts)}


def stats_from_json(d: dict) -> SimpleStats:
    nulls = d["nulls"]
    return SimpleStats(bytes.fromhex(d["min"]), bytes.fromhex(d["max"]), None if nulls is None else tuple(nulls))


def meta_to_json(m: DataFileMeta) -> dict:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(m):
        v = getattr(m, f.name)
        if isinstance(v, SimpleStats):
            v = stats_to_json(v)
        elif isinstance(v, bytes):
            v = {"hex": v.hex()}
        elif isinstance(v, tuple):
            v = list(v)
        out[f.name] = v
    return out


_TUPLE_FIELDS = {"extra_files", "value_stats_cols", "write_cols", "write_cols_sequences"}


def meta_from_json(d: dict) -> DataFileMeta:
    kw: dict[str, Any] = {}
    for f in dataclasses.fields(DataFileMeta):
        if f.name not in d:
            continue
        v = d[f.name]
        if f.name in ("key_stats", "value_stats"):
            v = stats_from_json(v)
        elif isinstance(v, dict) and "hex" in v:
            v = bytes.fromhex(v["hex"])
        elif f.name in _TUPLE_FIELDS and v is not None:
            v = tuple(v)
        kw[f.name] = v
    return DataFileMeta(**kw)


def index_entry_to_json(ie: IndexManifestEntry) -> dict:
    return {"kind": int(ie.kind), "partition": ie.partition.hex(), "bucket": ie.bucket, "index_type": ie.index_type,
            "file_name": ie.file_name, "file_size": ie.file_size, "row_count": ie.row_count,
            "external_path": ie.external_path,
            "dv_ranges": None if ie.dv_ranges is None else [dataclasses.asdict(r) for r in ie.dv_ranges]}


def index_entry_from_json(d: dict) -> IndexManifestEntry:
    ranges = None if d["dv_ranges"] is None else tuple(DeletionVectorMeta(**r) for r in d["dv_ranges"])
    return IndexManifestEntry(d["kind"], bytes.fromhex(d["partition"]), d["bucket"], d["index_type"], d["file_name"],
                              d["file_size"], d["row_count"], ranges, d.get("external_path"))


# ---------------------------------------------------------------------------------------------- plan data

@dataclass(frozen=True)
class InputFile:
    """One input data file of a task, with where its deletion vector lives (if it has one)."""

    name: str
    path: str
    level: int
    row_count: int
    file_size: int
    deleted_rows: int | None = None        # DV cardinality (None: unknown / no DV)
    dv_index_file: str | None = None       # path of the DV index file holding its vector
    dv_offset: int | None = None
    dv_length: int | None = None
    meta: dict = field(default_factory=dict, repr=False, compare=False)  # DataFileMeta as JSON

    @property
    def has_dv(self) -> bool:
        return self.dv_index_file is not None


@dataclass(frozen=True)
class CompactionTask:
    """One unit of work for an executor: a bucket (or a group of files of a partition)."""

    kind: str
    partition: str                  # BinaryRow bytes as hex
    partition_spec: dict            # {key: value as text}, for people
    bucket: int
    total_buckets: int
    files: tuple[InputFile, ...]
    why: str
    output_level: int | None = None  # None: keep each file's level (REWRITE) / 0 (append)
    drop_delete: bool = False
    lookup_rewrite: bool = False
    order_by: tuple[str, ...] = ()
    strategy: str = "order"
    # LSM tasks (compact.levels): the unit's steps in key order (Step JSON), the rewriter, the files above the
    # output level that lookups probe, whether lookups need the old values, and the bucket's DV index entries.
    steps: tuple[dict, ...] = ()
    rewriter: str | None = None
    max_level: int | None = None
    lookup_files: tuple[InputFile, ...] = ()
    lookup_values: bool = False
    dv_index: tuple[dict, ...] = ()
    # Data-evolution tasks (compact.rowtrack): the row-range groups merged, in row-id order
    # ({"start", "rows", "files", "anchor"}: the anchor file keys the group's deletion vector).
    row_groups: tuple[dict, ...] = ()

    @property
    def rows_in(self) -> int:
        return sum(f.row_count for f in self.files)

    @property
    def bytes_in(self) -> int:
        return sum(f.file_size for f in self.files)

    def effects(self) -> tuple[list[InputFile], list[InputFile]]:
        """(files compacted away, files only upgraded to the output level). Non-LSM tasks rewrite every file."""
        if self.kind != LSM:
            return list(self.files), []
        by_name = {f.name: f for f in self.files}
        gone: list[InputFile] = []
        up: list[InputFile] = []
        for s in self.steps:
            names = [by_name[n] for n in s["files"]]
            if s["op"] == "upgrade" or (s["op"] == "read" and not s["write"]):
                up += names
            else:
                gone += names
        return gone, up

    def to_task(self, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON dict an executor receives (plan-wide parameters merged in)."""
        d = dataclasses.asdict(self)
        d["files"] = [dataclasses.asdict(f) for f in self.files]
        d["lookup_files"] = [dataclasses.asdict(f) for f in self.lookup_files]
        d["order_by"] = list(self.order_by)
        d["steps"] = [dict(s) for s in self.steps]
        d["dv_index"] = [dict(e) for e in self.dv_index]
        d["row_groups"] = [dict(g) for g in self.row_groups]
        d.update(params)
        return d


# Steps of a compaction plan: the tasks (on the runner), then the one COMPACT commit.
COMPACTION_TASKS = "compaction-tasks"
COMPACTION_COMMIT = "compaction-commit"
METADATA_UPGRADES = "metadata-upgrades"  # listed for review; done by the commit (DELETE + ADD of the same file)
declare_step_action(COMPACTION_TASKS, deletes=True, verb="would replace",
                    done="replaced (the old files stay on disk until snapshot expiry)", removal="replaced")
declare_step_action(METADATA_UPGRADES, verb="would upgrade")


@dataclass(frozen=True)
class CompactionPlan(Plan):
    """What a compaction would do: tasks (partition, bucket, input files, why), then one COMPACT commit. Its
    input files are what the plan "deletes" (they leave the table with the commit; expiry reclaims them)."""

    operation: ClassVar[str] = "compact"
    op = COMPACT  # its operation (the feature gate, the planner's parameters)

    mode: str = "full"
    tasks: tuple[CompactionTask, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)   # target sizes etc. passed to every task
    # DV index files of the touched buckets at plan time (JSON): rewritten without our files at commit, and
    # checked to be unchanged (a concurrent writer's new deletions on our inputs would otherwise be lost).
    index_entries: tuple[Mapping[str, Any], ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.tasks

    def workload(self) -> Any:
        return Workload(tasks=len(self.tasks),
                        input_bytes=sum(t.bytes_in + sum(f.file_size for f in t.lookup_files) for t in self.tasks))


@dataclass(frozen=True)
class InputsLive(Precondition):
    """Every input file is still live in the latest snapshot and the deletion vectors of the touched buckets are the
    ones planned with (another job compacted, or deleted rows, meanwhile)."""

    kind: ClassVar[str] = "inputs-live"
    files: tuple[tuple[str, int, str, int], ...]   # (partition hex, bucket, file name, level)
    dv_index_files: tuple[str, ...] = ()

    def check(self, table: Any) -> str | None:
        latest = table.snapshots.latest()
        if latest is None:
            return "the table has no snapshot any more"
        scanner = TableScanner(table)
        live = {(e.partition.hex(), e.bucket, e.file.file_name, e.file.level)
                for e in scanner.live_entries(latest).values()}
        gone = [f for f in self.files if tuple(f) not in live]
        if gone:
            more = f" and {len(gone) - 1} more" if len(gone) > 1 else ""
            return (f"input {gone[0][2]} (bucket {gone[0][1]}, level {gone[0][3]}){more} is no longer live there: "
                    "another job compacted it")
        touched = {(p, b) for p, b, _, _ in self.files}
        now_dv = sorted(ie.file_name for ie in scanner.index_entries(latest)
                        if ie.index_type == DELETION_VECTORS and (ie.partition.hex(), ie.bucket) in touched)
        if now_dv != sorted(self.dv_index_files):
            return "the deletion vectors of a bucket to compact changed (rows were deleted meanwhile)"
        return None

    def describe(self) -> str:
        return f"{len(self.files)} input file(s) still live, deletion vectors unchanged"


__all__ = ["MERGE", "REWRITE", "CONCAT", "SORT", "LSM", "ROWTRACK", "EVOLUTION", "FILE_SOURCE_COMPACT", "InputFile", "CompactionTask",
           "CompactionPlan", "InputsLive", "COMPACTION_TASKS", "COMPACTION_COMMIT", "METADATA_UPGRADES",
           "meta_to_json", "meta_from_json", "index_entry_to_json", "index_entry_from_json"]
