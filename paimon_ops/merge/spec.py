"""MergeSpec: everything the merge engines need, parsed and validated once per table.

Semantics follow Java Paimon (maintenance.md §5.11, §6). Java sources consulted (apache/paimon,
paimon-core/.../mergetree/compact/): PartialUpdateMergeFunction.Factory (sequence groups, conflicts,
getAggFuncName), aggregate/AggregateMergeFunction (getAggFuncName: sequence field -> last_value,
primary key -> pass-through, default last_non_null_value), aggregate/factory/*Factory (type checks),
CoreOptions (ignore-delete fallback keys), SchemaValidation/TableSchemaTest (sequence-field checks,
"Field fake_col can not be found in table schema.").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from paimon_ops.errors import InvalidOptionError, PaimonOpsError, UnsupportedError
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import DataType
from paimon_ops.options import (
    AGGREGATION_REMOVE_RECORD_ON_DELETE,
    DELETION_VECTORS_ENABLED,
    FIELD_AGGREGATE_FUNCTION,
    FIELD_COUNT_LIMIT,
    FIELD_DISTINCT,
    FIELD_IGNORE_RETRACT,
    FIELD_LIST_AGG_DELIMITER,
    FIELD_NESTED_KEY,
    FIELD_NESTED_KEY_NULL_STRATEGY,
    FIELD_NESTED_SEQUENCE_FIELD,
    FIELD_SEQUENCE_GROUP,
    FIELDS_DEFAULT_AGGREGATE_FUNCTION,
    FORCE_LOOKUP,
    IGNORE_DELETE,
    MERGE_ENGINE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE,
    PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
    SEQUENCE_FIELD,
    SEQUENCE_FIELD_SORT_ORDER,
    Option,
    Options,
)

ENGINES = MERGE_ENGINE.choices

NUMERIC_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"}
# Types InternalRowUtils.compare can order (used by max/min).
COMPARABLE_ROOTS = NUMERIC_ROOTS | {"BOOLEAN", "CHAR", "VARCHAR", "BINARY", "VARBINARY", "DATE", "TIME",
                                    "TIMESTAMP", "TIMESTAMP_LTZ"}

# Function names the aggregation factories of Java master register and that we implement.
SUPPORTED_FUNCS = {
    "sum", "product", "max", "min", "last_value", "last_non_null_value", "listagg", "bool_and", "bool_or",
    "first_value", "first_non_null_value", "collect", "merge_map", "nested_update",
}
LEGACY_ALIASES = {"first_not_null_value": "first_non_null_value"}
# Registered in Java but not implemented here: refuse rather than guess.
KNOWN_UNSUPPORTED_FUNCS = {"avg", "rbm32", "rbm64", "hll_sketch", "theta_sketch", "merge_map_with_keytime",
                           "nested_partial_update"}
PRIMARY_KEY_FUNC = "primary-key"  # internal: FieldPrimaryKeyAgg


class MergeError(PaimonOpsError):
    """Records that Java's merge function would reject (e.g. a retraction the engine cannot accept)."""


@dataclass(frozen=True)
class FieldAgg:
    """The aggregate function of one field (FieldAggregator in Java)."""

    field: str
    index: int
    func: str
    dtype: DataType
    ignore_retract: bool = False
    distinct: bool = False
    delimiter: str = ","
    nested_key: tuple[str, ...] = ()
    nested_key_null_strategy: str = "merge"   # fields.<f>.nested-key-null-strategy: merge | ignore | error
    nested_sequence: tuple[str, ...] = ()     # fields.<f>.nested-sequence-field
    count_limit: int = 2 ** 31 - 1            # fields.<f>.count-limit (Integer.MAX_VALUE)


@dataclass(frozen=True)
class SequenceGroup:
    """`fields.<s1>,<s2>.sequence-group = f1,f2`: sequence fields order updates of the value fields."""

    seq_fields: tuple[str, ...]
    value_fields: tuple[str, ...]
    remove_on_delete: bool  # a seq field is listed in partial-update.remove-record-on-sequence-group


@dataclass(frozen=True)
class MergeSpec:
    where: str
    engine: str
    field_names: tuple[str, ...]
    field_types: tuple[DataType, ...]
    key_fields: tuple[str, ...]          # trimmed primary keys: the merge key
    primary_keys: tuple[str, ...]        # full primary keys (incl. partition fields): pass-through fields
    sequence_fields: tuple[str, ...] = ()
    sequence_ascending: bool = True
    ignore_delete: bool = False
    needs_lookup: bool = False
    deletion_vectors: bool = False
    pu_remove_record_on_delete: bool = False
    agg_remove_record_on_delete: bool = False
    sequence_groups: tuple[SequenceGroup, ...] = ()
    # Per field: the aggregator (aggregation: every field; partial-update: fields that have one), else None.
    aggregators: tuple[FieldAgg | None, ...] = field(default=())

    @property
    def nullable(self) -> tuple[bool, ...]:
        return tuple(t.nullable for t in self.field_types)

    def index(self, name: str) -> int:
        return self.field_names.index(name)

    @staticmethod
    def from_schema(schema: TableSchema, options: Options, where: str) -> MergeSpec:
        return _build(schema, options, where)


# ---------------------------------------------------------------------------------------------- parsing

def _build(schema: TableSchema, options: Options, where: str) -> MergeSpec:
    opts = Options(options.raw, where)
    names = tuple(f.name for f in schema.fields)
    types = tuple(f.type for f in schema.fields)
    by_name = {f.name: f for f in schema.fields}
    if not schema.primary_keys:
        raise UnsupportedError(f"{where}: merge engines apply to primary-key tables only; this table has none")

    engine = opts.get(MERGE_ENGINE)  # Java's value "aggregation" (MergeEngine.AGGREGATE): "aggregate" is refused

    seq_fields = opts.get(SEQUENCE_FIELD)
    seen: set[str] = set()
    for s in seq_fields:
        if s not in by_name:
            raise opts.fail(SEQUENCE_FIELD, f"existing fields; sequence field '{s}' can not be found in table schema")
        if s in seen:
            raise opts.fail(SEQUENCE_FIELD, f"distinct fields; sequence field '{s}' is defined repeatedly")
        seen.add(s)
    if seq_fields and engine == "first-row":
        raise opts.fail(SEQUENCE_FIELD, "no sequence field: Java does not support sequence.field on the FIRST_ROW "
                                        "merge engine")
    order = opts.get(SEQUENCE_FIELD_SORT_ORDER)

    dv = opts.get(DELETION_VECTORS_ENABLED)
    if engine == "first-row" and dv:
        raise opts.fail(DELETION_VECTORS_ENABLED, "false: Java rejects deletion vectors on the first-row merge engine")
    needs_lookup = opts.changelog_producer == "lookup" or dv or engine == "first-row" or opts.get(FORCE_LOOKUP)

    # fields.<f>.aggregate-function must name an existing field (Java: "Field fake_col can not be found").
    for k in opts.raw:
        fname = FIELD_AGGREGATE_FUNCTION.column(k)
        if fname is not None and k != FIELDS_DEFAULT_AGGREGATE_FUNCTION.key and fname not in by_name:
            raise opts.fail(FIELD_AGGREGATE_FUNCTION.of(fname), f"an aggregate function for an existing field; field "
                                                                f"{fname!r} can not be found in table schema")
    for s in seq_fields:
        if opts.is_set(FIELD_AGGREGATE_FUNCTION.of(s)) and engine in ("aggregation", "partial-update"):
            raise opts.fail(FIELD_AGGREGATE_FUNCTION.of(s), f"no aggregation on sequence field '{s}' (Java: should "
                                                            "not define aggregation on sequence field)")

    ignore_delete = opts.get(IGNORE_DELETE)  # the first key set wins, as Java's fallback-key lookup does
    kw: dict = dict(
        where=where, engine=engine, field_names=names, field_types=types,
        key_fields=tuple(schema.trimmed_primary_keys), primary_keys=tuple(schema.primary_keys),
        sequence_fields=seq_fields, sequence_ascending=order == "ascending", ignore_delete=ignore_delete,
        needs_lookup=needs_lookup, deletion_vectors=dv,
    )
    if engine == "partial-update":
        kw.update(_partial_update(schema, opts, where, ignore_delete))
    elif engine == "aggregation":
        kw.update(_aggregation(schema, opts, where))
    else:
        kw["aggregators"] = tuple(None for _ in names)
    return MergeSpec(**kw)


def _make_agg(schema: TableSchema, opts: Options, where: str, idx: int, func: str,
              option: Option[Any] | None) -> FieldAgg:
    f = schema.fields[idx]
    name = f.name
    func = LEGACY_ALIASES.get(func, func)
    t = f.type
    ignore_retract = opts.get(FIELD_IGNORE_RETRACT.of(name))
    option_key = option.key if option is not None else ""
    if func == PRIMARY_KEY_FUNC:
        return FieldAgg(name, idx, func, t)
    if func in KNOWN_UNSUPPORTED_FUNCS:
        raise UnsupportedError(f"{where}: aggregate function {func!r} of field {name!r} (option {option_key!r}) "
                               "is not implemented by paimon-ops; compact this table with Java Paimon")
    if func not in SUPPORTED_FUNCS:
        raise InvalidOptionError(option_key, _given(opts, option, func),
                                 "a supported aggregate function (" + ", ".join(sorted(SUPPORTED_FUNCS)) + "); "
                                 f"{func!r} is unknown to Java Paimon ('count' does not exist: use 'sum' of 0/1)",
                                 where)

    def bad(expected: str) -> InvalidOptionError:
        return InvalidOptionError(option_key, _given(opts, option, func),
                                  f"a function valid for field {name!r} of type {t}: {func} needs {expected}", where)

    r = t.root
    if func in ("sum", "product") and r not in NUMERIC_ROOTS:
        raise bad("a numeric type")
    if func in ("max", "min") and r not in COMPARABLE_ROOTS:
        raise bad("a comparable atomic type")
    if func == "listagg" and r != "VARCHAR":
        raise bad("VARCHAR/STRING")
    if func in ("bool_and", "bool_or") and r != "BOOLEAN":
        raise bad("BOOLEAN")
    if func == "collect" and r != "ARRAY":
        raise bad("ARRAY")
    if func == "merge_map" and r != "MAP":
        raise bad("MAP")
    nested: dict = {}
    if func == "nested_update":
        if r != "ARRAY" or t.element is None or t.element.root != "ROW":
            raise bad("ARRAY<ROW<...>>")
        inner = {x.name for x in t.element.fields}
        lists = {}
        for nested_opt in (FIELD_NESTED_KEY.of(name), FIELD_NESTED_SEQUENCE_FIELD.of(name)):
            lists[nested_opt.key] = opts.get(nested_opt)
            for f_ in lists[nested_opt.key]:
                if f_ not in inner:
                    raise opts.fail(nested_opt, f"fields of the nested row of {name!r}; {f_!r} not found")
        strategy = opts.get(FIELD_NESTED_KEY_NULL_STRATEGY.of(name))
        nested_key = lists[FIELD_NESTED_KEY.key(name)]
        for needs_key in (FIELD_NESTED_KEY_NULL_STRATEGY.of(name), FIELD_NESTED_SEQUENCE_FIELD.of(name)):
            if opts.is_set(needs_key) and not nested_key:
                raise opts.fail(needs_key, f"to be set only with '{FIELD_NESTED_KEY.key(name)}'")
        limit = opts.get(FIELD_COUNT_LIMIT.of(name))
        nested = dict(nested_key=nested_key, nested_sequence=lists[FIELD_NESTED_SEQUENCE_FIELD.key(name)],
                      nested_key_null_strategy=strategy, count_limit=limit)
    return FieldAgg(
        field=name, index=idx, func=func, dtype=t, ignore_retract=ignore_retract,
        distinct=opts.get(FIELD_DISTINCT.of(name)),
        delimiter=opts.get(FIELD_LIST_AGG_DELIMITER.of(name)),
        **nested,
    )


def _given(opts: Options, option: Option[Any] | None, func: str) -> str:
    """The text a function was configured with (errors quote it as given)."""
    text = opts.text(option) if option is not None else None
    return func if text is None else text


def _agg_func_name(name: str, opts: Options) -> tuple[str | None, Option[Any]]:
    own = FIELD_AGGREGATE_FUNCTION.of(name)
    for option in (own, FIELDS_DEFAULT_AGGREGATE_FUNCTION):
        value = opts.get(option)
        if value is not None:
            return value.strip().lower(), option
    return None, own


def _aggregation(schema: TableSchema, opts: Options, where: str) -> dict:
    seq_fields = set(opts.get(SEQUENCE_FIELD))
    remove_on_delete = opts.get(AGGREGATION_REMOVE_RECORD_ON_DELETE)
    aggs: list[FieldAgg] = []
    for i, f in enumerate(schema.fields):
        option: Option[Any] | None
        if f.name in seq_fields:
            func, option = "last_value", SEQUENCE_FIELD  # AggregateMergeFunction.getAggFuncName
        elif f.name in schema.primary_keys:
            func, option = PRIMARY_KEY_FUNC, None
        else:
            found, option = _agg_func_name(f.name, opts)
            func = "last_non_null_value" if found is None else found
        agg = _make_agg(schema, opts, where, i, func, option)
        if remove_on_delete and agg.ignore_retract:
            raise opts.fail(FIELD_IGNORE_RETRACT.of(f.name), f"false together with "
                            f"{AGGREGATION_REMOVE_RECORD_ON_DELETE.key} (conflicting behaviour)")
        aggs.append(agg)
    return {"aggregators": tuple(aggs), "agg_remove_record_on_delete": remove_on_delete}


def _partial_update(schema: TableSchema, opts: Options, where: str, ignore_delete: bool) -> dict:
    names = [f.name for f in schema.fields]
    remove_on_delete = opts.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE)
    rosg_set = opts.is_set(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP)
    rosg_fields = opts.get(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP)

    groups: list[tuple[tuple[str, ...], tuple[str, ...], str]] = []
    owner: dict[str, str] = {}  # field -> option key of the group that protects it
    for k in sorted(opts.raw):  # sorted: deterministic error messages
        group_of = FIELD_SEQUENCE_GROUP.column(k)
        if group_of is None:
            continue
        group = FIELD_SEQUENCE_GROUP.of(group_of)
        seqs = tuple(s.strip() for s in group_of.split(",") if s.strip())
        vals = tuple(opts.get(group))
        if not seqs:
            raise opts.fail(group, FIELD_SEQUENCE_GROUP.key("<seq-field>[,<seq-field>]"))
        for fname in seqs + vals:
            if fname not in names:
                raise opts.fail(group, f"existing fields; field {fname!r} can not be found in table schema")
            if fname in schema.primary_keys:
                raise opts.fail(group, f"non-primary-key fields; {fname!r} is a primary key")
        for fname in vals + seqs:
            if fname in owner and not (fname in seqs and owner[fname] == k):
                raise opts.fail(group, f"each field in at most one sequence group; field {fname!r} is defined "
                                       f"repeatedly by multiple groups ({owner[fname]!r} and {k!r})")
            owner[fname] = k
        vals = tuple(v for v in vals if v not in seqs)
        groups.append((seqs, vals, k))

    if remove_on_delete and ignore_delete:
        raise opts.fail(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE, f"not combined with {IGNORE_DELETE.key} (conflicting "
                                                                "behaviour)")
    if rosg_set and ignore_delete:
        raise opts.fail(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP, f"not combined with {IGNORE_DELETE.key} "
                                                                        "(conflicting behaviour)")
    if remove_on_delete and groups:
        raise opts.fail(PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE, "not combined with sequence groups (conflicting "
                                                                "behaviour)")
    all_seq = {s for g in groups for s in g[0]}
    for s in rosg_fields:
        if s not in all_seq:
            raise opts.fail(PARTIAL_UPDATE_REMOVE_RECORD_ON_SEQUENCE_GROUP,
                            f"sequence fields of sequence groups; {s!r} is not one")

    protected = {v for g in groups for v in g[1]}
    aggs: list[FieldAgg | None] = []
    for i, f in enumerate(schema.fields):
        if f.name in all_seq:
            aggs.append(None)  # no aggregation for sequence-group sequence fields
            continue
        if f.name in schema.primary_keys:
            aggs.append(FieldAgg(f.name, i, PRIMARY_KEY_FUNC, f.type))
            continue
        func, option = _agg_func_name(f.name, opts)
        if func is None:
            aggs.append(None)
            continue
        func = LEGACY_ALIASES.get(func, func)
        if func != "last_non_null_value" and f.name not in protected:
            raise opts.fail(option, f"a sequence group protecting field {f.name!r}: aggregate functions in "
                                    "partial-update need one (except last_non_null_value)")
        aggs.append(_make_agg(schema, opts, where, i, func, option))

    seq_groups = tuple(SequenceGroup(s, v, any(x in rosg_fields for x in s)) for s, v, _ in groups)
    return {"aggregators": tuple(aggs), "sequence_groups": seq_groups, "pu_remove_record_on_delete": remove_on_delete}


__all__ = ["MergeSpec", "FieldAgg", "SequenceGroup", "MergeError", "PRIMARY_KEY_FUNC"]
