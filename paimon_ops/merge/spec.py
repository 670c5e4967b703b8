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

from paimon_ops.errors import InvalidOptionError, PaimonOpsError, UnsupportedError
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import DataType
from paimon_ops.options import Options

FIELDS_PREFIX = "fields."
AGG_SUFFIX = ".aggregate-function"
SEQ_GROUP_SUFFIX = ".sequence-group"
DEFAULT_AGG_KEY = "fields.default-aggregate-function"
# CoreOptions.IGNORE_DELETE: key "ignore-delete" with these fallback keys (Java CoreOptions, 0.9 and master).
IGNORE_DELETE_KEYS = ("ignore-delete", "first-row.ignore-delete", "deduplicate.ignore-delete",
                      "partial-update.ignore-delete")

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")

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

def _bool(raw: dict[str, str], key: str, where: str, default: bool = False) -> bool:
    v = raw.get(key)
    if v is None:
        return default
    s = str(v).strip().lower()
    if s not in ("true", "false"):
        raise InvalidOptionError(key, v, "true or false", where)
    return s == "true"


def _ignore_delete(raw: dict[str, str], where: str) -> bool:
    for k in IGNORE_DELETE_KEYS:  # first present key wins, as Java's fallback-key lookup does
        if k in raw:
            return _bool(raw, k, where)
    return False


def _split(v: str) -> list[str]:
    return [s.strip() for s in v.split(",") if s.strip()]


def _build(schema: TableSchema, options: Options, where: str) -> MergeSpec:
    raw = dict(options.raw)
    names = tuple(f.name for f in schema.fields)
    types = tuple(f.type for f in schema.fields)
    by_name = {f.name: f for f in schema.fields}
    if not schema.primary_keys:
        raise UnsupportedError(f"{where}: merge engines apply to primary-key tables only; this table has none")

    engine_raw = raw.get("merge-engine", "deduplicate")
    engine = str(engine_raw).strip().lower().replace("_", "-")
    if engine == "aggregate":  # MergeEngine.AGGREGATE's value is "aggregation"; accept the enum name too
        engine = "aggregation"
    if engine not in ENGINES:
        raise InvalidOptionError("merge-engine", engine_raw, "one of " + ", ".join(ENGINES), where)

    seq_fields = tuple(_split(raw.get("sequence.field", "") or ""))
    seen: set[str] = set()
    for s in seq_fields:
        if s not in by_name:
            raise InvalidOptionError("sequence.field", raw["sequence.field"],
                                     f"existing fields; sequence field '{s}' can not be found in table schema", where)
        if s in seen:
            raise InvalidOptionError("sequence.field", raw["sequence.field"],
                                     f"distinct fields; sequence field '{s}' is defined repeatedly", where)
        seen.add(s)
    if seq_fields and engine == "first-row":
        raise InvalidOptionError("sequence.field", raw["sequence.field"],
                                 "no sequence field: Java does not support sequence.field on the FIRST_ROW merge engine",
                                 where)
    order_raw = raw.get("sequence.field.sort-order", "ascending")
    order = str(order_raw).strip().lower()
    if order not in ("ascending", "descending"):
        raise InvalidOptionError("sequence.field.sort-order", order_raw, "ascending or descending", where)

    dv = _bool(raw, "deletion-vectors.enabled", where)
    if engine == "first-row" and dv:
        raise InvalidOptionError("deletion-vectors.enabled", raw["deletion-vectors.enabled"],
                                 "false: Java rejects deletion vectors on the first-row merge engine", where)
    changelog = str(raw.get("changelog-producer", "none")).strip().lower()
    needs_lookup = changelog == "lookup" or dv or engine == "first-row" or _bool(raw, "force-lookup", where)

    # fields.<f>.aggregate-function must name an existing field (Java: "Field fake_col can not be found").
    for k in raw:
        if k.startswith(FIELDS_PREFIX) and k.endswith(AGG_SUFFIX) and k != DEFAULT_AGG_KEY:
            fname = k[len(FIELDS_PREFIX):-len(AGG_SUFFIX)]
            if fname not in by_name:
                raise InvalidOptionError(k, raw[k], f"an aggregate function for an existing field; field {fname!r} "
                                         "can not be found in table schema", where)
    for s in seq_fields:
        if raw.get(f"{FIELDS_PREFIX}{s}{AGG_SUFFIX}") is not None and engine in ("aggregation", "partial-update"):
            raise InvalidOptionError(f"{FIELDS_PREFIX}{s}{AGG_SUFFIX}", raw[f"{FIELDS_PREFIX}{s}{AGG_SUFFIX}"],
                                     f"no aggregation on sequence field '{s}' (Java: should not define aggregation "
                                     "on sequence field)", where)

    ignore_delete = _ignore_delete(raw, where)
    kw: dict = dict(
        where=where, engine=engine, field_names=names, field_types=types,
        key_fields=tuple(schema.trimmed_primary_keys), primary_keys=tuple(schema.primary_keys),
        sequence_fields=seq_fields, sequence_ascending=order == "ascending", ignore_delete=ignore_delete,
        needs_lookup=needs_lookup, deletion_vectors=dv,
    )
    if engine == "partial-update":
        kw.update(_partial_update(schema, raw, where, ignore_delete))
    elif engine == "aggregation":
        kw.update(_aggregation(schema, raw, where))
    else:
        kw["aggregators"] = tuple(None for _ in names)
    return MergeSpec(**kw)


def _make_agg(schema: TableSchema, raw: dict[str, str], where: str, idx: int, func: str,
              option_key: str) -> FieldAgg:
    f = schema.fields[idx]
    name = f.name
    func = LEGACY_ALIASES.get(func, func)
    t = f.type
    ignore_retract = _bool(raw, f"{FIELDS_PREFIX}{name}.ignore-retract", where)
    if func == PRIMARY_KEY_FUNC:
        return FieldAgg(name, idx, func, t)
    if func in KNOWN_UNSUPPORTED_FUNCS:
        raise UnsupportedError(f"{where}: aggregate function {func!r} of field {name!r} (option {option_key!r}) "
                               "is not implemented by paimon-ops; compact this table with Java Paimon")
    if func not in SUPPORTED_FUNCS:
        raise InvalidOptionError(option_key, raw.get(option_key, func),
                                 "a supported aggregate function (" + ", ".join(sorted(SUPPORTED_FUNCS)) + "); "
                                 f"{func!r} is unknown to Java Paimon ('count' does not exist: use 'sum' of 0/1)",
                                 where)

    def bad(expected: str) -> InvalidOptionError:
        return InvalidOptionError(option_key, raw.get(option_key, func),
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
        for opt in ("nested-key", "nested-sequence-field"):
            k = f"{FIELDS_PREFIX}{name}.{opt}"
            lists[opt] = tuple(_split(raw.get(k, "") or ""))
            for f_ in lists[opt]:
                if f_ not in inner:
                    raise InvalidOptionError(k, raw[k], f"fields of the nested row of {name!r}; {f_!r} not found", where)
        ns_key = f"{FIELDS_PREFIX}{name}.nested-key-null-strategy"
        strategy = str(raw.get(ns_key, "merge")).strip().lower()
        if strategy not in ("merge", "ignore", "error"):
            raise InvalidOptionError(ns_key, raw[ns_key], "merge, ignore or error", where)
        for opt in ("nested-key-null-strategy", "nested-sequence-field"):
            if f"{FIELDS_PREFIX}{name}.{opt}" in raw and not lists["nested-key"]:
                raise InvalidOptionError(f"{FIELDS_PREFIX}{name}.{opt}", raw[f"{FIELDS_PREFIX}{name}.{opt}"],
                                         f"to be set only with 'fields.{name}.nested-key'", where)
        cl_key = f"{FIELDS_PREFIX}{name}.count-limit"
        try:
            limit = int(str(raw.get(cl_key, 2 ** 31 - 1)).strip())
        except ValueError:
            limit = -1
        if limit < 0:
            raise InvalidOptionError(cl_key, raw[cl_key], "a non-negative integer", where)
        nested = dict(nested_key=lists["nested-key"], nested_sequence=lists["nested-sequence-field"],
                      nested_key_null_strategy=strategy, count_limit=limit)
    return FieldAgg(
        field=name, index=idx, func=func, dtype=t, ignore_retract=ignore_retract,
        distinct=_bool(raw, f"{FIELDS_PREFIX}{name}.distinct", where),
        delimiter=raw.get(f"{FIELDS_PREFIX}{name}.list-agg-delimiter", ","),
        **nested,
    )


def _agg_func_name(name: str, raw: dict[str, str]) -> tuple[str | None, str]:
    k = f"{FIELDS_PREFIX}{name}{AGG_SUFFIX}"
    if raw.get(k) is not None:
        return raw[k].strip().lower(), k
    if raw.get(DEFAULT_AGG_KEY) is not None:
        return raw[DEFAULT_AGG_KEY].strip().lower(), DEFAULT_AGG_KEY
    return None, k


def _aggregation(schema: TableSchema, raw: dict[str, str], where: str) -> dict:
    seq_fields = set(_split(raw.get("sequence.field", "") or ""))
    remove_on_delete = _bool(raw, "aggregation.remove-record-on-delete", where)
    aggs: list[FieldAgg] = []
    for i, f in enumerate(schema.fields):
        if f.name in seq_fields:
            func, key = "last_value", "sequence.field"  # AggregateMergeFunction.getAggFuncName
        elif f.name in schema.primary_keys:
            func, key = PRIMARY_KEY_FUNC, ""
        else:
            found, key = _agg_func_name(f.name, raw)
            func = "last_non_null_value" if found is None else found
        agg = _make_agg(schema, raw, where, i, func, key)
        if remove_on_delete and agg.ignore_retract:
            raise InvalidOptionError(f"{FIELDS_PREFIX}{f.name}.ignore-retract", "true",
                                     "false together with aggregation.remove-record-on-delete (conflicting behaviour)",
                                     where)
        aggs.append(agg)
    return {"aggregators": tuple(aggs), "agg_remove_record_on_delete": remove_on_delete}


def _partial_update(schema: TableSchema, raw: dict[str, str], where: str, ignore_delete: bool) -> dict:
    names = [f.name for f in schema.fields]
    remove_on_delete = _bool(raw, "partial-update.remove-record-on-delete", where)
    rosg_key = "partial-update.remove-record-on-sequence-group"
    rosg = raw.get(rosg_key)
    rosg_fields = _split(rosg) if rosg is not None else []

    groups: list[tuple[tuple[str, ...], tuple[str, ...], str]] = []
    owner: dict[str, str] = {}  # field -> option key of the group that protects it
    for k in sorted(raw):  # sorted: deterministic error messages
        if not (k.startswith(FIELDS_PREFIX) and k.endswith(SEQ_GROUP_SUFFIX)):
            continue
        seqs = tuple(_split(k[len(FIELDS_PREFIX):-len(SEQ_GROUP_SUFFIX)]))
        vals = tuple(_split(raw[k]))
        if not seqs:
            raise InvalidOptionError(k, raw[k], "fields.<seq-field>[,<seq-field>].sequence-group", where)
        for fname in seqs + vals:
            if fname not in names:
                raise InvalidOptionError(k, raw[k], f"existing fields; field {fname!r} can not be found in table schema",
                                         where)
            if fname in schema.primary_keys:
                raise InvalidOptionError(k, raw[k], f"non-primary-key fields; {fname!r} is a primary key", where)
        for fname in vals + seqs:
            if fname in owner and not (fname in seqs and owner[fname] == k):
                raise InvalidOptionError(k, raw[k], f"each field in at most one sequence group; field {fname!r} is "
                                         f"defined repeatedly by multiple groups ({owner[fname]!r} and {k!r})", where)
            owner[fname] = k
        vals = tuple(v for v in vals if v not in seqs)
        groups.append((seqs, vals, k))

    if remove_on_delete and ignore_delete:
        raise InvalidOptionError("partial-update.remove-record-on-delete", "true",
                                 "not combined with ignore-delete (conflicting behaviour)", where)
    if rosg is not None and ignore_delete:
        raise InvalidOptionError(rosg_key, rosg, "not combined with ignore-delete (conflicting behaviour)", where)
    if remove_on_delete and groups:
        raise InvalidOptionError("partial-update.remove-record-on-delete", "true",
                                 "not combined with sequence groups (conflicting behaviour)", where)
    all_seq = {s for g in groups for s in g[0]}
    for s in rosg_fields:
        if s not in all_seq:
            raise InvalidOptionError(rosg_key, rosg, f"sequence fields of sequence groups; {s!r} is not one", where)

    protected = {v for g in groups for v in g[1]}
    aggs: list[FieldAgg | None] = []
    for i, f in enumerate(schema.fields):
        if f.name in all_seq:
            aggs.append(None)  # no aggregation for sequence-group sequence fields
            continue
        if f.name in schema.primary_keys:
            aggs.append(FieldAgg(f.name, i, PRIMARY_KEY_FUNC, f.type))
            continue
        func, key = _agg_func_name(f.name, raw)
        if func is None:
            aggs.append(None)
            continue
        func = LEGACY_ALIASES.get(func, func)
        if func != "last_non_null_value" and f.name not in protected:
            raise InvalidOptionError(key, raw[key], f"a sequence group protecting field {f.name!r}: aggregate "
                                     "functions in partial-update need one (except last_non_null_value)", where)
        aggs.append(_make_agg(schema, raw, where, i, func, key))

    seq_groups = tuple(SequenceGroup(s, v, any(x in rosg_fields for x in s)) for s, v, _ in groups)
    return {"aggregators": tuple(aggs), "sequence_groups": seq_groups, "pu_remove_record_on_delete": remove_on_delete}


__all__ = ["MergeSpec", "FieldAgg", "SequenceGroup", "MergeError", "PRIMARY_KEY_FUNC"]
