"""Snapshots over time: which snapshot was current at an instant, which first reached a watermark (live snapshots
plus the expired ones tags still hold), and the zone tag create times are written in.

Semantics: a snapshot id resolves like Java's ``findSnapshot`` (the live snapshot, else a tag holding it).
``snapshot_current_at(t)`` is the newest snapshot committed at or before t — "the table as it was at t"; when that
snapshot expired untagged we refuse rather than answer with a different one.

``tagCreateTime`` is a zone-less local date-time (Java writes the JVM's local now). We write ``now`` in the *tag
local zone* = ``sink.process-time-zone`` if set, else UTC, and expire by comparing with ``now`` in the same zone;
set ``sink.process-time-zone`` to the JVM zone of Java writers when both expire tags of one table.
"""
from __future__ import annotations

import datetime as _dt
from typing import Callable

import pendulum

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.options import SINK_PROCESS_TIME_ZONE
from paimon_ops.table.table import FileStoreTable
from paimon_ops.timeutil import UTC, local_millis_to_naive, now_ms, parse_zone, to_local_millis

LONG_MIN = -(1 << 63)


def tag_local_zone(table: FileStoreTable) -> _dt.tzinfo:
    """Zone of ``tagCreateTime`` (Java: the JVM default zone; we use sink.process-time-zone, else UTC)."""
    opts = table.options
    z = opts.get(SINK_PROCESS_TIME_ZONE)
    return parse_zone(z, SINK_PROCESS_TIME_ZONE.key, opts.where) if z else UTC


def local_now(table: FileStoreTable, now_millis: int | None = None) -> _dt.datetime:
    """``now`` as the naive local date-time written into ``tagCreateTime``."""
    return local_millis_to_naive(to_local_millis(now_ms(now_millis), tag_local_zone(table)))


def check_existing_tag_name(name: str) -> str:
    """Looser than validate_tag_name, for names that may already exist (Java allows numeric names): only refuse
    what could leave the tag directory."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"tag name {name!r} is empty")
    if "/" in name or "\\" in name or name in (".", "..") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidArgumentError(f"tag name {name!r} is not a valid tag file name")
    return name


def find_snapshot(table: FileStoreTable, snapshot_id: int) -> Snapshot:
    """The live snapshot, else the snapshot of a tag with that id (Java ``findSnapshot``); error otherwise."""
    snap = table.snapshots.try_snapshot(snapshot_id)
    if snap is not None:
        return snap
    for _, tag in table.tags.tags():
        if tag.id == snapshot_id:
            return tag.to_snapshot()
    earliest, latest = table.snapshots.earliest_id(), table.snapshots.latest_id()
    raise InvalidArgumentError(
        f"snapshot {snapshot_id} of {table.identifier} does not exist and no tag holds it "
        f"(live snapshots: {earliest}..{latest})" if latest is not None else
        f"snapshot {snapshot_id} of {table.identifier} does not exist: the table has no snapshot")


def snapshot_current_at(table: FileStoreTable, timestamp_millis: int) -> Snapshot:
    """The snapshot that was current at `timestamp_millis`: newest commit at or before it (live or tag-held).

    Refuses (instead of answering with a different snapshot) when that snapshot has expired untagged, i.e. when
    no known snapshot before the instant is followed by a known one.
    """
    timeline = SnapshotTimeline(table, table.tags.tags())
    status, snap = timeline.at_or_before(int(timestamp_millis))
    when = _ts_text(int(timestamp_millis))
    if status == SnapshotTimeline.OK and snap is not None:
        return snap
    if status == SnapshotTimeline.NONE:
        raise InvalidArgumentError(f"{table.identifier} had no snapshot at {when} (snapshot 1 was committed at "
                                   f"{_ts_text(timeline.get(1).time_millis)})")
    raise InvalidArgumentError(
        f"the snapshot of {table.identifier} current at {when} has expired: the known snapshots around it (earliest "
        f"live {timeline.earliest}, tag-held {sorted(timeline.tagged) or 'none'}) do not tell which one was current; "
        "not tagging a different snapshot")


# ---------------------------------------------------------------------------------------------- snapshots over time
def valid_watermark(s: Snapshot) -> int | None:
    """A snapshot's watermark, None when absent or Long.MIN_VALUE (Java: 'no time')."""
    w = s.watermark
    return None if w is None or w == LONG_MIN else w


class SnapshotTimeline:
    """Live snapshots (lazily read, cached) plus tag-held expired ones, answering "which snapshot at time T"."""

    OK, NONE, UNKNOWN = "ok", "none", "expired"

    def __init__(self, table: FileStoreTable, tags: list[tuple[str, Tag]]):
        self.table = table
        self.sm = table.snapshots
        self.earliest = self.sm.earliest_id()
        self.latest = self.sm.latest_id()
        self.tagged: dict[int, Snapshot] = {}
        for _, t in tags:
            self.tagged.setdefault(t.id, t.to_snapshot())
        self._cache: dict[int, Snapshot] = {}
        self._all: list[Snapshot] | None = None

    def is_live(self, sid: int) -> bool:
        return self.earliest is not None and self.latest is not None and self.earliest <= sid <= self.latest

    def known(self, sid: int) -> bool:
        return self.is_live(sid) or sid in self.tagged

    def get(self, sid: int) -> Snapshot:
        if self.is_live(sid):
            if sid not in self._cache:
                self._cache[sid] = self.sm.snapshot(sid)  # raises MissingFileError if it vanished meanwhile
            return self._cache[sid]
        return self.tagged[sid]

    def _older_tagged(self) -> list[int]:
        return sorted(i for i in self.tagged if self.earliest is None or i < self.earliest)

    def all(self) -> list[Snapshot]:
        if self._all is None:
            ids = self._older_tagged()
            if self.earliest is not None and self.latest is not None:
                ids += list(range(self.earliest, self.latest + 1))
            self._all = [self.get(i) for i in ids]
        return self._all

    def min_known(self) -> int | None:
        older = self._older_tagged()
        return older[0] if older else self.earliest

    def at_or_before(self, t_ms: int) -> tuple[str, Snapshot | None]:
        """The latest snapshot committed at or before t (certain), 'none' if the table had none, else 'expired'."""
        if self.earliest is not None and self.latest is not None and self.get(self.earliest).time_millis <= t_ms:
            lo, hi = self.earliest, self.latest  # commit times grow with ids (Java binary-searches the same way)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.get(mid).time_millis <= t_ms:
                    lo = mid
                else:
                    hi = mid - 1
            return self.OK, self.get(lo)
        older = [i for i in self._older_tagged() if self.tagged[i].time_millis <= t_ms]
        if older:
            c = older[-1]
            # certain only if c's successor is known (and therefore committed after t)
            if c + 1 in self.tagged or (self.earliest is not None and c + 1 == self.earliest):
                return self.OK, self.tagged[c]
            return self.UNKNOWN, None
        return (self.NONE, None) if self.min_known() == 1 else (self.UNKNOWN, None)

    def first_watermark_reaching(self, w_ms: int) -> tuple[str, Snapshot | None]:
        """The first snapshot (by id) whose watermark is >= w (certain), 'none' if none yet, else 'expired'."""
        snaps = self.all()
        hit = next((s for s in snaps if (valid_watermark(s) or LONG_MIN) >= w_ms), None)
        if hit is None:
            return self.NONE, None
        i = hit.id - 1  # certainty: walk back over known snapshots to one with a lower watermark, or to the start
        while i >= 1:
            if not self.known(i):
                return self.UNKNOWN, None
            if valid_watermark(self.get(i)) is not None:
                break
            i -= 1
        return self.OK, hit

    def first_where(self, holds: Callable[[Snapshot], bool]) -> tuple[str, Snapshot | None]:
        """The first snapshot (by id) for which `holds` is true, `holds` being monotonic over the history (false,
        then true: a commit time or a watermark reaching a value): 'ok' with it when certain, 'none' when no known
        snapshot qualifies, 'expired' when the snapshot before it expired untagged (an unknown one might be the
        first). Live snapshots are binary-searched (O(log n) snapshot files read, as Java's SnapshotManager does);
        older tag-held ones come first."""
        hit = next((i for i in self._older_tagged() if holds(self.tagged[i])), None)
        if hit is None and self.earliest is not None and self.latest is not None and holds(self.get(self.latest)):
            lo, hi = self.earliest, self.latest
            while lo < hi:
                mid = (lo + hi) // 2
                if holds(self.get(mid)):
                    hi = mid
                else:
                    lo = mid + 1
            hit = lo
        if hit is None:
            return self.NONE, None
        if hit == 1 or self.known(hit - 1):
            return self.OK, self.get(hit)
        return self.UNKNOWN, None

    def last_where(self, holds: Callable[[Snapshot], bool]) -> tuple[str, Snapshot | None]:
        """The last snapshot (by id) for which `holds` is true, `holds` monotonic (true, then false): 'ok' with it
        when certain (it is the latest, or its successor is known), 'none' when no known snapshot qualifies and the
        history starts at snapshot 1, else 'expired'."""
        if self.earliest is not None and self.latest is not None and holds(self.get(self.earliest)):
            lo, hi = self.earliest, self.latest
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if holds(self.get(mid)):
                    lo = mid
                else:
                    hi = mid - 1
            return self.OK, self.get(lo)
        older = [i for i in self._older_tagged() if holds(self.tagged[i])]
        if older:
            c = older[-1]
            return (self.OK, self.tagged[c]) if self.known(c + 1) else (self.UNKNOWN, None)
        return (self.NONE, None) if self.min_known() in (1, None) else (self.UNKNOWN, None)

    def max_watermark(self) -> int | None:
        ws = [w for w in (valid_watermark(s) for s in self.all()) if w is not None]
        return max(ws) if ws else None

    def first_watermark(self) -> int | None:
        for s in self.all():
            if self.is_live(s.id) and valid_watermark(s) is not None:
                return valid_watermark(s)
        return None


def _ts_text(ms: int) -> str:
    return pendulum.from_timestamp(ms / 1000, tz="UTC").to_iso8601_string()



__all__ = ["SnapshotTimeline", "find_snapshot", "snapshot_current_at", "valid_watermark", "tag_local_zone",
           "local_now", "check_existing_tag_name", "LONG_MIN"]
