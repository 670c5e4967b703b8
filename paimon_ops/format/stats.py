"""Column statistics of data files (format.md §5.6–5.7): `_VALUE_STATS`, `_KEY_STATS`, `_MIN_KEY` / `_MAX_KEY`.

Follows Java Paimon (`StatsCollectorFactories`, `TruncateSimpleColStatsCollector`, `SimpleStatsConverter`, the
Parquet/ORC stats extractors):

* modes ``none`` (nothing), ``counts`` (null count), ``truncate(N)`` (default ``truncate(16)``), ``full``;
  per column ``fields.<col>.stats-mode`` wins over ``metadata.stats-mode``;
  ``metadata.stats-keep-first-n-columns`` turns the rest to ``none`` (only columns without a field mode count);
* 1.0+: system columns (``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND``) and, in thin-mode PK tables
  (`data-file.thin-mode`), value columns that are primary-key columns use ``truncate(128)`` unless a field mode is
  set (0.9 used the table mode for system columns);
* strings are truncated by code points: min = first N, max = first N with the last incrementable code point
  incremented, otherwise min and max become unknown (null) while the null count stays;
* min/max exist for BOOLEAN, integers, FLOAT/DOUBLE, DECIMAL, CHAR/VARCHAR, DATE, TIME, TIMESTAMP(_LTZ) with
  precision <= 6. BINARY/VARBINARY, TIMESTAMP(7..9) and composite types only get a null count (Java's Parquet
  extractor and truncate collector produce no min/max for them either);
* FLOAT/DOUBLE follow Java's `Double.compareTo` order, which predicates use: NaN is the largest value (max = NaN
  when any NaN is present, min ignores NaN unless every value is NaN) and -0.0 < 0.0.

Unknown stats are written as null min/max with the exact null count (never ``nullCount == rowCount`` unless the
column really is all null), or a null count of null in ``none`` mode.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, InvalidOptionError
from paimon_ops.format.binary_row import deserialize_row, serialize_row
from paimon_ops.format.manifest import SimpleStats
from paimon_ops.format.types import DataType
from paimon_ops.options import FIELD_STATS_MODE, METADATA_STATS_DENSE_STORE, METADATA_STATS_KEEP_FIRST_N_COLUMNS, METADATA_STATS_MODE, read

KEY_PREFIX = "_KEY_"
SYSTEM_COLUMNS = ("_SEQUENCE_NUMBER", "_VALUE_KIND")

SYSTEM_TRUNCATE = 128

_TRUNCATE = re.compile(r"^TRUNCATE\((\d+)\)$")
_MAX_CODE_POINT = 0x10FFFF

# Types whose min/max Java records (everything else: null count only).
_MINMAX_ROOTS = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL", "CHAR", "VARCHAR",
                 "DATE", "TIME"}


@dataclass(frozen=True)
class StatsMode:
    """One column's stats collector: kind in {'none', 'counts', 'truncate', 'full'}; `length` for truncate."""

    kind: str
    length: int | None = None

    def __str__(self) -> str:
        return f"truncate({self.length})" if self.kind == "truncate" else self.kind


NONE = StatsMode("none")
COUNTS = StatsMode("counts")
FULL = StatsMode("full")


def parse_stats_mode(text: str, option: str = METADATA_STATS_MODE.key) -> StatsMode:
    """`SimpleColStatsCollector.from`: case-insensitive none / counts / full / truncate(N), N > 0."""
    upper = str(text).strip().upper()
    if upper == "NONE":
        return NONE
    if upper == "COUNTS":
        return COUNTS
    if upper == "FULL":
        return FULL
    m = _TRUNCATE.match(upper)
    if m and int(m.group(1)) > 0:
        return StatsMode("truncate", int(m.group(1)))
    raise InvalidOptionError(option, text, "none, counts, full or truncate(N) with N > 0")


def _field_mode(options: dict[str, str], name: str) -> StatsMode | None:
    option = FIELD_STATS_MODE.of(name)
    raw = read(options, option)
    return None if raw is None else parse_stats_mode(raw, option.key)


def _keep_first_n(options: dict[str, str]) -> int:
    return read(options, METADATA_STATS_KEEP_FIRST_N_COLUMNS)


def dense_store(options: dict[str, str]) -> bool:
    """`metadata.stats-dense-store` (1.0+, default true). A 0.9 target must write all-mode stats regardless."""
    return read(options, METADATA_STATS_DENSE_STORE)


def column_stats_modes(names: Sequence[str], options: dict[str, str], key_names: Sequence[str] = ()) -> list[StatsMode]:
    """Stats mode per value column (`StatsCollectorFactories.createStatsFactories`, 1.0+ rules).

    `key_names`: trimmed primary-key columns of a thin-mode PK table (`data-file.thin-mode`: their value columns
    carry the key stats, so they get truncate(128) like `_KEY_*`). Java passes no key names otherwise (and 0.9 had no
    such rule), so the value columns of keys then use the table mode.
    """
    table_mode = parse_stats_mode(read(options, METADATA_STATS_MODE))
    keep = _keep_first_n(options)
    keys = set(key_names)
    modes: list[StatsMode] = []
    counted = 0
    for name in names:
        fm = _field_mode(options, name)
        if fm is not None:
            modes.append(fm)
            counted += 1
        elif name.startswith(KEY_PREFIX) or name in SYSTEM_COLUMNS or name in keys:
            modes.append(StatsMode("truncate", SYSTEM_TRUNCATE))
        else:
            modes.append(NONE if 0 <= keep <= counted else table_mode)
            counted += 1
    return modes


# ---------------------------------------------------------------- string truncation

def truncate_min(value: str, length: int) -> str:
    """First `length` code points (a lower bound)."""
    return value[:length]


def truncate_max(value: str, length: int) -> str | None:
    """Shortest upper bound of at most `length` code points, None if there is none (all code points maximal)."""
    if len(value) <= length:
        return value
    t = value[:length]
    for i in range(length - 1, -1, -1):
        nxt = ord(t[i]) + 1
        if nxt > _MAX_CODE_POINT:
            continue
        if 0xD800 <= nxt <= 0xDFFF:
            # Java would produce a lone surrogate here (not encodable as UTF-8); U+E000 is the next scalar value
            # and still a valid upper bound in UTF-8 byte order.
            nxt = 0xE000
        return t[:i] + chr(nxt)
    return None


# ---------------------------------------------------------------- per-column statistics

def has_minmax(t: DataType) -> bool:
    if t.root in _MINMAX_ROOTS:
        return True
    return t.root in ("TIMESTAMP", "TIMESTAMP_LTZ") and (t.precision or 0) <= 6


def _to_stats_value(v: Any, t: DataType) -> Any:
    """Arrow scalar value → what `serialize_row` takes (naive datetimes; LTZ as UTC wall clock)."""
    if v is None:
        return None
    if isinstance(v, _dt.datetime) and v.tzinfo is not None:
        return v.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return v


def float_min_max(col: pa.ChunkedArray | pa.Array) -> tuple[float, float]:
    """Min/max in Java `Double.compareTo` order: NaN largest, -0.0 < 0.0 (vectorised with numpy)."""
    vals = np.asarray(pc.drop_null(col).to_numpy(zero_copy_only=False), dtype=np.float64)
    nan = np.isnan(vals)
    finite = vals[~nan]
    if finite.size == 0:
        return math.nan, math.nan
    mn = float(finite.min())
    mx = float(finite.max())
    if mn == 0.0 or mx == 0.0:
        zeros = finite[finite == 0.0]
        neg = np.signbit(zeros)
        if mn == 0.0:
            mn = -0.0 if neg.any() else 0.0
        if mx == 0.0:
            mx = 0.0 if (~neg).any() else -0.0
    if nan.any():
        mx = math.nan
    return mn, mx


def column_stats(col: pa.ChunkedArray | pa.Array, t: DataType, mode: StatsMode) -> tuple[Any, Any, int | None]:
    """(min, max, null_count) of one column under `mode`; min/max are Python values ready for `serialize_row`."""
    if mode.kind == "none":
        return None, None, None
    nulls = col.null_count
    if mode.kind == "counts" or not has_minmax(t) or nulls == len(col):
        return None, None, nulls
    mn: Any
    mx: Any
    if t.root in ("FLOAT", "DOUBLE"):
        mn, mx = float_min_max(col)
        if t.root == "FLOAT":  # stored as float32 in the row: keep the exact float32 value
            mn, mx = float(np.float32(mn)), float(np.float32(mx))
        return mn, mx, nulls
    mm = pc.min_max(col)
    mn = _to_stats_value(mm["min"].as_py(), t)
    mx = _to_stats_value(mm["max"].as_py(), t)
    if mode.kind == "truncate" and t.root in ("CHAR", "VARCHAR"):
        assert mode.length is not None
        mn = truncate_min(mn, mode.length)
        mx = truncate_max(mx, mode.length)
        if mx is None:  # no upper bound: the whole min/max becomes unknown, the null count stays
            return None, None, nulls
    return mn, mx, nulls


def _nullable(types: Sequence[DataType]) -> list[DataType]:
    return [t.with_nullable(True) for t in types]


def _encode(mins: list[Any], maxs: list[Any], nulls: list[int | None], types: Sequence[DataType]) -> SimpleStats:
    nt = _nullable(types)
    return SimpleStats(serialize_row(mins, nt), serialize_row(maxs, nt), tuple(nulls))


def compute_stats(
    table: pa.Table,
    names: list[str],
    types: list[DataType],
    options: dict[str, str],
    dense: bool,
    key_names: Sequence[str] = (),
) -> tuple[SimpleStats, tuple[str, ...] | None]:
    """Value stats over `names` (typed `types`) of `table`, and the `_VALUE_STATS_COLS` to record.

    dense (1.0+ default): columns whose mode is `none` are left out; the returned column list is None when every
    column is present, else the names kept (possibly empty). All-mode (0.9, or dense store off): one entry per
    column, `none` columns as null/null/null, and the column list is None.
    """
    if len(names) != len(types):
        raise InvalidArgumentError(f"compute_stats: {len(names)} names but {len(types)} types")
    modes = column_stats_modes(names, options, key_names)
    kept_names: list[str] = []
    kept_types: list[DataType] = []
    mins: list[Any] = []
    maxs: list[Any] = []
    nulls: list[int | None] = []
    for name, t, mode in zip(names, types, modes):
        if dense and mode.kind == "none":
            continue
        mn, mx, nc = column_stats(table.column(name), t, mode)
        kept_names.append(name)
        kept_types.append(t)
        mins.append(mn)
        maxs.append(mx)
        nulls.append(nc)
    stats = _encode(mins, maxs, nulls, kept_types)
    if not dense or len(kept_names) == len(names):
        return stats, None
    return stats, tuple(kept_names)


def _key_column(table: pa.Table, name: str) -> pa.ChunkedArray:
    """`_KEY_<k>` when the table carries it, else the value column (thin layout / plain input)."""
    if KEY_PREFIX + name in table.column_names:
        return table.column(KEY_PREFIX + name)
    return table.column(name)


def key_stats(
    table: pa.Table,
    key_names: list[str],
    key_types: list[DataType],
    options: dict[str, str],
    legacy: bool = False,
    thin: bool = False,
) -> SimpleStats:
    """`_KEY_STATS` (always all-mode) over the trimmed primary key `key_names` (plain names, e.g. ``id``).

    1.0+: truncate(128) unless ``fields._KEY_<k>.stats-mode`` is set. `legacy=True` reproduces 0.9, where the
    `_KEY_<k>` columns used ``fields._KEY_<k>.stats-mode`` or the table's ``metadata.stats-mode``. `thin`
    (`data-file.thin-mode`): the key stats are the stats of the value columns (KeyValueThinDataFileWriterImpl), whose
    mode is ``fields.<k>.stats-mode`` or truncate(128).
    """
    table_mode = parse_stats_mode(read(options, METADATA_STATS_MODE)) if legacy else None
    mins, maxs, nulls = [], [], []
    for name, t in zip(key_names, key_types):
        mode = _field_mode(options, name if thin else KEY_PREFIX + name)
        if mode is None:
            mode = table_mode if table_mode is not None else StatsMode("truncate", SYSTEM_TRUNCATE)
        mn, mx, nc = column_stats(_key_column(table, name), t, mode)
        mins.append(mn)
        maxs.append(mx)
        nulls.append(nc)
    return _encode(mins, maxs, nulls, key_types)


def min_max_key(table: pa.Table, key_names: list[str], key_types: list[DataType]) -> tuple[bytes, bytes]:
    """`_MIN_KEY` / `_MAX_KEY`: the first and last row's trimmed key (the file is sorted by key) as BinaryRows."""
    n = table.num_rows
    if n == 0:
        raise InvalidArgumentError("min_max_key: a data file has at least one row")
    cols = [_key_column(table, k) for k in key_names]
    first = [_to_stats_value(c[0].as_py(), t) for c, t in zip(cols, key_types)]
    last = [_to_stats_value(c[n - 1].as_py(), t) for c, t in zip(cols, key_types)]
    return serialize_row(first, list(key_types)), serialize_row(last, list(key_types))


def decode_stats(stats: SimpleStats, types: list[DataType], path: str) -> tuple[list[Any], list[Any], list[int | None]]:
    """Decode min/max rows and null counts for `types` (the stats columns, in order)."""
    n = len(types)
    counts: list[int | None]
    if stats.null_counts is None:
        counts = [None] * n
    else:
        counts = list(stats.null_counts)
        if len(counts) != n and not (len(counts) == 0 and _arity(stats.min_values, path) == 0):
            raise CorruptMetadataError(path, f"stats have {len(counts)} null counts for {n} columns")
        if len(counts) == 0:
            counts = [None] * n
    if n and _arity(stats.min_values, path) == 0 and _arity(stats.max_values, path) == 0:
        return [None] * n, [None] * n, counts  # EMPTY_STATS: nothing known
    nt = _nullable(types)
    mins = deserialize_row(stats.min_values, nt, path)
    maxs = deserialize_row(stats.max_values, nt, path)
    return list(mins), list(maxs), counts


def _arity(row: bytes, path: str) -> int:
    if len(row) < 4:
        raise CorruptMetadataError(path, "stats row shorter than its 4-byte arity")
    return int.from_bytes(row[:4], "big", signed=True)


__all__ = [
    "StatsMode", "parse_stats_mode", "column_stats_modes", "dense_store", "truncate_min", "truncate_max",
    "column_stats", "compute_stats", "key_stats", "min_max_key", "decode_stats",
]
