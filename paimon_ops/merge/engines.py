"""The four merge engines over keys with >= 2 records (or every key in lookup-rewrite mode).

Records arrive sorted (oldest -> newest within a key) and grouped. Every engine is vectorised over all keys.
A small, documented set of rare cases is routed to the exact record-by-record fold (fold.py), only for the
keys that need it:
* aggregation: nested_update and merge_map (every merged key), collect with `distinct` or with retractions,
  listagg with `distinct`, product with retractions, DECIMAL products (BigDecimal rounding per step), DECIMAL
  sums whose running sum may overflow, and keys holding a -D when aggregation.remove-record-on-delete is set;
* partial-update with sequence groups: keys holding a -D when partial-update.remove-record-on-sequence-group
  is set, keys whose first record is a retraction (it seeds the row), keys with a retraction on a product
  field, DECIMAL sums that may overflow, and every key if a sequence group holds a DECIMAL product or an
  aggregate other than sum, product, max, min, bool_and, bool_or, last_value, last_non_null_value,
  first_value.
DECIMAL sums with precision > 18 are exact Python-int reductions (numpy object arrays); their results are built
per key. Everything else is numpy / Arrow kernels over whole columns.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.merge.fold import DELETE, INSERT, PU_RETRACT_MESSAGE, AggregateFold, PartialUpdateFold
from paimon_ops.merge.groups import (
    NONE,
    Groups,
    as_array,
    dense_rank,
    list_array,
    segmented_sequential_sum,
    take,
    valid_mask,
)
from paimon_ops.merge.scalar import JAVA_WHITESPACE, retract_unsupported
from paimon_ops.merge.spec import PRIMARY_KEY_FUNC, FieldAgg, MergeError, MergeSpec

SEQ, KIND = "_SEQUENCE_NUMBER", "_VALUE_KIND"
_INT_NP = {"TINYINT": np.int8, "SMALLINT": np.int16, "INT": np.int32, "BIGINT": np.int64}
# RE2 character class equal to java.lang.Character.isWhitespace (StringUtils.isBlank in listagg).
_BLANK_RE = "^[" + "".join(f"\\x{{{ord(c):04x}}}" for c in JAVA_WHITESPACE) + "]*$"
FAST_GROUP_FUNCS = {PRIMARY_KEY_FUNC, "sum", "product", "max", "min", "bool_and", "bool_or", "last_value",
                    "last_non_null_value", "first_value"}


@dataclass
class EngineResult:
    keep: np.ndarray                       # per group: a result exists
    src: np.ndarray | None = None          # dedup / first-row: the winning record per group
    columns: dict[str, pa.Array] = field(default_factory=dict)
    seq: np.ndarray | None = None
    kind: np.ndarray | None = None


class MergeInput:
    """The records of the merged keys in merge order: `perm` maps sorted rows to rows of `table`."""

    def __init__(self, spec: MergeSpec, table: pa.Table, perm: np.ndarray, groups: Groups, kinds: np.ndarray,
                 is_add: np.ndarray, seqnum: np.ndarray) -> None:
        self.spec = spec
        self.table = table
        self.perm = perm
        self.groups = groups
        self.kinds = kinds
        self.is_add = is_add
        self.is_delete = kinds == DELETE
        self.seqnum = seqnum
        self.rows = np.arange(len(perm), dtype=np.int64)
        self._cols: dict[str, pa.Array] = {}
        self._valid: dict[str, np.ndarray] = {}

    def col(self, name: str) -> pa.Array:
        """Column `name` in merge order (gathered once, on first use)."""
        if name not in self._cols:
            self._cols[name] = pc.take(as_array(self.table.column(name)), pa.array(self.perm))
        return self._cols[name]

    def valid(self, name: str) -> np.ndarray:
        if name not in self._valid:
            self._valid[name] = valid_mask(as_array(self.table.column(name)))[self.perm]
        return self._valid[name]

    def take(self, name: str, idx: np.ndarray, null_if: np.ndarray | None = None) -> pa.Array:
        """Column `name` at merge-order rows `idx` (NONE or null_if -> null), without gathering the column."""
        if null_if is not None:
            idx = np.where(null_if, NONE, idx)
        orig = np.where(idx >= 0, self.perm[np.maximum(idx, 0)], NONE)
        return take(as_array(self.table.column(name)), orig)

    def arrow_type(self, name: str) -> pa.DataType:
        return self.table.schema.field(name).type


def run_engine(ctx: MergeInput) -> EngineResult:
    e = ctx.spec.engine
    if e == "deduplicate":
        return _deduplicate(ctx)
    if e == "first-row":
        return _first_row(ctx)
    if e == "partial-update":
        return _partial_update(ctx)
    return _aggregation(ctx)


# ------------------------------------------------------------------------------------- deduplicate / first-row

def _deduplicate(ctx: MergeInput) -> EngineResult:
    g = ctx.groups
    if ctx.spec.ignore_delete:  # DeduplicateMergeFunction skips retracts; all skipped -> no result
        src = g.last(ctx.is_add)
        return EngineResult(keep=src >= 0, src=src)
    return EngineResult(keep=np.ones(g.ng, dtype=bool), src=g.ends - 1)


def _first_row(ctx: MergeInput) -> EngineResult:
    g = ctx.groups
    if not ctx.spec.ignore_delete and not ctx.is_add.all():
        raise MergeError(f"{ctx.spec.where}: By default, First row merge engine can not accept DELETE/UPDATE_BEFORE "
                         "records. You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records.")
    src = g.first(ctx.is_add)
    return EngineResult(keep=src >= 0, src=src)


# ------------------------------------------------------------------------------------------ shared helpers

def _patch(fast: pa.Array, groups_idx: np.ndarray, values: list[Any], typ: pa.DataType) -> pa.Array:
    """Replace the entries of `fast` at `groups_idx` by `values` (results of the exact fold)."""
    if len(groups_idx) == 0:
        return fast
    if pa.types.is_decimal(typ):
        extra = decimal_array([None if v is None else int(v.scaleb(typ.scale)) for v in values], typ)
    else:
        extra = pa.array(values, type=typ)
    idx = np.arange(len(fast), dtype=np.int64)
    idx[groups_idx] = len(fast) + np.arange(len(groups_idx))
    return pc.take(pa.concat_arrays([fast.cast(typ), extra]), pa.array(idx))


def _rows_of(g: Groups, groups_idx: np.ndarray) -> np.ndarray:
    """Row indices of the given groups, in order."""
    if len(groups_idx) == 0:
        return np.zeros(0, np.int64)
    sizes = g.sizes[groups_idx]
    starts = np.repeat(g.starts[groups_idx], sizes)
    offs = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return starts + offs


def _py_groups(ctx: MergeInput, groups_idx: np.ndarray, names: list[str]) -> list[tuple[list, list, list]]:
    """(values per record, kinds, seqnums) of each listed group, as Python objects (fold input)."""
    g = ctx.groups
    rows = _rows_of(g, groups_idx)
    sub = ctx.table.select(names).take(pa.array(ctx.perm[rows]))
    cols = [sub.column(i).to_pylist() for i in range(len(names))]
    kinds = ctx.kinds[rows].tolist()
    seqs = ctx.seqnum[rows].tolist()
    out = []
    off = 0
    for size in g.sizes[groups_idx].tolist():
        vals = [[c[r] for c in cols] for r in range(off, off + size)]
        out.append((vals, kinds[off:off + size], seqs[off:off + size]))
        off += size
    return out


# --------------------------------------------------------------------------------- vectorised aggregations

def vec_sum(ctx: MergeInput, name: str, rows: np.ndarray, negate: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Sum over `rows` (negated where `negate`) per group, null where no non-null input (FieldSumAgg).

    Returns (sums, fold): `fold` marks groups the caller must compute with the exact fold (a DECIMAL running
    sum that may overflow, where Java turns the accumulator null and restarts)."""
    g = ctx.groups
    arr = ctx.col(name)
    t = ctx.arrow_type(name)
    sel = rows & ctx.valid(name)
    has = g.any(sel)
    no_fold = np.zeros(g.ng, dtype=bool)
    root = ctx.spec.field_types[ctx.spec.index(name)].root
    if root in _INT_NP:
        vals = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False).astype(np.int64)
        vals = np.where(sel, np.where(negate, -vals, vals), 0)
        s = np.add.reduceat(vals, g.starts).astype(_INT_NP[root])  # wraps like Java's (byte)/(short)/(int)
        return pa.array(s, type=t, mask=~has), no_fold
    if root in ("FLOAT", "DOUBLE"):
        vals = pc.fill_null(arr, 0).to_numpy(zero_copy_only=False)
        vals = np.where(negate, -vals, vals)[sel]
        s = segmented_sequential_sum(vals, g.gid[sel], g.ng)
        return pa.array(s, type=t, mask=~has), no_fold
    return _decimal_sum(arr, t, sel, negate, g, has)


def _decimal_unscaled(arr: pa.Array) -> np.ndarray:
    """Unscaled values of a decimal128 array as exact Python ints (object array)."""
    buf = arr.buffers()[1]
    words = np.frombuffer(buf, dtype=np.int64)[2 * arr.offset: 2 * (arr.offset + len(arr))].reshape(-1, 2)
    lo = words[:, 0].view(np.uint64).astype(object)
    hi = words[:, 1].astype(object)
    return hi * (1 << 64) + lo


def decimal_array(unscaled: list[int | None], t: pa.DataType) -> pa.Array:
    """A decimal128 array from unscaled ints, without a precision check (Java keeps compact overflows)."""
    n = len(unscaled)
    valid = np.array([u is not None for u in unscaled], dtype=bool)
    data = np.zeros((n, 2), dtype=np.uint64)
    for i, u in enumerate(unscaled):
        if u is not None:
            v = u & ((1 << 128) - 1)
            data[i, 0] = v & ((1 << 64) - 1)
            data[i, 1] = v >> 64
    bitmap = np.packbits(valid, bitorder="little")
    return pa.Array.from_buffers(t, n, [pa.py_buffer(bitmap.tobytes()), pa.py_buffer(data.tobytes())])


def _decimal_sum(arr: pa.Array, t: pa.DataType, sel: np.ndarray, negate: np.ndarray, g: Groups,
                 has: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """Exact DECIMAL sums. A group whose running sum may leave the range Java keeps exactly (the long range
    for compact precisions <= 18: DecimalUtils.add; the precision above: Decimal.fromBigDecimal -> null and
    restart) is flagged for the exact fold instead."""
    p = t.precision
    fold = np.zeros(g.ng, dtype=bool)
    buf = arr.buffers()[1]
    words = np.frombuffer(buf, dtype=np.int64)[2 * arr.offset: 2 * (arr.offset + len(arr))].reshape(-1, 2)
    if p <= 18 and len(words):
        v = np.where(sel, np.where(negate, -words[:, 0], words[:, 0]), 0)
        if int(np.abs(v).max()) * int(g.sizes.max()) < (1 << 63):  # no running sum can overflow a long
            sums = np.add.reduceat(v, g.starts)
            data = np.stack([sums, sums >> 63], axis=1).astype(np.int64)
            bitmap = np.packbits(has, bitorder="little")
            return pa.Array.from_buffers(t, g.ng, [pa.py_buffer(bitmap.tobytes()),
                                                   pa.py_buffer(data.tobytes())]), fold
    limit = (1 << 63) if p <= 18 else 10 ** p
    vals = _decimal_unscaled(arr)
    vals = np.where(sel, np.where(negate, -vals, vals), 0)
    approx = vals.astype(np.float64)
    cum_f = np.cumsum(approx) if len(approx) else approx
    before_f = np.concatenate([[0.0], cum_f])[g.starts]
    prefix_f = np.abs(cum_f - np.repeat(before_f, g.sizes))
    near = prefix_f >= float(limit) * (1 - 1e-9)  # float pre-filter; exact ints checked only near the limit
    if near.any():
        cum = np.cumsum(vals)
        before = np.concatenate([[0], cum])[g.starts]
        prefix = (cum - np.repeat(before, g.sizes))[near]
        bad = np.zeros(len(vals), dtype=bool)
        bad[np.flatnonzero(near)] = [not (-limit < int(x) < limit) for x in prefix]
        fold = g.any(bad & sel)
    sums = np.add.reduceat(vals, g.starts) if len(vals) else vals
    out = [int(x) if h and not f else None for x, h, f in zip(sums.tolist(), has.tolist(), fold.tolist())]
    return decimal_array(out, t), fold


def vec_product(ctx: MergeInput, name: str, rows: np.ndarray) -> pa.Array:
    g = ctx.groups
    arr = ctx.col(name)
    t = ctx.arrow_type(name)
    sel = rows & ctx.valid(name)
    has = g.any(sel)
    root = ctx.spec.field_types[ctx.spec.index(name)].root
    if root in _INT_NP:
        vals = pc.fill_null(arr, 1).to_numpy(zero_copy_only=False).astype(np.int64)
        vals = np.where(sel, vals, 1)
        return pa.array(np.multiply.reduceat(vals, g.starts).astype(_INT_NP[root]), type=t, mask=~has)
    if root in ("FLOAT", "DOUBLE"):
        vals = pc.fill_null(arr, 1).to_numpy(zero_copy_only=False)
        vals = np.where(sel, vals, vals.dtype.type(1))
        with np.errstate(all="ignore"):
            out = np.multiply.reduceat(vals, g.starts)  # sequential for multiply (no pairwise rounding)
        return pa.array(out, type=t, mask=~has)
    raise AssertionError("DECIMAL products are computed by the exact fold")


def vec_minmax(ctx: MergeInput, name: str, rows: np.ndarray, is_max: bool) -> pa.Array:
    g = ctx.groups
    arr = ctx.col(name)
    t = ctx.arrow_type(name)
    sel = rows & ctx.valid(name)
    has = g.any(sel)
    num_view = None
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        num_view = arr
    elif pa.types.is_timestamp(t) or pa.types.is_date64(t) or pa.types.is_time64(t):
        num_view = arr.view(pa.int64())
    elif pa.types.is_date32(t) or pa.types.is_time32(t):
        num_view = arr.view(pa.int32())
    elif pa.types.is_boolean(t):
        num_view = arr.cast(pa.int8())
    if num_view is not None:
        vals = pc.fill_null(num_view, 0).to_numpy(zero_copy_only=False)
        if np.issubdtype(vals.dtype, np.floating):
            fill = -np.inf if is_max else np.inf
            vals = np.where(sel, vals, fill).astype(vals.dtype)
            # Java Double.compare: NaN is the largest value; max propagates it, min skips it unless alone.
            out = (np.maximum if is_max else np.fmin).reduceat(vals, g.starts)
            if not is_max:
                only_nan = has & ~g.any(sel & ~np.isnan(vals))
                out = np.where(only_nan, np.nan, out).astype(vals.dtype)
        else:
            info = np.iinfo(vals.dtype)
            vals = np.where(sel, vals, info.min if is_max else info.max).astype(vals.dtype)
            out = (np.maximum if is_max else np.minimum).reduceat(vals, g.starts)
        res = pa.array(out, type=num_view.type, mask=~has)
        return res.cast(t) if pa.types.is_boolean(t) else res.view(t)
    # strings, binary, decimal: Arrow's hash aggregation (byte-wise order, as BinaryString.compareTo).
    tbl = pa.table({"g": pa.array(g.gid[sel]), "v": arr.filter(pa.array(sel))})
    agg = tbl.group_by("g", use_threads=False).aggregate([("v", "max" if is_max else "min")])
    idx = np.full(g.ng, NONE, dtype=np.int64)
    idx[agg.column("g").to_numpy()] = np.arange(agg.num_rows)
    return take(as_array(agg.column(1)), idx)


def vec_bool(ctx: MergeInput, name: str, rows: np.ndarray, is_and: bool) -> pa.Array:
    g = ctx.groups
    arr = ctx.col(name)
    sel = rows & ctx.valid(name)
    has = g.any(sel)
    vals = np.asarray(pc.fill_null(arr, is_and).to_numpy(zero_copy_only=False), dtype=bool)
    vals = np.where(sel, vals, is_and)
    out = (np.logical_and if is_and else np.logical_or).reduceat(vals, g.starts)
    return pa.array(out, type=pa.bool_(), mask=~has)


def vec_listagg(ctx: MergeInput, name: str, rows: np.ndarray, delimiter: str) -> pa.Array:
    """Non-distinct listagg: non-blank inputs joined in order (FieldListaggAgg, master)."""
    g = ctx.groups
    arr = ctx.col(name)
    blank = np.asarray(pc.fill_null(pc.match_substring_regex(arr, _BLANK_RE), True)
                       .to_numpy(zero_copy_only=False), dtype=bool)
    sel = rows & ctx.valid(name) & ~blank
    counts = np.bincount(g.gid[sel], minlength=g.ng)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    lists = list_array(offsets, arr.filter(pa.array(sel)), None, pa.list_(arr.type))
    joined = pc.binary_join(lists, delimiter)
    return pc.if_else(pa.array(counts > 0), joined, pa.nulls(g.ng, arr.type))


def vec_collect(ctx: MergeInput, name: str, rows: np.ndarray) -> pa.Array:
    """Non-distinct collect without retractions: non-null arrays concatenated in order."""
    g = ctx.groups
    arr = ctx.col(name)
    sel = rows & ctx.valid(name)
    has = g.any(sel)
    lists = arr.filter(pa.array(sel))
    flat = pc.list_flatten(lists)
    parent = pc.list_parent_indices(lists).to_numpy(zero_copy_only=False)
    elem_gid = g.gid[sel][parent] if len(parent) else np.zeros(0, np.int64)
    counts = np.bincount(elem_gid, minlength=g.ng)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    return list_array(offsets, flat, has, arr.type)


def vec_last_value(ctx: MergeInput, name: str, events: np.ndarray) -> pa.Array:
    """Value of the last event per group; a retract event yields null."""
    e = ctx.groups.last(events)
    null_if = (e >= 0) & ~ctx.is_add[np.maximum(e, 0)]
    return ctx.take(name, e, null_if)


# ----------------------------------------------------------------------------------------------- aggregation

def _aggregation(ctx: MergeInput) -> EngineResult:
    spec, g = ctx.spec, ctx.groups
    n_g = g.ng
    res = EngineResult(keep=np.ones(n_g, dtype=bool), seq=ctx.seqnum[g.ends - 1], kind=np.full(n_g, INSERT, np.int8))
    row_fold = np.zeros(n_g, dtype=bool)
    if spec.agg_remove_record_on_delete:
        row_fold = g.any(ctx.is_delete)  # resets make the row stateful: exact fold for these keys
    retract_rows = ~ctx.is_add
    fold = AggregateFold(spec)

    for a in spec.aggregators:
        assert a is not None
        name = a.field
        consider_retract = retract_rows & (not a.ignore_retract)
        fast_rows = ctx.is_add
        field_fold = np.zeros(n_g, dtype=bool)

        def check_no_retract(a: FieldAgg = a, consider_retract: np.ndarray = consider_retract) -> None:
            bad = g.any(consider_retract) & ~row_fold
            if bad.any():
                raise retract_unsupported(a, spec.where)

        f = a.func
        arr: pa.Array
        if f == PRIMARY_KEY_FUNC:
            arr = ctx.take(name, g.ends - 1)
        elif f == "last_value":
            arr = vec_last_value(ctx, name, ctx.is_add | consider_retract)
        elif f == "last_non_null_value":
            arr = vec_last_value(ctx, name, (ctx.is_add | consider_retract) & ctx.valid(name))
        elif f == "first_value":
            check_no_retract()
            arr = ctx.take(name, g.first(ctx.is_add))
        elif f == "first_non_null_value":
            check_no_retract()
            arr = ctx.take(name, g.first(ctx.is_add & ctx.valid(name)))
        elif f == "sum":
            arr, field_fold = vec_sum(ctx, name, ctx.is_add | consider_retract, consider_retract)
        elif f == "product":
            if ctx.spec.field_types[a.index].root == "DECIMAL":  # BigDecimal rounding per step: exact fold
                field_fold = np.ones(n_g, dtype=bool)
                arr = pa.nulls(n_g, ctx.arrow_type(name))
            else:
                field_fold = g.any(consider_retract)
                arr = vec_product(ctx, name, fast_rows)
        elif f in ("max", "min"):
            check_no_retract()
            arr = vec_minmax(ctx, name, fast_rows, f == "max")
        elif f in ("bool_and", "bool_or"):
            check_no_retract()
            arr = vec_bool(ctx, name, fast_rows, f == "bool_and")
        elif f == "listagg":
            check_no_retract()
            if a.distinct:
                field_fold = np.ones(n_g, dtype=bool)
                arr = pa.nulls(n_g, ctx.arrow_type(name))
            else:
                arr = vec_listagg(ctx, name, fast_rows, a.delimiter)
        elif f == "collect":
            if a.distinct:
                field_fold = np.ones(n_g, dtype=bool)
                arr = pa.nulls(n_g, ctx.arrow_type(name))
            else:
                field_fold = g.any(consider_retract)
                arr = vec_collect(ctx, name, fast_rows)
        else:  # merge_map, nested_update: exact fold (Java HashMap ordering is not reproduced)
            field_fold = np.ones(n_g, dtype=bool)
            arr = pa.nulls(n_g, ctx.arrow_type(name))
        field_fold &= ~row_fold
        if field_fold.any():
            gi = np.flatnonzero(field_fold)
            vals = [fold.run_field(a.index, [v[0] for v in vals_], kinds)
                    for vals_, kinds, _ in _py_groups(ctx, gi, [name])]
            arr = _patch(arr, gi, vals, ctx.arrow_type(name))
        res.columns[name] = arr

    _fold_exactly(res, ctx, spec, fold, row_fold)
    return res


# -------------------------------------------------------------------------------------------- partial-update

def _check_not_null_adds(ctx: MergeInput, rows: np.ndarray) -> None:
    spec = ctx.spec
    for name, t in zip(spec.field_names, spec.field_types):
        if not t.nullable and (rows & ~ctx.valid(name)).any():
            raise MergeError(f"{spec.where}: field {name!r} can not be null (NOT NULL column in a merged record)")


def _partial_update(ctx: MergeInput) -> EngineResult:
    if ctx.spec.sequence_groups:
        return _pu_groups(ctx)
    return _pu_plain(ctx)


def _pu_plain(ctx: MergeInput) -> EngineResult:
    """PartialUpdateMergeFunction without sequence groups: non-null fields of newer records overwrite.

    A row is seeded (initRow: every field of the record) by the first record when it is a retraction, and reset
    to the last -D under remove-record-on-delete; adds after the seed overwrite with their non-null fields."""
    spec, g = ctx.spec, ctx.groups
    retract = ~ctx.is_add
    if not spec.ignore_delete and not spec.pu_remove_record_on_delete and retract.any():
        raise MergeError(f"{spec.where}: {PU_RETRACT_MESSAGE}")
    _check_not_null_adds(ctx, ctx.is_add)
    has_add = g.any(ctx.is_add)
    first_is_retract = ~ctx.is_add[g.starts]
    res = EngineResult(keep=np.ones(g.ng, dtype=bool))
    seed = np.where(first_is_retract, g.starts, NONE)
    if spec.ignore_delete:
        after = np.ones(len(ctx.kinds), dtype=bool)
        last_add = g.last(ctx.is_add)
        res.seq = np.where(has_add, ctx.seqnum[np.maximum(last_add, 0)], 0)
        res.kind = np.where(has_add, INSERT, DELETE).astype(np.int8)
    else:  # remove-record-on-delete
        d = g.last(ctx.is_delete)
        after = ctx.rows > g.broadcast(d)
        seed = np.where(d >= 0, d, seed)
        res.seq = ctx.seqnum[g.ends - 1]
        res.kind = np.where(ctx.is_delete[g.ends - 1] | ~has_add, DELETE, INSERT).astype(np.int8)
    seeded = np.zeros(len(ctx.kinds), dtype=bool)
    seeded[seed[seed >= 0]] = True
    _check_not_null_adds(ctx, seeded)  # initRow rejects a null NOT NULL field too
    adds_after = ctx.is_add & after
    for name in spec.field_names:
        src = g.last(adds_after & ctx.valid(name))
        res.columns[name] = ctx.take(name, np.where(src >= 0, src, seed))
    return res


def _pu_groups(ctx: MergeInput) -> EngineResult:
    spec, g = ctx.spec, ctx.groups
    n_g = g.ng
    pu_fold = PartialUpdateFold(spec)
    grouped = {f for grp in spec.sequence_groups for f in grp.value_fields}
    aggs = {a.field: a for a in spec.aggregators if a is not None}

    # route keys the vectorised path does not cover to the exact fold
    fold_keys = np.zeros(n_g, dtype=bool)
    if any(aggs[f].func not in FAST_GROUP_FUNCS for f in grouped if f in aggs):
        fold_keys[:] = True
    act = ctx.is_add | (not spec.ignore_delete)  # records the merge function acts on
    retract = act & ~ctx.is_add
    if any(grp.remove_on_delete for grp in spec.sequence_groups):
        fold_keys |= g.any(ctx.is_delete & act)
    fold_keys |= ~ctx.is_add[g.starts]  # a leading retraction seeds the whole row (initRow): exact fold
    if any(aggs[f].func == "product" and not aggs[f].ignore_retract for f in grouped if f in aggs):
        fold_keys |= g.any(retract)
    if any(aggs[f].func == "product" and spec.field_types[spec.index(f)].root == "DECIMAL"
           for f in grouped if f in aggs):
        fold_keys[:] = True
    for f in grouped:  # DECIMAL sums that may overflow (conservative: every acting record counts)
        if f in aggs and aggs[f].func == "sum" and ctx.spec.field_types[ctx.spec.index(f)].root == "DECIMAL":
            fold_keys |= vec_sum(ctx, f, act, retract)[1]

    res = EngineResult(keep=np.ones(n_g, dtype=bool))
    has_act = g.any(act)
    last_act = g.last(act)
    res.seq = np.where(has_act, ctx.seqnum[np.maximum(last_act, 0)], 0)
    res.kind = np.where(g.any(ctx.is_add), INSERT, DELETE).astype(np.int8)

    # fields outside every sequence group: non-null overwrite by adds (primary keys: constant)
    in_group = grouped | {s for grp in spec.sequence_groups for s in grp.seq_fields}
    for name in spec.field_names:
        if name in in_group:
            continue
        if name in spec.primary_keys:
            res.columns[name] = ctx.take(name, g.ends - 1)
        else:
            res.columns[name] = ctx.take(name, g.last(ctx.is_add & ctx.valid(name)))

    rows = ctx.rows
    for grp in spec.sequence_groups:
        seq_cols = [ctx.col(s) for s in grp.seq_fields]
        nonempty = np.zeros(len(rows), dtype=bool)
        for s in grp.seq_fields:
            nonempty |= ctx.valid(s)
        valid = nonempty & act  # records whose group sequence is all-null skip the group
        rank = dense_rank(seq_cols)
        width = np.int64(int(rank.max()) + 2 if len(rank) else 2)
        combined = g.gid * width + np.where(valid, rank + 1, 0)
        running = np.maximum.accumulate(combined) if len(combined) else combined
        prev = np.empty_like(running)
        if len(prev):
            prev[1:] = running[:-1]
            prev[g.starts] = g.gid[g.starts] * width
        accepted = valid & (combined >= prev)  # group sequence >= the accumulated one
        last_acc = g.last(accepted)
        acc_is_retract = (last_acc >= 0) & ~ctx.is_add[np.maximum(last_acc, 0)]
        for s in grp.seq_fields:
            res.columns[s] = ctx.take(s, last_acc)
        older_add = valid & ctx.is_add & ~accepted
        for name in grp.value_fields:
            a = aggs.get(name)
            if a is None:  # newest accepted record wins, even with null; an accepted retraction nulls it
                res.columns[name] = ctx.take(name, last_acc, acc_is_retract)
                continue
            res.columns[name] = _pu_group_agg(ctx, a, valid, accepted, older_add, fold_keys)

    _fold_exactly(res, ctx, spec, pu_fold, fold_keys)
    return res


def _pu_group_agg(ctx: MergeInput, a: FieldAgg, valid: np.ndarray, accepted: np.ndarray, older_add: np.ndarray,
                  fold_keys: np.ndarray) -> pa.Array:
    """An aggregated field inside a sequence group: accepted adds agg(acc, v), older adds agg(v, acc),
    retractions retract(acc, v) regardless of the sequence (PartialUpdateMergeFunction)."""
    g, name, f = ctx.groups, a.field, a.func
    n_g = g.ng
    add = valid & ctx.is_add
    ret = valid & ~ctx.is_add & (not a.ignore_retract)
    vm = ctx.valid(name)
    if f not in FAST_GROUP_FUNCS:
        return pa.nulls(n_g, ctx.arrow_type(name))  # every key is folded

    def no_retract() -> None:
        if (g.any(ret) & ~fold_keys).any():
            raise retract_unsupported(a, ctx.spec.where)

    if f == "sum":
        arr, overflow = vec_sum(ctx, name, add | ret, ret)
        if (overflow & ~fold_keys).any():  # pre-routed in _pu_groups; this is a safety net
            raise AssertionError("decimal overflow keys were not routed to the fold")
        return arr
    if f == "product":
        return vec_product(ctx, name, add)
    if f in ("max", "min"):
        no_retract()
        return vec_minmax(ctx, name, add, f == "max")
    if f in ("bool_and", "bool_or"):
        no_retract()
        return vec_bool(ctx, name, add, f == "bool_and")
    if f == "last_value":  # accepted add -> v, older add -> unchanged, any retraction -> null
        return vec_last_value(ctx, name, (accepted & ctx.is_add) | ret)
    if f == "last_non_null_value":
        p = g.last(((accepted & ctx.is_add) | ret) & vm)
        x = ctx.take(name, p, (p >= 0) & ~ctx.is_add[np.maximum(p, 0)])
        # an older add fills the field only while it is null: the first non-null one after p
        fill = g.first(older_add & vm & (ctx.rows > g.broadcast(p)))
        return pc.coalesce(x, ctx.take(name, fill))
    if f == "first_value":
        no_retract()
        e0 = g.first(add)
        lo = g.last(older_add & (ctx.rows > g.broadcast(e0)))
        first_is_accepted = (e0 >= 0) & accepted[np.maximum(e0, 0)]
        src = np.where(lo >= 0, lo, np.where(first_is_accepted, e0, NONE))
        return ctx.take(name, src)
    # primary-key never sits in a group (validated)
    raise AssertionError(f)


__all__ = ["MergeInput", "EngineResult", "run_engine"]


def _fold_exactly(res: Any, ctx: Any, spec: MergeSpec, fold: Any, keys: np.ndarray) -> None:
    """Overwrite the result of the keys selected by `keys` with the record-by-record fold (the rare cases the
    vectorised paths do not cover): every column, the result sequence number and kind."""
    if not keys.any():
        return
    gi = np.flatnonzero(keys)
    names = list(spec.field_names)
    results = [fold.run(*grp) for grp in _py_groups(ctx, gi, names)]
    for j, name in enumerate(names):
        res.columns[name] = _patch(res.columns[name], gi, [r[0][j] for r in results], ctx.arrow_type(name))
    res.seq[gi] = [r[1] for r in results]
    res.kind[gi] = [r[2] for r in results]
