"""Table options with Paimon's names, defaults and value syntax (maintenance.md §9).

Paimon durations look like `1 h`, `30 min`, `1 d`, `500 ms`, `PT1H`; memory sizes like `128 mb`, `2 MiB`.
Every accessor names the option in its error so a user knows what to fix.
"""
from __future__ import annotations

import builtins
import re
from dataclasses import dataclass
from datetime import timedelta
from typing import Mapping, overload

from paimon_ops.errors import InvalidOptionError

_DURATION_UNITS = {
    "ns": 1e-9, "nano": 1e-9, "nanos": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
    "us": 1e-6, "µs": 1e-6, "micro": 1e-6, "micros": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ms": 1e-3, "milli": 1e-3, "millis": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
    "min": 60, "m": 60, "mins": 60, "minute": 60, "minutes": 60,
    "h": 3600, "hour": 3600, "hours": 3600,
    "d": 86400, "day": 86400, "days": 86400,
}
_MEMORY_UNITS = {
    "": 1, "b": 1, "bytes": 1,
    "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "kibibytes": 1 << 10,
    "m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20, "mebibytes": 1 << 20,
    "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30, "gibibytes": 1 << 30,
    "t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40, "tebibytes": 1 << 40,
}
_NUM_UNIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Zµ]*)\s*$")
_ISO_DURATION = re.compile(
    r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$",
    re.IGNORECASE,
)


def parse_duration(text: str, name: str = "duration") -> timedelta:
    """Parse a Paimon/Flink duration; a bare number means milliseconds (as Flink's TimeUtils does)."""
    try:
        return _parse_duration(text, name)
    except (OverflowError, ValueError) as e:
        if isinstance(e, InvalidOptionError):
            raise
        raise InvalidOptionError(name, text, "a duration of at most 999999999 days") from None


def _parse_duration(text: str, name: str) -> timedelta:
    s = str(text).strip()
    iso = _ISO_DURATION.match(s)
    if iso and s.upper() != "P":
        d, h, mins, sec = (float(iso.group(k) or 0) for k in ("d", "h", "m", "s"))
        return timedelta(days=d, hours=h, minutes=mins, seconds=sec)
    num = _NUM_UNIT.match(s)
    if not num:
        raise InvalidOptionError(name, text, "a duration such as '1 h', '30 min', '1 d' or '500 ms'")
    unit = num.group(2).lower()
    if unit == "":
        return timedelta(milliseconds=float(num.group(1)))
    if unit not in _DURATION_UNITS:
        raise InvalidOptionError(name, text, f"a duration; unknown unit {num.group(2)!r}")
    return timedelta(seconds=float(num.group(1)) * _DURATION_UNITS[unit])


def looks_like_duration(text: str) -> bool:
    """True for a Paimon duration ('3 d', 'PT1H'), not for plain digits (epoch ms) or an ISO instant."""
    s = str(text).strip()
    if s.lstrip("-").isdigit():
        return False
    m = _NUM_UNIT.match(s)
    return bool(m and m.group(2)) or bool(_ISO_DURATION.match(s) and s.upper() != "P")


def parse_memory(text: str, name: str = "memory size") -> int:
    m = _NUM_UNIT.match(str(text))
    if not m or m.group(2).lower() not in _MEMORY_UNITS:
        raise InvalidOptionError(name, text, "a memory size such as '128 mb' or '2 gb'")
    return int(float(m.group(1)) * _MEMORY_UNITS[m.group(2).lower()])


def format_duration(td: timedelta) -> str:
    ms = int(td.total_seconds() * 1000)
    for unit, size in (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms and ms % size == 0:
            return f"{ms // size} {unit}"
    return f"{ms} ms"


# The accessors below are named after the types they return (Options.int, Options.str, …); annotations inside the
# class use these aliases so that they mean the builtin types.
_Str = str
_Int = int
_Bool = bool
_Float = float


@dataclass(frozen=True)
class Options:
    """Typed read-only view over a table's string options (plus overrides)."""

    raw: Mapping[_Str, _Str]
    where: _Str = ""

    def get(self, key: _Str, default: _Str | None = None) -> _Str | None:
        v = self.raw.get(key)
        return default if v is None else v

    def _fail(self, key: _Str, value: object, expected: _Str) -> InvalidOptionError:
        return InvalidOptionError(key, value, expected, self.where)

    def str(self, key: _Str, default: _Str | None = None, fallback_keys: tuple[_Str, ...] = ()) -> _Str | None:
        for k in (key, *fallback_keys):
            if k in self.raw:
                return self.raw[k]
        return default

    @overload
    def int(self, key: _Str, default: builtins.int, fallback_keys: tuple[_Str, ...] = ()) -> builtins.int: ...
    @overload
    def int(self, key: _Str, default: None = None, fallback_keys: tuple[_Str, ...] = ()) -> builtins.int | None: ...

    def int(self, key, default=None, fallback_keys=()):
        """The configured integer (a configured 0 wins over the default), else `default`."""
        v = self.str(key, None, fallback_keys)
        if v is None:
            return default
        try:
            return builtins.int(str(v).strip())
        except ValueError:
            raise self._fail(key, v, "an integer") from None

    def positive_int(self, key: _Str, default: builtins.int, minimum: builtins.int = 1) -> builtins.int:
        """An integer option that must be >= `minimum` (0 or a negative value is refused, never replaced)."""
        v = self.int(key, default)
        if v < minimum:
            raise self._fail(key, self.raw.get(key), f"an integer >= {minimum}")
        return v

    @overload
    def float(self, key: _Str, default: builtins.float) -> builtins.float: ...
    @overload
    def float(self, key: _Str, default: None = None) -> builtins.float | None: ...

    def float(self, key, default=None):
        v = self.raw.get(key)
        if v is None:
            return default
        try:
            return builtins.float(v)
        except ValueError:
            raise self._fail(key, v, "a number") from None

    def bool(self, key: _Str, default: _Bool = False, fallback_keys: tuple[_Str, ...] = ()) -> _Bool:
        v = self.str(key, None, fallback_keys)
        if v is None:
            return default
        s = str(v).strip().lower()
        if s in ("true", "false"):
            return s == "true"
        raise self._fail(key, v, "true or false")

    @overload
    def duration(self, key: _Str, default: timedelta) -> timedelta: ...
    @overload
    def duration(self, key: _Str, default: None = None) -> timedelta | None: ...

    def duration(self, key, default=None):
        v = self.raw.get(key)
        if v is None:
            return default
        try:
            return parse_duration(v, key)
        except InvalidOptionError:
            raise self._fail(key, v, "a duration such as '1 h', '30 min', '1 d'") from None

    @overload
    def memory(self, key: _Str, default: builtins.int) -> builtins.int: ...
    @overload
    def memory(self, key: _Str, default: None = None) -> builtins.int | None: ...

    def memory(self, key, default=None):
        v = self.raw.get(key)
        if v is None:
            return default
        try:
            return parse_memory(v, key)
        except InvalidOptionError:
            raise self._fail(key, v, "a memory size such as '128 mb'") from None

    def enum(self, key: _Str, allowed: tuple[_Str, ...], default: _Str) -> _Str:
        v = self.raw.get(key)
        if v is None:
            return default
        s = str(v).strip().lower().replace("_", "-")
        norm = {a.lower().replace("_", "-"): a for a in allowed}
        if s not in norm:
            raise self._fail(key, v, "one of " + ", ".join(allowed))
        return norm[s]

    # ------------------------------------------------------------------ commonly used Paimon options
    @property
    def bucket(self) -> _Int:
        return self.int("bucket", -1)  # type: ignore[return-value]

    @property
    def file_format(self) -> _Str:
        return (self.str("file.format", "parquet") or "parquet").lower()

    @property
    def deletion_vectors_enabled(self) -> _Bool:
        return self.bool("deletion-vectors.enabled")

    @property
    def bitmap64(self) -> _Bool:
        return self.bool("deletion-vectors.bitmap64")

    @property
    def merge_engine(self) -> _Str:
        return self.enum("merge-engine", ("deduplicate", "partial-update", "aggregation", "first-row"), "deduplicate")

    @property
    def num_levels(self) -> _Int:
        trigger = self.positive_int("num-sorted-run.compaction-trigger", 5)
        return self.positive_int("num-levels", trigger + 1, minimum=2)

    def target_file_size(self, primary_key: _Bool) -> _Int:
        return self.memory("target-file-size", (128 if primary_key else 256) << 20)  # type: ignore[return-value]

    @property
    def partition_default_name(self) -> _Str:
        return self.str("partition.default-name", "__DEFAULT_PARTITION__")  # type: ignore[return-value]

    @property
    def partition_legacy_name(self) -> _Bool:
        return self.bool("partition.legacy-name", True)

    @property
    def sequence_fields(self) -> list[_Str]:
        v = self.str("sequence.field")
        return [s.strip() for s in v.split(",") if s.strip()] if v else []

    @property
    def changelog_producer(self) -> _Str:
        return self.enum("changelog-producer", ("none", "input", "full-compaction", "lookup"), "none")

    @property
    def data_file_prefix(self) -> _Str:
        return self.str("data-file.prefix", "data-")  # type: ignore[return-value]

    @property
    def data_path_directory(self) -> _Str | None:
        return self.str("data-file.path-directory")

    @property
    def index_file_in_data_dir(self) -> _Bool:
        return self.bool("index-file-in-data-file-dir")
