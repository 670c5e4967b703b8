"""Paimon data types: the model, the schema-JSON grammar (format.md §2.3) and the Arrow mapping.

Codec only: bytes/JSON <-> values. Atomic types serialise to a SQL-like string, composite types to JSON
objects; ` NOT NULL` marks non-nullable types.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

import pyarrow as pa

from paimon_ops.errors import CorruptMetadataError

MAX_LENGTH = 2147483647

# Roots whose string form carries no parameters.
_SIMPLE = {"BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DATE", "VARIANT", "BLOB"}
_ALIASES = {"INTEGER": "INT", "DOUBLE PRECISION": "DOUBLE", "NUMERIC": "DECIMAL", "DEC": "DECIMAL"}
INTEGER_ROOTS = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
STRING_ROOTS = {"CHAR", "VARCHAR"}
BINARY_ROOTS = {"BINARY", "VARBINARY", "BLOB"}
TIMESTAMP_ROOTS = {"TIMESTAMP", "TIMESTAMP_LTZ"}


@dataclass(frozen=True)
class DataType:
    """A Paimon type. `root` is the canonical type name (TIMESTAMP WITH LOCAL TIME ZONE is TIMESTAMP_LTZ)."""

    root: str
    nullable: bool = True
    length: int | None = None  # CHAR/VARCHAR/BINARY/VARBINARY
    precision: int | None = None  # DECIMAL, TIME, TIMESTAMP*
    scale: int | None = None  # DECIMAL
    element: DataType | None = None  # ARRAY, MULTISET, VECTOR
    key: DataType | None = None  # MAP
    value: DataType | None = None  # MAP
    fields: tuple[DataField, ...] = ()  # ROW
    extra: tuple[Any, ...] = ()  # rarely used parameters (VECTOR length, GEOMETRY args)

    def with_nullable(self, nullable: bool) -> DataType:
        return replace(self, nullable=nullable)

    @property
    def is_string(self) -> bool:
        return self.root in STRING_ROOTS

    @property
    def is_binary(self) -> bool:
        return self.root in BINARY_ROOTS

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def __str__(self) -> str:
        j = type_to_json(self)
        return j if isinstance(j, str) else repr(j)


@dataclass(frozen=True)
class DataField:
    id: int
    name: str
    type: DataType
    description: str | None = None
    default_value: str | None = None


# ---------------------------------------------------------------- constructors (handy in code and tests)

def row_type(fields: list[DataField] | tuple[DataField, ...], nullable: bool = True) -> DataType:
    return DataType("ROW", nullable=nullable, fields=tuple(fields))


def INT(nullable: bool = True) -> DataType:  # noqa: N802 - mirrors Paimon's DataTypes
    return DataType("INT", nullable)


def BIGINT(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType("BIGINT", nullable)


def STRING(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType("VARCHAR", nullable, length=MAX_LENGTH)


def BYTES(nullable: bool = True) -> DataType:  # noqa: N802
    return DataType("VARBINARY", nullable, length=MAX_LENGTH)


# ---------------------------------------------------------------- JSON grammar

_PARAMS = re.compile(r"^(?P<name>[A-Z_0-9]+(?:\s+[A-Z_]+)*)\s*(\((?P<args>[^)]*)\))?(?P<rest>.*)$")


def parse_type(value: Any, where: str = "schema") -> DataType:
    """Parse a type as found in schema JSON: a string (atomic) or an object (composite)."""
    if isinstance(value, dict):
        return _parse_composite(value, where)
    if not isinstance(value, str):
        raise CorruptMetadataError(where, f"type must be a string or an object, got {value!r}")
    return _parse_atomic(value, where)


def _parse_atomic(text: str, where: str) -> DataType:
    s = text.strip()
    nullable = True
    upper = s.upper()
    if upper.endswith("NOT NULL"):
        nullable = False
        s = s[: -len("NOT NULL")].strip()
        upper = s.upper()
    elif upper.endswith(" NULL"):
        s = s[: -len(" NULL")].strip()
        upper = s.upper()
    if upper in ("STRING",):
        return DataType("VARCHAR", nullable, length=MAX_LENGTH)
    if upper in ("BYTES",):
        return DataType("VARBINARY", nullable, length=MAX_LENGTH)
    m = _PARAMS.match(upper)
    if not m:
        raise CorruptMetadataError(where, f"unknown data type {text!r}")
    name = " ".join(m.group("name").split())
    if name == "TIMESTAMP WITH LOCAL TIME ZONE":
        name = "TIMESTAMP_LTZ"
    name = _ALIASES.get(name, name)
    args = [a.strip() for a in m.group("args").split(",")] if m.group("args") else []
    rest = m.group("rest").strip()
    try:
        nums = [int(a) for a in args if a]
    except ValueError:
        nums = []
        if name not in ("GEOMETRY", "GEOGRAPHY"):
            raise CorruptMetadataError(where, f"unknown data type {text!r}") from None
    if name == "TIMESTAMP" and rest in ("WITH LOCAL TIME ZONE",):
        name, rest = "TIMESTAMP_LTZ", ""
    if rest:
        raise CorruptMetadataError(where, f"unknown data type {text!r}")
    if name in _SIMPLE and not nums:
        return DataType(name, nullable)
    if name == "DECIMAL":
        p = nums[0] if nums else 10
        sc = nums[1] if len(nums) > 1 else 0
        if not (1 <= p <= 38 and 0 <= sc <= p):
            raise CorruptMetadataError(where, f"invalid decimal type {text!r}: precision 1..38, 0 <= scale <= precision")
        return DataType("DECIMAL", nullable, precision=p, scale=sc)
    if name in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return DataType(name, nullable, length=nums[0] if nums else 1)
    if name == "TIME":
        return DataType("TIME", nullable, precision=nums[0] if nums else 0)
    if name in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = nums[0] if nums else 6
        if not 0 <= p <= 9:
            raise CorruptMetadataError(where, f"invalid timestamp precision in {text!r}")
        return DataType(name, nullable, precision=p)
    if name in ("GEOMETRY", "GEOGRAPHY"):
        return DataType(name, nullable, extra=tuple(args))
    raise CorruptMetadataError(where, f"unknown data type {text!r}")


def _parse_composite(obj: dict[str, Any], where: str) -> DataType:
    t = obj.get("type")
    if not isinstance(t, str):
        raise CorruptMetadataError(where, f"composite type without 'type': {obj!r}")
    nullable = "NOT NULL" not in t.upper()
    kind = t.upper().split()[0]
    try:
        if kind in ("ARRAY", "MULTISET"):
            return DataType(kind, nullable, element=parse_type(obj["element"], where))
        if kind == "VECTOR":
            return DataType("VECTOR", nullable, element=parse_type(obj["element"], where), length=int(obj["length"]))
        if kind == "MAP":
            return DataType("MAP", nullable, key=parse_type(obj["key"], where), value=parse_type(obj["value"], where))
        if kind == "ROW":
            return DataType("ROW", nullable, fields=tuple(parse_field(f, where) for f in obj["fields"]))
    except KeyError as e:
        raise CorruptMetadataError(where, f"composite type {t!r} lacks key {e.args[0]!r}") from None
    raise CorruptMetadataError(where, f"unknown data type {t!r}")


def parse_field(obj: dict[str, Any], where: str = "schema") -> DataField:
    try:
        return DataField(
            id=int(obj["id"]),
            name=str(obj["name"]),
            type=parse_type(obj["type"], where),
            description=obj.get("description"),
            default_value=obj.get("defaultValue"),
        )
    except KeyError as e:
        raise CorruptMetadataError(where, f"field {obj!r} lacks key {e.args[0]!r}") from None


def type_to_json(t: DataType) -> Any:
    nn = "" if t.nullable else " NOT NULL"
    r = t.root
    if r in ("ARRAY", "MULTISET"):
        return {"type": r + nn, "element": type_to_json(t.element)}  # type: ignore[arg-type]
    if r == "VECTOR":
        return {"type": r + nn, "element": type_to_json(t.element), "length": t.length}  # type: ignore[arg-type]
    if r == "MAP":
        return {"type": r + nn, "key": type_to_json(t.key), "value": type_to_json(t.value)}  # type: ignore[arg-type]
    if r == "ROW":
        return {"type": r + nn, "fields": [field_to_json(f) for f in t.fields]}
    if r == "VARCHAR" and t.length == MAX_LENGTH:
        return "STRING" + nn
    if r == "VARBINARY" and t.length == MAX_LENGTH:
        return "BYTES" + nn
    if r in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
        return f"{r}({t.length}){nn}"
    if r == "DECIMAL":
        return f"DECIMAL({t.precision}, {t.scale}){nn}"
    if r == "TIME":
        return f"TIME({t.precision}){nn}"
    if r == "TIMESTAMP":
        return f"TIMESTAMP({t.precision}){nn}"
    if r == "TIMESTAMP_LTZ":
        return f"TIMESTAMP({t.precision}) WITH LOCAL TIME ZONE{nn}"
    if r in ("GEOMETRY", "GEOGRAPHY"):
        return f"{r}({', '.join(str(a) for a in t.extra)}){nn}"
    return r + nn


def field_to_json(f: DataField) -> dict[str, Any]:
    out: dict[str, Any] = {"id": f.id, "name": f.name, "type": type_to_json(f.type)}
    if f.description is not None:
        out["description"] = f.description
    if f.default_value is not None:
        out["defaultValue"] = f.default_value
    return out


# ---------------------------------------------------------------- Arrow mapping

def to_arrow_type(t: DataType) -> pa.DataType:
    """The Arrow type we use in memory for a Paimon type (also what we write to Parquet/ORC)."""
    r = t.root
    if r == "BOOLEAN":
        return pa.bool_()
    if r == "TINYINT":
        return pa.int8()
    if r == "SMALLINT":
        return pa.int16()
    if r == "INT":
        return pa.int32()
    if r == "BIGINT":
        return pa.int64()
    if r == "FLOAT":
        return pa.float32()
    if r == "DOUBLE":
        return pa.float64()
    if r == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)  # type: ignore[arg-type]
    if r in STRING_ROOTS:
        return pa.string()
    if r in BINARY_ROOTS or r in ("VARIANT", "GEOMETRY", "GEOGRAPHY"):
        return pa.binary()
    if r == "DATE":
        return pa.date32()
    if r == "TIME":
        return pa.time32("ms")
    if r in TIMESTAMP_ROOTS:
        unit = timestamp_unit(t.precision or 0)
        return pa.timestamp(unit, tz="UTC" if r == "TIMESTAMP_LTZ" else None)
    if r in ("ARRAY", "VECTOR"):
        return pa.list_(arrow_field("element", t.element))  # type: ignore[arg-type]
    if r == "MULTISET":
        return pa.map_(to_arrow_type(t.element.with_nullable(False)), pa.int32())  # type: ignore[union-attr]
    if r == "MAP":
        return pa.map_(
            arrow_field("key", t.key.with_nullable(False)),  # type: ignore[union-attr]
            arrow_field("value", t.value),  # type: ignore[arg-type]
        )
    if r == "ROW":
        return pa.struct([arrow_field(f.name, f.type, f.id) for f in t.fields])
    raise CorruptMetadataError("schema", f"type {r} has no Arrow mapping")


def timestamp_unit(precision: int) -> str:
    if precision <= 3:
        return "ms"
    if precision <= 6:
        return "us"
    return "ns"


def arrow_field(name: str, t: DataType, field_id: int | None = None) -> pa.Field:
    meta = {b"PARQUET:field_id": str(field_id).encode()} if field_id is not None else None
    return pa.field(name, to_arrow_type(t), nullable=t.nullable, metadata=meta)


def arrow_schema(rt: DataType) -> pa.Schema:
    return pa.schema([arrow_field(f.name, f.type, f.id) for f in rt.fields])


def max_field_id(fields: tuple[DataField, ...] | list[DataField]) -> int:
    """Highest field id across all nesting levels (format.md §2.2)."""
    best = -1
    for f in fields:
        best = max(best, f.id)
        best = max(best, _max_nested(f.type))
    return best


def _max_nested(t: DataType) -> int:
    best = -1
    if t.root == "ROW":
        best = max(best, max_field_id(t.fields))
    for sub in (t.element, t.key, t.value):
        if sub is not None:
            best = max(best, _max_nested(sub))
    return best


__all__ = [
    "DataType", "DataField", "parse_type", "parse_field", "type_to_json", "field_to_json", "to_arrow_type",
    "arrow_field", "arrow_schema", "row_type", "max_field_id", "timestamp_unit",
]
