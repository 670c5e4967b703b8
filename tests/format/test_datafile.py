"""Data files (format.md §7): physical schema, Parquet/ORC writing, reading with schema evolution.

The reference is pypaimon 2.1.0, an independent implementation: tables it writes (Parquet, ORC, Avro; PK and
append) are read with our reader and compared with what pypaimon's own reader returns; our physical layout is
compared with the files pypaimon writes; our Parquet output is checked against the Java mapping of §7.3.
"""
from __future__ import annotations

import datetime as dt
import glob
import json
import os
from decimal import Decimal
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, InvalidOptionError, UnsupportedError
from paimon_ops.format import datafile as df
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import BIGINT, INT, STRING, DataField, DataType, to_arrow_type
from tests import pypaimon_util as pp

# ---------------------------------------------------------------- pypaimon-written tables

UTC = dt.timezone.utc

FLAT_SCHEMA = pa.schema([
    pa.field("id", pa.int32(), nullable=False),
    pa.field("b", pa.int64()),
    pa.field("s", pa.string()),
    pa.field("d1", pa.decimal128(10, 2)),
    pa.field("d2", pa.decimal128(38, 4)),
    pa.field("dt", pa.date32()),
    pa.field("ts3", pa.timestamp("ms")),
    pa.field("ts6", pa.timestamp("us")),
    pa.field("dbl", pa.float64()),
    pa.field("bo", pa.bool_()),
    pa.field("by", pa.binary()),
    pa.field("ti", pa.int8()),
    pa.field("sm", pa.int16()),
    pa.field("fl", pa.float32()),
])

FLAT_DATA = {
    "id": [3, 1, 2, 4],
    "b": [10, None, 30, -(2**63)],
    "s": ["x", "y" * 40, None, "héllo wörld ✓"],
    "d1": [Decimal("1.25"), None, Decimal("-3.50"), Decimal("99999999.99")],
    "d2": [Decimal("12345678901234567890.1234"), None, Decimal("-1.0000"), Decimal("-9999999999999999999999999999999999.9999")],
    "dt": [dt.date(2024, 1, 1), None, dt.date(1960, 5, 6), dt.date(1970, 1, 1)],
    "ts3": [dt.datetime(2024, 1, 1, 10, 0, 0, 123000), None, dt.datetime(1960, 1, 1), dt.datetime(1969, 12, 31, 23, 59, 59, 999000)],
    "ts6": [dt.datetime(2024, 1, 1, 10, 0, 0, 123456), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999999), dt.datetime(2100, 1, 1)],
    "dbl": [1.5, -0.25, None, 1e300],
    "bo": [True, False, None, True],
    "by": [b"\x00\x01", None, b"zz", b""],
    "ti": [1, -128, None, 127],
    "sm": [300, None, -32768, 0],
    "fl": [0.5, None, -1.25, 3.0],
}

NESTED_SCHEMA = pa.schema([
    pa.field("id", pa.int32(), nullable=False),
    pa.field("arr", pa.list_(pa.int64())),
    pa.field("m", pa.map_(pa.string(), pa.int32())),
    pa.field("r", pa.struct([("x", pa.int32()), ("y", pa.string())])),
    pa.field("ltz", pa.timestamp("us", tz="UTC")),
    pa.field("tm", pa.time32("ms")),
])

NESTED_DATA = {
    "id": [1, 2, 3],
    "arr": [[1, None, 3], None, []],
    "m": [[("a", 1), ("b", None)], None, []],
    "r": [{"x": 1, "y": "z"}, None, {"x": None, "y": None}],
    "ltz": [dt.datetime(2024, 1, 1, 12, tzinfo=UTC), None, dt.datetime(1965, 3, 4, 5, 6, 7, 8, tzinfo=UTC)],
    "tm": [dt.time(1, 2, 3), None, dt.time(23, 59, 59, 999000)],
}

FORMATS = ["parquet", "orc", "avro"]


def _table_dir(warehouse: str, name: str) -> str:
    return os.path.join(warehouse, "db.db", name)


def _schema_of(warehouse: str, name: str, schema_id: int | None = None) -> TableSchema:
    d = os.path.join(_table_dir(warehouse, name), "schema")
    sid = schema_id if schema_id is not None else max(int(p.rsplit("-", 1)[1]) for p in os.listdir(d))
    path = os.path.join(d, f"schema-{sid}")
    return TableSchema.from_json(Path(path).read_text(), path)


def manifest_files(warehouse: str, name: str) -> list[dict]:
    """Every `_FILE` record of the table's manifests (pypaimon's manifests decoded with fastavro directly)."""
    out = []
    for m in sorted(glob.glob(os.path.join(_table_dir(warehouse, name), "manifest", "manifest-*"))):
        if os.path.basename(m).startswith("manifest-list-"):
            continue
        with open(m, "rb") as fo:
            for rec in fastavro.reader(fo):
                out.append({**rec["_FILE"], "_BUCKET": rec["_BUCKET"], "_KIND": rec["_KIND"]})
    return out


def data_file_paths(warehouse: str, name: str) -> list[str]:
    return sorted(glob.glob(os.path.join(_table_dir(warehouse, name), "bucket-*", "data-*")))


def build_pypaimon_warehouse(root: str, options: dict[str, str] | None = None) -> str:
    """Flat and nested tables in every format, PK and append, written by pypaimon."""
    extra = dict(options or {})
    for fmt in FORMATS:
        for pk in (True, False):
            name = f"flat_{fmt}_{'pk' if pk else 'ap'}"
            t = pp.create_table(root, f"db.{name}", FLAT_SCHEMA, primary_keys=["id"] if pk else (),
                                options={"file.format": fmt, "bucket": "1" if pk else "-1", **extra})
            pp.write(t, pa.Table.from_pydict(FLAT_DATA, schema=FLAT_SCHEMA))
        if fmt != "avro":
            t = pp.create_table(root, f"db.nested_{fmt}", NESTED_SCHEMA, primary_keys=["id"],
                                options={"file.format": fmt, "bucket": "1", **extra})
            pp.write(t, pa.Table.from_pydict(NESTED_DATA, schema=NESTED_SCHEMA))
    return root


@pytest.fixture(scope="module")
def pypaimon_wh(tmp_path_factory) -> str:
    return build_pypaimon_warehouse(str(tmp_path_factory.mktemp("pypaimon_wh")))


def _rows_by_id(t: pa.Table) -> list[dict]:
    return sorted(t.to_pylist(), key=lambda r: r["id"])


PYPAIMON_TABLES = [(f"flat_{fmt}_{kind}", kind == "pk") for fmt in FORMATS for kind in ("pk", "ap")] + [
    ("nested_parquet", True), ("nested_orc", True)]


@pytest.mark.parametrize("name,pk", PYPAIMON_TABLES)
def test_reads_pypaimon_files_like_pypaimon_reader(pypaimon_wh, name, pk):
    schema = _schema_of(pypaimon_wh, name)
    paths = data_file_paths(pypaimon_wh, name)
    assert len(paths) == 1
    path = paths[0]
    ours = df.read_data_file(path, df.format_of(path), schema, schema, pk, path, keep_system_columns=False)
    assert ours.schema.names == schema.field_names
    assert [f.type for f in ours.schema] == [to_arrow_type(f.type) for f in schema.fields]
    theirs = pp.read(pypaimon_wh, f"db.{name}")
    theirs = pa.Table.from_arrays([c.cast(to_arrow_type(f.type)) for c, f in zip(theirs.columns, schema.fields)],
                                  names=theirs.column_names)
    assert _rows_by_id(ours) == _rows_by_id(theirs)


@pytest.mark.parametrize("name", ["flat_parquet_pk", "flat_orc_pk", "flat_avro_pk", "nested_parquet"])
def test_system_columns_of_pypaimon_pk_files(pypaimon_wh, name):
    schema = _schema_of(pypaimon_wh, name)
    path = data_file_paths(pypaimon_wh, name)[0]
    meta = manifest_files(pypaimon_wh, name)[0]
    t = df.read_data_file(path, df.format_of(path), schema, schema, True, path)
    assert t.column_names[:3] == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND"]
    assert t.schema.field("_KEY_id").type == pa.int32() and not t.schema.field("_KEY_id").nullable
    assert t.schema.field("_SEQUENCE_NUMBER").type == pa.int64()
    assert t.schema.field("_VALUE_KIND").type == pa.int8()
    assert t.column("_KEY_id").to_pylist() == t.column("id").to_pylist() == sorted(t.column("id").to_pylist())
    seq = t.column("_SEQUENCE_NUMBER").to_pylist()
    assert (min(seq), max(seq)) == (meta["_MIN_SEQUENCE_NUMBER"], meta["_MAX_SEQUENCE_NUMBER"])
    assert set(t.column("_VALUE_KIND").to_pylist()) == {df.INSERT}


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_physical_layout_matches_pypaimon(pypaimon_wh, tmp_path, fmt):
    """Same names, order and physical types for the system columns as the file pypaimon wrote."""
    schema = _schema_of(pypaimon_wh, f"flat_{fmt}_pk")
    theirs_path = data_file_paths(pypaimon_wh, f"flat_{fmt}_pk")[0]
    data = df.read_data_file(theirs_path, fmt, schema, schema, True, theirs_path)
    ours_path = str(tmp_path / f"data-x-0.{fmt}")
    with pa.OSFile(ours_path, "wb") as sink:
        df.write_data_file(data, sink, fmt, schema, schema.options)
    assert [f.name for f in df.file_arrow_schema(schema, True)] == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND",
                                                                   *schema.field_names]
    if fmt == "parquet":
        ps_theirs, ps_ours = pq.ParquetFile(theirs_path).schema, pq.ParquetFile(ours_path).schema
        assert ps_ours.names == ps_theirs.names
        for i in range(3):  # system columns: identical physical + logical types and repetition
            a, b = ps_ours.column(i), ps_theirs.column(i)
            assert (a.name, a.physical_type, str(a.logical_type), a.max_definition_level) == (
                b.name, b.physical_type, str(b.logical_type), b.max_definition_level)
        arrow_theirs = pq.ParquetFile(theirs_path).schema_arrow
        arrow_ours = pq.ParquetFile(ours_path).schema_arrow
    else:
        arrow_theirs, arrow_ours = orc.ORCFile(theirs_path).schema, orc.ORCFile(ours_path).schema
    assert arrow_ours.names == arrow_theirs.names
    assert [f.type for f in arrow_ours][:3] == [f.type for f in arrow_theirs][:3]
    # and pypaimon reads the rows of our file back identically through our reader
    again = df.read_data_file(ours_path, fmt, schema, schema, True, ours_path)
    assert again.to_pylist() == data.to_pylist()


# ---------------------------------------------------------------- our Parquet output vs the Java mapping (§7.3)

def _f(fid: int, name: str, t: DataType) -> DataField:
    return DataField(fid, name, t)


ALL_TYPES = TableSchema(
    id=0,
    fields=(
        _f(0, "k", INT(False)),
        _f(1, "ti", DataType("TINYINT")),
        _f(2, "sm", DataType("SMALLINT")),
        _f(3, "i", INT()),
        _f(4, "bi", BIGINT()),
        _f(5, "fl", DataType("FLOAT")),
        _f(6, "db", DataType("DOUBLE")),
        _f(7, "d9", DataType("DECIMAL", precision=9, scale=2)),
        _f(8, "d18", DataType("DECIMAL", precision=18, scale=4)),
        _f(9, "d19", DataType("DECIMAL", precision=19, scale=0)),
        _f(10, "d38", DataType("DECIMAL", precision=38, scale=10)),
        _f(11, "s", STRING()),
        _f(12, "vc", DataType("VARCHAR", length=5)),
        _f(13, "bin", DataType("BINARY", length=3)),
        _f(14, "vb", DataType("VARBINARY", length=2147483647)),
        _f(15, "dt", DataType("DATE")),
        _f(16, "tm", DataType("TIME", precision=0)),
        _f(17, "ts3", DataType("TIMESTAMP", precision=3)),
        _f(18, "ts6", DataType("TIMESTAMP", precision=6)),
        _f(19, "ltz3", DataType("TIMESTAMP_LTZ", precision=3)),
        _f(20, "ltz6", DataType("TIMESTAMP_LTZ", precision=6)),
        _f(21, "bo", DataType("BOOLEAN", nullable=False)),
        _f(22, "arr", DataType("ARRAY", element=DataType("ARRAY", element=STRING()))),
        _f(23, "m", DataType("MAP", key=STRING(), value=DataType("ARRAY", element=INT()))),
        _f(24, "r", DataType("ROW", fields=(_f(25, "x", INT()), _f(26, "y", DataType("ROW", fields=(_f(27, "z", STRING()),)))))),
    ),
    primary_keys=("k",),
    highest_field_id=27,
)

ALL_ROWS = [
    {"k": 1, "ti": -1, "sm": 2, "i": 3, "bi": 4, "fl": 1.5, "db": 2.5, "d9": Decimal("1234567.89"),
     "d18": Decimal("12345678901234.5678"), "d19": Decimal("1234567890123456789"),
     "d38": Decimal("1234567890123456789012345678.0123456789"), "s": "sss", "vc": "abcde", "bin": b"abc",
     "vb": b"\x00\xff", "dt": dt.date(2000, 2, 29), "tm": dt.time(12, 34, 56, 789000),
     "ts3": dt.datetime(2024, 1, 1, 10, 0, 0, 123000), "ts6": dt.datetime(2024, 1, 1, 10, 0, 0, 123456),
     "ltz3": dt.datetime(2024, 6, 1, 0, 0, 0, 1000, tzinfo=UTC), "ltz6": dt.datetime(1950, 6, 1, 0, 0, 0, 7, tzinfo=UTC),
     "bo": True, "arr": [["a", None], None, []], "m": [("k1", [1, None]), ("k2", None)], "r": {"x": 7, "y": {"z": "zz"}}},
    {"k": 2, "ti": None, "sm": None, "i": None, "bi": None, "fl": None, "db": None, "d9": None, "d18": None,
     "d19": None, "d38": None, "s": None, "vc": None, "bin": None, "vb": None, "dt": None, "tm": None, "ts3": None,
     "ts6": None, "ltz3": None, "ltz6": None, "bo": False, "arr": None, "m": None, "r": None},
]


def _input_table(schema: TableSchema, rows: list[dict], seq_start: int = 0) -> pa.Table:
    arrow = pa.schema([pa.field(SEQ, pa.int64(), False), pa.field(KIND, pa.int8(), False)]
                      + [pa.field(f.name, to_arrow_type(f.type), f.type.nullable) for f in schema.fields])
    full = [{SEQ: seq_start + i, KIND: 0, **r} for i, r in enumerate(rows)]
    return pa.Table.from_pylist(full, schema=arrow)


SEQ, KIND = df.SEQUENCE_NUMBER, df.VALUE_KIND


def _write(tmp_path, table: pa.Table, schema: TableSchema, fmt: str, options: dict | None = None,
           name: str | None = None) -> str:
    path = str(tmp_path / (name or f"data-{fmt}-0.{fmt}"))
    with pa.OSFile(path, "wb") as sink:
        df.write_data_file(table, sink, fmt, schema, options or {})
    return path


def _leaf_ids(schema: pa.Schema) -> dict[str, int]:
    """dotted path -> PARQUET:field_id of every field, nested ones included."""
    out: dict[str, int] = {}

    def walk(field: pa.Field, prefix: str) -> None:
        name = prefix + field.name
        meta = field.metadata or {}
        if b"PARQUET:field_id" in meta:
            out[name] = int(meta[b"PARQUET:field_id"])
        t = field.type
        if pa.types.is_map(t):
            walk(t.key_field, name + ".")
            walk(t.item_field, name + ".")
        elif pa.types.is_list(t):
            walk(t.value_field, name + ".")
        elif pa.types.is_struct(t):
            for i in range(t.num_fields):
                walk(t.field(i), name + ".")

    for f in schema:
        walk(f, "")
    return out


def test_parquet_physical_types_follow_java_mapping(tmp_path):
    path = _write(tmp_path, _input_table(ALL_TYPES, ALL_ROWS), ALL_TYPES, "parquet")
    pf = pq.ParquetFile(path)
    cols = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}

    def phys(p):
        c = cols[p]
        logical = json.loads(c.logical_type.to_json())
        for internal in ("is_from_converted_type", "force_set_converted_type"):  # pyarrow bookkeeping
            logical.pop(internal, None)
        return c.physical_type, logical

    assert phys("_KEY_k") == ("INT32", {"Type": "None"})
    assert phys("_SEQUENCE_NUMBER") == ("INT64", {"Type": "None"})
    assert phys("_VALUE_KIND") == ("INT32", {"Type": "Int", "bitWidth": 8, "isSigned": True})
    assert phys("ti") == ("INT32", {"Type": "Int", "bitWidth": 8, "isSigned": True})
    assert phys("sm") == ("INT32", {"Type": "Int", "bitWidth": 16, "isSigned": True})
    assert phys("i")[0] == "INT32" and phys("bi")[0] == "INT64"
    assert phys("fl")[0] == "FLOAT" and phys("db")[0] == "DOUBLE"
    assert phys("d9") == ("INT32", {"Type": "Decimal", "precision": 9, "scale": 2})
    assert phys("d18") == ("INT64", {"Type": "Decimal", "precision": 18, "scale": 4})
    assert phys("d19") == ("FIXED_LEN_BYTE_ARRAY", {"Type": "Decimal", "precision": 19, "scale": 0})
    assert cols["d19"].length == 9  # smallest n with 2^(8n-1) >= 10^19
    assert phys("d38")[0] == "FIXED_LEN_BYTE_ARRAY" and cols["d38"].length == 16
    assert phys("s") == ("BYTE_ARRAY", {"Type": "String"})
    assert phys("vc") == ("BYTE_ARRAY", {"Type": "String"})
    assert phys("bin") == ("BYTE_ARRAY", {"Type": "None"})  # no FIXED_LEN even for BINARY(n)
    assert phys("vb") == ("BYTE_ARRAY", {"Type": "None"})
    assert phys("dt") == ("INT32", {"Type": "Date"})
    assert phys("tm") == ("INT32", {"Type": "Time", "isAdjustedToUTC": True, "timeUnit": "milliseconds"})
    assert phys("ts3") == ("INT64", {"Type": "Timestamp", "isAdjustedToUTC": False, "timeUnit": "milliseconds"})
    assert phys("ts6") == ("INT64", {"Type": "Timestamp", "isAdjustedToUTC": False, "timeUnit": "microseconds"})
    assert phys("ltz3") == ("INT64", {"Type": "Timestamp", "isAdjustedToUTC": True, "timeUnit": "milliseconds"})
    assert phys("ltz6") == ("INT64", {"Type": "Timestamp", "isAdjustedToUTC": True, "timeUnit": "microseconds"})
    # 3-level lists and key_value maps, keys REQUIRED
    assert "arr.list.element.list.element" in cols
    # optional map (1) + repeated key_value (1) + REQUIRED key (0) = 2; an optional key would be 3
    assert "m.key_value.key" in cols and cols["m.key_value.key"].max_definition_level == 2
    assert "m.key_value.value.list.element" in cols
    assert "r.y.z" in cols
    # repetition: NOT NULL -> REQUIRED (definition level 0), nullable -> OPTIONAL
    assert cols["_KEY_k"].max_definition_level == 0 and cols["bo"].max_definition_level == 0
    assert cols["i"].max_definition_level == 1
    # compression
    rg = pf.metadata.row_group(0)
    assert {rg.column(i).compression for i in range(rg.num_columns)} == {"ZSTD"}
    # field ids at every level (ParquetSchemaConverter 1.0+ / SpecialFields)
    ids = _leaf_ids(pf.schema_arrow)
    base = 536870911
    assert ids["_KEY_k"] == 1073741823 + 0
    assert ids["_SEQUENCE_NUMBER"] == 2147483646 and ids["_VALUE_KIND"] == 2147483645
    assert ids["ti"] == 1 and ids["r"] == 24 and ids["r.x"] == 25 and ids["r.y"] == 26 and ids["r.y.z"] == 27
    assert ids["arr"] == 22
    assert ids["arr.element"] == base + 22 * 1024 + 1
    assert ids["arr.element.element"] == base + 22 * 1024 + 2
    assert ids["m"] == 23
    assert ids["m.key"] == base - 23 * 1024 - 1
    assert ids["m.value"] == base + 23 * 1024 + 1
    assert ids["m.value.element"] == base + 23 * 1024 + 2
    # the same ids are in the declared schema (what other modules use to build Arrow tables)
    assert _leaf_ids(df.file_arrow_schema(ALL_TYPES, True)) == ids


def test_parquet_compression_options(tmp_path):
    t = _input_table(ALL_TYPES, ALL_ROWS)
    p = _write(tmp_path, t, ALL_TYPES, "parquet", {"file.compression": "snappy"}, "a.parquet")
    assert pq.ParquetFile(p).metadata.row_group(0).column(3).compression == "SNAPPY"
    p = _write(tmp_path, t, ALL_TYPES, "parquet", {"file.compression": "zstd", "file.compression.zstd-level": "9"},
               "b.parquet")
    assert pq.ParquetFile(p).metadata.row_group(0).column(3).compression == "ZSTD"
    from paimon_ops.errors import InvalidOptionError
    with pytest.raises(InvalidOptionError):
        _write(tmp_path, t, ALL_TYPES, "parquet", {"file.compression": "lzo-ish"}, "c.parquet")


def test_timestamp_precision_above_6(tmp_path):
    """Only p > 6: INT96 like Java. Mixed with p <= 6: INT64 NANOS for p > 6 (documented compromise)."""
    only9 = TableSchema(0, (_f(0, "a", INT()), _f(1, "t9", DataType("TIMESTAMP", precision=9))))
    v = pa.table({"a": pa.array([1], pa.int32()), "t9": pa.array([1_700_000_000_123_456_789], pa.timestamp("ns"))})
    p = _write(tmp_path, v, only9, "parquet", name="n.parquet")
    assert pq.ParquetFile(p).schema.column(1).physical_type == "INT96"
    back = df.read_data_file(p, "parquet", only9, only9, False, p)
    assert back.column("t9").cast(pa.int64()).to_pylist() == [1_700_000_000_123_456_789]
    mixed = TableSchema(0, (_f(0, "a", DataType("TIMESTAMP", precision=3)), _f(1, "t9", DataType("TIMESTAMP", precision=9))))
    v = pa.table({"a": pa.array([5], pa.timestamp("ms")), "t9": pa.array([-1], pa.timestamp("ns"))})
    p = _write(tmp_path, v, mixed, "parquet", name="m.parquet")
    pf = pq.ParquetFile(p)
    assert pf.schema.column(0).physical_type == "INT64"
    assert json.loads(pf.schema.column(1).logical_type.to_json())["timeUnit"] == "nanoseconds"
    assert df.read_data_file(p, "parquet", mixed, mixed, False, p).to_pylist() == v.to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_round_trip_all_types(tmp_path, fmt):
    t = _input_table(ALL_TYPES, ALL_ROWS, seq_start=7)
    p = _write(tmp_path, t, ALL_TYPES, fmt)
    back = df.read_data_file(p, fmt, ALL_TYPES, ALL_TYPES, True, p)
    assert back.schema == df.output_arrow_schema(ALL_TYPES, True)
    expected = [{"_KEY_k": r["k"], **r} for r in t.to_pylist()]
    assert back.to_pylist() == expected
    # the declared output schema is exactly to_arrow_type of the read schema
    for f in ALL_TYPES.fields:
        assert back.schema.field(f.name).type == to_arrow_type(f.type)


def test_orc_types_written_for_java(tmp_path):
    t = _input_table(ALL_TYPES, ALL_ROWS)
    p = _write(tmp_path, t, ALL_TYPES, "orc")
    f = orc.ORCFile(p)
    assert f.compression == "ZSTD"
    s = f.schema
    assert s.field("_VALUE_KIND").type == pa.int8() and s.field("ti").type == pa.int8()  # ORC tinyint
    assert s.field("d9").type == pa.decimal128(9, 2) and s.field("d38").type == pa.decimal128(38, 10)
    assert s.field("tm").type == pa.int32()  # Java writes TIME as ORC int (millis of day)
    assert pa.types.is_timestamp(s.field("ts3").type) and s.field("ts3").type.tz is None
    assert s.field("ltz3").type.tz is not None  # ORC timestamp with local time zone


def test_key_columns_are_derived_and_validated(tmp_path):
    schema = TableSchema(0, (_f(0, "k", INT(False)), _f(1, "v", STRING())), primary_keys=("k",))
    t = pa.table({SEQ: pa.array([0, 1], pa.int64()), KIND: pa.array([0, 3], pa.int8()),
                  "k": pa.array([1, 2], pa.int32()), "v": ["a", None]})
    p = _write(tmp_path, t, schema, "parquet")
    assert pq.ParquetFile(p).schema_arrow.names == ["_KEY_k", SEQ, KIND, "k", "v"]
    bad = t.set_column(2, "k", pa.array([1, None], pa.int32()))
    with pytest.raises(InvalidArgumentError, match="NOT NULL"):
        _write(tmp_path, bad, schema, "parquet", name="bad.parquet")
    with pytest.raises(InvalidArgumentError, match="_SEQUENCE_NUMBER"):
        _write(tmp_path, t.drop_columns([SEQ]), schema, "parquet", name="bad2.parquet")
    # Avro data files are written too, with the same physical layout, and read back
    av = _write(tmp_path, t, schema, "avro", name="x.avro")
    back = df.read_data_file(av, "avro", schema, schema, True, av)
    assert back.column_names == ["_KEY_k", SEQ, KIND, "k", "v"] and back.column("v").to_pylist() == ["a", None]
    with pytest.raises(InvalidOptionError):
        _write(tmp_path, t, schema, "avro", options={"avro.codec": "lzma9"}, name="y.avro")


def test_append_layout_has_no_system_columns(tmp_path):
    schema = TableSchema(0, (_f(0, "a", INT()), _f(1, "b", STRING())))
    t = pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"]})
    p = _write(tmp_path, t, schema, "parquet")
    assert pq.ParquetFile(p).schema_arrow.names == ["a", "b"]
    assert df.read_data_file(p, "parquet", schema, schema, False, p).to_pylist() == t.to_pylist()


# ---------------------------------------------------------------- schema evolution

EVO_V0 = TableSchema(
    id=0,
    fields=(
        _f(0, "id", INT(False)),
        _f(1, "a", INT()),
        _f(2, "b", STRING()),
        _f(3, "c", DataType("DOUBLE")),
        _f(4, "f", DataType("FLOAT")),
        _f(5, "dec", DataType("DECIMAL", precision=5, scale=2)),
        _f(6, "ts", DataType("TIMESTAMP", precision=3)),
        _f(7, "v", DataType("VARCHAR", length=5)),
        _f(8, "r", DataType("ROW", fields=(_f(9, "x", INT()), _f(10, "gone", STRING())))),
        _f(11, "l", DataType("ARRAY", element=DataType("ROW", fields=(_f(12, "p", INT()),)))),
        _f(13, "us", DataType("TIMESTAMP", precision=6)),
    ),
    primary_keys=("id",),
    highest_field_id=13,
)
EVO_V1 = TableSchema(
    id=1,
    fields=(
        _f(0, "id", INT(False)),
        _f(1, "a", BIGINT()),  # INT -> BIGINT
        _f(2, "b2", STRING()),  # renamed
        # c dropped
        _f(4, "f", DataType("DOUBLE")),  # FLOAT -> DOUBLE
        _f(5, "dec", DataType("DECIMAL", precision=10, scale=2)),  # precision widened
        _f(6, "ts", DataType("TIMESTAMP", precision=6)),  # TIMESTAMP(3) -> TIMESTAMP(6)
        _f(7, "v", DataType("VARCHAR", length=10)),
        _f(14, "d", BIGINT()),  # added
        _f(8, "r", DataType("ROW", fields=(_f(9, "x2", BIGINT()), _f(15, "z", STRING())))),  # nested rename/drop/add
        _f(11, "l", DataType("ARRAY", element=DataType("ROW", fields=(_f(12, "p", BIGINT()),)))),
        _f(13, "us", DataType("TIMESTAMP", precision=3)),  # narrowed: floors like Java's millis + nanos
        DataField(16, "dflt", DataType("INT", nullable=False), default_value="42"),  # added with a default (1.2+)
    ),
    primary_keys=("id",),
    highest_field_id=16,
)
EVO_ROWS = [
    {"id": 1, "a": 10, "b": "x", "c": 1.0, "f": 0.5, "dec": Decimal("123.45"), "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 5000),
     "v": "abc", "r": {"x": 7, "gone": "g"}, "l": [{"p": 1}, None], "us": dt.datetime(1969, 12, 31, 23, 59, 59, 998500)},
    {"id": 2, "a": None, "b": None, "c": None, "f": None, "dec": None, "ts": None, "v": None, "r": None, "l": None,
     "us": None},
]
EVO_EXPECTED = [
    {"_KEY_id": 1, SEQ: 0, KIND: 0, "id": 1, "a": 10, "b2": "x", "f": 0.5, "dec": Decimal("123.45"),
     "ts": dt.datetime(2024, 1, 1, 0, 0, 0, 5000), "v": "abc", "d": None, "r": {"x2": 7, "z": None},
     "l": [{"p": 1}, None], "us": dt.datetime(1969, 12, 31, 23, 59, 59, 998000), "dflt": 42},
    {"_KEY_id": 2, SEQ: 1, KIND: 0, "id": 2, "a": None, "b2": None, "f": None, "dec": None, "ts": None, "v": None,
     "d": None, "r": None, "l": None, "us": None, "dflt": 42},
]


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_schema_evolution_by_field_id(tmp_path, fmt):
    p = _write(tmp_path, _input_table(EVO_V0, EVO_ROWS), EVO_V0, fmt)
    got = df.read_data_file(p, fmt, EVO_V0, EVO_V1, True, p)
    assert got.schema == df.output_arrow_schema(EVO_V1, True)
    assert got.to_pylist() == EVO_EXPECTED
    # streaming gives the same rows
    batches = list(df.iter_data_file_batches(p, fmt, EVO_V0, EVO_V1, True, p, batch_size=1))
    assert [b.num_rows for b in batches] == [1, 1]
    assert pa.Table.from_batches(batches).to_pylist() == EVO_EXPECTED
    # projection and dropping system columns
    proj = df.read_data_file(p, fmt, EVO_V0, EVO_V1, True, p, keep_system_columns=False, projection=["d", "b2"])
    assert proj.to_pylist() == [{"d": None, "b2": "x"}, {"d": None, "b2": None}]


def test_schema_evolution_matches_pypaimon(tmp_path):
    """pypaimon writes under schema 0, alters the table (rename, drop, add, widen) and reads; so do we."""
    from pypaimon.schema.data_types import AtomicType
    from pypaimon.schema.schema_change import SchemaChange

    wh = str(tmp_path / "wh")
    s0 = pa.schema([pa.field("id", pa.int32(), nullable=False), pa.field("a", pa.int32()), pa.field("b", pa.string()),
                    pa.field("c", pa.float64()), pa.field("f", pa.float32())])
    for fmt in ("parquet", "orc", "avro"):
        t = pp.create_table(wh, f"db.evo_{fmt}", s0, primary_keys=["id"], options={"bucket": "1", "file.format": fmt})
        pp.write(t, {"id": [1, 2], "a": [10, None], "b": ["x", "y"], "c": [1.0, 2.0], "f": [0.5, None]})
        pp.catalog(wh).alter_table(f"db.evo_{fmt}", [
            SchemaChange.rename_column("b", "b2"), SchemaChange.drop_column("c"),
            SchemaChange.add_column("d", AtomicType("BIGINT")),
            SchemaChange.update_column_type("a", AtomicType("BIGINT")),
            SchemaChange.update_column_type("f", AtomicType("DOUBLE"))])
        v0, v1 = _schema_of(wh, f"evo_{fmt}", 0), _schema_of(wh, f"evo_{fmt}", 1)
        meta = manifest_files(wh, f"evo_{fmt}")[0]
        assert meta["_SCHEMA_ID"] == 0
        path = data_file_paths(wh, f"evo_{fmt}")[0]
        ours = df.read_data_file(path, df.format_of(path), v0, v1, True, path, keep_system_columns=False)
        theirs = pp.read(wh, f"db.evo_{fmt}")
        assert ours.column_names == theirs.column_names == ["id", "a", "b2", "f", "d"]
        assert _rows_by_id(ours) == _rows_by_id(theirs)


def test_thin_mode_file_takes_keys_from_value_columns(tmp_path):
    """1.0+ thin-mode files have no `_KEY_*`; the key comes from the value column (FormatReaderMapping)."""
    schema = TableSchema(0, (_f(0, "k", INT(False)), _f(1, "v", STRING())), primary_keys=("k",))
    thin = pa.table({SEQ: pa.array([5, 6], pa.int64()), KIND: pa.array([0, 0], pa.int8()),
                     "k": pa.array([1, 2], pa.int32()), "v": ["a", "b"]})
    p = str(tmp_path / "thin.parquet")
    pq.write_table(thin, p)
    got = df.read_data_file(p, "parquet", schema, schema, True, p)
    assert got.column_names == ["_KEY_k", SEQ, KIND, "k", "v"]
    assert got.column("_KEY_k").to_pylist() == [1, 2]


def test_java_09_style_parquet_is_read(tmp_path):
    """Files without field ids, all-OPTIONAL columns, FIXED_LEN decimals (p <= 18), legacy TIMESTAMP_MILLIS
    (isAdjustedToUTC=true), upper-case column names: still resolved by name and converted."""
    schema = TableSchema(0, (_f(0, "k", INT(False)), _f(1, "d", DataType("DECIMAL", precision=10, scale=2)),
                             _f(2, "ts", DataType("TIMESTAMP", precision=3)), _f(3, "Name", STRING())),
                         primary_keys=("k",))
    raw = pa.table({
        "_KEY_k": pa.array([1], pa.int32()), SEQ: pa.array([0], pa.int64()), KIND: pa.array([0], pa.int32()),
        "k": pa.array([1], pa.int32()), "d": pa.array([Decimal("12.34")], pa.decimal128(10, 2)),
        "ts": pa.array([1_700_000_000_123], pa.timestamp("ms", tz="UTC")), "NAME": ["n"]})
    p = str(tmp_path / "j09.parquet")
    pq.write_table(raw, p, store_schema=False, store_decimal_as_integer=False)
    assert pq.ParquetFile(p).schema.column(4).physical_type == "FIXED_LEN_BYTE_ARRAY"
    got = df.read_data_file(p, "parquet", schema, schema, True, p)
    assert got.schema == df.output_arrow_schema(schema, True)
    assert got.to_pylist() == [{"_KEY_k": 1, SEQ: 0, KIND: 0, "k": 1, "d": Decimal("12.34"),
                                "ts": dt.datetime(2023, 11, 14, 22, 13, 20, 123000), "Name": "n"}]


# ---------------------------------------------------------------- file names, streaming, errors

@pytest.mark.parametrize("name,fmt", [
    ("data-0a1b-0.parquet", "parquet"), ("data-0a1b-0.orc", "orc"), ("data-0a1b-0.avro", "avro"),
    ("data-0a1b-0.zst.parquet", "parquet"), ("changelog-x-3.gz.orc", "orc"), ("data-x-1.snappy.avro", "avro"),
    ("/t/bucket-0/data-x-1.lz4.parquet", "parquet"), ("DATA-X.PARQUET", "parquet"),
])
def test_format_from_file_name(name, fmt):
    assert df.format_of(name) == fmt


@pytest.mark.parametrize("name", ["data-x-0.json.zst", "data-x-0.csv", "data-x-0.lance"])
def test_unsupported_formats(name):
    with pytest.raises(UnsupportedError):
        df.format_of(name)


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_iter_batches_bounded_and_equal(tmp_path, fmt):
    schema = TableSchema(0, (_f(0, "k", INT(False)), _f(1, "v", STRING())), primary_keys=("k",))
    n = 20_000
    t = pa.table({SEQ: pa.array(range(n), pa.int64()), KIND: pa.array([0] * n, pa.int8()),
                  "k": pa.array(range(n), pa.int32()), "v": [f"v{i}" for i in range(n)]})
    opts = {"parquet.block.size": "64 kb", "orc.stripe.size": "64kb"}
    p = _write(tmp_path, t, schema, fmt, opts)
    if fmt == "parquet":
        assert pq.ParquetFile(p).num_row_groups > 1
    batches = list(df.iter_data_file_batches(p, fmt, schema, schema, True, p, batch_size=3000))
    assert all(b.num_rows <= 3000 for b in batches) and sum(b.num_rows for b in batches) == n
    whole = df.read_data_file(p, fmt, schema, schema, True, p)
    assert pa.Table.from_batches(batches).equals(whole)
    assert whole.column("v").to_pylist() == t.column("v").to_pylist()


def test_avro_streaming(pypaimon_wh):
    schema = _schema_of(pypaimon_wh, "flat_avro_pk")
    path = data_file_paths(pypaimon_wh, "flat_avro_pk")[0]
    batches = list(df.iter_data_file_batches(path, "avro", schema, schema, True, path, batch_size=3))
    assert [b.num_rows for b in batches] == [3, 1]
    with open(path, "rb") as fo:
        from_bytes = df.read_data_file(fo.read(), "avro", schema, schema, True, path)
    assert pa.Table.from_batches(batches).to_pylist() == from_bytes.to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "orc", "avro"])
def test_corrupt_and_truncated_files(pypaimon_wh, tmp_path, fmt):
    schema = _schema_of(pypaimon_wh, f"flat_{fmt}_pk")
    src = data_file_paths(pypaimon_wh, f"flat_{fmt}_pk")[0]
    data = Path(src).read_bytes()
    cases = {
        "truncated": data[: len(data) // 2],
        "garbage": b"\x13\x37" * 100,
        "empty": b"",
    }
    if fmt == "parquet":
        cases["bad-footer"] = data[:-12] + b"\xff" * 8 + data[-4:]
    for label, content in cases.items():
        p = str(tmp_path / f"{label}.{fmt}")
        Path(p).write_bytes(content)
        with pytest.raises(CorruptMetadataError) as e:
            df.read_data_file(p, fmt, schema, schema, True, p)
        assert e.value.path == p and p in str(e.value)
        with pytest.raises(CorruptMetadataError):
            list(df.iter_data_file_batches(p, fmt, schema, schema, True, p))
        with pytest.raises(CorruptMetadataError):
            df.read_data_file(content, fmt, schema, schema, True, p)


def test_missing_file_is_left_to_the_caller(tmp_path):
    schema = TableSchema(0, (_f(0, "a", INT()),))
    p = str(tmp_path / "nope.parquet")
    with pytest.raises(FileNotFoundError):
        df.read_data_file(p, "parquet", schema, schema, False, p)


def test_missing_key_or_system_column_is_corrupt(tmp_path):
    schema = TableSchema(0, (_f(0, "k", INT(False)), _f(1, "v", STRING())), primary_keys=("k",))
    p = str(tmp_path / "nosys.parquet")
    pq.write_table(pa.table({"k": pa.array([1], pa.int32()), "v": ["a"]}), p)
    with pytest.raises(CorruptMetadataError, match="_SEQUENCE_NUMBER"):
        df.read_data_file(p, "parquet", schema, schema, True, p)
    # read as plain columns it is fine
    assert df.read_data_file(p, "parquet", schema, schema, True, p, keep_system_columns=False).num_rows == 1


def test_retract_mask():
    kinds = pa.array([0, 1, 2, 3], pa.int8())
    assert df.value_kind_is_retract(kinds).to_pylist() == [False, True, False, True]
