"""A table's automatic-tag configuration, resolved and validated once (see autotag.py for the semantics):
Paimon's own options (``tag.automatic-creation``, ``tag.creation-period``, ``tag.creation-delay``,
``tag.period-formatter``, ``tag.num-retained-max``, ``tag.default-time-retained``, ``tag.automatic-completion``,
``sink.process-time-zone``, ``sink.watermark-time-zone``) or ours (``tag.create-time``, ``tag.create-time-zone``,
``tag.create-interval``, ``tag.create-max-delay``)."""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Callable

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.lifecycle.periods import DAY_MS, HOUR_MS, MINUTE_MS, Period, PeriodHandler, pdt
from paimon_ops.options import (
    SINK_PROCESS_TIME_ZONE,
    SINK_WATERMARK_TIME_ZONE,
    TAG_AUTOMATIC_COMPLETION,
    TAG_AUTOMATIC_CREATION,
    TAG_BATCH_CUSTOMIZED_NAME,
    TAG_CREATE_INTERVAL,
    TAG_CREATE_MAX_DELAY,
    TAG_CREATE_TIME,
    TAG_CREATE_TIME_ZONE,
    TAG_CREATION_DELAY,
    TAG_CREATION_PERIOD,
    TAG_CREATION_PERIOD_DURATION,
    TAG_DEFAULT_TIME_RETAINED,
    TAG_NUM_RETAINED_MAX,
    TAG_PERIOD_FORMATTER,
    Options,
)
from paimon_ops.table.table import FileStoreTable, validate_tag_name
from paimon_ops.timeutil import local_to_instant_millis, parse_zone, to_local_millis


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
        return Period(name, pdt(start, self.zone), pdt(end, self.zone), pdt(due, self.zone), local_start)

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
                "delay_s": self.delay_ms / 1000, "max_delay_s": self.max_delay_ms / 1000,
                "automatic_completion": self.completion}


_HHMM = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")


def _zone(opts: Options, mode: str) -> tuple[_dt.tzinfo, str]:
    sink_opt = SINK_WATERMARK_TIME_ZONE if mode == "watermark" else SINK_PROCESS_TIME_ZONE
    own, sink = opts.text(TAG_CREATE_TIME_ZONE), opts.text(sink_opt)
    if own is not None and sink is not None and own.strip() != sink.strip():
        raise opts.fail(TAG_CREATE_TIME_ZONE, f"the same zone as {sink_opt.key} ({sink!r}), or unset one of them: "
                                              "both name the zone tag periods are computed in")
    key = TAG_CREATE_TIME_ZONE.key if own is not None else sink_opt.key
    text = own if own is not None else (sink if sink is not None else "UTC")
    return parse_zone(text, key, opts.where), text.strip()


def _handler_from_paimon_options(opts: Options) -> PeriodHandler:
    formatter = opts.get(TAG_PERIOD_FORMATTER)
    custom = opts.get(TAG_CREATION_PERIOD_DURATION)
    if custom is not None:
        ms = int(custom.total_seconds() * 1000)
        if ms <= 0 or ms % MINUTE_MS:
            raise opts.fail(TAG_CREATION_PERIOD_DURATION,
                            "a positive whole number of minutes (tag names have minute resolution)")
        return PeriodHandler("duration", ms, formatter)
    period = opts.get(TAG_CREATION_PERIOD)
    length = {"daily": DAY_MS, "hourly": HOUR_MS, "two-hours": 2 * HOUR_MS}[period]
    return PeriodHandler(period, length, formatter)


def tag_schedule(table: FileStoreTable) -> TagSchedule | None:
    """The table's automatic-tag configuration, validated; None when automatic tagging is off.

    Raises InvalidOptionError naming the option and the table for any malformed or conflicting option.
    """
    opts = table.options
    where = opts.where
    auto = opts.get(TAG_AUTOMATIC_CREATION)
    create_time = opts.get(TAG_CREATE_TIME)
    if create_time is None and opts.is_set(TAG_CREATE_INTERVAL):
        raise opts.fail(TAG_CREATE_INTERVAL, "to be used together with tag.create-time (HH:mm); for Paimon periods "
                                             "use tag.creation-period(-duration)")
    num_max = opts.get(TAG_NUM_RETAINED_MAX)
    retained = opts.get(TAG_DEFAULT_TIME_RETAINED)
    completion = opts.get(TAG_AUTOMATIC_COMPLETION)
    java_auto = auto in ("process-time", "watermark")

    if create_time is not None:
        if auto == "batch":
            raise opts.fail(TAG_CREATE_TIME, "unset when tag.automatic-creation=batch (batch tags are made per "
                                             "write, not per period)")
        m = _HHMM.fullmatch(create_time.strip())
        if not m:
            raise opts.fail(TAG_CREATE_TIME, "a 24-hour wall-clock time HH:mm such as '02:30'")
        for conflicting in (TAG_CREATION_DELAY, TAG_CREATION_PERIOD_DURATION):
            if opts.is_set(conflicting):
                raise opts.fail(conflicting, "unset when tag.create-time is set (tag.create-time is the delay after "
                                             "the period boundary and tag.create-interval the period; give one of "
                                             "the two ways)")
        if opts.is_set(TAG_CREATION_PERIOD) and opts.get(TAG_CREATION_PERIOD) != "daily":
            raise opts.fail(TAG_CREATION_PERIOD, "'daily' (or unset) when tag.create-time is set; use "
                                                 "tag.create-interval for multi-day periods")
        days = opts.get(TAG_CREATE_INTERVAL) // _dt.timedelta(days=1)
        formatter = opts.get(TAG_PERIOD_FORMATTER)
        # N-day periods are aligned like Java's custom durations (to 1970-01-01 local) but named by their first day
        # like daily tags: readable, not all digits, and Java's daily parser still recognises them
        handler = (PeriodHandler("daily", DAY_MS, formatter) if days == 1
                   else PeriodHandler("days", days * DAY_MS, formatter))
        delay_ms = int(m.group(1)) * HOUR_MS + int(m.group(2)) * MINUTE_MS
        mode = auto if java_auto else "process-time"
        source = TAG_CREATE_TIME.key
    elif java_auto:
        handler = _handler_from_paimon_options(opts)
        delay_ms = int(opts.get(TAG_CREATION_DELAY).total_seconds() * 1000)
        if delay_ms < 0 or delay_ms >= handler.length_ms:
            raise opts.fail(TAG_CREATION_DELAY, f"a duration >= 0 and shorter than one period ({handler.describe()})")
        mode = auto
        source = TAG_AUTOMATIC_CREATION.key
    elif auto == "batch":
        zone_text = opts.get(SINK_PROCESS_TIME_ZONE) or "UTC"
        zone = parse_zone(zone_text, SINK_PROCESS_TIME_ZONE.key, where)
        name = opts.get(TAG_BATCH_CUSTOMIZED_NAME)
        if name is not None:
            try:
                validate_tag_name(name)
            except InvalidArgumentError as e:
                raise opts.fail(TAG_BATCH_CUSTOMIZED_NAME, f"a valid tag name ({e})") from None
        return TagSchedule(table.identifier, "batch", TAG_AUTOMATIC_CREATION.key, None, zone, zone_text, 0, 0,
                           completion, False, retained, num_max, name)
    else:
        return None

    zone, zone_name = _zone(opts, mode)
    max_delay = opts.get(TAG_CREATE_MAX_DELAY)
    max_delay_ms = int(max_delay.total_seconds() * 1000) if max_delay is not None else handler.length_ms
    return TagSchedule(table.identifier, mode, source, handler, zone, zone_name, delay_ms, max_delay_ms, completion,
                       java_auto, retained, num_max)


def require_periodic(table: FileStoreTable) -> TagSchedule:
    sched = tag_schedule(table)
    if sched is None:
        raise InvalidArgumentError(f"{table.identifier} has no automatic tag periods: set tag.create-time='HH:mm' "
                                   "or tag.automatic-creation=process-time|watermark")
    if sched.mode == "batch":
        raise InvalidArgumentError(f"{table.identifier} uses tag.automatic-creation=batch, which has no periods")
    return sched


def auto_tag_matcher(table: FileStoreTable) -> Callable[[str], bool]:
    """Predicate 'this tag name is an auto tag' for the table's current period formatter (False if none)."""
    sched = tag_schedule(table)
    if sched is None or sched.handler is None:
        return lambda name: False
    return sched.handler.is_auto_tag



__all__ = ["TagSchedule", "tag_schedule", "require_periodic", "auto_tag_matcher"]
