"""Data files (format.md §7): the physical schema, writing Parquet/ORC, reading Parquet/ORC/Avro with schema evolution.

Physical layout
  * primary-key tables: ``_KEY_<k>`` (trimmed primary key, PK order, NOT NULL), ``_SEQUENCE_NUMBER`` BIGINT NOT NULL,
    ``_VALUE_KIND`` TINYINT NOT NULL, then every column of the schema the file is written with;
  * append tables: just the columns.

Reading resolves columns the way Java does: a column of the *read* schema (the table's current schema) is found by
its field id in the *file* schema (the schema id recorded in the manifest) and then by that schema's column NAME in
the physical file (exact, then case-insensitive). Field ids inside Parquet/ORC files are never relied on: Java 0.9
and pypaimon write none. Columns added later read as nulls, dropped columns disappear, renamed columns are mapped by
id, widened types are cast to the read type.

Codec only: no policy here. Missing files are the caller's business (``FileNotFoundError`` propagates); a file that
cannot be decoded raises :class:`CorruptMetadataError` naming its path.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from paimon_ops.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    PaimonOpsError,
    UnsupportedError,
)
from paimon_ops.format.schema import TableSchema
from paimon_ops.format.types import DataField, DataType, arrow_field, to_arrow_type
from paimon_ops.options import (
    AVRO_CODEC,
    FILE_COMPRESSION,
    FILE_COMPRESSION_ZSTD_LEVEL,
    ORC_COMPRESS,
    ORC_STRIPE_SIZE,
    PARQUET_BLOCK_SIZE,
    PARQUET_PAGE_SIZE,
    Options,
    read,
)

# ---------------------------------------------------------------- system columns (SpecialFields / SystemColumns)

KEY_PREFIX = "_KEY_"
SEQUENCE_NUMBER = "_SEQUENCE_NUMBER"
VALUE_KIND = "_VALUE_KIND"
KEY_FIELD_ID_START = 2147483647 // 2  # 1073741823: _KEY_x id = this + id(x)
SEQUENCE_NUMBER_ID = 2147483646
VALUE_KIND_ID = 2147483645
ROW_ID = "_ROW_ID"  # row tracking (1.2+): a physical column only where Java's append compaction writes one
ROW_ID_ID = 2147483642
STRUCTURED_TYPE_FIELD_ID_BASE = 2147483647 // 4  # 536870911: derived ids of array elements / map keys / values
STRUCTURED_TYPE_FIELD_DEPTH_LIMIT = 1 << 10

# _VALUE_KIND codes (RowKind byte values).
INSERT = 0
UPDATE_BEFORE = 1
UPDATE_AFTER = 2
DELETE = 3
VALUE_KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}

FORMATS = ("parquet", "orc", "avro")
# Compression extensions DataFilePathFactory strips when `file.suffix.include.compression=true` (format.md §1.2).
_COMPRESSION_EXTENSIONS = {"zst", "zstd", "gz", "gzip", "bz2", "lz4", "snappy", "deflate", "lzo", "br", "xz", "zlib"}

Source = Union[str, bytes, bytearray, memoryview, pa.Buffer, pa.NativeFile, Any]

DEFAULT_BATCH_SIZE = 65536


def _wrap_int32(v: int) -> int:
    """Java int arithmetic: derived ids are computed in 32-bit two's complement."""
    v &= 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def key_field_id(field_id: int) -> int:
    return _wrap_int32(KEY_FIELD_ID_START + field_id)


def array_element_field_id(array_field_id: int, depth: int) -> int:
    return _wrap_int32(STRUCTURED_TYPE_FIELD_ID_BASE + array_field_id * STRUCTURED_TYPE_FIELD_DEPTH_LIMIT + depth)


def map_key_field_id(map_field_id: int, depth: int) -> int:
    return _wrap_int32(STRUCTURED_TYPE_FIELD_ID_BASE - map_field_id * STRUCTURED_TYPE_FIELD_DEPTH_LIMIT - depth)


def map_value_field_id(map_field_id: int, depth: int) -> int:
    return _wrap_int32(STRUCTURED_TYPE_FIELD_ID_BASE + map_field_id * STRUCTURED_TYPE_FIELD_DEPTH_LIMIT + depth)


def is_system_column(name: str) -> bool:
    return name.startswith(KEY_PREFIX) or name in (SEQUENCE_NUMBER, VALUE_KIND, ROW_ID)


# ---------------------------------------------------------------- physical schema

def key_fields(schema: TableSchema) -> list[DataField]:
    """The ``_KEY_<k>`` fields of a primary-key file: trimmed PK in PK order, NOT NULL, id 1073741823 + id."""
    out = []
    for name in schema.trimmed_primary_keys:
        f = schema.field(name)
        out.append(DataField(key_field_id(f.id), KEY_PREFIX + name, f.type.with_nullable(False)))
    return out


def file_fields(schema: TableSchema, primary_key: bool, *, thin: bool = False,
                row_ids: bool = False) -> list[DataField]:
    """Paimon fields of the physical file, in file order (KeyValue.createKeyValueFields).

    `thin` (primary key, `data-file.thin-mode`, 1.0+): no `_KEY_*` columns, the key is read from the value columns
    (KeyValueThinDataFileWriterImpl). `row_ids` (append, row tracking): the columns then `_ROW_ID` and
    `_SEQUENCE_NUMBER`, as Java's append compaction of a row-tracking table writes them
    (`SpecialFields.rowTypeWithRowTracking`)."""
    if not primary_key:
        if row_ids:
            return [*schema.fields, DataField(ROW_ID_ID, ROW_ID, DataType("BIGINT", nullable=False)),
                    DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, DataType("BIGINT", nullable=False))]
        return list(schema.fields)
    return [
        *([] if thin else key_fields(schema)),
        DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, DataType("BIGINT", nullable=False)),
        DataField(VALUE_KIND_ID, VALUE_KIND, DataType("TINYINT", nullable=False)),
        *schema.fields,
    ]


def _id_meta(field_id: int) -> dict[bytes, bytes]:
    return {b"PARQUET:field_id": str(field_id).encode()}


def _file_arrow_type(t: DataType, column_id: int, depth: int) -> pa.DataType:
    """Arrow type as written, with derived Parquet field ids on nested elements (ParquetSchemaConverter, 1.0+)."""
    r = t.root
    if r in ("ARRAY", "VECTOR"):
        elem = t.element
        assert elem is not None
        return pa.list_(_file_arrow_field("element", elem, array_element_field_id(column_id, depth + 1), column_id, depth + 1))
    if r == "MAP":
        assert t.key is not None and t.value is not None
        # Parquet has no nullable map keys: Java forces the key REQUIRED.
        key = _file_arrow_field("key", t.key.with_nullable(False), map_key_field_id(column_id, depth + 1), column_id, depth + 1)
        value = _file_arrow_field("value", t.value, map_value_field_id(column_id, depth + 1), column_id, depth + 1)
        return pa.map_(key, value)
    if r == "MULTISET":
        assert t.element is not None
        key = _file_arrow_field("key", t.element.with_nullable(False), map_key_field_id(column_id, depth + 1), column_id, depth + 1)
        value = _file_arrow_field("value", DataType("INT", nullable=False), map_value_field_id(column_id, depth + 1), column_id, depth + 1)
        return pa.map_(key, value)
    if r == "ROW":
        # Nested row fields carry their own schema ids (depth restarts at 0 in Java).
        return pa.struct([_file_arrow_field(f.name, f.type, f.id, f.id, 0) for f in t.fields])
    return to_arrow_type(t)


def _file_arrow_field(name: str, t: DataType, own_id: int, column_id: int, depth: int) -> pa.Field:
    return pa.field(name, _file_arrow_type(t, column_id, depth), nullable=t.nullable, metadata=_id_meta(own_id))


def file_arrow_schema(schema: TableSchema, primary_key: bool, *, thin: bool = False,
                      row_ids: bool = False) -> pa.Schema:
    """The physical Arrow schema we write (Parquet field ids in ``PARQUET:field_id`` metadata at every level)."""
    return pa.schema([_file_arrow_field(f.name, f.type, f.id, f.id, 0)
                      for f in file_fields(schema, primary_key, thin=thin, row_ids=row_ids)])


def output_arrow_schema(
    read_schema: TableSchema,
    primary_key: bool,
    keep_system_columns: bool = True,
    projection: Sequence[str] | None = None,
    row_ids: bool = False,
) -> pa.Schema:
    """Schema of what :func:`read_data_file` returns: system columns (PK, if kept) then the read columns, then (append
    files, `row_ids`) `_ROW_ID` and `_SEQUENCE_NUMBER` as stored in the file, null where the file has none."""
    fields: list[pa.Field] = []
    if primary_key and keep_system_columns:
        for f in key_fields(read_schema):
            fields.append(arrow_field(f.name, f.type, f.id))
        fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), nullable=False, metadata=_id_meta(SEQUENCE_NUMBER_ID)))
        fields.append(pa.field(VALUE_KIND, pa.int8(), nullable=False, metadata=_id_meta(VALUE_KIND_ID)))
    for f in _projected_fields(read_schema, projection):
        fields.append(arrow_field(f.name, f.type, f.id))
    if row_ids and not primary_key:
        fields.append(pa.field(ROW_ID, pa.int64(), metadata=_id_meta(ROW_ID_ID)))
        fields.append(pa.field(SEQUENCE_NUMBER, pa.int64(), metadata=_id_meta(SEQUENCE_NUMBER_ID)))
    return pa.schema(fields)


def _projected_fields(read_schema: TableSchema, projection: Sequence[str] | None) -> list[DataField]:
    if projection is None:
        return list(read_schema.fields)
    try:
        return [read_schema.field(n) for n in projection]
    except KeyError as e:
        raise InvalidArgumentError(f"projected column {e.args[0]!r} is not in schema {read_schema.id}") from None


# ---------------------------------------------------------------- format from file name

def format_of(file_name: str) -> str:
    """File format from the name (DataFilePathFactory.formatIdentifier): last extension, skipping a compression one."""
    base = file_name.rsplit("/", 1)[-1]
    parts = base.split(".")
    if len(parts) < 2:
        raise CorruptMetadataError(file_name, "data file name has no format extension")
    ext = parts[-1].lower()
    if ext in _COMPRESSION_EXTENSIONS and len(parts) >= 3:
        ext = parts[-2].lower()
    if ext not in FORMATS:
        raise UnsupportedError(f"{file_name}: data file format {ext!r} is not supported (parquet, orc, avro are)")
    return ext


# ---------------------------------------------------------------- writing

_PARQUET_CODECS = {
    "zstd": "ZSTD", "zstandard": "ZSTD", "snappy": "SNAPPY", "gzip": "GZIP", "gz": "GZIP", "lz4": "LZ4",
    "lz4_raw": "LZ4", "brotli": "BROTLI", "none": "NONE", "uncompressed": "NONE",
}
_ORC_CODECS = {
    "zstd": "ZSTD", "zstandard": "ZSTD", "snappy": "SNAPPY", "lz4": "LZ4", "zlib": "ZLIB", "gzip": "ZLIB",
    "deflate": "ZLIB", "none": "UNCOMPRESSED", "uncompressed": "UNCOMPRESSED",
}
def _prepare_for_write(table: pa.Table, schema: TableSchema, primary_key: bool, thin: bool = False,
                       row_ids: bool = False) -> pa.Table:
    """Columns in file order, cast to the physical types; `_KEY_*` may be derived from the value columns."""
    target = file_arrow_schema(schema, primary_key, thin=thin, row_ids=row_ids)
    names = set(table.column_names)
    arrays = []
    for field in target:
        if field.name in names:
            col = table.column(field.name)
        elif field.name.startswith(KEY_PREFIX) and field.name[len(KEY_PREFIX):] in names:
            col = table.column(field.name[len(KEY_PREFIX):])
        else:
            raise InvalidArgumentError(f"cannot write data file: column {field.name!r} is missing from the input")
        if not field.nullable and col.null_count:
            raise InvalidArgumentError(
                f"cannot write data file: column {field.name!r} is NOT NULL but has {col.null_count} null(s)")
        if col.type != field.type:
            try:
                col = col.cast(field.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                raise InvalidArgumentError(
                    f"cannot write data file: column {field.name!r} of type {col.type} does not cast to {field.type}: {e}"
                ) from None
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=target)


def _timestamp_precisions(t: DataType) -> list[int]:
    if t.root in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        return [t.precision or 0]
    out: list[int] = []
    for sub in (t.element, t.key, t.value):
        if sub is not None:
            out += _timestamp_precisions(sub)
    for f in t.fields:
        out += _timestamp_precisions(f.type)
    return out


def write_data_file(
    table: pa.Table,
    sink: Any,
    fmt: str,
    schema: TableSchema,
    options: dict[str, str],
    primary_key: bool | None = None,
    *,
    thin: bool = False,
    row_ids: bool = False,
) -> None:
    """Write one data file of `schema` (PK layout if the schema has primary keys, unless `primary_key` says otherwise;
    `thin` / `row_ids`: see `file_fields`).

    `table` holds the columns of the physical layout (``_KEY_*`` may be omitted: they are copied from the value
    columns). Rows must already be in file order (sorted by key for PK files).
    """
    w = DataFileWriter(sink, fmt, schema, options, primary_key, thin=thin, row_ids=row_ids)
    try:
        w.write(table, whole_file=True)
    finally:
        w.close()


class DataFileWriter:
    """The one writer of data files (the table writer's whole files and compaction's streamed row groups): the
    physical layout, the codecs and the Parquet/ORC settings Java 0.9+ reads, chunk by chunk.

    Options are validated when the writer is created, so an unknown codec is refused before any file is opened
    elsewhere (`validate_write_options`)."""

    def __init__(self, sink: Any, fmt: str, schema: TableSchema, options: dict[str, str],
                 primary_key: bool | None = None, *, thin: bool = False, row_ids: bool = False):
        self.fmt = validate_write_options(fmt, options)
        self.sink = sink
        self.schema = schema
        self.options = options
        self.pk = bool(schema.primary_keys) if primary_key is None else primary_key
        self.layout = {"thin": thin and self.pk, "row_ids": row_ids and not self.pk}
        self._writer: Any = None

    def write(self, table: pa.Table, whole_file: bool = False) -> None:
        """Append rows in file order: one row group (Parquet) / stripe input (ORC) per call, or — `whole_file` —
        split into row groups of `parquet.block.size` as Java does for a whole file."""
        data = _prepare_for_write(table, self.schema, self.pk, **self.layout)
        if self.fmt == "avro":
            if self._writer is None:
                self._writer = _AvroDataWriter(self.sink, self.schema, self.pk, self.options, **self.layout)
            self._writer.write_table(data)
            return
        if self.fmt == "orc":
            data = orc_compatible(data)
        if self._writer is None:
            self._writer = self._open(data.schema)
        if self.fmt == "parquet":
            rows = data.num_rows
            group = rows or 1
            if whole_file:
                limit = read(self.options, PARQUET_BLOCK_SIZE)
                if rows and data.nbytes > limit:
                    group = max(1, int(rows * limit / data.nbytes))
            self._writer.write_table(data, row_group_size=group)
        else:
            self._writer.write(data)

    def close(self) -> None:
        if self._writer is None and self.fmt == "avro":  # an empty file still has its header
            self._writer = _AvroDataWriter(self.sink, self.schema, self.pk, self.options, **self.layout)
        if self._writer is None:  # an empty file still needs its footer
            physical = file_arrow_schema(self.schema, self.pk, **self.layout)
            self._writer = self._open(physical if self.fmt == "parquet" else orc_compatible_schema(physical))
        self._writer.close()

    def _open(self, arrow_schema: pa.Schema) -> Any:
        codec, level = compression_of(self.fmt, self.options)
        if self.fmt == "parquet":
            import pyarrow.parquet as pq
            # TIMESTAMP(7..9) is INT96 in Java (0.9–1.1 readers accept nothing else), but pyarrow can only switch
            # INT96 on for every timestamp column. Use it when all timestamps are p > 6; otherwise p > 6 columns
            # become INT64 NANOS (readable by Java 1.2+ only) and p <= 6 columns keep the exact Java mapping.
            precisions = [p for f in self.schema.fields for p in _timestamp_precisions(f.type)]
            int96 = bool(precisions) and all(p > 6 for p in precisions)
            return pq.ParquetWriter(
                self.sink, arrow_schema,
                version="2.6",  # TIMESTAMP(MILLIS/MICROS) logical types, INT(8/16) annotations
                compression=codec, compression_level=level,
                use_dictionary=True, write_statistics=True,
                data_page_size=read(self.options, PARQUET_PAGE_SIZE),
                data_page_version="1.0",
                use_deprecated_int96_timestamps=int96,
                # Java 0.9 cannot read DECIMAL(p<=18) stored as FIXED_LEN_BYTE_ARRAY: INT32 for p<=9, INT64 for p<=18.
                store_decimal_as_integer=True,
                use_compliant_nested_type=True,  # 3-level LIST with `element`, MAP `key_value` as Java writes
                store_schema=False,  # no ARROW:schema blob; Java writes only the Parquet schema
            )
        import pyarrow.orc as orc
        stripe = read(self.options, ORC_STRIPE_SIZE)
        return orc.ORCWriter(self.sink, compression=codec, stripe_size=stripe)


def validate_write_options(fmt: str, options: dict[str, str]) -> str:
    """The data file format to write, with every option its writer reads checked — codec and level, page, row group
    and stripe sizes (InvalidOptionError names the option) — so that a bad value is refused before a file is
    opened, not half-way through a run."""
    fmt = str(fmt).lower()
    if fmt not in ("parquet", "orc", "avro"):
        raise UnsupportedError(f"data file format {fmt!r} is not supported (parquet, orc, avro)")
    if fmt == "avro":
        avro_codec(options)
    else:
        compression_of(fmt, options)
        for option in ((PARQUET_PAGE_SIZE, PARQUET_BLOCK_SIZE) if fmt == "parquet" else (ORC_STRIPE_SIZE,)):
            read(options, option)
    return fmt


_AVRO_CODECS = {"null": "null", "none": "null", "uncompressed": "null", "deflate": "deflate", "snappy": "snappy",
                "bzip2": "bzip2", "xz": "xz", "zstandard": "zstandard", "zstd": "zstandard"}


def avro_codec(options: dict[str, str]) -> tuple[str, int | None]:
    """(fastavro codec, level) of Avro data files as Java's AvroFileFormat picks it: `avro.codec` if set, else
    `file.compression` (zstd at `file.compression.zstd-level`, or an Avro codec name)."""
    opts = Options(options)
    codec = _AVRO_CODECS.get(opts.get(AVRO_CODEC).strip().lower())
    if codec is None:
        raise opts.fail(AVRO_CODEC, "one of " + ", ".join(sorted(_AVRO_CODECS)))
    level = opts.get(FILE_COMPRESSION_ZSTD_LEVEL) if opts.key_set(AVRO_CODEC) != AVRO_CODEC.key and \
        codec == "zstandard" else None
    return codec, level


def _avro_type(t: DataType, record_name: str) -> Any:
    """Paimon's AvroSchemaConverter mapping (format.md §4.1), nullable as ["null", T]."""
    r = t.root
    if r in ("TINYINT", "SMALLINT", "INT"):
        out: Any = "int"
    elif r == "BIGINT":
        out = "long"
    elif r == "BOOLEAN":
        out = "boolean"
    elif r == "FLOAT":
        out = "float"
    elif r == "DOUBLE":
        out = "double"
    elif r in ("CHAR", "VARCHAR", "STRING"):
        out = "string"
    elif r in ("BINARY", "VARBINARY", "BYTES", "BLOB"):
        out = "bytes"
    elif r == "DATE":
        out = {"type": "int", "logicalType": "date"}
    elif r == "TIME":
        out = {"type": "int", "logicalType": "time-millis"}
    elif r in ("TIMESTAMP", "TIMESTAMP_LTZ"):
        p = t.precision if t.precision is not None else 6
        if p > 6:
            raise UnsupportedError(f"Avro data files cannot hold {t} (precision > 6), as in Paimon")
        unit = "millis" if p <= 3 else "micros"
        out = {"type": "long", "logicalType": f"{'local-' if r == 'TIMESTAMP_LTZ' else ''}timestamp-{unit}"}
    elif r == "DECIMAL":
        out = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale or 0}
    elif r in ("ARRAY", "VECTOR"):
        assert t.element is not None
        out = {"type": "array", "items": _avro_type(t.element, record_name)}
    elif r == "MAP" and t.key is not None and t.key.root in ("CHAR", "VARCHAR", "STRING"):
        assert t.value is not None
        out = {"type": "map", "values": _avro_type(t.value, record_name)}
    elif r in ("MAP", "MULTISET"):
        kt = t.key if r == "MAP" else t.element
        vt = t.value if r == "MAP" else DataType("INT", nullable=False)
        assert kt is not None and vt is not None
        out = {"type": "array", "logicalType": "map", "items": {
            "type": "record", "name": record_name, "fields": [
                {"name": "key", "type": _avro_type(kt, record_name + "_key")},
                {"name": "value", "type": _avro_type(vt, record_name + "_value")}]}}
    elif r == "ROW":
        out = {"type": "record", "name": record_name,
               "fields": [_avro_field(f.name, f.type, f"{record_name}_{f.name}") for f in t.fields]}
    else:
        raise UnsupportedError(f"Avro data files cannot hold {t}")
    return ["null", out] if t.nullable else out


def _avro_field(name: str, t: DataType, record_name: str) -> dict:
    f: dict[str, Any] = {"name": name, "type": _avro_type(t, record_name)}
    if t.nullable:
        f["default"] = None
    return f


def avro_schema(schema: TableSchema, primary_key: bool, *, thin: bool = False, row_ids: bool = False) -> dict:
    """The writer schema of an Avro data file (record `org.apache.paimon.avro.generated.record`)."""
    return {"type": "record", "name": "record", "namespace": "org.apache.paimon.avro.generated",
            "fields": [_avro_field(f.name, f.type, f"record_{f.name}")
                       for f in file_fields(schema, primary_key, thin=thin, row_ids=row_ids)]}


def _avro_out(v: Any, t: DataType) -> Any:
    """An Arrow-to-Python value as fastavro takes it for `t` (maps: dicts or key/value records)."""
    if v is None:
        return None
    r = t.root
    if r == "MAP" and t.key is not None and t.key.root in ("CHAR", "VARCHAR", "STRING"):
        assert t.value is not None
        return {k: _avro_out(x, t.value) for k, x in v}
    if r in ("MAP", "MULTISET"):
        kt = t.key if r == "MAP" else t.element
        vt = t.value if r == "MAP" else DataType("INT")
        assert kt is not None and vt is not None
        return [{"key": _avro_out(k, kt), "value": _avro_out(x, vt)} for k, x in v]
    if r in ("ARRAY", "VECTOR") and t.element is not None:
        return [_avro_out(x, t.element) for x in v]
    if r == "ROW":
        return {f.name: _avro_out(v.get(f.name), f.type) for f in t.fields}
    return v


def _needs_conversion(t: DataType) -> bool:
    if t.root in ("MAP", "MULTISET", "ROW"):
        return True
    return any(_needs_conversion(s) for s in (t.element, t.key, t.value) if s is not None)


class _AvroDataWriter:
    """Avro data files through fastavro's block writer: rows are encoded one by one (Avro is row-oriented, as on
    the read side), columns turned into Python values with one `to_pylist` each."""

    def __init__(self, sink: Any, schema: TableSchema, primary_key: bool, options: dict[str, str], *,
                 thin: bool = False, row_ids: bool = False):
        import fastavro
        from fastavro.write import Writer

        self.fields = file_fields(schema, primary_key, thin=thin, row_ids=row_ids)
        codec, level = avro_codec(options)
        kw: dict[str, Any] = {"compression_level": level} if level is not None else {}
        self._sink = sink if hasattr(sink, "write") else open(sink, "wb")
        self._own = self._sink is not sink
        self._w = Writer(self._sink, fastavro.parse_schema(avro_schema(schema, primary_key, thin=thin, row_ids=row_ids)),
                         codec=codec, **kw)

    def write_table(self, data: pa.Table) -> None:
        names = [f.name for f in self.fields]
        cols = []
        for f in self.fields:
            values = data.column(f.name).to_pylist()
            if _needs_conversion(f.type):
                values = [_avro_out(v, f.type) for v in values]
            cols.append(values)
        for row in zip(*cols):
            self._w.write(dict(zip(names, row)))
        self._w.flush()

    def close(self) -> None:
        self._w.flush()
        if self._own:
            self._sink.close()


def compression_of(fmt: str, options: dict[str, str]) -> tuple[str, int | None]:
    """(Arrow codec name, level) for `file.compression` (`orc.compress` first for ORC), as Paimon spells them."""
    opts = Options(options)
    option, codecs = (ORC_COMPRESS, _ORC_CODECS) if fmt == "orc" else (FILE_COMPRESSION, _PARQUET_CODECS)
    codec = codecs.get(opts.get(option).strip().lower())
    if codec is None:
        raise opts.fail(option, "one of " + ", ".join(sorted(codecs)))
    level = opts.get(FILE_COMPRESSION_ZSTD_LEVEL) if codec == "ZSTD" and fmt == "parquet" else None
    return codec, level


def orc_compatible_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, pa.int32(), f.nullable, f.metadata) if pa.types.is_time(f.type) else f
                      for f in schema])


def orc_compatible(data: pa.Table) -> pa.Table:
    """The Arrow ORC writer has no TIME type; Java stores TIME as ORC `int` (millis of day) anyway."""
    if not any(pa.types.is_time(f.type) for f in data.schema):
        return data
    cols = [c.cast(pa.int32()) if pa.types.is_time(f.type) else c for f, c in zip(data.schema, data.columns)]
    return pa.Table.from_arrays(cols, schema=orc_compatible_schema(data.schema))


# ---------------------------------------------------------------- reading: column resolution

class _Column:
    """How one output column is produced from the file."""

    __slots__ = ("out_field", "physical", "file_type", "read_type", "default")

    def __init__(self, out_field: pa.Field, physical: str | None, file_type: DataType | None, read_type: DataType,
                 default: str | None = None) -> None:
        self.out_field = out_field
        self.physical = physical  # column name in the file, None ⇒ fill
        self.file_type = file_type
        self.read_type = read_type
        self.default = default


def _find_name(names: Sequence[str], wanted: str) -> str | None:
    """Java matches by name exactly first, then case-insensitively."""
    if wanted in names:
        return wanted
    low = wanted.lower()
    for n in names:
        if n.lower() == low:
            return n
    return None


def _plan_columns(
    physical_names: Sequence[str],
    file_schema: TableSchema,
    read_schema: TableSchema,
    primary_key: bool,
    keep_system_columns: bool,
    projection: Sequence[str] | None,
    path: str,
    row_ids: bool = False,
) -> list[_Column]:
    out_schema = output_arrow_schema(read_schema, primary_key, keep_system_columns, projection, row_ids)
    file_by_id = {f.id: f for f in file_schema.fields}
    columns: list[_Column] = []
    i = 0
    if primary_key and keep_system_columns:
        for name in read_schema.trimmed_primary_keys:
            rf = read_schema.field(name)
            ff = file_by_id.get(rf.id)
            phys = None
            ftype = None
            if ff is not None:
                ftype = ff.type
                # `_KEY_x` when present; thin-mode files (1.0+) only have the value column.
                phys = _find_name(physical_names, KEY_PREFIX + ff.name) or _find_name(physical_names, ff.name)
            if phys is None:
                raise CorruptMetadataError(path, f"primary key column {name!r} (field id {rf.id}) not found in data file")
            columns.append(_Column(out_schema.field(i), phys, ftype, rf.type.with_nullable(False)))
            i += 1
        for sys_name, sys_type in ((SEQUENCE_NUMBER, DataType("BIGINT", False)), (VALUE_KIND, DataType("TINYINT", False))):
            phys = _find_name(physical_names, sys_name)
            if phys is None:
                raise CorruptMetadataError(path, f"primary-key data file lacks system column {sys_name}")
            columns.append(_Column(out_schema.field(i), phys, sys_type, sys_type))
            i += 1
    for rf in _projected_fields(read_schema, projection):
        ff = file_by_id.get(rf.id)
        phys = _find_name(physical_names, ff.name) if ff is not None else None
        if phys is None and not rf.type.nullable and rf.default_value is None:
            if ff is None:
                raise UnsupportedError(
                    f"{path}: NOT NULL column {rf.name!r} (field id {rf.id}) does not exist in schema {file_schema.id} "
                    "of this file and has no default value")
            raise CorruptMetadataError(path, f"NOT NULL column {ff.name!r} is missing from the data file")
        columns.append(_Column(out_schema.field(i), phys, ff.type if (ff is not None and phys) else None, rf.type,
                               rf.default_value))
        i += 1
    if row_ids and not primary_key:
        for sys_name in (ROW_ID, SEQUENCE_NUMBER):
            phys = _find_name(physical_names, sys_name)
            t = DataType("BIGINT")
            columns.append(_Column(out_schema.field(i), phys, t if phys else None, t))
            i += 1
    return columns


# ---------------------------------------------------------------- reading: type conformance

def _floor_div_timestamp(arr: pa.Array, factor: int, target: pa.DataType) -> pa.Array:
    """Coarsen a timestamp unit with floor division (Java keeps millis + nano-of-milli, i.e. floors)."""
    ints = arr.cast(pa.int64())
    q = pc.divide(ints, factor)  # truncates toward zero
    r = pc.subtract(ints, pc.multiply(q, factor))
    q = pc.if_else(pc.less(r, 0), pc.subtract(q, 1), q)
    return q.cast(target)


_UNIT_NANOS = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _cast_timestamp(arr: pa.Array, target: pa.TimestampType) -> pa.Array:
    src = arr.type
    if src.tz != target.tz:
        # Both representations are epoch-based; changing the zone label keeps the stored numbers (wall clock for
        # TIMESTAMP, instant for TIMESTAMP_LTZ), which is how Java maps them.
        arr = arr.cast(pa.timestamp(src.unit, tz=target.tz))
    if src.unit == target.unit:
        return arr
    s, t = _UNIT_NANOS[src.unit], _UNIT_NANOS[target.unit]
    if s > t:  # finer target: exact multiply
        return arr.cast(target)
    return _floor_div_timestamp(arr, t // s, target)


def _cast_atomic(arr: pa.Array, target: pa.DataType, path: str, name: str) -> pa.Array:
    src = arr.type
    if src == target:
        return arr
    if pa.types.is_dictionary(src):
        arr = arr.dictionary_decode()
        src = arr.type
        if src == target:
            return arr
    try:
        if pa.types.is_timestamp(target):
            if pa.types.is_timestamp(src):
                return _cast_timestamp(arr, target)
            if pa.types.is_date(src):
                return _cast_timestamp(arr.cast(pa.timestamp("s")), target)
        if pa.types.is_time(target) and pa.types.is_integer(src):
            return arr.cast(pa.int32()).cast(target)  # ORC stores TIME as int millis
        if (pa.types.is_integer(target) or pa.types.is_floating(target)) and (
            pa.types.is_integer(src) or pa.types.is_floating(src)
        ):
            return arr.cast(target, safe=False)  # Java numeric casts wrap/truncate like a C cast
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise CorruptMetadataError(path, f"column {name!r}: cannot convert {src} to {target}: {e}") from None


def _field_by_name(st: pa.StructType, wanted: str) -> int | None:
    names = [st.field(i).name for i in range(st.num_fields)]
    found = _find_name(names, wanted)
    return None if found is None else names.index(found)


def _rebased(arr: pa.Array, child: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Offsets starting at 0 (a fresh array) and the child slice they index: `from_arrays` with a null mask
    rejects sliced offsets, and this also drops child values outside the slice."""
    offsets = arr.offsets
    start = offsets[0].as_py() if len(offsets) else 0
    end = offsets[-1].as_py() if len(offsets) else 0
    return pc.subtract(offsets, pa.scalar(start, offsets.type)), child.slice(start, end - start)


def _conform(arr: pa.Array, file_t: DataType | None, read_t: DataType, target: pa.DataType, path: str,
             name: str) -> pa.Array:
    """Turn one physical array into the read type, recursing into nested types (row fields matched by id)."""
    root = read_t.root
    if root == "ROW" and pa.types.is_struct(arr.type) and pa.types.is_struct(target):
        file_fields_by_id = {f.id: f for f in file_t.fields} if file_t is not None and file_t.root == "ROW" else {}
        children = []
        for idx, rf in enumerate(read_t.fields):
            tf = target.field(idx)
            ff = file_fields_by_id.get(rf.id)
            pos = _field_by_name(arr.type, ff.name) if ff is not None else None
            if pos is None:
                children.append(pa.nulls(len(arr), tf.type))
            else:
                assert ff is not None
                child = pc.struct_field(arr, [pos])
                children.append(_conform(child, ff.type, rf.type, tf.type, path, f"{name}.{rf.name}"))
        mask = arr.is_null() if arr.null_count else None
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if root in ("ARRAY", "VECTOR") and (pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type)
                                         or pa.types.is_fixed_size_list(arr.type)) and pa.types.is_list(target):
        if not pa.types.is_list(arr.type):
            arr = arr.cast(pa.list_(arr.type.value_field))
        assert read_t.element is not None
        file_elem = file_t.element if file_t is not None and file_t.element is not None else None
        offsets, raw_values = _rebased(arr, arr.values)
        values = _conform(raw_values, file_elem, read_t.element, target.value_type, path, name + ".element")
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(offsets, values, type=target, mask=mask)
    if root in ("MAP", "MULTISET") and pa.types.is_map(arr.type) and pa.types.is_map(target):
        if root == "MAP":
            assert read_t.key is not None and read_t.value is not None
            rk, rv = read_t.key.with_nullable(False), read_t.value
            fk = file_t.key if file_t is not None and file_t.root == "MAP" else None
            fv = file_t.value if file_t is not None and file_t.root == "MAP" else None
        else:
            assert read_t.element is not None
            rk, rv = read_t.element.with_nullable(False), DataType("INT")
            fk = file_t.element if file_t is not None and file_t.root == "MULTISET" else None
            fv = DataType("INT")
        offsets, raw_keys = _rebased(arr, arr.keys)
        _, raw_items = _rebased(arr, arr.items)
        keys = _conform(raw_keys, fk, rk, target.key_type, path, name + ".key")
        items = _conform(raw_items, fv, rv, target.item_type, path, name + ".value")
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(offsets, keys, items, type=target, mask=mask)
    return _cast_atomic(arr, target, path, name)


def _contains_row(t: DataType) -> bool:
    """Row fields are matched by id, so types containing rows always take the recursive path."""
    if t.root == "ROW":
        return True
    return any(_contains_row(s) for s in (t.element, t.key, t.value) if s is not None)


def _fill(col: _Column, n: int, path: str) -> pa.Array:
    t = col.out_field.type
    if col.default is None:
        return pa.nulls(n, t)
    try:
        value = pa.scalar(col.default, pa.string()).cast(t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise CorruptMetadataError(path, f"default value {col.default!r} of column {col.out_field.name!r}: {e}") from None
    return pa.repeat(value, n)


def _convert(batch: pa.RecordBatch | pa.Table, columns: list[_Column], out_schema: pa.Schema, path: str):
    """Project/cast one physical batch (or table) to the output schema."""
    n = batch.num_rows
    is_table = isinstance(batch, pa.Table)
    arrays = []
    for col in columns:
        target = col.out_field.type
        if col.physical is None:
            filled = _fill(col, n, path)
            arrays.append(pa.chunked_array([filled], type=target) if is_table else filled)
            continue
        src = batch.column(col.physical)
        if src.type == target and not _contains_row(col.read_type):
            arrays.append(src)
            continue
        ft = col.file_type
        if is_table:
            chunks = [_conform(c, ft, col.read_type, target, path, col.out_field.name) for c in src.chunks]
            arrays.append(pa.chunked_array(chunks, type=target))
        else:
            arrays.append(_conform(src, ft, col.read_type, target, path, col.out_field.name))
    if is_table:
        return pa.Table.from_arrays(arrays, schema=out_schema)
    return pa.RecordBatch.from_arrays(arrays, schema=out_schema)


# ---------------------------------------------------------------- reading: format readers

def _as_input(source: Source) -> Any:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return pa.BufferReader(pa.py_buffer(bytes(source)))
    if isinstance(source, pa.Buffer):
        return pa.BufferReader(source)
    return source


def _corrupt(path: str, e: BaseException) -> CorruptMetadataError:
    return CorruptMetadataError(path, f"cannot read data file ({type(e).__name__}: {e})")


# Anything a decoder raises on bad bytes (Arrow, fastavro, zstd/snappy codecs, struct, EOF) is a corrupt file;
# programming errors and our own errors are not.
_NOT_CORRUPT = (PaimonOpsError, FileNotFoundError, AttributeError, NameError, AssertionError, NotImplementedError,
                RecursionError, MemoryError)


def _decode_failure(path: str, e: Exception) -> Exception:
    """The exception to raise for `e` raised while decoding `path`: corrupt-file error or `e` itself."""
    return e if isinstance(e, _NOT_CORRUPT) else _corrupt(path, e)



class _FileReader:
    """Uniform access to the three formats: physical column names and batches of selected columns. Single use."""

    def __init__(self, source: Source, fmt: str, path: str, file_fields_hint: list[DataField]) -> None:
        self.path = path
        self.fmt = fmt.lower()
        self.fields_hint = file_fields_hint
        self._pf: Any = None
        self._orc: Any = None
        self._avro: _AvroSource | None = None
        self._own: pa.NativeFile | None = None
        src = _as_input(source)
        if self.fmt == "parquet":
            import pyarrow.parquet as pq

            self._pf = pq.ParquetFile(src, buffer_size=1 << 20)  # buffered: one page, not a whole column chunk, per open file
            self.names = list(self._pf.schema_arrow.names)
        elif self.fmt == "orc":
            import pyarrow.orc as orc

            if isinstance(src, str):  # ORCFile has no close(): own the handle so it is released promptly
                self._own = pa.OSFile(src, "rb")
                src = self._own
            try:
                self._orc = orc.ORCFile(src)
            except BaseException:
                self._own and self._own.close()
                raise
            self.names = list(self._orc.schema.names)
        elif self.fmt == "avro":
            self._avro = _AvroSource(src, path)
            self.names = self._avro.names
        else:
            raise UnsupportedError(f"{path}: data file format {fmt!r} is not supported (parquet, orc, avro)")

    def read_all(self, columns: list[str]) -> pa.Table:
        if self._pf is not None:
            return self._pf.read(columns=columns, use_threads=True)
        if self._orc is not None:
            return self._orc.read(columns=columns)
        assert self._avro is not None
        return pa.Table.from_batches(list(self._avro.batches(columns, DEFAULT_BATCH_SIZE, self.fields_hint)),
                                     schema=self._avro.arrow_schema(columns, self.fields_hint))

    def batches(self, columns: list[str], batch_size: int) -> Iterator[pa.RecordBatch]:
        if self._pf is not None:
            yield from self._pf.iter_batches(batch_size=batch_size, columns=columns, use_threads=True)
        elif self._orc is not None:
            for i in range(self._orc.nstripes):
                stripe = self._orc.read_stripe(i, columns=columns)
                for off in range(0, stripe.num_rows, batch_size):
                    yield stripe.slice(off, batch_size)
        else:
            assert self._avro is not None
            yield from self._avro.batches(columns, batch_size, self.fields_hint)

    def close(self) -> None:
        """Release files we opened ourselves (a caller's NativeFile stays open)."""
        if self._pf is not None:
            self._pf.close()
        if self._avro is not None:
            self._avro.close()
        if self._own is not None:
            self._own.close()


class _AvroSource:
    """Avro data files via fastavro, streamed block by block. Avro is row-oriented: decoding is per record by
    nature (fastavro's C loop); columns are then built with one `pa.array` call each per batch."""

    def __init__(self, src: Any, path: str) -> None:
        import fastavro

        self.path = path
        self._own = None
        if isinstance(src, str):
            self._own = open(src, "rb")
            fo = self._own
        elif hasattr(src, "read"):
            fo = src
        else:
            raise InvalidArgumentError(f"{path}: unsupported Avro source {type(src).__name__}")
        try:
            self._reader = fastavro.reader(fo)
        except BaseException:
            self.close()
            raise
        writer_schema: Any = self._reader.writer_schema
        self.names = [f["name"] for f in writer_schema.get("fields", [])]

    def close(self) -> None:
        if self._own is not None:
            self._own.close()
            self._own = None

    def arrow_schema(self, columns: list[str], hint: list[DataField]) -> pa.Schema:
        by_name = {f.name: f for f in hint}
        out = []
        for c in columns:
            f = by_name.get(c)
            out.append(pa.field(c, to_arrow_type(f.type) if f is not None else pa.null()))
        return pa.schema(out)

    def batches(self, columns: list[str], batch_size: int, hint: list[DataField]) -> Iterator[pa.RecordBatch]:
        schema = self.arrow_schema(columns, hint)
        types = {f.name: f.type for f in hint}
        buf: list[dict[str, Any]] = []
        for rec in self._reader:
            buf.append(rec)  # type: ignore[arg-type]  # records of a record schema are dicts
            if len(buf) >= batch_size:
                yield self._to_batch(buf, columns, schema, types)
                buf = []
        if buf:
            yield self._to_batch(buf, columns, schema, types)

    def _to_batch(self, recs: list[dict[str, Any]], columns: list[str], schema: pa.Schema,
                  types: dict[str, DataType]) -> pa.RecordBatch:
        arrays = []
        for c, field in zip(columns, schema):
            values = [r.get(c) for r in recs]
            t = types.get(c)
            if t is not None and _needs_avro_fix(t):
                values = [_avro_value(v, t) for v in values]
            arrays.append(pa.array(values, type=field.type))
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _needs_avro_fix(t: DataType) -> bool:
    if t.root in ("MAP", "MULTISET"):
        return True
    return any(_needs_avro_fix(s) for s in (t.element, t.key, t.value) if s is not None) or any(
        _needs_avro_fix(f.type) for f in t.fields)


def _avro_value(v: Any, t: DataType) -> Any:
    """Avro maps: string-keyed maps are dicts, other maps arrays of {key, value} records → list of pairs."""
    if v is None:
        return None
    if t.root in ("MAP", "MULTISET"):
        kt = t.key if t.root == "MAP" else t.element
        vt = t.value if t.root == "MAP" else DataType("INT")
        assert kt is not None and vt is not None
        items = v.items() if isinstance(v, dict) else ((e["key"], e["value"]) for e in v)
        return [(_avro_value(k, kt), _avro_value(x, vt)) for k, x in items]
    if t.root in ("ARRAY", "VECTOR") and t.element is not None:
        return [_avro_value(x, t.element) for x in v]
    if t.root == "ROW":
        return {f.name: _avro_value(v.get(f.name), f.type) for f in t.fields}
    return v


# ---------------------------------------------------------------- public reading API

@contextlib.contextmanager
def _decoding(path: str) -> Iterator[None]:
    """Whatever a decoder raises on bad bytes becomes the one error naming the file (see `_decode_failure`)."""
    try:
        yield
    except Exception as e:
        err = _decode_failure(path, e)
        if err is e:
            raise
        raise err from None


def _open(source: Source, fmt: str, file_schema: TableSchema, read_schema: TableSchema, primary_key: bool,
          path: str, keep_system_columns: bool, projection: Sequence[str] | None, row_ids: bool = False):
    with _decoding(path):
        reader = _FileReader(source, fmt, path, file_fields(file_schema, primary_key, row_ids=row_ids))
    try:
        columns = _plan_columns(reader.names, file_schema, read_schema, primary_key, keep_system_columns, projection,
                                path, row_ids)
    except BaseException:
        reader.close()
        raise
    out_schema = output_arrow_schema(read_schema, primary_key, keep_system_columns, projection, row_ids)
    physical = list(dict.fromkeys(c.physical for c in columns if c.physical is not None))
    return reader, columns, out_schema, physical


def read_data_file(
    source: Source,
    fmt: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    primary_key: bool,
    path: str,
    keep_system_columns: bool = True,
    projection: Sequence[str] | None = None,
    row_ids: bool = False,
) -> pa.Table:
    """Read a whole data file written under `file_schema` as `read_schema` (see the module docstring).

    Returns ``_KEY_*``, ``_SEQUENCE_NUMBER``, ``_VALUE_KIND`` (PK files, when `keep_system_columns`) followed by the
    read-schema columns (or those named in `projection`), typed exactly ``to_arrow_type`` of the read schema; with
    `row_ids` (append files) then ``_ROW_ID`` and ``_SEQUENCE_NUMBER`` as stored (null when the file has none).
    """
    reader, columns, out_schema, physical = _open(
        source, fmt, file_schema, read_schema, primary_key, path, keep_system_columns, projection, row_ids)
    try:
        with _decoding(path):
            raw = reader.read_all(physical)
    finally:
        reader.close()
    return _convert(raw, columns, out_schema, path)


def iter_data_file_batches(
    source: Source,
    fmt: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    primary_key: bool,
    path: str,
    keep_system_columns: bool = True,
    batch_size: int = DEFAULT_BATCH_SIZE,
    projection: Sequence[str] | None = None,
    row_ids: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Streaming variant of :func:`read_data_file`: record batches of at most `batch_size` rows, bounded memory
    (one Parquet row group / ORC stripe at a time)."""
    if batch_size <= 0:
        raise InvalidArgumentError(f"batch_size must be positive, got {batch_size}")
    reader, columns, out_schema, physical = _open(
        source, fmt, file_schema, read_schema, primary_key, path, keep_system_columns, projection, row_ids)
    it = reader.batches(physical, batch_size)
    try:
        while True:
            with _decoding(path):
                batch = next(it, None)
            if batch is None:
                return
            yield _convert(batch, columns, out_schema, path)
    finally:
        reader.close()


def read_data_file_positions(
    source: Source,
    fmt: str,
    file_schema: TableSchema,
    read_schema: TableSchema,
    primary_key: bool,
    path: str,
    positions: np.ndarray,
    keep_system_columns: bool = True,
) -> pa.Table:
    """The rows at `positions` (sorted, distinct, 0-based physical row ordinals) of a data file, in that order.

    Parquet decodes only the row groups holding a wanted position; ORC and Avro decode the file batch by batch and
    keep only the wanted rows (their readers expose no row-group index)."""
    positions = np.asarray(positions, dtype=np.int64)
    reader, columns, out_schema, physical = _open(
        source, fmt, file_schema, read_schema, primary_key, path, keep_system_columns, None)
    parts: list[pa.Table] = []
    try:
        with _decoding(path):
            if reader._pf is not None:
                md = reader._pf.metadata
                starts = np.zeros(md.num_row_groups + 1, np.int64)
                for i in range(md.num_row_groups):
                    starts[i + 1] = starts[i] + md.row_group(i).num_rows
                groups = np.unique(np.searchsorted(starts, positions, side="right") - 1)
                for g in groups.tolist():
                    lo, hi = int(starts[g]), int(starts[g + 1])
                    sel = positions[(positions >= lo) & (positions < hi)] - lo
                    t = reader._pf.read_row_group(g, columns=physical, use_threads=True)
                    parts.append(t.take(pa.array(sel)))
            else:
                offset = 0
                for batch in reader.batches(physical, DEFAULT_BATCH_SIZE):
                    n = batch.num_rows
                    sel = positions[(positions >= offset) & (positions < offset + n)] - offset
                    if len(sel):
                        parts.append(pa.Table.from_batches([batch]).take(pa.array(sel)))
                    offset += n
    finally:
        reader.close()
    if not parts:
        return out_schema.empty_table()
    raw = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    out = _convert(raw, columns, out_schema, path)
    if out.num_rows != len(positions):
        raise CorruptMetadataError(path, f"asked for {len(positions)} rows by position, found {out.num_rows}")
    return out


def value_kind_is_retract(kinds: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Boolean mask of −U/−D rows (the rows counted in `_DELETE_ROW_COUNT`)."""
    return pc.is_in(kinds, value_set=pa.array([UPDATE_BEFORE, DELETE], pa.int8()))


__all__ = [
    "KEY_PREFIX", "SEQUENCE_NUMBER", "VALUE_KIND", "KEY_FIELD_ID_START", "SEQUENCE_NUMBER_ID", "VALUE_KIND_ID",
    "ROW_ID", "ROW_ID_ID",
    "INSERT", "UPDATE_BEFORE", "UPDATE_AFTER", "DELETE", "VALUE_KINDS", "FORMATS",
    "key_field_id", "array_element_field_id", "map_key_field_id", "map_value_field_id", "is_system_column",
    "key_fields", "file_fields", "file_arrow_schema", "output_arrow_schema", "format_of",
    "write_data_file", "read_data_file", "iter_data_file_batches", "read_data_file_positions", "value_kind_is_retract",
]

