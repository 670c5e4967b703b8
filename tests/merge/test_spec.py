"""MergeSpec validation and option resolution.

Java references: PartialUpdateMergeFunction.Factory (conflict checks, "Field %s is defined repeatedly by multiple
groups", "Must use sequence group for aggregation functions but not found for field %s"), AggregateMergeFunction
.getAggFuncName, FieldAggregator.createFieldAggregator ("Use unsupported aggregation: %s"), aggregate/factory/*
(type checks), CoreOptions.IGNORE_DELETE fallback keys, TableSchemaTest.testSequenceField / testFieldsPrefix.
"""
from __future__ import annotations

import pytest

from paimon_ops.errors import InvalidOptionError, UnsupportedError
from paimon_ops.merge.spec import MergeSpec
from tests.merge.util import schema, spec_of

F = [("k", "INT"), ("a", "INT"), ("b", "STRING"), ("s", "BIGINT"), ("arr", "STRING")]


def _spec(opts: dict[str, str], fields=F, pk=("k",), partition=None) -> MergeSpec:
    return spec_of(schema(fields, list(pk), opts, partition))


@pytest.mark.parametrize("opts,option,text", [
    ({"merge-engine": "sum"}, "merge-engine", "one of deduplicate"),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "count"}, "fields.a.aggregate-function",
     "'count' does not exist"),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "sumx"}, "fields.a.aggregate-function", "unknown"),
    ({"merge-engine": "aggregation", "fields.default-aggregate-function": "sum"}, "fields.default-aggregate-function",
     "numeric"),  # sum over STRING field b
    ({"merge-engine": "aggregation", "fields.b.aggregate-function": "sum"}, "fields.b.aggregate-function", "'b'"),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "listagg"}, "fields.a.aggregate-function",
     "VARCHAR"),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "bool_or"}, "fields.a.aggregate-function",
     "BOOLEAN"),
    ({"merge-engine": "aggregation", "fields.b.aggregate-function": "collect"}, "fields.b.aggregate-function", "ARRAY"),
    ({"merge-engine": "aggregation", "fields.b.aggregate-function": "merge_map"}, "fields.b.aggregate-function", "MAP"),
    ({"merge-engine": "aggregation", "fields.b.aggregate-function": "nested_update"}, "fields.b.aggregate-function",
     "ARRAY<ROW"),
    ({"merge-engine": "aggregation", "fields.fake.aggregate-function": "max"}, "fields.fake.aggregate-function",
     "can not be found"),
    ({"merge-engine": "aggregation", "fields.a.aggregate-function": "sum", "fields.a.ignore-retract": "true",
      "aggregation.remove-record-on-delete": "true"}, "fields.a.ignore-retract", "conflicting"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "a,zz"}, "fields.s.sequence-group", "'zz'"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "a,k"}, "fields.s.sequence-group", "primary key"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "a", "fields.arr.sequence-group": "a"},
     "fields.s.sequence-group", "defined repeatedly"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "a", "fields.a.sequence-group": "b"},
     "sequence-group", "defined repeatedly"),
    ({"merge-engine": "partial-update", "fields.a.aggregate-function": "sum"}, "fields.a.aggregate-function",
     "sequence group"),
    ({"merge-engine": "partial-update", "fields.default-aggregate-function": "max", "fields.s.sequence-group": "a"},
     "fields.default-aggregate-function", "field 'b'"),
    ({"merge-engine": "partial-update", "ignore-delete": "true", "partial-update.remove-record-on-delete": "true"},
     "partial-update.remove-record-on-delete", "ignore-delete"),
    ({"merge-engine": "partial-update", "partial-update.ignore-delete": "true", "fields.s.sequence-group": "a",
      "partial-update.remove-record-on-sequence-group": "s"}, "partial-update.remove-record-on-sequence-group",
     "ignore-delete"),
    ({"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true",
      "fields.s.sequence-group": "a"}, "partial-update.remove-record-on-delete", "sequence groups"),
    ({"merge-engine": "partial-update", "fields.s.sequence-group": "a",
      "partial-update.remove-record-on-sequence-group": "a"}, "partial-update.remove-record-on-sequence-group",
     "'a' is not one"),
    ({"merge-engine": "first-row", "deletion-vectors.enabled": "true"}, "deletion-vectors.enabled", "first-row"),
    ({"merge-engine": "first-row", "sequence.field": "s"}, "sequence.field", "FIRST_ROW"),
    ({"sequence.field": "nope"}, "sequence.field", "'nope' can not be found"),
    ({"sequence.field": "s,s"}, "sequence.field", "repeatedly"),
    ({"sequence.field": "s", "sequence.field.sort-order": "up"}, "sequence.field.sort-order", "descending"),
    ({"merge-engine": "aggregation", "sequence.field": "s", "fields.s.aggregate-function": "max"},
     "fields.s.aggregate-function", "sequence field 's'"),
    ({"ignore-delete": "yes"}, "ignore-delete", "true or false"),
])
def test_bad_config_is_a_clear_error_naming_table_option_and_field(opts, option, text):
    with pytest.raises(InvalidOptionError) as e:
        _spec(opts)
    msg = str(e.value)
    assert "table default.t" in msg
    assert option in msg
    assert text in msg


@pytest.mark.parametrize("func", ["avg", "hll_sketch", "theta_sketch", "rbm32", "rbm64", "merge_map_with_keytime",
                                  "nested_partial_update"])
def test_functions_java_has_but_we_do_not_are_refused(func):
    with pytest.raises(UnsupportedError, match=f"'{func}' of field 'a'.*table default.t|table default.t.*'{func}'"):
        _spec({"merge-engine": "aggregation", "fields.a.aggregate-function": func})


def test_aggregation_function_resolution():
    # AggregateMergeFunction.getAggFuncName: sequence field -> last_value, primary key -> pass-through,
    # per-field function, then fields.default-aggregate-function, then last_non_null_value.
    s = _spec({"merge-engine": "aggregation", "sequence.field": "s", "fields.a.aggregate-function": "SUM",
               "fields.default-aggregate-function": "first_not_null_value"})
    funcs = {a.field: a.func for a in s.aggregators}
    assert funcs == {"k": "primary-key", "a": "sum", "b": "first_non_null_value", "s": "last_value",
                     "arr": "first_non_null_value"}
    s = _spec({"merge-engine": "aggregation"})
    assert {a.field: a.func for a in s.aggregators}["a"] == "last_non_null_value"


def test_partition_fields_are_primary_keys_not_merge_keys():
    s = _spec({"merge-engine": "aggregation", "fields.default-aggregate-function": "max"},
              pk=("p", "k"), partition=["p"], fields=[("p", "STRING"), *F])
    assert s.key_fields == ("k",)
    assert {a.field: a.func for a in s.aggregators}["p"] == "primary-key"


@pytest.mark.parametrize("key", ["ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                                 "partial-update.ignore-delete"])
def test_ignore_delete_fallback_keys(key):
    assert _spec({key: "true"}).ignore_delete
    assert _spec({"merge-engine": "first-row", key: "true"}).ignore_delete


@pytest.mark.parametrize("opts,needs", [
    ({}, False),
    ({"deletion-vectors.enabled": "true"}, True),
    ({"changelog-producer": "lookup"}, True),
    ({"changelog-producer": "full-compaction"}, False),
    ({"force-lookup": "true"}, True),
    ({"merge-engine": "first-row"}, True),
])
def test_needs_lookup(opts, needs):
    assert _spec(opts).needs_lookup is needs


def test_last_non_null_value_needs_no_sequence_group_in_partial_update():
    s = _spec({"merge-engine": "partial-update", "fields.default-aggregate-function": "last_non_null_value"})
    assert s.aggregators[1] is not None and s.aggregators[1].func == "last_non_null_value"


def test_sequence_groups_parsed():
    s = _spec({"merge-engine": "partial-update", "fields.s,arr.sequence-group": "a,b",
               "partial-update.remove-record-on-sequence-group": "arr", "fields.a.aggregate-function": "sum"})
    (g,) = s.sequence_groups
    assert g.seq_fields == ("s", "arr") and g.value_fields == ("a", "b") and g.remove_on_delete
    assert s.aggregators[1].func == "sum"


def test_table_without_primary_key_is_refused():
    with pytest.raises(UnsupportedError, match="primary-key"):
        _spec({}, pk=())


def test_nested_key_must_exist():
    fields = [("k", "INT"), ("n", {"type": "ARRAY", "element": {"type": "ROW", "fields": [
        {"id": 10, "name": "id", "type": "INT"}]}})]
    with pytest.raises(InvalidOptionError, match="fields.n.nested-key.*'zz' not found"):
        _spec({"merge-engine": "aggregation", "fields.n.aggregate-function": "nested_update",
               "fields.n.nested-key": "zz"}, fields=fields)
    with pytest.raises(InvalidOptionError, match="fields.n.nested-sequence-field.*nested-key"):
        _spec({"merge-engine": "aggregation", "fields.n.aggregate-function": "nested_update",
               "fields.n.nested-sequence-field": "id"}, fields=fields)
    with pytest.raises(InvalidOptionError, match="fields.n.count-limit.*non-negative"):
        _spec({"merge-engine": "aggregation", "fields.n.aggregate-function": "nested_update",
               "fields.n.count-limit": "-1"}, fields=fields)


def test_default_value_option_does_not_change_merging():
    # fields.<f>.default-value is applied by Java's read path (DefaultValueAssigner: "invoke of assigning should be
    # after merge") or, in newer versions, at write time; never by the merge function.
    from tests.merge.util import merged
    s = schema([("k", "INT"), ("v", "STRING")], ["k"], {"merge-engine": "partial-update", "fields.v.default-value": "d"})
    assert merged(s, [("+I", 1, 0, 1, None), ("+I", 2, 0, 1, None)]) == [("+I", 2, 1, None)]
