"""Rescale: change the bucket count of a table or of chosen partitions (Paimon's `rescale` procedure; Java 2.0:
RescaleProcedure / RescaleAction, and the documented `ALTER TABLE … SET ('bucket' = 'N')` + `INSERT OVERWRITE`).

    plan_rescale(table, bucket_num=None, partitions=None, where=None) -> RescalePlan

What it does, per selected partition with real-bucket files (postpone files are not touched, as in Java, whose
rescale reads only real buckets and whose overwrite replaces only them; the next postpone compaction routes them by
the new count):

1. **Split** (a task per old bucket, on the runner): the bucket's rows as a reader sees them — merged by the table's
   merge engine, deletion vectors applied, retractions dropped (primary-key tables), or every live row (append
   tables) — routed by Paimon's bucket function over the new count. Each record keeps its sequence number.
2. When each new bucket receives rows from one old bucket only (one old bucket, or a new count that is a multiple of
   the old: then a key's new bucket determines its old one, for all three bucket functions), the split writes each
   new bucket's key-sorted run straight to the max level. Otherwise each split writes level-0 runs, and a **merge**
   task per new bucket writes them as one sorted run at the max level — the state a full compaction leaves, which
   every reader (deletion-vector readers included) reads. Append tables: level-0 files, as Java writes them.
3. **Commit** one OVERWRITE snapshot: every real-bucket file of the partitions and their index files (deletion
   vectors, hash index) DELETEd, the new files ADDed with the new `_TOTAL_BUCKETS`. No changelog is written: the
   rows did not change (Java's streaming readers skip OVERWRITE snapshots by default, `streaming-read-overwrite`).

The bucket option. Fixed-bucket tables (`bucket` = N > 0): the option is set to the new count by a schema change
(`schema-<id+1>`, only `bucket` changed), as `ALTER TABLE SET` does before the overwrite, so that writers use the new
count; it is written before the data, so a run interrupted in between is finished by the next run (the partitions
still have the old count, the option already the new one). Rescaling only some partitions of such a table leaves
the others at their count: Java's writers then refuse to write into those until they are rescaled too (the plan
warns). `bucket_num` defaults to the table's option (rescale after an ALTER TABLE). Postpone-bucket tables
(`bucket = -2`) keep their option — each partition's count lives in its files — and need `bucket_num` (Java's
rule). Dynamic-bucket tables (`bucket = -1`) are refused.

Concurrent writers: the plan requires the schema and the selected partitions' real buckets (files and index files)
to be exactly those planned on (a stale plan is refused before anything is written), and the commit checks the
partitions again against the snapshot it commits on — any commit into them meanwhile (Java: strict mode,
`commit.strict-mode.last-safe-snapshot`) aborts the rescale and removes what it wrote.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Mapping

import numpy as np
import pyarrow as pa

from paimon_ops.catalog import commit_schema
from paimon_ops.compact.api import execute_plan
from paimon_ops.compact.buckets import file_infos, task_params
from paimon_ops.compact.filters import partition_predicate
from paimon_ops.compact.model import MERGE, CompactionPlan, CompactionTask, InputFile, meta_from_json, meta_to_json
from paimon_ops.compact.postpone import (
    POSTPONE_BUCKET,
    PostponeInputsUnchanged,
    _delete_quietly,
    _PostponeCommit,
    known_bucket_counts,
    postpone_state_changes,
    real_state_digest,
    run_tasks,
)
from paimon_ops.compact.rolling import RollingWriter
from paimon_ops.compact.task_context import TaskContext, file_rows_with_seq, merge_slices
from paimon_ops.errors import CommitOutcomeUnknownError, CompactionTaskError, InvalidArgumentError, UnsupportedError, arg
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.plan import DATA, INDEX, FileAction, Plan, PlanBuilder, Precondition, Step, Workload, declare_step_action, planner
from paimon_ops.format.binary_row import bucket_ids
from paimon_ops.format.datafile import SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.merge.merge import merge_records
from paimon_ops.merge.spec import MergeSpec
from paimon_ops.operations.model import Partitions
from paimon_ops.operations.rescale import OPERATION as RESCALE
from paimon_ops.options import BUCKET_FUNCTION_TYPE, BUCKET_KEY, COMPACTION_MEMORY_BUDGET, read
from paimon_ops.table.commit import CommitChanges
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)

SPLIT_FUNCTION = "paimon_ops.compact.rescale.run_split_task"
RESCALE_SCHEMA = "rescale-schema"
RESCALE_REWRITE = "rescale-rewrite"
RESCALE_COMMIT = "rescale-commit"
declare_step_action(RESCALE_SCHEMA, writes=True)
declare_step_action(RESCALE_REWRITE, deletes=True, verb="would replace",
                    done="replaced (the old files stay on disk until snapshot expiry)", removal="replaced")


@dataclass(frozen=True)
class SplitTask:
    """One old bucket of a partition, split into the new buckets."""

    partition: str
    partition_spec: dict
    bucket: int                    # old bucket
    total_buckets: int             # old count
    num_buckets: int               # new count
    output_level: int              # max level (direct) or 0 (runs merged afterwards)
    files: tuple[InputFile, ...]

    @property
    def bytes_in(self) -> int:
        return sum(f.file_size for f in self.files)

    def to_task(self, params: Mapping[str, Any]) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["files"] = [dataclasses.asdict(f) for f in self.files]
        d.update(params)
        return d


@dataclass(frozen=True)
class SchemaIs(Precondition):
    """The table's latest schema is still the one planned on (no ALTER TABLE meanwhile)."""

    kind: ClassVar[str] = "schema"
    schema_id: int

    def check(self, table: Any) -> str | None:
        ids = table.schemas.list_ids()
        now = ids[-1] if ids else None
        return None if now == self.schema_id else f"the latest schema is now {now}, the plan was made on {self.schema_id}"

    def describe(self) -> str:
        return f"latest schema is {self.schema_id}"


@dataclass(frozen=True)
class RealBucketsUnchanged(Precondition):
    """The real buckets (files and index files) of the partitions to rescale are exactly those planned on."""

    kind: ClassVar[str] = "real-buckets"
    real_buckets: tuple[tuple[str, str], ...]   # (partition hex, digest)

    def check(self, table: Any) -> str | None:
        latest = table.snapshots.latest()
        if latest is None:
            return "the table has no snapshot any more"
        return postpone_state_changes(TableScanner(table), latest, PostponeInputsUnchanged((), self.real_buckets))

    def describe(self) -> str:
        return f"the real buckets of {len(self.real_buckets)} partition(s) unchanged"


@dataclass(frozen=True)
class RescalePlan(Plan):
    operation: ClassVar[str] = "rescale"
    op = RESCALE  # its operation (the feature gate, the planner's parameters)

    bucket_num: int = 0
    max_level: int = 0
    schema_change: bool = False
    tasks: tuple[SplitTask, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    index_files: tuple[str, ...] = ()   # index files of the rescaled partitions' real buckets (dropped by the commit)

    @property
    def is_empty(self) -> bool:
        return not self.tasks and not self.schema_change

    def workload(self) -> Any:
        return Workload(tasks=len(self.tasks), input_bytes=sum(t.bytes_in for t in self.tasks))


def _new_bucket_num(table: FileStoreTable, bucket_num: int | None) -> int:
    opts = table.options
    if opts.bucket == -1:
        raise UnsupportedError(f"{table.identifier} is a dynamic-bucket table (bucket = -1): its buckets come from the "
                               "hash index, there is no bucket count to rescale (as in Paimon)")
    if opts.bucket == POSTPONE_BUCKET and bucket_num is None:
        raise InvalidArgumentError(f"when rescaling postpone bucket tables, you must provide the resulting bucket "
                                   f"number ({arg('bucket_num')})")
    if opts.bucket not in (POSTPONE_BUCKET,) and opts.bucket <= 0:
        raise UnsupportedError(f"{table.identifier}: bucket mode {opts.bucket} cannot be rescaled")
    if not table.is_primary_key and not read(table.schema.options, BUCKET_KEY):
        raise UnsupportedError(f"{table.identifier}: a fixed-bucket append table without bucket-key cannot be "
                               "rescaled")
    n = opts.bucket if bucket_num is None else bucket_num
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise InvalidArgumentError(f"{arg('bucket_num', bucket_num)}: expected a positive number of buckets")
    return n


@planner(RescalePlan, hidden=("memory_budget",))  # a saved plan is re-planned with its recorded arguments
def plan_rescale(table: FileStoreTable | str, *, bucket_num: int | None = None, partitions: Partitions | None = None,
                 where: str | None = None, memory_budget: int | None = None) -> RescalePlan:
    """Plan the rescale (reads metadata only; module docstring)."""

    table = table if isinstance(table, FileStoreTable) else FileStoreTable(str(table))
    n = _new_bucket_num(table, bucket_num)
    opts = table.options
    if table.is_primary_key:
        MergeSpec.from_schema(table.schema, opts, f"table {table.identifier}")
    if memory_budget is None:
        memory_budget = opts.get(COMPACTION_MEMORY_BUDGET)
    schema = table.schema
    fixed = opts.bucket > 0
    schema_change = fixed and opts.bucket != n
    snapshot = table.snapshots.latest()
    if snapshot is None:
        raise InvalidArgumentError(f"table {table.identifier} has no snapshot, no need to rescale")
    scanner = TableScanner(table)
    result = scanner.scan(snapshot)
    ptypes = [f.type for f in schema.fields_of(schema.partition_keys)]
    pred = partition_predicate(list(schema.partition_keys), ptypes, opts.partition_default_name, partitions, where)
    keys = list(schema.partition_keys)

    def spec_of(p: bytes) -> dict[str, str]:
        values = scanner.partition_values(p) if keys else []
        return {k: ("null" if v is None else str(v)) for k, v in zip(keys, values)}

    known = known_bucket_counts(result.files, f"snapshot {snapshot.id} of {table.identifier}")
    real = [f for f in result.files if f.bucket >= 0]
    chosen = {p for p in known if pred is None or pred(dict(zip(keys, scanner.partition_values(p))) if keys else {})}
    todo = sorted(p for p in chosen if known[p] != n)
    others = sorted({known[p] for p in known if p not in todo and known[p] != n})
    num_levels = max([opts.num_levels] + [f.level + 1 for f in real])
    max_level = num_levels - 1 if table.is_primary_key else 0
    by_bucket = result.buckets()
    tasks: list[SplitTask] = []
    pb = PlanBuilder()
    if schema_change:
        pb.step("schema change", RESCALE_SCHEMA)
        pb.add(FileAction(table.schemas.path(schema.id + 1), "schema", f"option bucket {opts.bucket} -> {n}"))
    pb.step(f"rewrite ({len(todo)} partition(s))", RESCALE_REWRITE)
    parts_info = []
    for p in todo:
        m = known[p]
        direct = m == 1 or n % m == 0 or not table.is_primary_key
        level = max_level if direct else 0
        pdir = scanner.partition_dir(p).rstrip("/") or "(unpartitioned)"
        rows = 0
        for b in range(m):
            fs = by_bucket.get((p, b), [])
            if not fs:
                continue
            infos = file_infos(scanner, result, fs)
            tasks.append(SplitTask(p.hex(), spec_of(p), b, m, n, level, tuple(i.input for i in infos)))
            rows += sum(f.meta.row_count for f in fs)
            pb.add_all(FileAction(f.path, DATA, f"{pdir}: {m} -> {n} buckets", f.meta.file_size) for f in fs)
        for b in range(n):
            pb.creates(FileAction(scanner.bucket_dir(p, b), DATA, f"new files of {pdir} (bucket {b} of {n}, level "
                                                                  f"{max_level})"))
        parts_info.append({"partition": scanner.partition_json(p), "from_buckets": m, "to_buckets": n, "rows": rows,
                           "files": sum(len(by_bucket.get((p, b), [])) for b in range(m)),
                           "merge_step": not direct})
    index = [ie for ie in result.index_entries if ie.partition in set(todo) and ie.bucket >= 0]
    pb.add_all(FileAction(scanner.index_file_path(ie), INDEX, f"{ie.index_type} index of a rescaled bucket",
                          ie.file_size) for ie in index)
    pb.step("commit (OVERWRITE)", RESCALE_COMMIT, keep_empty=bool(tasks))
    if tasks or schema_change:
        pb.require(SchemaIs(schema.id))
    if tasks:
        live = scanner.live_entries(snapshot)
        pb.require(RealBucketsUnchanged(tuple((p.hex(), real_state_digest(scanner, live, result.index_entries, p))
                                              for p in todo)))
    if schema_change and others:
        pb.warn(f"partitions keeping {', '.join(map(str, others))} bucket(s) stay as they are while the table's "
                f"option becomes {n}: Paimon's writers refuse to write into them until they are rescaled too")
    details: dict[str, Any] = {
        "bucket_num": n, "bucket_option": f"{opts.bucket} -> {n}" if schema_change else opts.bucket,
        "partitions": parts_info, "split_tasks": len(tasks), "rows_in": sum(i["rows"] for i in parts_info),
        "bytes_in": sum(t.bytes_in for t in tasks),
        "already_at_count": sum(1 for p in chosen if known[p] == n),
    }
    if not tasks and not schema_change:
        details["reason"] = (f"every selected partition already has {n} bucket(s)" if chosen
                             else "no partition with real-bucket files selected")
    params = task_params(table, scanner, memory_budget)
    plan = pb.build(RescalePlan, table, details, base_snapshot=snapshot.id)
    return dataclasses.replace(plan, bucket_num=n, max_level=max_level, schema_change=schema_change, tasks=tuple(tasks),
                               params=params,
                               index_files=tuple(ie.file_name for ie in index))


# ---------------------------------------------------------------------------------------------- split task
def run_split_task(table_location: str, task: dict[str, Any]) -> dict[str, Any]:
    """Executor entry point: one old bucket's rows (merged, DVs applied) into the new buckets."""

    started = time.time()
    ctx = TaskContext(table_location, task)
    table = ctx.table
    schema = table.schema
    n = int(task["num_buckets"])
    level = int(task["output_level"])
    pk = table.is_primary_key
    bkeys = list(schema.bucket_keys)
    btypes = [f.type for f in schema.fields_of(bkeys)]
    function = table.options.get(BUCKET_FUNCTION_TYPE)
    files = [InputFile(**f) for f in task["files"]]
    writers: dict[int, RollingWriter] = {}
    stats: dict[str, int] = {"rows_read": 0}
    columns = schema.field_names + [SEQUENCE_NUMBER] + ([VALUE_KIND] if pk else [])

    def out(t: pa.Table) -> None:
        if not t.num_rows:
            return
        buckets = bucket_ids([t.column(k) for k in bkeys], btypes, n, function)
        for b in np.unique(buckets):
            w = writers.get(int(b))
            if w is None:
                w = writers[int(b)] = RollingWriter(table, ctx.scanner, ctx.params, ctx.partition, int(b), level,
                                                    file_source=1 if pk else 0)
            w.write(t.filter(pa.array(buckets == b)).select(columns))

    try:
        if pk:
            spec = MergeSpec.from_schema(schema, table.options, f"table {table.identifier}")
            for records in merge_slices(ctx, files, list(spec.key_fields), stats):
                out(merge_records(records, spec, True))
        else:
            for f in sorted(files, key=lambda f: meta_from_json(f.meta).min_sequence_number):
                for t in file_rows_with_seq(ctx, f, ctx.batch_rows([f], 1)):
                    stats["rows_read"] += t.num_rows
                    out(t)
        for w in writers.values():
            w.close()
    except BaseException:
        for w in writers.values():
            w.abort()
        raise
    return {"files": {str(b): [meta_to_json(m) for m in w.files] for b, w in writers.items()},
            "paths": [p for w in writers.values() for p in w.paths], "rows_read": stats["rows_read"],
            "rows_out": sum(w.rows_written for w in writers.values()), "seconds": round(time.time() - started, 3),
            "pid": os.getpid()}


# ---------------------------------------------------------------------------------------------- execution
@register_step(RESCALE_SCHEMA)
def _schema_step(ex: Execution, step: Step) -> None:
    plan = ex.plan
    assert isinstance(plan, RescalePlan)
    schema = ex.table.schema
    new = dataclasses.replace(schema, id=schema.id + 1, options={**schema.options, "bucket": str(plan.bucket_num)},
                              time_millis=int(time.time() * 1000))
    if not commit_schema(ex.table, new):  # through the table's catalog: its lock, its metastore
        raise CompactionTaskError(f"schema {new.id} of {ex.table.identifier} was created concurrently; nothing was "
                                  "rescaled")
    ex.written.append(FileAction(ex.table.schemas.path(new.id), "schema", f"option bucket -> {plan.bucket_num}"))
    ex.table = ex.table.refresh()  # the new schema: tasks and the commit write with its id


@register_step(RESCALE_REWRITE)
def _rewrite_step(ex: Execution, step: Step) -> None:
    plan = ex.plan
    assert isinstance(plan, RescalePlan)
    if not plan.tasks:
        return
    results, written = run_tasks(ex, SPLIT_FUNCTION, plan.tasks, plan.params, "rescale",
                                 lambda t: f"partition {t.partition_spec}, bucket {t.bucket}")
    outputs: dict[tuple[str, int], list[dict]] = {}
    for t, r in zip(plan.tasks, results):
        for b, metas in r["files"].items():
            outputs.setdefault((t.partition, int(b)), []).extend(metas)
    merged = _merge_runs(ex, plan, outputs, written)
    ex.state["rescale"] = {"outputs": merged, "paths": written, "rows_read": sum(int(r.get("rows_read", 0))
                                                                                for r in results),
                           "pids": sorted({int(r["pid"]) for r in results if "pid" in r})}


def _merge_runs(ex: Execution, plan: RescalePlan, outputs: dict[tuple[str, int], list[dict]],
                written: list[str]) -> dict[tuple[str, int], list[dict]]:
    """Level-0 runs of a new bucket (several old buckets fed it) merged into one sorted run at the max level."""

    table = ex.table
    scanner = TableScanner(table)
    split_level = {t.partition: t.output_level for t in plan.tasks}
    runs = {k: ms for k, ms in outputs.items() if split_level[k[0]] == 0 and table.is_primary_key}
    if not runs:
        return outputs
    max_level = plan.max_level
    spec = {t.partition: t.partition_spec for t in plan.tasks}
    tasks = []
    for (p, b), metas in sorted(runs.items()):
        part = bytes.fromhex(p)
        inputs = tuple(InputFile(m["file_name"], scanner.bucket_dir(part, b) + "/" + m["file_name"], 0, m["row_count"],
                                 m["file_size"], meta=m) for m in metas)
        tasks.append(CompactionTask(MERGE, p, spec[p], b, plan.bucket_num, inputs,
                                    f"rescale: {len(inputs)} run(s) into one", output_level=max_level,
                                    drop_delete=True))
    cplan = CompactionPlan(table=table.identifier, location=table.location, branch=table.branch,
                           base_snapshot=plan.base_snapshot, mode="full", tasks=tuple(tasks), params=plan.params)
    try:
        done = execute_plan(table, cplan, ex.runner, ex.progress)
    except BaseException:
        _delete_quietly(table, written)
        raise
    written += done.written_paths
    out = {k: ms for k, ms in outputs.items() if k not in runs}
    for t, r in zip(tasks, done.results):
        out[(t.partition, t.bucket)] = list(r["files"])
    # the level-0 runs were never committed: remove them now that they are merged
    _delete_quietly(table, [f.path for t in tasks for f in t.files])
    gone = {f.path for t in tasks for f in t.files}
    written[:] = [w for w in written if w not in gone]
    return out


@register_step(RESCALE_COMMIT)
def _commit_step(ex: Execution, step: Step) -> None:
    plan = ex.plan
    assert isinstance(plan, RescalePlan)
    st = ex.state.get("rescale")
    if st is None:
        return
    table = ex.table
    try:
        _commit(ex, plan, st)
    except CommitOutcomeUnknownError:
        raise  # maybe committed: its files may be the table's now
    except BaseException:
        _delete_quietly(table, st["paths"])
        raise


def _commit(ex: Execution, plan: RescalePlan, st: dict[str, Any]) -> None:
    table = ex.table
    scanner = TableScanner(table)
    assert plan.base_snapshot is not None
    base = table.snapshots.snapshot(plan.base_snapshot)
    parts = {bytes.fromhex(t.partition) for t in plan.tasks}
    deletes = [ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
               for e in scanner.live_entries(base).values() if e.partition in parts and e.bucket >= 0]
    adds = [ManifestEntry(FileKind.ADD, bytes.fromhex(p), b, plan.bucket_num, meta_from_json(m))
            for (p, b), ms in sorted(st["outputs"].items()) for m in ms]
    index_deleted = [ie for ie in scanner.index_entries(base) if ie.file_name in set(plan.index_files)]
    cond = next((c for c in plan.preconditions if isinstance(c, RealBucketsUnchanged)), None)
    committer = _PostponeCommit(table, PostponeInputsUnchanged((), cond.real_buckets) if cond else None,
                                commit_user=ex.state.get("commit_user"))
    snap = committer.commit(CommitChanges(data=tuple(deletes + adds), index_deleted=tuple(index_deleted)),
                            "OVERWRITE", plan.base_snapshot, now_millis=ex.state.get("commit_time_millis"))
    ex.snapshot_id = snap.id
    ex.done += [FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA,
                           f"bucket {e.bucket} of {e.total_buckets} replaced", e.file.file_size) for e in deletes]
    ex.done += [FileAction(scanner.index_file_path(ie), INDEX, "index of a replaced bucket", ie.file_size)
                for ie in index_deleted]
    ex.written += [FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA,
                              f"bucket {e.bucket} of {plan.bucket_num}, level {e.file.level}", e.file.file_size)
                   for e in adds]
    ex.details.update({"files_in": len(deletes), "rows_in": sum(e.file.row_count for e in deletes),
                       "live_rows_in": st["rows_read"], "files_out": len(adds),
                       "rows_out": sum(e.file.row_count for e in adds),
                       "bytes_out": sum(e.file.file_size for e in adds), "task_pids": st["pids"]})


__all__ = ["plan_rescale", "RescalePlan", "run_split_task", "SchemaIs", "RealBucketsUnchanged"]
