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
from paimon_ops.merge.engines import Ctx, EngineResult, run_engine
from paimon_ops.merge.groups import Groups, as_array, changed_from_previous
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
    if records.num_rows == 0:
        return records.select(out_cols)

    kinds_arr = as_array(records.column(KIND))
    if kinds_arr.null_count:
        raise InvalidArgumentError(f"{spec.where}: {KIND} holds nulls")
    kinds = kinds_arr.to_numpy(zero_copy_only=False).astype(np.int8)
    if ((kinds < 0) | (kinds > 3)).any():
        raise InvalidArgumentError(f"{spec.where}: {KIND} must be 0..3 (+I, -U, +U, -D)")
    is_add = (kinds == 0) | (kinds == 2)

    # 1. sort
    work = records.append_column(_ADD, pa.array(is_add))
    keys = [(k, "ascending") for k in spec.key_fields]
    seq_order = "ascending" if spec.sequence_ascending else "descending"
    keys += [(s, seq_order) for s in spec.sequence_fields]
    keys += [(SEQ, "ascending"), (_ADD, "ascending")]  # retract before add on a full tie
    idx = pc.sort_indices(work, sort_keys=keys, null_placement="at_start")
    work = work.take(idx)
    n = work.num_rows

    # 2. key groups
    is_start = np.zeros(n, dtype=bool)
    is_start[0] = True
    for k in spec.key_fields:
        is_start[1:] |= changed_from_previous(as_array(work.column(k)))
    groups = Groups.from_boundaries(is_start)

    # 3. lookup-level filtering (LookupMergeFunction); first-row is not wrapped in Java.
    single = groups.sizes == 1
    if lookup_rewrite:
        single = np.zeros(groups.ng, dtype=bool)
    if spec.needs_lookup and spec.engine != "first-row":
        levels = as_array(work.column(LEVEL)).to_numpy(zero_copy_only=False).astype(np.int64)
        keep_rows = _lookup_keep(levels, groups)
        if not keep_rows.all():
            row_gid = groups.gid[keep_rows]
            work = work.filter(pa.array(keep_rows))
            groups_f = Groups.from_gid(row_gid)
            # groups keep their identity (none becomes empty): group g of groups_f is group g of groups
            groups = groups_f

    # 4. split single-record keys (pass-through) from keys that are merged
    row_single = groups.broadcast(single)
    merge_rows = ~row_single
    parts: list[pa.Table] = []
    part_gids: list[np.ndarray] = []
    base = work.drop_columns([_ADD])
    if row_single.any():
        parts.append(base.filter(pa.array(row_single)).select(out_cols))
        part_gids.append(np.flatnonzero(single))
    if merge_rows.any():
        sub = work.filter(pa.array(merge_rows)) if not merge_rows.all() else work
        sub_groups = Groups.from_gid(groups.gid[merge_rows])
        ctx = Ctx(spec, sub.drop_columns([_ADD]), sub_groups)
        res = run_engine(ctx)
        parts.append(_assemble(ctx, res, out_cols, base.schema))
        part_gids.append(np.flatnonzero(~single)[res.keep])

    out = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
    if len(parts) > 1:
        order = np.argsort(np.concatenate(part_gids), kind="stable")
        out = out.take(pa.array(order))

    # 5. drop retract results
    if drop_delete and out.num_rows:
        k = as_array(out.column(KIND)).to_numpy(zero_copy_only=False)
        out = out.filter(pa.array((k == 0) | (k == 2)))
    return out.combine_chunks() if out.num_rows else out


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


def _assemble(ctx: Ctx, res: EngineResult, out_cols: list[str], schema: pa.Schema) -> pa.Table:
    keep = res.keep
    if res.src is not None:
        return ctx.table.take(pa.array(res.src[keep])).select(out_cols)
    arrays = []
    for c in out_cols:
        typ = schema.field(c).type
        if c == SEQ:
            arr = pa.array(res.seq, type=pa.int64())
        elif c == KIND:
            arr = pa.array(res.kind, type=pa.int8())
        elif c in res.columns:
            arr = res.columns[c]
        else:  # an extra input column the table schema does not know: keep the last record's value
            arr = ctx.table.column(c).take(pa.array(ctx.groups.ends - 1))
            arr = as_array(arr)
        if arr.type != typ:
            arr = arr.cast(typ)
        arrays.append(arr)
    t = pa.Table.from_arrays(arrays, schema=pa.schema([schema.field(c) for c in out_cols]))
    if not keep.all():
        t = t.filter(pa.array(keep))
    return t
