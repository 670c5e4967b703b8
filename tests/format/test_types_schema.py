"""Schema JSON and the type grammar (format.md §2), checked against schema files pypaimon writes."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from paimon_ops.errors import CorruptMetadataError, InvalidOptionError
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import parse_type, to_arrow_type, type_to_json
from paimon_ops.options import SNAPSHOT_TIME_RETAINED, Options, parse_duration, parse_memory
from tests import pypaimon_util as pp

ATOMIC = [
    ("BOOLEAN", pa.bool_()), ("TINYINT", pa.int8()), ("SMALLINT", pa.int16()), ("INT NOT NULL", pa.int32()),
    ("BIGINT", pa.int64()), ("FLOAT", pa.float32()), ("DOUBLE", pa.float64()), ("DECIMAL(10, 2)", pa.decimal128(10, 2)),
    ("DECIMAL(38, 4) NOT NULL", pa.decimal128(38, 4)), ("CHAR(3)", pa.string()), ("VARCHAR(20)", pa.string()),
    ("STRING", pa.string()), ("BINARY(4)", pa.binary()), ("VARBINARY(9)", pa.binary()), ("BYTES", pa.binary()),
    ("DATE", pa.date32()), ("TIME(0)", pa.time32("ms")), ("TIMESTAMP(3)", pa.timestamp("ms")),
    ("TIMESTAMP(6)", pa.timestamp("us")), ("TIMESTAMP(9)", pa.timestamp("ns")),
    ("TIMESTAMP(3) WITH LOCAL TIME ZONE", pa.timestamp("ms", tz="UTC")),
]


@pytest.mark.parametrize("text,arrow", ATOMIC)
def test_atomic_types_round_trip_in_java_spelling(text, arrow):
    t = parse_type(text)
    assert type_to_json(t) == text
    assert to_arrow_type(t) == arrow
    assert t.nullable == ("NOT NULL" not in text)


@pytest.mark.parametrize("alias,canonical", [
    ("INTEGER", "INT"), ("DOUBLE PRECISION", "DOUBLE"), ("NUMERIC(5, 1)", "DECIMAL(5, 1)"), ("DEC", "DECIMAL(10, 0)"),
    ("TIMESTAMP_LTZ(6)", "TIMESTAMP(6) WITH LOCAL TIME ZONE"), ("VARCHAR(2147483647)", "STRING"),
    ("TIMESTAMP", "TIMESTAMP(6)"), ("TIMESTAMP WITH LOCAL TIME ZONE NOT NULL", "TIMESTAMP(6) WITH LOCAL TIME ZONE NOT NULL"),
])
def test_parser_accepts_java_aliases(alias, canonical):
    assert type_to_json(parse_type(alias)) == canonical


def test_nested_types_keep_field_ids():
    obj = {"type": "ROW NOT NULL", "fields": [
        {"id": 2, "name": "x", "type": "INT"},
        {"id": 3, "name": "m", "type": {"type": "MAP", "key": "STRING NOT NULL", "value": {"type": "ARRAY", "element": "BIGINT"}}},
    ]}
    t = parse_type(obj)
    assert type_to_json(t) == obj
    assert [f.id for f in t.fields] == [2, 3]
    assert not t.nullable


@pytest.mark.parametrize("bad", ["FOO", "INT(", "DECIMAL(40, 2)", "TIMESTAMP(12)", 42, {"type": "LIST"}, {"element": "INT"}])
def test_unknown_type_is_a_clear_error(bad):
    with pytest.raises(CorruptMetadataError, match="schema-7"):
        parse_type(bad, "schema-7")


def test_schema_written_by_pypaimon_reads_and_rewrites_without_null_comment(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("dt", pa.string()), ("amount", pa.decimal128(12, 2)),
                        ("ts", pa.timestamp("ms")), ("tags", pa.list_(pa.string()))])
    pp.create_table(str(tmp_path), "db.t", schema, ["dt"], ["id", "dt"], {"bucket": "2", "file.format": "parquet"})
    path = tmp_path / "db.db" / "t" / "schema" / "schema-0"
    raw = json.loads(path.read_text())
    s = TableSchema.from_json(path.read_text(), str(path))
    assert s.field_names == ["id", "dt", "amount", "ts", "tags"]
    assert s.primary_keys == ("id", "dt") and s.partition_keys == ("dt",)
    assert s.trimmed_primary_keys == ["id"] and s.bucket_keys == ["id"]
    assert s.options["bucket"] == "2"
    assert not s.field("id").type.nullable  # PK columns are NOT NULL
    out = json.loads(s.to_json())
    assert "comment" not in out  # Java would read a JSON null as the text "null"
    assert raw["comment"] is None  # what pypaimon wrote; we omit it
    # pypaimon also adds a non-Java "nullable" key inside composite types; Java's form has none.
    assert raw["fields"][4]["type"].pop("nullable") is True
    for key in ("version", "id", "fields", "highestFieldId", "partitionKeys", "primaryKeys", "options", "timeMillis"):
        assert out[key] == raw[key], key
    # pypaimon reads the schema we re-wrote
    path.write_text(s.to_json())
    assert pp.get_table(str(tmp_path), "db.t").table_schema.primary_keys == ["id", "dt"]


def test_schema_java_pretty_printing_and_compat_defaults():
    s = TableSchema.from_json(json.dumps({"id": 0, "fields": [{"id": 0, "name": "a", "type": "INT"}],
                                          "partitionKeys": [], "primaryKeys": []}), "schema-0")
    assert s.version == 1 and s.options == {"bucket": "1", "file.format": "orc"}
    assert '"id" : 0' in s.to_json()


@pytest.mark.parametrize("text,problem", [("{", "not valid JSON"), ("[]", "not an object"), ('{"id": 0}', "fields")])
def test_corrupt_schema_names_the_file(text, problem):
    with pytest.raises(CorruptMetadataError, match=rf"schema/schema-3: .*{problem}"):
        TableSchema.from_json(text, "schema/schema-3")


@pytest.mark.parametrize("text,seconds", [("1 h", 3600), ("30 min", 1800), ("1 d", 86400), ("500 ms", 0.5),
                                          ("2h", 7200), ("PT1H30M", 5400), ("1000", 1), ("10 s", 10)])
def test_durations(text, seconds):
    assert parse_duration(text).total_seconds() == seconds


def test_options_errors_name_option_and_table():
    o = Options({"bucket": "x", "snapshot.time-retained": "soon", "target-file-size": "2 mb"}, where="table db.t")
    with pytest.raises(InvalidOptionError, match="'bucket' on table db.t: expected an integer"):
        _ = o.bucket
    with pytest.raises(InvalidOptionError, match="snapshot.time-retained"):
        o.get(SNAPSHOT_TIME_RETAINED)
    assert o.target_file_size(True) == 2 << 20 and parse_memory("128 mb") == 128 << 20
    assert Options({}).num_levels == 6
