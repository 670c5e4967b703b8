"""Rollback to a snapshot or a tag, metadata only, as Paimon >= 1.2 does on file-system catalogs
(maintenance.md §3.8, checklist 12).

    plan_rollback(table, snapshot_id=None, tag=None, timestamp=None, watermark=None, as_latest=False) -> Plan

The target: a snapshot (live, or held by a tag), a tag, the snapshot current at `timestamp` (Java's
rollback_to_timestamp) or the latest whose watermark is at or before `watermark` (Java's rollback_to_watermark:
`SnapshotManager.earlierOrEqualWatermark`; a snapshot without a watermark has none at or before anything). With
`as_latest` the target's data is committed as a new snapshot and nothing is removed (`rollback_as_latest`).

Removes snapshots, long-lived changelogs and tags newer than the target; data, manifest and index files written
after the target become orphans for `remove_orphans`. The CLI refuses without `--yes` (the error says what would be
removed). Order: (restore the target snapshot from its tag if it expired) -> LATEST hint -> snapshot files newest
first -> changelog files newest first -> newer tags. Not atomic, but every step is idempotent: re-run after a crash.

Deviation in order only: Java writes a tag's expired snapshot back *after* deleting the newer snapshots; we write it
first so that the table always has a readable latest snapshot while the rollback is in progress.
"""
from __future__ import annotations

import dataclasses
import logging
import posixpath

from paimon_ops.catalog import catalog_of
from paimon_ops.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    MissingFileError,
    PaimonOpsError,
    UnsafeOperationError,
    arg,
)
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import (
    DELETE_ORDERED,
    ENSURE_HINTS,
    HINT,
    LONG_CHANGELOG,
    SNAPSHOT,
    TAG,
    WRITE_FILES,
    WRITE_HINT,
    FileAction,
    LatestSnapshotIs,
    Plan,
    PlanBuilder,
    Step,
    declare_step_action,
    planner,
)
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.lifecycle.protection import TagsAre, read_tags, tag_set
from paimon_ops.lifecycle.reclaim import file_size
from paimon_ops.lifecycle.rollback_as_latest import RollbackAsLatestPlan, plan_as_latest
from paimon_ops.lifecycle.timeline import SnapshotTimeline, valid_watermark
from paimon_ops.operations.model import InstantMs
from paimon_ops.operations.rollback import OPERATION as ROLLBACK
from paimon_ops.table.scan import ManifestStore
from paimon_ops.table.table import EARLIEST, LATEST, FileStoreTable
from paimon_ops.timeutil import iso

log = logging.getLogger(__name__)


# A catalog owning the table's history (REST) rolls back on its own (`Catalog.rollback_to`).
CATALOG_ROLLBACK = "catalog-rollback"
# Its files are what the catalog removes (newer snapshots and tags): listed for review, never deleted by us.
declare_step_action(CATALOG_ROLLBACK, deletes=True, removes_files=False, verb="would be removed by the catalog's rollback",
                    done="removed by the catalog's rollback")


class RollbackPlan(Plan):
    """Rolling a branch back to a snapshot or tag: metadata only, newer snapshots, changelogs and tags removed."""

    operation = "rollback"
    op = ROLLBACK  # its operation (the feature gate, the planner's parameters)


def _resolve_target(table: FileStoreTable, snapshot_id: int | None, tag: str | None,
                    tags: list[tuple[str, Tag]]) -> tuple[Snapshot, str | None]:
    if (snapshot_id is None) == (tag is None):
        raise InvalidArgumentError(f"rollback needs exactly one of {arg('snapshot_id')} or {arg('tag')}")
    if tag is not None:
        for n, t in tags:
            if n == tag:
                return t, n
        known = ", ".join(n for n, _ in tags) or "none"
        raise InvalidArgumentError(f"tag {tag!r} does not exist on {table.identifier} (branch {table.branch}); "
                                   f"existing tags: {known}")
    if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
        raise InvalidArgumentError(f"{arg('snapshot_id')} must be an integer, got {snapshot_id!r}")
    s = table.snapshots.try_snapshot(snapshot_id)  # corrupt -> CorruptMetadataError
    if s is not None:
        return s, None
    for n, t in tags:
        if t.id == snapshot_id:  # expired but tagged: roll back to that tag (Java rollbackTo(long))
            return t, n
    ids = table.snapshots.list_ids()
    have = f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshots"
    raise InvalidArgumentError(f"cannot roll back {table.identifier} to snapshot {snapshot_id}: it does not exist "
                               f"({have}) and no tag points at it")


def _verify_target(table: FileStoreTable, target: Snapshot, what: str, restore: bool) -> bool:
    """Read the target's whole metadata — manifest lists, every manifest, the index manifest — and refuse the
    rollback if any of it is unreadable: afterwards the target is the table's latest snapshot, and a latest snapshot
    that cannot be read breaks every reader and writer. Returns whether the changelog manifest list is readable
    (a tag restored after expiry has legitimately lost it: tags do not keep changelogs, maintenance.md §2.3)."""
    store = ManifestStore(table)
    try:
        for name in (target.base_manifest_list, target.delta_manifest_list):
            for meta in store.manifest_list(name, what):
                store.manifest(meta.file_name, name)
        if target.index_manifest:
            store.index_manifest(target.index_manifest, what)
    except CorruptMetadataError as e:  # MissingFileError included
        raise CorruptMetadataError(e.path, f"{e.problem}; refusing to roll {table.identifier} back to {what}: its "
                                           "metadata is unreadable, and it would become the latest snapshot. "
                                           "Nothing was changed") from None
    if not target.changelog_manifest_list:
        return True
    try:
        for meta in store.manifest_list(target.changelog_manifest_list, what):
            store.manifest(meta.file_name, target.changelog_manifest_list)
    except MissingFileError:
        if restore:
            return False
        raise
    except CorruptMetadataError as e:
        raise CorruptMetadataError(e.path, f"{e.problem}; refusing to roll {table.identifier} back to {what}: its "
                                           "changelog metadata is unreadable. Nothing was changed") from None
    return True


def _snapshot_at(table: FileStoreTable, timestamp_millis: int, tags: list[tuple[str, Tag]]) -> tuple[int | None, str | None]:
    """(snapshot id, None) of the latest live snapshot committed at or before the instant, else (None, tag) of the
    tag holding it; refused when the snapshot current then has expired untagged or the table had none yet."""
    timeline = SnapshotTimeline(table, tags)
    status, snap = timeline.at_or_before(int(timestamp_millis))
    when = iso(int(timestamp_millis))
    if status == SnapshotTimeline.OK and snap is not None:
        return _live_or_tag(table, snap.id, tags)
    if status == SnapshotTimeline.NONE:
        raise InvalidArgumentError(f"{table.identifier} had no snapshot at {when}; nothing to roll back to")
    raise InvalidArgumentError(f"the snapshot of {table.identifier} current at {when} has expired and no tag holds "
                               "it; cannot roll back to that point in time")


def _snapshot_at_watermark(table: FileStoreTable, watermark: int, tags: list[tuple[str, Tag]]
                           ) -> tuple[int | None, str | None]:
    """The latest snapshot whose watermark is at or before `watermark` (Java's earlierOrEqualWatermark; snapshots
    without one come first and qualify for nothing), live or tag-held; refused when there is none or it expired."""
    timeline = SnapshotTimeline(table, tags)

    def below(s: Snapshot) -> bool:
        v = valid_watermark(s)
        return v is None or v <= watermark
    status, snap = timeline.last_where(below)
    what = f"{watermark} ({iso(watermark)})"
    if status == SnapshotTimeline.OK and snap is not None and valid_watermark(snap) is not None:
        return _live_or_tag(table, snap.id, tags)
    if status == SnapshotTimeline.UNKNOWN:
        raise InvalidArgumentError(f"the last snapshot of {table.identifier} with a watermark at or before {what} has "
                                   "expired and no tag holds it; cannot roll back to that watermark")
    first = timeline.first_watermark()
    raise InvalidArgumentError(f"no snapshot of {table.identifier} has a watermark at or before {what} ("
                               + ("no snapshot carries a watermark" if first is None else
                                  f"the earliest live watermark is {first}, {iso(first)}") + "); nothing to roll back to")


def _live_or_tag(table: FileStoreTable, snapshot_id: int, tags: list[tuple[str, Tag]]) -> tuple[int | None, str | None]:
    if table.snapshots.exists(snapshot_id):
        return snapshot_id, None
    return None, next(n for n, t in tags if t.id == snapshot_id)


@planner(RollbackPlan, RollbackAsLatestPlan, renamed={"timestamp_millis": "timestamp"})
def plan_rollback(table: FileStoreTable, *, snapshot_id: int | None = None, tag: str | None = None,
                  timestamp: InstantMs | None = None, watermark: InstantMs | None = None,
                  as_latest: bool = False) -> Plan:
    """Plan rolling back to a snapshot, a tag, the point in time `timestamp` (the latest snapshot committed at or
    before it, live or held by a tag) or the watermark `watermark`; `as_latest`: as a new snapshot (a
    RollbackAsLatestPlan), nothing removed."""
    tags = read_tags(table)
    given = [arg(n) for n, v in (("snapshot_id", snapshot_id), ("tag", tag), ("timestamp", timestamp),
                                 ("watermark", watermark)) if v is not None]
    if len(given) > 1:
        raise InvalidArgumentError(f"give one of {arg('snapshot_id')}, {arg('tag')}, {arg('timestamp')} or "
                                   f"{arg('watermark')}, not {' and '.join(given)}")
    if timestamp is not None:
        snapshot_id, tag = _snapshot_at(table, timestamp, tags)
    elif watermark is not None:
        snapshot_id, tag = _snapshot_at_watermark(table, watermark, tags)
    target, via_tag = _resolve_target(table, snapshot_id, tag, tags)
    r = target.id
    latest = table.snapshots.latest_id()
    when = {"timestamp": iso(timestamp) if timestamp is not None else None,
            "watermark": watermark}
    what = f"snapshot {r}" + (f" (tag {via_tag})" if via_tag else "")
    if as_latest:
        latest_snap = table.snapshots.latest()
        if latest_snap is None:
            raise InvalidArgumentError(f"{table.identifier} has no snapshot; nothing to roll back")
        _verify_target(table, target, what, restore=True)
        return plan_as_latest(table, target, via_tag, latest_snap, {
            "branch": table.branch, "target_snapshot": r, "via_tag": via_tag, **when, "latest_before": latest})
    catalog = catalog_of(table)
    if catalog is not None and catalog.owns_history(table):
        return _plan_catalog_rollback(table, r, via_tag, latest, tags, timestamp)
    b = PlanBuilder()
    plan_pending(b, table)  # first finish what an interrupted run left (a temporary file of the restore)
    restore = via_tag is not None and not table.snapshots.exists(r)
    changelog_ok = _verify_target(table, target, what, restore)
    if not changelog_ok:
        b.warn(f"the changelog of {what} was already expired; the restored snapshot keeps its data but no "
               "changelog manifest list")
    newer = sorted((i for i in table.snapshots.list_ids() if i > r), reverse=True)
    cl_ids = table.changelogs.list_ids()
    newer_cl = sorted((i for i in cl_ids if i > r), reverse=True)
    newer_tags = [(n, t) for n, t in tags if t.id > r]
    remaining_cl = [i for i in cl_ids if i <= r]
    snap_dir, cl_dir = table.snapshots.dir, table.changelogs.dir
    if restore:
        # the tag's snapshot written back first, so the table always has a readable latest snapshot
        restored = target.to_snapshot() if isinstance(target, Tag) else target
        if not changelog_ok:
            restored = dataclasses.replace(restored, changelog_manifest_list=None, changelog_manifest_list_size=None,
                                           changelog_record_count=None)
        b.step("restore the target snapshot from its tag", WRITE_FILES, contents=[restored.to_json()], mode="create")
        b.add(FileAction(table.snapshots.path(r), SNAPSHOT, f"restored from tag {via_tag}"))
        b.step("earliest snapshot hint", WRITE_HINT, value=r)
        b.add(FileAction(posixpath.join(snap_dir, EARLIEST), HINT, f"earliest snapshot = {r}"))
    if newer or restore:
        # LATEST first: readers trust it as soon as snapshot r+1 is gone (maintenance.md §0.3, §3.8)
        b.step("latest snapshot hint", WRITE_HINT, value=r)
        b.add(FileAction(posixpath.join(snap_dir, LATEST), HINT, f"latest snapshot = {r}"))
    if newer and (table.snapshots._hint(EARLIEST) or 0) > r:
        # an EARLIEST hint naming a snapshot the rollback deletes is set to the earliest that stays first, so that
        # both hints name existing snapshots whenever the run stops
        b.step("earliest snapshot hint", ENSURE_HINTS, keep_empty=True,
               hints=[{"dir": snap_dir, "name": EARLIEST, "which": "first"}])
    b.step("snapshot files (newest first)", DELETE_ORDERED)
    for i in newer:
        p = table.snapshots.path(i)
        b.add(FileAction(p, SNAPSHOT, f"newer than rollback target {r}", file_size(table, p)))
    if newer_cl:
        b.step("latest changelog hint", WRITE_HINT, value=remaining_cl[-1] if remaining_cl else -1)
        b.add(FileAction(posixpath.join(cl_dir, LATEST), HINT, "latest changelog"))
    b.step("long-lived changelog files (newest first)", DELETE_ORDERED)
    for i in newer_cl:
        p = table.changelogs.path(i)
        b.add(FileAction(p, LONG_CHANGELOG, f"newer than rollback target {r}", file_size(table, p)))
    b.step("newer tags", DELETE_ORDERED)
    for n, t in newer_tags:
        p = table.tags.path(n)
        b.add(FileAction(p, TAG, f"tag {n} points at snapshot {t.id}, newer than rollback target {r}",
                         file_size(table, p)))
    # Hints end up right even if an interrupted earlier run could not write them (reruns converge).
    b.step("hints", ENSURE_HINTS, keep_empty=True, hints=[
        {"dir": snap_dir, "name": LATEST, "which": "last"},
        {"dir": snap_dir, "name": EARLIEST, "which": "first", "only_if_exists": not restore},
        {"dir": cl_dir, "name": LATEST, "which": "last", "default": -1, "only_if_exists": not newer_cl}])
    b.require(LatestSnapshotIs(latest), TagsAre(tag_set(tags)))
    try:
        for cid, (c, _) in sorted(table.consumers.consumers().items()):
            if c.next_snapshot > r + 1:
                b.warn(f"consumer {cid} will next read snapshot {c.next_snapshot}, beyond the rollback target {r}: "
                       "new commits reuse those ids, so reset the consumer after the rollback")
    except (OSError, PaimonOpsError) as e:  # consumers do not decide anything here: warn, do not refuse
        b.warn(f"could not read consumers ({e})")
    details = {"branch": table.branch, "target_snapshot": r, "via_tag": via_tag, **when, "latest_before": latest,
               "restore_snapshot_from_tag": restore, "restore_without_changelog": not changelog_ok,
               "removed_snapshots": sorted(newer),
               "removed_changelogs": sorted(newer_cl), "removed_tags": [n for n, _ in newer_tags],
               "changelog_latest_after": remaining_cl[-1] if remaining_cl else None,
               "note": "metadata only: data, manifest and index files written after the target become orphans; "
                       "run remove_orphans to reclaim them"}
    return b.build(RollbackPlan, table, details)


def _plan_catalog_rollback(table: FileStoreTable, r: int, via_tag: str | None, latest: int | None,
                            tags: list[tuple[str, Tag]], timestamp_millis: int | None) -> RollbackPlan:
    """A catalog that owns the table's history (REST) rolls back itself (`Catalog.rollback_to`): paimon-ops removes
    no snapshot file of it."""
    b = PlanBuilder()
    newer = [i for i in table.snapshots.list_ids() if latest is not None and r < i <= latest]
    b.step(f"roll back through the catalog to {'tag ' + via_tag if via_tag else f'snapshot {r}'}", CATALOG_ROLLBACK,
           snapshot_id=None if via_tag else r, tag=via_tag, from_snapshot=latest, keep_empty=latest != r)
    for i in sorted(newer, reverse=True):
        b.add(FileAction(table.snapshots.path(i), SNAPSHOT, f"newer than rollback target {r}"))
    for n, t in tags:
        if t.id > r:
            b.add(FileAction(table.tags.path(n), TAG, f"tag {n} points at snapshot {t.id}, newer than rollback target "
                                                      f"{r}"))
    b.require(LatestSnapshotIs(latest), TagsAre(tag_set(tags)))
    return b.build(RollbackPlan, table, {
        "branch": table.branch, "target_snapshot": r, "via_tag": via_tag,
        "timestamp": iso(timestamp_millis) if timestamp_millis is not None else None, "latest_before": latest,
        "restore_snapshot_from_tag": False, "restore_without_changelog": False, "removed_snapshots": newer,
        "removed_changelogs": [], "removed_tags": [n for n, t in tags if t.id > r], "changelog_latest_after": None,
        "note": "through the catalog, which owns the table's history"})


@register_step(CATALOG_ROLLBACK)
def _catalog_rollback(ex: Execution, step: Step) -> None:
    catalog = catalog_of(ex.table)
    if catalog is None or not catalog.owns_history(ex.table):
        raise PaimonOpsError(f"the rollback plan of {ex.plan.table} rolls back through its catalog, but the table was "
                             "opened without it; open it through its catalog")
    p = step.params
    catalog.rollback_to(ex.table, snapshot_id=p.get("snapshot_id"), tag=p.get("tag"),
                        from_snapshot=p.get("from_snapshot"))
    ex.done += step.files
    ex.details["rolled_back_through"] = catalog.endpoint


def _describe(plan: Plan) -> str:
    d = plan.details
    parts = []
    if d["removed_snapshots"]:
        s = d["removed_snapshots"]
        parts.append(f"{len(s)} snapshot(s) {s[0]}..{s[-1]}")
    if d["removed_changelogs"]:
        parts.append(f"{len(d['removed_changelogs'])} long-lived changelog(s)")
    if d["removed_tags"]:
        parts.append("tag(s) " + ", ".join(d["removed_tags"]))
    what = ", ".join(parts) or "nothing"
    target = f"snapshot {d['target_snapshot']}" + (f" (tag {d['via_tag']})" if d["via_tag"] else "")
    return f"rolling {plan.table} back to {target} would remove {what}"


def require_confirmation(plan: Plan, confirm: bool) -> None:
    """An operation that cannot be undone (rollback; another whose plan words its effect in `effect()`): executing
    one that changes something takes an explicit confirmation (`--yes`) — not a rollback as latest, which removes
    nothing (a commit)."""
    if isinstance(plan, RollbackAsLatestPlan):
        return
    if not confirm and (isinstance(plan, RollbackPlan) or not plan.is_empty):
        what = _describe(plan) if isinstance(plan, RollbackPlan) else plan.effect()  # type: ignore[attr-defined]
        raise UnsafeOperationError(f"{what}; this cannot be undone. Pass {arg('confirm', True)} to proceed "
                                   f"(or {arg('dry_run', True)} to see every file)")


__all__ = ["RollbackPlan", "RollbackAsLatestPlan", "plan_rollback", "require_confirmation"]
