"""Manifest compaction: Paimon's `compact_manifest` procedure (`FileStoreCommitImpl.compactManifest`, Paimon 1.0+;
Java 0.9 has only the writers' own merge in `ManifestFileMerger`) — rewrite the latest snapshot's many small
manifests into few, committed as a COMPACT snapshot whose base manifest list is the result and whose delta is empty.
Data does not change (same live files, same total record count).

    plan_compact_manifests(table) -> ManifestCompactionPlan
    manifest_count(table) -> int                   (Dagster sensors / checks)
    manifest_health(table) -> ManifestHealth        (count, small ones, size, the trigger, whether it is due)

What is merged — `ManifestFileMerger.tryFullCompaction` with the procedure's arguments (size trigger 1):
the data manifests of the latest snapshot (base list, then delta list) are read in order; the leading manifests that
have no DELETE entries, are at least `manifest.target-file-size` (8 MiB) and contain no file a later manifest
deletes are kept as they are; every other manifest is merged: ADD and DELETE entries of the same file cancel out,
only the live files' ADD entries are written, into new manifests of about `manifest.target-file-size` each. Nothing
is done when at most one manifest would be rewritten and it has no DELETE entry (Java would rewrite it unchanged).

The old manifests are never deleted: older snapshots and tags still use them; snapshot expiry (and tag deletion)
reclaims them like any other manifest. Index manifest, statistics, watermark and record counts are carried over.

Concurrency: the plan requires the latest snapshot's data manifests to still start with the planned ones
(`DataManifestsStartWith`): commits since the plan (which append manifests) are carried over after the merged ones;
a writer that merged manifests itself meanwhile makes the plan stale. The new manifests' names are chosen when
planning (the plan lists them); the commit checks, before the snapshot is written, that the new base lists exactly the
live files of the latest snapshot.

`manifest.compaction-trigger` (ours; default `manifest.merge-min-count`, 30): the number of manifests in the latest
snapshot at which `manifest_health(...).due` becomes true — what a sensor or asset check compares.
"""
from __future__ import annotations

import logging
import math
import time
import uuid
from dataclasses import dataclass
from typing import Any, ClassVar

import paimon_ops.format.manifest as mf
from paimon_ops.errors import CommitConflictError, InvalidArgumentError, PaimonOpsError, StalePlanError
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import (
    MANIFEST,
    MANIFEST_LIST,
    FileAction,
    Plan,
    PlanBuilder,
    Precondition,
    Step,
    declare_step_action,
    planner,
)
from paimon_ops.format.manifest import ManifestEntry, ManifestFileMeta
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.operations.compact_manifests import OPERATION as COMPACT_MANIFESTS
from paimon_ops.options import MANIFEST_COMPACTION_TRIGGER, MANIFEST_TARGET_FILE_SIZE
from paimon_ops.table.commit import MANIFEST_ROLL_ENTRIES, FileStoreCommit, _Written
from paimon_ops.table.scan import ManifestStore, TableScanner, merge_entries
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)


MANIFEST_COMPACTION_COMMIT = "manifest-compaction-commit"
declare_step_action(MANIFEST_COMPACTION_COMMIT, verb="would merge (left on disk for older snapshots and tags)")


class ManifestCompactionPlan(Plan):
    """Merging the latest snapshot's manifests into few, committed as a COMPACT snapshot."""

    operation = "compact_manifests"
    op = COMPACT_MANIFESTS  # its operation (the feature gate, the planner's parameters)

    @property
    def is_empty(self) -> bool:
        return not self.details.get("merged")

    @property
    def merged_manifests(self) -> tuple[FileAction, ...]:
        """The manifests that are merged (read, left on disk)."""
        return tuple(a for s in self.steps if s.action == MANIFEST_COMPACTION_COMMIT for a in s.files)


@dataclass(frozen=True)
class DataManifestsStartWith(Precondition):
    """The latest snapshot's data manifests (base list, then delta list) still start with the planned ones: commits
    since only appended manifests (carried over); a merge by someone else makes the plan stale."""

    kind: ClassVar[str] = "data-manifests"
    names: tuple[str, ...]

    def check(self, table: Any) -> str | None:
        latest = table.snapshots.latest()
        if latest is None:
            return "the table has no snapshot any more"
        now = [m.file_name for m in data_manifests(ManifestStore(table), latest)]
        if now[:len(self.names)] != list(self.names):
            return ("the latest snapshot's manifests were merged or replaced since the plan (a writer's manifest "
                    "merge, another manifest compaction or a rollback)")
        return None

    def describe(self) -> str:
        return f"the latest snapshot still starts with the {len(self.names)} planned manifest(s)"


def data_manifests(store: ManifestStore, snapshot: Snapshot) -> list[ManifestFileMeta]:
    ref = f"snapshot {snapshot.id}"
    return list(store.manifest_list(snapshot.base_manifest_list, ref)) +\
        list(store.manifest_list(snapshot.delta_manifest_list, ref))


# ---------------------------------------------------------------------------------------------- health
@dataclass(frozen=True)
class ManifestHealth:
    snapshot_id: int | None
    manifests: int         # data manifests of the latest snapshot (base + delta lists)
    small_manifests: int   # below manifest.target-file-size
    total_bytes: int
    trigger: int           # manifest.compaction-trigger
    due: bool              # manifests >= trigger

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def compaction_trigger(table: FileStoreTable) -> int:
    opts = getattr(table, "raw", table).options
    return opts.get(MANIFEST_COMPACTION_TRIGGER)


def manifest_count(table: FileStoreTable) -> int:
    """Data manifests the latest snapshot reads (base + delta manifest lists); 0 without a snapshot."""
    table = getattr(table, "raw", table)  # a facade po.Table or the engine's
    latest = table.snapshots.latest()
    return len(data_manifests(ManifestStore(table), latest)) if latest is not None else 0


def manifest_health(table: FileStoreTable) -> ManifestHealth:
    """What a Dagster sensor or asset check needs: manifests in the latest snapshot against
    `manifest.compaction-trigger`."""
    table = getattr(table, "raw", table)  # a facade po.Table or the engine's
    latest = table.snapshots.latest()
    target = table.options.get(MANIFEST_TARGET_FILE_SIZE)
    metas = data_manifests(ManifestStore(table), latest) if latest is not None else []
    trigger = compaction_trigger(table)
    return ManifestHealth(latest.id if latest else None, len(metas), sum(1 for m in metas if m.file_size < target),
                          sum(m.file_size for m in metas), trigger, len(metas) >= trigger)


# ---------------------------------------------------------------------------------------------- the merge
@dataclass
class MergeResult:
    kept: list[ManifestFileMeta]        # leading large manifests without deletes, untouched
    merged: list[ManifestFileMeta]      # rewritten
    entries: list[ManifestEntry]        # the ADD entries the rewritten manifests hold together, in Java's order
    cancelled: int                      # ADD/DELETE pairs dropped
    unmatched_deletes: int              # DELETE entries whose ADD is in no manifest (dropped, as Java does)


def merge_manifests(store: ManifestStore, metas: list[ManifestFileMeta], target: int, where: str) -> MergeResult:
    """ManifestFileMerger.tryFullCompaction(size trigger 1): see the module docstring."""
    i = 0
    while i < len(metas) and metas[i].num_deleted_files == 0 and metas[i].file_size >= target:
        i += 1
    base, delta = metas[:i], metas[i:]
    delta_entries = [e for m in delta for e in store.manifest(m.file_name, where)]
    adds, deletes = merge_entries(delta_entries, where)
    delete_ids = set(deletes)
    kept: list[ManifestFileMeta] = []
    rewrite_from = len(base)
    base_entries: list[list[ManifestEntry]] = []
    for j, m in enumerate(base):
        entries = store.manifest(m.file_name, where)
        if any(e.identifier in delete_ids for e in entries):
            rewrite_from = j
            base_entries.append(entries)
            break
        kept.append(m)
    for m in base[rewrite_from + 1:]:
        base_entries.append(store.manifest(m.file_name, where))
    out: list[ManifestEntry] = []
    matched = 0
    for entries in base_entries:
        for e in entries:
            if e.kind != mf.FileKind.ADD:
                raise PaimonOpsError(f"{where}: manifest without DELETE entries holds a DELETE entry for "
                                     f"{e.file.file_name}")
            if e.identifier in delete_ids:
                matched += 1
            else:
                out.append(e)
    out += list(adds.values())
    cancelled = (len(delta_entries) - len(adds) - len(deletes)) // 2 + matched
    return MergeResult(kept, base[rewrite_from:] + delta, out, cancelled, len(deletes) - matched)


def _per_file(merged: list[ManifestFileMeta], entries: int, target: int) -> int:
    """Entries per new manifest so that each is about `target` bytes (estimated from the inputs' bytes per entry)."""
    n_in = sum(m.num_added_files + m.num_deleted_files for m in merged)
    per_entry = max(1.0, sum(m.file_size for m in merged) / max(1, n_in))
    return max(1, min(MANIFEST_ROLL_ENTRIES, int(target // per_entry)))


# ---------------------------------------------------------------------------------------------- planning
def _resolve_run_id(params: dict[str, Any]) -> None:
    if params.get("run_id") is None:
        params["run_id"] = str(uuid.uuid4())


@planner(ManifestCompactionPlan, hidden=("run_id",), resolve=_resolve_run_id)
def plan_compact_manifests(table: FileStoreTable, *, run_id: str | None = None) -> ManifestCompactionPlan:
    """Which manifests of the latest snapshot are merged, into which new files (see the module docstring). `run_id`
    (a UUID, chosen when not given) names the new manifests."""
    try:
        run_id = str(uuid.UUID(str(run_id))) if run_id is not None else str(uuid.uuid4())
    except ValueError:
        raise InvalidArgumentError(f"run_id must be a UUID, got {run_id!r}") from None
    store = ManifestStore(table)
    latest = table.snapshots.latest()
    b = PlanBuilder()
    plan_pending(b, table)  # first finish what an interrupted run left
    target = table.options.get(MANIFEST_TARGET_FILE_SIZE)
    details: dict[str, Any] = {"target_file_size": target, "trigger": compaction_trigger(table)}
    if latest is None:
        details.update({"manifests_before": 0, "merged": [], "reason": "the table has no snapshot"})
        return b.build(ManifestCompactionPlan, table, details, base_snapshot=None)
    metas = data_manifests(store, latest)
    where = f"snapshot {latest.id}"
    res = merge_manifests(store, metas, target, where)
    details.update({"manifests_before": len(metas), "bytes_before": sum(m.file_size for m in metas),
                    "entries_before": sum(m.num_added_files + m.num_deleted_files for m in metas)})
    nothing = not res.merged or (len(res.merged) == 1 and res.merged[0].num_deleted_files == 0)
    if nothing:
        details.update({"merged": [], "kept": [m.file_name for m in metas],
                        "reason": "nothing to merge: every manifest is large and free of DELETE entries"
                                  if not res.merged else "only one small manifest without DELETE entries"})
        return b.build(ManifestCompactionPlan, table, details, base_snapshot=latest.id)
    per_file = _per_file(res.merged, len(res.entries), target)
    n_out = math.ceil(len(res.entries) / per_file) if res.entries else 0
    outputs = [f"manifest-{run_id}-{k}" for k in range(n_out)]
    lists = [f"manifest-list-{run_id}-0", f"manifest-list-{run_id}-1"]
    details.update({
        "kept": [m.file_name for m in res.kept],
        "merged": [{"manifest": m.file_name, "bytes": m.file_size, "added": m.num_added_files,
                    "deleted": m.num_deleted_files} for m in res.merged],
        "live_entries": len(res.entries), "cancelled_pairs": res.cancelled,
        "manifests_after": len(res.kept) + n_out,
    })
    if res.unmatched_deletes:
        b.warn(f"{res.unmatched_deletes} DELETE entr(y/ies) of the latest snapshot name no file any manifest adds; "
               "they are dropped (as Java's merge does)")
    b.step(f"merge {len(res.merged)} manifests into {n_out}, commit a COMPACT snapshot", MANIFEST_COMPACTION_COMMIT,
           uuid=run_id, inputs=[m.file_name for m in metas], kept=len(res.kept), per_file=per_file,
           outputs=outputs, lists=lists)
    why = "merged into the new base manifests; kept on disk while older snapshots or tags use it"
    for m in res.merged:
        b.add(FileAction(table.manifest_path(m.file_name), MANIFEST, why, m.file_size))
    for k, name in enumerate(outputs):
        b.creates(FileAction(table.manifest_path(name), MANIFEST,
                             f"merged manifest {k + 1} of {n_out} (live files' ADD entries)"))
    b.creates(FileAction(table.manifest_path(lists[0]), MANIFEST_LIST, "base manifest list of the COMPACT snapshot"))
    b.creates(FileAction(table.manifest_path(lists[1]), MANIFEST_LIST, "empty delta manifest list"))
    b.require(DataManifestsStartWith(tuple(m.file_name for m in metas)))
    return b.build(ManifestCompactionPlan, table, details, base_snapshot=latest.id)


# ---------------------------------------------------------------------------------------------- execution
@register_step(MANIFEST_COMPACTION_COMMIT)
def _commit_step(ex: Execution, step: Step) -> None:
    table = ex.table
    plan = ex.plan
    p = step.params
    inputs: list[str] = list(p["inputs"])
    store = ManifestStore(table)
    latest = table.snapshots.latest()
    if latest is None:
        raise StalePlanError(plan.operation, plan.table, ["the table has no snapshot any more"])
    metas = data_manifests(store, latest)
    if [m.file_name for m in metas[:len(inputs)]] != inputs:
        raise StalePlanError(plan.operation, plan.table, ["the latest snapshot's manifests changed while the plan "
                                                          "was being applied"])
    target = table.options.get(MANIFEST_TARGET_FILE_SIZE)
    res = merge_manifests(store, metas[:len(inputs)], target, f"snapshot {latest.id}")
    if len(res.kept) != int(p["kept"]):
        raise StalePlanError(plan.operation, plan.table, ["manifest.target-file-size changed since the plan"])
    committer = FileStoreCommit(table, commit_user=ex.state.get("commit_user"), store=store,
                                journal=ex.journal_writes, name_uuid=str(uuid.UUID(str(p["uuid"]))))
    merged = _Written()
    try:
        committer._journal_names()  # before the first merged manifest is written
        per_file = int(p["per_file"])
        out_metas: list[ManifestFileMeta] = []
        for start in range(0, len(res.entries), per_file):
            out_metas += committer.write_manifests(res.entries[start:start + per_file], latest, merged)
        snap = _commit(table, committer, res.kept + out_metas, inputs, plan, ex.state.get("commit_time_millis"))
    except BaseException:
        if committer.committed is None:
            committer._cleanup(merged)  # no snapshot references the merged manifests
        raise
    ex.snapshot_id = snap.id
    ex.written += [FileAction(table.manifest_path(m.file_name), MANIFEST, "merged manifest", m.file_size)
                   for m in out_metas]
    ex.written += [FileAction(table.manifest_path(snap.base_manifest_list), MANIFEST_LIST, "base manifest list",
                              snap.base_manifest_list_size),
                   FileAction(table.manifest_path(snap.delta_manifest_list), MANIFEST_LIST, "empty delta list",
                              snap.delta_manifest_list_size)]
    after = data_manifests(ManifestStore(table), snap)
    ex.details.update({"manifests_after": len(after), "manifests_written": len(out_metas),
                       "live_entries": len(res.entries), "cancelled_pairs": res.cancelled})


def _commit(table: FileStoreTable, committer: FileStoreCommit, merged: list[ManifestFileMeta], inputs: list[str],
            plan: Plan, now_millis: int | None) -> Snapshot:
    """The COMPACT snapshot, through the one commit loop: base = merged + whatever was committed after the planned
    manifests; retried when another commit wins the snapshot id and the planned manifests are still the prefix."""
    scanner = TableScanner(table, committer.store)

    def check(latest: Snapshot | None) -> None:
        metas = data_manifests(committer.store, latest) if latest is not None else []
        if latest is None or [m.file_name for m in metas[:len(inputs)]] != inputs:
            raise CommitConflictError(table.identifier, plan.base_snapshot, latest.id if latest else None,
                                      "the manifests to merge were merged or replaced concurrently")
        _verify(committer.store, merged + metas[len(inputs):], scanner, latest)

    def build(latest: Snapshot | None, written: _Written) -> Snapshot:
        assert latest is not None
        base = merged + data_manifests(committer.store, latest)[len(inputs):]
        committer._counters["manifest-list"] = 0  # the planned list names (unreferenced until the snapshot exists)
        base_name, base_size = committer._write_list(base, latest, written)
        delta_name, delta_size = committer._write_list([], latest, written)
        return Snapshot(
            version=3, id=latest.id + 1, schema_id=latest.schema_id, base_manifest_list=base_name,
            base_manifest_list_size=base_size, delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
            changelog_manifest_list=None, changelog_manifest_list_size=None, index_manifest=latest.index_manifest,
            commit_user=committer.commit_user, commit_identifier=2**63 - 1, commit_kind="COMPACT",
            time_millis=now_millis if now_millis is not None else int(time.time() * 1000),
            total_record_count=latest.total_record_count, delta_record_count=0, changelog_record_count=0,
            watermark=latest.watermark, statistics=latest.statistics, next_row_id=latest.next_row_id,
            properties=latest.properties)  # Java's compactManifest carries the latest snapshot's properties

    return committer.commit_snapshot(check, build, plan.base_snapshot)


def _verify(store: ManifestStore, base: list[ManifestFileMeta], scanner: TableScanner, latest: Snapshot) -> None:
    """The new base must hold exactly the latest snapshot's live files (never commit a manifest set that differs)."""
    adds, deletes = merge_entries((e for m in base for e in store.manifest(m.file_name, "new base")), "new base")
    live = scanner.live_entries(latest)
    if set(adds) != set(live):
        missing, extra = len(set(live) - set(adds)), len(set(adds) - set(live))
        raise PaimonOpsError(f"manifest compaction of {scanner.table.identifier} would change the live files "
                             f"({missing} missing, {extra} extra); nothing was committed")


__all__ = ["ManifestCompactionPlan", "DataManifestsStartWith", "ManifestHealth", "MergeResult",
           "plan_compact_manifests", "manifest_count", "manifest_health", "merge_manifests",
           "data_manifests", "compaction_trigger", "MANIFEST_COMPACTION_COMMIT"]
