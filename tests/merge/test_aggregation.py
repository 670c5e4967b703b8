"""Aggregation (maintenance.md §6.5) against Java master's aggregate/Field*Agg classes:
FieldSumAgg (null accumulator + retract -> negated input), FieldProductAgg (retract divides; null accumulator ->
input), FieldMaxAgg/FieldMinAgg/FieldBoolAndAgg/FieldBoolOrAgg/FieldFirst*Agg (no retraction: "does not
support retraction ... 'fields.${field_name}.ignore-retract'='true'"), FieldLastValueAgg (retract -> null),
FieldLastNonNullValueAgg (retract of a non-null -> null), FieldListaggAgg (blank inputs skipped, distinct tokens),
FieldCollectAgg (retract removes one matching element each), FieldMergeMapAgg, FieldNestedUpdateAgg,
FieldIgnoreRetractAgg, AggregateMergeFunction (result kind INSERT, sequence number of the last record,
aggregation.remove-record-on-delete -> initRow + DELETE).
"""
from __future__ import annotations

import datetime
import decimal

import numpy as np
import pytest

from paimon_ops.merge.spec import MergeError
from tests.merge.util import merged, schema

AGG = {"merge-engine": "aggregation"}


def agg1(func: str, typ: str, rows: list[tuple], **opts: str) -> list[tuple]:
    """Merge (kind, seq, value) rows of key 1 with `func` on field v; returns [(kind, seq, v)]."""
    s = schema([("k", "INT"), ("v", typ)], ["k"], {**AGG, "fields.v.aggregate-function": func, **opts})
    out = merged(s, [(kind, seq, 0, 1, v) for kind, seq, v in rows])
    return [(r[0], r[1], r[3]) for r in out]


def value(func: str, typ: str, rows: list[tuple], **opts: str):
    (r,) = agg1(func, typ, rows, **opts)
    return r[2]


@pytest.mark.parametrize("func,typ,rows,expected", [
    ("sum", "INT", [("+I", 1, 5), ("+I", 2, 3), ("-U", 3, 5), ("+U", 4, 10)], 13),
    ("sum", "INT", [("-D", 1, 4), ("+I", 2, None)], -4),                      # null accumulator: negated input
    ("sum", "INT", [("+I", 1, None), ("+I", 2, None)], None),
    ("sum", "TINYINT", [("+I", 1, 100), ("+I", 2, 100)], -56),                # Java byte arithmetic wraps
    ("sum", "BIGINT", [("+I", 1, 2 ** 63 - 1), ("+I", 2, 1)], -(2 ** 63)),
    ("sum", "DECIMAL(10, 2)", [("+I", 1, decimal.Decimal("1.25")), ("+I", 2, decimal.Decimal("2.50")),
                               ("-U", 3, decimal.Decimal("0.25"))], decimal.Decimal("3.50")),
    ("sum", "DECIMAL(30, 2)", [("+I", 1, decimal.Decimal("1.25")), ("-D", 2, decimal.Decimal("2.50"))],
     decimal.Decimal("-1.25")),
    ("product", "INT", [("+I", 1, 2), ("+I", 2, 3), ("-U", 3, 2)], 3),
    ("product", "INT", [("+I", 1, 7), ("-U", 2, 2)], 3),                      # integer division truncates
    ("product", "INT", [("-U", 1, 4), ("+I", 2, 3)], 12),                     # retract on null acc -> input
    ("product", "DOUBLE", [("+I", 1, 1.5), ("+I", 2, None), ("+I", 3, 4.0)], 6.0),
    ("product", "DECIMAL(10, 2)", [("+I", 1, decimal.Decimal("1.50")), ("+I", 2, decimal.Decimal("1.25"))],
     decimal.Decimal("1.88")),                                                # HALF_UP to the scale
    ("max", "INT", [("+I", 1, 3), ("+I", 2, None), ("+I", 3, 7), ("+I", 4, 5)], 7),
    ("min", "INT", [("+I", 1, 3), ("+I", 2, None), ("+I", 3, 7), ("+I", 4, 5)], 3),
    ("max", "STRING", [("+I", 1, "z"), ("+I", 2, "\u00e9"), ("+I", 3, "b")], "\u00e9"),
    ("min", "DATE", [("+I", 1, 20000), ("+I", 2, 19000)], datetime.date(2022, 1, 8)),
    ("last_value", "STRING", [("+I", 1, "a"), ("+I", 2, None)], None),
    ("last_value", "STRING", [("+I", 1, "a"), ("-U", 2, "a")], None),
    ("last_non_null_value", "STRING", [("+I", 1, "a"), ("+I", 2, None)], "a"),
    ("last_non_null_value", "STRING", [("+I", 1, "a"), ("-U", 2, "b")], None),  # retract of a non-null
    ("last_non_null_value", "STRING", [("+I", 1, "a"), ("-U", 2, None)], "a"),
    ("first_value", "STRING", [("+I", 1, None), ("+I", 2, "a")], None),
    ("first_non_null_value", "STRING", [("+I", 1, None), ("+I", 2, "a"), ("+I", 3, "b")], "a"),
    ("first_not_null_value", "STRING", [("+I", 1, None), ("+I", 2, "a"), ("+I", 3, "b")], "a"),  # legacy name
    ("listagg", "STRING", [("+I", 1, "a"), ("+I", 2, None), ("+I", 3, ""), ("+I", 4, " \t"), ("+I", 5, "b")],
     "a,b"),
    ("bool_and", "BOOLEAN", [("+I", 1, True), ("+I", 2, None), ("+I", 3, False)], False),
    ("bool_or", "BOOLEAN", [("+I", 1, False), ("+I", 2, None), ("+I", 3, True)], True),
    ("bool_or", "BOOLEAN", [("+I", 1, None), ("+I", 2, None)], None),
])
def test_functions(func, typ, rows, expected):
    assert value(func, typ, rows) == expected


def test_listagg_delimiter_and_distinct():
    # FieldAggregatorTest#testFieldListAggWithDefaultDelimiterAndDistinct (apache/paimon#6566/#6582), exact tokens (apache/paimon#7652)
    rows = [("+I", 1, "a,a"), ("+I", 2, "b,a"), ("+I", 3, ",c")]
    assert value("listagg", "STRING", rows) == "a,a,b,a,,c"
    # distinct: tokens of later inputs already present (or blank) are skipped; the first input stays as it is
    assert value("listagg", "STRING", rows, **{"fields.v.distinct": "true"}) == "a,a,b,c"
    assert value("listagg", "STRING", [("+I", 1, "x"), ("+I", 2, "y")],
                 **{"fields.v.list-agg-delimiter": " | "}) == "x | y"


@pytest.mark.parametrize("func,typ,v", [("max", "INT", 1), ("min", "INT", 1), ("first_value", "INT", 1),
                                        ("first_non_null_value", "INT", 1), ("bool_and", "BOOLEAN", True),
                                        ("listagg", "STRING", "a")])
def test_functions_without_retraction(func, typ, v):
    rows = [("+I", 1, v), ("-U", 2, v)]
    with pytest.raises(MergeError, match=f"'{func}' of field 'v' does not support retraction.*"
                                         "'fields.v.ignore-retract'='true'"):
        value(func, typ, rows)
    # ignore-retract turns the retraction into a no-op
    expected = "a,a" if func == "listagg" else v
    assert value(func, typ, rows + [("+I", 3, v)], **{"fields.v.ignore-retract": "true"}) == expected


def test_ignore_retract_on_retractable_functions():
    rows = [("+I", 1, 5), ("-U", 2, 5), ("+I", 3, 1)]
    assert value("sum", "INT", rows, **{"fields.v.ignore-retract": "true"}) == 6
    assert value("last_value", "INT", [("+I", 1, 5), ("-D", 2, 5)], **{"fields.v.ignore-retract": "true"}) == 5


def test_float_sums_are_sequential_like_java():
    vals = [1e16, 1.0, 1.0, -1e16, 0.1, 0.2, 0.3] * 3
    rows = [("+I", i, v) for i, v in enumerate(vals)]
    acc = vals[0]
    for v in vals[1:]:
        acc = acc + v   # Java: (double) accumulator + (double) inputField, left to right
    assert value("sum", "DOUBLE", rows) == acc
    f32 = [np.float32(x) for x in (16777216.0, 1.0, 1.0, 1.0, -3.0)]
    acc32 = f32[0]
    for v in f32[1:]:
        acc32 = np.float32(acc32 + v)
    assert value("sum", "FLOAT", [("+I", i, float(v)) for i, v in enumerate(f32)]) == float(acc32)


def test_long_groups_still_sum_sequentially():
    vals = [0.1 * (i % 7) + 1e10 * (i % 3 == 0) for i in range(500)]
    acc = vals[0]
    for v in vals[1:]:
        acc += v
    assert value("sum", "DOUBLE", [("+I", i, v) for i, v in enumerate(vals)]) == acc


def test_decimal_sum_overflow_follows_java():
    big = decimal.Decimal("9" * 28 + ".99")   # DECIMAL(30, 2) max
    # BigDecimal path: out-of-precision running sum becomes null (Decimal.fromBigDecimal) and restarts
    assert value("sum", "DECIMAL(30, 2)", [("+I", 1, big), ("+I", 2, big), ("+I", 3, decimal.Decimal("1.00"))]) \
        == decimal.Decimal("1.00")


def test_collect():
    arr = {"type": "ARRAY", "element": "INT"}
    rows = [("+I", 1, [1, 2]), ("+I", 2, None), ("+I", 3, [2, None])]
    assert value("collect", arr, rows) == [1, 2, 2, None]
    assert value("collect", arr, rows, **{"fields.v.distinct": "true"}) == [1, 2, None]
    # retraction removes one matching element per retracted element
    assert value("collect", arr, [("+I", 1, [1, 2, 2]), ("-U", 2, [2, 5])]) == [1, 2]
    assert value("collect", arr, [("-U", 1, [1]), ("+I", 2, [3])]) == [3]
    assert value("collect", arr, [("+I", 1, None), ("+I", 2, None)]) is None


def test_merge_map():
    m = {"type": "MAP", "key": "STRING NOT NULL", "value": "INT"}
    rows = [("+I", 1, [("a", 1), ("b", 2)]), ("+I", 2, [("b", 3), ("c", 4)])]
    assert dict(value("merge_map", m, rows)) == {"a": 1, "b": 3, "c": 4}
    assert dict(value("merge_map", m, rows + [("-U", 3, [("b", 0)])])) == {"a": 1, "c": 4}


NESTED = {"type": "ARRAY", "element": {"type": "ROW", "fields": [
    {"id": 10, "name": "id", "type": "INT"}, {"id": 11, "name": "x", "type": "STRING"}]}}


def test_nested_update():
    r1 = [{"id": 1, "x": "a"}, {"id": 2, "x": "b"}]
    r2 = [{"id": 1, "x": "c"}]
    keyed = {"fields.v.nested-key": "id"}
    out = value("nested_update", NESTED, [("+I", 1, r1), ("+I", 2, r2)], **keyed)
    assert sorted(out, key=lambda r: r["id"]) == [{"id": 1, "x": "c"}, {"id": 2, "x": "b"}]
    out = value("nested_update", NESTED, [("+I", 1, r1), ("-U", 2, [{"id": 2, "x": "zzz"}])], **keyed)
    assert out == [{"id": 1, "x": "a"}]
    # without a nested key: rows are appended; a retraction removes every equal row
    out = value("nested_update", NESTED, [("+I", 1, r1), ("+I", 2, r1), ("-U", 3, [{"id": 2, "x": "b"}])])
    assert out == [{"id": 1, "x": "a"}, {"id": 1, "x": "a"}]


def test_nested_update_master_options():
    # FieldNestedUpdateAgg (master): nested-sequence-field, count-limit, nested-key-null-strategy
    keyed = {"fields.v.nested-key": "id"}
    rows = [("+I", 1, [{"id": 1, "x": "b"}]), ("+I", 2, [{"id": 1, "x": "a"}])]
    assert value("nested_update", NESTED, rows, **keyed, **{"fields.v.nested-sequence-field": "x"}) == \
        [{"id": 1, "x": "b"}]   # "a" < "b": the newer row does not replace the key
    rows = [("+I", 1, [{"id": 1, "x": "a"}]), ("+I", 2, [{"id": 2, "x": "b"}, {"id": 3, "x": "c"}])]
    assert value("nested_update", NESTED, rows, **keyed, **{"fields.v.count-limit": "2"}) == \
        [{"id": 1, "x": "a"}, {"id": 2, "x": "b"}]
    assert value("nested_update", NESTED, rows, **{"fields.v.count-limit": "2"}) == \
        [{"id": 1, "x": "a"}, {"id": 2, "x": "b"}]
    nulls = [("+I", 1, [{"id": None, "x": "a"}]), ("+I", 2, [{"id": 1, "x": "b"}])]
    assert value("nested_update", NESTED, nulls, **keyed, **{"fields.v.nested-key-null-strategy": "ignore"}) == \
        [{"id": 1, "x": "b"}]
    with pytest.raises(MergeError, match="nested key of field 'v' contains null"):
        value("nested_update", NESTED, nulls, **keyed, **{"fields.v.nested-key-null-strategy": "error"})


def test_result_kind_sequence_and_passthrough_fields():
    s = schema([("k", "INT"), ("s", "INT"), ("v", "INT"), ("w", "STRING")], ["k"],
               {**AGG, "sequence.field": "s", "fields.v.aggregate-function": "sum",
                "fields.default-aggregate-function": "max"})
    rows = [("+U", 5, 0, 1, 1, 2, "b"), ("+U", 9, 0, 1, 2, 3, "a")]
    # sequence field -> last_value, default function -> w, result kind INSERT, newest sequence number
    assert merged(s, rows) == [("+I", 9, 1, 2, 5, "b")]
    rows.append(("-U", 10, 0, 1, 3, 3, None))
    s2 = schema([("k", "INT"), ("s", "INT"), ("v", "INT")], ["k"],
                {**AGG, "sequence.field": "s", "fields.v.aggregate-function": "sum"})
    assert merged(s2, [r[:6] for r in rows]) == [("+I", 10, 1, None, 2)]   # last_value retracted -> null


def test_single_record_is_not_reaggregated():
    # ReducerMergeFunctionWrapper: the lone record is emitted as is (kind and values).
    assert agg1("sum", "INT", [("-U", 3, 5)]) == [("-U", 3, 5)]
    assert agg1("listagg", "STRING", [("+U", 3, "  ")]) == [("+U", 3, "  ")]
    assert agg1("sum", "INT", [("-U", 3, 5)], **{}) == [("-U", 3, 5)]
    s = schema([("k", "INT"), ("v", "INT")], ["k"], {**AGG, "fields.v.aggregate-function": "sum"})
    assert merged(s, [("-D", 3, 0, 1, 5)], drop_delete=True) == []


def test_remove_record_on_delete():
    # AggregateMergeFunction.add: a -D re-initialises the row with the -D's values (initRow copies every field
    # since apache/paimon#7645) and marks the result DELETE; later records aggregate on top of those values.
    opts = {"aggregation.remove-record-on-delete": "true"}
    assert agg1("sum", "INT", [("+I", 1, 5), ("-D", 2, 5), ("+I", 3, 2)], **opts) == [("+I", 3, 7)]
    assert agg1("sum", "INT", [("+I", 1, 5), ("-D", 2, 4)], **opts) == [("-D", 2, 4)]
    assert agg1("sum", "INT", [("+I", 1, 5), ("-D", 2, 4)], **opts) == [("-D", 2, 4)]
    assert agg1("sum", "INT", [("+I", 1, 5), ("-U", 2, 5), ("+I", 3, 1)], **opts) == [("+I", 3, 1)]  # -U retracts
    assert agg1("sum", "INT", [("+I", 1, 5), ("-D", 2, None), ("+I", 3, 1)], **opts) == [("+I", 3, 1)]
    s = schema([("k", "INT"), ("n", "INT NOT NULL")], ["k"],
               {**AGG, "fields.n.aggregate-function": "sum", **opts})
    assert merged(s, [("+I", 1, 0, 1, 5), ("-D", 2, 0, 1, 7), ("+I", 3, 0, 1, 1)]) == [("+I", 3, 1, 8)]


def test_many_keys_mixed_sizes():
    s = schema([("k", "INT"), ("v", "BIGINT"), ("m", "INT")], ["k"],
               {**AGG, "fields.v.aggregate-function": "sum", "fields.m.aggregate-function": "max"})
    rows = []
    for k in range(50):
        for j in range(k % 4 + 1):
            rows.append(("+I", k * 10 + j, 0, k, j + 1, (k * 7 + j) % 11))
    out = merged(s, rows)
    assert len(out) == 50
    for k, r in enumerate(out):
        n = k % 4 + 1
        assert r[2] == k
        if n == 1:
            assert r[3:] == (1, (k * 7) % 11)
        else:
            assert r[3] == n * (n + 1) // 2 and r[4] == max((k * 7 + j) % 11 for j in range(n))
