"""Manual tags: create (latest / a snapshot id / the snapshot current at a time), replace, rename, list, delete
(maintenance.md §3.1-3.3, §3.9).

Semantics decisions (see also autotag.py):

* Every new tag name goes through ``validate_tag_name`` (no empty, numeric, ``/``, ``..`` or control characters);
  new tag files are created with an atomic create-if-absent, so two concurrent creators cannot overwrite each other.
  Existing names (e.g. numeric names Java allowed) can still be read, renamed away from and deleted.
* A snapshot id resolves like Java's ``findSnapshot``: the live snapshot, else a tag holding that (expired) snapshot.
* ``timestamp_millis`` selects the snapshot *current* at that instant: the newest snapshot committed at or before
  it. This differs on purpose from Java's ``create_tag_from_timestamp`` procedure (smallest commit time >= ts):
  "the table as it was at T" is what a tag at a time means. If that snapshot has expired and is not tagged (its
  successor is unknown) we refuse rather than tag a different snapshot.
* Retention: ``tagCreateTime`` is a zone-less local date-time (Java writes the JVM's local now). We write ``now`` in
  the *tag local zone* = ``sink.process-time-zone`` if set, else UTC, and expire by comparing with ``now`` in the
  same zone; set ``sink.process-time-zone`` to the JVM zone of Java writers when both expire tags of one table.
* Replace follows Java (no reclamation of the old snapshot's files; a warning says when they become orphans).
  Deletion always goes through ``reclaim.delete_tags``.
"""
from __future__ import annotations

import datetime as _dt
import logging
import re
import time
from dataclasses import dataclass
from typing import Sequence

import pendulum

from paimon_ops.errors import arg, InvalidArgumentError, InvalidOptionError
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.options import format_duration, parse_duration
from paimon_ops.plan import TAG, FileAction, Plan, Report, bytes_by_kind, count_by_kind
from paimon_ops.table.table import Table, validate_tag_name

log = logging.getLogger(__name__)

UTC = pendulum.timezone("UTC")
_OFFSET_ZONE = re.compile(r"^(?:UTC|GMT|Z)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)
_EPOCH = _dt.datetime(1970, 1, 1)
LONG_MIN = -(1 << 63)


# ---------------------------------------------------------------------------------------------- time helpers
def now_millis_or_clock(now_millis: int | None) -> int:
    return int(time.time() * 1000) if now_millis is None else int(now_millis)


def parse_zone(value: str, option: str, where: str) -> _dt.tzinfo:
    """An IANA zone ('Europe/Berlin'), 'UTC', or a fixed offset ('+08:00', 'GMT+8') as Java's ZoneId accepts."""
    text = str(value).strip()
    m = _OFFSET_ZONE.match(text)
    if m:
        sign, hh, mm = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if hh > 18 or mm > 59:
            raise InvalidOptionError(option, value, "a time zone such as 'Europe/Berlin', 'UTC' or '+08:00'", where)
        secs = (hh * 3600 + mm * 60) * (-1 if sign == "-" else 1)
        return pendulum.fixed_timezone(secs)
    try:
        return pendulum.timezone(text)
    except Exception:  # pendulum raises InvalidTimezone (a ValueError) or zoneinfo key errors
        raise InvalidOptionError(option, value, "an IANA time zone such as 'Europe/Berlin' or 'UTC'", where) from None


def tag_local_zone(table: Table) -> _dt.tzinfo:
    """Zone of ``tagCreateTime`` (Java: the JVM default zone; we use sink.process-time-zone, else UTC)."""
    opts = table.options
    z = opts.str("sink.process-time-zone")
    return parse_zone(z, "sink.process-time-zone", opts.where) if z else UTC


def to_local_millis(instant_ms: int, zone: _dt.tzinfo) -> int:
    """Wall-clock time of an instant in `zone`, encoded as epoch millis "as if UTC" (Java's LocalDateTime trick)."""
    utc = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=instant_ms)
    off = utc.astimezone(zone).utcoffset() or _dt.timedelta(0)
    return instant_ms + int(off.total_seconds() * 1000)


def local_millis_to_naive(local_ms: int) -> _dt.datetime:
    return _EPOCH + _dt.timedelta(milliseconds=local_ms)


def naive_to_local_millis(dt: _dt.datetime) -> int:
    delta = dt - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def local_to_instant_millis(local_ms: int, zone: _dt.tzinfo) -> int:
    """The earliest instant whose wall clock in `zone` is >= the given local time.

    Normal times map 1:1; a time in a fall-back overlap maps to its first occurrence; a time inside a spring-forward
    gap (which never shows on a clock) maps to the transition instant, the first moment the clock is past it —
    exactly when Java's LocalDateTime comparisons (`time >= target`) first become true.
    """
    naive = local_millis_to_naive(local_ms)
    cands = []
    for fold in (0, 1):
        aware = naive.replace(tzinfo=zone, fold=fold)
        off = aware.utcoffset() or _dt.timedelta(0)
        cands.append(local_ms - int(off.total_seconds() * 1000))
    valid = [c for c in cands if to_local_millis(c, zone) == local_ms]
    if valid:
        return min(valid)
    lo, hi = min(cands), max(cands)  # gap: binary-search the first instant whose clock is >= local_ms
    while lo < hi:
        mid = (lo + hi) // 2
        if to_local_millis(mid, zone) >= local_ms:
            hi = mid
        else:
            lo = mid + 1
    return lo


def local_now(table: Table, now_millis: int | None = None) -> _dt.datetime:
    """``now`` as the naive local date-time written into ``tagCreateTime``."""
    return local_millis_to_naive(to_local_millis(now_millis_or_clock(now_millis), tag_local_zone(table)))


def to_instant_millis(value: int | float | _dt.datetime | _dt.date | str, zone: _dt.tzinfo, what: str) -> int:
    """Epoch millis of a time argument; naive date-times / dates / ISO text without offset are read in `zone`."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what}: expected a time, got {value!r}")
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        try:
            parsed = pendulum.parse(text, tz=None, exact=True)
        except Exception:
            raise InvalidArgumentError(f"{what}: {value!r} is not a time (epoch ms or ISO 8601)") from None
        if isinstance(parsed, _dt.datetime) or isinstance(parsed, _dt.date):
            value = parsed
        else:
            raise InvalidArgumentError(f"{what}: {value!r} is not a date or date-time")
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return local_to_instant_millis(naive_to_local_millis(value), zone)
        return int(round(value.timestamp() * 1000))
    if isinstance(value, _dt.date):
        return local_to_instant_millis(naive_to_local_millis(_dt.datetime(value.year, value.month, value.day)), zone)
    raise InvalidArgumentError(f"{what}: expected epoch millis, a datetime or a date, got {type(value).__name__}")


def _retention(value: _dt.timedelta | str | None) -> _dt.timedelta | None:
    if value is None:
        return None
    td = parse_duration(value, "time_retained") if isinstance(value, str) else value
    if not isinstance(td, _dt.timedelta) or td <= _dt.timedelta(0):
        raise InvalidArgumentError(f"{arg('time_retained')} must be a positive duration, got {value!r}")
    return td


# ---------------------------------------------------------------------------------------------- snapshot lookup
def _check_existing_name(name: str) -> str:
    """Looser than validate_tag_name, for names that may already exist (Java allows numeric names): only refuse
    what could leave the tag directory."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgumentError(f"tag name {name!r} is empty")
    if "/" in name or "\\" in name or name in (".", "..") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        raise InvalidArgumentError(f"tag name {name!r} is not a valid tag file name")
    return name


def find_snapshot(table: Table, snapshot_id: int) -> Snapshot:
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


def snapshot_current_at(table: Table, timestamp_millis: int) -> Snapshot:
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

    def __init__(self, table: Table, tags: list[tuple[str, Tag]]):
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


def list_tags(table: Table) -> list[TagInfo]:
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


# ---------------------------------------------------------------------------------------------- create / replace
def is_java_auto_tagging(table: Table) -> bool:
    return table.options.enum("tag.automatic-creation", ("none", "process-time", "watermark", "batch"),
                              "none") in ("process-time", "watermark")


def _validate_no_auto_tag(table: Table, name: str, snapshot_id: int, replacing: str | None = None) -> None:
    """Java ``validateNoAutoTag``: with Java auto tagging on, one snapshot must not carry two auto tags (Java's
    auto creation fails with 'more than 1 auto-created tags of the same snapshot' otherwise)."""
    if not is_java_auto_tagging(table):
        return
    from paimon_ops.lifecycle.autotag import auto_tag_matcher  # cyclic at import time only
    is_auto = auto_tag_matcher(table)
    if not is_auto(name):
        return
    others = [n for n, t in table.tags.tags() if t.id == snapshot_id and n not in (name, replacing) and is_auto(n)]
    if others:
        raise InvalidArgumentError(
            f"snapshot {snapshot_id} of {table.identifier} already carries auto tag {others[0]!r}; tag name "
            f"{name!r} also parses as an auto tag, and Java Paimon refuses two auto tags on one snapshot")


def write_new_tag(table: Table, name: str, tag: Tag, period_name: bool = False) -> bool:
    """Create tag/tag-<name> only if absent (atomic on local FS); True if we created it.

    `period_name`: the name is an automatic period name from the table's formatter (may be all digits)."""
    validate_tag_name(name, allow_numeric=period_name)
    return table.io.write_atomic_if_absent(table.tags.path(name), tag.to_json().encode())


def _resolve_source(table: Table, snapshot_id: int | None, timestamp_millis: int | None) -> tuple[Snapshot, str]:
    if snapshot_id is not None and timestamp_millis is not None:
        raise InvalidArgumentError(f"give either {arg('snapshot_id')} or {arg('timestamp_millis')}, not both")
    if snapshot_id is not None:
        return find_snapshot(table, int(snapshot_id)), f"snapshot {snapshot_id}"
    if timestamp_millis is not None:
        s = snapshot_current_at(table, int(timestamp_millis))
        return s, f"snapshot {s.id}, current at {_ts_text(int(timestamp_millis))}"
    latest = table.snapshots.latest()
    if latest is None:
        raise InvalidArgumentError(f"cannot tag {table.identifier}: the table has no snapshot")
    return latest, f"latest snapshot {latest.id}"


def _new_tag(table: Table, snap: Snapshot, time_retained: _dt.timedelta | None, now_millis: int | None) -> Tag:
    create_time = local_now(table, now_millis) if time_retained is not None else None
    return Tag.from_snapshot(snap.to_snapshot() if isinstance(snap, Tag) else snap, time_retained, create_time)


def plan_create_tag(table: Table, name: str, snapshot_id: int | None = None, timestamp_millis: int | None = None,
                    time_retained: _dt.timedelta | str | None = None, now_millis: int | None = None,
                    ignore_if_exists: bool = False) -> Plan:
    validate_tag_name(name)
    retained = _retention(time_retained)
    snap, source = _resolve_source(table, snapshot_id, timestamp_millis)
    base = table.snapshots.latest_id()
    details = {"tag": name, "snapshot_id": snap.id, "source": source,
               "time_retained": format_duration(retained) if retained else None}
    if table.tags.exists(name):
        existing = table.tags.tag(name)
        if ignore_if_exists or existing.id == snap.id:
            return Plan("create_tag", table.identifier, base, details={**details, "existing_snapshot_id": existing.id},
                        warnings=(f"tag {name!r} already exists (snapshot {existing.id}); nothing to do",))
        raise InvalidArgumentError(f"tag {name!r} of {table.identifier} already exists (snapshot {existing.id}); "
                                   f"use {arg('replace', True, python='replace_tag()')} to move it")
    _validate_no_auto_tag(table, name, snap.id)
    write = FileAction(table.tags.path(name), TAG, f"tag {name!r} -> {source}"
                       + (f", retained {format_duration(retained)}" if retained else ""))
    return Plan("create_tag", table.identifier, base, writes=(write,), details=details)


def _execute_writes(table: Table, plan: Plan, dry_run: bool, started: float, overwrite: bool,
                    tags: dict[str, Tag], extra_warnings: Sequence[str] = ()) -> Report:
    written: list[FileAction] = []
    warnings = list(plan.warnings) + list(extra_warnings)
    if not dry_run:
        for action in plan.writes:
            name = next(n for n in tags if table.tags.path(n) == action.path)
            if overwrite:
                table.tags.write(name, tags[name])  # validates the name
                ok = True
            else:
                ok = write_new_tag(table, name, tags[name])
            if ok:
                log.info("%s: wrote tag %s (snapshot %s)", table.identifier, name, tags[name].id)
                written.append(FileAction(action.path, action.kind, action.reason, table.io.size(action.path)))
            else:
                warnings.append(f"tag {name!r} was created concurrently by someone else; left unchanged")
    files = tuple(written) if not dry_run else plan.writes
    return Report(plan.operation, table.identifier, dry_run, time.time() - started,
                  written=count_by_kind(files), written_bytes=bytes_by_kind(files), details=dict(plan.details),
                  files=files, warnings=tuple(warnings))


def create_tag(table: Table, name: str, snapshot_id: int | None = None, timestamp_millis: int | None = None,
               time_retained: _dt.timedelta | str | None = None, now_millis: int | None = None,
               dry_run: bool = False, ignore_if_exists: bool = False, replace: bool = False) -> Report:
    """Create tag `name` on the latest snapshot, a snapshot id (live or tag-held) or the snapshot current at a time.

    With `time_retained` the tag gets ``tagCreateTime`` = now (tag local zone) and ``tagTimeRetained``.
    """
    if replace and table.tags.exists(name):
        if timestamp_millis is not None:
            snapshot_id = snapshot_current_at(table, int(timestamp_millis)).id
        return replace_tag(table, name, snapshot_id, time_retained, now_millis, dry_run)
    started = time.time()
    plan = plan_create_tag(table, name, snapshot_id, timestamp_millis, time_retained, now_millis, ignore_if_exists)
    if not plan.writes:
        return _execute_writes(table, plan, dry_run, started, False, {})
    snap = find_snapshot(table, plan.details["snapshot_id"])
    tag = _new_tag(table, snap, _retention(time_retained), now_millis)
    return _execute_writes(table, plan, dry_run, started, False, {name: tag})


def plan_replace_tag(table: Table, name: str, snapshot_id: int | None = None,
                     time_retained: _dt.timedelta | str | None = None, now_millis: int | None = None) -> Plan:
    validate_tag_name(name)
    retained = _retention(time_retained)
    if not table.tags.exists(name):
        raise InvalidArgumentError(f"tag {name!r} of {table.identifier} does not exist; use "
                                   f"{arg('create', True, python='create_tag()')}")
    old = table.tags.tag(name)
    snap, source = _resolve_source(table, snapshot_id, None)
    warnings = []
    shared = [n for n, t in table.tags.tags() if t.id == old.id and n != name]
    if old.id != snap.id and not table.snapshots.exists(old.id) and not shared:
        warnings.append(f"the old snapshot {old.id} of tag {name!r} has expired and no other tag holds it: files only "
                        "it used become orphans, not reclaimed (like Java's replace_tag); remove_orphan_files "
                        "reclaims them, or delete the tag (which reclaims) and create it again instead")
    _validate_no_auto_tag(table, name, snap.id)
    write = FileAction(table.tags.path(name), TAG, f"replace tag {name!r}: snapshot {old.id} -> {source}"
                       + (f", retained {format_duration(retained)}" if retained else ""))
    return Plan("replace_tag", table.identifier, table.snapshots.latest_id(), writes=(write,),
                details={"tag": name, "old_snapshot_id": old.id, "snapshot_id": snap.id,
                         "time_retained": format_duration(retained) if retained else None},
                warnings=tuple(warnings))


def replace_tag(table: Table, name: str, snapshot_id: int | None = None,
                time_retained: _dt.timedelta | str | None = None, now_millis: int | None = None,
                dry_run: bool = False) -> Report:
    """Point an existing tag at another snapshot (default: latest), with a new retention (Java ``replaceTag``)."""
    started = time.time()
    plan = plan_replace_tag(table, name, snapshot_id, time_retained, now_millis)
    snap = find_snapshot(table, plan.details["snapshot_id"])
    tag = _new_tag(table, snap, _retention(time_retained), now_millis)
    return _execute_writes(table, plan, dry_run, started, True, {name: tag})


# ---------------------------------------------------------------------------------------------- rename / delete
def plan_rename_tag(table: Table, old: str, new: str) -> Plan:
    _check_existing_name(old)
    validate_tag_name(new)
    if not table.tags.exists(old):
        raise InvalidArgumentError(f"tag {old!r} of {table.identifier} does not exist")
    if table.tags.exists(new):
        raise InvalidArgumentError(f"tag {new!r} of {table.identifier} already exists")
    tag = table.tags.tag(old)
    _validate_no_auto_tag(table, new, tag.id, replacing=old)
    return Plan("rename_tag", table.identifier, table.snapshots.latest_id(),
                writes=(FileAction(table.tags.path(new), TAG, f"rename tag {old!r} -> {new!r} (snapshot {tag.id})"),),
                deletes=(FileAction(table.tags.path(old), TAG, f"renamed to {new!r}"),),
                details={"old": old, "new": new, "snapshot_id": tag.id})


def rename_tag(table: Table, old: str, new: str, dry_run: bool = False, resume: bool = False) -> Report:
    """Rename a tag: create the new file (atomic, content unchanged — retention included), then delete the old one.

    Crash-safe: a crash in between leaves both names on the same snapshot; re-running with `resume=True` finishes
    the rename (only then is the old name deleted while the new one already exists).
    """
    started = time.time()
    if table.tags.exists(old) and table.tags.exists(new) and \
            table.io.read_bytes(table.tags.path(old)) == table.io.read_bytes(table.tags.path(new)):
        if not resume:
            raise InvalidArgumentError(
                f"tag {new!r} of {table.identifier} already exists with exactly the content of {old!r}: if an earlier "
                f"rename was interrupted, finish it with {arg('resume', True)} (deletes tag {old!r}); otherwise "
                "choose another name")
        action = FileAction(table.tags.path(old), TAG, f"finishing the interrupted rename to {new!r}")
        if not dry_run:
            table.tags.delete_file(old)
        return Report("rename_tag", table.identifier, dry_run, time.time() - started, deleted={TAG: 1},
                      details={"old": old, "new": new, "resumed": True}, files=(action,))
    if resume and table.tags.exists(new) and not table.tags.exists(old):
        return Report("rename_tag", table.identifier, dry_run, time.time() - started,
                      details={"old": old, "new": new, "resumed": True},
                      warnings=(f"tag {old!r} is already gone and {new!r} exists: the rename was complete",))
    plan = plan_rename_tag(table, old, new)
    if dry_run:
        return Report("rename_tag", table.identifier, True, time.time() - started, written={TAG: 1},
                      deleted={TAG: 1}, details=dict(plan.details), files=plan.writes + plan.deletes)
    data = table.io.read_bytes(table.tags.path(old))
    validate_tag_name(new)
    if not table.io.write_atomic_if_absent(table.tags.path(new), data):
        raise InvalidArgumentError(f"tag {new!r} of {table.identifier} was created concurrently; rename aborted")
    table.tags.delete_file(old)
    log.info("%s: renamed tag %s -> %s", table.identifier, old, new)
    return Report("rename_tag", table.identifier, False, time.time() - started, written={TAG: 1},
                  deleted={TAG: 1}, details=dict(plan.details), files=plan.writes + plan.deletes)


def delete_tags(table: Table, names: str | Sequence[str], dry_run: bool = False, runner=None) -> Report:
    """Delete tags with file reclamation (maintenance.md §3.3) — delegates to ``reclaim.delete_tags``."""
    from paimon_ops.lifecycle import reclaim
    names = [names] if isinstance(names, str) else list(names)
    for n in names:
        _check_existing_name(n)
    return reclaim.delete_tags(table, names, dry_run=dry_run, runner=runner)


__all__ = [
    "SnapshotTimeline", "TagInfo", "list_tags", "find_snapshot", "snapshot_current_at", "plan_create_tag", "create_tag",
    "plan_replace_tag", "replace_tag", "plan_rename_tag", "rename_tag", "delete_tags", "tag_local_zone",
    "local_now", "parse_zone", "to_local_millis", "local_to_instant_millis", "write_new_tag",
]
