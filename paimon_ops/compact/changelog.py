"""Changelog produced by compaction, vectorised over one merge slice (maintenance.md §5.11; Java:
LookupChangelogMergeFunctionWrapper, FullChangelogMergeFunctionWrapper, FirstRowMergeFunctionWrapper).

Per key, with BEFORE the old visible record and AFTER the merged result:

* ``lookup`` producer: only keys that have a level-0 record in the compaction. BEFORE = the record of the
  shallowest level >= 1 among the inputs, else the one looked up above the output level (a retract BEFORE counts
  as none).
* ``full-compaction`` producer (output = max level): every key. BEFORE = the input record of the max level. A key
  with a single record emits only an INSERT, and only when that record is not the max-level one.
* then: no BEFORE and AFTER is an add -> +I(AFTER); BEFORE and AFTER is a retract -> -D(BEFORE); both adds ->
  -U(BEFORE), +U(AFTER), unless ``changelog-producer.row-deduplicate`` finds their values equal (ignoring
  ``changelog-producer.row-deduplicate-ignore-fields``, master; 0.9 has no ignore list).
* ``first-row`` (with the lookup producer): a key with no record above level 0 that is not found above the output
  level emits its result as is.

Rows come out in key order, -U before +U, each with the sequence number of the record it copies.

Java difference: 0.9's LookupChangelogMergeFunctionWrapper takes as BEFORE the newest level >= 1 record in merge
order, master (apache/paimon#5632) the shallowest level; both are the same record unless two levels hold the key with the deeper
one winning the merge order, which compaction never produces. We follow master, like the merge engines.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.merge.groups import Groups, as_array, changed_from_previous

SEQ, KIND, LEVEL = "_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL"
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
_M = "__paimon_ops_m"
_G = "__paimon_ops_g"
_R = "__paimon_ops_r"


@dataclass
class KeyInfo:
    """Per distinct key of a slice of records (sorted by key): what the changelog rules need."""

    keys: pa.Table             # one row per key, sorted
    has_l0: np.ndarray         # a level-0 record exists
    has_high: np.ndarray       # a record of level >= 1 exists
    count: np.ndarray          # number of records
    high: np.ndarray           # row (in records) of the shallowest level >= 1 record, -1 if none
    top: np.ndarray            # row (in records) of the max-level record, -1 if none

    @property
    def n(self) -> int:
        return self.keys.num_rows


def key_info(records: pa.Table, keys: list[str], max_level: int) -> KeyInfo:
    n = records.num_rows
    if n == 0:
        empty = np.zeros(0, np.int64)
        return KeyInfo(records.select(keys), empty.astype(bool), empty.astype(bool), empty, empty, empty)
    perm = pc.sort_indices(records.select(keys), sort_keys=[(k, "ascending") for k in keys]).to_numpy().astype(np.int64)
    is_start = np.zeros(n, dtype=bool)
    is_start[0] = True
    for k in keys:
        is_start[1:] |= changed_from_previous(pc.take(as_array(records.column(k)), pa.array(perm)))
    g = Groups.from_boundaries(is_start)
    levels = as_array(records.column(LEVEL)).to_numpy(zero_copy_only=False).astype(np.int64)[perm]
    has_l0 = g.any(levels == 0)
    high_mask = levels > 0
    has_high = g.any(high_mask)
    big = np.int64(np.iinfo(np.int64).max)
    min_level = np.minimum.reduceat(np.where(high_mask, levels, big), g.starts)
    first_high = g.first(high_mask & (levels == g.broadcast(min_level)))
    first_top = g.first(levels == max_level)
    high = np.where(first_high >= 0, perm[np.maximum(first_high, 0)], -1)
    top = np.where(first_top >= 0, perm[np.maximum(first_top, 0)], -1)
    return KeyInfo(records.select(keys).take(pa.array(perm[g.starts])), has_l0, has_high, g.sizes, high, top)


def rows_with_keys(table: pa.Table, keys: list[str], key_table: pa.Table) -> np.ndarray:
    """Boolean mask of the rows of `table` whose key is in `key_table` (key columns only: joins stay narrow)."""
    out = np.zeros(table.num_rows, dtype=bool)
    if not table.num_rows or not key_table.num_rows:
        return out
    left = table.select(keys).append_column(_R, pa.array(np.arange(table.num_rows, dtype=np.int64)))
    j = left.join(key_table.select(keys), keys, join_type="left semi", use_threads=False)
    out[j.column(_R).to_numpy()] = True
    return out


def align(merged: pa.Table, info: KeyInfo, keys: list[str]) -> np.ndarray:
    """Key index (into `info`) of every merged row."""
    out = np.full(merged.num_rows, -1, np.int64)
    if not merged.num_rows:
        return out
    m = merged.select(keys).append_column(_M, pa.array(np.arange(merged.num_rows, dtype=np.int64)))
    g = info.keys.append_column(_G, pa.array(np.arange(info.n, dtype=np.int64)))
    j = m.join(g, keys, join_type="inner", use_threads=False)
    out[j.column(_M).to_numpy()] = j.column(_G).to_numpy()
    return out


def _is_add(kinds: pa.Array | pa.ChunkedArray) -> np.ndarray:
    k = as_array(kinds).to_numpy(zero_copy_only=False)
    return (k == INSERT) | (k == UPDATE_AFTER)


def rows_equal(a: pa.Table, b: pa.Table, columns: list[str]) -> np.ndarray:
    """Row-wise equality of two aligned tables over `columns` (null equals null), like Java's RecordEqualiser."""
    eq = np.ones(a.num_rows, dtype=bool)
    for c in columns:
        x, y = as_array(a.column(c)), as_array(b.column(c))
        try:
            e = pc.fill_null(pc.equal(x, y), False).to_numpy(zero_copy_only=False)
            e = e | (x.is_null().to_numpy(zero_copy_only=False) & y.is_null().to_numpy(zero_copy_only=False))
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
            # nested types have no Arrow equality kernel: compare their Python values (only with row-deduplicate)
            e = np.fromiter((u == v for u, v in zip(x.to_pylist(), y.to_pylist())), dtype=bool, count=len(x))
        eq &= e
    return eq


def _with_kind(t: pa.Table, kind: np.ndarray | int) -> pa.Table:
    i = t.schema.get_field_index(KIND)
    arr = pa.array(np.broadcast_to(np.asarray(kind, np.int8), (t.num_rows,)).copy(), pa.int8())
    return t.set_column(i, t.schema.field(i), arr)


def _emit(records: pa.Table, merged: pa.Table, columns: list[str], m_rows: np.ndarray, before: np.ndarray,
          dedup_columns: list[str] | None) -> pa.Table | None:
    """Changelog rows for merged rows `m_rows` with BEFORE rows `before` (-1: none) in `records`."""
    if not len(m_rows):
        return None
    after_add = _is_add(merged.column(KIND))[m_rows]
    has_before = before >= 0
    b_idx = np.maximum(before, 0)
    ins = ~has_before & after_add
    dele = has_before & ~after_add
    upd = has_before & after_add
    if dedup_columns is not None and upd.any():
        u = np.flatnonzero(upd)
        same = rows_equal(records.select(dedup_columns).take(pa.array(b_idx[u])),
                          merged.select(dedup_columns).take(pa.array(m_rows[u])), dedup_columns)
        upd[u[same]] = False
    parts, order = [], []
    if ins.any():
        parts.append(_with_kind(merged.select(columns).take(pa.array(m_rows[ins])), INSERT))
        order.append(np.flatnonzero(ins) * 2 + 1)
    if dele.any():
        parts.append(_with_kind(records.select(columns).take(pa.array(b_idx[dele])), DELETE))
        order.append(np.flatnonzero(dele) * 2)
    if upd.any():
        parts.append(_with_kind(records.select(columns).take(pa.array(b_idx[upd])), UPDATE_BEFORE))
        order.append(np.flatnonzero(upd) * 2)
        parts.append(_with_kind(merged.select(columns).take(pa.array(m_rows[upd])), UPDATE_AFTER))
        order.append(np.flatnonzero(upd) * 2 + 1)
    if not parts:
        return None
    out = pa.concat_tables([p.cast(parts[0].schema) for p in parts])
    return out.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))


def lookup_changelog(records: pa.Table, merged: pa.Table, info: KeyInfo, keys: list[str], columns: list[str],
                     dedup_columns: list[str] | None) -> pa.Table | None:
    """LookupChangelogMergeFunctionWrapper.setChangelog for every key with a level-0 record."""
    g = align(merged, info, keys)
    ok = g >= 0
    ok[ok] = info.has_l0[g[ok]]
    m_rows = np.flatnonzero(ok)
    before = info.high[g[m_rows]] if len(m_rows) else np.zeros(0, np.int64)
    if len(before):
        kinds_before = _is_add(records.column(KIND))
        before = np.where((before >= 0) & kinds_before[np.maximum(before, 0)], before, -1)
    return _emit(records, merged, columns, m_rows, before, dedup_columns)


def full_changelog(records: pa.Table, merged: pa.Table, info: KeyInfo, keys: list[str], columns: list[str],
                   dedup_columns: list[str] | None) -> pa.Table | None:
    """FullChangelogMergeFunctionWrapper for an output at the max level: BEFORE = the max-level record."""
    g = align(merged, info, keys)
    ok = g >= 0
    # one record that is the max-level record itself: nothing changed
    ok[ok] = ~((info.count[g[ok]] == 1) & (info.top[g[ok]] >= 0))
    m_rows = np.flatnonzero(ok)
    before = info.top[g[m_rows]] if len(m_rows) else np.zeros(0, np.int64)
    return _emit(records, merged, columns, m_rows, before, dedup_columns)


def first_row_changelog(merged: pa.Table, info: KeyInfo, eligible: np.ndarray, keys: list[str],
                        columns: list[str]) -> pa.Table | None:
    """FirstRowMergeFunctionWrapper: the result of a new key (no record above level 0, none found) as is."""
    g = align(merged, info, keys)
    ok = g >= 0
    ok[ok] = eligible[g[ok]]
    if not ok.any():
        return None
    return merged.select(columns).filter(pa.array(ok))


__all__ = ["KeyInfo", "key_info", "rows_with_keys", "align", "rows_equal", "lookup_changelog", "full_changelog",
           "first_row_changelog"]
