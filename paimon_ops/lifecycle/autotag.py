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

The plan (``AutoTagPlan``) carries each tag file's content and requires each new name to be still absent.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import logging
from dataclasses import dataclass
from typing import Any, Sequence

import pendulum

from paimon_ops.catalog import check_sync
from paimon_ops.errors import InvalidArgumentError, PeriodCannotBeTaggedError, PeriodNotDueError, arg
from paimon_ops.execution.plan import TAG, WRITE_FILES, FileAction, Plan, PlanBuilder, TagIs, planner
from paimon_ops.execution.report import Report
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.lifecycle.batch_tags import plan_batch_tag
from paimon_ops.lifecycle.periods import Period, pdt
from paimon_ops.lifecycle.schedule import TagSchedule, auto_tag_matcher, require_periodic, tag_schedule
from paimon_ops.lifecycle.timeline import SnapshotTimeline, local_now
from paimon_ops.lifecycle.timeline import valid_watermark as _valid_watermark
from paimon_ops.operations.create_auto_tags import OPERATION as CREATE_AUTO_TAGS
from paimon_ops.operations.model import InstantMs
from paimon_ops.options import format_duration
from paimon_ops.table.table import FileStoreTable, validate_tag_name
from paimon_ops.timeutil import naive_to_local_millis, to_instant_millis, to_local_millis
from paimon_ops.timeutil import now_ms as now_millis_or_clock

log = logging.getLogger(__name__)

MAX_PERIODS = 100_000

# Period decision statuses
CREATE, EXISTS, CONFLICT, IDLE, EXPIRED, EMPTY, TOO_LATE, NOT_DUE = (
    "create", "exists", "conflict", "idle", "expired", "empty", "too-late", "not-due")


class AutoTagPlan(Plan):
    """Creating the automatic tags that are due (or of given periods), or the batch tag."""

    operation = "auto_tag"
    op = CREATE_AUTO_TAGS  # its operation (the feature gate, the planner's parameters)

    @property
    def periods(self) -> list[dict[str, Any]]:
        return list(self.details.get("periods", []))


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
    return pdt(ms, zone).isoformat()


class _AutoTagRun:
    def __init__(self, table: FileStoreTable, sched: TagSchedule, now_ms: int):
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
def _coerce_period(table: FileStoreTable, sched: TagSchedule, value: Period | str | _dt.date | _dt.datetime | int) -> Period:
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


def _given_period(table: FileStoreTable, sched: TagSchedule, value: Any) -> Period:
    """A period the caller named: a refusal names the argument (`--period` on the command line)."""
    try:
        return _coerce_period(table, sched, value)
    except InvalidArgumentError as e:
        raise type(e)(f"{arg('periods')}: {e}") from None


def period_for_date(table: FileStoreTable, date: _dt.date | _dt.datetime | str | int) -> Period:
    """The period containing a date (its local midnight), a date-time (naive = tag zone) or an instant (ms)."""
    sched = require_periodic(table)
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


def expected_tag_periods(table: FileStoreTable, start: _dt.date | _dt.datetime | str | int,
                         end: _dt.date | _dt.datetime | str | int, now: int | _dt.datetime | None = None) -> list[Period]:
    """Calendar of due periods whose start lies in [start, end) — one per Dagster partition.

    Periods are listed whether or not they will get a tag (idle / empty ones included); `plan_auto_tags` says
    what actually happens. Dates and naive date-times are read in the tag zone.
    """
    sched = require_periodic(table)
    now_ms = now_millis_or_clock(None if now is None else to_instant_millis(now, sched.zone, "now"))
    lo = to_instant_millis(start, sched.zone, "start")
    hi = to_instant_millis(end, sched.zone, "end")
    ctx = _AutoTagRun(table, sched, now_ms)
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
@planner(AutoTagPlan, renamed={"now_millis": "now"})
def plan_auto_tags(table: FileStoreTable, *, periods: list[str] | None = None, now: InstantMs | None = None) -> Plan:
    """What `create_auto_tags` would do: one decision per period (see module docstring), each tag file to write
    with its content.

    `periods`: None = every due period since the last auto tag (or the first snapshot); else period names (dates,
    date-times, Period objects and epoch ms are read too: a backfill).
    """
    check_sync(table, "auto_tag")
    now_ms = now_millis_or_clock(now)
    sched = tag_schedule(table)
    b = PlanBuilder()
    if periods is not None:
        periods = list(periods)
        if not periods:
            raise InvalidArgumentError(f"{arg('periods')} names no period")
    if sched is None:
        if periods is not None:  # a period given is never ignored: there is nothing it could name
            raise InvalidArgumentError(f"{arg('periods')} {', '.join(map(str, periods))}: {table.identifier} has no "
                                       "automatic tagging (set tag.create-time='HH:mm' or tag.automatic-creation)")
        b.warn("automatic tagging is not configured: set tag.create-time='HH:mm' or tag.automatic-creation")
        return b.build(AutoTagPlan, table, {})
    if sched.mode == "batch":
        if periods is not None:
            raise InvalidArgumentError(f"{arg('periods')}: {table.identifier} uses tag.automatic-creation=batch, "
                                       "which has no periods")
        return plan_batch_tag(table, sched, now_ms, AutoTagPlan)
    ctx = _AutoTagRun(table, sched, now_ms)
    if periods is None:
        todo, warnings = ctx.due_periods()
        for w in warnings:
            b.warn(w)
    else:
        unique = {cp.local_start_millis: cp for cp in (_given_period(table, sched, p) for p in periods)}
        todo = [unique[k] for k in sorted(unique)]
    decisions = []
    contents: list[str] = []
    actions: list[FileAction] = []
    for p in todo:
        d = ctx.decide(p)
        ctx.planned(d)
        decisions.append(d)
        if d.status == CREATE:
            assert d.snapshot_id is not None
            validate_tag_name(p.name, allow_numeric=True)
            snap = ctx.timeline.get(d.snapshot_id)
            tag = Tag.from_snapshot(snap, sched.default_retained,
                                    local_now(table, now_ms) if sched.default_retained else None)
            actions.append(FileAction(table.tags.path(p.name), TAG, f"auto tag {p.name!r} -> {d.reason}"))
            contents.append(tag.to_json())
            b.require(TagIs(p.name, None))
        elif d.status in (CONFLICT, EXPIRED, TOO_LATE):
            b.warn(f"period {p.name}: {d.status}: {d.reason}")
    b.step("automatic tags", WRITE_FILES, contents=contents, mode="create").add_all(actions)
    details: dict[str, Any] = {**sched.describe(), "now": _iso(now_ms, sched.zone),
                               **_summarise(decisions, [d.period.name for d in decisions if d.status == CREATE]),
                               "periods": [d.to_dict() for d in decisions]}
    return b.build(AutoTagPlan, table, details)


def _summarise(decisions: Sequence[PeriodDecision], created: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"created": list(created)}
    for status in (EXISTS, CONFLICT, IDLE, EXPIRED, EMPTY, TOO_LATE, NOT_DUE):
        names = [d.period.name for d in decisions if d.status == status]
        if names:
            out[status.replace("-", "_")] = names
    return out


def create_tag_for_period(table: FileStoreTable, period: Period | str | _dt.date | _dt.datetime | int,
                          now_millis: int | None = None) -> Report:
    """Create (or confirm) the tag of one period — one Dagster partition. Idempotent.

    Raises PeriodNotDueError for a period that is not due yet, PeriodCannotBeTaggedError when its snapshot has
    expired or is past the max-delay guard. Idle / empty / existing / conflicting periods return a Report whose
    ``details['status']`` says so.
    """
    sched = require_periodic(table)
    p = _coerce_period(table, sched, period)
    plan = plan_auto_tags(table, periods=[p.name], now=now_millis)
    d = plan.details["periods"][0]
    status = d["status"]
    if status == NOT_DUE:
        raise PeriodNotDueError(f"the tag of period {p.name} of {table.identifier} is not due yet: {d['reason']}")
    if status in (EXPIRED, TOO_LATE):
        raise PeriodCannotBeTaggedError(f"period {p.name} of {table.identifier} cannot be tagged: {d['reason']}")
    report = plan.execute(table=table)
    details = {**report.details, "period": p.name, "status": status, "snapshot_id": d["snapshot_id"],
               "reason": d["reason"]}
    return dataclasses.replace(report, details=details)


def latest_expected_tag(table: FileStoreTable, now_millis: int | None = None) -> str | None:
    """Name of the newest due period that should carry a tag by now (idle / empty / expired periods skipped).

    For an asset check: the table is up to date iff this tag exists.
    """
    sched = require_periodic(table)
    ctx = _AutoTagRun(table, sched, now_millis_or_clock(now_millis))
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


MAX_WINDOW = 1000  # periods a retained-window check walks back at most


@dataclass(frozen=True)
class RetainedWindow:
    """The periods of the retained window that should carry a tag by now, newest first, and those without one."""
    expected: tuple[str, ...]
    missing: tuple[str, ...]  # each one a backfill would create (its snapshot is still known)
    oldest: str | None  # the oldest period looked at


def retained_window(table: FileStoreTable, now_millis: int | None = None) -> RetainedWindow:
    """From the latest due period back to the first the live snapshots can still tag, within the tag retention
    (`tag.num-retained-max` periods that should carry a tag, periods due within `tag.default-time-retained`): which
    should carry a tag (create / exists / conflict) and which do not (create). A deleted or expired tag whose
    snapshot is still known is missing; one whose snapshot expired cannot be made again and is not expected."""
    sched = require_periodic(table)
    ctx = _AutoTagRun(table, sched, now_millis_or_clock(now_millis))
    p, first = ctx.latest_due(), ctx.first_possible()
    expected: list[str] = []
    missing: list[str] = []
    oldest = None
    limit = sched.num_retained_max or MAX_WINDOW
    since = ctx.now_ms - int(sched.default_retained.total_seconds() * 1000) if sched.default_retained else None
    for _ in range(MAX_WINDOW):
        if p is None or first is None or p.local_start_millis < first.local_start_millis or len(expected) >= limit:
            break
        if since is not None and p.due_millis < since:
            break
        oldest = p.name
        d = ctx.decide(p)
        if d.status in (CREATE, EXISTS, CONFLICT):
            expected.append(p.name)
            if d.status == CREATE:
                missing.append(p.name)
        p = sched.prev(p)
    return RetainedWindow(tuple(expected), tuple(missing), oldest)


__all__ = [
    "RetainedWindow", "retained_window",
    "AutoTagPlan", "PeriodDecision", "period_for_date", "expected_tag_periods", "plan_auto_tags",
    "create_tag_for_period", "latest_expected_tag", "auto_tag_matcher", "tag_schedule", "TagSchedule",
    "PeriodNotDueError", "PeriodCannotBeTaggedError", "CREATE", "EXISTS", "CONFLICT", "IDLE", "EXPIRED", "EMPTY",
    "TOO_LATE", "NOT_DUE",
]
