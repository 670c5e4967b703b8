"""Vectorised building blocks: key groups over sorted records and per-group reductions."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

NONE = -1


@dataclass
class Groups:
    """Contiguous groups over `n` rows: group g spans rows [starts[g], starts[g] + sizes[g])."""

    starts: np.ndarray
    sizes: np.ndarray

    @property
    def ng(self) -> int:
        return len(self.starts)

    @cached_property
    def n(self) -> int:
        return int(self.sizes.sum())

    @cached_property
    def ends(self) -> np.ndarray:
        return self.starts + self.sizes

    @cached_property
    def gid(self) -> np.ndarray:
        """Group id of every row."""
        return np.repeat(np.arange(self.ng, dtype=np.int64), self.sizes)

    @cached_property
    def pos(self) -> np.ndarray:
        """Position of every row inside its group (0 = oldest)."""
        return np.arange(self.n, dtype=np.int64) - np.repeat(self.starts, self.sizes)

    @staticmethod
    def from_boundaries(is_start: np.ndarray) -> Groups:
        starts = np.flatnonzero(is_start).astype(np.int64)
        n = len(is_start)
        sizes = np.diff(np.append(starts, n)).astype(np.int64)
        return Groups(starts, sizes)

    @staticmethod
    def from_gid(gid: np.ndarray) -> Groups:
        """Groups of rows whose (sorted, non-decreasing) group ids are `gid`."""
        n = len(gid)
        if n == 0:
            return Groups(np.zeros(0, np.int64), np.zeros(0, np.int64))
        is_start = np.empty(n, dtype=bool)
        is_start[0] = True
        np.not_equal(gid[1:], gid[:-1], out=is_start[1:])
        return Groups.from_boundaries(is_start)

    # -- reductions (every group is non-empty)
    def first(self, mask: np.ndarray) -> np.ndarray:
        """Index of the first row with mask set in each group, or NONE."""
        if self.ng == 0:
            return np.zeros(0, np.int64)
        big = np.int64(self.n)
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), big)
        out = np.minimum.reduceat(idx, self.starts)
        out[out == big] = NONE
        return out

    def last(self, mask: np.ndarray) -> np.ndarray:
        """Index of the last row with mask set in each group, or NONE."""
        if self.ng == 0:
            return np.zeros(0, np.int64)
        idx = np.where(mask, np.arange(self.n, dtype=np.int64), np.int64(NONE))
        return np.maximum.reduceat(idx, self.starts)

    def count(self, mask: np.ndarray) -> np.ndarray:
        if self.ng == 0:
            return np.zeros(0, np.int64)
        return np.add.reduceat(mask.astype(np.int64), self.starts)

    def any(self, mask: np.ndarray) -> np.ndarray:
        return self.count(mask) > 0

    def broadcast(self, per_group: np.ndarray) -> np.ndarray:
        """Per-row view of a per-group array."""
        return per_group[self.gid]


# ------------------------------------------------------------------------------------------ arrow helpers

def as_array(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return col


def take(arr: pa.Array, idx: np.ndarray) -> pa.Array:
    """arr[idx] with NONE (-1) giving null."""
    missing = idx < 0
    if missing.any():
        ind = pa.array(np.where(missing, 0, idx), type=pa.int64(), mask=missing)
    else:
        ind = pa.array(idx, type=pa.int64())
    return pc.take(arr, ind)


def valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def bool_numpy(arr: pa.Array) -> np.ndarray:
    return np.asarray(pc.fill_null(arr, False).to_numpy(zero_copy_only=False), dtype=bool)


def changed_from_previous(arr: pa.Array) -> np.ndarray:
    """changed[i] (i >= 1): row i differs from row i-1 (null equals null; NaN equals NaN). Length len-1."""
    n = len(arr)
    if n <= 1:
        return np.zeros(max(n - 1, 0), dtype=bool)
    t = arr.type
    nulls = arr.null_count > 0
    if not nulls and (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)
                      or pa.types.is_temporal(t)):
        a = arr.to_numpy(zero_copy_only=False)
        out = a[1:] != a[:-1]
        if pa.types.is_floating(t):
            out &= ~(np.isnan(a[1:]) & np.isnan(a[:-1]))
        return np.asarray(out, dtype=bool)
    cur, prev = arr.slice(1), arr.slice(0, n - 1)
    ne = bool_numpy(pc.not_equal(cur, prev))
    if pa.types.is_floating(t):
        ne &= ~(bool_numpy(pc.is_nan(cur)) & bool_numpy(pc.is_nan(prev)))
    if nulls:
        cn, pn = ~valid_mask(cur), ~valid_mask(prev)
        ne = np.where(cn | pn, cn != pn, ne)
    return ne


def dense_rank(columns: list[pa.Array], ascending: bool = True) -> np.ndarray:
    """Dense rank of row tuples in lexicographic order, nulls smallest (Java's generated comparator)."""
    n = len(columns[0])
    if n == 0:
        return np.zeros(0, np.int64)
    order = "ascending" if ascending else "descending"
    t = pa.table({f"c{i}": c for i, c in enumerate(columns)})
    idx = pc.sort_indices(t, sort_keys=[(f"c{i}", order) for i in range(len(columns))],
                          null_placement="at_start").to_numpy()
    changed = np.zeros(n, dtype=bool)
    for c in columns:
        changed[1:] |= changed_from_previous(pc.take(c, idx))
    ranks_sorted = np.cumsum(changed).astype(np.int64)
    ranks = np.empty(n, dtype=np.int64)
    ranks[idx] = ranks_sorted
    return ranks


def list_array(offsets: np.ndarray, values: pa.Array, valid: np.ndarray | None, list_type: pa.DataType) -> pa.Array:
    """A list array with the given offsets (len = groups + 1) over `values`; invalid entries are null."""
    off = pa.array(offsets.astype(np.int32), type=pa.int32())
    mask = None if valid is None or valid.all() else pa.array(~valid)
    return pa.ListArray.from_arrays(off, values, type=list_type, mask=mask)


def segmented_sequential_sum(vals: np.ndarray, gid: np.ndarray, ng: int, small: int = 64) -> np.ndarray:
    """Per-group left-to-right sum in the dtype of `vals` (Java float/double addition order).

    numpy's add.reduceat sums floats pairwise, which rounds differently from Java's sequential fold.
    Rows of a group must be contiguous. Loop over positions inside groups (bounded by `small`), then one
    `add.accumulate` (sequential) call per larger group: no per-row Python work.
    """
    out = np.zeros(ng, dtype=vals.dtype)
    if len(vals) == 0:
        return out
    g = Groups.from_gid(gid)
    gids = gid[g.starts]
    acc = vals[g.starts].copy()
    sizes = g.sizes
    limit = min(int(sizes.max()), small)
    for k in range(1, limit):
        sel = np.flatnonzero(sizes > k)
        acc[sel] = acc[sel] + vals[g.starts[sel] + k]
    for j in np.flatnonzero(sizes > small):
        s, e = int(g.starts[j]), int(g.ends[j])
        acc[j] = np.add.accumulate(vals[s:e])[-1]
    out[gids] = acc
    return out
