"""Record order inside a key and key order of the output (maintenance.md §6.1).

Java: SortMergeReaderWithMinHeap/LoserTree compare key, then UserDefinedSeqComparator (sequence.field,
CodeGenUtils.newRecordComparator with nullsIsLast=false: null is the smallest value in both sort orders,
GenerateUtils.generateRowCompare negates only non-null comparisons), then the sequence number.
Key order: the generated key comparator; strings compare as UTF-8 bytes (BinaryString.compareTo).
"""
from __future__ import annotations

import datetime as dt

import pytest

from tests.merge.util import merged, schema

S = [("k", "INT"), ("s", "BIGINT"), ("v", "STRING")]


@pytest.mark.parametrize("order,expected", [
    ("ascending", ("+I", 1, 1, 5, "a")),   # null < 3 < 5: the record with s=5 is newest
    ("descending", ("+I", 2, 1, 3, "b")),  # null first still, then 5, then 3
])
def test_sequence_field_order_and_null_handling(order, expected):
    s = schema(S, ["k"], {"sequence.field": "s", "sequence.field.sort-order": order})
    rows = [("+I", 1, 0, 1, 5, "a"), ("+I", 2, 0, 1, 3, "b"), ("+I", 3, 0, 1, None, "c")]
    assert merged(s, rows) == [expected]


def test_null_sequence_value_is_oldest():
    s = schema(S, ["k"], {"sequence.field": "s"})
    assert merged(s, [("+I", 9, 0, 1, None, "late"), ("+I", 1, 0, 1, 0, "early")]) == [("+I", 1, 1, 0, "early")]


def test_sequence_field_ties_fall_back_to_sequence_number_then_retract_first():
    s = schema(S, ["k"], {"sequence.field": "s"})
    rows = [("+I", 7, 0, 1, 4, "x"), ("+I", 5, 0, 1, 4, "y")]
    assert merged(s, rows) == [("+I", 7, 1, 4, "x")]
    # full tie (same sequence field and sequence number): the retraction is ordered first
    rows = [("+I", 5, 0, 2, 4, "add"), ("-D", 5, 0, 2, 4, "del")]
    assert merged(s, rows) == [("+I", 5, 2, 4, "add")]


def test_multiple_sequence_fields_compare_lexicographically():
    s = schema([("k", "INT"), ("s1", "INT"), ("s2", "STRING"), ("v", "INT")], ["k"], {"sequence.field": "s1,s2"})
    rows = [("+I", 1, 0, 1, 2, "b", 10), ("+I", 2, 0, 1, 2, "a", 20), ("+I", 3, 0, 1, 1, "z", 30),
            ("+I", 4, 0, 1, 2, None, 40)]
    assert merged(s, rows) == [("+I", 1, 1, 2, "b", 10)]


def test_string_sequence_field_descending_with_nulls():
    s = schema([("k", "STRING"), ("s", "STRING"), ("v", "INT")], ["k"],
               {"sequence.field": "s", "sequence.field.sort-order": "descending"})
    rows = [("+I", 1, 0, "x", "b", 1), ("+I", 2, 0, "x", "a", 2), ("+I", 3, 0, "x", None, 3)]
    assert merged(s, rows) == [("+I", 2, "x", "a", 2)]


def test_timestamp_sequence_field():
    s = schema([("k", "INT"), ("ts", "TIMESTAMP(3)"), ("v", "INT")], ["k"], {"sequence.field": "ts"})
    t0 = dt.datetime(2024, 1, 1)
    rows = [("+I", 1, 0, 1, t0 + dt.timedelta(seconds=5), 1), ("+I", 2, 0, 1, t0, 2)]
    assert merged(s, rows) == [("+I", 1, 1, t0 + dt.timedelta(seconds=5), 1)]


def test_key_order_is_utf8_byte_order_not_utf16():
    s = schema([("k", "STRING"), ("v", "INT")], ["k"])
    keys = ["b", "a", "\u00e9", "z", "\u4e2d", "\U0001f600", "\uffee", "A"]
    rows = [("+I", i, 0, k, i) for i, k in enumerate(keys)]
    out = [r[2] for r in merged(s, rows)]
    assert out == ["A", "a", "b", "z", "\u00e9", "\u4e2d", "\uffee", "\U0001f600"]
    assert out == sorted(keys, key=lambda x: x.encode("utf-8"))


def test_composite_key_order_and_grouping():
    s = schema([("k1", "INT"), ("k2", "STRING"), ("v", "INT")], ["k1", "k2"])
    rows = [("+I", 1, 0, 2, "a", 1), ("+I", 2, 0, 1, "b", 2), ("+I", 3, 0, 1, "a", 3), ("+I", 4, 0, 1, "b", 4),
            ("+I", 5, 0, -3, "z", 5)]
    assert merged(s, rows) == [("+I", 5, -3, "z", 5), ("+I", 3, 1, "a", 3), ("+I", 4, 1, "b", 4),
                               ("+I", 1, 2, "a", 1)]


def test_negative_and_large_integer_keys():
    s = schema([("k", "BIGINT"), ("v", "INT")], ["k"])
    big = 2 ** 62
    rows = [("+I", 1, 0, big, 1), ("+I", 2, 0, -big, 2), ("+I", 3, 0, 0, 3), ("+I", 4, 0, big, 4)]
    assert merged(s, rows) == [("+I", 2, -big, 2), ("+I", 3, 0, 3), ("+I", 4, big, 4)]


def test_binary_keys_compare_unsigned():
    s = schema([("k", "BYTES"), ("v", "INT")], ["k"])
    rows = [("+I", 1, 0, b"\xff", 1), ("+I", 2, 0, b"\x01", 2), ("+I", 3, 0, b"\x01\x00", 3)]
    assert [r[2] for r in merged(s, rows)] == [b"\x01", b"\x01\x00", b"\xff"]


def test_input_order_is_irrelevant():
    s = schema(S, ["k"])
    rows = [("+I", 3, 0, 1, None, "c"), ("+I", 1, 0, 1, None, "a"), ("+I", 2, 0, 1, None, "b")]
    assert merged(s, rows) == [("+I", 3, 1, None, "c")]
    assert merged(s, list(reversed(rows))) == [("+I", 3, 1, None, "c")]
