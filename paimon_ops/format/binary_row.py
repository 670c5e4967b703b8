"""Java-compatible BinaryRow codec, row hash and bucket functions (format.md §5, §6.1, §6.2, §12).

Byte layout (§5.1/§5.2): ``| header + null bits | arity x 8-byte slots | variable part |``, little-endian.
Everything here reproduces what Java Paimon's *code-generated projection* writes for partition, key and
bucket-key rows, because Java hashes and compares those rows byte-by-byte:

* padding and unused bytes are zero; strings/binaries of <= 7 bytes are stored inline in the slot;
* non-compact decimals (precision > 18) use Java's minimal two's-complement bytes in a 16-byte region;
* a *null* non-compact decimal / timestamp (precision > 3) still reserves its zeroed 16 / 8 byte region
  and stores ``offset << 32`` in the slot (BinaryArray elements do not reserve: Java's array writer only
  zeroes the slot).

Python value conventions (same as pyarrow ``to_pylist()``; None is null):
BOOLEAN bool; integer types int; FLOAT/DOUBLE float; DECIMAL ``Decimal`` (encoder also takes int/str/float
and rounds HALF_UP to the type's scale); CHAR/VARCHAR str; BINARY/VARBINARY bytes; DATE ``date`` (or int
days); TIME ``time`` (or int millis of day); TIMESTAMP naive ``datetime`` or ``pandas.Timestamp`` (kept to
the nanosecond); TIMESTAMP_LTZ aware datetime (converted to UTC; naive is taken as UTC). The decoder returns
naive datetimes for TIMESTAMP, UTC-aware ones for TIMESTAMP_LTZ, and a ``pandas.Timestamp`` whenever the
value has sub-microsecond nanos. ARRAY list; MAP dict (encoder also takes a list of pairs, as pyarrow gives);
MULTISET dict element -> count; ROW tuple (encoder also takes a list, or a dict keyed by field name).
"""
from __future__ import annotations

import decimal
import struct
from collections.abc import Mapping
from datetime import date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Any, Callable, Sequence

import numpy as np
import pyarrow as pa

from paimon_ops.errors import CorruptMetadataError, FormatError, UnsupportedError
from paimon_ops.format.types import DataType

__all__ = [
    "EMPTY_ROW", "RowCodec", "row_codec", "encode_row", "serialize_row", "decode_row", "deserialize_row",
    "deserialize_row_untyped_arity", "null_bits_width", "row_hash", "hash_bytes", "bucket_of", "row_hashes",
    "bucket_ids", "hive_bucket", "mod_bucket", "decimal_to_unscaled", "timestamp_to_millis_nanos",
    "date_to_days", "time_to_millis",
]

# ---------------------------------------------------------------- constants

_B = struct.Struct("<b")
_H = struct.Struct("<h")
_I = struct.Struct("<i")
_U32 = struct.Struct("<I")
_Q = struct.Struct("<q")
_UQ = struct.Struct("<Q")
_F = struct.Struct("<f")
_D = struct.Struct("<d")
_ARITY = struct.Struct(">i")

EMPTY_ROW: bytes = b"\x00" * 12  # arity 0 (BE) + 8-byte header, §5.5

_ZEROS = [bytes(i) for i in range(17)]
_EPOCH_ORDINAL = 719163  # date(1970, 1, 1).toordinal()
_EPOCH = datetime(1970, 1, 1)
_EPOCH_UTC = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MILLIS_PER_DAY = 86_400_000
_MAX_INLINE = 7
_MASK32 = 0xFFFFFFFF
# Decimal arithmetic must never round silently: 38-digit values and their rescaling need headroom.
_DEC_CTX = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, Emax=999_999, Emin=-999_999)
_RESERVING_ROOTS = ("DECIMAL", "TIMESTAMP", "TIMESTAMP_LTZ")


def null_bits_width(arity: int) -> int:
    """Bytes of header + null bits of a BinaryRow with `arity` fields (§5.1)."""
    return ((arity + 63 + 8) // 64) * 8


def _round8(n: int) -> int:
    return (n + 7) & ~7


class _Bad(Exception):
    """Internal: inconsistent bytes while decoding (turned into CorruptMetadataError at the API edge)."""


# ---------------------------------------------------------------- scalar conversions (public helpers)

def decimal_to_unscaled(value: Any, precision: int, scale: int) -> int:
    """Unscaled integer of `value` rounded HALF_UP to `scale` (Java Decimal.fromBigDecimal); ValueError if it
    does not fit DECIMAL(precision, scale)."""
    if isinstance(value, Decimal):
        d = value
    elif isinstance(value, int) and not isinstance(value, bool):
        d = Decimal(value)
    elif isinstance(value, str):
        d = Decimal(value.strip())
    elif isinstance(value, float):
        d = Decimal(repr(value))
    else:
        # numpy / pyarrow scalars and other numbers: go through their exact string form
        d = Decimal(str(value))
    if not d.is_finite():
        raise FormatError(f"{value!r} is not a finite decimal")
    try:
        q = d.quantize(Decimal((0, (1,), -scale)), context=_DEC_CTX)
        unscaled = int(q.scaleb(scale, context=_DEC_CTX))
    except decimal.InvalidOperation as e:
        raise FormatError(f"{value!r} does not fit DECIMAL({precision}, {scale})") from e
    if abs(unscaled) >= 10**precision:
        raise FormatError(f"{value!r} does not fit DECIMAL({precision}, {scale})")
    return unscaled


def _unscaled_to_decimal(unscaled: int, scale: int) -> Decimal:
    # the string form keeps the exponent exact (Decimal('12345E-2') == Decimal('123.45'), exponent -2)
    return Decimal(f"{unscaled}E-{scale}")


def date_to_days(value: Any) -> int:
    """Days since 1970-01-01 of a date (or datetime: its date part), or an int day number as-is."""
    if isinstance(value, date):
        return value.toordinal() - _EPOCH_ORDINAL
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"expected datetime.date or int days, got {type(value).__name__}")


def time_to_millis(value: Any) -> int:
    """Millis of day of a time (sub-millisecond digits truncated, as Java does), or an int as-is."""
    if isinstance(value, time):
        return value.hour * 3_600_000 + value.minute * 60_000 + value.second * 1000 + value.microsecond // 1000
    if isinstance(value, timedelta):
        return value // timedelta(milliseconds=1)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    raise TypeError(f"expected datetime.time or int millis, got {type(value).__name__}")


def timestamp_to_millis_nanos(value: Any, ltz: bool = False) -> tuple[int, int]:
    """(epoch millis, nano of millisecond) of a timestamp value, as Java's Timestamp.fromLocalDateTime /
    fromInstant: millis is floored, nanos are 0..999_999.

    TIMESTAMP (``ltz=False``) takes a naive datetime (its wall clock read as UTC); TIMESTAMP_LTZ takes an
    aware datetime (converted to UTC) or a naive one (taken as UTC). ``pandas.Timestamp`` keeps its nanos."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            if not ltz:
                raise FormatError(f"TIMESTAMP (without time zone) needs a naive datetime, got {value!r}")
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        micros = (
            ((value.toordinal() - _EPOCH_ORDINAL) * 86400 + value.hour * 3600 + value.minute * 60 + value.second)
            * 1_000_000
            + value.microsecond
        )
        nanos = micros * 1000 + getattr(value, "nanosecond", 0)  # pandas.Timestamp carries nanosecond
        return divmod(nanos, 1_000_000)
    if isinstance(value, np.datetime64):
        nanos = int(value.astype("datetime64[ns]").astype(np.int64))
        return divmod(nanos, 1_000_000)
    raise TypeError(f"expected datetime.datetime or pandas.Timestamp, got {type(value).__name__}")


def _timestamp_from(millis: int, nano: int, ltz: bool) -> Any:
    if nano % 1000:
        import pandas as pd  # only needed for sub-microsecond values

        ts = pd.Timestamp(millis * 1_000_000 + nano, unit="ns")
        return ts.tz_localize("UTC") if ltz else ts
    return (_EPOCH_UTC if ltz else _EPOCH) + timedelta(microseconds=millis * 1000 + nano // 1000)


def _java_big_bytes(unscaled: int) -> bytes:
    """Java BigInteger.toByteArray(): minimal big-endian two's complement (-128 -> 80, not ff80), §5.2."""
    bits = (unscaled if unscaled >= 0 else ~unscaled).bit_length()
    return unscaled.to_bytes(bits // 8 + 1, "big", signed=True)


# ---------------------------------------------------------------- per-type field codecs

Writer = Callable[[bytearray, int, Any], None]
Reader = Callable[[bytes, int, int, int], Any]


class _Field:
    """How one field (row slot or array element) is written and read.

    write(buf, slot, value): buf is the structure being built (row or array), so var-part offsets are
    len(buf) at append time, relative to the structure start, exactly as Java's writers compute them.
    read(data, base, slot, end): base/end delimit the enclosing structure inside data."""

    __slots__ = ("type", "write", "read", "size", "reserve")

    def __init__(self, t: DataType, write: Writer, read: Reader, size: int = 8, reserve: int = 0) -> None:
        self.type = t
        self.write = write
        self.read = read
        self.size = size  # element width inside a BinaryArray (§5.2 ARRAY)
        self.reserve = reserve  # zero bytes a *null* of this type reserves in a row's variable part


def _put_inline_or_var(buf: bytearray, slot: int, data: bytes) -> None:
    """Java AbstractBinaryWriter.writeString/writeBinary: <= 7 bytes inline, else the variable part."""
    n = len(data)
    if n <= _MAX_INLINE:
        buf[slot:slot + n] = data
        buf[slot + 7] = 0x80 | n
    else:
        _put_var(buf, slot, data)


def _put_var(buf: bytearray, slot: int, data: bytes | bytearray) -> None:
    """Java writeSegmentsToVarLenPart: append, zero-pad to 8, slot = offset << 32 | length."""
    n = len(data)
    off = len(buf)
    buf += data
    pad = (-n) & 7
    if pad:
        buf += _ZEROS[pad]
    _UQ.pack_into(buf, slot, (off << 32) | n)


def _var_region(data: bytes, base: int, slot: int, end: int) -> tuple[int, int]:
    """(start, stop) of a value stored in the variable part (inline form not allowed)."""
    (word,) = _UQ.unpack_from(data, slot)
    if word >> 63:
        raise _Bad(f"slot at byte {slot} has the inline mark but the type is never stored inline")
    start = base + (word >> 32)
    stop = start + (word & _MASK32)
    if stop > end:
        raise _Bad(f"variable-length field at byte {slot} points to [{start}, {stop}) beyond {end}")
    return start, stop


def _read_bytes(data: bytes, base: int, slot: int, end: int) -> bytes:
    (word,) = _UQ.unpack_from(data, slot)
    if word >> 63:
        n = (word >> 56) & 0x7F
        if n > _MAX_INLINE:
            raise _Bad(f"inline string/binary at byte {slot} claims {n} > 7 bytes")
        return bytes(data[slot:slot + n])
    start = base + (word >> 32)
    stop = start + (word & _MASK32)
    if stop > end:
        raise _Bad(f"string/binary at byte {slot} points to [{start}, {stop}) beyond {end}")
    return bytes(data[start:stop])


def _w_bool(buf: bytearray, slot: int, v: Any) -> None:
    buf[slot] = 1 if v else 0


def _fixed(st: struct.Struct, conv: Callable[[Any], Any] | None = None) -> tuple[Writer, Reader]:
    pack_into, unpack_from = st.pack_into, st.unpack_from
    if conv is None:
        def w(buf: bytearray, slot: int, v: Any) -> None:
            pack_into(buf, slot, v)
    else:
        def w(buf: bytearray, slot: int, v: Any) -> None:
            pack_into(buf, slot, conv(v))

    def r(data: bytes, base: int, slot: int, end: int) -> Any:
        return unpack_from(data, slot)[0]

    return w, r


_NAN = float("nan")  # packs to Java's canonical NaN bits (0x7fc00000 / 0x7ff8000000000000)


def _canonical_float(v: Any) -> float:
    # Java's binary writers replace any NaN by Float.NaN / Double.NaN (canonical bits)
    f = float(v)
    return _NAN if f != f else f


def _w_str(buf: bytearray, slot: int, v: Any) -> None:
    # errors="replace" turns lone surrogates into '?', like Java's String -> UTF-8 encoder
    data = v.encode("utf-8", "replace") if isinstance(v, str) else bytes(v)
    _put_inline_or_var(buf, slot, data)


def _r_str(data: bytes, base: int, slot: int, end: int) -> str:
    return _read_bytes(data, base, slot, end).decode("utf-8", "replace")


def _w_bin(buf: bytearray, slot: int, v: Any) -> None:
    _put_inline_or_var(buf, slot, v.encode("utf-8") if isinstance(v, str) else bytes(v))


def _r_date(data: bytes, base: int, slot: int, end: int) -> date:
    days = _I.unpack_from(data, slot)[0]
    try:
        return date.fromordinal(days + _EPOCH_ORDINAL)
    except (ValueError, OverflowError):
        raise _Bad(f"DATE day number {days} is outside Python's date range") from None


def _r_time(data: bytes, base: int, slot: int, end: int) -> time:
    ms = _I.unpack_from(data, slot)[0]
    if not 0 <= ms < _MILLIS_PER_DAY:
        raise _Bad(f"TIME value {ms} ms is not a time of day")
    return time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)


def _decimal_field(t: DataType) -> _Field:
    p, s = t.precision or 10, t.scale or 0
    if p <= 18:
        def w(buf: bytearray, slot: int, v: Any) -> None:
            _Q.pack_into(buf, slot, decimal_to_unscaled(v, p, s))

        def r(data: bytes, base: int, slot: int, end: int) -> Decimal:
            return _unscaled_to_decimal(_Q.unpack_from(data, slot)[0], s)

        return _Field(t, w, r)

    def w_big(buf: bytearray, slot: int, v: Any) -> None:
        raw = _java_big_bytes(decimal_to_unscaled(v, p, s))
        off = len(buf)
        buf += raw
        buf += _ZEROS[16 - len(raw)]  # Java always reserves a zeroed 16-byte region
        _UQ.pack_into(buf, slot, (off << 32) | len(raw))

    def r_big(data: bytes, base: int, slot: int, end: int) -> Decimal:
        start, stop = _var_region(data, base, slot, end)
        if not 1 <= stop - start <= 16:
            raise _Bad(f"DECIMAL({p}, {s}) at byte {slot} has {stop - start} bytes (expected 1..16)")
        return _unscaled_to_decimal(int.from_bytes(data[start:stop], "big", signed=True), s)

    return _Field(t, w_big, r_big, reserve=16)


def _timestamp_field(t: DataType) -> _Field:
    p = 6 if t.precision is None else t.precision
    ltz = t.root == "TIMESTAMP_LTZ"
    if p <= 3:
        def w(buf: bytearray, slot: int, v: Any) -> None:
            _Q.pack_into(buf, slot, timestamp_to_millis_nanos(v, ltz)[0])

        def r(data: bytes, base: int, slot: int, end: int) -> Any:
            return _ts_checked(_Q.unpack_from(data, slot)[0], 0, ltz)

        return _Field(t, w, r)

    def w_nc(buf: bytearray, slot: int, v: Any) -> None:
        millis, nano = timestamp_to_millis_nanos(v, ltz)
        off = len(buf)
        buf += _Q.pack(millis)
        _UQ.pack_into(buf, slot, (off << 32) | nano)

    def r_nc(data: bytes, base: int, slot: int, end: int) -> Any:
        (word,) = _UQ.unpack_from(data, slot)
        start = base + (word >> 32)
        nano = word & _MASK32
        if start + 8 > end:
            raise _Bad(f"TIMESTAMP({p}) at byte {slot} points to {start} beyond {end}")
        if nano > 999_999:
            raise _Bad(f"TIMESTAMP({p}) at byte {slot} has nano-of-millisecond {nano} > 999999")
        return _ts_checked(_Q.unpack_from(data, start)[0], nano, ltz)

    return _Field(t, w_nc, r_nc, reserve=8)


def _ts_checked(millis: int, nano: int, ltz: bool) -> Any:
    try:
        return _timestamp_from(millis, nano, ltz)
    except (OverflowError, ValueError) as e:
        raise _Bad(f"timestamp {millis} ms is outside the supported range: {e}") from None


def _unsupported_field(t: DataType) -> _Field:
    # Such columns can only appear as (null) placeholders, e.g. in all-mode stats rows.
    def w(buf: bytearray, slot: int, v: Any) -> None:
        raise UnsupportedError(f"cannot encode a non-null {t} value in a BinaryRow")

    def r(data: bytes, base: int, slot: int, end: int) -> Any:
        raise _Bad(f"cannot decode a non-null {t} value from a BinaryRow")

    return _Field(t, w, r)


def _make_field(t: DataType) -> _Field:
    root = t.root
    if root == "BOOLEAN":
        return _Field(t, _w_bool, lambda d, b, s, e: d[s] != 0, size=1)
    if root == "TINYINT":
        return _Field(t, *_fixed(_B), size=1)
    if root == "SMALLINT":
        return _Field(t, *_fixed(_H), size=2)
    if root == "INT":
        return _Field(t, *_fixed(_I), size=4)
    if root == "BIGINT":
        return _Field(t, *_fixed(_Q), size=8)
    if root == "FLOAT":
        return _Field(t, *_fixed(_F, _canonical_float), size=4)
    if root == "DOUBLE":
        return _Field(t, *_fixed(_D, _canonical_float), size=8)
    if root == "DATE":
        w, _ = _fixed(_I, date_to_days)
        return _Field(t, w, _r_date, size=4)
    if root == "TIME":
        w, _ = _fixed(_I, time_to_millis)
        return _Field(t, w, _r_time, size=4)
    if root in ("CHAR", "VARCHAR"):
        return _Field(t, _w_str, _r_str)
    if root in ("BINARY", "VARBINARY", "BLOB", "GEOMETRY", "GEOGRAPHY"):
        return _Field(t, _w_bin, _read_bytes)
    if root == "DECIMAL":
        return _decimal_field(t)
    if root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return _timestamp_field(t)
    if root == "ARRAY":
        return _array_field(t)
    if root in ("MAP", "MULTISET"):
        return _map_field(t)
    if root == "ROW":
        return _row_field(t)
    return _unsupported_field(t)


def _array_field(t: DataType) -> _Field:
    elem = _field_for(t.element)  # type: ignore[arg-type]

    def w(buf: bytearray, slot: int, v: Any) -> None:
        _put_var(buf, slot, _encode_array(v, elem))

    def r(data: bytes, base: int, slot: int, end: int) -> list[Any]:
        start, stop = _var_region(data, base, slot, end)
        return _decode_array(data, start, stop, elem)

    return _Field(t, w, r)


def _map_field(t: DataType) -> _Field:
    if t.root == "MULTISET":
        kf, vf = _field_for(t.element), _field_for(DataType("INT", nullable=False))  # type: ignore[arg-type]
    else:
        kf, vf = _field_for(t.key), _field_for(t.value)  # type: ignore[arg-type]

    def w(buf: bytearray, slot: int, v: Any) -> None:
        items = list(v.items()) if isinstance(v, Mapping) else [tuple(p) for p in v]
        keys = _encode_array([k for k, _ in items], kf)
        vals = _encode_array([x for _, x in items], vf)
        # BinaryMap: 4-byte key-array size, key BinaryArray, value BinaryArray
        _put_var(buf, slot, _I.pack(len(keys)) + keys + vals)

    def r(data: bytes, base: int, slot: int, end: int) -> Any:
        start, stop = _var_region(data, base, slot, end)
        if stop - start < 4:
            raise _Bad(f"map at byte {start} is shorter than its 4-byte header")
        ksize = _I.unpack_from(data, start)[0]
        if ksize < 0 or start + 4 + ksize > stop:
            raise _Bad(f"map at byte {start} has key-array size {ksize} beyond its {stop - start} bytes")
        keys = _decode_array(data, start + 4, start + 4 + ksize, kf)
        vals = _decode_array(data, start + 4 + ksize, stop, vf)
        if len(keys) != len(vals):
            raise _Bad(f"map at byte {start} has {len(keys)} keys but {len(vals)} values")
        try:
            return dict(zip(keys, vals))
        except TypeError:  # unhashable keys (e.g. ARRAY keys): keep the pairs
            return list(zip(keys, vals))

    return _Field(t, w, r)


def _row_field(t: DataType) -> _Field:
    codec = row_codec([f.type for f in t.fields])
    names = [f.name for f in t.fields]

    def w(buf: bytearray, slot: int, v: Any) -> None:
        values = [v.get(n) for n in names] if isinstance(v, Mapping) else v
        _put_var(buf, slot, codec._encode(values))

    def r(data: bytes, base: int, slot: int, end: int) -> tuple[Any, ...]:
        start, stop = _var_region(data, base, slot, end)
        return tuple(codec._decode(data, start, stop))

    return _Field(t, w, r)


_FIELD_CACHE: dict[DataType, _Field] = {}


def _field_for(t: DataType) -> _Field:
    f = _FIELD_CACHE.get(t)
    if f is None:
        f = _make_field(t)
        if len(_FIELD_CACHE) > 4096:
            _FIELD_CACHE.clear()
        _FIELD_CACHE[t] = f
    return f


# ---------------------------------------------------------------- arrays

def _encode_array(values: Any, elem: _Field) -> bytearray:
    """Java BinaryArrayWriter layout: int32 count, null bits in 4-byte words, elements, variable part."""
    values = list(values)
    n = len(values)
    header = 4 + ((n + 31) // 32) * 4
    size = elem.size
    buf = bytearray(_round8(header + size * n))
    _I.pack_into(buf, 0, n)
    write = elem.write
    pos = header
    for i, v in enumerate(values):
        if v is None:
            buf[4 + (i >> 3)] |= 1 << (i & 7)  # element slot stays zero (Java setNull*)
        else:
            write(buf, pos, v)
        pos += size
    return buf


def _decode_array(data: bytes, start: int, stop: int, elem: _Field) -> list[Any]:
    if stop - start < 4:
        raise _Bad(f"array at byte {start} is shorter than its 4-byte header")
    n = _I.unpack_from(data, start)[0]
    header = 4 + ((n + 31) // 32) * 4
    size = elem.size
    if n < 0 or start + header + size * n > stop:
        raise _Bad(f"array at byte {start} claims {n} elements, more than its {stop - start} bytes hold")
    read = elem.read
    out: list[Any] = []
    pos = start + header
    nulls = start + 4
    for i in range(n):
        if data[nulls + (i >> 3)] & (1 << (i & 7)):
            out.append(None)
        else:
            out.append(read(data, start, pos, stop))
        pos += size
    return out


# ---------------------------------------------------------------- rows

class RowCodec:
    """Encoder/decoder for one row type; get it once with `row_codec(types)` in hot loops."""

    __slots__ = ("types", "_fields", "_arity", "_width", "_fixed")

    def __init__(self, types: Sequence[DataType]) -> None:
        self.types = tuple(types)
        self._fields = tuple(_field_for(t) for t in self.types)
        self._arity = len(self.types)
        self._width = null_bits_width(self._arity)
        self._fixed = self._width + 8 * self._arity

    # -- encoding
    def encode(self, values: Sequence[Any]) -> bytes:
        """BinaryRow bytes (row kind +I, no arity prefix)."""
        return bytes(self._encode(values))

    def serialize(self, values: Sequence[Any]) -> bytes:
        """4-byte big-endian arity + row bytes (SerializationUtils.serializeBinaryRow, §5.4)."""
        return _ARITY.pack(self._arity) + self._encode(values)

    def _encode(self, values: Sequence[Any]) -> bytearray:
        fields = self._fields
        if len(values) != self._arity:
            raise FormatError(f"row has {len(values)} values but the row type has {self._arity} fields")
        buf = bytearray(self._fixed)
        slot = self._width
        i = 0
        try:
            for i, v in enumerate(values):
                if v is None:
                    buf[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
                    reserve = fields[i].reserve
                    if reserve:  # null non-compact decimal/timestamp keeps its region (§5.2)
                        off = len(buf)
                        buf += _ZEROS[reserve]
                        _UQ.pack_into(buf, slot, off << 32)
                else:
                    fields[i].write(buf, slot, v)
                slot += 8
        except UnsupportedError:
            raise
        except (struct.error, OverflowError, TypeError, ValueError, AttributeError, decimal.InvalidOperation) as e:
            raise FormatError(f"cannot encode field {i} ({self.types[i]}) value {values[i]!r}: {e}") from e
        return buf

    # -- decoding
    def decode(self, row_bytes: bytes, path: str = "") -> list[Any]:
        try:
            return self._decode(row_bytes, 0, len(row_bytes))
        except _Bad as e:
            raise CorruptMetadataError(path, f"invalid BinaryRow: {e}") from None
        except (struct.error, IndexError) as e:
            raise CorruptMetadataError(path, f"truncated BinaryRow: {e}") from None

    def deserialize(self, data: bytes, path: str = "") -> list[Any]:
        if len(data) < 4:
            raise CorruptMetadataError(path, f"serialized BinaryRow has {len(data)} bytes, less than its arity prefix")
        arity = _ARITY.unpack_from(data, 0)[0]
        if arity != self._arity:
            raise CorruptMetadataError(path, f"serialized BinaryRow has arity {arity}, expected {self._arity}")
        try:
            return self._decode(data, 4, len(data))
        except _Bad as e:
            raise CorruptMetadataError(path, f"invalid BinaryRow: {e}") from None
        except (struct.error, IndexError) as e:
            raise CorruptMetadataError(path, f"truncated BinaryRow: {e}") from None

    def _decode(self, data: bytes, base: int, end: int) -> list[Any]:
        arity = self._arity
        if base + self._fixed > end:
            raise _Bad(f"{end - base} bytes cannot hold a row of {arity} fields ({self._fixed} bytes fixed part)")
        if data[base] > 3:
            raise _Bad(f"row kind byte {data[base]} is not one of 0..3")
        out: list[Any] = [None] * arity
        fields = self._fields
        slot = base + self._width
        for i in range(arity):
            if not data[base + ((i + 8) >> 3)] & (1 << ((i + 8) & 7)):
                out[i] = fields[i].read(data, base, slot, end)
            slot += 8
        return out


_CODECS_BY_ID: dict[tuple[int, ...], tuple[tuple[DataType, ...], RowCodec]] = {}
_CODECS: dict[tuple[DataType, ...], RowCodec] = {}


def row_codec(types: Sequence[DataType]) -> RowCodec:
    """Cached codec for a row type. Lookup is by object identity first (no recursive DataType hashing on the
    hot path); the cache entry holds the DataType objects, so their ids cannot be reused while cached."""
    key = tuple(map(id, types))
    hit = _CODECS_BY_ID.get(key)
    if hit is not None:
        return hit[1]
    ts = tuple(types)
    codec = _CODECS.get(ts)
    if codec is None:
        if len(_CODECS) > 1024:
            _CODECS.clear()
        codec = _CODECS[ts] = RowCodec(ts)
    if len(_CODECS_BY_ID) > 1024:
        _CODECS_BY_ID.clear()
    _CODECS_BY_ID[key] = (ts, codec)
    return codec


def encode_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """BinaryRow bytes of `values` (no arity prefix), byte-exact with Java's code-generated projection."""
    return row_codec(types).encode(values)


def serialize_row(values: Sequence[Any], types: Sequence[DataType]) -> bytes:
    """4-byte big-endian arity + BinaryRow bytes, as stored in Avro bytes fields (§5.4)."""
    return row_codec(types).serialize(values)


def decode_row(row_bytes: bytes, types: Sequence[DataType], path: str = "") -> list[Any]:
    """Values of BinaryRow bytes (no arity prefix); CorruptMetadataError(path, ...) on inconsistent bytes."""
    return row_codec(types).decode(row_bytes, path)


def deserialize_row(data: bytes, types: Sequence[DataType], path: str = "") -> list[Any]:
    """Values of a serialized BinaryRow (arity prefix + row); the arity must equal len(types)."""
    return row_codec(types).deserialize(data, path)


def deserialize_row_untyped_arity(data: bytes, path: str = "") -> int:
    """Arity of a serialized BinaryRow, checking the bytes can hold its fixed part."""
    if len(data) < 4:
        raise CorruptMetadataError(path, f"serialized BinaryRow has {len(data)} bytes, less than its arity prefix")
    arity = _ARITY.unpack_from(data, 0)[0]
    if arity < 0:
        raise CorruptMetadataError(path, f"serialized BinaryRow has negative arity {arity}")
    need = null_bits_width(arity) + 8 * arity
    if len(data) - 4 < need:
        raise CorruptMetadataError(
            path, f"serialized BinaryRow of arity {arity} needs {need} bytes, has {len(data) - 4}"
        )
    return arity


# ---------------------------------------------------------------- hashing (§6.1, §12)

_C1, _C2, _C3 = 0xCC9E2D51, 0x1B873593, 0xE6546B64


def _fmix(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h - 0x100000000 if h & 0x80000000 else h


def _mix_words(h: int, data: bytes | memoryview, nbytes: int) -> int:
    for (k,) in _U32.iter_unpack(data[:nbytes]):
        k = (k * _C1) & _MASK32
        k = ((k << 15) | (k >> 17)) & _MASK32
        h ^= (k * _C2) & _MASK32
        h = ((h << 13) | (h >> 19)) & _MASK32
        h = (h * 5 + _C3) & _MASK32
    return h


def row_hash(row_bytes: bytes) -> int:
    """BinaryRow.hashCode(): MurmurHashUtils.hashBytesByWords(row bytes without arity prefix, seed 42),
    as a signed int32."""
    n = len(row_bytes)
    if n & 3:
        raise FormatError(f"BinaryRow bytes must be a multiple of 4 long, got {n}")
    return _fmix(_mix_words(42, row_bytes, n), n)


def hash_bytes(data: bytes) -> int:
    """MurmurHashUtils.hashBytes(seed 42): words as Murmur3, then each tail byte *sign-extended* and mixed as
    a full block (Java's non-standard tail), signed int32."""
    n = len(data)
    aligned = n - (n & 3)
    h = _mix_words(42, data, aligned)
    for b in data[aligned:]:
        k = ((b - 256 if b > 127 else b) * _C1) & _MASK32
        k = ((k << 15) | (k >> 17)) & _MASK32
        h ^= (k * _C2) & _MASK32
        h = ((h << 13) | (h >> 19)) & _MASK32
        h = (h * 5 + _C3) & _MASK32
    return _fmix(h, n)


def bucket_of(row_bytes: bytes, num_buckets: int) -> int:
    """Default bucket function: Java Math.abs(hash % n) (== abs(hash) % n in Python, also for -2**31)."""
    if num_buckets <= 0:
        raise FormatError(f"number of buckets must be positive, got {num_buckets}")
    return abs(row_hash(row_bytes)) % num_buckets


def mod_bucket(value: Any, num_buckets: int) -> int:
    """`bucket-function.type = mod` (1.3+): Math.floorMod(value, n) of the single INT/BIGINT bucket key.
    A null key reads as 0 from the BinaryRow in Java, hence bucket 0."""
    if num_buckets <= 0:
        raise FormatError(f"number of buckets must be positive, got {num_buckets}")
    return 0 if value is None else int(value) % num_buckets


def _i32(x: int) -> int:
    x &= _MASK32
    return x - 0x100000000 if x & 0x80000000 else x


def _java_bigint_hash(v: int) -> int:
    """java.math.BigInteger.hashCode(): 31-polynomial over big-endian 32-bit magnitude words, times signum."""
    mag = abs(v)
    h = 0
    nwords = (mag.bit_length() + 31) // 32
    for i in range(nwords - 1, -1, -1):
        h = (31 * h + ((mag >> (32 * i)) & _MASK32)) & _MASK32
    return _i32(-h if v < 0 else h)


def _hive_decimal_hash(unscaled: int, scale: int) -> int:
    """HiveHasher.normalizeDecimal(bd).hashCode() (BigDecimal.hashCode = 31 * unscaled.hashCode() + scale)."""
    if unscaled == 0:
        return 0  # BigDecimal.ZERO: 31 * 0 + 0
    while scale > 0 and unscaled % 10 == 0:  # stripTrailingZeros, then setScale(0) if negative
        unscaled //= 10
        scale -= 1
    int_digits = len(str(abs(unscaled))) - scale
    if int_digits > 38:
        raise FormatError("decimal has more than 38 integer digits, Hive cannot hash it")
    max_scale = min(38, 38 - int_digits, scale)
    if scale > max_scale:
        q = _unscaled_to_decimal(unscaled, scale).quantize(Decimal((0, (1,), -max_scale)), context=_DEC_CTX)
        return _hive_decimal_hash(int(q.scaleb(max_scale, context=_DEC_CTX)), max_scale)
    return _i32(31 * _java_bigint_hash(unscaled) + scale)


def _hive_field_hash(v: Any, t: DataType) -> int:
    if v is None:
        return 0
    r = t.root
    if r == "BOOLEAN":
        return 1 if v else 0
    if r in ("TINYINT", "SMALLINT", "INT"):
        return int(v)
    if r == "DATE":
        return date_to_days(v)
    if r == "TIME":
        return time_to_millis(v)
    if r == "BIGINT":
        x = int(v) & 0xFFFFFFFFFFFFFFFF
        return _i32(x ^ (x >> 32))  # Long.hashCode
    if r == "FLOAT":
        f = float(v)
        if f == 0.0:
            return 0
        return _i32(0x7FC00000 if f != f else _U32.unpack(_F.pack(f))[0])  # floatToIntBits canonical NaN
    if r == "DOUBLE":
        f = float(v)
        if f == 0.0:
            return 0
        x = 0x7FF8000000000000 if f != f else _UQ.unpack(_D.pack(f))[0]
        return _i32(x ^ (x >> 32))
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        data = v.encode("utf-8", "replace") if isinstance(v, str) else bytes(v)
        h = 0
        for b in data:
            h = (31 * h + (b - 256 if b > 127 else b)) & _MASK32
        return _i32(h)
    if r == "DECIMAL":
        return _hive_decimal_hash(decimal_to_unscaled(v, t.precision or 10, t.scale or 0), t.scale or 0)
    raise UnsupportedError(f"type {t} is not supported as a bucket key by the hive bucket function")


def hive_bucket(values: Sequence[Any], types: Sequence[DataType], num_buckets: int) -> int:
    """`bucket-function.type = hive` (1.4+, HiveBucketFunction): h = 31 * h + fieldHash over the bucket-key
    fields (seed 0), then (h & 0x7fffffff) % n."""
    if num_buckets <= 0:
        raise FormatError(f"number of buckets must be positive, got {num_buckets}")
    h = 0
    for v, t in zip(values, types, strict=True):
        h = (31 * h + _hive_field_hash(v, t)) & _MASK32
    return (h & 0x7FFFFFFF) % num_buckets


# ---------------------------------------------------------------- vectorised row hashing / bucketing

_CHUNK_ROWS = 1 << 16  # bounds the temporary memory of the vectorised path
_NP_C1, _NP_C2, _NP_C3 = np.uint32(_C1), np.uint32(_C2), np.uint32(_C3)
_NP_F1, _NP_F2 = np.uint32(0x85EBCA6B), np.uint32(0xC2B2AE35)
_VEC_FIXED = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "TIME"}
_VEC_BYTES = {"CHAR", "VARCHAR", "BINARY", "VARBINARY"}


class _NotVectorisable(Exception):
    pass


class _ColSpec:
    """One column of the row matrix: null mask, 8-byte slot values and optional variable-part payload."""

    __slots__ = ("null", "slot", "var_len", "var_rows", "var_i64", "src", "src_start", "src_len")

    def __init__(self, null: np.ndarray, slot: np.ndarray) -> None:
        self.null = null
        self.slot = slot
        self.var_len: np.ndarray | None = None  # bytes each row reserves in the variable part (padded)
        self.var_rows: np.ndarray | None = None  # rows whose slot gets `offset << 32`
        self.var_i64: np.ndarray | None = None  # one int64 payload per row (non-compact timestamps)
        self.src: np.ndarray | None = None  # byte payload source (long strings)
        self.src_start: np.ndarray | None = None
        self.src_len: np.ndarray | None = None


def _vectorisable(t: DataType) -> bool:
    r = t.root
    return (
        r in _VEC_FIXED or r in _VEC_BYTES or r in ("TIMESTAMP", "TIMESTAMP_LTZ")
        or (r == "DECIMAL" and (t.precision or 10) <= 18)
    )


def _as_array(col: Any) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    elif not isinstance(col, pa.Array):
        col = pa.array(col)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    return col


def _nulls(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _numbers(arr: pa.Array, target: pa.DataType, dtype: Any) -> np.ndarray:
    if arr.type != target:
        arr = arr.cast(target)  # safe cast: out-of-range values raise instead of wrapping
    if arr.null_count:
        arr = arr.fill_null(False if pa.types.is_boolean(target) else 0)
    return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=dtype)


def _epoch_units(arr: pa.Array) -> tuple[np.ndarray, str]:
    """int64 values and unit of a timestamp/time column."""
    typ = arr.type
    if not (pa.types.is_timestamp(typ) or pa.types.is_time(typ)):
        raise _NotVectorisable
    unit = typ.unit
    ints = arr.cast(pa.int64() if pa.types.is_timestamp(typ) or pa.types.is_time64(typ) else pa.int32())
    return _numbers(ints, ints.type, np.int64), unit


_NS_PER = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1000, "ns": 1}


def _spec_for(arr: pa.Array, t: DataType) -> _ColSpec:
    r = t.root
    null = _nulls(arr)
    n = len(arr)
    if r == "BOOLEAN":
        slot = _numbers(arr, pa.bool_(), bool).astype(np.uint64)
    elif r == "TINYINT":
        slot = _numbers(arr, pa.int8(), np.int8).view(np.uint8).astype(np.uint64)
    elif r == "SMALLINT":
        slot = _numbers(arr, pa.int16(), np.int16).view(np.uint16).astype(np.uint64)
    elif r == "INT":
        slot = _numbers(arr, pa.int32(), np.int32).view(np.uint32).astype(np.uint64)
    elif r == "BIGINT":
        slot = _numbers(arr, pa.int64(), np.int64).view(np.uint64)
    elif r == "FLOAT":
        f32 = _numbers(arr, pa.float32(), np.float32)
        slot = np.where(np.isnan(f32), np.uint32(0x7FC00000), f32.view(np.uint32)).astype(np.uint64)
    elif r == "DOUBLE":
        f64 = _numbers(arr, pa.float64(), np.float64)
        slot = np.where(np.isnan(f64), np.uint64(0x7FF8000000000000), f64.view(np.uint64))
    elif r == "DATE":
        if pa.types.is_date64(arr.type):
            arr = arr.cast(pa.date32())
        if pa.types.is_date32(arr.type):
            arr = arr.cast(pa.int32())
        slot = _numbers(arr, pa.int32(), np.int32).view(np.uint32).astype(np.uint64)
    elif r == "TIME":
        if pa.types.is_integer(arr.type):
            ms = _numbers(arr, pa.int32(), np.int64)
        else:
            vals, unit = _epoch_units(arr)
            ms = vals * _NS_PER[unit] // 1_000_000 if unit in ("s", "ms") else vals // (1_000_000 // _NS_PER[unit])
        slot = ms.astype(np.int32).view(np.uint32).astype(np.uint64)
    elif r == "DECIMAL":
        p, s = t.precision or 10, t.scale or 0
        if not pa.types.is_decimal128(arr.type) or arr.type.scale != s:
            arr = arr.cast(pa.decimal128(max(p, 18), s))
        lo = np.frombuffer(arr.buffers()[1], dtype="<i8", count=2 * (arr.offset + n))[2 * arr.offset::2]
        slot = lo.view(np.uint64).copy()  # low 64 bits == unscaled long for compact decimals
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        vals, unit = _epoch_units(arr)
        if not pa.types.is_timestamp(arr.type):
            raise _NotVectorisable
        per = _NS_PER[unit]
        if per >= 1_000_000:
            millis, nano = vals * (per // 1_000_000), np.zeros(n, dtype=np.int64)
        else:
            div = 1_000_000 // per
            millis, nano = np.floor_divide(vals, div), np.remainder(vals, div) * per
        millis = np.where(null, 0, millis)
        if (t.precision if t.precision is not None else 6) <= 3:
            slot = millis.view(np.uint64)
        else:
            spec = _ColSpec(null, np.where(null, 0, nano).astype(np.uint64))
            spec.var_len = np.full(n, 8, dtype=np.int64)
            spec.var_rows = np.ones(n, dtype=bool)  # nulls reserve too (§5.2)
            spec.var_i64 = millis.astype(np.int64)
            return spec
    elif r in _VEC_BYTES:
        return _bytes_spec(arr, null)
    else:
        raise _NotVectorisable
    slot = np.where(null, np.uint64(0), slot)
    return _ColSpec(null, slot)


def _bytes_spec(arr: pa.Array, null: np.ndarray) -> _ColSpec:
    typ = arr.type
    n = len(arr)
    if pa.types.is_fixed_size_binary(typ):
        width = typ.byte_width
        bufs = arr.buffers()
        data = np.frombuffer(bufs[1], dtype=np.uint8) if bufs[1] is not None else np.zeros(0, np.uint8)
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * width
        lens = np.full(n, width, dtype=np.int64)
    else:
        if not (pa.types.is_string(typ) or pa.types.is_binary(typ)
                or pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)):
            try:
                arr = arr.cast(pa.large_binary())
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                raise _NotVectorisable from None
            typ = arr.type
        bufs = arr.buffers()
        odt = np.int64 if (pa.types.is_large_string(typ) or pa.types.is_large_binary(typ)) else np.int32
        offs = np.frombuffer(bufs[1], dtype=odt, count=arr.offset + n + 1)[arr.offset:].astype(np.int64)
        data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
        starts = offs[:-1]
        lens = offs[1:] - starts
    lens = np.where(null, 0, lens)
    inline = (lens <= _MAX_INLINE) & ~null
    long_rows = lens > _MAX_INLINE
    # inline slot: bytes 0..len-1 = data, byte 7 = 0x80 | len (§5.2)
    mat = np.zeros((n, 8), dtype=np.uint8)
    if inline.any():
        k = np.arange(_MAX_INLINE, dtype=np.int64)
        take = (k[None, :] < lens[:, None]) & inline[:, None]
        padded = np.concatenate([data, np.zeros(8, np.uint8)])
        idx = np.where(take, starts[:, None] + k[None, :], len(padded) - 1)
        mat[:, :_MAX_INLINE] = padded[idx]
        mat[:, 7] = np.where(inline, 0x80 | lens, 0).astype(np.uint8)
    slot = mat.view("<u8").reshape(n).astype(np.uint64)
    slot = np.where(long_rows, lens.astype(np.uint64), slot)
    spec = _ColSpec(null, slot)
    if long_rows.any():
        spec.var_len = np.where(long_rows, (lens + 7) & ~7, 0)
        spec.var_rows = long_rows
        spec.src, spec.src_start, spec.src_len = data, starts, lens
    return spec


def _flat_rows(specs: list[_ColSpec], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All rows' BinaryRow bytes concatenated (each row 8-aligned): (uint8 buffer, row starts, row sizes)."""
    arity = len(specs)
    width = null_bits_width(arity)
    cursor = np.full(n, width + 8 * arity, dtype=np.int64)
    var_offsets: list[np.ndarray | None] = []
    for spec in specs:
        if spec.var_len is None:
            var_offsets.append(None)
            continue
        off = cursor.copy()
        cursor += spec.var_len
        var_offsets.append(off)
        assert spec.var_rows is not None
        spec.slot = np.where(spec.var_rows, spec.slot | (off.astype(np.uint64) << np.uint64(32)), spec.slot)
    sizes = cursor
    starts = np.zeros(n, dtype=np.int64)
    if n > 1:
        np.cumsum(sizes[:-1], out=starts[1:])
    total = int(sizes.sum())
    words = np.zeros(total // 8, dtype="<u8")
    w0 = starts // 8
    for w in range(width // 8):
        hw = np.zeros(n, dtype=np.uint64)
        for i, spec in enumerate(specs):
            if (i + 8) // 64 == w:
                hw |= spec.null.astype(np.uint64) << np.uint64((i + 8) % 64)
        words[w0 + w] = hw
    base = w0 + width // 8
    for i, spec in enumerate(specs):
        words[base + i] = spec.slot
    flat = words.view(np.uint8)
    for spec, var_off in zip(specs, var_offsets):
        if var_off is None:
            continue
        off = var_off
        if spec.var_i64 is not None:
            words[(starts + off) // 8] = spec.var_i64.view(np.uint64)
        else:
            assert spec.var_rows is not None
            rows = np.nonzero(spec.var_rows)[0]
            lens = spec.src_len[rows]  # type: ignore[index]
            total_b = int(lens.sum())
            seg = np.cumsum(lens) - lens
            intra = np.arange(total_b, dtype=np.int64) - np.repeat(seg, lens)
            dst = np.repeat(starts[rows] + off[rows], lens) + intra
            src = np.repeat(spec.src_start[rows], lens) + intra  # type: ignore[index]
            flat[dst] = spec.src[src]  # type: ignore[index]
    return flat, starts, sizes


def _np_mix(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    k = k * _NP_C1
    k = (k << np.uint32(15)) | (k >> np.uint32(17))
    k = k * _NP_C2
    h = h ^ k
    h = (h << np.uint32(13)) | (h >> np.uint32(19))
    return h * np.uint32(5) + _NP_C3


def _np_murmur(flat: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """hashBytesByWords(seed 42) of every row, vectorised across rows (one numpy pass per word position)."""
    n = len(starts)
    words = flat.view("<u4")
    nwords = sizes // 4
    h = np.full(n, 42, dtype=np.uint32)
    if n:
        lo, hi = int(nwords.min()), int(nwords.max())
        if lo == hi:  # all rows the same size: a plain matrix
            m = words.reshape(n, hi)
            for j in range(hi):
                h = _np_mix(h, m[:, j])
        else:  # rows sorted by length (desc): the rows still active at word j are a prefix
            order = np.argsort(-nwords, kind="stable")
            sw = (starts // 4)[order]
            neg = -nwords[order]
            hs = np.full(n, 42, dtype=np.uint32)
            for j in range(hi):
                cnt = n if j < lo else int(np.searchsorted(neg, -j, side="left"))
                hs[:cnt] = _np_mix(hs[:cnt], words[sw[:cnt] + j])
            h[order] = hs
    h = h ^ sizes.astype(np.uint32)
    h ^= h >> np.uint32(16)
    h *= _NP_F1
    h ^= h >> np.uint32(13)
    h *= _NP_F2
    h ^= h >> np.uint32(16)
    return h.view(np.int32)


def _pylist_rows(columns: list[pa.Array]) -> list[tuple[Any, ...]]:
    return list(zip(*(c.to_pylist() for c in columns)))


def row_hashes(columns: Sequence[Any], types: Sequence[DataType]) -> np.ndarray:
    """BinaryRow.hashCode() of every row formed by `columns` (pyarrow arrays, one per field), int32 array.

    Vectorised with numpy (rows are laid out in one flat buffer, then Murmur3 runs word position by word
    position across all rows) for BOOLEAN, TINYINT, SMALLINT, INT, BIGINT, FLOAT, DOUBLE, DATE, TIME,
    compact DECIMAL (p <= 18), TIMESTAMP/TIMESTAMP_LTZ of any precision and CHAR/VARCHAR/BINARY/VARBINARY
    of any length, nulls included. Any other field type (non-compact DECIMAL, ARRAY/MAP/ROW, ...) or an
    unexpected Arrow type makes the call fall back to the per-row encoder (`encode_row` + `row_hash`)."""
    types = list(types)
    cols = [_as_array(c) for c in columns]
    if len(cols) != len(types):
        raise FormatError(f"{len(cols)} columns for {len(types)} types")
    n = len(cols[0]) if cols else 0
    if any(len(c) != n for c in cols):
        raise FormatError("columns have different lengths")
    if not cols:
        return np.full(0, 0, dtype=np.int32)
    if all(_vectorisable(t) for t in types):
        out = np.empty(n, dtype=np.int32)
        try:
            for lo in range(0, n, _CHUNK_ROWS):
                part = [c.slice(lo, _CHUNK_ROWS) for c in cols]
                m = len(part[0])
                specs = [_spec_for(c, t) for c, t in zip(part, types)]
                flat, starts, sizes = _flat_rows(specs, m)
                out[lo:lo + m] = _np_murmur(flat, starts, sizes)
            return out
        except (_NotVectorisable, pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass  # fall back; the per-row encoder reports genuinely invalid values with a clear message
    codec = row_codec(types)
    return np.fromiter((row_hash(codec.encode(r)) for r in _pylist_rows(cols)), dtype=np.int32, count=n)


def bucket_ids(
    columns: Sequence[Any], types: Sequence[DataType], num_buckets: int, function: str = "default"
) -> np.ndarray:
    """Bucket of every row of the bucket-key `columns` (int32 array), as Java assigns it (§6.2).

    function: `bucket-function.type` — "default" (abs(hash % n), vectorised via `row_hashes`), "mod"
    (floorMod of the single INT/BIGINT key, vectorised) or "hive" (per-row Python loop)."""
    if num_buckets <= 0:
        raise FormatError(f"number of buckets must be positive, got {num_buckets}")
    function = function.lower()
    if function == "default":
        h = row_hashes(columns, types).astype(np.int64)
        return (np.abs(h) % num_buckets).astype(np.int32)
    if function == "mod":
        if len(types) != 1 or types[0].root not in ("INT", "BIGINT"):
            raise FormatError("the mod bucket function needs exactly one INT or BIGINT bucket key")
        vals = _numbers(_as_array(columns[0]), pa.int64(), np.int64)  # nulls read as 0 like Java
        return np.mod(vals, num_buckets).astype(np.int32)
    if function == "hive":
        cols = [_as_array(c) for c in columns]
        return np.fromiter(
            (hive_bucket(r, types, num_buckets) for r in _pylist_rows(cols)), dtype=np.int32,
            count=len(cols[0]) if cols else 0,
        )
    raise FormatError(f"unknown bucket function {function!r} (expected default, mod or hive)")
