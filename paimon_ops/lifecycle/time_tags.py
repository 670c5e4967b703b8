"""Tags by event time: the first snapshot committed at or after an instant, the first whose watermark reached one —
Java's `create_tag_from_timestamp` and `create_tag_from_watermark` procedures (maintenance.md §3.1).

    plan_create_tag_from_timestamp(table, name, timestamp=…, time_retained=None, replace=False) -> Plan
    plan_create_tag_from_watermark(table, name, watermark=…, time_retained=None, replace=False) -> Plan

Java's semantics, made certain: the candidates are the live snapshots and the expired ones tags still hold (Java's
loop over `tagManager.tags()`); commit times and watermarks only grow with snapshot ids, so the live range is
binary-searched as Java's `SnapshotManager.laterOrEqualTimeMills` / `laterOrEqualWatermark` do. A snapshot without a
watermark (Java's null or Long.MIN_VALUE) has not reached any. Where Java would answer with a later snapshot because
the first one expired untagged (the snapshot before the candidate is unknown), we refuse instead — the tag would
not hold what its name says. Everything else (an existing name, retention, `replace`) is `create_tag`'s
(`lifecycle.tags.plan_tag_on`).
"""
from __future__ import annotations

import datetime as _dt
from typing import Callable

from paimon_ops.errors import InvalidArgumentError, arg
from paimon_ops.execution.plan import Plan, planner
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.protection import read_tags
from paimon_ops.lifecycle.tags import plan_tag_on
from paimon_ops.lifecycle.timeline import SnapshotTimeline, valid_watermark
from paimon_ops.operations.create_tag_from_timestamp import OPERATION as CREATE_TAG_FROM_TIMESTAMP
from paimon_ops.operations.create_tag_from_watermark import OPERATION as CREATE_TAG_FROM_WATERMARK
from paimon_ops.operations.model import InstantMs, TagName
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import iso


class CreateTagFromTimestampPlan(Plan):
    operation = "create_tag_from_timestamp"
    op = CREATE_TAG_FROM_TIMESTAMP


class CreateTagFromWatermarkPlan(Plan):
    operation = "create_tag_from_watermark"
    op = CREATE_TAG_FROM_WATERMARK


def _first(table: FileStoreTable, holds: Callable[[Snapshot], bool], what: str, none: str) -> Snapshot:
    """The first snapshot (live or tag-held) for which `holds`; refused in one line when there is none (`none` says
    why) or when it cannot be known."""
    timeline = SnapshotTimeline(table, read_tags(table))
    status, snap = timeline.first_where(holds)
    if status == SnapshotTimeline.OK and snap is not None:
        return snap
    if status == SnapshotTimeline.NONE:
        raise InvalidArgumentError(f"no snapshot of {table.identifier} {what}: {none}; nothing was tagged")
    raise InvalidArgumentError(
        f"the first snapshot of {table.identifier} that {what} has expired and no tag holds it (earliest live "
        f"snapshot {timeline.earliest}, tag-held {sorted(timeline.tagged) or 'none'}); not tagging a later one")


@planner(CreateTagFromTimestampPlan)
def plan_create_tag_from_timestamp(table: FileStoreTable, name: TagName, *, timestamp: InstantMs | None = None,
                                   time_retained: _dt.timedelta | None = None, replace: bool = False,
                                   now: InstantMs | None = None) -> Plan:
    """Tag the first snapshot committed at or after `timestamp` (see the module docstring)."""
    if timestamp is None:
        raise InvalidArgumentError(f"{arg('timestamp')} is required: the instant whose first snapshot is tagged")
    t = int(timestamp)
    latest = table.snapshots.latest()
    snap = _first(table, lambda s: s.time_millis >= t, f"was committed at or after {iso(t)}",
                  f"the latest, {latest.id}, was committed at {iso(latest.time_millis)}" if latest else
                  "the table has no snapshot")
    source = f"snapshot {snap.id}, the first committed at or after {iso(t)} (at {iso(snap.time_millis)})"
    return plan_tag_on(table, name, snap, source, time_retained=time_retained, replace=replace, now=now,
                       plan_type=CreateTagFromTimestampPlan, details=_found(snap, timestamp=iso(t)))


@planner(CreateTagFromWatermarkPlan)
def plan_create_tag_from_watermark(table: FileStoreTable, name: TagName, *, watermark: InstantMs | None = None,
                                   time_retained: _dt.timedelta | None = None, replace: bool = False,
                                   now: InstantMs | None = None) -> Plan:
    """Tag the first snapshot whose watermark is at or after `watermark` (see the module docstring)."""
    if watermark is None:
        raise InvalidArgumentError(f"{arg('watermark')} is required: the watermark whose first snapshot is tagged")
    w = int(watermark)

    def reached(s: Snapshot) -> bool:
        v = valid_watermark(s)
        return v is not None and v >= w

    latest = table.snapshots.latest()
    highest = valid_watermark(latest) if latest else None
    snap = _first(table, reached, f"has a watermark at or after {w} ({iso(w)})",
                  "the table has no snapshot" if latest is None else
                  "no snapshot carries a watermark" if highest is None else
                  f"the latest snapshot's watermark is {highest} ({iso(highest)})")
    source = f"snapshot {snap.id}, the first with a watermark at or after {iso(w)} (its watermark {snap.watermark})"
    return plan_tag_on(table, name, snap, source, time_retained=time_retained, replace=replace, now=now,
                       plan_type=CreateTagFromWatermarkPlan, details=_found(snap, watermark=w))


def _found(snap: Snapshot, **given: object) -> dict[str, object]:
    """What Java's procedures answer (tag, snapshot, commit time, watermark), with what was asked."""
    return {**given, "commit_time": iso(snap.time_millis), "snapshot_watermark": valid_watermark(snap)}


__all__ = ["CreateTagFromTimestampPlan", "CreateTagFromWatermarkPlan", "plan_create_tag_from_timestamp",
           "plan_create_tag_from_watermark"]
