"""merge_records: sort, group by key, filter lookup levels, merge, assemble (maintenance.md §5.11, §6).

Pipeline (all vectorised, no per-record Python):
1. one multi-column sort: key ascending, user sequence fields (nulls first, asc/desc), _SEQUENCE_NUMBER,
   retract-before-add (Java: SortMergeReader + UserDefinedSeqComparator, nullsIsLast=false);
2. group boundaries where any key column changes;
3. lookup tables (not first-row, which Java does not wrap in LookupMergeFunction): keep level-0 records
   plus the first record of the shallowest level >= 1 per key (LookupMergeFunction.pickHighLevel);
4. ReducerMergeFunctionWrapper: a key with exactly one record (before level filtering) is emitted
   unchanged; every other key goes through the engine (engines.py);
5. results of kind -U/-D are dropped when drop_delete.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.errors import InvalidArgumentError
from paimon_ops.merge.engines import EngineResult, MergeInput, run_engine
from paimon_ops.merge.groups import Groups, as_array, changed_from_previous, take
from paimon_ops.merge.spec import MergeSpec

SEQ, KIND, LEVEL = "_SEQUENCE_NUMBER", "_VALUE_KIND", "_LEVEL"
_ADD = "__paimon_ops_is_add"


def merge_records(records: pa.Table, spec: MergeSpec, drop_delete: bool, *, lookup_rewrite: bool = False) -> pa.Table:
    """Merge all records of one bucket (or key range) into one row per key, as Java Paimon's merge would.

    `records` holds the table's columns plus _SEQUENCE_NUMBER (int64), _VALUE_KIND (int8: 0 +I, 1 -U, 2 +U,
    3 -D) and _LEVEL (int32), in any order. Returns the surviving rows sorted by key, without _LEVEL.

    `lookup_rewrite=True` reproduces Java's LookupChangelogMergeFunctionWrapper path, used for lookup tables
    (spec.needs_lookup) when a compaction reads level-0 files and writes to an output level > 0: every key goes
    through the merge function, even a single record (no ReducerMergeFunctionWrapper shortcut). The caller must
    then include, for keys whose inputs have no record of level >= 1, the record Java would look up in the
    levels above the output level (with its _LEVEL); the shallowest level >= 1 wins. For first-row the caller
    must instead drop keys that already exist above the output level (Java's contains-check).
    """
    missing = [c for c in (*spec.field_names, SEQ, KIND, LEVEL) if c not in records.column_names]
    if missing:
        raise InvalidArgumentError(f"{spec.where}: records to merge lack columns {missing}")
    out_cols = [c for c in records.column_names if c != LEVEL]
    records = records.combine_chunks()
    if records.num_rows == 0:
        return records.select(out_cols)

    kinds_arr = as_array(records.column(KIND))
    seq_arr = as_array(records.column(SEQ))
    if kinds_arr.null_count or seq_arr.null_count:
        raise InvalidArgumentError(f"{spec.where}: {KIND} and {SEQ} must not hold nulls")
    kinds = kinds_arr.to_numpy(zero_copy_only=False).astype(np.int8)
    if ((kinds < 0) | (kinds > 3)).any():
        raise InvalidArgumentError(f"{spec.where}: {KIND} must be 0..3 (+I, -U, +U, -D)")
    is_add = (kinds == 0) | (kinds == 2)
    seqnum = seq_arr.to_numpy(zero_copy_only=False).astype(np.int64)

    # 1. sort (a permutation; columns are only gathered when an engine needs them)
    perm = sort_permutation(records, spec, is_add, seqnum)

    # 2. key groups
    n = len(perm)
    is_start = np.zeros(n, dtype=bool)
    is_start[0] = True
    for k in spec.key_fields:
        is_start[1:] |= changed_from_previous(pc.take(as_array(records.column(k)), pa.array(perm)))
    groups = Groups.from_boundaries(is_start)

    # 3. ReducerMergeFunctionWrapper: one record (counted before level filtering) is emitted unchanged
    single = groups.sizes == 1
    if lookup_rewrite:
        single = np.zeros(groups.ng, dtype=bool)

    # 4. lookup-level filtering (LookupMergeFunction); first-row is not wrapped in Java.
    if spec.needs_lookup and spec.engine != "first-row":
        levels = as_array(records.column(LEVEL)).to_numpy(zero_copy_only=False).astype(np.int64)[perm]
        keep_rows = _lookup_keep(levels, groups)
        if not keep_rows.all():
            gid = groups.gid[keep_rows]
            perm = perm[keep_rows]
            groups = Groups.from_gid(gid)  # no key loses all its records: group ids are unchanged

    # 5. merge the keys with several records
    row_single = groups.broadcast(single)
    single_src = perm[row_single]
    single_gid = np.flatnonzero(single)
    merged: pa.Table | None = None
    merged_src: np.ndarray | None = None
    merged_gid = np.zeros(0, np.int64)
    if not row_single.all():
        merge_rows = ~row_single
        sub_perm = perm[merge_rows]
        ctx = MergeInput(spec, records, sub_perm, Groups.from_gid(groups.gid[merge_rows]),
                  kinds[sub_perm], is_add[sub_perm], seqnum[sub_perm])
        res = run_engine(ctx)
        merged_gid = np.flatnonzero(~single)[res.keep]
        if res.src is not None:
            merged_src = sub_perm[res.src[res.keep]]
        else:
            merged = _assemble(ctx, res, out_cols, records.schema)

    # 6. assemble in key order
    if merged is None:
        src = single_src if merged_src is None else np.concatenate([single_src, merged_src])
        gids = np.concatenate([single_gid, merged_gid])
        src = src[np.argsort(gids, kind="stable")]
        out = records.select(out_cols).take(pa.array(src))
    else:
        singles = records.select(out_cols).take(pa.array(single_src))
        out = pa.concat_tables([singles, merged]) if singles.num_rows else merged
        if singles.num_rows:
            out = out.take(pa.array(np.argsort(np.concatenate([single_gid, merged_gid]), kind="stable")))

    # 7. drop retract results
    if drop_delete and out.num_rows:
        k = as_array(out.column(KIND)).to_numpy(zero_copy_only=False)
        out = out.filter(pa.array((k == 0) | (k == 2)))
    return out.combine_chunks()


def sort_permutation(records: pa.Table, spec: MergeSpec, is_add: np.ndarray, seqnum: np.ndarray) -> np.ndarray:
    """Order: key asc, user sequence fields (nulls first, asc/desc), _SEQUENCE_NUMBER, retract before add.

    Integer-like sort columns whose value ranges fit in 63 bits are packed into one int64 and sorted once
    (~3x faster than a multi-column sort); anything else uses Arrow's multi-column stable sort.
    """
    cols: list[tuple[np.ndarray | None, np.ndarray | None, bool]] = []  # (values, nulls, descending)
    packable = True
    for k in spec.key_fields:
        cols.append((*_int_view(as_array(records.column(k))), False))
    for s in spec.sequence_fields:
        cols.append((*_int_view(as_array(records.column(s))), not spec.sequence_ascending))
    cols.append((seqnum, None, False))
    cols.append((is_add.astype(np.int64), None, False))
    codes: list[tuple[np.ndarray, int]] = []
    total = 0
    for vals, nulls, desc in cols:
        if vals is None:
            packable = False
            break
        has_null = nulls is not None and bool(nulls.any())
        live = vals[~nulls] if nulls is not None and has_null else vals
        if len(live) == 0:
            lo = hi = 0
        else:
            lo, hi = int(live.min()), int(live.max())
        span = hi - lo + (1 if has_null else 0)
        bits = span.bit_length()
        total += bits
        if total > 62:
            packable = False
            break
        code = (np.int64(hi) - vals) if desc else (vals - np.int64(lo))
        if nulls is not None and has_null:
            code = np.where(nulls, 0, code + 1)  # null sorts first in both directions (nullIsLast=false)
        codes.append((code.astype(np.int64), bits))
    if packable:
        packed = np.zeros(len(seqnum), dtype=np.int64)
        for code, bits in codes:
            packed = (packed << np.int64(bits)) | code
        return np.argsort(packed, kind="stable").astype(np.int64)
    work = records.append_column(_ADD, pa.array(is_add))
    keys = [(k, "ascending") for k in spec.key_fields]
    order = "ascending" if spec.sequence_ascending else "descending"
    keys += [(s, order) for s in spec.sequence_fields]
    keys += [(SEQ, "ascending"), (_ADD, "ascending")]
    return pc.sort_indices(work, sort_keys=keys, null_placement="at_start").to_numpy().astype(np.int64)


def _int_view(arr: pa.Array) -> tuple[np.ndarray | None, np.ndarray | None]:
    """(int64 values, null mask) for integer-like arrays whose order is their integer order, else (None, None)."""
    t = arr.type
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        base = arr
    elif pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t) or pa.types.is_duration(t):
        base = arr.view(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        base = arr.view(pa.int32())
    elif pa.types.is_boolean(t):
        base = arr.cast(pa.int8())
    else:
        return None, None
    nulls = None
    if base.null_count:
        nulls = ~np.asarray(base.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    vals = pc.fill_null(base, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return vals, nulls


def _lookup_keep(levels: np.ndarray, g: Groups) -> np.ndarray:
    """Level <= 0 records plus, per key, the first record of the shallowest level >= 1."""
    high = levels > 0
    big = np.int64(np.iinfo(np.int64).max)
    lv = np.where(high, levels, big)
    min_level = np.minimum.reduceat(lv, g.starts) if g.ng else np.zeros(0, np.int64)
    cand = high & (levels == g.broadcast(min_level))
    chosen = g.first(cand)
    keep = ~high
    ok = chosen >= 0
    keep[chosen[ok]] = True
    return keep


def _assemble(ctx: MergeInput, res: EngineResult, out_cols: list[str], schema: pa.Schema) -> pa.Table:
    keep = res.keep
    arrays = []
    for c in out_cols:
        typ = schema.field(c).type
        if c == SEQ:
            arr = pa.array(res.seq, type=pa.int64())
        elif c == KIND:
            arr = pa.array(res.kind, type=pa.int8())
        elif c in res.columns:
            arr = res.columns[c]
        else:  # an input column unknown to the table schema: keep the newest record's value
            arr = take(ctx.col(c), ctx.groups.ends - 1)
        if arr.type != typ:
            arr = arr.cast(typ)
        arrays.append(arr)
    t = pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(c) for c in out_cols]))
    if not keep.all():
        t = t.filter(pa.array(keep))
    return t
