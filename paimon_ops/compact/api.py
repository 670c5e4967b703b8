"""Compaction entry points: plan → execute (tasks on a runner) → commit (one COMPACT snapshot) → report, through
the one executor: a `CompactionPlan` has two steps, the tasks and the commit, and requires its inputs to be still
live (`InputsLive`).

Failure rules: a failed task, a failed commit or a conflict leaves nothing referenced — every data, changelog and
index file this run wrote is deleted again and no snapshot is created. On a conflict (our input files were
compacted or deleted, or a bucket's deletion vectors changed since the plan) the run aborts, or re-plans on the new
latest snapshot when `max_replans` allows.
"""
from __future__ import annotations

import logging
import posixpath
import time
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

from paimon_ops.compact.buckets import open_table
from paimon_ops.compact.dv import DvChanges, dv_index_path, rewrite_dv_indexes, supports_cardinality, write_dv_index
from paimon_ops.compact.model import (
    COMPACTION_COMMIT,
    COMPACTION_TASKS,
    EVOLUTION,
    FILE_SOURCE_COMPACT,
    LSM,
    METADATA_UPGRADES,
    CompactionPlan,
    index_entry_from_json,
    meta_from_json,
)
from paimon_ops.compact.rowtrack import RowRangeCommit, moved_deletion_vectors
from paimon_ops.compact.rowtrack import enabled as rowtrack_enabled
from paimon_ops.errors import (
    CancelledError,
    CommitOutcomeUnknownError,
    CompactionTaskError,
    CorruptMetadataError,
    MissingFileError,
    PaimonOpsError,
)
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.journal import journal_dir
from paimon_ops.execution.plan import CHANGELOG, DATA, INDEX, FileAction, Step
from paimon_ops.execution.runner import LocalRunner, Progress, Runner
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.removal import allowed_roots, check_paths, remove_written
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)

TASK_FUNCTION = "paimon_ops.compact.rewrite.run_compaction_task"
SPARK_STRAGGLER_S = 2.0  # how long a cancelled Spark task's Python worker gets to stop before the second sweep


@dataclass
class ExecutionResult:
    plan: CompactionPlan
    results: list[dict]
    commit_token: str | None = None  # names the commit's new DV index files (the run's journal records it)

    @property
    def written_paths(self) -> list[str]:
        return [p for r in self.results for p in r.get("paths", [])]


def _delete_paths(table: FileStoreTable, paths: Sequence[str]) -> int:
    """Remove files this run wrote and did not commit (the one deletion path; an unreferenced leftover that cannot be
    removed is an orphan, never a correctness problem)."""
    return remove_written(table, list(paths), "uncommitted compaction output")[0]


def _token_dirs(table: FileStoreTable, plan: CompactionPlan, tokens: Sequence[str], commit_token: str) -> list[tuple[str, str]]:
    """(directory, token) of every file the run may write: each task's bucket directory and the index directory with
    its token, the commit's manifests and DV index files with the commit's."""
    scanner = TableScanner(table)
    pairs: list[tuple[str, str]] = []
    for t, token in zip(plan.tasks, tokens):
        d = scanner.bucket_dir(bytes.fromhex(t.partition), t.bucket)
        pairs += [(d, token), (table.index_dir, token)]
    pairs += [(table.index_dir, commit_token)]
    return list(dict.fromkeys(pairs))


def _leftovers(table: FileStoreTable, pairs: Sequence[tuple[str, str]]) -> list[str]:
    """Files named with one of the run's tokens (a cancelled or failed run: none of them is committed)."""
    by_dir: dict[str, set[str]] = {}
    for d, token in pairs:
        by_dir.setdefault(d, set()).add(token)
    out: list[str] = []
    for d, tokens in by_dir.items():
        try:
            listed = table.io.list_status(d)
        except (OSError, PaimonOpsError) as e:
            log.warning("cannot list %s to remove what the run wrote: %s", d, e)
            continue
        out += [st.path for st in listed if not st.is_dir and any(tok in st.name for tok in tokens)]
    return out


def _write_marker(table: FileStoreTable, marker: str) -> None:
    try:
        table.io.write_bytes(marker, b"cancelled")
    except (OSError, PaimonOpsError) as e:  # best effort: the driver still sweeps, and the journal stays
        log.warning("could not write the cancel marker %s: %s", marker, e)


def check_inputs(table: FileStoreTable, plan: CompactionPlan) -> None:
    """What a task would find out only after other tasks wrote their output, refused before anything is written:
    every input's schema exists, and — on local file systems, one listing per directory — every input data file
    and deletion-vector index file is a regular file where the metadata says (a missing file, a bucket directory
    that is a file, a symbolic link)."""
    files = [f for t in plan.tasks for f in t.files + t.lookup_files]
    known = set(table.schemas.list_ids())
    for f in files:
        sid = f.meta.get("schema_id")
        if isinstance(sid, int) and sid not in known:
            raise CorruptMetadataError(f.path, f"written with schema {sid}, which does not exist "
                                               f"({table.schemas.path(sid)}); refusing to compact it")
    if not table.io.is_local:
        return
    by_dir: dict[str, set[str]] = {}
    for p in dict.fromkeys([f.path for f in files] + [f.dv_index_file for f in files if f.dv_index_file]):
        d, name = posixpath.split(posixpath.normpath(p))
        by_dir.setdefault(d, set()).add(name)
    for d, names in by_dir.items():
        try:
            listed = {st.name: st for st in table.io.list_status(d, include_symlinks=True, strict=True)}
        except NotADirectoryError:
            raise CorruptMetadataError(d, "is not a directory, but the table's files are listed in it; refusing to "
                                          "compact") from None
        for name in sorted(names):
            st = listed.get(name)
            if st is None:
                raise MissingFileError(posixpath.join(d, name), "a compaction input, live in the latest snapshot")
            if st.is_dir or st.is_symlink:
                raise CorruptMetadataError(posixpath.join(d, name), "is not a regular file ("
                                           + ("a directory" if st.is_dir else f"a symbolic link to {st.link_target}")
                                           + "); refusing to compact it")


def execute_plan(table: FileStoreTable | str, plan: CompactionPlan, runner: Runner | None = None,
                 progress: Progress | None = None, journal: Any = None) -> ExecutionResult:
    """Run every task; if any fails, or the run is interrupted, delete what every task wrote and raise.

    Each task names its files with a token of its own (`file_uuid`), recorded in `journal` (an Execution's
    `journal_writes`) before anything is written; an interrupt (Ctrl-C, SIGTERM, a terminated Dagster run) stops
    queued tasks at once and running ones at their next batch, and every file named with the run's tokens is then
    removed (CancelledError says how many)."""
    table = open_table(table)
    runner = runner or LocalRunner()
    # inputs are files of this table, never anything else (a plan's task names them; the re-plan checks them too)
    check_paths(allowed_roots(table), [f.path for t in plan.tasks for f in t.files + t.lookup_files])
    check_inputs(table, plan)  # before the first write (the journal's included): a refusal leaves the table as it was
    tokens = [str(uuid.uuid4()) for _ in plan.tasks]
    commit_token = str(uuid.uuid4())
    pairs = _token_dirs(table, plan, tokens, commit_token)
    if journal is not None:
        journal(pairs)
    # executors that cannot see this process' cancel event (Spark) look for this marker between batches
    marker = posixpath.join(journal_dir(table), f"cancel-{commit_token}")
    tasks = [dict(t.to_task(dict(plan.params)), task_id=i, file_uuid=tokens[i], _cancel_marker=marker)
             for i, t in enumerate(plan.tasks)]
    # Executors re-open the table from its location: the overrides the driver planned with travel with the tasks,
    # so the merge engine and writer options are the same on both sides; so do the object-store settings.
    try:
        results = runner.run(TASK_FUNCTION, table.location, tasks, progress,
                             options={**table.io.task_options(), **table.options_override})
    except BaseException as e:
        spark = getattr(runner, "name", "") == "spark"
        if spark:
            _write_marker(table, marker)
        cleaned = _delete_paths(table, _leftovers(table, pairs))
        if spark:
            # a cancelled Spark task's Python worker may still be writing after its job ended: it stops at its next
            # batch (the marker) and removes its own files; sweep once more for what it had closed before
            time.sleep(SPARK_STRAGGLER_S)
            cleaned += _delete_paths(table, _leftovers(table, pairs))
            _delete_paths(table, [marker])
        if isinstance(e, Exception):
            raise
        raise CancelledError(f"compaction of {table.identifier} interrupted: queued tasks never started, running "
                             f"ones stopped; {cleaned} file(s) written were removed and nothing was committed",
                             cleaned) from None
    failed = [(plan.tasks[i], r) for i, r in enumerate(results) if not r.get("ok")]
    if failed:
        written = [p for r in results if r.get("ok") for p in r.get("paths", [])]
        _delete_paths(table, written + _leftovers(table, pairs))
        t, r = failed[0]
        raise CompactionTaskError(
            f"compaction of {table.identifier} failed in {len(failed)} of {len(tasks)} task(s); nothing was committed "
            f"and the files written were removed. First failure (partition {t.partition_spec}, bucket {t.bucket}): "
            f"{r.get('error')}")
    return ExecutionResult(plan, results, commit_token)


def commit_compaction(table: FileStoreTable | str, executed: ExecutionResult, commit_user: str | None = None,
                      now_millis: int | None = None, journal: Any = None) -> tuple[Snapshot | None, DvChanges]:
    """One COMPACT snapshot: DELETE every input exactly as it was added, ADD every output (upgraded files: the same
    file at its new level), the changelog files in the changelog manifest list, the new DV index files.
    On any failure every file of this run (data, changelog and index) is deleted and the error propagates."""
    table = open_table(table)
    plan = executed.plan
    scanner = TableScanner(table)
    deletes: list[ManifestEntry] = []
    adds: list[ManifestEntry] = []
    changelog: list[ManifestEntry] = []
    removed: set[tuple[bytes, str]] = set()
    lsm_buckets: set[tuple[bytes, int]] = set()
    dv = DvChanges()
    for t, r in zip(plan.tasks, executed.results):
        part = bytes.fromhex(t.partition)
        gone, upgraded = t.effects()
        for f in gone + upgraded:
            deletes.append(ManifestEntry(FileKind.DELETE, part, t.bucket, t.total_buckets, meta_from_json(f.meta)))
        for f in gone:
            removed.add((part, f.name))
        for f in upgraded:
            meta = meta_from_json(f.meta)
            if t.output_level is None or t.output_level <= meta.level:
                raise PaimonOpsError(f"task for bucket {t.bucket} upgrades {meta.file_name} from level {meta.level} "
                                     f"to level {t.output_level}")
            adds.append(ManifestEntry(FileKind.ADD, part, t.bucket, t.total_buckets, meta.with_level(t.output_level)))
        for m in r["files"]:
            meta = meta_from_json(m)
            if meta.file_source != FILE_SOURCE_COMPACT or meta.level < 0:
                raise PaimonOpsError(f"task for bucket {t.bucket} returned an invalid file {meta.file_name}")
            adds.append(ManifestEntry(FileKind.ADD, part, t.bucket, t.total_buckets, meta))
        for m in r.get("changelog") or []:
            changelog.append(ManifestEntry(FileKind.ADD, part, t.bucket, t.total_buckets, meta_from_json(m)))
        if t.kind == LSM:
            lsm_buckets.add((part, t.bucket))
            d = r.get("dv")
            if d:
                dv.deleted += [index_entry_from_json(e) for e in d["deleted"]]
                if d.get("added"):
                    dv.added.append(index_entry_from_json(d["added"]))
                dv.dropped_vectors += int(d.get("dropped_vectors", 0))
                dv.new_positions += int(d.get("new_positions", 0))
    index_entries = [index_entry_from_json(dict(d)) for d in plan.index_entries]
    index_entries = [ie for ie in index_entries if (ie.partition, ie.bucket) not in lsm_buckets]
    committer: FileStoreCommit | None = None
    try:
        more = rewrite_dv_indexes(table, scanner, index_entries, removed, executed.commit_token)
        dv.added += more.added
        dv.deleted += more.deleted
        dv.written_paths += more.written_paths
        dv.dropped_vectors += more.dropped_vectors
        if any(t.kind == EVOLUTION for t in plan.tasks):
            _move_deletion_vectors(table, scanner, executed, index_entries, dv)
        changes = CommitChanges(data=tuple(deletes + adds), index_added=tuple(dv.added),
                                index_deleted=tuple(dv.deleted), changelog=tuple(changelog))
        if changes.is_empty:
            return None, dv
        committer = (RowRangeCommit if rowtrack_enabled(table) else FileStoreCommit)(table, commit_user=commit_user,
                                                                                   journal=journal)
        snap = committer.commit(changes, "COMPACT", plan.base_snapshot, now_millis=now_millis)
        return snap, dv
    except BaseException as e:
        if committer is not None and committer.committed is not None or isinstance(e, CommitOutcomeUnknownError):
            raise  # committed (interrupted after the snapshot was written), or maybe: its files are the table's now
        cleaned = _delete_paths(table, executed.written_paths + dv.written_paths)
        if not isinstance(e, Exception):
            raise CancelledError(f"compaction of {table.identifier} interrupted before its commit; {cleaned} file(s) "
                                 "written were removed and nothing was committed", cleaned) from None
        raise


def _move_deletion_vectors(table: FileStoreTable, scanner: TableScanner, executed: ExecutionResult,
                           index_entries: list, dv: DvChanges) -> None:
    """Data evolution keeps deleted rows: the groups' vectors move to the merged files, in one new index file per
    bucket (AppendDeleteFileMaintainer.persist); the old vectors went with the index files rewritten above."""
    moved = moved_deletion_vectors(scanner, executed.plan.tasks, executed.results, index_entries)
    with_card = supports_cardinality(scanner)
    for (part, bucket), dvs in moved.items():
        name = f"index-{uuid.uuid4()}-0"
        dv.written_paths.append(dv_index_path(table, scanner, part, bucket, name))
        entry, _ = write_dv_index(table, scanner, part, bucket, dvs, with_card, name)
        dv.added.append(entry)
        dv.moved_vectors += len(dvs)


# ---------------------------------------------------------------------------------------------- executor steps
@register_step(COMPACTION_TASKS)
def _run_tasks(ex: Execution, step: Step) -> None:
    plan = ex.plan
    assert isinstance(plan, CompactionPlan)
    ex.state["compaction"] = execute_plan(ex.table, plan, ex.runner, ex.progress, journal=ex.journal_writes)


@register_step(METADATA_UPGRADES)
def _upgrades(ex: Execution, step: Step) -> None:
    """Nothing to do here: the commit records each upgrade as DELETE + ADD of the same file at its new level."""


@register_step(COMPACTION_COMMIT)
def _commit(ex: Execution, step: Step) -> None:
    executed: ExecutionResult = ex.state["compaction"]
    snap, dv = commit_compaction(ex.table, executed, ex.state.get("commit_user"), ex.state.get("commit_time_millis"),
                                 journal=ex.journal_writes)
    ex.snapshot_id = snap.id if snap else None
    plan = executed.plan
    files_in = [f for t in plan.tasks for f in t.effects()[0]]
    upgraded = [f for t in plan.tasks for f in t.effects()[1]]
    ex.done += [FileAction(f.path, DATA, "compacted away", f.file_size) for f in files_in]
    by_name = {p.rsplit("/", 1)[-1]: p for p in executed.written_paths}
    outs = [m for r in executed.results for m in r["files"]]
    ex.written += [FileAction(by_name.get(m["file_name"], m["file_name"]), DATA, "written by compaction",
                              m["file_size"]) for m in outs]
    cls = [m for r in executed.results for m in r.get("changelog") or []]
    ex.written += [FileAction(by_name.get(m["file_name"], m["file_name"]), CHANGELOG,
                              "changelog produced by compaction", m["file_size"]) for m in cls]
    scanner = TableScanner(ex.table)
    ex.written += [FileAction(scanner.index_file_path(ie), INDEX, "deletion vectors of the compacted buckets",
                              ie.file_size) for ie in dv.added]
    d: dict[str, Any] = {
        "files_in": len(files_in), "bytes_in": sum(f.file_size for f in files_in),
        "rows_in": sum(f.row_count for f in files_in),
        "live_rows_in": sum(int(r.get("rows_read", 0)) for r in executed.results),
        "rows_out": sum(m["row_count"] for m in outs), "files_out": len(outs),
        "bytes_out": sum(m["file_size"] for m in outs),
        "task_pids": sorted({int(r["pid"]) for r in executed.results if "pid" in r}),
        "merge_slices": sum(int(r.get("slices", 0)) for r in executed.results),
        "task_time_s": round(sum(float(r.get("seconds", 0)) for r in executed.results), 3),
        "dv_index_files_replaced": len(dv.deleted), "dv_index_files_written": len(dv.added),
        "deletion_vectors_dropped": dv.dropped_vectors,
    }
    if upgraded:
        d["files_upgraded"] = len(upgraded)
    if cls:
        d["changelog_files"] = len(cls)
        d["changelog_rows"] = sum(m["row_count"] for m in cls)
    for k in ("keys_looked_up", "keys_found", "lookup_rows_indexed"):
        if any(k in r for r in executed.results):
            d[k] = sum(int(r.get(k, 0)) for r in executed.results)
    if dv.new_positions:
        d["rows_marked_deleted"] = dv.new_positions
    if dv.moved_vectors:
        d["deletion_vectors_moved"] = dv.moved_vectors
    ex.details.update(d)


__all__ = ["execute_plan", "commit_compaction", "CompactionTaskError",
           "ExecutionResult", "TASK_FUNCTION", "CompactionPlan"]
