"""The time of a partition from its values, exactly as Java Paimon's `PartitionTimeExtractor` computes it
(maintenance.md §8; `paimon-core/.../partition/PartitionTimeExtractor.java`).

    extractor = PartitionTimeExtractor(pattern="$dt $hour:00:00", formatter="yyyyMMdd HH:mm:ss")
    extractor.extract(["dt", "hour"], ["20240101", "10"])  -> LocalDateTime(2024, 1, 1, 10, 0)

* The timestamp string is `pattern` with every `$key` replaced by that key's value (longest key first, so `$dt`
  never matches inside `$dt1`, as Paimon does since apache/paimon#9136), or the first partition value when no pattern is set.
* With `formatter` (a Java `DateTimeFormatter.ofPattern` pattern, Locale.ROOT, SMART resolver) the string is
  parsed as a local date-time, else as a local date at midnight. Without one, Paimon's default lenient parser reads
  `y-M-d[ H:m:s[.fffffffff]]`, else `y-M-d` at midnight.
* A string neither parse accepts raises `PartitionTimeError` (Java: `DateTimeParseException`, logged and the
  partition never expires). An invalid formatter or pattern raises `PatternError` before any value is looked at.

The formatter is a port of the parts of `java.time.format.DateTimeFormatterBuilder` that numeric partition values
use: letters `u y M L d D H k K h m s S n` (numeric forms), quoted literals, `[optional]` sections, adjacent value
parsing (`yyyyMMdd`), two-digit years (`yy` = 2000–2099), strict number widths and signs, and the SMART / LENIENT
resolvers (day-of-month clamped to the month in SMART, `24:00` = next midnight, months and days rolled over in
LENIENT). Java's text fields (`MMM`, `EEE`, `a`, `G`), zones, offsets and week fields are refused with a
`PatternError` naming the letter — a partition is never expired on a guess.

Times are `LocalDateTime`: (epoch day, nano of day) with no range limit beyond Java's (years ±999,999,999), so
partition values like year 20240101 parse or fail exactly as in Java.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from paimon_ops.errors import PartitionTimeError, PatternError  # raised here; defined with every other error

__all__ = ["LocalDateTime", "PartitionTimeExtractor", "PartitionTimeError", "PatternError", "JavaDateTimeFormatter",
           "days_from_civil", "civil_from_days"]

NANOS_PER_DAY = 86_400_000_000_000
_YEAR_MIN, _YEAR_MAX = -999_999_999, 999_999_999




# ---------------------------------------------------------------------------------------------- calendar
def days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year)."""
    y -= m <= 2
    era = y // 400  # floor division: also right for negative years
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def civil_from_days(z: int) -> tuple[int, int, int]:
    z += 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = mp + (3 if mp < 10 else -9)
    return y + (m <= 2), m, d


def _is_leap(y: int) -> bool:
    return y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)


def _month_length(y: int, m: int) -> int:
    if m == 2:
        return 29 if _is_leap(y) else 28
    return 30 if m in (4, 6, 9, 11) else 31


def _check_year(y: int) -> int:
    if not _YEAR_MIN <= y <= _YEAR_MAX:
        raise PartitionTimeError(f"year {y} is out of range")
    return y


@dataclass(frozen=True, order=True)
class LocalDateTime:
    """Java's LocalDateTime: a date (epoch day) and a time (nano of day), no zone."""

    epoch_day: int
    nano_of_day: int = 0

    @staticmethod
    def of(y: int, m: int, d: int, hour: int = 0, minute: int = 0, second: int = 0, nano: int = 0) -> LocalDateTime:
        return LocalDateTime(days_from_civil(y, m, d), ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nano)

    @staticmethod
    def of_local_millis(ms: int) -> LocalDateTime:
        """From epoch millis that encode a wall-clock time "as if UTC" (Paimon's local-time convention)."""
        day, rest = divmod(ms, 86_400_000)
        return LocalDateTime(day, rest * 1_000_000)

    def to_local_millis(self) -> int:
        return self.epoch_day * 86_400_000 + self.nano_of_day // 1_000_000

    def plus_nanos(self, nanos: int) -> LocalDateTime:
        day, nod = divmod(self.nano_of_day + nanos, NANOS_PER_DAY)
        return LocalDateTime(self.epoch_day + day, nod)

    def __str__(self) -> str:
        """LocalDateTime.toString(): seconds omitted when zero, fractions in groups of 3 digits."""
        y, m, d = civil_from_days(self.epoch_day)
        ys = f"{y:04d}" if 0 <= y <= 9999 else (f"+{y}" if y > 9999 else f"-{-y:04d}")
        secs, nanos = divmod(self.nano_of_day, 1_000_000_000)
        out = f"{ys}-{m:02d}-{d:02d}T{secs // 3600:02d}:{secs // 60 % 60:02d}"
        if secs % 60 or nanos:
            out += f":{secs % 60:02d}"
            if nanos:
                out += (f".{nanos // 1_000_000:03d}" if nanos % 1_000_000 == 0 else
                        f".{nanos // 1000:06d}" if nanos % 1000 == 0 else f".{nanos:09d}")
        return out


# ---------------------------------------------------------------------------------------------- fields
YEAR_OF_ERA, YEAR, MONTH, DAY, DAY_OF_YEAR = "YearOfEra", "Year", "MonthOfYear", "DayOfMonth", "DayOfYear"
HOUR, CLOCK_HOUR, HOUR_AMPM, CLOCK_HOUR_AMPM = "HourOfDay", "ClockHourOfDay", "HourOfAmPm", "ClockHourOfAmPm"
MINUTE, SECOND, NANO = "MinuteOfHour", "SecondOfMinute", "NanoOfSecond"

_RANGES = {  # ChronoField.range(): the widest valid range (checkValidValue)
    YEAR_OF_ERA: (1, _YEAR_MAX + 1), YEAR: (_YEAR_MIN, _YEAR_MAX), MONTH: (1, 12), DAY: (1, 31),
    DAY_OF_YEAR: (1, 366), HOUR: (0, 23), CLOCK_HOUR: (1, 24), HOUR_AMPM: (0, 11), CLOCK_HOUR_AMPM: (1, 12),
    MINUTE: (0, 59), SECOND: (0, 59), NANO: (0, 999_999_999),
}
_TIME_FIELDS = {HOUR, CLOCK_HOUR, HOUR_AMPM, CLOCK_HOUR_AMPM, MINUTE, SECOND, NANO}


def _check(f: str, v: int) -> int:
    lo, hi = _RANGES[f]
    if not lo <= v <= hi:
        raise PartitionTimeError(f"invalid value for {f} (valid values {lo} - {hi}): {v}")
    return v


# ---------------------------------------------------------------------------------------------- printer-parsers
NORMAL, NOT_NEGATIVE, EXCEEDS_PAD = "NORMAL", "NOT_NEGATIVE", "EXCEEDS_PAD"


class _Fail(Exception):
    def __init__(self, pos: int):
        self.pos = pos


@dataclass
class _Number:
    field: str
    min_width: int
    max_width: int
    sign: str
    subsequent: int = 0  # -1: fixed width (adjacent parsing); > 0: widths reserved for the fixed fields after it
    reduced_base: int | None = None  # 'yy': two-digit year relative to 2000

    def fixed(self) -> bool:
        return self.subsequent == -1 or (self.subsequent > 0 and self.min_width == self.max_width
                                         and self.sign == NOT_NEGATIVE)

    def parse(self, text: str, pos: int, fields: dict) -> int:
        """NumberPrinterParser.parse in a strict context (DateTimeFormatter's default)."""
        n = len(text)
        if pos == n:
            raise _Fail(pos)
        start = pos
        negative = positive = False
        c = text[pos]
        if c == "+":
            if not self._sign_ok(True):
                raise _Fail(pos)
            positive, pos = True, pos + 1
        elif c == "-":
            if not self._sign_ok(False):
                raise _Fail(pos)
            negative, pos = True, pos + 1
        position = pos
        eff_min = self.min_width
        if position + eff_min > n:
            raise _Fail(position)
        eff_max = self.max_width + max(self.subsequent, 0)
        total = 0
        p = position
        for pass_ in range(2):
            end = min(p + eff_max, n)
            while p < end:
                ch = text[p]
                p += 1
                if not ("0" <= ch <= "9"):
                    p -= 1
                    if p < position + eff_min:
                        raise _Fail(position)
                    break
                total = total * 10 + (ord(ch) - 48)
            if self.subsequent > 0 and pass_ == 0:
                eff_max = max(eff_min, (p - position) - self.subsequent)
                p, total = position, 0
            else:
                break
        if negative:
            if total == 0:
                raise _Fail(start)  # minus zero
            total = -total
        elif self.sign == EXCEEDS_PAD:
            length = p - position
            if positive and length <= self.min_width:
                raise _Fail(start)
            if not positive and length > self.min_width:
                raise _Fail(position)
        if total.bit_length() > 63:  # Java keeps one digit less on long overflow
            total //= 10
            p -= 1
        if self.reduced_base is not None and p - position == self.min_width and total >= 0:
            rng = 10 ** self.min_width
            base = self.reduced_base - self.reduced_base % rng
            total = base + total
            if total < self.reduced_base:
                total += rng
        _set(fields, self.field, total, position)
        return p

    def _sign_ok(self, positive: bool) -> bool:
        """SignStyle.parse(positive, strict=True, fixedWidth)."""
        if self.sign == NORMAL:
            return not positive
        if self.sign == EXCEEDS_PAD:
            return True
        return False  # NOT_NEGATIVE in strict mode


@dataclass
class _Fraction:
    """Nano-of-second as a fraction (appendFraction)."""

    min_width: int
    max_width: int
    decimal_point: bool

    def parse(self, text: str, pos: int, fields: dict) -> int:
        n = len(text)
        if pos == n:
            if self.min_width > 0:
                raise _Fail(pos)
            return pos
        if self.decimal_point:
            if text[pos] != ".":
                if self.min_width > 0:
                    raise _Fail(pos)
                return pos
            pos += 1
        if pos + self.min_width > n:
            raise _Fail(pos)
        end = min(pos + self.max_width, n)
        p, total = pos, 0
        while p < end:
            ch = text[p]
            p += 1
            if not ("0" <= ch <= "9"):
                if p <= pos + self.min_width:
                    raise _Fail(pos)
                p -= 1
                break
            total = total * 10 + (ord(ch) - 48)
        digits = p - pos
        _set(fields, NANO, total * 10 ** (9 - digits) if digits else 0, pos)
        return p


@dataclass
class _Literal:
    text: str

    def parse(self, text: str, pos: int, fields: dict) -> int:
        if not text.startswith(self.text, pos):
            raise _Fail(pos)
        return pos + len(self.text)


@dataclass
class _Composite:
    parts: list = field(default_factory=list)
    optional: bool = False
    value_index: int = -1  # the active value parser (adjacent value parsing), -1 when none

    def parse(self, text: str, pos: int, fields: dict) -> int:
        if not self.optional:
            for part in self.parts:
                pos = part.parse(text, pos, fields)
            return pos
        trial = dict(fields)
        p = pos
        try:
            for part in self.parts:
                p = part.parse(text, p, trial)
        except _Fail:
            return pos  # an optional section that does not match is skipped
        fields.clear()
        fields.update(trial)
        return p


def _set(fields: dict, f: str, v: int, pos: int) -> None:
    old = fields.get(f)
    if old is not None and old != v:
        raise _Fail(pos)  # the same field parsed twice with different values
    fields[f] = v


class _Builder:
    """DateTimeFormatterBuilder: appendValue with adjacent value parsing, literals, optional sections."""

    def __init__(self) -> None:
        self.active = _Composite()
        self.stack: list[_Composite] = []

    def _internal(self, pp) -> int:
        self.active.parts.append(pp)
        self.active.value_index = -1
        return len(self.active.parts) - 1

    def value(self, pp) -> None:
        a = self.active
        if a.value_index >= 0:
            base = a.parts[a.value_index]
            idx = a.value_index
            if pp.min_width == pp.max_width and getattr(pp, "sign", NOT_NEGATIVE) == NOT_NEGATIVE:
                if isinstance(base, _Number):
                    base.subsequent = (0 if base.subsequent == -1 else base.subsequent) + pp.max_width
                if isinstance(pp, _Number):
                    pp.subsequent = -1
                self._internal(pp)
                a.value_index = idx
            else:
                if isinstance(base, _Number):
                    base.subsequent = -1
                a.value_index = self._internal(pp)
        else:
            a.value_index = self._internal(pp)

    def number(self, f: str, min_w: int = 1, max_w: int = 19, sign: str = NORMAL) -> None:
        if not 1 <= min_w <= 19 or max_w < min_w:
            raise PatternError(f"The minimum width must be from 1 to 19 inclusive but was {min_w}")
        if min_w == max_w and sign == NOT_NEGATIVE:
            self.value(_Number(f, max_w, max_w, NOT_NEGATIVE))
        else:
            self.value(_Number(f, min_w, max_w, sign))

    def literal(self, s: str) -> None:
        if s:
            self._internal(_Literal(s))

    def fraction(self, min_w: int, max_w: int, decimal_point: bool) -> None:
        pp = _Fraction(min_w, max_w, decimal_point)
        if min_w == max_w and not decimal_point:
            self.value(pp)
        else:
            self._internal(pp)

    def optional_start(self) -> None:
        self.active.value_index = -1
        self.stack.append(self.active)
        self.active = _Composite(optional=True)

    def optional_end(self) -> None:
        if not self.stack:
            raise PatternError("Pattern invalid as it contains ] without previous [")
        done, self.active = self.active, self.stack.pop()
        if done.parts:
            self._internal(done)

    def build(self) -> _Composite:
        while self.stack:
            self.optional_end()
        return self.active


_KNOWN_UNSUPPORTED = {
    "G": "era text", "Q": "quarter", "q": "quarter", "E": "day-of-week text", "e": "localized day-of-week",
    "c": "localized day-of-week", "a": "am-pm text", "F": "aligned week of month", "A": "milli-of-day",
    "N": "nano-of-day", "g": "modified Julian day", "z": "zone name", "V": "zone id", "v": "generic zone name",
    "Z": "zone offset", "O": "localized zone offset", "X": "zone offset", "x": "zone offset",
    "W": "week of month", "w": "week of year", "Y": "week-based year", "B": "day period", "p": "pad",
}
_FIELDS = {"y": YEAR_OF_ERA, "u": YEAR, "M": MONTH, "L": MONTH, "d": DAY, "D": DAY_OF_YEAR, "H": HOUR,
           "k": CLOCK_HOUR, "K": HOUR_AMPM, "h": CLOCK_HOUR_AMPM, "m": MINUTE, "s": SECOND, "S": NANO, "n": NANO}


def _compile(pattern: str) -> _Composite:
    """DateTimeFormatterBuilder.appendPattern for the supported letters; PatternError otherwise."""
    b = _Builder()
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if "A" <= c <= "Z" or "a" <= c <= "z":
            j = i
            while j < n and pattern[j] == c:
                j += 1
            count = j - i
            i = j
            if c in _FIELDS:
                _field(b, c, count)
            elif c in _KNOWN_UNSUPPORTED:
                raise PatternError(f"pattern letter {c!r} ({_KNOWN_UNSUPPORTED[c]}) is not supported by paimon-ops; "
                                   "partition times are read from numeric fields (y u M d D H k K h m s S n)")
            else:
                raise PatternError(f"Unknown pattern letter: {c}")
            continue
        if c == "'":
            j = i + 1
            while j < n:
                if pattern[j] == "'":
                    if j + 1 < n and pattern[j + 1] == "'":
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                raise PatternError(f"Pattern ends with an incomplete string literal: {pattern}")
            lit = pattern[i + 1:j]
            b.literal("'" if lit == "" else lit.replace("''", "'"))
            i = j + 1
            continue
        if c == "[":
            b.optional_start()
        elif c == "]":
            b.optional_end()
        elif c in "{}#":
            raise PatternError(f"Pattern includes reserved character: '{c}'")
        else:
            b.literal(c)
        i += 1
    return b.build()


def _field(b: _Builder, c: str, count: int) -> None:
    f = _FIELDS[c]
    if c in "yu":
        if count == 2:
            b.value(_Number(f, 2, 2, NOT_NEGATIVE, reduced_base=2000))
        elif count < 4:
            b.number(f, count, 19, NORMAL)
        else:
            b.number(f, count, 19, EXCEEDS_PAD)
    elif c in "ML":
        if count == 1:
            b.number(f)
        elif count == 2:
            b.number(f, 2, 2, NOT_NEGATIVE)
        elif count <= 5:
            raise PatternError(f"pattern letter {c!r} x{count} (month text) is not supported by paimon-ops; use "
                               f"{c}{c} for a numeric month")
        else:
            raise PatternError(f"Too many pattern letters: {c}")
    elif c == "S":
        if count > 9:
            raise PatternError("Maximum width must be from 1 to 9 inclusive but was " + str(count))
        b.fraction(count, count, False)
    elif c == "n":
        b.number(f, count, 19, NOT_NEGATIVE)
    elif c == "D":
        if count == 1:
            b.number(f)
        elif count in (2, 3):
            b.number(f, count, 3, NOT_NEGATIVE)
        else:
            raise PatternError(f"Too many pattern letters: {c}")
    else:  # d h H k K m s
        if count == 1:
            b.number(f)
        elif count == 2:
            b.number(f, 2, 2, NOT_NEGATIVE)
        else:
            raise PatternError(f"Too many pattern letters: {c}")


# ---------------------------------------------------------------------------------------------- resolving
SMART, LENIENT = "SMART", "LENIENT"


def _resolve(fields: dict, style: str) -> tuple[int | None, int | None]:
    """Parsed.resolve for the supported fields: (epoch day or None, nano of day or None); excess days of a
    `24:00` (SMART) or an overflowing LENIENT time roll into the date."""
    f = dict(fields)
    lenient = style == LENIENT
    # ---- date (IsoChronology.resolveDate)
    date: int | None = None
    yoe = f.pop(YEAR_OF_ERA, None)
    if yoe is not None:
        if not lenient:
            _check(YEAR_OF_ERA, yoe)
        year = f.get(YEAR)
        v = yoe if year is None or year > 0 else 1 - yoe
        if year is not None and year != v:
            raise PartitionTimeError(f"conflict: year {year} differs from year {v}")
        f[YEAR] = v
    if YEAR in f:
        if MONTH in f and DAY in f:
            y = _check_year(_check(YEAR, f.pop(YEAR)))
            mo, d = f.pop(MONTH), f.pop(DAY)
            if lenient:
                y2, m0 = divmod((mo - 1), 12)
                yy = _check_year(y + y2)
                date = days_from_civil(yy, m0 + 1, 1) + (d - 1)
            else:
                _check(MONTH, mo)
                _check(DAY, d)
                d = min(d, _month_length(y, mo))  # SMART: previous valid day of the month
                date = days_from_civil(y, mo, d)
        elif DAY_OF_YEAR in f:
            y = _check_year(_check(YEAR, f.pop(YEAR)))
            doy = f.pop(DAY_OF_YEAR)
            if lenient:
                date = days_from_civil(y, 1, 1) + doy - 1
            else:
                _check(DAY_OF_YEAR, doy)
                if doy == 366 and not _is_leap(y):
                    raise PartitionTimeError(f"invalid date 'DayOfYear 366' as '{y}' is not a leap year")
                date = days_from_civil(y, 1, 1) + doy - 1
    # ---- time (Parsed.resolveTimeFields / resolveTimeLenient)
    if CLOCK_HOUR in f:
        ch = f.pop(CLOCK_HOUR)
        if ch != 0 and not lenient:
            _check(CLOCK_HOUR, ch)
        _update(f, HOUR, 0 if ch == 24 else ch)
    if CLOCK_HOUR_AMPM in f:
        ch = f.pop(CLOCK_HOUR_AMPM)
        if ch != 0 and not lenient:
            _check(CLOCK_HOUR_AMPM, ch)
        _update(f, HOUR_AMPM, 0 if ch == 12 else ch)
    if NANO in f and not lenient:
        _check(NANO, f[NANO])
    nod: int | None = None
    excess = 0
    hod = f.get(HOUR)
    if hod is not None:
        moh, som, nos = f.get(MINUTE), f.get(SECOND), f.get(NANO)
        if not ((moh is None and (som is not None or nos is not None)) or
                (moh is not None and som is None and nos is not None)):
            moh, som, nos = moh or 0, som or 0, nos or 0
            if lenient:
                total = ((hod * 60 + moh) * 60 + som) * 1_000_000_000 + nos
                excess, nod = divmod(total, NANOS_PER_DAY)
            else:
                _check(MINUTE, moh)
                _check(NANO, nos)
                if hod == 24 and moh == 0 and som == 0 and nos == 0:
                    nod, excess = 0, 1
                else:
                    _check(HOUR, hod)
                    _check(SECOND, som)
                    nod = ((hod * 60 + moh) * 60 + som) * 1_000_000_000 + nos
            for k in (HOUR, MINUTE, SECOND, NANO):
                f.pop(k, None)
    if not lenient:
        for k, v in f.items():
            if k in _TIME_FIELDS:
                _check(k, v)
    _cross_check(f, date, nod)
    if date is not None and nod is not None and excess:
        date += excess
    if date is not None:
        _check_year(civil_from_days(date)[0])
    return date, nod


def _cross_check(f: dict, date: int | None, nod: int | None) -> None:
    """Parsed.crossCheck: fields left over after resolving must agree with the date and time they resolved to."""
    have: dict[str, int] = {}
    if date is not None:
        y, m, d = civil_from_days(date)
        have.update({YEAR: y, MONTH: m, DAY: d, DAY_OF_YEAR: date - days_from_civil(y, 1, 1) + 1})
    if nod is not None:
        secs, nanos = divmod(nod, 1_000_000_000)
        h = secs // 3600
        have.update({HOUR: h, CLOCK_HOUR: h or 24, HOUR_AMPM: h % 12, CLOCK_HOUR_AMPM: (h % 12) or 12,
                     MINUTE: secs // 60 % 60, SECOND: secs % 60, NANO: nanos})
    for k, v in f.items():
        if k in have and have[k] != v:
            raise PartitionTimeError(f"conflict: field {k} {have[k]} differs from {k} {v}")


def _update(f: dict, k: str, v: int) -> None:
    old = f.get(k)
    if old is not None and old != v:
        raise PartitionTimeError(f"conflict: {k} {old} differs from {k} {v}")
    f[k] = v


class JavaDateTimeFormatter:
    """A compiled formatter: `DateTimeFormatter.ofPattern(pattern, Locale.ROOT)` (SMART), or one of Paimon's two
    default parsers (LENIENT)."""

    def __init__(self, root: _Composite, style: str, source: str):
        self.root = root
        self.style = style
        self.source = source

    @staticmethod
    def of_pattern(pattern: str) -> JavaDateTimeFormatter:
        return JavaDateTimeFormatter(_compile(pattern), SMART, pattern)

    def _parse(self, text: str) -> tuple[int | None, int | None]:
        fields: dict = {}
        try:
            end = self.root.parse(text, 0, fields)
        except _Fail as e:
            raise PartitionTimeError(f"Text '{text}' could not be parsed at index {e.pos}") from None
        if end < len(text):
            raise PartitionTimeError(f"Text '{text}' could not be parsed, unparsed text found at index {end}")
        try:
            return _resolve(fields, self.style)
        except (PartitionTimeError, OverflowError, ValueError) as e:
            raise PartitionTimeError(f"Text '{text}' could not be parsed: {e}") from None

    def parse_local_datetime(self, text: str) -> LocalDateTime:
        date, nod = self._parse(text)
        if date is None or nod is None:
            raise PartitionTimeError(f"Text '{text}' could not be parsed: no date-time in it")
        return LocalDateTime(date, nod)

    def parse_local_date(self, text: str) -> LocalDateTime:
        date, _ = self._parse(text)
        if date is None:
            raise PartitionTimeError(f"Text '{text}' could not be parsed: no date in it")
        return LocalDateTime(date, 0)


def _default_formatters() -> tuple[JavaDateTimeFormatter, JavaDateTimeFormatter]:
    """PartitionTimeExtractor.TIMESTAMP_FORMATTER and DATE_FORMATTER (LENIENT)."""
    def date_part(b: _Builder) -> None:
        b.number(YEAR, 1, 10, NORMAL)
        b.literal("-")
        b.number(MONTH, 1, 2, NORMAL)
        b.literal("-")
        b.number(DAY, 1, 2, NORMAL)

    ts = _Builder()
    date_part(ts)
    ts.optional_start()
    ts.literal(" ")
    ts.number(HOUR, 1, 2, NORMAL)
    ts.literal(":")
    ts.number(MINUTE, 1, 2, NORMAL)
    ts.literal(":")
    ts.number(SECOND, 1, 2, NORMAL)
    ts.optional_start()
    ts.fraction(1, 9, True)
    ts.optional_end()
    ts.optional_end()
    d = _Builder()
    date_part(d)
    return (JavaDateTimeFormatter(ts.build(), LENIENT, "yyyy-MM-dd[ HH:mm:ss[.S]]"),
            JavaDateTimeFormatter(d.build(), LENIENT, "yyyy-MM-dd"))


_DEFAULT_TS, _DEFAULT_DATE = _default_formatters()


# ---------------------------------------------------------------------------------------------- extractor
class PartitionTimeExtractor:
    """Paimon's PartitionTimeExtractor for given `partition.timestamp-pattern` / `-formatter` (None = unset)."""

    def __init__(self, pattern: str | None, formatter: str | None):
        self.pattern = pattern
        self.formatter = formatter
        self._fmt = JavaDateTimeFormatter.of_pattern(formatter) if formatter is not None else None

    def check_pattern(self, keys: Sequence[str]) -> None:
        """The pattern must name partition keys only (`$key`), and at least one; else PatternError."""
        if self.pattern is None:
            return
        used, unknown = self._scan(self.pattern, keys)
        if unknown:
            raise PatternError(f"${unknown[0]} is not a partition key (partition keys: {', '.join(keys)})")
        if not used:
            raise PatternError(f"it names no partition key; write e.g. '${keys[0]}' (partition keys: "
                               f"{', '.join(keys)})")

    @staticmethod
    def _scan(pattern: str, keys: Sequence[str]) -> tuple[list[str], list[str]]:
        order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
        used: list[str] = []
        unknown: list[str] = []
        i = 0
        while i < len(pattern):
            if pattern[i] == "$" and i + 1 < len(pattern):
                hit = next((keys[k] for k in order if keys[k] and pattern.startswith(keys[k], i + 1)), None)
                if hit is not None:
                    used.append(hit)
                    i += 1 + len(hit)
                    continue
                j = i + 1
                while j < len(pattern) and (pattern[j].isalnum() or pattern[j] == "_"):
                    j += 1
                if j > i + 1:
                    unknown.append(pattern[i + 1:j])
            i += 1
        return used, unknown

    def timestamp_string(self, keys: Sequence[str], values: Sequence[str]) -> str:
        """The string handed to the formatter (pattern with `$key` replaced, longest key first)."""
        if self.pattern is None:
            return values[0]
        order = sorted(range(len(keys)), key=lambda i: -len(keys[i]))
        out: list[str] = []
        p = self.pattern
        i = 0
        while i < len(p):
            if p[i] == "$" and i + 1 < len(p):
                hit = next((k for k in order if keys[k] and p.startswith(keys[k], i + 1)), None)
                if hit is not None:
                    out.append(values[hit])
                    i += 1 + len(keys[hit])
                    continue
            out.append(p[i])
            i += 1
        return "".join(out)

    def parse(self, text: str) -> LocalDateTime:
        """PartitionTimeExtractor.toLocalDateTime: date-time, else date at midnight; PartitionTimeError if neither."""
        if self._fmt is None:
            try:
                return _DEFAULT_TS.parse_local_datetime(text)
            except PartitionTimeError:
                return _DEFAULT_DATE.parse_local_date(text)
        try:
            return self._fmt.parse_local_datetime(text)
        except PartitionTimeError:
            return self._fmt.parse_local_date(text)

    def extract(self, keys: Sequence[str], values: Sequence[str]) -> LocalDateTime:
        return self.parse(self.timestamp_string(keys, values))
