"""Snapshot, tag, changelog and consumer JSON and the LATEST/EARLIEST hint files (format.md §3,
maintenance.md §0.2-0.3, §2.6). Pure codecs: text/bytes <-> frozen dataclasses, no file-system access.

Output mimics Java's ``JsonSerdeUtil.toJson`` (Jackson ``DefaultPrettyPrinter``): keys in Java's order,
``"key" : value``, two-space indentation, inline arrays ``[ 1, 2 ]``, empty containers ``{ }`` / ``[ ]``, no
trailing newline. Byte equality with Java is not required (format.md §0.3) but keeps files diff-able.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import re
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Mapping

from paimon_ops.errors import CorruptMetadataError, FormatError
from paimon_ops.format.names import require_plain_name

__all__ = [
    "COMMIT_KINDS",
    "CURRENT_SNAPSHOT_VERSION",
    "Snapshot",
    "Changelog",
    "Tag",
    "Consumer",
    "parse_hint",
    "format_hint",
    "jackson_dumps",
]

CURRENT_SNAPSHOT_VERSION = 3
COMMIT_KINDS = ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE")

# ---------------------------------------------------------------------------------------------- Jackson-ish JSON


class _RawNumber(str):
    """A pre-formatted JSON number written verbatim (Jackson writes Durations as BigDecimal text)."""


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def _json_str(s: str) -> str:
    # Jackson escapes only '"', '\\' and control characters (short forms for \b\t\n\f\r, else \u00XX upper-case
    # hex); non-ASCII is written as UTF-8.
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(), "\\u%04X" % ord(m.group())), s) + '"'


def _dump(v: Any, level: int, out: list[str]) -> None:
    if v is None:
        out.append("null")
    elif v is True:
        out.append("true")
    elif v is False:
        out.append("false")
    elif isinstance(v, _RawNumber):
        out.append(str(v))
    elif isinstance(v, str):
        out.append(_json_str(v))
    elif isinstance(v, int):
        out.append(str(int(v)))
    elif isinstance(v, Decimal):
        out.append(str(v))  # JSON numbers are parsed as Decimal: re-emit the original digits
    elif isinstance(v, float):
        out.append(json.dumps(v))
    elif isinstance(v, Mapping):
        if not v:
            out.append("{ }")
            return
        pad = "  " * (level + 1)
        out.append("{")
        first = True
        for k, item in v.items():
            out.append("\n" if first else ",\n")
            first = False
            out.append(pad + _json_str(str(k)) + " : ")
            _dump(item, level + 1, out)
        out.append("\n" + "  " * level + "}")
    elif isinstance(v, (list, tuple)):
        if not v:
            out.append("[ ]")
            return
        out.append("[ ")
        for i, item in enumerate(v):
            if i:
                out.append(", ")
            _dump(item, level, out)
        out.append(" ]")
    else:
        raise TypeError(f"cannot serialise {type(v).__name__} to JSON")


def jackson_dumps(value: Any) -> str:
    """Serialise like Jackson's default pretty printer (what Java's ``JsonSerdeUtil.toJson`` writes)."""
    out: list[str] = []
    _dump(value, 0, out)
    return "".join(out)


def _load_object(text: str | bytes, path: str, what: str) -> dict:
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        obj = json.loads(text, parse_float=Decimal)  # exact: Durations carry 9 fraction digits
    except (ValueError, UnicodeDecodeError) as e:
        raise CorruptMetadataError(path, f"{what} is not valid JSON ({e})") from None
    if not isinstance(obj, dict):
        raise CorruptMetadataError(path, f"{what} JSON is not an object")
    return obj


# ---------------------------------------------------------------------------------------------- field access


def _get_int(obj: dict, key: str, path: str, what: str, required: bool) -> int | None:
    if key not in obj or obj[key] is None:
        if required:
            raise CorruptMetadataError(path, f"{what} lacks required key {key!r}")
        return None
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int):
        # Jackson coerces integral floats/strings for long fields; accept the same, reject anything else.
        try:
            if isinstance(v, (float, Decimal)) and v == int(v):
                return int(v)
        except (ValueError, OverflowError):
            pass
        if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
            return int(v)
        raise CorruptMetadataError(path, f"{what} key {key!r} is not an integer: {v!r}")
    return v


def _get_str(obj: dict, key: str, path: str, what: str, required: bool) -> str | None:
    if key not in obj or obj[key] is None:
        if required:
            raise CorruptMetadataError(path, f"{what} lacks required key {key!r}")
        return None
    v = obj[key]
    if not isinstance(v, str):
        raise CorruptMetadataError(path, f"{what} key {key!r} is not a string: {v!r}")
    return v


# ---------------------------------------------------------------------------------------------- Snapshot

# (json key, attribute) in the order Java (master) writes them (format.md §3.1).
_SNAPSHOT_KEYS: tuple[tuple[str, str], ...] = (
    ("version", "version"),
    ("uuid", "uuid"),
    ("id", "id"),
    ("schemaId", "schema_id"),
    ("baseManifestList", "base_manifest_list"),
    ("baseManifestListSize", "base_manifest_list_size"),
    ("deltaManifestList", "delta_manifest_list"),
    ("deltaManifestListSize", "delta_manifest_list_size"),
    ("changelogManifestList", "changelog_manifest_list"),
    ("changelogManifestListSize", "changelog_manifest_list_size"),
    ("indexManifest", "index_manifest"),
    ("commitUser", "commit_user"),
    ("writerVersion", "writer_version"),
    ("commitIdentifier", "commit_identifier"),
    ("commitKind", "commit_kind"),
    ("timeMillis", "time_millis"),
    ("logOffsets", "log_offsets"),
    ("totalRecordCount", "total_record_count"),
    ("deltaRecordCount", "delta_record_count"),
    ("changelogRecordCount", "changelog_record_count"),
    ("watermark", "watermark"),
    ("statistics", "statistics"),
    ("properties", "properties"),
    ("nextRowId", "next_row_id"),
    ("operation", "operation"),
)
_KNOWN_KEYS = frozenset(k for k, _ in _SNAPSHOT_KEYS)
_REQUIRED_INT = ("id", "schemaId", "commitIdentifier", "timeMillis")
_REQUIRED_STR = ("baseManifestList", "deltaManifestList", "commitUser", "commitKind")
_OPTIONAL_INT = ("baseManifestListSize", "deltaManifestListSize", "changelogManifestListSize",
                 "totalRecordCount", "deltaRecordCount", "changelogRecordCount", "watermark", "nextRowId")
# Keys whose values are file names the reader joins to manifest/ or statistics/: plain names only.
_FILE_NAME_KEYS = ("baseManifestList", "deltaManifestList", "changelogManifestList", "indexManifest", "statistics")
_OPTIONAL_STR = ("uuid", "changelogManifestList", "indexManifest", "writerVersion", "statistics", "operation")


@dataclass(frozen=True)
class Snapshot:
    """``snapshot/snapshot-<id>`` (and ``changelog/changelog-<id>``, same shape).

    ``extra`` keeps keys this module does not know (written back after the known ones). Dict-valued fields are
    excluded from hashing so snapshots stay hashable.
    """

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: str
    time_millis: int
    total_record_count: int | None = None
    delta_record_count: int | None = None
    version: int = CURRENT_SNAPSHOT_VERSION
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list: str | None = None
    changelog_manifest_list_size: int | None = None
    index_manifest: str | None = None
    log_offsets: dict[int, int] | None = field(default=None, hash=False)
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str] | None = field(default=None, hash=False)
    next_row_id: int | None = None
    uuid: str | None = None
    operation: str | None = None
    writer_version: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, hash=False)

    _WHAT = "snapshot"

    def with_(self, **kw: Any) -> Snapshot:
        return dataclasses.replace(self, **kw)

    # ------------------------------------------------------------------ reading
    @classmethod
    def _fields_from_obj(cls, obj: dict, path: str) -> dict[str, Any]:
        what = cls._WHAT
        attr = dict(_SNAPSHOT_KEYS)
        kw: dict[str, Any] = {}
        for k in _REQUIRED_INT:
            kw[attr[k]] = _get_int(obj, k, path, what, True)
        for k in _REQUIRED_STR:
            kw[attr[k]] = _get_str(obj, k, path, what, True)
        for k in _OPTIONAL_INT:
            kw[attr[k]] = _get_int(obj, k, path, what, False)
        for k in _OPTIONAL_STR:
            kw[attr[k]] = _get_str(obj, k, path, what, False)
        for k in _FILE_NAME_KEYS:
            if kw[attr[k]] is not None:
                require_plain_name(kw[attr[k]], path, f"{what} {k}")
        version = _get_int(obj, "version", path, what, False)
        kw["version"] = 1 if version is None else version  # absent => 1 (Paimon <= 0.2), as Java reads it
        if kw["commit_kind"] not in COMMIT_KINDS:
            raise CorruptMetadataError(path, f"{what} has unknown commitKind {kw['commit_kind']!r} "
                                             f"(expected one of {', '.join(COMMIT_KINDS)})")
        lo = obj.get("logOffsets")
        if lo is not None:
            if not isinstance(lo, dict):
                raise CorruptMetadataError(path, f"{what} key 'logOffsets' is not an object")
            try:
                kw["log_offsets"] = {int(k): int(v) for k, v in lo.items()}
            except (TypeError, ValueError):
                raise CorruptMetadataError(path, f"{what} key 'logOffsets' is not a map of int to long") from None
        props = obj.get("properties")
        if props is not None:
            if not isinstance(props, dict):
                raise CorruptMetadataError(path, f"{what} key 'properties' is not an object")
            kw["properties"] = {str(k): v if v is None or isinstance(v, str) else json.dumps(v)
                                for k, v in props.items()}
        kw["extra"] = {k: v for k, v in obj.items() if k not in _KNOWN_KEYS}
        return kw

    @classmethod
    def from_json(cls, text: str | bytes, path: str) -> Snapshot:
        obj = _load_object(text, path, cls._WHAT)
        return cls(**cls._fields_from_obj(obj, path))

    # ------------------------------------------------------------------ writing
    def _to_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, attr in _SNAPSHOT_KEYS:
            v = getattr(self, attr)
            if v is None:
                continue  # Java: @JsonInclude(NON_NULL) on every nullable field (0.9's explicit null is not needed)
            if key == "logOffsets":
                v = {str(k): val for k, val in v.items()}
            obj[key] = v
        for k, v in self.extra.items():
            if k not in obj:
                obj[k] = v
        return obj

    def to_json(self) -> str:
        return jackson_dumps(self._to_obj())


# The changelog file has exactly the snapshot's shape (format.md §3.1).
Changelog = Snapshot

# ---------------------------------------------------------------------------------------------- Tag

_ISO_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE)
_ISO_LOCAL_DT = re.compile(r"(-?\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?")


def _duration_from_decimal(d: Decimal) -> _dt.timedelta:
    # timedelta keeps microseconds; Java Durations with sub-microsecond parts are truncated toward zero.
    micros = int((d * 1_000_000).to_integral_value(rounding="ROUND_DOWN"))
    return _dt.timedelta(microseconds=micros)


def _parse_duration(v: Any, path: str) -> _dt.timedelta:
    """Jackson DurationDeserializer: a number of seconds (decimal = seconds.nanos), or ISO-8601 text."""
    try:
        if isinstance(v, bool):
            raise FormatError(v)
        if isinstance(v, int):
            return _dt.timedelta(seconds=v)
        if isinstance(v, float):
            return _duration_from_decimal(Decimal(repr(v)))
        if isinstance(v, Decimal):
            return _duration_from_decimal(v)
        if isinstance(v, str):
            s = v.strip()
            if re.fullmatch(r"-?\d+(\.\d+)?", s):
                return _duration_from_decimal(Decimal(s))
            m = _ISO_DURATION.fullmatch(s)
            if m and any(m.group(i) for i in (2, 3, 4, 5)):
                sign, days, hours, minutes, secs, frac = m.groups()
                total = (Decimal(days or 0) * 86400 + Decimal(hours or 0) * 3600 + Decimal(minutes or 0) * 60
                         + Decimal(secs or 0))
                if frac:
                    f = Decimal("0." + frac)
                    total += -f if (secs or "").startswith("-") else f
                return _duration_from_decimal(-total if sign == "-" else total)
    except (ValueError, InvalidOperation, OverflowError):
        pass
    raise CorruptMetadataError(path, f"tag key 'tagTimeRetained' is not a duration: {v!r}")


def _format_duration(td: _dt.timedelta) -> _RawNumber:
    """Jackson DurationSerializer (timestamps as nanoseconds): BigDecimal seconds with scale 9, '0.0' for zero."""
    seconds = td.days * 86400 + td.seconds  # floor seconds, like Java's Duration.getSeconds()
    nanos = td.microseconds * 1000
    if seconds == 0 and nanos == 0:
        return _RawNumber("0.0")
    return _RawNumber(f"{seconds}.{nanos:09d}")


def _parse_local_datetime(v: Any, path: str) -> tuple[_dt.datetime, int]:
    """Jackson LocalDateTimeDeserializer: array [y, m, d, h, min(, s(, nanos))] or ISO text. -> (dt, nanos)."""
    try:
        if isinstance(v, list):
            if len(v) < 5 or len(v) > 7 or any(isinstance(x, bool) for x in v):
                raise FormatError(v)
            parts = [int(x) for x in v]
            y, mo, d, h, mi = parts[:5]
            s = parts[5] if len(parts) > 5 else 0
            nanos = parts[6] if len(parts) > 6 else 0
            if not 0 <= nanos < 1_000_000_000:
                raise FormatError(v)
            return _dt.datetime(y, mo, d, h, mi, s, nanos // 1000), nanos
        if isinstance(v, str):
            m = _ISO_LOCAL_DT.fullmatch(v.strip())
            if m:
                ys, mos, ds, hs, mis, ss, frac = m.groups()
                nanos = int((frac or "").ljust(9, "0")) if frac else 0
                return _dt.datetime(int(ys), int(mos), int(ds), int(hs), int(mis), int(ss or 0), nanos // 1000), nanos
    except (ValueError, TypeError, OverflowError):
        pass
    raise CorruptMetadataError(path, f"tag key 'tagCreateTime' is not a local date-time: {v!r}")


def _format_local_datetime(dt: _dt.datetime, nanos: int | None) -> list[int]:
    """Jackson LocalDateTimeSerializer array form: seconds only if seconds or nanos != 0, nanos only if != 0."""
    if nanos is None or nanos // 1000 != dt.microsecond:
        nanos = dt.microsecond * 1000
    out = [dt.year, dt.month, dt.day, dt.hour, dt.minute]
    if dt.second or nanos:
        out.append(dt.second)
        if nanos:
            out.append(nanos)
    return out


@dataclass(frozen=True)
class Tag(Snapshot):
    """``tag/tag-<name>``: a snapshot JSON plus, when the tag has a retention, its creation time and retention.

    ``tag_create_time`` is a naive local date-time (Java ``LocalDateTime``). ``tag_create_nanos`` keeps Java's
    nano-of-second exactly when it has sub-microsecond digits; it is used only while it agrees with
    ``tag_create_time.microsecond`` (otherwise the datetime wins).
    """

    tag_create_time: _dt.datetime | None = None
    tag_time_retained: _dt.timedelta | None = None
    tag_create_nanos: int | None = None

    _WHAT = "tag"

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, time_retained: _dt.timedelta | None = None,
                      create_time: _dt.datetime | None = None) -> Tag:
        """Java ``TagManager.createTag``: the two tag fields only when a retention is given (so that a tag
        without retention is byte-for-byte a snapshot JSON that old readers accept)."""
        kw = {f.name: getattr(snapshot, f.name) for f in dataclasses.fields(Snapshot)}
        if time_retained is None:
            return cls(**kw)
        if create_time is None:
            create_time = _dt.datetime.now()
        return cls(**kw, tag_create_time=create_time, tag_time_retained=time_retained)

    def to_snapshot(self) -> Snapshot:
        return Snapshot(**{f.name: getattr(self, f.name) for f in dataclasses.fields(Snapshot)})

    @classmethod
    def from_json(cls, text: str | bytes, path: str) -> Tag:
        obj = _load_object(text, path, cls._WHAT)
        kw = cls._fields_from_obj(obj, path)
        extra = dict(kw["extra"])
        ct = extra.pop("tagCreateTime", None)
        tr = extra.pop("tagTimeRetained", None)
        kw["extra"] = extra
        if ct is not None:
            kw["tag_create_time"], kw["tag_create_nanos"] = _parse_local_datetime(ct, path)
        if tr is not None:
            kw["tag_time_retained"] = _parse_duration(tr, path)
        return cls(**kw)

    def to_json(self) -> str:
        obj = self._to_obj()
        obj.pop("tagCreateTime", None)
        obj.pop("tagTimeRetained", None)
        if self.tag_create_time is not None:
            obj["tagCreateTime"] = _format_local_datetime(self.tag_create_time, self.tag_create_nanos)
        if self.tag_time_retained is not None:
            obj["tagTimeRetained"] = _format_duration(self.tag_time_retained)
        return jackson_dumps(obj)


# ---------------------------------------------------------------------------------------------- hints, consumers


def parse_hint(text: bytes | str, path: str = "") -> int | None:
    """Decimal id of a LATEST/EARLIEST hint; None if unreadable (hints are advisory: callers fall back to listing).

    ``path`` is accepted for symmetry with the other parsers; nothing is raised.
    """
    try:
        s = text.decode("utf-8") if isinstance(text, (bytes, bytearray)) else str(text)
    except UnicodeDecodeError:
        return None
    s = s.strip()
    if not re.fullmatch(r"-?\d{1,19}", s):
        return None
    n = int(s)
    return n if -(1 << 63) <= n < (1 << 63) else None


def format_hint(n: int) -> bytes:
    """Hint file content: the decimal id as UTF-8, no newline (HintFileUtils)."""
    return str(int(n)).encode("utf-8")


@dataclass(frozen=True)
class Consumer:
    """``consumer/consumer-<id>``: ``{"nextSnapshot": n}`` (maintenance.md §2.6)."""

    next_snapshot: int

    @staticmethod
    def from_json(text: str | bytes, path: str) -> Consumer:
        obj = _load_object(text, path, "consumer")
        n = _get_int(obj, "nextSnapshot", path, "consumer", True)
        assert n is not None
        return Consumer(n)

    def to_json(self) -> str:
        return jackson_dumps({"nextSnapshot": self.next_snapshot})
