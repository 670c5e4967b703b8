"""Batch-mode automatic tags (``tag.automatic-creation=batch``): ``tag.batch.customized-name`` or
``batch-write-<yyyy-MM-dd of the latest commit>`` on the latest snapshot. An existing tag of that name on another
snapshot is deleted first (with reclamation) and re-created, like Java."""
from __future__ import annotations

from paimon_ops.execution.plan import TAG, WRITE_FILES, FileAction, LatestSnapshotIs, Plan, PlanBuilder, TagIs
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.lifecycle.schedule import TagSchedule
from paimon_ops.lifecycle.tag_deletion import plan_delete_tags
from paimon_ops.lifecycle.timeline import local_now
from paimon_ops.table.table import FileStoreTable, validate_tag_name
from paimon_ops.timeutil import local_millis_to_naive, to_local_millis

EXISTS, CREATE, REPLACE = "exists", "create", "replace"


def batch_tag_name(table: FileStoreTable, sched: TagSchedule, latest: Snapshot) -> str:
    if sched.batch_name:
        return sched.batch_name
    local = local_millis_to_naive(to_local_millis(latest.time_millis, sched.zone))
    return f"batch-write-{local.strftime('%Y-%m-%d')}"


def plan_batch_tag(table: FileStoreTable, sched: TagSchedule, now_ms: int, plan_type: type[Plan]) -> Plan:
    """The batch tag's plan, as a `plan_type` (the automatic tags' plan)."""
    latest = table.snapshots.latest()
    b = PlanBuilder()
    if latest is None:
        b.warn("the table has no snapshot; no batch tag")
        return b.build(plan_type, table, {"mode": "batch"})
    name = batch_tag_name(table, sched, latest)
    validate_tag_name(name)
    details = {"mode": "batch", "tag": name, "snapshot_id": latest.id}
    tag = Tag.from_snapshot(latest, sched.default_retained, local_now(table, now_ms) if sched.default_retained else None)
    write = FileAction(table.tags.path(name), TAG, f"batch tag {name!r} -> latest snapshot {latest.id}")
    if table.tags.exists(name):
        old = table.tags.tag(name)
        if old.id == latest.id:
            return b.build(plan_type, table, {**details, "status": EXISTS})
        # Java deletes the old batch tag (reclaiming what only it kept alive) before re-creating it
        deletion = plan_delete_tags(table, [name])
        b.steps.extend(deletion.steps)
        b.preconditions.extend(deletion.preconditions)
        b.warnings.extend(deletion.warnings)
        details.update(status=REPLACE, old_snapshot_id=old.id)
    else:
        b.require(TagIs(name, None))
        details["status"] = CREATE
    b.require(LatestSnapshotIs(latest.id))
    b.step("batch tag", WRITE_FILES, contents=[tag.to_json()], mode="create").add(write)
    return b.build(plan_type, table, details)


__all__ = ["plan_batch_tag", "batch_tag_name"]
