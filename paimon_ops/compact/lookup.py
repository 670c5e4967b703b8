"""Lookups of level-0 keys in the levels above a compaction's output level (executor side; maintenance.md §5.10,
§5.11; Java: LookupLevels, LookupUtils, the Persist*Processor classes).

Java builds a local lookup file for every remote file it probes (the whole file is read and re-encoded). Here a
probe reads only the key columns of the higher-level files whose [min key, max key] range can hold a wanted key,
keeps them as a sorted key index (row positions alongside, deletion-vector-deleted rows left out), and matches
the wanted keys against it vectorised: ``numpy.searchsorted`` for a single integer-like key, an Arrow hash join on
the key window otherwise. Levels are probed shallowest first and a key found stops there (LookupUtils.lookup).
Full rows are read only when the caller needs the old values (changelog, non-deduplicate engines, sequence
fields) — and then only the Parquet row groups holding a match.

Memory: a small LRU of key indexes (the files of one level are probed in key order as the merge advances, so the
current file of each level stays cached); one index costs about 16 bytes per row for an integer key.
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from paimon_ops.format.binary_row import deserialize_row
from paimon_ops.format.datafile import format_of, output_arrow_schema, read_data_file, read_data_file_positions
from paimon_ops.format.deletion_vectors import DeletionVector
from paimon_ops.format.manifest import DataFileMeta

log = logging.getLogger(__name__)

LEVEL = "_LEVEL"
_POS = "__paimon_ops_pos"
_ROW = "__paimon_ops_row"
_INDEX_CACHE_FILES = 4


def row_tuple(t: pa.Table, i: int, keys: list[str]) -> tuple:
    return tuple(t.column(k)[i].as_py() for k in keys)


def bisect(t: pa.Table, keys: list[str], key: tuple, right: bool) -> int:
    """First row of the key-sorted table `t` whose key is > `key` (right) or >= `key` (left); O(log n) rows."""
    lo, hi = 0, t.num_rows
    while lo < hi:
        mid = (lo + hi) // 2
        k = row_tuple(t, mid, keys)
        if (k <= key) if right else (k < key):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _int_like(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) and not pa.types.is_uint64(t)) or pa.types.is_date(t) or pa.types.is_timestamp(t) \
        or pa.types.is_time(t)


def int_values(arr: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """int64 view of an integer-like key column (no nulls: primary keys are NOT NULL)."""
    if isinstance(arr, pa.ChunkedArray):
        # ChunkedArray.combine_chunks copies even a single chunk (~17 ms per 5 M keys)
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    t = arr.type
    if pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        arr = arr.view(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        arr = arr.view(pa.int32())
    return arr.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


@dataclass
class _File:
    meta: DataFileMeta
    path: str
    level: int
    lo: tuple
    hi: tuple
    dv: Callable[[], DeletionVector | None]


@dataclass
class _Index:
    keys: pa.Table                 # key columns, sorted, deleted rows removed
    pos: np.ndarray | None         # physical row position of each key row (None: no row removed, position = row)
    ints: np.ndarray | None = None  # single integer-like key: its int64 values

    def positions(self, rows: np.ndarray) -> np.ndarray:
        return rows.astype(np.int64, copy=False) if self.pos is None else self.pos[rows]


@dataclass
class Found:
    """Result of one probe: for each wanted key (in the order given), where it was found.

    `file[i]` is an index into `files` (-1: not found), `pos[i]` the physical row, `level[i]` its level."""

    files: list[str]
    file: np.ndarray
    pos: np.ndarray
    level: np.ndarray
    rows: pa.Table | None = None   # with_values: the found rows (table columns + system columns + _LEVEL), in
    #                                wanted-key order, one per found key
    marks: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def mask(self) -> np.ndarray:
        return self.file >= 0


class HigherLevels:
    """The files of the levels above an output level of one bucket, probed for keys."""

    def __init__(self, ctx: Any, files: list[tuple[DataFileMeta, str, Callable[[], DeletionVector | None]]],
                 key_names: list[str]):
        self.ctx = ctx
        self.table = ctx.table
        self.keys = key_names
        schema = self.table.schema
        self.key_types = [f.type for f in schema.fields_of(key_names)]
        self.levels: dict[int, list[_File]] = {}
        for meta, path, dv in files:
            lo = tuple(deserialize_row(meta.min_key, self.key_types, meta.file_name))
            hi = tuple(deserialize_row(meta.max_key, self.key_types, meta.file_name))
            self.levels.setdefault(meta.level, []).append(_File(meta, path, meta.level, lo, hi, dv))
        for fs in self.levels.values():
            fs.sort(key=lambda f: f.lo)
        self._cache: OrderedDict[str, _Index] = OrderedDict()
        self.files_indexed = 0
        self.rows_indexed = 0

    @property
    def empty(self) -> bool:
        return not self.levels

    # ------------------------------------------------------------------ key index of one file
    def _index(self, f: _File) -> _Index:
        name = f.meta.file_name
        hit = self._cache.get(name)
        if hit is not None:
            self._cache.move_to_end(name)
            return hit
        schema = self.table.schema
        file_schema = self.table.schemas.schema(f.meta.schema_id)
        with self.table.io.open_input(f.path) as src:
            keys = read_data_file(src, format_of(f.meta.file_name), file_schema, schema, True, f.path,
                                  keep_system_columns=False, projection=self.keys)
        n = keys.num_rows
        pos = None
        dv = f.dv()
        if dv is not None and dv.cardinality:
            keep = dv.keep_mask(n)
            keys = keys.filter(pa.array(keep))
            pos = np.flatnonzero(keep)
        idx = _Index(keys.combine_chunks(), pos)
        if len(self.keys) == 1 and keys.num_rows and _int_like(keys.schema.field(0).type):
            idx.ints = int_values(idx.keys.column(0))
        self._cache[name] = idx
        if len(self._cache) > _INDEX_CACHE_FILES:
            self._cache.popitem(last=False)
        self.files_indexed += 1
        self.rows_indexed += n
        return idx

    def _match(self, f: _File, want: pa.Table, want_ints: np.ndarray | None) -> np.ndarray:
        """Physical row position of each wanted key in file `f` (-1 when absent)."""
        idx = self._index(f)
        out = np.full(want.num_rows, -1, np.int64)
        if idx.keys.num_rows == 0:
            return out
        if idx.ints is not None and want_ints is not None:
            at = np.searchsorted(idx.ints, want_ints)
            at_c = np.minimum(at, len(idx.ints) - 1)
            hit = (at < len(idx.ints)) & (idx.ints[at_c] == want_ints)
            out[hit] = idx.positions(at_c[hit])
            return out
        lo = bisect(idx.keys, self.keys, row_tuple(want, 0, self.keys), right=False)
        hi = bisect(idx.keys, self.keys, row_tuple(want, want.num_rows - 1, self.keys), right=True)
        if hi <= lo:
            return out
        window = idx.keys.slice(lo, hi - lo).append_column(_POS, pa.array(idx.positions(np.arange(lo, hi))))
        w = want.select(self.keys).append_column(_ROW, pa.array(np.arange(want.num_rows, dtype=np.int64)))
        j = window.join(w, self.keys, join_type="inner", use_threads=False)
        if j.num_rows:
            out[j.column(_ROW).to_numpy()] = j.column(_POS).to_numpy()
        return out

    # ------------------------------------------------------------------ probing
    def probe(self, want: pa.Table, with_values: bool) -> Found:
        """Look up distinct keys `want` (key columns, sorted by key) in every level, shallowest first."""
        n = want.num_rows
        files: list[str] = []
        file_of = np.full(n, -1, np.int64)
        pos_of = np.full(n, -1, np.int64)
        level_of = np.full(n, -1, np.int64)
        if n == 0 or self.empty:
            return Found(files, file_of, pos_of, level_of, self._empty_rows() if with_values else None)
        want_ints = None
        if len(self.keys) == 1 and _int_like(want.schema.field(0).type):
            want_ints = int_values(want.column(0))
        by_file: dict[int, tuple[_File, np.ndarray]] = {}
        for level in sorted(self.levels):
            open_rows = np.flatnonzero(file_of < 0)
            if not len(open_rows):
                break
            kmin = row_tuple(want, int(open_rows[0]), self.keys)
            kmax = row_tuple(want, int(open_rows[-1]), self.keys)
            for f in self.levels[level]:
                if f.hi < kmin or f.lo > kmax:
                    continue
                a = bisect(want, self.keys, f.lo, right=False)
                b = bisect(want, self.keys, f.hi, right=True)
                if b <= a:
                    continue
                rows = np.arange(a, b, dtype=np.int64)
                rows = rows[file_of[a:b] < 0]
                if not len(rows):
                    continue
                sub = want.take(pa.array(rows))
                got = self._match(f, sub, None if want_ints is None else want_ints[rows])
                hit = got >= 0
                if not hit.any():
                    continue
                fi = len(files)
                files.append(f.meta.file_name)
                file_of[rows[hit]] = fi
                pos_of[rows[hit]] = got[hit]
                level_of[rows[hit]] = level
                by_file[fi] = (f, rows[hit])
        found = Found(files, file_of, pos_of, level_of)
        for f, rows in by_file.values():
            found.marks[f.meta.file_name] = np.sort(pos_of[rows])
        if with_values:
            found.rows = self._values(want, found, by_file)
        return found

    def _empty_rows(self) -> pa.Table:
        schema = output_arrow_schema(self.table.schema, True, True, None)
        t = schema.empty_table()
        t = t.drop_columns([c for c in t.column_names if c.startswith("_KEY_")])
        return t.append_column(pa.field(LEVEL, pa.int32(), False), pa.array([], pa.int32()))

    def _values(self, want: pa.Table, found: Found, by_file: dict[int, tuple[_File, np.ndarray]]) -> pa.Table:
        """Full rows of the found keys, ordered like the wanted keys."""
        parts: list[pa.Table] = []
        order: list[np.ndarray] = []
        schema = self.table.schema
        for f, rows in by_file.values():
            positions = found.pos[rows]
            sort = np.argsort(positions, kind="stable")
            file_schema = self.table.schemas.schema(f.meta.schema_id)
            with self.table.io.open_input(f.path) as src:
                t = read_data_file_positions(src, format_of(f.meta.file_name), file_schema, schema, True, f.path,
                                             positions[sort])
            t = t.drop_columns([c for c in t.column_names if c.startswith("_KEY_")])
            t = t.append_column(pa.field(LEVEL, pa.int32(), False),
                                pa.array(np.full(t.num_rows, f.level, np.int32)))
            parts.append(t)
            order.append(rows[sort])
        if not parts:
            return self._empty_rows()
        rows_all = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
        back = np.argsort(np.concatenate(order), kind="stable")
        return rows_all.take(pa.array(back))


__all__ = ["HigherLevels", "Found", "bisect", "row_tuple", "int_values", "LEVEL"]
