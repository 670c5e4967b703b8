"""Rollback as latest: the target snapshot's state committed as a NEW snapshot, every later snapshot and tag kept —
Java's `rollback_to_as_latest` procedure (`FileStoreCommitImpl.rollbackToAsLatest`, Paimon 1.4+; maintenance.md
§3.8). A `rollback --as-latest` plan (`plan_rollback` decides it).

The commit, through the table's catalog (its lock, its server, its metastore): one OVERWRITE snapshot `latest + 1`
whose base is new manifests of the latest snapshot's live files (no DELETE entry: a file put back must not meet its
old DELETE in the same snapshot's manifests) and whose delta DELETEs every data file live now but not in the target and
ADDs back every data file of the target no longer live, with the target's index manifest (deletion vectors, hash
index), schema id, watermark, statistics and properties, the target's total record count and `nextRowId` never
moving back (row ids stay unique) — Java's snapshot field for field. Nothing is deleted: the files taken out stay for
the snapshots and tags that keep them, and snapshot expiry reclaims them as usual.

The protecting tag. The files put back were deleted by a snapshot after the target, so their snapshot ids are no
longer one interval (maintenance.md §0.4): expiring that snapshot would reclaim a file the new latest snapshot uses —
in Java's expiry and in ours, which protects by the nearest tag. So, as Java does, a rollback to a snapshot (not to a
tag, which protects already) first creates the tag `rollback-to-as-latest-<target>-from-<latest>` on the target
(Java names it `…-<target>-<uuid>`; ours is named by the plan, so a rerun after a failed commit finds and reuses it).
Keep the tag while the snapshots using the put-back files live: deleting it earlier makes expiry delete files the
table still reads in Java (paimon-ops' deleter refuses such a delete instead).

A concurrent commit between planning and committing is a conflict (nothing committed): the delta was computed
against the planned latest snapshot.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import paimon_ops.features as features
from paimon_ops.catalog import check_sync
from paimon_ops.errors import CommitConflictError, StalePlanError
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.plan import (
    DATA,
    SNAPSHOT,
    TAG,
    WRITE_FILES,
    FileAction,
    LatestSnapshotIs,
    Plan,
    PlanBuilder,
    Step,
    TagIs,
    declare_step_action,
)
from paimon_ops.features import MANIFEST_REWRITES, Gate
from paimon_ops.format.manifest import FileKind, ManifestEntry
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.operations.rollback import OPERATION as ROLLBACK
from paimon_ops.table.commit import BATCH_COMMIT_IDENTIFIER, FileStoreCommit, _Written
from paimon_ops.table.scan import TableScanner
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import iso

TAG_PREFIX = "rollback-to-as-latest-"  # Java's ROLLBACK_TO_AS_LATEST_TAG_PREFIX

# The one step: the OVERWRITE commit (its files: the data files it takes out of the table and puts back).
AS_LATEST_COMMIT = "rollback-as-latest-commit"
declare_step_action(AS_LATEST_COMMIT, verb="would take out of / put back into the table (no file is deleted)")

# An as-latest rollback writes manifests (the delta) and reuses the target's index manifest: it handles what manifest
# rewrites handle (unknown manifest fields would be lost in the new manifests).
GATE = Gate("rollback (as latest)", MANIFEST_REWRITES)


class RollbackAsLatestPlan(Plan):
    """Committing the state of an older snapshot as the new latest snapshot, keeping every later snapshot and tag."""

    operation = "rollback_to_as_latest"
    op = ROLLBACK  # its operation (the feature gate, the planner's parameters)

    @property
    def is_empty(self) -> bool:
        return not any(s.action == AS_LATEST_COMMIT for s in self.steps)


@dataclass(frozen=True)
class Delta:
    """What the commit changes: DELETE entries of files live now but not in the target, ADD entries of the target's
    files no longer live."""

    out: tuple[ManifestEntry, ...]
    back: tuple[ManifestEntry, ...]

    @property
    def entries(self) -> tuple[ManifestEntry, ...]:
        return self.out + self.back

    @property
    def rows(self) -> int:
        return sum(e.file.row_count for e in self.back) - sum(e.file.row_count for e in self.out)


def delta(scanner: TableScanner, latest: Snapshot, target: Snapshot) -> Delta:
    """The data entries turning `latest`'s files into `target`'s (Java's rollbackToAsLatest, by file identity)."""
    now, then = scanner.live_entries(latest), scanner.live_entries(target)
    order = sorted
    out = tuple(now[k].with_(kind=FileKind.DELETE) for k in order(set(now) - set(then), key=_key))
    back = tuple(then[k].with_(kind=FileKind.ADD) for k in order(set(then) - set(now), key=_key))
    return Delta(out, back)


def _key(identifier: tuple) -> tuple:
    partition, bucket, level, name = identifier[:4]
    return partition, bucket, level, name


def protecting_tag(target: int, latest: int) -> str:
    return f"{TAG_PREFIX}{target}-from-{latest}"


def plan_as_latest(table: FileStoreTable, target: Snapshot, via_tag: str | None, latest: Snapshot,
                   details: dict[str, Any]) -> RollbackAsLatestPlan:
    """The plan of committing `target`'s state (a live snapshot, or the snapshot of tag `via_tag`) on top of `latest`
    (see the module docstring); its metadata was verified readable by the caller."""
    features.require(table, GATE)
    features.require(table, GATE, features.metadata_uses(table, snapshot=target))
    scanner = TableScanner(table)
    d = delta(scanner, latest, target)
    r = target.id
    what = f"snapshot {r}" + (f" (tag {via_tag})" if via_tag else "")
    details = {**details, "as_latest": True, "new_snapshot": latest.id + 1, "protecting_tag": None,
               "files_out": len(d.out), "files_back": len(d.back), "rows_after": target.total_record_count,
               "note": "a commit: every snapshot and tag stays; the files taken out stay on disk for them"}
    b = PlanBuilder()
    same_index = latest.index_manifest == target.index_manifest or \
        {ie.file_name for ie in scanner.index_entries(latest)} == {ie.file_name for ie in scanner.index_entries(target)}
    if not d.entries and same_index and latest.schema_id == target.schema_id:
        b.warn(f"the latest snapshot {latest.id} of {table.identifier} already holds the data of {what}; nothing to do")
        b.require(LatestSnapshotIs(latest.id))
        return b.build(RollbackAsLatestPlan, table, {**details, "new_snapshot": None})
    if via_tag is None:
        check_sync(table, "create_tag")
        name = protecting_tag(r, latest.id)
        details["protecting_tag"] = name
        if table.tags.exists(name):  # a rerun after the commit failed: the tag is there already
            b.require(TagIs(name, r))
        else:
            tag = Tag.from_snapshot(target.to_snapshot() if isinstance(target, Tag) else target, None, None)
            b.step(f"protect the files of snapshot {r}", WRITE_FILES, contents=[tag.to_json()], mode="create")
            b.add(FileAction(table.tags.path(name), TAG,
                             f"keeps the files of snapshot {r} that the new latest snapshot uses again from snapshot "
                             "expiry (Java's rollback_to_as_latest tag); delete it once the snapshots before it are "
                             "gone"))
            b.require(TagIs(name, None))
    else:
        b.require(TagIs(via_tag, r))
    b.step(f"commit snapshot {latest.id + 1} (OVERWRITE) with the data of {what}", AS_LATEST_COMMIT, target=r,
           via_tag=via_tag, tag=details["protecting_tag"], base=latest.id)
    out_why = f"taken out of the table (not in {what}); stays on disk for the snapshots and tags that keep it"
    back_why = f"put back into the table: live in {what}"
    for e in d.out:
        b.add(FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA, out_why, e.file.file_size))
    for e in d.back:
        b.add(FileAction(scanner.data_file_path(e.partition, e.bucket, e.file), DATA, back_why, e.file.file_size))
    b.creates(FileAction(table.snapshots.path(latest.id + 1), SNAPSHOT,
                         f"the new latest snapshot: the data of {what}, committed at the time of execution"))
    b.require(LatestSnapshotIs(latest.id))
    return b.build(RollbackAsLatestPlan, table, details, base_snapshot=latest.id)


def _target(table: FileStoreTable, step: Step) -> Snapshot:
    p = step.params
    name = p.get("via_tag") or p.get("tag")
    live = table.snapshots.try_snapshot(int(p["target"]))
    return live if live is not None else table.tags.tag(str(name))


@register_step(AS_LATEST_COMMIT)
def _commit(ex: Execution, step: Step) -> None:
    """The OVERWRITE commit on the planned latest snapshot, with exactly the planned delta; a commit since (or a delta
    that came out differently) is refused, nothing committed."""
    table, plan, p = ex.table, ex.plan, step.params
    base = int(p["base"])
    target = _target(table, step)
    committer = FileStoreCommit(table, commit_user=ex.state.get("commit_user"), journal=ex.journal_writes)
    scanner = committer.scanner
    latest = table.snapshots.latest()
    if latest is None or latest.id != base:
        raise StalePlanError(plan.operation, plan.table, [f"the latest snapshot is now "
                                                          f"{latest.id if latest else None}, not {base}"])
    d = delta(scanner, latest, target)
    if {scanner.data_file_path(e.partition, e.bucket, e.file) for e in d.entries} != {a.path for a in step.files}:
        raise StalePlanError(plan.operation, plan.table, ["the files of the target or the latest snapshot differ "
                                                          "from the plan's"])

    def check(now: Snapshot | None) -> None:
        if now is None or now.id != base:
            raise CommitConflictError(table.identifier, base, now.id if now else None,
                                      "another writer committed since the rollback was planned")

    def build(now: Snapshot | None, written: _Written) -> Snapshot:
        assert now is not None  # (check passed)
        # the base: new manifests of the latest snapshot's live files only (Java's rollbackToAsLatest), so that every
        # file is ADDed at most once and DELETEd at most once in the new snapshot's manifests — readers that merge
        # DELETEs by identity before ADDs (pypaimon, pypaimon-rust) would drop a file put back on top of the latest
        # snapshot's own manifests, which still hold its old DELETE
        live = [e for _, e in sorted(scanner.live_entries(now).items(), key=lambda kv: _key(kv[0]))]
        base_name, base_size = committer._write_list(committer.write_manifests(live, now, written), now, written)
        delta_metas = committer.write_manifests(list(d.entries), now, written) if d.entries else []
        delta_name, delta_size = committer._write_list(delta_metas, now, written)
        next_row_id = max((i for i in (now.next_row_id, target.next_row_id) if i is not None), default=None)
        return Snapshot(
            version=3, id=now.id + 1, schema_id=target.schema_id,
            base_manifest_list=base_name, base_manifest_list_size=base_size,
            delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
            index_manifest=target.index_manifest, commit_user=committer.commit_user,
            commit_identifier=BATCH_COMMIT_IDENTIFIER, commit_kind="OVERWRITE",
            time_millis=ex.state.get("commit_time_millis") or int(time.time() * 1000),
            total_record_count=target.total_record_count, delta_record_count=d.rows,
            watermark=target.watermark, statistics=target.statistics, properties=target.properties,
            next_row_id=next_row_id)

    snap = committer.commit_snapshot(check, build, base, delta=d.entries)
    ex.snapshot_id = snap.id
    ex.details.update({"committed_at": iso(snap.time_millis), "files_out": len(d.out), "files_back": len(d.back)})


__all__ = ["RollbackAsLatestPlan", "plan_as_latest", "protecting_tag", "delta", "TAG_PREFIX", "AS_LATEST_COMMIT"]
