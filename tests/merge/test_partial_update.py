"""Partial-update (maintenance.md §6.4), checked against Java master's PartialUpdateMergeFunction:
add() (initRow of NOT NULL fields on the first retract, ignore-delete, remove-record-on-delete),
updateNonNullFields ("Field i can not be null"), updateWithSequenceGroup / retractWithSequenceGroup
(skip all-null group sequences, compare >= 0, sequence fields move together, aggReversed for older records,
retract nulls non-aggregated fields, remove-record-on-sequence-group resets the row), getResult
(DELETE if the last record removed the row or no insert was met; latestSequenceNumber reset to 0 - apache/paimon#5425).
"""
from __future__ import annotations

import pytest

from paimon_ops.merge.spec import MergeError
from tests.merge.util import merged, schema

PU = {"merge-engine": "partial-update"}
F = [("k", "INT"), ("a", "STRING"), ("b", "INT"), ("c", "BIGINT")]


def test_non_null_fields_overwrite():
    rows = [("+I", 1, 0, 1, "a", None, 10), ("+U", 2, 0, 1, None, 7, None), ("+I", 3, 0, 1, "b", None, None)]
    assert merged(schema(F, ["k"], PU), rows) == [("+I", 3, 1, "b", 7, 10)]


def test_merged_kind_is_insert_even_for_update_after_inputs():
    rows = [("+U", 1, 0, 1, "a", 1, 1), ("+U", 2, 0, 1, None, 2, None)]
    assert merged(schema(F, ["k"], PU), rows) == [("+I", 2, 1, "a", 2, 1)]


def test_single_record_passes_through_unchanged():
    assert merged(schema(F, ["k"], PU), [("+U", 4, 0, 1, None, 2, None)]) == [("+U", 4, 1, None, 2, None)]
    assert merged(schema(F, ["k"], PU), [("-D", 4, 0, 1, "x", 2, None)]) == [("-D", 4, 1, "x", 2, None)]


def test_retraction_without_handling_is_an_error():
    with pytest.raises(MergeError, match="Partial update can not accept delete records.*ignore-delete"):
        merged(schema(F, ["k"], PU), [("+I", 1, 0, 1, "a", 1, 1), ("-U", 2, 0, 1, "a", 1, 1)])


def test_null_in_not_null_column_is_an_error():
    s = schema([("k", "INT"), ("a", "STRING NOT NULL")], ["k"], PU)
    with pytest.raises(MergeError, match="'a' can not be null"):
        merged(s, [("+I", 1, 0, 1, "x"), ("+I", 2, 0, 1, None)])


def test_ignore_delete():
    s = schema(F, ["k"], {**PU, "partial-update.ignore-delete": "true"})
    rows = [("+I", 1, 0, 1, "a", 1, None), ("-D", 2, 0, 1, "z", 9, 9), ("+I", 3, 0, 1, None, None, 5)]
    assert merged(s, rows) == [("+I", 3, 1, "a", 1, 5)]
    # only retractions: no insert met -> DELETE; the first retraction seeded the row (initRow), sequence number 0
    assert merged(s, [("-D", 7, 0, 1, "z", 9, 9), ("-U", 8, 0, 1, "y", 1, 1)]) == [("-D", 0, 1, "z", 9, 9)]
    assert merged(s, [("-D", 7, 0, 1, "z", 9, 9), ("-U", 8, 0, 1, "y", 1, 1)], drop_delete=True) == []


def test_leading_retraction_seeds_the_row_even_when_ignored():
    # add(): initRow(row, value) runs for the first retraction before the ignore-delete check, and copies every
    # field (Java master, apache/paimon#7645); later adds only overwrite with their non-null fields.
    s = schema(F, ["k"], {**PU, "ignore-delete": "true"})
    rows = [("-D", 1, 0, 1, "z", 9, 9), ("+I", 2, 0, 1, None, 1, None)]
    assert merged(s, rows) == [("+I", 2, 1, "z", 1, 9)]
    s = schema([("k", "INT"), ("n", "INT NOT NULL"), ("a", "STRING")], ["k"], {**PU, "ignore-delete": "true"})
    assert merged(s, [("-D", 1, 0, 1, 7, "x"), ("-D", 2, 0, 1, 8, "y")]) == [("-D", 0, 1, 7, "x")]
    with pytest.raises(MergeError, match="'n' is NOT NULL|'n' can not be null"):
        merged(s, [("-D", 1, 0, 1, None, "x"), ("+I", 2, 0, 1, 8, "y")])


def test_remove_record_on_delete():
    s = schema(F, ["k"], {**PU, "partial-update.remove-record-on-delete": "true"})
    # the -D resets the row to the -D's values (initRow); later adds overwrite with non-null fields
    rows = [("+I", 1, 0, 1, "a", 1, 1), ("-D", 2, 0, 1, "x", 9, 9), ("+I", 3, 0, 1, None, 5, None)]
    assert merged(s, rows) == [("+I", 3, 1, "x", 5, 9)]
    assert merged(s, rows[:2]) == [("-D", 2, 1, "x", 9, 9)]
    assert merged(s, rows[:2], drop_delete=True) == []
    # -U is ignored but still moves the sequence number
    assert merged(s, [("+I", 1, 0, 1, "a", 1, 1), ("-U", 2, 0, 1, "b", 2, 2)]) == [("+I", 2, 1, "a", 1, 1)]
    # no insert at all -> DELETE (the first -U seeded the row)
    assert merged(s, [("-U", 1, 0, 1, "a", 1, 1), ("-U", 2, 0, 1, "b", 2, 2)]) == [("-D", 2, 1, "a", 1, 1)]


def test_remove_record_on_delete_with_not_null_fields():
    # mirrors Java PartialUpdateMergeFunctionTest / paimon-cpp TestInitRowWithNullableFieldOnDelete:
    # {1,3,5,7} then -D {1,2,2,null} -> {1,2,2,null}
    s = schema([("k", "INT"), ("n", "INT NOT NULL"), ("a", "STRING")], ["k"],
               {**PU, "partial-update.remove-record-on-delete": "true"})
    assert merged(s, [("+I", 1, 0, 1, 1, "a"), ("-D", 2, 0, 1, 7, None)]) == [("-D", 2, 1, 7, None)]


G = [("k", "INT"), ("a", "INT"), ("b", "INT"), ("s1", "INT"), ("c", "STRING"), ("s2", "INT")]
GROUPS = {**PU, "fields.s1.sequence-group": "a,b", "fields.s2.sequence-group": "c"}


def test_sequence_groups_update_independently_and_nulls_overwrite():
    rows = [
        ("+I", 1, 0, 1, 1, 1, 1, "c1", 1),
        ("+I", 2, 0, 1, 2, None, 2, "c2", None),   # group s1 newer: a=2 and b=null (true partial update);
                                                   # group s2 sequence all-null: skipped
        ("+I", 3, 0, 1, 3, 3, 1, "c3", 0),         # both groups older: ignored
    ]
    assert merged(schema(G, ["k"], GROUPS), rows) == [("+I", 3, 1, 2, None, 2, "c1", 1)]


def test_sequence_group_equal_sequence_updates():
    rows = [("+I", 1, 0, 1, 1, 1, 5, None, None), ("+I", 2, 0, 1, 2, 2, 5, None, None)]
    assert merged(schema(G, ["k"], GROUPS), rows) == [("+I", 2, 1, 2, 2, 5, None, None)]


def test_sequence_group_retraction_nulls_newer_groups_only():
    rows = [
        ("+I", 1, 0, 1, 1, 1, 2, "c", 2),
        ("-U", 2, 0, 1, 9, 9, 5, "x", 1),   # s1 newer -> a, b null, s1=5; s2 older -> untouched
    ]
    assert merged(schema(G, ["k"], GROUPS), rows) == [("+I", 2, 1, None, None, 5, "c", 2)]
    # no insert met: DELETE kind
    assert merged(schema(G, ["k"], GROUPS), [("-U", 2, 0, 1, 9, 9, 5, "x", 1), ("-D", 3, 0, 1, 9, 9, 6, "x", 1)]) == \
        [("-D", 3, 1, None, None, 6, None, 1)]


def test_remove_record_on_sequence_group():
    s = schema(G, ["k"], {**GROUPS, "partial-update.remove-record-on-sequence-group": "s2"})
    rows = [("+I", 1, 0, 1, 1, 1, 1, "c", 1), ("-D", 2, 0, 1, None, None, None, "x", 7)]
    # an accepted -D of the listed group resets the whole row to the -D's values and marks it DELETE
    assert merged(s, rows) == [("-D", 2, 1, None, None, None, "x", 7)]
    rows.append(("+I", 3, 0, 1, 6, 6, 0, None, None))   # builds on the reset row: s1=0 beats null
    assert merged(s, rows) == [("+I", 3, 1, 6, 6, 0, "x", 7)]
    # an older -D of that group does not remove the row; -U never does
    older = [("+I", 1, 0, 1, 1, 1, 1, "c", 5), ("-D", 2, 0, 1, None, None, None, "x", 3)]
    assert merged(s, older) == [("+I", 2, 1, 1, 1, 1, "c", 5)]
    upd = [("+I", 1, 0, 1, 1, 1, 1, "c", 5), ("-U", 2, 0, 1, None, None, None, "x", 6)]
    assert merged(s, upd) == [("+I", 2, 1, 1, 1, 1, None, 6)]


def test_multi_field_sequence_group_moves_sequence_fields_together():
    s = schema([("k", "INT"), ("a", "INT"), ("s1", "INT"), ("s2", "INT")], ["k"],
               {**PU, "fields.s1,s2.sequence-group": "a"})
    rows = [("+I", 1, 0, 1, 1, 1, 5), ("+I", 2, 0, 1, 2, 1, 3)]   # (1,3) < (1,5): ignored
    assert merged(s, rows) == [("+I", 2, 1, 1, 1, 5)]
    rows.append(("+I", 3, 0, 1, 3, 2, None))                      # (2,null) > (1,5): s2 becomes null
    assert merged(s, rows) == [("+I", 3, 1, 3, 2, None)]


def test_aggregation_inside_sequence_group():
    opts = {**PU, "fields.s1.sequence-group": "a,b", "fields.a.aggregate-function": "sum",
            "fields.b.aggregate-function": "last_non_null_value"}
    s = schema([("k", "INT"), ("a", "INT"), ("b", "INT"), ("s1", "INT")], ["k"], opts)
    rows = [("+I", 1, 0, 1, 1, None, 5), ("+I", 2, 0, 1, 2, 7, 3),   # older: sum still adds; b fills the null
            ("+I", 3, 0, 1, 4, 8, 1)]                              # older again: b already non-null, kept
    assert merged(s, rows) == [("+I", 3, 1, 7, 7, 5)]
    rows.append(("-U", 4, 0, 1, 2, None, 0))                       # retraction of an older record: 7 - 2
    assert merged(s, rows) == [("+I", 4, 1, 5, 7, 5)]


def test_first_value_inside_sequence_group_takes_older_records():
    # aggReversed(acc, v) = agg(v, acc): once initialised, FieldFirstValueAgg returns the older value.
    opts = {**PU, "fields.s1.sequence-group": "a", "fields.a.aggregate-function": "first_value"}
    s = schema([("k", "INT"), ("a", "INT"), ("s1", "INT")], ["k"], opts)
    assert merged(s, [("+I", 1, 0, 1, 10, 5), ("+I", 2, 0, 1, 20, 6)]) == [("+I", 2, 1, 10, 6)]
    assert merged(s, [("+I", 1, 0, 1, 10, 5), ("+I", 2, 0, 1, 20, 3)]) == [("+I", 2, 1, 20, 5)]


def test_listagg_inside_sequence_group_prepends_older_values():
    opts = {**PU, "fields.s1.sequence-group": "a", "fields.a.aggregate-function": "listagg"}
    s = schema([("k", "INT"), ("a", "STRING"), ("s1", "INT")], ["k"], opts)
    rows = [("+I", 1, 0, 1, "x", 5), ("+I", 2, 0, 1, "old", 3), ("+I", 3, 0, 1, "new", 9)]
    assert merged(s, rows) == [("+I", 3, 1, "old,x,new", 9)]


def test_fields_outside_groups_keep_non_null_overwrite():
    s = schema([("k", "INT"), ("a", "INT"), ("free", "STRING"), ("s1", "INT")], ["k"],
               {**PU, "fields.s1.sequence-group": "a"})
    rows = [("+I", 1, 0, 1, 1, "f1", 5), ("+I", 2, 0, 1, 2, None, 1), ("-U", 3, 0, 1, 3, "zz", 9)]
    # the retraction touches only its group; `free` keeps the last non-null value of an add
    assert merged(s, rows) == [("+I", 3, 1, None, "f1", 9)]
