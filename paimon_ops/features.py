"""The feature gate: which table features each operation handles (design.md §1, the feature gate).

Paimon 1.x/2.x added options and metadata fields that change what files *mean*: row ids derived from
`_FIRST_ROW_ID`, column-update files merged by row id, BLOB payloads in `.blob` files, global and vector indexes,
shredded variants, clustering, chain tables, postpone buckets, newer snapshot/manifest layouts. An operation that
rewrites or deletes files without knowing such a feature can damage the table while exiting 0. So every
operation asks the gate first; a table that uses a feature the operation does not handle is refused in one line
naming the feature (`UnsupportedError`: exit 2 on the command line), before anything is read in bulk or written.

Each operation declares what it handles (`handles=` in its module under paimon_ops.operations, per mode for
compaction), built from the bundles below; the gate is the `Gate` it derives. The gate fails closed: an operation
without a gate is refused, and a feature its gate does not name is refused for it.

Detection is in two depths: `option_uses` reads the schema's options and types only (no I/O beyond the schema —
cheap enough for Dagster definitions and checks); `metadata_uses` adds what the latest snapshot, its manifests'
field sets and its index manifest say (format versions, unknown fields, global indexes); `file_uses` what the
data files of a scan say (row ids, column-update files, BLOB files, unknown formats).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import paimon_ops.format.manifest as mf
import paimon_ops.options as o
import paimon_ops.table.external as external
from paimon_ops.errors import MissingFileError, UnsupportedError
from paimon_ops.format.datafile import FORMATS, format_of
from paimon_ops.options import Options
from paimon_ops.table.scan import TableScanner

if TYPE_CHECKING:
    from paimon_ops.format.schema import TableSchema
    from paimon_ops.format.snapshot import Snapshot
    from paimon_ops.table.scan import ScanResult, TableScanner
    from paimon_ops.table.table import FileStoreTable

# ---------------------------------------------------------------------------------------------- features
@dataclass(frozen=True)
class Feature:
    key: str
    title: str          # how a person names it, in every refusal
    why: str            # what goes wrong if an operation ignores it


ROW_TRACKING = Feature("row-tracking", "row tracking",
                       "row ids come from _FIRST_ROW_ID and the file position; a rewrite must keep every row's id")
DATA_EVOLUTION = Feature("data-evolution", "data evolution",
                         "column-update files are merged into their rows by row id; concatenating them adds rows")
BLOB = Feature("blob", "BLOB columns", "BLOB payloads live in their own .blob files (or managed packs)")
MANAGED_BLOB = Feature("managed-blob", "managed BLOB packs / descriptors",
                       "BLOB payload files are referenced from data (descriptors, .blobref), not from manifests")
VECTOR_STORE = Feature("vector-store", "vector-store files", "VECTOR columns live in their own vector-store files")
GLOBAL_INDEX = Feature("global-index", "global / vector indexes",
                       "index files cover row-id ranges of data files; rewriting the files invalidates them")
PK_INDEX = Feature("pk-index", "primary-key indexes", "pk-*.index.columns keep index files in step with data")
VARIANT_SHREDDING = Feature("variant-shredding", "variant shredding",
                            "VARIANT columns are stored shredded by a schema we do not rewrite")
CLUSTERING = Feature("clustering", "clustering", "files are kept sorted / clustered by clustering.columns")
CHAIN_TABLE = Feature("chain-table", "chain tables", "snapshots and deltas live on chained branches")
POSTPONE = Feature("postpone-bucket", "postpone bucket (bucket = -2)",
                   "new rows wait in bucket-postpone until a postpone compaction assigns them to buckets")
DV_MODIFIABLE = Feature("dv-modifiable", o.DELETION_VECTORS_MODIFIABLE.key,
                        "deletion vectors are modified in place by writers")
SNAPSHOT_ORDERING = Feature("snapshot-ordering", o.SEQUENCE_SNAPSHOT_ORDERING.key,
                            "merges order records by commit snapshot, not by sequence number")
FORMAT_PER_LEVEL = Feature("format-per-level", "file.format.per.level / file.compression.per.level",
                           "each LSM level has its own file format or codec")
OTHER_FORMAT = Feature("data-format", "a data file format other than parquet / orc / avro",
                       "files we cannot decode cannot be rewritten")
FORMAT_TABLE = Feature("format-table", "a non-Paimon table type", "the table is not managed by Paimon snapshots")
FUTURE_SNAPSHOT = Feature("future-snapshot", "a newer snapshot format",
                          "unknown snapshot fields may reference files or change their meaning")
FUTURE_SCHEMA = Feature("future-schema", "a newer schema format", "schema files of an unknown version")
FUTURE_MANIFEST = Feature("future-manifest", "newer manifest fields",
                          "fields we do not know would be lost when manifests are rewritten")
EXTERNAL_ELSEWHERE = Feature("external-elsewhere", "external data paths on another file system",
                             "files there can be neither read nor reclaimed through the table's file system")
EXTERNAL_STRATEGY = Feature("external-strategy", "an external-path strategy paimon-ops does not write with",
                            "new files must be placed as the strategy decides")
ROW_SIDECAR = Feature("row-sidecar", "data-evolution row sidecar files", "row sidecar files carry row ids")

# What each operation handles is declared by the operation (paimon_ops.operations: `handles=`, per mode for
# compaction), from these bundles. A feature an operation does not name is refused for it.
#
# Features that change what rows or files mean but not how files are referenced: reachability-based deletion, tags
# and manifest rewrites are unaffected (the files are referenced from manifests like any other; first row ids and
# write columns are carried by the codecs).
CONTENT = frozenset({ROW_TRACKING, DATA_EVOLUTION, BLOB, VECTOR_STORE, GLOBAL_INDEX, PK_INDEX, VARIANT_SHREDDING,
                     CLUSTERING, DV_MODIFIABLE, SNAPSHOT_ORDERING, FORMAT_PER_LEVEL, OTHER_FORMAT, ROW_SIDECAR,
                     EXTERNAL_STRATEGY})
# Files in bucket-postpone are referenced from manifests like any other: reachability-based deletion, tags and
# manifest rewrites handle them; the real buckets are ordinary LSM buckets that every compaction handles (the
# planner refuses while rows wait in bucket-postpone); the postpone compaction and rescale move rows into them.
# Orphan removal: reads every manifest of every snapshot and tag, so unknown manifest fields are refused.
ORPHAN_REMOVAL = CONTENT | {POSTPONE}
# Expiry, tag deletion and rollback delete by reachability and copy snapshot JSON whole: unknown manifest fields
# are carried through untouched.
RECLAIMING = CONTENT | {POSTPONE, FUTURE_MANIFEST}
# Metadata-only rewrites of manifests (compaction of manifests, partition drops): files on another file system are
# never opened.
MANIFEST_REWRITES = CONTENT | {POSTPONE, EXTERNAL_ELSEWHERE}
# A tag is a copy of the snapshot JSON, unknown fields included, and opens no data file.
TAGGING = CONTENT | {MANAGED_BLOB, CHAIN_TABLE, POSTPONE, FUTURE_SNAPSHOT, FUTURE_MANIFEST, EXTERNAL_ELSEWHERE}
# Row tracking, data evolution and BLOB files (compact/rowtrack.py): full and small-files compaction keep every row
# id (adjacent row-id ranges only, outputs with `_FIRST_ROW_ID`), merge column updates by row id, move the deletion
# vectors and leave BLOB files as they are. Sort (reorders rows) and dv-ratio (dropping deleted rows changes row ids)
# are not handled; minor compaction is for primary-key tables, which row tracking excludes.
ROW_ID_REWRITES = frozenset({ROW_TRACKING, DATA_EVOLUTION, BLOB})
BUCKETS_ONLY = frozenset({POSTPONE})  # the postpone compaction and rescale: moving rows between buckets
# Creating, renaming and fast-forwarding a branch copy or move its metadata files as they are (snapshot and tag JSON
# verbatim) and open no data file, as tags do — except on chain tables, whose snapshots and deltas live on branches.
BRANCHING = TAGGING - {CHAIN_TABLE}
# Consumer files hold a snapshot id and nothing else.
CONSUMERS = TAGGING


@dataclass(frozen=True)
class Gate:
    """What one operation (one compaction mode) handles: its name in refusals (`compact:full`, `expire_snapshots`)
    and the features it handles. Declared by the operation (paimon_ops.operations); the gate knows nothing else."""

    name: str
    handles: frozenset[Feature]

    def handles_feature(self, feature: Feature) -> bool:
        return feature in self.handles


def handles(gate: Gate, feature: Feature) -> bool:
    return gate.handles_feature(feature)


@dataclass(frozen=True)
class Use:
    """A feature a table uses, and the evidence (an option, a field, a file)."""

    feature: Feature
    evidence: str


# ---------------------------------------------------------------------------------------------- detection
KNOWN_SNAPSHOT_VERSION = 3
KNOWN_SCHEMA_VERSION = 3
KNOWN_INDEX_TYPES = ("DELETION_VECTORS", "HASH")
KNOWN_FORMATS = ("parquet", "orc", "avro")
BLOB_EXTENSION = ".blob"
MANAGED_BLOB_SUFFIXES = (".managed.blob", ".blobref")


def _types(t) -> Iterable[str]:
    yield t.root
    for sub in (t.element, t.key, t.value):
        if sub is not None:
            yield from _types(sub)
    for f in t.fields:
        yield from _types(f.type)


def option_uses(table: FileStoreTable) -> list[Use]:
    """Features the schema (options, column types) declares. Reads nothing but the schema."""
    out = uses_of_schema(dict(table.options.raw), table.schema)
    if table.external_paths:
        for root in external.elsewhere(table):
            out.append(Use(EXTERNAL_ELSEWHERE, f"data-file.external-paths entry {root.location} (the table is on "
                                               f"{table.location})"))
        s = external.strategy(table)
        if s not in external.WRITABLE:
            out.append(Use(EXTERNAL_STRATEGY, f"{external.STRATEGY}={s}"))
    return out


def uses_of_schema(options: Mapping[str, str], schema: TableSchema | None = None) -> list[Use]:
    """Features options (and, given, a schema's version and column types) declare."""
    out: list[Use] = []
    opts = Options(options)

    def use(f: Feature, evidence: str) -> None:
        out.append(Use(f, evidence))

    def given(opt: o.Option[Any]) -> str:
        """The option's text when set and not blank (detection reads leniently: it never fails)."""
        return (opts.text(opt) or "").strip()

    def true(opt: o.Option[Any]) -> bool:
        return given(opt).lower() == "true"

    table_type = given(o.TYPE).lower()
    if table_type not in ("table", ""):
        use(FORMAT_TABLE, f"type={table_type}")
    if schema is not None and schema.version > KNOWN_SCHEMA_VERSION:
        use(FUTURE_SCHEMA, f"schema {schema.id} has version {schema.version} (paimon-ops knows {KNOWN_SCHEMA_VERSION})")
    for opt, feature in ((o.ROW_TRACKING_ENABLED, ROW_TRACKING), (o.DATA_EVOLUTION_ENABLED, DATA_EVOLUTION),
                         (o.DATA_EVOLUTION_ROW_SIDECAR_ENABLED, ROW_SIDECAR)):
        if true(opt):
            use(feature, f"{opt.key}=true")
    fields = schema.fields if schema is not None else ()
    roots = {r for f in fields for r in _types(f.type)}
    blob_cols = [f.name for f in fields if "BLOB" in set(_types(f.type))]
    if blob_cols or given(o.BLOB_FIELD):
        use(BLOB, f"BLOB column(s) {', '.join(blob_cols)}" if blob_cols else f"{o.BLOB_FIELD.key}={given(o.BLOB_FIELD)}")
    for field_opt in (o.BLOB_DESCRIPTOR_FIELD, o.BLOB_VIEW_FIELD):
        if given(field_opt):
            use(MANAGED_BLOB, f"{field_opt.key}={given(field_opt)}")
    if true(o.BLOB_AS_DESCRIPTOR):
        use(MANAGED_BLOB, f"{o.BLOB_AS_DESCRIPTOR.key}=true")
    if blob_cols and schema is not None and schema.primary_keys:
        use(MANAGED_BLOB, "BLOB column on a primary-key table (managed BLOB packs)")
    if given(o.VECTOR_FILE_FORMAT) or given(o.VECTOR_FIELD):
        use(VECTOR_STORE, f"{o.VECTOR_FILE_FORMAT.key} / {o.VECTOR_FIELD.key}")
    if given(o.GLOBAL_INDEX_EXTERNAL_PATH):
        use(GLOBAL_INDEX, f"{o.GLOBAL_INDEX_EXTERNAL_PATH.key}={given(o.GLOBAL_INDEX_EXTERNAL_PATH)}")
    for k in sorted(options):
        if k.startswith("pk-") and k.endswith(".index.columns") and options[k].strip():
            use(PK_INDEX, f"{k}={options[k]}")
    if "VARIANT" in roots and (given(o.VARIANT_SHREDDING_SCHEMA) or true(o.VARIANT_INFER_SHREDDING_SCHEMA)):
        use(VARIANT_SHREDDING, f"{o.VARIANT_SHREDDING_SCHEMA.key} / {o.VARIANT_INFER_SHREDDING_SCHEMA.key}")
    if given(o.CLUSTERING_COLUMNS) or true(o.CLUSTERING_INCREMENTAL) or true(o.PK_CLUSTERING_OVERRIDE):
        use(CLUSTERING, f"{o.CLUSTERING_COLUMNS.key} / {o.CLUSTERING_INCREMENTAL.key}")
    if true(o.CHAIN_TABLE_ENABLED):
        use(CHAIN_TABLE, f"{o.CHAIN_TABLE_ENABLED.key}=true")
    if given(o.BUCKET) == "-2":
        use(POSTPONE, "bucket=-2")
    for opt, feature in ((o.DELETION_VECTORS_MODIFIABLE, DV_MODIFIABLE),
                         (o.SEQUENCE_SNAPSHOT_ORDERING, SNAPSHOT_ORDERING)):
        if true(opt):
            use(feature, f"{opt.key}=true")
    for level_opt in (o.FILE_FORMAT_PER_LEVEL, o.FILE_COMPRESSION_PER_LEVEL):
        if given(level_opt):
            use(FORMAT_PER_LEVEL, f"{level_opt.key}={opts.text(level_opt)}")
    fmt = (given(o.FILE_FORMAT) or o.FILE_FORMAT.default).lower()
    if fmt not in KNOWN_FORMATS:
        use(OTHER_FORMAT, f"file.format={fmt}")
    return out


def snapshot_uses(snapshot: Snapshot | None, where: str = "") -> list[Use]:
    """What one snapshot's JSON says: an unknown format version, keys we do not know."""
    if snapshot is None:
        return []
    what = where or f"snapshot {snapshot.id}"
    out = []
    if snapshot.version > KNOWN_SNAPSHOT_VERSION:
        out.append(Use(FUTURE_SNAPSHOT, f"{what} has version {snapshot.version} (paimon-ops knows "
                                        f"{KNOWN_SNAPSHOT_VERSION})"))
    if snapshot.extra:
        out.append(Use(FUTURE_SNAPSHOT, f"{what} has field(s) {', '.join(sorted(snapshot.extra))}"))
    return out


def metadata_uses(table: FileStoreTable, scanner: TableScanner | None = None, snapshot: Snapshot | None = None) -> list[Use]:
    """Features the latest snapshot's metadata shows: its JSON, the field sets of its manifest files, its index
    manifest. Reads the snapshot, one manifest list, one manifest and the index manifest."""

    snap = snapshot if snapshot is not None else table.snapshots.latest()
    if snap is None:
        return []
    if scanner is not None:  # (its field sets are those of whatever it read first)
        return snapshot_uses(snap) + _manifest_uses(table, scanner, snap)
    # What the manifests say depends only on files named by the snapshot, which are never rewritten under their
    # name: remembered per (table, names), so that the gate at execution reads only the snapshot again (the plan's
    # gate read the rest moments before; a new snapshot names new files and is read afresh).
    key = (table.root, snap.base_manifest_list, snap.delta_manifest_list, snap.index_manifest)
    with _SEEN_LOCK:
        seen = _SEEN.get(key)
        if seen is not None:
            _SEEN.move_to_end(key)
    if seen is None:
        seen = _manifest_uses(table, TableScanner(table), snap)
        with _SEEN_LOCK:
            _SEEN[key] = seen
            if len(_SEEN) > _SEEN_MAX:
                _SEEN.popitem(last=False)
    return snapshot_uses(snap) + seen


_SEEN: OrderedDict[tuple[str, str, str, str | None], list[Use]] = OrderedDict()
_SEEN_LOCK = threading.Lock()
_SEEN_MAX = 256


def _manifest_uses(table: FileStoreTable, scanner: TableScanner, snap: Snapshot) -> list[Use]:
    """`metadata_uses` of the manifest list, manifest and index manifest the snapshot names."""
    out: list[Use] = []
    for kind in (mf.MANIFEST_LIST, mf.MANIFEST, mf.INDEX_MANIFEST):
        try:
            fs = scanner.store.field_set(kind, snap)
        except MissingFileError:
            continue
        if isinstance(fs, mf.Layout):
            continue  # nothing of that kind read: the table has none
        latest = mf.LATEST.of(kind)
        for path, names in fs.records:
            known = latest.names(path) or ()
            extra = [n for n in names if n not in known and not _tolerated_extra(kind, path, n)]
            if extra:
                out.append(Use(FUTURE_MANIFEST, f"{kind.replace('_', ' ')} field(s) "
                                                f"{', '.join(f'{path}.{n}' if path else n for n in extra)}"))
    if snap.index_manifest:
        for ie in scanner.index_entries(snap):
            if ie.global_index is not None or ie.index_type not in KNOWN_INDEX_TYPES:
                out.append(Use(GLOBAL_INDEX, f"index file {ie.file_name} of type {ie.index_type}"))
                break
    return out


# pypaimon 2.1.0 writes nullable _TOTAL_BUCKETS / _EXTRA_FILES into manifest lists; no Java version defines them
# (format.md §4.3): readers ignore them by name and so may we (we write them as null when rewriting lists).
_TOLERATED = {("manifest_list", ""): {"_TOTAL_BUCKETS", "_EXTRA_FILES"}}


def _tolerated_extra(kind: str, path: str, name: str) -> bool:
    return name in _TOLERATED.get((kind, path), set())


def file_uses(result: ScanResult) -> list[Use]:
    """What the data files of a scan say, whatever the options claim: row ids, column-update files, BLOB files,
    formats we cannot decode."""
    out: list[Use] = []
    seen: set[str] = set()

    def use(f: Feature, evidence: str) -> None:
        if f.key not in seen:
            seen.add(f.key)
            out.append(Use(f, evidence))

    for f in result.files:
        m = f.meta
        if m.first_row_id is not None:
            use(ROW_TRACKING, f"data file {m.file_name} has _FIRST_ROW_ID {m.first_row_id}")
        if m.write_cols is not None:
            use(DATA_EVOLUTION, f"data file {m.file_name} holds only columns {list(m.write_cols)}")
        name = m.file_name.lower()
        if name.endswith(MANAGED_BLOB_SUFFIXES):
            use(MANAGED_BLOB, f"file {m.file_name}")
        elif name.endswith(BLOB_EXTENSION):
            use(BLOB, f"BLOB file {m.file_name}")
        else:
            try:
                fmt = format_of(m.file_name)
            except Exception:  # noqa: BLE001 - an unknown extension is exactly what we report
                fmt = name.rsplit(".", 1)[-1]
            if fmt not in FORMATS:
                use(OTHER_FORMAT, f"data file {m.file_name}")
    return out


def table_uses(table: FileStoreTable, scanner: TableScanner | None = None, snapshot: Snapshot | None = None,
               result: ScanResult | None = None) -> list[Use]:
    """Everything the gate knows about the table at the depth given (options; + metadata; + a scan's files)."""
    uses = option_uses(table) + metadata_uses(table, scanner, snapshot)
    if result is not None:
        uses += file_uses(result)
    return uses


# ---------------------------------------------------------------------------------------------- the gate
def refusal(table: FileStoreTable, gate: Gate, uses: Iterable[Use]) -> str | None:
    """The one-line refusal for the operation of `gate` on a table with `uses`, or None if it handles all of them."""
    for u in uses:
        if not gate.handles_feature(u.feature):
            op = gate.name.replace("compact:", "compaction (").replace("_", " ")
            op = op + ")" if op.startswith("compaction (") else op
            return (f"{table.identifier}: {op} refused: the table uses {u.feature.title} ({u.evidence}), which "
                    f"paimon-ops does not handle for this operation; nothing was changed")
    return None


def require(table: FileStoreTable, gate: Gate | None, uses: Iterable[Use] | None = None, *, deep: bool = True,
            scanner: TableScanner | None = None, what: str = "") -> None:
    """Refuse the operation of `gate` on `table` (UnsupportedError, one line) if it uses a feature the operation does
    not handle. `uses` defaults to the options, plus (with `deep`) the latest snapshot's metadata. No gate (an
    operation the registry does not declare, `what`) is refused: the gate fails closed."""
    if gate is None:
        raise UnsupportedError(f"{table.identifier}: {what or 'the operation'} refused: it declares no feature gate "
                               "(paimon-ops does not know which table features it handles); nothing was changed")
    if uses is None:
        uses = option_uses(table)
        msg = refusal(table, gate, uses)
        if msg is None and deep:
            uses = metadata_uses(table, scanner)
            msg = refusal(table, gate, uses)
    else:
        msg = refusal(table, gate, uses)
    if msg is not None:
        raise UnsupportedError(msg)


def refused_operations(table: FileStoreTable, gates: Iterable[Gate], deep: bool = True) -> dict[str, str]:
    """operation -> refusal line, for every gate in `gates` that refuses this table (Dagster's check)."""
    uses = option_uses(table) + (metadata_uses(table) if deep else [])
    out = {}
    for gate in gates:
        msg = refusal(table, gate, uses)
        if msg is not None:
            out[gate.name] = msg
    return out


__all__ = ["Feature", "Use", "Gate", "CONTENT", "ORPHAN_REMOVAL", "RECLAIMING", "MANIFEST_REWRITES", "TAGGING",
           "ROW_ID_REWRITES", "BUCKETS_ONLY", "BRANCHING", "CONSUMERS", "handles", "option_uses", "uses_of_schema",
           "metadata_uses", "file_uses", "snapshot_uses", "table_uses", "refusal", "require", "refused_operations"]
