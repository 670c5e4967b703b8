"""deduplicate and first-row (maintenance.md §6.2, §6.3, §6.6, §6.7).

Java: DeduplicateMergeFunction (keeps the last record, skips retracts with ignore-delete, result null when
everything was skipped), FirstRowMergeFunction (keeps the first; a retract throws "By default, First row merge
engine can not accept DELETE/UPDATE_BEFORE records" unless ignore-delete), ReducerMergeFunctionWrapper (a
single record is returned without calling the merge function), LookupMergeFunction.wrap (first-row is not
wrapped).
"""
from __future__ import annotations

import pytest

from paimon_ops.merge.spec import MergeError
from tests.merge.util import merged, schema

F = [("k", "INT"), ("v", "STRING")]


@pytest.mark.parametrize("rows,drop,expected", [
    ([("+I", 1, 0, 1, "a"), ("+I", 2, 0, 1, "b")], False, [("+I", 2, 1, "b")]),
    ([("+I", 1, 0, 1, "a"), ("+U", 2, 0, 1, "b")], False, [("+U", 2, 1, "b")]),   # winner keeps its kind
    ([("+I", 1, 0, 1, "a"), ("-D", 2, 0, 1, "a")], False, [("-D", 2, 1, "a")]),   # a DELETE can win
    ([("+I", 1, 0, 1, "a"), ("-D", 2, 0, 1, "a")], True, []),
    ([("-U", 1, 0, 1, "a"), ("+U", 2, 0, 1, "b")], True, [("+U", 2, 1, "b")]),
    ([("-D", 5, 0, 1, "a")], False, [("-D", 5, 1, "a")]),                         # lone -D passes through
    ([("-D", 5, 0, 1, "a")], True, []),
])
def test_deduplicate(rows, drop, expected):
    assert merged(schema(F, ["k"]), rows, drop) == expected


@pytest.mark.parametrize("key", ["ignore-delete", "deduplicate.ignore-delete", "partial-update.ignore-delete",
                                 "first-row.ignore-delete"])
def test_deduplicate_ignore_delete(key):
    s = schema(F, ["k"], {key: "true"})
    assert merged(s, [("+I", 1, 0, 1, "a"), ("-D", 2, 0, 1, "a")]) == [("+I", 1, 1, "a")]
    assert merged(s, [("-D", 1, 0, 1, "a"), ("-U", 2, 0, 1, "a")]) == []   # every record skipped: no result
    # a single record bypasses the merge function, so even an ignored kind survives (ReducerMergeFunctionWrapper)
    assert merged(s, [("-D", 3, 0, 1, "a")]) == [("-D", 3, 1, "a")]


def test_deduplicate_lookup_rewrite_merges_single_records():
    s = schema(F, ["k"], {"deletion-vectors.enabled": "true", "ignore-delete": "true"})
    assert merged(s, [("-D", 3, 0, 1, "a")], lookup_rewrite=True) == []
    assert merged(s, [("+I", 3, 0, 1, "a")], lookup_rewrite=True) == [("+I", 3, 1, "a")]


def test_first_row_keeps_the_oldest_record_and_its_kind():
    s = schema(F, ["k"], {"merge-engine": "first-row"})
    rows = [("+I", 2, 0, 1, "b"), ("+U", 1, 0, 1, "a"), ("+I", 3, 0, 2, "c")]
    assert merged(s, rows) == [("+U", 1, 1, "a"), ("+I", 3, 2, "c")]


def test_first_row_rejects_retractions():
    s = schema(F, ["k"], {"merge-engine": "first-row"})
    with pytest.raises(MergeError, match="First row merge engine can not accept DELETE/UPDATE_BEFORE.*table default.t"
                       "|table default.t.*First row merge engine can not accept"):
        merged(s, [("+I", 1, 0, 1, "a"), ("-D", 2, 0, 1, "a")])
    # a lone retraction never reaches the merge function in the reducer path ...
    assert merged(s, [("-D", 2, 0, 1, "a")]) == [("-D", 2, 1, "a")]
    # ... but does in the lookup-rewrite path (FirstRowMergeFunctionWrapper adds every record)
    with pytest.raises(MergeError):
        merged(s, [("-D", 2, 0, 1, "a")], lookup_rewrite=True)


def test_first_row_ignore_delete():
    s = schema(F, ["k"], {"merge-engine": "first-row", "first-row.ignore-delete": "true"})
    rows = [("-D", 1, 0, 1, "x"), ("+I", 2, 0, 1, "b"), ("-U", 3, 0, 1, "b"), ("+I", 4, 0, 1, "c")]
    assert merged(s, rows) == [("+I", 2, 1, "b")]
    assert merged(s, [("-D", 1, 0, 1, "x"), ("-U", 2, 0, 1, "x")]) == []
    assert merged(s, [("-D", 1, 0, 1, "x")], lookup_rewrite=True) == []


def test_first_row_does_not_filter_levels():
    # LookupMergeFunction.wrap leaves FirstRowMergeFunction unwrapped: every level takes part.
    s = schema(F, ["k"], {"merge-engine": "first-row"})
    rows = [("+I", 10, 0, 1, "l0"), ("+I", 5, 2, 1, "l2"), ("+I", 1, 5, 1, "l5")]
    assert merged(s, rows) == [("+I", 1, 1, "l5")]
