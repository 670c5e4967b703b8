"""Manual tags: create (latest / a snapshot id / the snapshot current at an instant), replace, rename, list, delete
(maintenance.md §3.1-3.3, §3.9). Every operation is a plan (the tag files to write with their content, the tag
files to delete) with its preconditions, executed by the one executor.

Semantics decisions:

* Every new tag name goes through ``validate_tag_name`` (no empty, numeric, ``/``, ``..`` or control characters);
  new tag files are created with an atomic create-if-absent, so two concurrent creators cannot overwrite each other.
  Existing names (e.g. numeric names Java allowed) can still be read, renamed away from and deleted.
* A snapshot id resolves like Java's ``findSnapshot``: the live snapshot, else a tag holding that (expired) snapshot.
* ``timestamp_millis`` selects the snapshot *current* at that instant: the newest snapshot committed at or before
  it. This differs on purpose from Java's ``create_tag_from_timestamp`` procedure (smallest commit time >= ts):
  "the table as it was at T" is what a tag at a time means. If that snapshot has expired and is not tagged (its
  successor is unknown) we refuse rather than tag a different snapshot.
* Retention: ``tagCreateTime`` is written in the tag local zone (timeline.py).
* Replace follows Java (no reclamation of the old snapshot's files; a warning says when they become orphans).
  Deletion always goes through tag deletion with reclamation.
* Rename writes the new name with the old file's exact content, then deletes the old name; a rename interrupted
  between the two is finished only when asked (``resume=True`` / ``--resume``).
"""
from __future__ import annotations

import datetime as _dt
import logging
from dataclasses import dataclass
from typing import Any, Mapping, TypeVar

from paimon_ops.catalog import check_sync
from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.execution.plan import DELETE_ORDERED, TAG, WRITE_FILES, FileAction, Plan, PlanBuilder, TagIs, planner
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.lifecycle.schedule import auto_tag_matcher
from paimon_ops.lifecycle.timeline import check_existing_tag_name, find_snapshot, local_now, snapshot_current_at
from paimon_ops.operations.create_tag import OPERATION as CREATE_TAG
from paimon_ops.operations.model import InstantMs, TagName
from paimon_ops.operations.rename_tag import OPERATION as RENAME_TAG
from paimon_ops.operations.replace_tag import OPERATION as REPLACE_TAG
from paimon_ops.options import TAG_AUTOMATIC_CREATION, format_duration, parse_duration
from paimon_ops.table.table import FileStoreTable, validate_tag_name
from paimon_ops.timeutil import iso

log = logging.getLogger(__name__)
_P = TypeVar("_P", bound=Plan)


class CreateTagPlan(Plan):
    operation = "create_tag"
    op = CREATE_TAG  # its operation (the feature gate, the planner's parameters)


class ReplaceTagPlan(Plan):
    operation = "replace_tag"
    op = REPLACE_TAG  # its operation (the feature gate, the planner's parameters)


class RenameTagPlan(Plan):
    operation = "rename_tag"
    op = RENAME_TAG  # its operation (the feature gate, the planner's parameters)


def _retention(value: _dt.timedelta | str | None) -> _dt.timedelta | None:
    if value is None:
        return None
    td = parse_duration(value, "time_retained") if isinstance(value, str) else value
    if not isinstance(td, _dt.timedelta) or td <= _dt.timedelta(0):
        raise InvalidArgumentError(f"{arg('time_retained')} must be a positive duration, got {value!r}")
    return td


# ---------------------------------------------------------------------------------------------- listing
@dataclass(frozen=True)
class TagInfo:
    name: str
    snapshot_id: int
    snapshot_time_millis: int
    commit_kind: str
    total_record_count: int | None
    create_time: _dt.datetime | None  # naive local (tag local zone / Java JVM zone)
    time_retained: _dt.timedelta | None
    expires_at: _dt.datetime | None  # naive local; None = never by time
    snapshot_live: bool  # the tagged snapshot file still exists


def list_tags(table: FileStoreTable) -> list[TagInfo]:
    """All tags, oldest snapshot first (ties by name)."""
    earliest = table.snapshots.earliest_id()
    latest = table.snapshots.latest_id()
    out = []
    for name, tag in table.tags.tags():
        live = earliest is not None and earliest <= tag.id <= (latest or -1) and table.snapshots.exists(tag.id)
        ct, tr = tag.tag_create_time, tag.tag_time_retained
        out.append(TagInfo(name, tag.id, tag.time_millis, tag.commit_kind, tag.total_record_count, ct, tr,
                           ct + tr if ct is not None and tr is not None else None, live))
    return out


def is_java_auto_tagging(table: FileStoreTable) -> bool:
    return table.options.get(TAG_AUTOMATIC_CREATION) in ("process-time", "watermark")


def _validate_no_auto_tag(table: FileStoreTable, name: str, snapshot_id: int, replacing: str | None = None) -> None:
    """Java ``validateNoAutoTag``: with Java auto tagging on, one snapshot must not carry two auto tags (Java's
    auto creation fails with 'more than 1 auto-created tags of the same snapshot' otherwise)."""
    if not is_java_auto_tagging(table):
        return
    is_auto = auto_tag_matcher(table)
    if not is_auto(name):
        return
    others = [n for n, t in table.tags.tags() if t.id == snapshot_id and n not in (name, replacing) and is_auto(n)]
    if others:
        raise InvalidArgumentError(
            f"snapshot {snapshot_id} of {table.identifier} already carries auto tag {others[0]!r}; tag name "
            f"{name!r} also parses as an auto tag, and Java Paimon refuses two auto tags on one snapshot")


def write_new_tag(table: FileStoreTable, name: str, tag: Tag, period_name: bool = False) -> bool:
    """Create tag/tag-<name> only if absent (atomic on local FS); True if we created it.

    `period_name`: the name is an automatic period name from the table's formatter (may be all digits)."""
    validate_tag_name(name, allow_numeric=period_name)
    return table.io.write_atomic_if_absent(table.tags.path(name), tag.to_json().encode())


def _resolve_source(table: FileStoreTable, snapshot_id: int | None, timestamp_millis: int | None) -> tuple[Snapshot, str]:
    if snapshot_id is not None and timestamp_millis is not None:
        raise InvalidArgumentError(f"give either {arg('snapshot_id')} or {arg('timestamp')}, not both")
    if snapshot_id is not None:
        return find_snapshot(table, int(snapshot_id)), f"snapshot {snapshot_id}"
    if timestamp_millis is not None:
        s = snapshot_current_at(table, int(timestamp_millis))
        return s, f"snapshot {s.id}, current at {iso(int(timestamp_millis))}"
    latest = table.snapshots.latest()
    if latest is None:
        raise InvalidArgumentError(f"cannot tag {table.identifier}: the table has no snapshot")
    return latest, f"latest snapshot {latest.id}"


def _new_tag(table: FileStoreTable, snap: Snapshot, time_retained: _dt.timedelta | None, now_millis: int | None) -> Tag:
    create_time = local_now(table, now_millis) if time_retained is not None else None
    return Tag.from_snapshot(snap.to_snapshot() if isinstance(snap, Tag) else snap, time_retained, create_time)


# ---------------------------------------------------------------------------------------------- create / replace
@planner(CreateTagPlan, hidden=("ignore_if_exists",))
def plan_create_tag(table: FileStoreTable, name: TagName, *, snapshot_id: int | None = None,
                    timestamp: InstantMs | None = None, time_retained: _dt.timedelta | None = None,
                    replace: bool = False, now: InstantMs | None = None, ignore_if_exists: bool = False) -> Plan:
    """Tag the latest snapshot, `snapshot_id`, or the snapshot current at `timestamp` (the operation's Params);
    `replace` moves an existing tag of that name instead of refusing. `ignore_if_exists`: an existing tag is no
    error (nothing to do)."""
    validate_tag_name(name)
    snap, source = _resolve_source(table, snapshot_id, timestamp)
    return plan_tag_on(table, name, snap, source, time_retained=time_retained, replace=replace, now=now,
                       ignore_if_exists=ignore_if_exists, plan_type=CreateTagPlan)


def plan_tag_on(table: FileStoreTable, name: str, snap: Snapshot, source: str, *,
                time_retained: _dt.timedelta | None, replace: bool, now: int | None, plan_type: type[Plan],
                ignore_if_exists: bool = False, details: Mapping[str, Any] | None = None) -> Plan:
    """The plan of a `plan_type` tagging `snap` (found by `source`, in words) as `name`: created, or — with `replace`
    and an existing tag — moved; an existing tag at another snapshot is refused without `replace`. `details`: what
    the calling operation adds to the plan's."""
    check_sync(table, "create_tag")
    validate_tag_name(name)
    if replace and table.tags.exists(name):
        return _plan_replace(table, name, snap, source, time_retained, now, plan_type, details)
    retained = _retention(time_retained)
    details = {"tag": name, "snapshot_id": snap.id, "source": source,
               "time_retained_s": retained.total_seconds() if retained else None, **(details or {})}
    b = PlanBuilder()
    if table.tags.exists(name):
        existing = table.tags.tag(name)
        if ignore_if_exists or existing.id == snap.id:
            b.warn(f"tag {name!r} already exists (snapshot {existing.id}); nothing to do")
            b.require(TagIs(name, existing.id))
            return b.build(plan_type, table, {**details, "existing_snapshot_id": existing.id})
        raise InvalidArgumentError(f"tag {name!r} of {table.identifier} already exists (snapshot {existing.id}); "
                                   f"use {arg('replace', True)} to move it")
    _validate_no_auto_tag(table, name, snap.id)
    tag = _new_tag(table, snap, retained, now)
    b.step("tag file", WRITE_FILES, contents=[tag.to_json()], mode="create")
    b.add(FileAction(table.tags.path(name), TAG, f"tag {name!r} -> {source}"
                     + (f", retained {format_duration(retained)}" if retained else "")))
    b.require(TagIs(name, None))
    return b.build(plan_type, table, details)


@planner(ReplaceTagPlan, renamed={"now_millis": "now"})
def plan_replace_tag(table: FileStoreTable, name: TagName, *, snapshot_id: int | None = None,
                     time_retained: _dt.timedelta | None = None, now: InstantMs | None = None) -> ReplaceTagPlan:
    """Moving the existing tag `name` to `snapshot_id` (default: the latest snapshot), as Java's replace_tag: a tag
    that does not exist is refused."""
    validate_tag_name(name)
    if not table.tags.exists(name):
        raise InvalidArgumentError(f"tag {name!r} of {table.identifier} does not exist; use "
                                   f"{arg('create', True, python='tags.create()')}")
    snap, source = _resolve_source(table, snapshot_id, None)
    return _plan_replace(table, name, snap, source, time_retained, now, ReplaceTagPlan)


def _plan_replace(table: FileStoreTable, name: str, snap: Snapshot, source: str,
                  time_retained: _dt.timedelta | str | None, now: int | None, plan_type: type[_P],
                  details: Mapping[str, Any] | None = None) -> _P:
    """Moving the existing tag `name` to `snap` (no reclamation, as Java's replace_tag)."""
    check_sync(table, "replace_tag")
    retained = _retention(time_retained)
    old = table.tags.tag(name)
    b = PlanBuilder()
    shared = [n for n, t in table.tags.tags() if t.id == old.id and n != name]
    if old.id != snap.id and not table.snapshots.exists(old.id) and not shared:
        b.warn(f"the old snapshot {old.id} of tag {name!r} has expired and no other tag holds it: files only "
               "it used become orphans, not reclaimed (like Java's replace_tag); remove_orphan_files "
               "reclaims them, or delete the tag (which reclaims) and create it again instead")
    _validate_no_auto_tag(table, name, snap.id)
    tag = _new_tag(table, snap, retained, now)
    b.step("tag file", WRITE_FILES, contents=[tag.to_json()], mode="overwrite")
    b.add(FileAction(table.tags.path(name), TAG, f"replace tag {name!r}: snapshot {old.id} -> {source}"
                     + (f", retained {format_duration(retained)}" if retained else "")))
    b.require(TagIs(name, old.id))
    return b.build(plan_type, table, {"tag": name, "old_snapshot_id": old.id, "snapshot_id": snap.id,
                                      "source": source,
                                      "time_retained_s": retained.total_seconds() if retained else None,
                                      **(details or {})})


# ---------------------------------------------------------------------------------------------- rename / delete
@planner(RenameTagPlan)
def plan_rename_tag(table: FileStoreTable, old: TagName, new: TagName, *, resume: bool = False) -> RenameTagPlan:
    """Write `new` with `old`'s exact content (retention included), then delete `old`. With `resume`, finish a
    rename interrupted between the two (both names exist with the same content)."""
    check_sync(table, "rename_tag")
    check_existing_tag_name(old)
    validate_tag_name(new)
    b = PlanBuilder()
    old_exists, new_exists = table.tags.exists(old), table.tags.exists(new)
    if old_exists and new_exists:
        data = table.io.read_bytes(table.tags.path(old))
        if data == table.io.read_bytes(table.tags.path(new)):
            if not resume:
                raise InvalidArgumentError(
                    f"tag {new!r} of {table.identifier} already exists with exactly the content of {old!r}: if an "
                    f"earlier rename was interrupted, finish it with {arg('resume', True)} (deletes tag {old!r}); "
                    "otherwise choose another name")
            tid = table.tags.tag(old).id
            b.step("old tag file", DELETE_ORDERED).add(
                FileAction(table.tags.path(old), TAG, f"finishing the interrupted rename to {new!r}"))
            b.require(TagIs(old, tid), TagIs(new, tid))
            return b.build(RenameTagPlan, table, {"old": old, "new": new, "snapshot_id": tid, "resumed": True})
    if resume and new_exists and not old_exists:
        b.warn(f"tag {old!r} is already gone and {new!r} exists: the rename was complete")
        return b.build(RenameTagPlan, table, {"old": old, "new": new, "resumed": True})
    if not old_exists:
        raise InvalidArgumentError(f"tag {old!r} of {table.identifier} does not exist")
    if new_exists:
        raise InvalidArgumentError(f"tag {new!r} of {table.identifier} already exists")
    tag = table.tags.tag(old)
    _validate_no_auto_tag(table, new, tag.id, replacing=old)
    content = table.io.read_bytes(table.tags.path(old)).decode("utf-8")
    b.step("new tag file", WRITE_FILES, contents=[content], mode="create").add(
        FileAction(table.tags.path(new), TAG, f"rename tag {old!r} -> {new!r} (snapshot {tag.id})"))
    b.step("old tag file", DELETE_ORDERED).add(FileAction(table.tags.path(old), TAG, f"renamed to {new!r}"))
    b.require(TagIs(old, tag.id), TagIs(new, None))
    return b.build(RenameTagPlan, table, {"old": old, "new": new, "snapshot_id": tag.id})


__all__ = [
    "TagInfo", "list_tags", "plan_create_tag", "plan_replace_tag", "plan_rename_tag", "plan_tag_on", "write_new_tag",
    "CreateTagPlan",
    "ReplaceTagPlan", "RenameTagPlan",
]
