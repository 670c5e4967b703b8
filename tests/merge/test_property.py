"""Property tests: the vectorised merge against slow record-by-record references on random inputs.

1. `_reference` below is a tiny, independent fold written from the Java semantics (ReducerMergeFunctionWrapper,
   LookupMergeFunction, DeduplicateMergeFunction, PartialUpdateMergeFunction, FieldSumAgg, FieldMaxAgg,
   FieldLastValueAgg, FieldLastNonNullValueAgg, FieldFirstNonNullValueAgg, FieldListaggAgg) for dedup,
   partial-update (plain, ignore-delete, remove-record-on-delete, one sequence group) and a few aggregates.
2. `test_matches_exact_fold` checks every engine/function configuration against paimon_ops.merge.fold (the
   exact port the engines fall back to), which also covers the vectorised paths for the other functions.
"""
from __future__ import annotations

import itertools
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paimon_ops.merge.fold import AggregateFold, PartialUpdateFold
from paimon_ops.merge.spec import MergeError
from tests.merge.util import KINDS, NAMES, merged, schema, spec_of

FIELDS = [("k", "INT"), ("s", "INT"), ("a", "BIGINT"), ("b", "STRING")]
RETRACT = ("-U", "-D")

CONFIGS: list[dict[str, str]] = [
    {},
    {"ignore-delete": "true"},
    {"sequence.field": "s"},
    {"sequence.field": "s", "sequence.field.sort-order": "descending", "deletion-vectors.enabled": "true"},
    {"merge-engine": "partial-update", "partial-update.ignore-delete": "true"},
    {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
    {"merge-engine": "partial-update", "fields.s.sequence-group": "a,b"},
    {"merge-engine": "partial-update", "fields.s.sequence-group": "a,b", "changelog-producer": "lookup"},
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum",
     "fields.b.aggregate-function": "last_non_null_value"},
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "max", "fields.a.ignore-retract": "true",
     "fields.b.aggregate-function": "last_value", "deletion-vectors.enabled": "true"},
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "first_non_null_value",
     "fields.a.ignore-retract": "true", "fields.b.aggregate-function": "listagg", "fields.b.ignore-retract": "true"},
]

row_st = st.tuples(
    st.sampled_from(["+I", "+I", "+U", "-U", "-D"]),
    st.integers(0, 12),                       # _SEQUENCE_NUMBER (ties allowed)
    st.sampled_from([0, 0, 1, 2, 4]),         # _LEVEL
    st.integers(0, 3),                        # k
    st.one_of(st.none(), st.integers(-2, 2)),  # s
    st.one_of(st.none(), st.integers(-5, 5)),  # a
    st.one_of(st.none(), st.sampled_from(["", " ", "x", "y", "\u00e9"])),  # b
)


def _sort_key(opts: dict[str, str], r: tuple) -> tuple:
    kind, seq, _, k, s, *_ = r
    seq_key: tuple = ()
    if "sequence.field" in opts:
        desc = opts.get("sequence.field.sort-order") == "descending"
        seq_key = (0,) if s is None else (1, -s if desc else s)  # null is the smallest in both orders
    return (k, seq_key, seq, 0 if kind in RETRACT else 1)


def _blank(v: str | None) -> bool:
    return v is None or v.strip(" \t\n\x0b\f\r") == ""


def _reference(opts: dict[str, str], rows: list[tuple], drop: bool) -> list[tuple]:
    engine = opts.get("merge-engine", "deduplicate")
    ignore = opts.get("ignore-delete") == "true" or opts.get("partial-update.ignore-delete") == "true"
    lookup = any(opts.get(k) in ("true", "lookup") for k in ("deletion-vectors.enabled", "changelog-producer"))
    out = []
    ordered = sorted(rows, key=lambda r: _sort_key(opts, r))
    for _, grp_it in itertools.groupby(ordered, key=lambda r: r[3]):
        grp = list(grp_it)
        single = len(grp) == 1
        if lookup:
            high = [r for r in grp if r[2] > 0]
            if high:
                pick = next(r for r in high if r[2] == min(x[2] for x in high))
                grp = [r for r in grp if r[2] == 0 or r is pick]
        if single:
            res: tuple | None = (grp[0][0], grp[0][1], *grp[0][3:])
        elif engine == "deduplicate":
            live = [r for r in grp if not (ignore and r[0] in RETRACT)]
            res = (live[-1][0], live[-1][1], *live[-1][3:]) if live else None
        elif engine == "partial-update":
            res = _ref_partial_update(opts, grp, ignore)
        else:
            res = _ref_aggregate(opts, grp)
        if res is not None and not (drop and res[0] in RETRACT):
            out.append(res)
    return out


def _ref_partial_update(opts: dict[str, str], grp: list[tuple], ignore: bool) -> tuple:
    k = grp[0][3]
    row: dict[str, Any] = {"s": None, "a": None, "b": None}
    seq, met_insert, deleted, seeded = 0, False, False, False
    groups = "fields.s.sequence-group" in opts
    for kind, sq, _, _, s, a, b in grp:
        deleted = False
        vals = {"s": s, "a": a, "b": b}
        if kind in RETRACT:
            if not seeded:          # initRow: a leading retraction seeds every field
                row, seeded = dict(vals), True
            if ignore:
                continue
            seq = sq
            if groups:
                if s is not None and (row["s"] is None or s >= row["s"]):
                    row = {"s": s, "a": None, "b": None}
                continue
            if opts.get("partial-update.remove-record-on-delete") == "true":
                if kind == "-D":
                    row, deleted = dict(vals), True
                continue
            raise MergeError("retract")
        seq, met_insert, seeded = sq, True, True
        if groups:
            if s is not None and (row["s"] is None or s >= row["s"]):
                row = dict(vals)   # the whole group (a, b) moves with its sequence, nulls included
        else:
            row.update({f: v for f, v in vals.items() if v is not None})
    kind = "-D" if deleted or not met_insert else "+I"
    return (kind, seq, k, row["s"], row["a"], row["b"])


def _ref_aggregate(opts: dict[str, str], grp: list[tuple]) -> tuple:
    fa, fb = opts["fields.a.aggregate-function"], opts["fields.b.aggregate-function"]
    acc: dict[str, Any] = {"s": None, "a": None, "b": None}
    first_set = False
    for kind, _, _, _, s, a, b in grp:
        ret = kind in RETRACT
        if s is not None:  # s uses the default last_non_null_value
            acc["s"] = None if ret else s
        if fa == "sum" and a is not None:
            acc["a"] = (0 if acc["a"] is None else acc["a"]) + (-a if ret else a)
        elif fa == "max" and not ret and a is not None:
            acc["a"] = a if acc["a"] is None else max(acc["a"], a)
        elif fa == "first_non_null_value" and not ret and a is not None and not first_set:
            acc["a"], first_set = a, True
        if fb == "last_non_null_value" and b is not None:
            acc["b"] = None if ret else b
        elif fb == "last_value":
            acc["b"] = None if ret else b
        elif fb == "listagg" and not ret and not _blank(b):
            acc["b"] = b if _blank(acc["b"]) else acc["b"] + "," + b
    return ("+I", grp[-1][1], grp[0][3], acc["s"], acc["a"], acc["b"])


def _run(fn, *args) -> Any:
    try:
        return fn(*args)
    except MergeError:
        return MergeError


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=st.sampled_from(range(len(CONFIGS))), rows=st.lists(row_st, min_size=1, max_size=14), drop=st.booleans())
def test_matches_reference_fold(cfg, rows, drop):
    opts = CONFIGS[cfg]
    s = schema(FIELDS, ["k"], opts)
    expected = _run(_reference, opts, rows, drop)
    got = _run(merged, s, rows, drop)
    assert got == expected


# ------------------------------------------------------------------------ every configuration vs fold.py

ALL_FIELDS = [("k", "STRING"), ("s", "INT"), ("a", "BIGINT"), ("b", "STRING"), ("d", "DOUBLE"),
              ("l", {"type": "ARRAY", "element": "INT"}), ("t", "BOOLEAN")]
FOLD_CONFIGS: list[dict[str, str]] = [
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "product", "fields.b.aggregate-function": "min",
     "fields.b.ignore-retract": "true", "fields.d.aggregate-function": "sum", "fields.l.aggregate-function": "collect",
     "fields.t.aggregate-function": "bool_and", "fields.t.ignore-retract": "true"},
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "last_value",
     "fields.b.aggregate-function": "listagg", "fields.b.distinct": "true", "fields.b.ignore-retract": "true",
     "fields.d.aggregate-function": "max", "fields.d.ignore-retract": "true", "fields.l.aggregate-function": "collect",
     "fields.l.distinct": "true", "fields.t.aggregate-function": "bool_or", "fields.t.ignore-retract": "true"},
    {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.b.aggregate-function": "last_value",
     "fields.d.aggregate-function": "product", "fields.l.aggregate-function": "collect",
     "aggregation.remove-record-on-delete": "true"},
    {"merge-engine": "aggregation", "fields.default-aggregate-function": "first_value",
     "fields.a.ignore-retract": "true", "fields.b.ignore-retract": "true",
     "fields.d.ignore-retract": "true", "fields.l.ignore-retract": "true", "fields.t.ignore-retract": "true",
     "fields.s.ignore-retract": "true", "deletion-vectors.enabled": "true"},
    {"merge-engine": "partial-update", "fields.s.sequence-group": "a,d,l", "fields.a.aggregate-function": "sum",
     "fields.d.aggregate-function": "last_non_null_value", "fields.l.aggregate-function": "last_value"},
    {"merge-engine": "partial-update", "fields.s.sequence-group": "a,b,d", "fields.a.aggregate-function": "max",
     "fields.a.ignore-retract": "true", "fields.b.aggregate-function": "first_value",
     "fields.b.ignore-retract": "true", "partial-update.remove-record-on-sequence-group": "s"},
    {"merge-engine": "partial-update", "fields.s.sequence-group": "b,l", "fields.l.aggregate-function": "collect",
     "ignore-delete": "true", "sequence.field": "a"},
]

fold_row_st = st.tuples(
    st.sampled_from(["+I", "+I", "+U", "-U", "-D"]), st.integers(0, 12), st.sampled_from([0, 0, 1, 3]),
    st.sampled_from(["p", "q", "\u00e9"]), st.one_of(st.none(), st.integers(0, 3)),
    st.one_of(st.none(), st.integers(-3, 3)), st.one_of(st.none(), st.sampled_from(["", "u", "v,u", "w"])),
    st.one_of(st.none(), st.sampled_from([0.1, 0.2, -1.5, 1e16, float("nan")])),
    st.one_of(st.none(), st.lists(st.one_of(st.none(), st.integers(0, 2)), max_size=3)),
    st.one_of(st.none(), st.booleans()),
)


def _fold_reference(s, rows: list[tuple], drop: bool, rewrite: bool) -> list[tuple]:
    spec = spec_of(s)
    names = list(spec.field_names)
    idx = {n: i for i, n in enumerate(names)}

    def key(r: tuple) -> tuple:
        vals = r[3:]
        sk: tuple = ()
        for f in spec.sequence_fields:
            v = vals[idx[f]]
            sk += ((0,) if v is None else (1, v if spec.sequence_ascending else -v),)
        return (vals[idx["k"]].encode(), sk, r[1], 0 if r[0] in RETRACT else 1)

    out = []
    for _, grp_it in itertools.groupby(sorted(rows, key=key), key=lambda r: key(r)[0]):
        grp = list(grp_it)
        single = len(grp) == 1 and not rewrite
        if spec.needs_lookup:
            high = [r for r in grp if r[2] > 0]
            if high:
                pick = next(r for r in high if r[2] == min(x[2] for x in high))
                grp = [r for r in grp if r[2] == 0 or r is pick]
        if single:
            res = (grp[0][0], grp[0][1], *grp[0][3:])
        else:
            fold = AggregateFold(spec) if spec.engine == "aggregation" else PartialUpdateFold(spec)
            row, seq, kind = fold.run([list(r[3:]) for r in grp], [KINDS[r[0]] for r in grp], [r[1] for r in grp])
            res = (NAMES[kind], seq, *row)
        if not (drop and res[0] in RETRACT):
            out.append(res)
    return out


def _norm(x: Any) -> Any:
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    if isinstance(x, (list, tuple)):
        return type(x)(_norm(y) for y in x)
    return x


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=st.sampled_from(range(len(FOLD_CONFIGS))), rows=st.lists(fold_row_st, min_size=1, max_size=12),
       drop=st.booleans(), rewrite=st.booleans())
def test_matches_exact_fold(cfg, rows, drop, rewrite):
    s = schema(ALL_FIELDS, ["k"], FOLD_CONFIGS[cfg])
    spec = spec_of(s)
    rewrite = rewrite and spec.needs_lookup
    expected = _norm(_run(_fold_reference, s, rows, drop, rewrite))
    got = _norm(_run(lambda: merged(s, rows, drop, lookup_rewrite=rewrite)))
    assert got == expected
