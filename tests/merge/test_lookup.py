"""Lookup-mode merge (maintenance.md §5.3, §5.11, §10 item 15).

Java: LookupMergeFunction.pickHighLevel keeps level-0 records plus the record of the smallest level >= 1;
getResult merges only those. It wraps every engine but first-row (LookupMergeFunction.wrap). The
ReducerMergeFunctionWrapper around it counts records before that filtering, so two records (level 2 and 5)
reach the aggregate function as the level-2 record alone. LookupChangelogMergeFunctionWrapper (compactions
with level-0 input to an output level > 0) always calls the merge function, even for one record.
"""
from __future__ import annotations

from tests.merge.util import merged, schema

AGG_DV = {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", "deletion-vectors.enabled": "true"}
F = [("k", "INT"), ("v", "BIGINT")]


def test_aggregation_sums_level0_and_shallowest_level_only():
    rows = [("+I", 30, 0, 1, 1), ("+I", 20, 2, 1, 10), ("+I", 10, 5, 1, 100)]
    assert merged(schema(F, ["k"], AGG_DV), rows) == [("+I", 30, 1, 11)]
    # without lookup every level is aggregated (double counting on a lookup table)
    plain = {k: v for k, v in AGG_DV.items() if k != "deletion-vectors.enabled"}
    assert merged(schema(F, ["k"], plain), rows) == [("+I", 30, 1, 111)]


def test_several_level0_records_and_levels():
    # LookupChangelogMergeFunctionWrapperTest#testKeepLowestHighLevel (apache/paimon#5632): the smallest level >= 1 wins
    rows = [("+I", 40, 0, 1, 1), ("+I", 41, 0, 1, 2), ("+I", 20, 1, 1, 10), ("+I", 15, 3, 1, 100)]
    assert merged(schema(F, ["k"], AGG_DV), rows) == [("+I", 41, 1, 13)]


def test_only_high_levels_reaggregate_the_shallowest_record():
    # two records (> 1, no shortcut) -> LookupMergeFunction passes only the level-2 record to the aggregator
    rows = [("+U", 20, 2, 1, 10), ("+I", 10, 5, 1, 100)]
    assert merged(schema(F, ["k"], AGG_DV), rows) == [("+I", 20, 1, 10)]
    rows = [("-U", 20, 2, 1, 10), ("+I", 10, 5, 1, 100)]   # sum retract on a null accumulator
    assert merged(schema(F, ["k"], AGG_DV), rows) == [("+I", 20, 1, -10)]
    assert merged(schema(F, ["k"], AGG_DV), [("-U", 20, 2, 1, 10)]) == [("-U", 20, 1, 10)]   # single: as is


def test_lookup_rewrite_merges_every_key():
    s = schema(F, ["k"], AGG_DV)
    assert merged(s, [("-U", 20, 0, 1, 10)], lookup_rewrite=True) == [("+I", 20, 1, -10)]
    # the looked-up record from above the output level joins the merge (caller adds it with its level)
    assert merged(s, [("+I", 30, 0, 1, 1), ("+I", 5, 4, 1, 50)], lookup_rewrite=True) == [("+I", 30, 1, 51)]


def test_changelog_lookup_and_force_lookup_also_filter():
    rows = [("+I", 30, 0, 1, 1), ("+I", 20, 2, 1, 10), ("+I", 10, 5, 1, 100)]
    for opt in ({"changelog-producer": "lookup"}, {"force-lookup": "true"}):
        s = schema(F, ["k"], {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum", **opt})
        assert merged(s, rows) == [("+I", 30, 1, 11)]


def test_deduplicate_with_sequence_field_ignores_deeper_levels():
    s = schema([("k", "INT"), ("s", "INT"), ("v", "STRING")], ["k"],
               {"sequence.field": "s", "changelog-producer": "lookup"})
    rows = [("+I", 30, 0, 1, 1, "new"), ("+I", 20, 2, 1, 9, "mid"), ("+I", 10, 5, 1, 99, "old")]
    assert merged(s, rows) == [("+I", 20, 1, 9, "mid")]


def test_partial_update_lookup():
    s = schema([("k", "INT"), ("a", "INT"), ("b", "INT")], ["k"],
               {"merge-engine": "partial-update", "deletion-vectors.enabled": "true"})
    rows = [("+I", 30, 0, 1, None, 2), ("+I", 20, 1, 1, 1, None), ("+I", 10, 4, 1, 9, 9)]
    assert merged(s, rows) == [("+I", 30, 1, 1, 2)]


def test_drop_delete_with_lookup():
    s = schema(F, ["k"], {**AGG_DV, "aggregation.remove-record-on-delete": "true"})
    rows = [("-D", 30, 0, 1, 1), ("+I", 20, 1, 1, 10), ("+I", 21, 0, 2, 5), ("+I", 10, 3, 2, 7)]
    assert merged(s, rows) == [("-D", 30, 1, 1), ("+I", 21, 2, 12)]   # the -D's values (initRow)
    assert merged(s, rows, drop_delete=True) == [("+I", 21, 2, 12)]
