"""Avro metadata files (format.md §4): manifest lists, manifests and index manifests.

Pure codecs: bytes <-> frozen dataclasses. Partition, key and stats rows stay raw serialized BinaryRow
``bytes`` (another module decodes them). No file-system access and no table decisions here.

Field sets. Java reads every Avro metadata file by field *name* using the writer schema in the file header
(format.md §4.2), so the set of fields a file carries decides which Paimon versions can read it. A reader
returns the :class:`FieldSet` of the file it decoded; a writer takes one and writes exactly those fields (plus
required ones). Writing with the field set read from an existing file of the table therefore keeps the table
readable by whatever Paimon version already reads it. :data:`LATEST` (master) and :data:`V0_9` … are
:class:`Layout` bundles holding one field set per file kind; writers accept either form.
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import enum
import gc
import io
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping, Sequence

import fastavro

from paimon_ops.errors import CorruptMetadataError, FormatError, UnsupportedError
from paimon_ops.format.names import first_unplain, require_plain_name
from paimon_ops.options import AVRO_CODEC, FILE_COMPRESSION_ZSTD_LEVEL, MANIFEST_COMPRESSION, Options

__all__ = [
    "SimpleStats",
    "EMPTY_STATS",
    "EMPTY_ROW",
    "FileKind",
    "DataFileMeta",
    "ManifestEntry",
    "ManifestFileMeta",
    "DeletionVectorMeta",
    "IndexManifestEntry",
    "IndexFileMeta",
    "FieldSet",
    "Layout",
    "LATEST",
    "V0_9",
    "V1_0",
    "V1_1",
    "V1_3",
    "V1_4",
    "MANIFEST_LIST",
    "MANIFEST",
    "INDEX_MANIFEST",
    "MANIFEST_VERSION",
    "INDEX_MANIFEST_VERSION",
    "latest_schema",
    "writer_schema",
    "writer_schema_json",
    "read_manifest_list",
    "write_manifest_list",
    "read_manifest",
    "ManifestColumns",
    "read_manifest_columns",
    "write_manifest",
    "read_index_manifest",
    "write_index_manifest",
    "avro_codec_from_options",
]

# ---------------------------------------------------------------------------------------------- value types

EMPTY_ROW: bytes = b"\0\0\0\0" + b"\0" * 8  # serialized zero-arity BinaryRow (format.md §5.5)


@dataclass(frozen=True, slots=True)
class SimpleStats:
    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None


EMPTY_STATS = SimpleStats(EMPTY_ROW, EMPTY_ROW, ())


class FileKind(enum.IntEnum):
    ADD = 0
    DELETE = 1


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    # Epoch millis exactly as stored: Java's *local* wall clock encoded as if it were UTC.
    creation_time: int | None = None
    delete_row_count: int | None = None
    embedded_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def with_level(self, level: int) -> DataFileMeta:
        return dataclasses.replace(self, level=level)

    def with_(self, **kw: Any) -> DataFileMeta:
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    kind: int
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    @property
    def identifier(self) -> tuple:
        """Identity used when merging ADD/DELETE entries (maintenance.md §0.4, format.md §3.6)."""
        f = self.file
        return (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_index, f.external_path)

    def with_(self, **kw: Any) -> ManifestEntry:
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None

    def with_(self, **kw: Any) -> ManifestFileMeta:
        return dataclasses.replace(self, **kw)


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    data_file: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True)
class IndexManifestEntry:
    """One index file (IndexFileMeta) with its manifest kind/partition/bucket.

    ``global_index`` (1.4+) is a dict with snake_case keys ``row_range_start``, ``row_range_end``,
    ``index_field_id``, ``extra_field_ids`` (tuple or None), ``index_meta``, ``source_meta`` (bytes or None).
    """

    kind: int
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: dict | None = dataclasses.field(default=None, hash=False)

    def with_(self, **kw: Any) -> IndexManifestEntry:
        return dataclasses.replace(self, **kw)


IndexFileMeta = IndexManifestEntry

# ---------------------------------------------------------------------------------------------- schemas

MANIFEST_LIST = "manifest_list"
MANIFEST = "manifest"
INDEX_MANIFEST = "index_manifest"

MANIFEST_VERSION = 2  # _VERSION of manifest entries and manifest-list entries
INDEX_MANIFEST_VERSION = 1

_NS = "org.apache.paimon.avro.generated"
_NULL_COUNTS = {"name": "_NULL_COUNTS", "type": ["null", {"type": "array", "items": ["null", "long"]}], "default": None}


def _stats_record(name: str) -> dict:
    return {"type": "record", "name": name, "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"}, {"name": "_MAX_VALUES", "type": "bytes"}, dict(_NULL_COUNTS)]}


def _opt(name: str, t: Any) -> dict:
    return {"name": name, "type": ["null", t], "default": None}


# Exact Java (master) schemas of format.md §4.3-4.5, key order as Java's Schema.toString() emits them.
_LATEST_SCHEMAS: dict[str, dict] = {
    MANIFEST_LIST: {"type": "record", "name": "record", "namespace": _NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats_record("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _opt("_MIN_BUCKET", "int"), _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"), _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"), _opt("_MAX_ROW_ID", "long"),
    ]},
    MANIFEST: {"type": "record", "name": "record", "namespace": _NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {"name": "_FILE", "type": {"type": "record", "name": "record__FILE", "fields": [
            {"name": "_FILE_NAME", "type": "string"},
            {"name": "_FILE_SIZE", "type": "long"},
            {"name": "_ROW_COUNT", "type": "long"},
            {"name": "_MIN_KEY", "type": "bytes"},
            {"name": "_MAX_KEY", "type": "bytes"},
            {"name": "_KEY_STATS", "type": _stats_record("record__FILE__KEY_STATS")},
            {"name": "_VALUE_STATS", "type": _stats_record("record__FILE__VALUE_STATS")},
            {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
            {"name": "_SCHEMA_ID", "type": "long"},
            {"name": "_LEVEL", "type": "int"},
            {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
            _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
            _opt("_DELETE_ROW_COUNT", "long"),
            _opt("_EMBEDDED_FILE_INDEX", "bytes"),
            _opt("_FILE_SOURCE", "int"),
            _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
            _opt("_EXTERNAL_PATH", "string"),
            _opt("_FIRST_ROW_ID", "long"),
            _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
            _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
        ]}},
    ]},
    INDEX_MANIFEST: {"type": "record", "name": "record", "namespace": _NS, "fields": [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _opt("_DELETIONS_VECTORS_RANGES", {"type": "array", "items": ["null", {
            "type": "record", "name": "record__DELETIONS_VECTORS_RANGES", "fields": [
                {"name": "f0", "type": "string"},
                {"name": "f1", "type": "int"},
                {"name": "f2", "type": "int"},
                _opt("_CARDINALITY", "long"),
            ]}]}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_GLOBAL_INDEX", {"type": "record", "name": "record__GLOBAL_INDEX", "fields": [
            {"name": "_ROW_RANGE_START", "type": "long"},
            {"name": "_ROW_RANGE_END", "type": "long"},
            {"name": "_INDEX_FIELD_ID", "type": "int"},
            _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
            _opt("_INDEX_META", "bytes"),
            _opt("_SOURCE_META", "bytes"),
        ]}),
    ]},
}


def latest_schema(kind: str) -> dict:
    """A deep copy of the exact Java master schema of ``kind`` (format.md §4.3-4.5)."""
    return json.loads(json.dumps(_LATEST_SCHEMAS[kind]))


def _is_optional(t: Any) -> bool:
    return isinstance(t, list) and "null" in t


def _walk_records(schema: Any, path: str, out: list[tuple[str, tuple[str, ...]]]) -> None:
    """Collect (path, field names) for every record in ``schema``; path = dotted field names ('' = top).

    Named-type references (a record type repeated by name) are not followed: Java gives every nested record a
    unique name, so its metadata schemas never contain them.
    """
    if isinstance(schema, list):
        for branch in schema:
            _walk_records(branch, path, out)
        return
    if not isinstance(schema, dict):
        return
    t = schema.get("type")
    if t == "record":
        fields = schema.get("fields") or []
        out.append((path, tuple(str(f.get("name")) for f in fields)))
        for f in fields:
            _walk_records(f.get("type"), f"{path}.{f.get('name')}" if path else str(f.get("name")), out)
    elif t == "array":
        _walk_records(schema.get("items"), path, out)
    elif t == "map":
        _walk_records(schema.get("values"), path, out)
    elif isinstance(t, (dict, list)):
        _walk_records(t, path, out)


@dataclass(frozen=True)
class FieldSet:
    """The field names a metadata file's writer schema has, per record level.

    ``records`` is a tuple of (path, names): path ``""`` is the top-level record, nested records are named by
    the dotted path of field names leading to them (``"_FILE"``, ``"_FILE._KEY_STATS"``,
    ``"_DELETIONS_VECTORS_RANGES"`` for the array's element record, ...). Names may include fields this module
    does not know (e.g. pypaimon's manifest-list ``_TOTAL_BUCKETS``); writers cannot produce those and skip them.
    """

    kind: str
    records: tuple[tuple[str, tuple[str, ...]], ...]

    def names(self, path: str = "") -> tuple[str, ...] | None:
        for p, n in self.records:
            if p == path:
                return n
        return None

    def has(self, name: str, path: str = "") -> bool:
        n = self.names(path)
        return n is not None and name in n

    @staticmethod
    def of_schema(kind: str, schema: dict) -> FieldSet:
        out: list[tuple[str, tuple[str, ...]]] = []
        _walk_records(schema, "", out)
        return FieldSet(kind, tuple(out))


@dataclass(frozen=True)
class Layout:
    """One field set per metadata file kind, i.e. what one Paimon version writes."""

    manifest_list: FieldSet
    manifest: FieldSet
    index_manifest: FieldSet

    def of(self, kind: str) -> FieldSet:
        return {MANIFEST_LIST: self.manifest_list, MANIFEST: self.manifest, INDEX_MANIFEST: self.index_manifest}[kind]


def _filter_schema(schema: Any, path: str, fs: FieldSet) -> Any:
    """Copy ``schema`` keeping, in every record, required fields plus the optional ones named in ``fs``."""
    if isinstance(schema, list):
        return [_filter_schema(b, path, fs) for b in schema]
    if not isinstance(schema, dict):
        return schema
    t = schema.get("type")
    if t == "record":
        allowed = fs.names(path)
        fields = []
        for f in schema["fields"]:
            if allowed is not None and f["name"] not in allowed and _is_optional(f["type"]):
                continue  # optional and absent from the target field set: an older reader's layout
            sub = f"{path}.{f['name']}" if path else f["name"]
            nf = dict(f)
            nf["type"] = _filter_schema(f["type"], sub, fs)
            fields.append(nf)
        out = dict(schema)
        out["fields"] = fields
        return out
    if t == "array":
        out = dict(schema)
        out["items"] = _filter_schema(schema["items"], path, fs)
        return out
    return schema


def writer_schema(field_set: FieldSet | Layout, kind: str | None = None) -> dict:
    """The Avro writer schema (Java names/order/types) for ``field_set``, filtered from the LATEST schema.

    Required (non-null) fields are always kept; optional fields are kept iff the field set names them.
    """
    fs = _resolve(field_set, kind)
    return json.loads(_writer_schema_json(fs))


@lru_cache(maxsize=64)
def _writer_schema_json(fs: FieldSet) -> str:
    schema = _filter_schema(_LATEST_SCHEMAS[fs.kind], "", fs)
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False)  # Java Schema.toString() is compact


def writer_schema_json(field_set: FieldSet | Layout, kind: str | None = None) -> str:
    """The writer schema as the compact JSON text stored in the file header (as Java's Schema.toString())."""
    return _writer_schema_json(_resolve(field_set, kind))


@lru_cache(maxsize=64)
def _parsed_schema(fs: FieldSet) -> Any:
    return fastavro.parse_schema(json.loads(_writer_schema_json(fs)))


def _resolve(field_set: FieldSet | Layout, kind: str | None) -> FieldSet:
    if isinstance(field_set, Layout):
        if kind is None:
            raise FormatError("a Layout needs the file kind")
        return field_set.of(kind)
    if not isinstance(field_set, FieldSet):
        raise TypeError(f"expected FieldSet or Layout, got {type(field_set).__name__}")
    if kind is not None and field_set.kind != kind:
        raise FormatError(f"field set of a {field_set.kind} file used to write a {kind} file")
    return field_set


def _layout_without(drop: dict[str, dict[str, Sequence[str]]]) -> Layout:
    """LATEST minus the named optional fields: drop[kind][path] = names to remove."""
    sets = []
    for kind in (MANIFEST_LIST, MANIFEST, INDEX_MANIFEST):
        base = FieldSet.of_schema(kind, _LATEST_SCHEMAS[kind])
        removed = drop.get(kind, {})
        tmp = FieldSet(kind, tuple((p, tuple(n for n in names if n not in removed.get(p, ())))
                                   for p, names in base.records))
        # Re-derive from the filtered schema so nested records of removed fields disappear too.
        sets.append(FieldSet.of_schema(kind, json.loads(json.dumps(_filter_schema(_LATEST_SCHEMAS[kind], "", tmp)))))
    return Layout(*sets)


_LIST_1_1 = ("_MIN_BUCKET", "_MAX_BUCKET", "_MIN_LEVEL", "_MAX_LEVEL")
_LIST_1_4 = ("_MIN_ROW_ID", "_MAX_ROW_ID")
_FILE_1_0 = ("_VALUE_STATS_COLS", "_EXTERNAL_PATH")
_FILE_1_3 = ("_FIRST_ROW_ID", "_WRITE_COLS")
_FILE_MASTER = ("_WRITE_COLS_SEQUENCES",)

#: Java master (2.1-SNAPSHOT) layouts: exactly the schemas of format.md §4.3-4.5.
LATEST: Layout = _layout_without({})
#: Java 1.4 / 2.0.
V1_4: Layout = _layout_without({MANIFEST: {"_FILE": _FILE_MASTER}})
#: Java 1.3.
V1_3: Layout = _layout_without({
    MANIFEST_LIST: {"": _LIST_1_4}, MANIFEST: {"_FILE": _FILE_MASTER}, INDEX_MANIFEST: {"": ("_GLOBAL_INDEX",)}})
#: Java 1.1 / 1.2.
V1_1: Layout = _layout_without({
    MANIFEST_LIST: {"": _LIST_1_4}, MANIFEST: {"_FILE": _FILE_1_3 + _FILE_MASTER},
    INDEX_MANIFEST: {"": ("_EXTERNAL_PATH", "_GLOBAL_INDEX")}})
#: Java 1.0.
V1_0: Layout = _layout_without({
    MANIFEST_LIST: {"": _LIST_1_1 + _LIST_1_4}, MANIFEST: {"_FILE": _FILE_1_3 + _FILE_MASTER},
    INDEX_MANIFEST: {"": ("_EXTERNAL_PATH", "_GLOBAL_INDEX")}})
#: Java 0.9: ManifestFileMeta fields 0-5, DataFileMeta 0-15, DV ranges f0,f1,f2 only.
V0_9: Layout = _layout_without({
    MANIFEST_LIST: {"": _LIST_1_1 + _LIST_1_4}, MANIFEST: {"_FILE": _FILE_1_0 + _FILE_1_3 + _FILE_MASTER},
    INDEX_MANIFEST: {"": ("_EXTERNAL_PATH", "_GLOBAL_INDEX"), "_DELETIONS_VECTORS_RANGES": ("_CARDINALITY",)}})

# Optional fields whose value may be silently left out when the target field set lacks them: pure pruning
# hints or "unknown" is a valid reading. Dropping any *other* optional field would change what a reader
# concludes (stats columns, file location, row ids, ...), so writers refuse instead.
_DROPPABLE = {
    MANIFEST_LIST: {"": set(_LIST_1_1 + _LIST_1_4)},
    MANIFEST: {"_FILE": {"_CREATION_TIME", "_DELETE_ROW_COUNT", "_FILE_SOURCE"}},
    INDEX_MANIFEST: {"_DELETIONS_VECTORS_RANGES": {"_CARDINALITY"}},
}

# ---------------------------------------------------------------------------------------------- container I/O

_MAGIC = b"Obj\x01"
_SYNC_INTERVAL = 64000  # Java Avro DataFileWriter default block size


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_long(buf: bytes, pos: int) -> tuple[int, int]:
    shift = 0
    acc = 0
    while True:
        b = buf[pos]
        pos += 1
        acc |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (acc >> 1) ^ -(acc & 1), pos


def _header_end(buf: bytes) -> int:
    """Offset just past the header's metadata map (the 16-byte sync marker follows)."""
    pos = 4
    while True:
        count, pos = _read_long(buf, pos)
        if count == 0:
            return pos
        if count < 0:
            count = -count
            _, pos = _read_long(buf, pos)
        for _ in range(2 * count):
            n, pos = _read_long(buf, pos)
            pos += n


def _encode_avro(fs: FieldSet, records: Iterable[dict], codec: str, level: int | None) -> bytes:
    buf = io.BytesIO()
    kwargs: dict[str, Any] = {}
    if level is not None and codec not in ("null", "snappy"):
        kwargs["codec_compression_level"] = level
    fastavro.writer(buf, _parsed_schema(fs), records, codec=codec, sync_interval=_SYNC_INTERVAL,
                    sync_marker=os.urandom(16), disable_tuple_notation=True, **kwargs)
    data = buf.getvalue()
    # fastavro stores the schema with fully-qualified, re-ordered names; swap in the exact text Java writes
    # (same content by Avro rules) so our files are diff-able with Java's. Blocks and sync marker are kept.
    end = _header_end(data)
    meta = [(b"avro.schema", _writer_schema_json(fs).encode()), (b"avro.codec", codec.encode())]
    header = bytearray(_MAGIC)
    header += _zigzag(len(meta))
    for k, v in meta:
        header += _zigzag(len(k)) + k + _zigzag(len(v)) + v
    header += b"\0"
    return bytes(header) + data[end:]


def _open_avro(data: bytes, path: str, kind: str) -> tuple[Any, FieldSet]:
    """A fastavro reader over ``data`` plus the file's field set; CorruptMetadataError if unreadable."""
    try:
        reader = fastavro.reader(io.BytesIO(data), return_record_name=False)
        fs = _field_set_of(kind, reader.metadata["avro.schema"])
    except Exception as e:  # noqa: BLE001 - any decoding failure means the file is unusable
        raise CorruptMetadataError(path, f"not a readable Avro manifest: {type(e).__name__}: {e}") from None
    return reader, fs


@lru_cache(maxsize=64)
def _field_set_of(kind: str, schema_json: str) -> FieldSet:
    """A table's metadata files share a handful of writer schemas: each is parsed and walked once."""
    return FieldSet.of_schema(kind, json.loads(schema_json))


def _require(fs: FieldSet, path: str, required: dict[str, Sequence[str]]) -> None:
    for p, names in required.items():
        have = fs.names(p)
        missing = [n for n in names if have is None or n not in have]
        if missing:
            where = f" in record {p}" if p else ""
            raise CorruptMetadataError(path, f"{fs.kind.replace('_', ' ')} lacks required field(s) "
                                             f"{', '.join(missing)}{where}")


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Decoding allocates ~10 container objects per entry and triggers needless cyclic-GC passes (about a
    third of the decode time for 100k entries); none of them form cycles, so pause the collector."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _decode_error(path: str, e: Exception) -> CorruptMetadataError:
    return CorruptMetadataError(path, f"not a readable Avro manifest: {type(e).__name__}: {e}")


def _check_drops(fs: FieldSet, values: Iterable[tuple[str, str, Any]]) -> None:
    """Refuse to silently drop a meaningful value the target field set cannot carry."""
    for p, name, value in values:
        if value is None or fs.has(name, p):
            continue
        if name in _DROPPABLE.get(fs.kind, {}).get(p, ()):
            continue
        raise UnsupportedError(
            f"cannot write {name} = {value!r} into a {fs.kind.replace('_', ' ')} whose field set lacks it: "
            f"readers of this table's layout would misread the entry; write with a newer field set")


def _missing_optional(fs: FieldSet, path: str) -> set[str]:
    """Optional LATEST fields at ``path`` that ``fs`` will not write."""
    latest = LATEST.of(fs.kind).names(path) or ()
    have = fs.names(path)
    if have is None:
        return set()
    return {n for n in latest if n not in have}


# ---------------------------------------------------------------------------------------------- time helpers

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
_ONE_MS = _dt.timedelta(milliseconds=1)


def _millis(v: Any) -> int | None:
    """fastavro decodes timestamp-millis to a UTC datetime; recover the stored long exactly."""
    if v is None or isinstance(v, int):
        return v
    if v.tzinfo is None:
        return (v - _EPOCH_NAIVE) // _ONE_MS
    return (v - _EPOCH) // _ONE_MS


# ---------------------------------------------------------------------------------------------- manifest list


def _stats(d: dict) -> SimpleStats:
    nc = d.get("_NULL_COUNTS")
    return SimpleStats(d["_MIN_VALUES"], d["_MAX_VALUES"], None if nc is None else tuple(nc))


def _stats_rec(s: SimpleStats) -> dict:
    return {"_MIN_VALUES": s.min_values, "_MAX_VALUES": s.max_values,
            "_NULL_COUNTS": None if s.null_counts is None else list(s.null_counts)}


_STATS_REQUIRED = ("_MIN_VALUES", "_MAX_VALUES")


def _check_version(v: Any, expected: int, path: str, what: str) -> None:
    if v != expected:
        raise CorruptMetadataError(
            path, f"unsupported {what} _VERSION {v!r} (expected {expected}); the file is from an incompatible "
                  f"Paimon version or corrupt")


def read_manifest_list(data: bytes, path: str) -> tuple[list[ManifestFileMeta], FieldSet]:
    reader, fs = _open_avro(data, path, MANIFEST_LIST)
    _require(fs, path, {"": ("_VERSION", "_FILE_NAME", "_FILE_SIZE", "_NUM_ADDED_FILES", "_NUM_DELETED_FILES",
                             "_PARTITION_STATS", "_SCHEMA_ID"), "_PARTITION_STATS": _STATS_REQUIRED})
    out: list[ManifestFileMeta] = []
    try:
        for r in reader:
            if r["_VERSION"] != MANIFEST_VERSION:
                _check_version(r["_VERSION"], MANIFEST_VERSION, path, "manifest list")
            g = r.get
            out.append(ManifestFileMeta(
                require_plain_name(r["_FILE_NAME"], path, "manifest file name"), r["_FILE_SIZE"],
                r["_NUM_ADDED_FILES"], r["_NUM_DELETED_FILES"],
                _stats(r["_PARTITION_STATS"]), r["_SCHEMA_ID"],
                g("_MIN_BUCKET"), g("_MAX_BUCKET"), g("_MIN_LEVEL"), g("_MAX_LEVEL"),
                g("_MIN_ROW_ID"), g("_MAX_ROW_ID")))
    except CorruptMetadataError:
        raise
    except Exception as e:  # noqa: BLE001
        raise _decode_error(path, e) from None
    return out, fs


def write_manifest_list(metas: Sequence[ManifestFileMeta], field_set: FieldSet | Layout = LATEST,
                        codec: str = "zstandard", level: int | None = 1) -> bytes:
    fs = _resolve(field_set, MANIFEST_LIST)
    records = [{
        "_VERSION": MANIFEST_VERSION,
        "_FILE_NAME": m.file_name,
        "_FILE_SIZE": m.file_size,
        "_NUM_ADDED_FILES": m.num_added_files,
        "_NUM_DELETED_FILES": m.num_deleted_files,
        "_PARTITION_STATS": _stats_rec(m.partition_stats),
        "_SCHEMA_ID": m.schema_id,
        "_MIN_BUCKET": m.min_bucket,
        "_MAX_BUCKET": m.max_bucket,
        "_MIN_LEVEL": m.min_level,
        "_MAX_LEVEL": m.max_level,
        "_MIN_ROW_ID": m.min_row_id,
        "_MAX_ROW_ID": m.max_row_id,
    } for m in metas]
    return _encode_avro(fs, records, codec, level)


# ---------------------------------------------------------------------------------------------- manifest

_FILE_REQUIRED = ("_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY", "_KEY_STATS", "_VALUE_STATS",
                  "_MIN_SEQUENCE_NUMBER", "_MAX_SEQUENCE_NUMBER", "_SCHEMA_ID", "_LEVEL", "_EXTRA_FILES")


_MANIFEST_REQUIRED: dict[str, Sequence[str]] = {
    "": ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS", "_FILE"), "_FILE": _FILE_REQUIRED,
    "_FILE._KEY_STATS": _STATS_REQUIRED, "_FILE._VALUE_STATS": _STATS_REQUIRED}


def _check_entries(path: str, kinds: Sequence[int], names: Sequence[Any], extras: Sequence[Any]) -> None:
    """Entry kinds and file names of a whole manifest, validated in bulk (a few C-level operations per manifest,
    not a Python loop per entry, let alone per character); `extras` holds (file name, its _EXTRA_FILES) where that
    array is not empty."""
    if not {0, 1}.issuperset(kinds):
        bad = next(k for k in kinds if k not in (0, 1))
        raise CorruptMetadataError(path, f"invalid _KIND {bad!r} (expected 0 = ADD or 1 = DELETE)")
    i = first_unplain(names)
    if i is not None:
        require_plain_name(names[i], path, "data file name")
    if extras:
        if first_unplain([x for _, xs in extras for x in xs]) is not None:
            for owner, xs in extras:
                j = first_unplain(xs)
                if j is not None:
                    require_plain_name(xs[j], path, f"extra file of {owner}")


def read_manifest(data: bytes, path: str) -> tuple[list[ManifestEntry], FieldSet]:
    reader, fs = _open_avro(data, path, MANIFEST)
    _require(fs, path, _MANIFEST_REQUIRED)
    out: list[ManifestEntry] = []
    append = out.append
    kinds: list[int] = []
    names: list[str] = []
    extras: list[Any] = []
    # Hot loop: ~100k entries per large manifest; keep per-entry work to plain dict lookups + constructors.
    with _gc_paused():
        try:
            for r in reader:
                if r["_VERSION"] != MANIFEST_VERSION:
                    _check_version(r["_VERSION"], MANIFEST_VERSION, path, "manifest entry")
                kind = r["_KIND"]
                kinds.append(kind)
                f = r["_FILE"]
                g = f.get
                name = f["_FILE_NAME"]
                names.append(name)
                extra = f["_EXTRA_FILES"]
                if extra:
                    extras.append((name, extra))
                ks = f["_KEY_STATS"]
                vs = f["_VALUE_STATS"]
                knc = ks.get("_NULL_COUNTS")
                vnc = vs.get("_NULL_COUNTS")
                ct = g("_CREATION_TIME")
                vsc = g("_VALUE_STATS_COLS")
                wc = g("_WRITE_COLS")
                wcs = g("_WRITE_COLS_SEQUENCES")
                append(ManifestEntry(kind, r["_PARTITION"], r["_BUCKET"], r["_TOTAL_BUCKETS"], DataFileMeta(
                    name, f["_FILE_SIZE"], f["_ROW_COUNT"], f["_MIN_KEY"], f["_MAX_KEY"],
                    SimpleStats(ks["_MIN_VALUES"], ks["_MAX_VALUES"], None if knc is None else tuple(knc)),
                    SimpleStats(vs["_MIN_VALUES"], vs["_MAX_VALUES"], None if vnc is None else tuple(vnc)),
                    f["_MIN_SEQUENCE_NUMBER"], f["_MAX_SEQUENCE_NUMBER"], f["_SCHEMA_ID"], f["_LEVEL"],
                    tuple(extra),
                    None if ct is None else _millis(ct),
                    g("_DELETE_ROW_COUNT"), g("_EMBEDDED_FILE_INDEX"), g("_FILE_SOURCE"),
                    None if vsc is None else tuple(vsc),
                    g("_EXTERNAL_PATH"), g("_FIRST_ROW_ID"),
                    None if wc is None else tuple(wc),
                    None if wcs is None else tuple(wcs))))
        except CorruptMetadataError:
            raise
        except Exception as e:  # noqa: BLE001
            raise _decode_error(path, e) from None
    _check_entries(path, kinds, names, extras)
    return out, fs


@dataclass(frozen=True, slots=True)
class ManifestColumns:
    """What file-lifecycle decisions (expiry, orphan removal) need of a manifest, decoded column-wise: one list per
    field, row i of every list is entry i. No object per entry, no statistics decoded into Python values.

    A file's identity when entries are merged is (partition, bucket, level, file_name, extra_files, embedded_index,
    external_path), as ManifestEntry.identifier."""

    kind: list[int]
    partition: list[bytes]
    bucket: list[int]
    level: list[int]
    file_name: list[str]
    file_size: list[int]
    extra_files: list[tuple[str, ...]]
    embedded_index: list[bytes | None]
    external_path: list[str | None]
    file_source: list[int | None]

    def __len__(self) -> int:
        return len(self.kind)

    def identifier(self, i: int) -> tuple:
        return (self.partition[i], self.bucket[i], self.level[i], self.file_name[i], self.extra_files[i],
                self.embedded_index[i], self.external_path[i])


_NO_EXTRA: tuple[str, ...] = ()


def read_manifest_columns(data: bytes, path: str) -> ManifestColumns:
    """The lifecycle columns of a manifest (validated exactly as read_manifest validates them)."""
    reader, fs = _open_avro(data, path, MANIFEST)
    _require(fs, path, _MANIFEST_REQUIRED)
    kinds: list[int] = []
    parts: list[bytes] = []
    buckets: list[int] = []
    levels: list[int] = []
    names: list[str] = []
    sizes: list[int] = []
    extra_col: list[tuple[str, ...]] = []
    extras: list[Any] = []
    embedded: list[bytes | None] = []
    external: list[str | None] = []
    sources: list[int | None] = []
    with _gc_paused():
        try:
            for r in reader:
                if r["_VERSION"] != MANIFEST_VERSION:
                    _check_version(r["_VERSION"], MANIFEST_VERSION, path, "manifest entry")
                f = r["_FILE"]
                g = f.get
                kinds.append(r["_KIND"])
                parts.append(r["_PARTITION"])
                buckets.append(r["_BUCKET"])
                levels.append(f["_LEVEL"])
                names.append(f["_FILE_NAME"])
                sizes.append(f["_FILE_SIZE"])
                x = f["_EXTRA_FILES"]
                if x:
                    extras.append((names[-1], x))
                    extra_col.append(tuple(x))
                else:
                    extra_col.append(_NO_EXTRA)
                embedded.append(g("_EMBEDDED_FILE_INDEX"))
                external.append(g("_EXTERNAL_PATH"))
                sources.append(g("_FILE_SOURCE"))
        except CorruptMetadataError:
            raise
        except Exception as e:  # noqa: BLE001
            raise _decode_error(path, e) from None
    _check_entries(path, kinds, names, extras)
    return ManifestColumns(kinds, parts, buckets, levels, names, sizes, extra_col, embedded, external, sources)


def _file_drop_values(f: DataFileMeta) -> Iterable[tuple[str, str, Any]]:
    yield "_FILE", "_CREATION_TIME", f.creation_time
    yield "_FILE", "_DELETE_ROW_COUNT", f.delete_row_count
    yield "_FILE", "_EMBEDDED_FILE_INDEX", f.embedded_index
    yield "_FILE", "_FILE_SOURCE", f.file_source
    yield "_FILE", "_VALUE_STATS_COLS", f.value_stats_cols
    yield "_FILE", "_EXTERNAL_PATH", f.external_path
    yield "_FILE", "_FIRST_ROW_ID", f.first_row_id
    yield "_FILE", "_WRITE_COLS", f.write_cols
    yield "_FILE", "_WRITE_COLS_SEQUENCES", f.write_cols_sequences


def _list_or_none(v: Any) -> list | None:
    return None if v is None else list(v)


def write_manifest(entries: Sequence[ManifestEntry], field_set: FieldSet | Layout = LATEST,
                   codec: str = "zstandard", level: int | None = 1) -> bytes:
    fs = _resolve(field_set, MANIFEST)
    check = bool(_missing_optional(fs, "_FILE"))
    with _gc_paused():  # same reason as when reading
        records = []
        for e in entries:
            f = e.file
            if check:
                _check_drops(fs, _file_drop_values(f))
            records.append({
                "_VERSION": MANIFEST_VERSION,
                "_KIND": int(e.kind),
                "_PARTITION": e.partition,
                "_BUCKET": e.bucket,
                "_TOTAL_BUCKETS": e.total_buckets,
                "_FILE": {
                    "_FILE_NAME": f.file_name,
                    "_FILE_SIZE": f.file_size,
                    "_ROW_COUNT": f.row_count,
                    "_MIN_KEY": f.min_key,
                    "_MAX_KEY": f.max_key,
                    "_KEY_STATS": _stats_rec(f.key_stats),
                    "_VALUE_STATS": _stats_rec(f.value_stats),
                    "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
                    "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
                    "_SCHEMA_ID": f.schema_id,
                    "_LEVEL": f.level,
                    "_EXTRA_FILES": list(f.extra_files),
                    "_CREATION_TIME": f.creation_time,  # fastavro passes an int through unchanged: no zone shift
                    "_DELETE_ROW_COUNT": f.delete_row_count,
                    "_EMBEDDED_FILE_INDEX": f.embedded_index,
                    "_FILE_SOURCE": f.file_source,
                    "_VALUE_STATS_COLS": _list_or_none(f.value_stats_cols),
                    "_EXTERNAL_PATH": f.external_path,
                    "_FIRST_ROW_ID": f.first_row_id,
                    "_WRITE_COLS": _list_or_none(f.write_cols),
                    "_WRITE_COLS_SEQUENCES": _list_or_none(f.write_cols_sequences),
                },
            })
        return _encode_avro(fs, records, codec, level)


# ---------------------------------------------------------------------------------------------- index manifest

_GLOBAL_KEYS = (("_ROW_RANGE_START", "row_range_start"), ("_ROW_RANGE_END", "row_range_end"),
                ("_INDEX_FIELD_ID", "index_field_id"), ("_EXTRA_FIELD_IDS", "extra_field_ids"),
                ("_INDEX_META", "index_meta"), ("_SOURCE_META", "source_meta"))


def read_index_manifest(data: bytes, path: str) -> tuple[list[IndexManifestEntry], FieldSet]:
    reader, fs = _open_avro(data, path, INDEX_MANIFEST)
    required: dict[str, Sequence[str]] = {"": ("_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_INDEX_TYPE",
                                               "_FILE_NAME", "_FILE_SIZE", "_ROW_COUNT")}
    if fs.names("_DELETIONS_VECTORS_RANGES") is not None:
        required["_DELETIONS_VECTORS_RANGES"] = ("f0", "f1", "f2")
    _require(fs, path, required)
    out: list[IndexManifestEntry] = []
    try:
        for r in reader:
            if r["_VERSION"] != INDEX_MANIFEST_VERSION:
                _check_version(r["_VERSION"], INDEX_MANIFEST_VERSION, path, "index manifest entry")
            kind = r["_KIND"]
            if kind != 0 and kind != 1:
                raise CorruptMetadataError(path, f"invalid _KIND {kind!r} (expected 0 = ADD or 1 = DELETE)")
            raw = r.get("_DELETIONS_VECTORS_RANGES")
            ranges = None
            if raw is not None:
                lst = []
                for d in raw:
                    if d is None:
                        raise CorruptMetadataError(path, f"null deletion-vector range in {r['_FILE_NAME']}")
                    lst.append(DeletionVectorMeta(require_plain_name(d["f0"], path, "deletion-vector data file"),
                                                  d["f1"], d["f2"], d.get("_CARDINALITY")))
                ranges = tuple(lst)
            gi = r.get("_GLOBAL_INDEX")
            if gi is not None:
                gi = {py: gi.get(av) for av, py in _GLOBAL_KEYS}
                if gi["extra_field_ids"] is not None:
                    gi["extra_field_ids"] = tuple(gi["extra_field_ids"])
            out.append(IndexManifestEntry(kind, r["_PARTITION"], r["_BUCKET"], r["_INDEX_TYPE"],
                                          require_plain_name(r["_FILE_NAME"], path, "index file name"),
                                          r["_FILE_SIZE"], r["_ROW_COUNT"], ranges, r.get("_EXTERNAL_PATH"), gi))
    except CorruptMetadataError:
        raise
    except Exception as e:  # noqa: BLE001
        raise _decode_error(path, e) from None
    return out, fs


def write_index_manifest(entries: Sequence[IndexManifestEntry], field_set: FieldSet | Layout = LATEST,
                         codec: str = "zstandard", level: int | None = 1) -> bytes:
    fs = _resolve(field_set, INDEX_MANIFEST)
    records = []
    for e in entries:
        ranges = None
        if e.dv_ranges is not None:
            if not fs.has("_DELETIONS_VECTORS_RANGES"):
                _check_drops(fs, [("", "_DELETIONS_VECTORS_RANGES", e.dv_ranges)])
            ranges = []
            for d in e.dv_ranges:
                if d.cardinality is not None and not fs.has("_CARDINALITY", "_DELETIONS_VECTORS_RANGES"):
                    _check_drops(fs, [("_DELETIONS_VECTORS_RANGES", "_CARDINALITY", d.cardinality)])
                ranges.append({"f0": d.data_file, "f1": d.offset, "f2": d.length, "_CARDINALITY": d.cardinality})
        gi = None
        if e.global_index is not None:
            _check_drops(fs, [("", "_GLOBAL_INDEX", e.global_index)])
            gi = {av: e.global_index.get(py) for av, py in _GLOBAL_KEYS}
            if gi["_EXTRA_FIELD_IDS"] is not None:
                gi["_EXTRA_FIELD_IDS"] = list(gi["_EXTRA_FIELD_IDS"])
        _check_drops(fs, [("", "_EXTERNAL_PATH", e.external_path)])
        records.append({
            "_VERSION": INDEX_MANIFEST_VERSION,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_INDEX_TYPE": e.index_type,
            "_FILE_NAME": e.file_name,
            "_FILE_SIZE": e.file_size,
            "_ROW_COUNT": e.row_count,
            "_DELETIONS_VECTORS_RANGES": ranges,
            "_EXTERNAL_PATH": e.external_path,
            "_GLOBAL_INDEX": gi,
        })
    return _encode_avro(fs, records, codec, level)


# ---------------------------------------------------------------------------------------------- options

# Names Avro's CodecFactory.fromString accepts, and the fastavro codec each maps to.
_AVRO_CODECS = {"null": "null", "deflate": "deflate", "snappy": "snappy", "bzip2": "bzip2", "xz": "xz",
                "zstandard": "zstandard"}
_AVRO_DEFAULT_ZSTD_LEVEL = 3  # CodecFactory.fromString("zstandard") uses Avro's default level


def avro_codec_from_options(options: Mapping[str, str] | Options) -> tuple[str, int | None]:
    """(fastavro codec name, compression level or None) for the manifests of a table (format.md §4.1).

    ``avro.codec`` overrides; otherwise ``manifest.compression`` (default ``zstd`` → ``zstandard`` at
    ``file.compression.zstd-level``, default 1); any other value is an Avro codec name.
    """
    opts = options if isinstance(options, Options) else Options(options)
    if opts.key_set(AVRO_CODEC) == AVRO_CODEC.key and opts.get(AVRO_CODEC).strip():
        name = opts.get(AVRO_CODEC).strip().lower()
        if name not in _AVRO_CODECS:
            raise opts.fail(AVRO_CODEC, f"one of {', '.join(sorted(_AVRO_CODECS))}")
        return _AVRO_CODECS[name], (_AVRO_DEFAULT_ZSTD_LEVEL if name == "zstandard" else None)
    comp = opts.get(MANIFEST_COMPRESSION).strip()
    if comp.lower() == "zstd":
        return "zstandard", opts.get(FILE_COMPRESSION_ZSTD_LEVEL)
    name = comp.lower()
    if name not in _AVRO_CODECS:
        raise opts.fail(MANIFEST_COMPRESSION, f"zstd or an Avro codec ({', '.join(sorted(_AVRO_CODECS))})")
    return _AVRO_CODECS[name], (_AVRO_DEFAULT_ZSTD_LEVEL if name == "zstandard" else None)
