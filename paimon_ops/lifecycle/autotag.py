"""Automatic tags (one per period) and tag expiry (maintenance.md §3.4-3.6).

Configuration — two ways to ask for automatic daily tags, one engine:

* Paimon's own options (so a table configured for Java behaves the same here): ``tag.automatic-creation`` =
  ``process-time`` | ``watermark`` | ``batch``, ``tag.creation-period`` (daily / hourly / two-hours),
  ``tag.creation-period-duration``, ``tag.creation-delay``, ``tag.period-formatter``, ``tag.num-retained-max``,
  ``tag.default-time-retained``, ``tag.automatic-completion``, ``sink.process-time-zone``,
  ``sink.watermark-time-zone``.
* Our ``tag.create-time = 'HH:mm'`` (+ ``tag.create-time-zone``, default UTC, and ``tag.create-interval``, whole days,
  default ``1 d``): daily periods ``[D 00:00, D+1 00:00)`` in the zone, each tagged at the wall-clock time
  ``D+1 HH:mm`` — i.e. ``HH:mm`` *is* the creation delay after the boundary — named like Java's daily tags
  (``2026-11-21`` with ``with_dashes``) so Java's parser (count expiry, auto creation) recognises them. With an
  interval of N > 1 days the periods are N-day periods aligned like Java's custom durations (to 1970-01-01 00:00
  local) and named by their first day like daily tags (Java's custom-duration names ``yyyyMMddHHmm`` are all digits,
  which tag names must not be). Formats with all-digit names (daily ``without_dashes``, hourly
  ``without_dashes_and_spaces``, ``tag.creation-period-duration``) are refused for creation with a clear error; such
  tags made by Java are still recognised for expiry. ``tag.create-time`` implies process time unless
  ``tag.automatic-creation=watermark``; it cannot be combined with ``tag.creation-delay``,
  ``tag.creation-period-duration``, a non-daily ``tag.creation-period`` or ``batch`` (clear error, nothing written).
* Zone: ``tag.create-time-zone`` or, if unset, ``sink.process-time-zone`` (process time) /
  ``sink.watermark-time-zone`` (watermark); both set and different → error. Unset → UTC (Java would use the JVM
  zone for process time: set the option explicitly when Java writers auto-tag the same table).
* ``tag.create-max-delay`` (ours, default one period): the guard against tagging a snapshot far past a boundary.

Which snapshot a period gets (deterministic; backfill = on-time result):

* Period P ends at ``end``; its deadline is the earliest instant whose wall clock reads ``end + delay`` (a deadline
  inside a DST gap is the transition instant; inside a fall-back overlap its first occurrence — exactly when Java's
  LocalDateTime comparison first fires). One deadline per period, so DST never yields zero or two tags a day.
* process-time: the latest snapshot committed at or before the deadline, live or tag-held. This differs from Java,
  which tags the *first* snapshot committed after the deadline (so its tag can contain data committed later); ours
  is "the table as it was at the deadline". A period is due once ``now >= deadline``. If the table had no snapshot
  at the deadline the period is ``empty`` (not tagged: no state to tag, and tagging a later snapshot would depend on
  when the job runs). If the snapshot needed expired untagged, the period is ``expired`` (never a different one).
* watermark: the first snapshot whose watermark reaches the deadline (as Java). Due once some snapshot's watermark
  does. The max-delay guard refuses a snapshot whose watermark is more than ``tag.create-max-delay`` past the
  deadline (``too-late``); this is what hands a watermark jump over several periods to the last of them, like
  Java's name for it.
* A snapshot that is the answer for several consecutive periods (no commit in a period, or a watermark jump) is
  tagged once, for the first period that accepts it; the later ones are ``idle``. With
  ``tag.automatic-completion=true`` idle periods are tagged too, on the same snapshot — except when Java auto
  creation is enabled on the table, because Java fails on two auto tags of one snapshot. Periods the job simply
  missed (it did not run) are always filled with their own snapshot: unlike Java we can still tell which
  snapshot was current at each deadline, so ``tag.automatic-completion`` only concerns idle periods.
* Idempotent: a period whose tag exists on the expected snapshot is ``exists``; on another snapshot ``conflict``
  (left unchanged, reported). Tags are created with create-if-absent, retention ``tag.default-time-retained``.
* Due periods without ``periods=``: from the period after the last auto tag (greatest period among tag names that
  parse with the current formatter, like Java) — or, without auto tags, from the first period whose deadline is at
  or after the earliest snapshot — to the latest due period. Periods whose snapshots already expired are skipped
  with one warning.
* batch: ``tag.batch.customized-name`` or ``batch-write-<yyyy-MM-dd of the latest commit>`` on the latest snapshot;
  an existing tag of that name on another snapshot is deleted first (with reclamation) and re-created, like Java.

Tag expiry (``plan_expire_tags`` / ``expire_tags``), always deleting through ``reclaim.delete_tags``:

* time: ``tagCreateTime + tagTimeRetained < now`` (local, tag local zone — see tags.py), if
  ``tag.time-expire-enabled`` (default true); plus ``older_than``: tags created before it, using the tag file's
  modification time for tags without ``tagCreateTime`` (Java ``expire_tags``).
* count: ``tag.num-retained-max`` keeps that many auto tags (names parsing with the current period formatter), deleting
  the oldest by snapshot id; in batch mode all tags count (ties by file mtime), like Java. Evaluated on every run (Java
  only right after creating an auto tag), after removing the tags that expire by time.
"""
from __future__ import annotations

import datetime as _dt
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import pendulum

from paimon_ops.errors import arg, InvalidArgumentError, InvalidOptionError, UnsafeOperationError
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.lifecycle.tags import (
    UTC, SnapshotTimeline, local_millis_to_naive, local_now, local_to_instant_millis, naive_to_local_millis,
    now_millis_or_clock, parse_zone, tag_local_zone, to_instant_millis, to_local_millis,
    valid_watermark as _valid_watermark, write_new_tag,
)
from paimon_ops.options import Options, format_duration, parse_duration
from paimon_ops.plan import TAG, FileAction, Plan, Report, bytes_by_kind, count_by_kind
from paimon_ops.table.table import Table, validate_tag_name

log = logging.getLogger(__name__)

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000
MAX_PERIODS = 100_000

# Period decision statuses
CREATE, EXISTS, CONFLICT, IDLE, EXPIRED, EMPTY, TOO_LATE, NOT_DUE = (
    "create", "exists", "conflict", "idle", "expired", "empty", "too-late", "not-due")


class PeriodNotDueError(InvalidArgumentError):
    """The tag of a period was asked for before the period is due."""


class PeriodCannotBeTaggedError(UnsafeOperationError):
    """The right snapshot for a period cannot be tagged (expired, or past the max-delay guard)."""


# ---------------------------------------------------------------------------------------------- Java's tag names
def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year; H. Hinnant's algorithm)."""
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _lenient_local_ms(year: str, month: str, day: str, hour: str = "0", minute: str = "0") -> int | None:
    """Java's ResolverStyle.LENIENT: Jan 1 of the year, plus (month-1) months, (day-1) days, hours, minutes."""
    y = int(year)
    if abs(y) > 999_999_999:  # java.time.Year range
        return None
    months = y * 12 + int(month) - 1
    y2, m0 = divmod(months, 12)
    days = _days_from_civil(y2, m0 + 1, 1) + int(day) - 1
    return days * DAY_MS + int(hour) * HOUR_MS + int(minute) * MINUTE_MS


# The year is 1..10 digits with an optional '-' (SignStyle.NORMAL, strict parse); fixed-width fields after it
# are reserved (adjacent value parsing), which a greedy-then-backtracking regex reproduces.
_Y = r"(-?\d{1,10})"
_PATTERNS = {
    "day_dashes": re.compile(_Y + r"-(\d{2})-(\d{2})"),
    "day_compact": re.compile(_Y + r"(\d{2})(\d{2})"),
    "hour_dashes": re.compile(_Y + r"-(\d{2})-(\d{2}) (\d{2})"),
    "hour_nodash": re.compile(_Y + r"(\d{2})(\d{2}) (\d{2})"),
    "hour_compact": re.compile(_Y + r"(\d{2})(\d{2})(\d{2})"),
    "minute": re.compile(_Y + r"(\d{2})(\d{2})(\d{2})(\d{2})"),
}
FORMATTERS = ("with_dashes", "without_dashes", "without_dashes_and_spaces")


@dataclass(frozen=True)
class PeriodHandler:
    """Java ``TagPeriodHandler``: period length, name format, lenient name parsing (``isAutoTag``)."""

    kind: str  # daily | hourly | two-hours | duration (Java) | days (tag.create-interval: N-day, daily names)
    length_ms: int
    formatter: str = "with_dashes"

    @property
    def _pattern(self) -> str:
        if self.kind in ("daily", "days"):
            return "day_dashes" if self.formatter == "with_dashes" else "day_compact"
        if self.kind == "hourly":
            return {"with_dashes": "hour_dashes", "without_dashes": "hour_nodash",
                    "without_dashes_and_spaces": "hour_compact"}[self.formatter]
        if self.kind == "two-hours":
            return "hour_dashes"  # Java ignores the formatter option here
        return "minute"

    def format(self, local_ms: int) -> str:
        dt = local_millis_to_naive(local_ms)
        y, mo, d, h, mi = str(dt.year), f"{dt.month:02d}", f"{dt.day:02d}", f"{dt.hour:02d}", f"{dt.minute:02d}"
        return {"day_dashes": f"{y}-{mo}-{d}", "day_compact": f"{y}{mo}{d}", "hour_dashes": f"{y}-{mo}-{d} {h}",
                "hour_nodash": f"{y}{mo}{d} {h}", "hour_compact": f"{y}{mo}{d}{h}",
                "minute": f"{y}{mo}{d}{h}{mi}"}[self._pattern]

    def parse(self, name: str) -> int | None:
        """Local time (epoch ms "as if UTC") Java's ``tagToTime`` gives the name, or None if Java would reject it."""
        if not isinstance(name, str):
            return None
        # Java's daily parser keeps the text before the first space
        text = name.split(" ")[0] if self.kind in ("daily", "days") else name
        m = _PATTERNS[self._pattern].fullmatch(text)
        return _lenient_local_ms(*m.groups()) if m else None

    def is_auto_tag(self, name: str) -> bool:
        return self.parse(name) is not None

    def floor(self, local_ms: int) -> int:
        """Start of the period containing a local time; periods are aligned to 1970-01-01 00:00 local (Java)."""
        return (local_ms // self.length_ms) * self.length_ms

    @property
    def numeric_names(self) -> bool:
        """Names of this format are all digits (e.g. 20261121), which validate_tag_name refuses."""
        return self._pattern in ("day_compact", "hour_compact", "minute")

    def describe(self) -> str:
        if self.kind in ("duration", "days"):
            return f"every {format_duration(_dt.timedelta(milliseconds=self.length_ms))}"
        return self.kind


@dataclass(frozen=True)
class Period:
    """One tag period: ``[start, end)`` in the tag time zone; its tag is due at ``due`` (end + delay, wall clock)."""

    name: str
    start: pendulum.DateTime
    end: pendulum.DateTime
    due: pendulum.DateTime
    local_start_millis: int = field(repr=False, compare=False, default=0)

    @property
    def start_millis(self) -> int:
        return _ms(self.start)

    @property
    def end_millis(self) -> int:
        return _ms(self.end)

    @property
    def due_millis(self) -> int:
        return _ms(self.due)


def _ms(dt: _dt.datetime) -> int:
    delta = dt - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def _pdt(instant_ms: int, zone: _dt.tzinfo) -> pendulum.DateTime:
    utc = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=instant_ms)
    return pendulum.instance(utc.astimezone(zone))


# ---------------------------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class TagSchedule:
    """Resolved automatic-tag configuration of one table (see module docstring)."""

    table: str
    mode: str  # process-time | watermark | batch
    source: str  # which options asked for it: 'tag.create-time' or 'tag.automatic-creation'
    handler: PeriodHandler | None  # None in batch mode
    zone: _dt.tzinfo
    zone_name: str
    delay_ms: int
    max_delay_ms: int
    completion: bool
    java_auto: bool  # Java itself auto-tags this table (tag.automatic-creation = process-time | watermark)
    default_retained: _dt.timedelta | None
    num_retained_max: int | None
    batch_name: str | None = None

    def period_starting(self, local_start: int) -> Period:
        assert self.handler is not None
        end_local = local_start + self.handler.length_ms
        try:
            start = local_to_instant_millis(local_start, self.zone)
            end = local_to_instant_millis(end_local, self.zone)
            due = local_to_instant_millis(end_local + self.delay_ms, self.zone)
            name = self.handler.format(local_start)
        except (OverflowError, ValueError):
            raise InvalidArgumentError(f"period starting at local ms {local_start} is out of range") from None
        return Period(name, _pdt(start, self.zone), _pdt(end, self.zone), _pdt(due, self.zone), local_start)

    def period_containing_local(self, local_ms: int) -> Period:
        assert self.handler is not None
        return self.period_starting(self.handler.floor(local_ms))

    def period_containing(self, instant_ms: int) -> Period:
        return self.period_containing_local(to_local_millis(instant_ms, self.zone))

    def next(self, p: Period) -> Period:
        return self.period_starting(p.local_start_millis + self.handler.length_ms)  # type: ignore[union-attr]

    def prev(self, p: Period) -> Period:
        return self.period_starting(p.local_start_millis - self.handler.length_ms)  # type: ignore[union-attr]

    def describe(self) -> dict[str, Any]:
        return {"mode": self.mode, "configured_by": self.source,
                "period": self.handler.describe() if self.handler else None, "zone": self.zone_name,
                "delay": format_duration(_dt.timedelta(milliseconds=self.delay_ms)),
                "max_delay": format_duration(_dt.timedelta(milliseconds=self.max_delay_ms)),
                "automatic_completion": self.completion}


_HHMM = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")


def _positive(opts: Options, key: str, td: _dt.timedelta | None) -> _dt.timedelta | None:
    if td is not None and td <= _dt.timedelta(0):
        raise InvalidOptionError(key, opts.raw.get(key), "a positive duration", opts.where)
    return td


def _zone(opts: Options, mode: str) -> tuple[_dt.tzinfo, str]:
    sink_key = "sink.watermark-time-zone" if mode == "watermark" else "sink.process-time-zone"
    own, sink = opts.str("tag.create-time-zone"), opts.str(sink_key)
    if own is not None and sink is not None and own.strip() != sink.strip():
        raise InvalidOptionError("tag.create-time-zone", own,
                                 f"the same zone as {sink_key} ({sink!r}), or unset one of them: both name the "
                                 "zone tag periods are computed in", opts.where)
    key = "tag.create-time-zone" if own is not None else sink_key
    text = own if own is not None else (sink if sink is not None else "UTC")
    return parse_zone(text, key, opts.where), text.strip()


def _handler_from_paimon_options(opts: Options) -> PeriodHandler:
    formatter = opts.enum("tag.period-formatter", FORMATTERS, "with_dashes")
    custom = opts.duration("tag.creation-period-duration")
    if custom is not None:
        ms = int(custom.total_seconds() * 1000)
        if ms <= 0 or ms % MINUTE_MS:
            raise InvalidOptionError("tag.creation-period-duration", opts.raw.get("tag.creation-period-duration"),
                                     "a positive whole number of minutes (tag names have minute resolution)",
                                     opts.where)
        return PeriodHandler("duration", ms, formatter)
    period = opts.enum("tag.creation-period", ("daily", "hourly", "two-hours"), "daily")
    length = {"daily": DAY_MS, "hourly": HOUR_MS, "two-hours": 2 * HOUR_MS}[period]
    return PeriodHandler(period, length, formatter)


def tag_schedule(table: Table) -> TagSchedule | None:
    """The table's automatic-tag configuration, validated; None when automatic tagging is off.

    Raises InvalidOptionError naming the option and the table for any malformed or conflicting option.
    """
    opts = table.options
    where = opts.where
    auto = opts.enum("tag.automatic-creation", ("none", "process-time", "watermark", "batch"), "none")
    create_time = opts.str("tag.create-time")
    interval_text = opts.str("tag.create-interval")
    if create_time is None and interval_text is not None:
        raise InvalidOptionError("tag.create-interval", interval_text, "to be used together with tag.create-time "
                                 "(HH:mm); for Paimon periods use tag.creation-period(-duration)", where)
    num_max = opts.int("tag.num-retained-max")
    if num_max is not None and num_max < 1:
        raise InvalidOptionError("tag.num-retained-max", num_max, "an integer >= 1", where)
    retained = _positive(opts, "tag.default-time-retained", opts.duration("tag.default-time-retained"))
    completion = opts.bool("tag.automatic-completion")
    java_auto = auto in ("process-time", "watermark")

    if create_time is not None:
        if auto == "batch":
            raise InvalidOptionError("tag.create-time", create_time, "unset when tag.automatic-creation=batch "
                                     "(batch tags are made per write, not per period)", where)
        m = _HHMM.fullmatch(create_time.strip())
        if not m:
            raise InvalidOptionError("tag.create-time", create_time, "a 24-hour wall-clock time HH:mm such as '02:30'",
                                     where)
        for conflicting in ("tag.creation-delay", "tag.creation-period-duration"):
            if conflicting in opts.raw:
                raise InvalidOptionError(conflicting, opts.raw[conflicting], "unset when tag.create-time is set "
                                         "(tag.create-time is the delay after the period boundary and "
                                         "tag.create-interval the period; give one of the two ways)", where)
        if "tag.creation-period" in opts.raw and opts.enum("tag.creation-period", ("daily", "hourly", "two-hours"),
                                                            "daily") != "daily":
            raise InvalidOptionError("tag.creation-period", opts.raw["tag.creation-period"], "'daily' (or unset) when "
                                     "tag.create-time is set; use tag.create-interval for multi-day periods", where)
        try:
            interval = parse_duration(interval_text, "tag.create-interval") if interval_text else _dt.timedelta(days=1)
        except InvalidOptionError:
            interval = None
        if interval is None or interval < _dt.timedelta(days=1) or interval % _dt.timedelta(days=1):
            raise InvalidOptionError("tag.create-interval", interval_text, "a whole number of days such as '1 d' or "
                                     "'7 d'", where)
        days = interval // _dt.timedelta(days=1)
        formatter = opts.enum("tag.period-formatter", FORMATTERS, "with_dashes")
        # N-day periods are aligned like Java's custom durations (to 1970-01-01 local) but named by their first day
        # like daily tags: readable, not all digits, and Java's daily parser still recognises them
        handler = (PeriodHandler("daily", DAY_MS, formatter) if days == 1
                   else PeriodHandler("days", days * DAY_MS, formatter))
        delay_ms = int(m.group(1)) * HOUR_MS + int(m.group(2)) * MINUTE_MS
        mode = auto if java_auto else "process-time"
        source = "tag.create-time"
    elif java_auto:
        handler = _handler_from_paimon_options(opts)
        delay = opts.duration("tag.creation-delay", _dt.timedelta(0)) or _dt.timedelta(0)
        delay_ms = int(delay.total_seconds() * 1000)
        if delay_ms < 0 or delay_ms >= handler.length_ms:
            raise InvalidOptionError("tag.creation-delay", opts.raw.get("tag.creation-delay"),
                                     f"a duration >= 0 and shorter than one period ({handler.describe()})", where)
        mode = auto
        source = "tag.automatic-creation"
    elif auto == "batch":
        zone_text = opts.str("sink.process-time-zone") or "UTC"
        zone = parse_zone(zone_text, "sink.process-time-zone", where)
        name = opts.str("tag.batch.customized-name")
        if name is not None:
            try:
                validate_tag_name(name)
            except InvalidArgumentError as e:
                raise InvalidOptionError("tag.batch.customized-name", name, f"a valid tag name ({e})", where) from None
        return TagSchedule(table.identifier, "batch", "tag.automatic-creation", None, zone, zone_text, 0, 0,
                           completion, False, retained, num_max, name)
    else:
        return None

    zone, zone_name = _zone(opts, mode)
    max_delay = opts.duration("tag.create-max-delay", _dt.timedelta(milliseconds=handler.length_ms))
    max_delay_ms = int(max_delay.total_seconds() * 1000) if max_delay is not None else handler.length_ms
    if max_delay_ms < 0:
        raise InvalidOptionError("tag.create-max-delay", opts.raw.get("tag.create-max-delay"), "a duration >= 0", where)
    return TagSchedule(table.identifier, mode, source, handler, zone, zone_name, delay_ms, max_delay_ms, completion,
                       java_auto, retained, num_max)


def _require_periodic(table: Table) -> TagSchedule:
    sched = tag_schedule(table)
    if sched is None:
        raise InvalidArgumentError(f"{table.identifier} has no automatic tag periods: set tag.create-time='HH:mm' "
                                   "or tag.automatic-creation=process-time|watermark")
    if sched.mode == "batch":
        raise InvalidArgumentError(f"{table.identifier} uses tag.automatic-creation=batch, which has no periods")
    return sched


def auto_tag_matcher(table: Table) -> Callable[[str], bool]:
    """Predicate 'this tag name is an auto tag' for the table's current period formatter (False if none)."""
    sched = tag_schedule(table)
    if sched is None or sched.handler is None:
        return lambda name: False
    return sched.handler.is_auto_tag


# ---------------------------------------------------------------------------------------------- decisions
@dataclass(frozen=True)
class PeriodDecision:
    period: Period
    status: str  # create | exists | conflict | idle | expired | empty | too-late | not-due
    snapshot_id: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"period": self.period.name, "start": self.period.start.isoformat(),
                "end": self.period.end.isoformat(), "due": self.period.due.isoformat(), "status": self.status,
                "snapshot_id": self.snapshot_id, "reason": self.reason}


def _iso(ms: int, zone: _dt.tzinfo) -> str:
    return _pdt(ms, zone).isoformat()


class _Context:
    def __init__(self, table: Table, sched: TagSchedule, now_ms: int):
        self.table = table
        self.sched = sched
        self.now_ms = now_ms
        self.tags = table.tags.tags()
        self.by_name: dict[str, Tag] = {n: t for n, t in self.tags}
        self.timeline = SnapshotTimeline(table, self.tags)
        assert sched.handler is not None
        self.handler = sched.handler
        self.auto_on_snapshot: dict[int, set[str]] = {}
        for n, t in self.tags:
            if self.handler.is_auto_tag(n):
                self.auto_on_snapshot.setdefault(t.id, set()).add(n)
        self._accepted: dict[int, Snapshot | None] = {}
        self._max_wm = self.timeline.max_watermark() if sched.mode == "watermark" else None

    @property
    def watermark_mode(self) -> bool:
        return self.sched.mode == "watermark"

    def due(self, p: Period) -> bool:
        if self.watermark_mode:
            return self._max_wm is not None and self._max_wm >= p.due_millis
        return self.now_ms >= p.due_millis

    def candidate(self, p: Period) -> tuple[str, Snapshot | None]:
        if self.watermark_mode:
            return self.timeline.first_watermark_reaching(p.due_millis)
        return self.timeline.at_or_before(p.due_millis)

    def lateness(self, p: Period, s: Snapshot) -> int:
        return (_valid_watermark(s) or 0) - p.due_millis if self.watermark_mode else 0

    def accepted(self, p: Period) -> Snapshot | None:
        """The period's snapshot if it is due, certain and within the max-delay guard (idleness ignored)."""
        key = p.local_start_millis
        if key not in self._accepted:
            status, s = self.candidate(p) if self.due(p) else (None, None)
            ok = status == SnapshotTimeline.OK and s is not None and self.lateness(p, s) <= self.sched.max_delay_ms
            self._accepted[key] = s if ok else None
        return self._accepted[key]

    def decide(self, p: Period) -> PeriodDecision:
        zone = self.sched.zone
        if not self.due(p):
            if self.watermark_mode:
                return PeriodDecision(p, NOT_DUE, None, f"no snapshot's watermark has reached {p.due.isoformat()} yet")
            return PeriodDecision(p, NOT_DUE, None, f"due at {p.due.isoformat()}, now is {_iso(self.now_ms, zone)}")
        status, s = self.candidate(p)
        existing = self.by_name.get(p.name)
        if existing is not None:
            if status == SnapshotTimeline.OK and s is not None and existing.id != s.id:
                return PeriodDecision(p, CONFLICT, existing.id,
                                      f"tag {p.name!r} exists on snapshot {existing.id} but the period's snapshot is "
                                      f"{s.id}; left unchanged")
            return PeriodDecision(p, EXISTS, existing.id, f"tag {p.name!r} exists on snapshot {existing.id}")
        if status == SnapshotTimeline.UNKNOWN:
            what = ("the first snapshot whose watermark reaches " if self.watermark_mode
                    else "the latest snapshot committed at or before ") + p.due.isoformat()
            return PeriodDecision(p, EXPIRED, None,
                                  f"{what} has expired (earliest snapshot is {self.timeline.earliest}); not tagging a "
                                  "different snapshot")
        if status == SnapshotTimeline.NONE or s is None:
            if self.watermark_mode:  # cannot happen when due; keep the answer honest anyway
                return PeriodDecision(p, NOT_DUE, None, "no snapshot's watermark has reached the deadline")
            return PeriodDecision(p, EMPTY, None, f"the table had no snapshot at {p.due.isoformat()} "
                                  f"(first snapshot {self.timeline.min_known()} is later); nothing to tag")
        late = self.lateness(p, s)
        if late > self.sched.max_delay_ms:
            return PeriodDecision(p, TOO_LATE, s.id,
                                  f"snapshot {s.id} is the first whose watermark reaches {p.due.isoformat()}, but it "
                                  f"is {format_duration(_dt.timedelta(milliseconds=late))} past it (more than "
                                  "tag.create-max-delay); not tagging it for this period")
        prev = self.accepted(self.sched.prev(p))
        how = (f"snapshot {s.id} (watermark {_iso(_valid_watermark(s) or 0, zone)}) is the first whose watermark "
               f"reaches the deadline {p.due.isoformat()}" if self.watermark_mode else
               f"snapshot {s.id} (committed {_iso(s.time_millis, zone)}) is the latest committed at or before the "
               f"deadline {p.due.isoformat()}")
        if prev is not None and prev.id == s.id:
            if not self.sched.completion:
                return PeriodDecision(p, IDLE, s.id, f"snapshot {s.id} is also the previous period's snapshot (no "
                                      "change in this period); not tagged without tag.automatic-completion")
            if self.sched.java_auto:
                return PeriodDecision(p, IDLE, s.id, f"snapshot {s.id} is also the previous period's snapshot; "
                                      "tag.automatic-completion would put a second auto tag on it, which Java Paimon's "
                                      "auto tagging (enabled on this table) rejects")
        if self.sched.java_auto:
            others = sorted(self.auto_on_snapshot.get(s.id, set()) - {p.name})
            if others:
                return PeriodDecision(p, CONFLICT, s.id, f"snapshot {s.id} already carries auto tag {others[0]!r}; "
                                      "Java Paimon rejects two auto tags on one snapshot")
        return PeriodDecision(p, CREATE, s.id, how)

    def planned(self, d: PeriodDecision) -> None:
        if d.status == CREATE and d.snapshot_id is not None:
            self.auto_on_snapshot.setdefault(d.snapshot_id, set()).add(d.period.name)

    # ------------------------------------------------------------------ which periods are due
    def latest_due(self) -> Period | None:
        ref = self._max_wm if self.watermark_mode else self.now_ms
        if ref is None:
            return None
        p = self.sched.period_containing_local(to_local_millis(ref, self.sched.zone) - self.sched.delay_ms)
        while self.sched.next(p).due_millis <= ref:
            p = self.sched.next(p)
        while p.due_millis > ref:
            p = self.sched.prev(p)
        return p

    def first_possible(self) -> Period | None:
        """First period whose snapshot can be determined from the live snapshots (see module docstring)."""
        if self.watermark_mode:
            w = self.timeline.first_watermark()
            if w is None:
                return None
            anchor = w - self.sched.max_delay_ms
        else:
            if self.timeline.earliest is None:
                return None
            anchor = self.timeline.get(self.timeline.earliest).time_millis
        p = self.sched.period_containing_local(to_local_millis(anchor, self.sched.zone) - self.sched.delay_ms)
        while self.sched.prev(p).due_millis >= anchor:
            p = self.sched.prev(p)
        while p.due_millis < anchor:
            p = self.sched.next(p)
        return p

    def last_auto_tag(self, limit: Period) -> tuple[str, int] | None:
        best = None
        for n, _ in self.tags:
            t = self.handler.parse(n)
            if t is None:
                continue
            if t > limit.local_start_millis:
                continue  # a name in the future (or a manual tag that happens to parse) must not stop tagging
            if best is None or t > best[1]:
                best = (n, t)
        return best

    def due_periods(self) -> tuple[list[Period], list[str]]:
        warnings: list[str] = []
        last_due = self.latest_due()
        first = self.first_possible()
        if last_due is None or first is None:
            return [], warnings
        last_tag = self.last_auto_tag(last_due)
        if last_tag is None:
            start = first
        else:
            try:
                start = self.sched.period_starting(self.handler.floor(last_tag[1]) + self.handler.length_ms)
            except InvalidArgumentError:  # a name Java's lenient parser accepts but no datetime can hold
                start = first
            if start.local_start_millis < first.local_start_millis:
                skipped_to = self.sched.prev(first)
                if skipped_to.local_start_millis >= start.local_start_millis:
                    warnings.append(f"periods {start.name} .. {skipped_to.name} after the last auto tag "
                                    f"{last_tag[0]!r} are not tagged: their deadlines precede the earliest snapshot "
                                    f"{self.timeline.earliest}, so the snapshots they need have expired (or never "
                                    f"existed); pass {arg('periods')} to see each one")
                start = first
        out = []
        p = start
        while p.local_start_millis <= last_due.local_start_millis:
            out.append(p)
            if len(out) > MAX_PERIODS:
                raise InvalidArgumentError(f"{self.table.identifier}: more than {MAX_PERIODS} periods are due since "
                                           f"{start.name}; pass {arg('periods')} explicitly")
            p = self.sched.next(p)
        return out, warnings


# ---------------------------------------------------------------------------------------------- period API
def _coerce_period(table: Table, sched: TagSchedule, value: Period | str | _dt.date | _dt.datetime | int) -> Period:
    if isinstance(value, Period):
        return sched.period_starting(value.local_start_millis)
    handler = sched.handler
    assert handler is not None
    if isinstance(value, str):
        t = handler.parse(value)
        if t is not None:
            if handler.floor(t) == t and handler.format(t) == value:
                return sched.period_starting(t)
            try:
                hint = f"; did you mean {handler.format(handler.floor(t))!r}?"
            except (OverflowError, ValueError):
                hint = ""
            raise InvalidArgumentError(f"{value!r} is not a period name of {table.identifier} "
                                       f"({handler.describe()}){hint}")
    return period_for_date(table, value)


def period_for_date(table: Table, date: _dt.date | _dt.datetime | str | int) -> Period:
    """The period containing a date (its local midnight), a date-time (naive = tag zone) or an instant (ms)."""
    sched = _require_periodic(table)
    if isinstance(date, str):
        t = sched.handler.parse(date)  # type: ignore[union-attr]
        if t is not None and sched.handler.format(sched.handler.floor(t)) == date:  # type: ignore[union-attr]
            return sched.period_starting(sched.handler.floor(t))  # type: ignore[union-attr]
    if isinstance(date, _dt.datetime) and date.tzinfo is None:
        return sched.period_containing_local(naive_to_local_millis(date))
    if isinstance(date, _dt.date) and not isinstance(date, _dt.datetime):
        return sched.period_containing_local(naive_to_local_millis(_dt.datetime(date.year, date.month, date.day)))
    if isinstance(date, str):
        try:
            parsed = pendulum.parse(date.strip(), tz=None, exact=True)
        except Exception:
            raise InvalidArgumentError(f"{date!r} is neither a period name of {table.identifier} nor a date or "
                                       "date-time") from None
        if isinstance(parsed, (_dt.date, _dt.datetime)):
            return period_for_date(table, parsed)
        raise InvalidArgumentError(f"{date!r} is not a date or date-time")
    return sched.period_containing(to_instant_millis(date, sched.zone, "date"))


def expected_tag_periods(table: Table, start: _dt.date | _dt.datetime | str | int,
                         end: _dt.date | _dt.datetime | str | int, now: int | _dt.datetime | None = None) -> list[Period]:
    """Calendar of due periods whose start lies in [start, end) — one per Dagster partition.

    Periods are listed whether or not they will get a tag (idle / empty ones included); `plan_auto_tags` says
    what actually happens. Dates and naive date-times are read in the tag zone.
    """
    sched = _require_periodic(table)
    now_ms = now_millis_or_clock(None if now is None else to_instant_millis(now, sched.zone, "now"))
    lo = to_instant_millis(start, sched.zone, "start")
    hi = to_instant_millis(end, sched.zone, "end")
    ctx = _Context(table, sched, now_ms)
    out = []
    p = sched.period_containing(lo)
    if p.start_millis < lo:
        p = sched.next(p)
    while p.start_millis < hi and ctx.due(p):
        out.append(p)
        if len(out) > MAX_PERIODS:
            raise InvalidArgumentError(f"more than {MAX_PERIODS} periods between {start} and {end}")
        p = sched.next(p)
    return out


# ---------------------------------------------------------------------------------------------- plan / create
@dataclass(frozen=True)
class _AutoPlan:
    plan: Plan
    decisions: tuple[PeriodDecision, ...]
    batch_replace: str | None = None  # batch mode: existing tag to delete first


def _plan(table: Table, now_millis: int | None, periods: Iterable[Any] | None) -> _AutoPlan:
    now_ms = now_millis_or_clock(now_millis)
    sched = tag_schedule(table)
    base = table.snapshots.latest_id()
    if sched is None:
        return _AutoPlan(Plan("auto_tag", table.identifier, base, warnings=(
            "automatic tagging is not configured: set tag.create-time='HH:mm' or tag.automatic-creation",)), ())
    if sched.mode == "batch":
        if periods is not None:
            raise InvalidArgumentError(f"{table.identifier} uses tag.automatic-creation=batch, which has no periods")
        return _plan_batch(table, sched)
    ctx = _Context(table, sched, now_ms)
    warnings: list[str] = []
    if periods is None:
        todo, warnings = ctx.due_periods()
    else:
        unique = {cp.local_start_millis: cp for cp in (_coerce_period(table, sched, p) for p in periods)}
        todo = [unique[k] for k in sorted(unique)]
    decisions = []
    writes = []
    for p in todo:
        d = ctx.decide(p)
        ctx.planned(d)
        decisions.append(d)
        if d.status == CREATE:
            validate_tag_name(p.name, allow_numeric=True)
            writes.append(FileAction(table.tags.path(p.name), TAG, f"auto tag {p.name!r} -> {d.reason}"))
        elif d.status in (CONFLICT, EXPIRED, TOO_LATE):
            warnings.append(f"period {p.name}: {d.status}: {d.reason}")
    details: dict[str, Any] = {**sched.describe(), "now": _iso(now_ms, sched.zone),
                               "periods": [d.to_dict() for d in decisions]}
    return _AutoPlan(Plan("auto_tag", table.identifier, base, writes=tuple(writes), details=details,
                          warnings=tuple(warnings)), tuple(decisions))


def _batch_name(table: Table, sched: TagSchedule, latest: Snapshot) -> str:
    if sched.batch_name:
        return sched.batch_name
    local = local_millis_to_naive(to_local_millis(latest.time_millis, sched.zone))
    return f"batch-write-{local.strftime('%Y-%m-%d')}"


def _plan_batch(table: Table, sched: TagSchedule) -> _AutoPlan:
    latest = table.snapshots.latest()
    base = latest.id if latest else None
    if latest is None:
        return _AutoPlan(Plan("auto_tag", table.identifier, base, details={"mode": "batch"},
                              warnings=("the table has no snapshot; no batch tag",)), ())
    name = _batch_name(table, sched, latest)
    validate_tag_name(name)
    details: dict[str, Any] = {"mode": "batch", "tag": name, "snapshot_id": latest.id}
    write = FileAction(table.tags.path(name), TAG, f"batch tag {name!r} -> latest snapshot {latest.id}")
    if table.tags.exists(name):
        old = table.tags.tag(name)
        if old.id == latest.id:
            return _AutoPlan(Plan("auto_tag", table.identifier, base, details={**details, "status": EXISTS}), ())
        from paimon_ops.lifecycle import reclaim
        deletion = reclaim.plan_delete_tags(table, [name])
        return _AutoPlan(Plan("auto_tag", table.identifier, base, deletes=deletion.deletes, writes=(write,),
                              details={**details, "status": "replace", "old_snapshot_id": old.id},
                              warnings=deletion.warnings), (), batch_replace=name)
    return _AutoPlan(Plan("auto_tag", table.identifier, base, writes=(write,), details={**details, "status": CREATE}),
                     ())


def plan_auto_tags(table: Table, now_millis: int | None = None, periods: Iterable[Any] | None = None) -> Plan:
    """What `create_auto_tags` would do: one decision per period (see module docstring), tag files to write.

    `periods`: None = every due period since the last auto tag (or the first snapshot); else period names, dates,
    date-times or Period objects (backfill).
    """
    return _plan(table, now_millis, periods).plan


def _summarise(decisions: Sequence[PeriodDecision], created: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"created": list(created)}
    for status in (EXISTS, CONFLICT, IDLE, EXPIRED, EMPTY, TOO_LATE, NOT_DUE):
        names = [d.period.name for d in decisions if d.status == status]
        if names:
            out[status.replace("-", "_")] = names
    return out


def create_auto_tags(table: Table, now_millis: int | None = None, periods: Iterable[Any] | None = None,
                     dry_run: bool = False, runner: Any = None) -> Report:
    """Create the automatic tags that are due (or those of `periods`). Idempotent; never overwrites a tag."""
    started = time.time()
    ap = _plan(table, now_millis, periods)
    plan = ap.plan
    warnings = list(plan.warnings)
    details = {k: v for k, v in plan.details.items() if k != "periods"}
    if plan.details.get("mode") == "batch":
        return _execute_batch(table, ap, dry_run, runner, started, now_millis)
    sched = tag_schedule(table)
    created: list[str] = []
    files: list[FileAction] = []
    timeline = None
    for d in ap.decisions:
        if d.status != CREATE:
            continue
        action = next(a for a in plan.writes if a.path == table.tags.path(d.period.name))
        if dry_run:
            created.append(d.period.name)
            files.append(action)
            continue
        if timeline is None:
            timeline = SnapshotTimeline(table, table.tags.tags())
        assert sched is not None and d.snapshot_id is not None
        snap = timeline.get(d.snapshot_id)
        tag = Tag.from_snapshot(snap, sched.default_retained,
                                local_now(table, now_millis) if sched.default_retained else None)
        if write_new_tag(table, d.period.name, tag, period_name=True):
            log.info("%s: created auto tag %s on snapshot %s", table.identifier, d.period.name, snap.id)
            created.append(d.period.name)
            files.append(FileAction(action.path, TAG, action.reason, table.io.size(action.path)))
        else:
            warnings.append(f"tag {d.period.name!r} was created concurrently by someone else; left unchanged")
    details.update(_summarise(ap.decisions, created))
    details["periods"] = plan.details.get("periods", [])
    return Report("auto_tag", table.identifier, dry_run, time.time() - started, written=count_by_kind(files),
                  written_bytes=bytes_by_kind(files), details=details, files=tuple(files), warnings=tuple(warnings))


def _execute_batch(table: Table, ap: _AutoPlan, dry_run: bool, runner: Any, started: float,
                   now_millis: int | None) -> Report:
    plan = ap.plan
    details = dict(plan.details)
    if not plan.writes:
        return Report("auto_tag", table.identifier, dry_run, time.time() - started, details=details,
                      warnings=plan.warnings)
    deleted: dict[str, int] = {}
    deleted_bytes: dict[str, int] = {}
    files: list[FileAction] = []
    written: list[FileAction] = []
    warnings = list(plan.warnings)
    name = details["tag"]
    if ap.batch_replace:
        from paimon_ops.lifecycle import reclaim
        # Java deletes the old batch tag (reclaiming what only it kept alive) before re-creating it
        r = reclaim.delete_tags(table, [ap.batch_replace], dry_run=dry_run, runner=runner)
        deleted, deleted_bytes, files = dict(r.deleted), dict(r.deleted_bytes), list(r.files)
        warnings += list(r.warnings)
    if dry_run:
        written = list(plan.writes)
    else:
        sched = tag_schedule(table)
        snap = table.snapshots.snapshot(details["snapshot_id"])
        tag = Tag.from_snapshot(snap, sched.default_retained if sched else None,
                                local_now(table, now_millis) if sched and sched.default_retained else None)
        if write_new_tag(table, name, tag):
            written.append(FileAction(table.tags.path(name), TAG, plan.writes[0].reason,
                                      table.io.size(table.tags.path(name))))
        else:
            warnings.append(f"tag {name!r} was created concurrently; left unchanged")
    files += written
    return Report("auto_tag", table.identifier, dry_run, time.time() - started, deleted=deleted,
                  deleted_bytes=deleted_bytes, written=count_by_kind(written), written_bytes=bytes_by_kind(written),
                  details=details, files=tuple(files), warnings=tuple(warnings))


def create_tag_for_period(table: Table, period: Period | str | _dt.date | _dt.datetime | int,
                          now_millis: int | None = None, dry_run: bool = False) -> Report:
    """Create (or confirm) the tag of one period — one Dagster partition. Idempotent.

    Raises PeriodNotDueError for a period that is not due yet, PeriodCannotBeTaggedError when its snapshot has
    expired or is past the max-delay guard. Idle / empty / existing / conflicting periods return a Report whose
    ``details['status']`` says so.
    """
    sched = _require_periodic(table)
    p = _coerce_period(table, sched, period)
    report = create_auto_tags(table, now_millis, periods=[p], dry_run=dry_run)
    d = report.details["periods"][0]
    status = d["status"]
    if status == NOT_DUE:
        raise PeriodNotDueError(f"the tag of period {p.name} of {table.identifier} is not due yet: {d['reason']}")
    if status in (EXPIRED, TOO_LATE):
        raise PeriodCannotBeTaggedError(f"period {p.name} of {table.identifier} cannot be tagged: {d['reason']}")
    details = {**report.details, "period": p.name, "status": status, "snapshot_id": d["snapshot_id"],
               "reason": d["reason"]}
    return Report(report.operation, report.table, report.dry_run, report.duration_s, report.deleted,
                  report.deleted_bytes, report.written, report.written_bytes, report.snapshot_id, details,
                  report.files, report.warnings)


def latest_expected_tag(table: Table, now_millis: int | None = None) -> str | None:
    """Name of the newest due period that should carry a tag by now (idle / empty / expired periods skipped).

    For an asset check: the table is up to date iff this tag exists.
    """
    sched = _require_periodic(table)
    ctx = _Context(table, sched, now_millis_or_clock(now_millis))
    p = ctx.latest_due()
    first = ctx.first_possible()
    if p is None or first is None:
        return None
    for _ in range(MAX_PERIODS):
        if p.local_start_millis < first.local_start_millis:
            return None
        d = ctx.decide(p)
        if d.status in (CREATE, EXISTS, CONFLICT):
            return p.name
        p = sched.prev(p)
    return None


# ---------------------------------------------------------------------------------------------- expiry
def _older_than_millis(table: Table, older_than: Any) -> int | None:
    if older_than is None:
        return None
    return to_instant_millis(older_than, tag_local_zone(table), "older_than")


def _expiry_reasons(table: Table, now_ms: int, older_than_ms: int | None) -> tuple[dict[str, str], list[str]]:
    opts = table.options
    zone = tag_local_zone(table)
    now_local = local_millis_to_naive(to_local_millis(now_ms, zone))
    tags = table.tags.tags()
    reasons: dict[str, str] = {}
    warnings: list[str] = []
    mtimes: dict[str, int] = {}

    def mtime(name: str) -> int:
        if name not in mtimes:
            mtimes[name] = table.tags.mtime_millis(name)
        return mtimes[name]

    time_expire = opts.bool("tag.time-expire-enabled", True)
    for name, tag in tags:
        ct, tr = tag.tag_create_time, tag.tag_time_retained
        if time_expire and ct is not None and tr is not None and now_local > ct + tr:  # strictly after, like Java
            reasons[name] = (f"retention: created {ct.isoformat()} + {format_duration(tr)} = "
                             f"{(ct + tr).isoformat()} < now {now_local.isoformat()} ({_zone_name(zone)})")
        elif older_than_ms is not None:
            if ct is not None:
                created_ms = local_to_instant_millis(naive_to_local_millis(ct), zone)
                what = f"created {ct.isoformat()} ({_zone_name(zone)})"
            else:
                created_ms = mtime(name)
                what = f"tag file modified {_iso(created_ms, UTC)} (no tagCreateTime)"
            if created_ms < older_than_ms:
                reasons[name] = f"older_than {_iso(older_than_ms, UTC)}: {what}"

    sched = tag_schedule(table)
    num_max = opts.int("tag.num-retained-max")
    if num_max is not None:
        if sched is None:
            warnings.append("tag.num-retained-max is set but automatic tagging is off; like Java it is not applied")
        else:
            remaining = [(n, t) for n, t in tags if n not in reasons]
            if sched.mode == "batch":
                pool = sorted(remaining, key=lambda nt: (nt[1].id, mtime(nt[0]), nt[0]))
                label = "tags"
            else:
                handler = sched.handler
                assert handler is not None
                pool = sorted(((n, t) for n, t in remaining if handler.is_auto_tag(n)),
                              key=lambda nt: (nt[1].id, handler.parse(nt[0]) or 0, nt[0]))
                label = "auto tags"
            excess = len(pool) - num_max
            for n, t in pool[:max(excess, 0)]:
                reasons[n] = f"count: {len(pool)} {label} > tag.num-retained-max={num_max}; oldest (snapshot {t.id})"
    return reasons, warnings


def _zone_name(zone: _dt.tzinfo) -> str:
    return getattr(zone, "name", None) or getattr(zone, "key", None) or str(zone)


def plan_expire_tags(table: Table, now_millis: int | None = None, older_than: Any = None) -> Plan:
    """Tags to expire (by retention, `older_than`, and tag.num-retained-max) and the files their deletion reclaims."""
    now_ms = now_millis_or_clock(now_millis)
    reasons, warnings = _expiry_reasons(table, now_ms, _older_than_millis(table, older_than))
    base = table.snapshots.latest_id()
    if not reasons:
        return Plan("expire_tags", table.identifier, base, details={"expired_tags": {}}, warnings=tuple(warnings))
    from paimon_ops.lifecycle import reclaim
    deletion = reclaim.plan_delete_tags(table, sorted(reasons))
    return Plan("expire_tags", table.identifier, base, deletes=deletion.deletes, writes=deletion.writes,
                details={"expired_tags": reasons, **deletion.details},
                warnings=tuple(warnings) + tuple(deletion.warnings))


def expire_tags(table: Table, now_millis: int | None = None, older_than: Any = None, dry_run: bool = False,
                runner: Any = None) -> Report:
    """Expire tags (see plan_expire_tags), deleting each through ``reclaim.delete_tags`` (file reclamation)."""
    started = time.time()
    now_ms = now_millis_or_clock(now_millis)
    reasons, warnings = _expiry_reasons(table, now_ms, _older_than_millis(table, older_than))
    if not reasons:
        return Report("expire_tags", table.identifier, dry_run, time.time() - started,
                      details={"expired_tags": {}}, warnings=tuple(warnings))
    for n, why in sorted(reasons.items()):
        log.info("%s: expiring tag %s (%s)", table.identifier, n, why)
    from paimon_ops.lifecycle import reclaim
    r = reclaim.delete_tags(table, sorted(reasons), dry_run=dry_run, runner=runner)
    return Report("expire_tags", table.identifier, dry_run, time.time() - started, deleted=dict(r.deleted),
                  deleted_bytes=dict(r.deleted_bytes), written=dict(r.written), written_bytes=dict(r.written_bytes),
                  snapshot_id=r.snapshot_id, details={"expired_tags": reasons, **r.details}, files=r.files,
                  warnings=tuple(warnings) + tuple(r.warnings))


__all__ = [
    "Period", "PeriodDecision", "PeriodHandler", "TagSchedule", "tag_schedule", "auto_tag_matcher",
    "expected_tag_periods", "period_for_date", "plan_auto_tags", "create_auto_tags", "create_tag_for_period",
    "latest_expected_tag", "plan_expire_tags", "expire_tags", "PeriodNotDueError", "PeriodCannotBeTaggedError",
]
