"""Time in paimon-ops: one vocabulary and the zone arithmetic Paimon's local date-times need.

Vocabulary (public API and CLI alike):
* an **instant** is a timezone-aware `datetime` or epoch milliseconds (`int`); a naive `datetime` is refused,
  because which zone it means is exactly the ambiguity that loses data in retention arithmetic;
* an **age** is a `timedelta` (CLI: a Paimon duration such as `'3 d'`), always measured back from "now";
* "now" is an instant argument everywhere (`now=`), so tests and reviews control time.

On disk Paimon stores epoch milliseconds, except ``tagCreateTime`` (a zone-less local date-time); the helpers
below convert between instants and wall-clock times of a zone with Java's LocalDateTime semantics (a time in a DST
gap maps to the transition, a time in an overlap to its first occurrence).
"""
from __future__ import annotations

import datetime as _dt
import re
import time
from typing import Union

import pendulum

from paimon_ops.errors import InvalidArgumentError, InvalidOptionError, arg

UTC = pendulum.timezone("UTC")
_EPOCH = _dt.datetime(1970, 1, 1)
_OFFSET_ZONE = re.compile(r"^(?:UTC|GMT|Z)?\s*([+-])(\d{1,2})(?::?(\d{2}))?$", re.IGNORECASE)

Instant = Union[_dt.datetime, int]
Age = _dt.timedelta


def now_ms(now: Instant | None = None) -> int:
    """`now` as epoch millis; the clock when None."""
    return int(time.time() * 1000) if now is None else instant_ms(now, "now")


def instant_ms(value: object, name: str) -> int:
    """Epoch millis of an instant argument (aware datetime or epoch ms); anything else is refused, naming the
    argument in the caller's words."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{arg(name)} must be an instant (an aware datetime or epoch ms), not {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidArgumentError(f"{arg(name)} is a naive datetime ({value.isoformat()}); give it a time zone "
                                       "(e.g. datetime(..., tzinfo=timezone.utc)) or epoch milliseconds")
        return int(round(value.timestamp() * 1000))
    raise InvalidArgumentError(f"{arg(name)} must be an instant (an aware datetime or epoch ms), not "
                               f"{type(value).__name__} {value!r}")


def age_ms(value: object, name: str) -> int:
    """Milliseconds of an age argument (a non-negative timedelta)."""
    if not isinstance(value, _dt.timedelta):
        raise InvalidArgumentError(f"{arg(name)} must be an age (a timedelta), not {type(value).__name__} {value!r}")
    ms = int(value.total_seconds() * 1000)
    if ms < 0:
        raise InvalidArgumentError(f"{arg(name)} must not be negative, got {value}")
    return ms


def parse_instant(text: str, flag: str) -> int:
    """A command-line instant: epoch milliseconds or ISO 8601 *with* an offset (`2026-11-20T00:00:00Z`)."""
    s = str(text).strip()
    if re.fullmatch(r"-?\d+", s):
        return int(s)
    try:
        dt = _dt.datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidArgumentError(f"{flag} {text!r}: expected an instant, epoch milliseconds or ISO 8601 with a "
                                   "zone such as 2026-11-20T00:00:00Z") from None
    if dt.tzinfo is None:
        raise InvalidArgumentError(f"{flag} {text!r} has no zone: write it with one (2026-11-20T00:00:00Z, "
                                   "2026-11-20T01:00:00+01:00) so it names one instant")
    return int(round(dt.timestamp() * 1000))


def iso(ms: int | None, zone: _dt.tzinfo | None = None) -> str | None:
    """ISO 8601 with its offset (UTC unless `zone`), as every plan and report writes times."""
    if ms is None:
        return None
    try:
        dt = _dt.datetime.fromtimestamp(ms / 1000, tz=_dt.timezone.utc)
    except (OverflowError, ValueError, OSError):  # beyond year 9999 (e.g. "never"): the number itself
        return str(ms)
    if zone is not None:
        dt = dt.astimezone(zone)
    return dt.isoformat(timespec="milliseconds").replace("+00:00", "Z")


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


def zone_name(zone: _dt.tzinfo) -> str:
    return getattr(zone, "name", None) or getattr(zone, "key", None) or str(zone)


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


def to_instant_millis(value: int | float | _dt.datetime | _dt.date | str, zone: _dt.tzinfo, what: str) -> int:
    """Epoch millis of a *period-like* time argument (auto-tag periods, dates): naive date-times / dates / ISO text
    without offset are read in `zone` — the table's tag zone, where periods live."""
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
        if isinstance(parsed, (_dt.datetime, _dt.date)):
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


__all__ = ["Instant", "Age", "UTC", "now_ms", "instant_ms", "age_ms", "parse_instant", "iso", "parse_zone",
           "zone_name", "to_local_millis", "local_millis_to_naive", "naive_to_local_millis", "local_to_instant_millis",
           "to_instant_millis"]
