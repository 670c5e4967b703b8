"""Partition directory names, exactly as Java Paimon computes them (format.md §1.3).

Java never stores partition paths: it recomputes them from the partition BinaryRow with
`InternalRowPartitionComputer` + `PartitionPathUtils`. A writer that renders a value differently (Python
`repr` of a float, `isoformat()` of a datetime) puts files where Java cannot find them, so every rendering
below follows Java's `toString()` (legacy names, `partition.legacy-name=true`, the default) or Paimon's
cast-to-STRING (non-legacy) to the character.

Values use the conventions of `binary_row` (date, time, datetime, Decimal, ...; ints are accepted for
DATE (days) and TIME (millis) too).
"""
from __future__ import annotations

import math
import re
import struct
import unicodedata
from collections.abc import Mapping
from datetime import date, datetime, time, timezone
from decimal import Decimal
from fractions import Fraction
from typing import Any, Sequence

from paimon_ops.errors import FormatError, InvalidArgumentError, UnsupportedError
from paimon_ops.format.binary_row import (
    date_to_days,
    decimal_to_unscaled,
    time_to_millis,
    timestamp_to_millis_nanos,
)
from paimon_ops.format.types import DataType

__all__ = [
    "DEFAULT_PARTITION_NAME", "partition_path", "partition_dir", "partition_spec", "partition_value_string",
    "escape_path_name", "unescape_path_name", "parse_partition_spec", "parse_partition_value",
    "parse_partition_dir", "java_double_to_string", "java_float_to_string", "partition_json",
]

DEFAULT_PARTITION_NAME = "__DEFAULT_PARTITION__"

_EPOCH_ORDINAL = 719163  # date(1970, 1, 1).toordinal()

# ---------------------------------------------------------------- escaping (PartitionPathUtils)

_ESCAPED = set(range(0x00, 0x20)) | {ord(c) for c in "\"#%'*/:=?\\{}[]^"} | {0x7F}
_ESCAPE_TABLE = {c: f"%{c:02X}" for c in _ESCAPED}
_JAVA_HEX = re.compile(r"[+-]?[0-9a-fA-F]+")


def escape_path_name(s: str) -> str:
    """PartitionPathUtils.escapePathName: listed ASCII chars -> %XX (uppercase hex); space and non-ASCII
    are kept."""
    return s.translate(_ESCAPE_TABLE)


def unescape_path_name(s: str) -> str:
    """PartitionPathUtils.unescapePathName: a '%' followed by two chars that Java's
    Integer.parseInt(.., 16) reads as a non-negative number becomes that char; anything else is kept."""
    if "%" not in s:
        return s
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        c = s[i]
        if c == "%" and i + 2 < n:
            pair = s[i + 1:i + 3]
            if _JAVA_HEX.fullmatch(pair):
                code = int(pair, 16)  # '+f' -> 15, '-0' -> 0 like Integer.parseInt
                if code >= 0:
                    out.append(chr(code))
                    i += 3
                    continue
        out.append(c)
        i += 1
    return "".join(out)


def _java_is_whitespace(c: str) -> bool:
    """java.lang.Character.isWhitespace."""
    o = ord(c)
    if o in (0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F):
        return True
    if o in (0xA0, 0x2007, 0x202F):  # non-breaking spaces are not whitespace in Java
        return False
    return unicodedata.category(c) in ("Zs", "Zl", "Zp")


def _null_or_blank(s: str | None) -> bool:
    """StringUtils.isNullOrWhitespaceOnly."""
    return s is None or all(_java_is_whitespace(c) for c in s)


# ---------------------------------------------------------------- Java number formatting

def _float_parts(x: float, single: bool) -> tuple[int, int, bool]:
    """(m, e, lower_boundary_closer) with |x| == m * 2**e in the float32/float64 format."""
    if single:
        bits = struct.unpack("<I", struct.pack("<f", x))[0]
        frac, exp = bits & 0x7FFFFF, (bits >> 23) & 0xFF
        m, e = (frac, -149) if exp == 0 else (frac | (1 << 23), exp - 150)
    else:
        bits = struct.unpack("<Q", struct.pack("<d", x))[0]
        frac, exp = bits & 0xFFFFFFFFFFFFF, (bits >> 52) & 0x7FF
        m, e = (frac, -1074) if exp == 0 else (frac | (1 << 52), exp - 1075)
    return m, e, frac == 0 and exp > 1


def _pow2(e: int) -> Fraction:
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


def _closest_with_length(x: Fraction, lo: Fraction, hi: Fraction, inclusive: bool, exp10: int, n: int) -> int | None:
    """The n-significant-digit multiple c * 10**(exp10-n+1) closest to x inside the rounding interval."""
    q = exp10 - n + 1
    u = Fraction(10) ** q
    lo_c, hi_c = lo / u, hi / u
    c_min, c_max = math.ceil(lo_c), math.floor(hi_c)
    if not inclusive:
        if c_min == lo_c:
            c_min += 1
        if c_max == hi_c:
            c_max -= 1
    if c_min > c_max:
        return None
    t = x / u
    c = math.floor(t)
    rest = t - c
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and c % 2 == 1):
        c += 1
    return min(max(c, c_min), c_max)


def _java_fp_to_string(x: float, single: bool) -> str:
    """Double.toString / Float.toString (JDK 19+ spec, Raffaello Giulietti's algorithm): the shortest
    decimal that rounds to x (when that is 1 digit, the closest 2-digit one), plain notation for
    1e-3 <= |x| < 1e7, otherwise 'computerized scientific notation' like 1.0E10."""
    if x != x:
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    sign = "-" if math.copysign(1.0, x) < 0 else ""
    if x == 0:
        return sign + "0.0"
    m, e, closer_below = _float_parts(abs(x), single)
    v = m * _pow2(e)
    hi = (2 * m + 1) * _pow2(e - 1)
    lo = (4 * m - 1) * _pow2(e - 2) if closer_below else (2 * m - 1) * _pow2(e - 1)
    inclusive = m % 2 == 0  # round-half-even: the interval bounds round to x when m is even
    exp10 = math.floor(math.log10(float(v)))
    while Fraction(10) ** exp10 > v:
        exp10 -= 1
    while Fraction(10) ** (exp10 + 1) <= v:
        exp10 += 1
    c, q = 0, 0
    for n in range(1, 20):
        found = _closest_with_length(v, lo, hi, inclusive, exp10, n)
        if found is not None:
            if n == 1:  # Java picks the closest among the 1- or 2-digit decimals
                n = 2
                found = _closest_with_length(v, lo, hi, inclusive, exp10, 2)
            c, q = found, exp10 - n + 1  # type: ignore[assignment]
            break
    digits = str(c)
    stripped = digits.rstrip("0")
    q += len(digits) - len(stripped)
    digits = stripped
    sci = len(digits) - 1 + q  # value = d.ddd * 10**sci
    if -3 <= sci < 7:
        if sci >= 0:
            int_part = digits[:sci + 1].ljust(sci + 1, "0")
            frac = digits[sci + 1:] or "0"
        else:
            int_part, frac = "0", "0" * (-sci - 1) + digits
        return f"{sign}{int_part}.{frac}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def java_double_to_string(x: float) -> str:
    """Java Double.toString(double)."""
    return _java_fp_to_string(float(x), single=False)


def java_float_to_string(x: float) -> str:
    """Java Float.toString(float); `x` is first rounded to float32 (as it is stored)."""
    f = struct.unpack("<f", struct.pack("<f", float(x)))[0]
    return _java_fp_to_string(f, single=True)


def _plain_decimal(unscaled: int, scale: int) -> str:
    """BigDecimal.toPlainString() of unscaled * 10**-scale (no negative zero)."""
    sign = "-" if unscaled < 0 else ""
    digits = str(abs(unscaled))
    if scale <= 0:
        return sign + digits + "0" * -scale
    digits = digits.rjust(scale + 1, "0")
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}"


# ---------------------------------------------------------------- date/time formatting

def _split_timestamp(millis: int, nano_of_milli: int) -> tuple[date, int, int, int, int]:
    """(date, hour, minute, second, nano of second) of an epoch timestamp's UTC wall clock."""
    total_ns = millis * 1_000_000 + nano_of_milli
    secs, nos = divmod(total_ns, 1_000_000_000)
    days, sod = divmod(secs, 86400)
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    return d, sod // 3600, sod // 60 % 60, sod % 60, nos


def _local_datetime_string(millis: int, nano_of_milli: int) -> str:
    """java.time.LocalDateTime.toString(): seconds omitted when zero, fraction in groups of 3 digits."""
    d, h, mi, s, nos = _split_timestamp(millis, nano_of_milli)
    out = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{h:02d}:{mi:02d}"
    if s or nos:
        out += f":{s:02d}"
        if nos:
            if nos % 1_000_000 == 0:
                out += f".{nos // 1_000_000:03d}"
            elif nos % 1000 == 0:
                out += f".{nos // 1000:06d}"
            else:
                out += f".{nos:09d}"
    return out


def _format_timestamp(millis: int, nano_of_milli: int, precision: int) -> str:
    """DateTimeUtils.formatTimestamp(ts, precision): 'yyyy-MM-dd HH:mm:ss' + nanos with trailing zeros
    dropped down to `precision` digits (so TIMESTAMP(3) always shows '.000')."""
    d, h, mi, s, nos = _split_timestamp(millis, nano_of_milli)
    fraction = f"{nos:09d}"
    while len(fraction) > precision and fraction.endswith("0"):
        fraction = fraction[:-1]
    out = f"{d.year:04d}-{d.month:02d}-{d.day:02d} {h:02d}:{mi:02d}:{s:02d}"
    return f"{out}.{fraction}" if fraction else out


def _format_date(days: int) -> str:
    d = date.fromordinal(days + _EPOCH_ORDINAL)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def _format_time(ms: int, precision: int) -> str:
    """DateTimeUtils.formatTimestampMillis(int, precision) (TIME -> STRING cast)."""
    while ms < 0:
        ms += 86_400_000
    h, rest = divmod(ms, 3_600_000)
    mi, rest = divmod(rest, 60_000)
    s, frac = divmod(rest, 1000)
    out = f"{h % 100:02d}:{mi:02d}:{s:02d}"
    if precision > 0:
        out += "."
        while precision > 0:
            out += chr(ord("0") + frac // 100)
            frac = frac % 100 * 10
            if frac == 0:
                break
            precision -= 1
    return out


# ---------------------------------------------------------------- rendering

def partition_value_string(value: Any, t: DataType, legacy: bool = True) -> str | None:
    """The string Java derives from one partition value (before default-name substitution and escaping):
    legacy = the internal value's toString(), non-legacy = CAST(value AS STRING). None for null.

    TIMESTAMP_LTZ in non-legacy mode is rendered in UTC (Java uses the JVM's default time zone there)."""
    if value is None:
        return None
    r = t.root
    if r in ("CHAR", "VARCHAR"):
        return value if isinstance(value, str) else bytes(value).decode("utf-8", "replace")
    if r == "BOOLEAN":
        return "true" if value else "false"
    if r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
        return str(int(value))
    if r == "FLOAT":
        return java_float_to_string(value)
    if r == "DOUBLE":
        return java_double_to_string(value)
    if r == "DECIMAL":
        scale = t.scale or 0
        return _plain_decimal(decimal_to_unscaled(value, t.precision or 10, scale), scale)
    if r == "DATE":
        days = date_to_days(value)
        return str(days) if legacy else _format_date(days)
    if r == "TIME":
        ms = time_to_millis(value)
        return str(ms) if legacy else _format_time(ms, t.precision or 0)
    if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        millis, nano = timestamp_to_millis_nanos(value, ltz=r == "TIMESTAMP_LTZ")
        if legacy:
            return _local_datetime_string(millis, nano)
        return _format_timestamp(millis, nano, 6 if t.precision is None else t.precision)
    if r in ("BINARY", "VARBINARY") and not legacy:
        return bytes(value).decode("utf-8", "replace")
    raise UnsupportedError(
        f"cannot render a {t} partition value"
        + (" with partition.legacy-name=true (Java prints a byte[] object id)" if r in ("BINARY", "VARBINARY") else "")
    )


def partition_spec(
    values: Sequence[Any],
    names: Sequence[str],
    types: Sequence[DataType],
    legacy: bool = True,
    default_name: str = DEFAULT_PARTITION_NAME,
) -> dict[str, str]:
    """InternalRowPartitionComputer.generatePartValues: name -> rendered value (unescaped), null or
    blank values replaced by `default_name`."""
    if not len(values) == len(names) == len(types):
        raise FormatError(f"{len(values)} partition values for {len(names)} keys and {len(types)} types")
    out: dict[str, str] = {}
    for v, n, t in zip(values, names, types):
        s = partition_value_string(v, t, legacy)
        out[n] = default_name if _null_or_blank(s) else s  # type: ignore[assignment]
    return out


def partition_path(
    values: Sequence[Any],
    names: Sequence[str],
    types: Sequence[DataType],
    legacy: bool = True,
    default_name: str = DEFAULT_PARTITION_NAME,
    only_value: bool = False,
) -> str:
    """Relative partition directory with Java's trailing slash, e.g. ``dt=2024-01-01/hr=10/``; "" when
    the table is unpartitioned (PartitionPathUtils.generatePartitionPathUtil). `only_value` gives the
    value-only layout (``2024-01-01/10/``), where Java rejects the values '.' and '..'."""
    spec = partition_spec(values, names, types, legacy, default_name)
    if only_value:
        bad = [v for v in spec.values() if v in (".", "..")]
        if bad:
            raise InvalidArgumentError(f"partition value {bad[0]!r} cannot be used as a partition path component")
        return "".join(f"{escape_path_name(v)}/" for v in spec.values())
    return "".join(f"{escape_path_name(k)}={escape_path_name(v)}/" for k, v in spec.items())


def partition_dir(
    values: Sequence[Any],
    names: Sequence[str],
    types: Sequence[DataType],
    legacy: bool = True,
    default_name: str = DEFAULT_PARTITION_NAME,
    only_value: bool = False,
) -> str:
    """`partition_path` without the trailing slash (``dt=2024-01-01/hr=10``), Java's generatePartitionName."""
    return partition_path(values, names, types, legacy, default_name, only_value)[:-1] if names else ""


def parse_partition_dir(path: str) -> dict[str, str]:
    """Unescaped name -> value strings of a partition directory like ``dt=2024-01-01/hr=10/``."""
    out: dict[str, str] = {}
    for part in path.strip("/").split("/"):
        if not part:
            continue
        name, sep, value = part.partition("=")
        if not sep:
            raise FormatError(f"partition directory component {part!r} of {path!r} is not name=value")
        out[unescape_path_name(name)] = unescape_path_name(value)
    return out


# ---------------------------------------------------------------- parsing user specs

_TS_RE = re.compile(
    r"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d{1,9}))?)?)?$"
)
_INT_RANGES = {
    "TINYINT": (-(1 << 7), (1 << 7) - 1),
    "SMALLINT": (-(1 << 15), (1 << 15) - 1),
    "INT": (-(1 << 31), (1 << 31) - 1),
    "BIGINT": (-(1 << 63), (1 << 63) - 1),
}
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0"}


def _parse_timestamp(text: str, ltz: bool) -> Any:
    m = _TS_RE.match(text)
    if not m:
        raise FormatError("expected YYYY-MM-DD[ HH:MM[:SS[.fffffffff]]] (or with 'T')")
    y, mo, d, h, mi, s, frac = m.groups()
    frac = (frac or "").ljust(9, "0")
    dt = datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0), int(frac[:6]))
    if ltz:
        dt = dt.replace(tzinfo=timezone.utc)
    extra = int(frac[6:])
    if extra:
        import pandas as pd  # sub-microsecond precision needs pandas.Timestamp

        return pd.Timestamp(dt) + pd.Timedelta(nanoseconds=extra)
    return dt


def parse_partition_value(
    text: str, t: DataType, key: str = "", default_name: str = DEFAULT_PARTITION_NAME
) -> Any:
    """Typed value (binary_row conventions) of a user-given partition value string; `default_name` -> None.
    DATE accepts YYYY-MM-DD or a day number, TIME HH:MM[:SS[.fff]] or millis, TIMESTAMP ISO date-time with
    ' ' or 'T' (TIMESTAMP_LTZ read as UTC)."""
    if text == default_name:
        return None
    r = t.root
    s = text.strip()
    try:
        if r in ("CHAR", "VARCHAR"):
            return text
        if r in ("BINARY", "VARBINARY"):
            return text.encode("utf-8")
        if r == "BOOLEAN":
            low = s.lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise FormatError("expected true or false")
        if r in _INT_RANGES:
            v = int(s)
            lo, hi = _INT_RANGES[r]
            if not lo <= v <= hi:
                raise FormatError(f"out of range [{lo}, {hi}]")
            return v
        if r == "FLOAT":
            f = float(s)
            return struct.unpack("<f", struct.pack("<f", f))[0]
        if r == "DOUBLE":
            return float(s)
        if r == "DECIMAL":
            scale = t.scale or 0
            return Decimal(decimal_to_unscaled(Decimal(s), t.precision or 10, scale)).scaleb(-scale)
        if r == "DATE":
            if re.fullmatch(r"-?\d+", s):
                days = int(s)
                return date.fromordinal(days + _EPOCH_ORDINAL)
            return date.fromisoformat(s)
        if r == "TIME":
            if re.fullmatch(r"\d+", s):
                ms = int(s)
                if ms >= 86_400_000:
                    raise FormatError("more millis than a day has")
                return time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)
            return time.fromisoformat(s)
        if r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            return _parse_timestamp(s, r == "TIMESTAMP_LTZ")
    except (ValueError, ArithmeticError, OverflowError) as e:
        raise InvalidArgumentError(
            f"invalid value {text!r} for partition key {key!r} of type {t}: {e}"
        ) from None
    raise InvalidArgumentError(f"partition key {key!r} has type {t}, which cannot be given as a partition value")


def parse_partition_spec(
    spec: str | Mapping[str, str],
    names: Sequence[str],
    types: Sequence[DataType],
    default_name: str = DEFAULT_PARTITION_NAME,
    require_all: bool = False,
) -> dict[str, Any]:
    """Parse ``"k=v,k2=v2"`` (or a mapping of strings) into typed values keyed by partition key, in
    partition-key order. Partial specs are allowed unless `require_all`. Errors name the key and value."""
    if isinstance(spec, str):
        pairs: list[tuple[str, str]] = []
        for part in spec.split(","):
            if not part.strip():
                continue
            k, sep, v = part.partition("=")
            if not sep:
                raise InvalidArgumentError(f"partition spec entry {part.strip()!r} is not key=value")
            pairs.append((k.strip(), v))
    else:
        pairs = [(str(k), str(v)) for k, v in spec.items()]
    index = {n: i for i, n in enumerate(names)}
    parsed: dict[str, Any] = {}
    for k, v in pairs:
        if k not in index:
            raise InvalidArgumentError(
                f"unknown partition key {k!r} (value {v!r}); partition keys are {list(names)}"
            )
        if k in parsed:
            raise InvalidArgumentError(f"partition key {k!r} is given twice (second value {v!r})")
        parsed[k] = parse_partition_value(v, types[index[k]], k, default_name)
    if require_all:
        missing = [n for n in names if n not in parsed]
        if missing:
            raise InvalidArgumentError(f"partition spec {spec!r} lacks partition keys {missing}")
    return {n: parsed[n] for n in names if n in parsed}


def partition_json(values: Sequence[Any], names: Sequence[str], types: Sequence[DataType]) -> dict[str, Any]:
    """Partition values as typed JSON for plans, reports and --json (the JSON contract, docs/guides/json-and-upgrading.md):
    numbers and booleans as JSON numbers / booleans, DATE as "2026-11-24", TIME as "10:30:00", TIMESTAMP as ISO 8601
    ("2026-11-24T10:30:00", zone-less like the type; TIMESTAMP_LTZ with "Z"), DECIMAL as exact text, strings and
    binaries as text, null as null — never the directory's text (a DATE's legacy name is its day number)."""
    out: dict[str, Any] = {}
    for v, n, t in zip(values, names, types):
        r = t.root
        if v is None:
            out[n] = None
        elif r == "BOOLEAN":
            out[n] = bool(v)
        elif r in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
            out[n] = int(v)
        elif r in ("FLOAT", "DOUBLE"):
            f = float(v)
            out[n] = f if math.isfinite(f) else partition_value_string(v, t, legacy=True)  # NaN / Infinity as text
        else:
            s = partition_value_string(v, t, legacy=False)
            if r in ("TIMESTAMP", "TIMESTAMP_LTZ") and s is not None:
                s = s.replace(" ", "T", 1) + ("Z" if r == "TIMESTAMP_LTZ" else "")
            out[n] = s
    return out
