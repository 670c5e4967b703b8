"""Tag periods: Java's ``TagPeriodHandler`` (period length, name format, lenient name parsing) and one period's
boundaries in a zone."""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field

import pendulum

from paimon_ops.options import TAG_PERIOD_FORMATTER, format_duration
from paimon_ops.timeutil import local_millis_to_naive

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
DAY_MS = 86_400_000


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
FORMATTERS = TAG_PERIOD_FORMATTER.choices


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
        return epoch_ms(self.start)

    @property
    def end_millis(self) -> int:
        return epoch_ms(self.end)

    @property
    def due_millis(self) -> int:
        return epoch_ms(self.due)


def epoch_ms(dt: _dt.datetime) -> int:
    delta = dt - _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def pdt(instant_ms: int, zone: _dt.tzinfo) -> pendulum.DateTime:
    utc = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc) + _dt.timedelta(milliseconds=instant_ms)
    return pendulum.instance(utc.astimezone(zone))



__all__ = ["PeriodHandler", "Period", "FORMATTERS", "MINUTE_MS", "HOUR_MS", "DAY_MS", "pdt", "epoch_ms"]
