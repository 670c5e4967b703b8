"""Rewriting data-file indexes (Java's `rewrite_file_index`): after the `file-index.*` options change, every live data
file of an append table (of the chosen partitions) gets the index its options now describe.

    plan_rewrite_file_index(table, partitions=None) -> RewriteFileIndexPlan

The index (format/file_index.py: the bloom filter and the bitmap index, in the file format Java 0.9 reads) is built
from every row of the file as stored — deletion vectors do not apply: the bitmap names file positions, as Java's —
for the columns `file-index.bloom-filter.columns` / `file-index.bitmap.columns` name (per column
`file-index.bloom-filter.<column>.items` / `.fpp`). Up to `file-index.in-manifest-threshold` (500 B) it is kept in
the manifest entry (`_EMBEDDED_FILE_INDEX`), a larger one is written to a new file beside the data file,
`<data file>-<run id>.index`, listed in `_EXTRA_FILES` (other extra files are kept); without configured columns the
file loses its index. One COMPACT snapshot replaces each entry by the same data file with its new index (DELETE of
the old entry, then ADD: Java's rewrite_file_index commits the same), so no reader ever sees a data file twice or
without its rows. The old index files stay on disk for older snapshots and tags; snapshot expiry keeps them with
their data file (a DELETE + ADD of the same path is no candidate), orphan removal reclaims them once nothing names
them — as with Java's procedure.

A file whose index already holds exactly the configured (column, index) pairs — a bloom filter of the configured
size — is left alone, so a rerun does nothing. An index column renamed since the file was written is indexed under
the file's name for it (readers look columns up in the file's schema), a column the file does not have is skipped
(both as Java does). Refused in one line, nothing changed: a primary-key table (Java 0.9 neither writes nor reads
file indexes of primary-key files), an index type other than bloom-filter and bitmap, a configured column the table
does not have or of a type the index does not handle, a nested (`map[key]`) index column.

Verified when committing: only files still live in the latest snapshot with the planned entry are re-indexed (a file
compacted away since is skipped); the commit runs through the table's catalog with its conflict checks.
"""
from __future__ import annotations

import logging
import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, InvalidOptionError, StalePlanError, UnsupportedError
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import DATA, EXTRA, FileAction, Plan, PlanBuilder, Step, declare_step_action, planner
from paimon_ops.format import file_index as fi
from paimon_ops.format import manifest as mf
from paimon_ops.format.manifest import ManifestEntry
from paimon_ops.format.partition import parse_partition_spec
from paimon_ops.operations.model import Partitions
from paimon_ops.operations.rewrite_file_index import OPERATION as REWRITE_FILE_INDEX
from paimon_ops.options import (
    FILE_INDEX_BITMAP_COLUMNS,
    FILE_INDEX_BLOOM_FILTER_COLUMNS,
    FILE_INDEX_IN_MANIFEST_THRESHOLD,
    FILE_INDEX_PREFIX,
)
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.reader import read_file
from paimon_ops.table.removal import remove_written
from paimon_ops.table.scan import LiveFile, TableScanner
from paimon_ops.table.table import FileStoreTable

log = logging.getLogger(__name__)

REINDEX = "rewrite-file-index-commit"
declare_step_action(REINDEX, verb="would re-index (the data file stays; its entry is replaced)")
INDEX_SUFFIX = ".index"  # Java's DataFilePathFactory.INDEX_PATH_SUFFIX: extra files that are file indexes


class RewriteFileIndexPlan(Plan):
    """Rebuilding the file indexes of data files, committed as one COMPACT snapshot."""

    operation = "rewrite_file_index"
    op = REWRITE_FILE_INDEX  # its operation (the feature gate, the planner's parameters)

    @property
    def is_empty(self) -> bool:
        return not self.details.get("files_to_reindex")


@dataclass(frozen=True)
class IndexColumn:
    name: str                # the column (current schema)
    field_id: int
    type_root: str
    index_type: str          # bloom-filter | bitmap
    option_items: tuple[tuple[str, str], ...]  # per-column options (bloom filter: items, fpp)

    @property
    def options(self) -> Mapping[str, str]:
        return dict(self.option_items)

    @property
    def label(self) -> str:
        return f"{self.index_type}({self.name})"


def index_config(table: FileStoreTable) -> list[IndexColumn]:
    """The file indexes the table's options ask for (Java's FileIndexOptions), validated."""
    opts = table.options
    where = opts.where
    raw = dict(opts.raw)
    for key in raw:  # an index type paimon-ops does not write is refused, never silently left out
        if key.startswith(FILE_INDEX_PREFIX) and key.endswith(".columns"):
            t = key[len(FILE_INDEX_PREFIX):-len(".columns")]
            if t not in fi.INDEX_TYPES and raw[key].strip():
                raise UnsupportedError(f"{table.identifier}: option {key!r}: file index type {t!r} is not one "
                                       f"paimon-ops writes ({', '.join(fi.INDEX_TYPES)}); nothing was changed")
    fields = {f.name: f for f in table.schema.fields}
    out: list[IndexColumn] = []
    for opt, index_type in ((FILE_INDEX_BLOOM_FILTER_COLUMNS, fi.BLOOM_FILTER), (FILE_INDEX_BITMAP_COLUMNS, fi.BITMAP)):
        for col in opts.get(opt):
            if "[" in col:
                raise UnsupportedError(f"{table.identifier}: option {opt.key!r}: nested index column {col!r} is "
                                       "not supported; nothing was changed")
            f = fields.get(col)
            if f is None:
                raise InvalidOptionError(opt.key, ",".join(opts.get(opt)), f"columns of the table "
                                         f"({', '.join(fields)})", where)
            if not fi.supported(index_type, f.type.root):
                raise InvalidOptionError(opt.key, ",".join(opts.get(opt)), f"columns a {index_type} index handles "
                                         f"({col} is {f.type})", where)
            prefix = f"{FILE_INDEX_PREFIX}{index_type}.{col}."
            per_column = {k[len(prefix):]: v for k, v in raw.items() if k.startswith(prefix)}
            for k, v in per_column.items():
                if index_type != fi.BLOOM_FILTER or k not in ("items", "fpp"):
                    raise InvalidOptionError(prefix + k, v, "items or fpp of a bloom-filter column", where)
                try:
                    number = float(v)
                except ValueError:
                    raise InvalidOptionError(prefix + k, v, "a number", where) from None
                if (k == "items" and (number <= 0 or number != int(number))) or (k == "fpp" and not 0 < number < 1):
                    raise InvalidOptionError(prefix + k, v, "a positive integer" if k == "items" else
                                             "a probability in (0, 1)", where)
            out.append(IndexColumn(col, f.id, f.type.root, index_type, tuple(sorted(per_column.items()))))
    return out


def _bloom_size(c: IndexColumn) -> int:
    f = fi.BloomFilter.sized(int(float(c.options.get("items", fi.DEFAULT_ITEMS))),
                             float(c.options.get("fpp", fi.DEFAULT_FPP)))
    return 4 + len(f.bits)


def _file_columns(table: FileStoreTable, config: list[IndexColumn], schema_id: int) -> dict[IndexColumn, str]:
    """config column -> its name in the file's schema (a column the file does not have is left out)."""
    by_id = {f.id: f.name for f in table.schemas.schema(schema_id).fields}
    return {c: by_id[c.field_id] for c in config if c.field_id in by_id}


def _wanted(table: FileStoreTable, config: list[IndexColumn], schema_id: int) -> dict[tuple[str, str], int | None]:
    """(file column, index type) -> the index's size when it is known without the data (bloom filters)."""
    return {(name, c.index_type): _bloom_size(c) if c.index_type == fi.BLOOM_FILTER else None
            for c, name in _file_columns(table, config, schema_id).items()}


def _current(table: FileStoreTable, e: ManifestEntry, data_path: str) -> dict[tuple[str, str], int] | None:
    """(column, index type) -> index size of the file's index now; None when it cannot be read (then rewritten)."""
    files = [x for x in e.file.extra_files if x.endswith(INDEX_SUFFIX)]
    try:
        if e.file.embedded_index:
            _, head = fi.read_head(e.file.embedded_index, f"embedded index of {e.file.file_name}")
        elif files:
            path = posixpath.join(posixpath.dirname(data_path), files[0])
            with table.io.open_input(path) as src:
                first = src.read(16)
                data = first + src.read(max(0, fi.head_length(first, path) - 16))
            _, head = fi.read_head(data, path)
        else:
            return {}
    except (CorruptMetadataError, OSError):
        return None
    return {(col, t): length for col, types in head.items() for t, (_, length) in types.items()}


def _up_to_date(current: dict[tuple[str, str], int] | None, wanted: dict[tuple[str, str], int | None]) -> bool:
    return current is not None and set(current) == set(wanted) and \
        all(size is None or current[k] == size for k, size in wanted.items())


def _resolve_run_id(params: dict[str, Any]) -> None:
    if params.get("run_id") is None:
        params["run_id"] = str(uuid.uuid4())


@planner(RewriteFileIndexPlan, hidden=("run_id",), resolve=_resolve_run_id)
def plan_rewrite_file_index(table: FileStoreTable, *, partitions: Partitions | None = None,
                            run_id: str | None = None) -> RewriteFileIndexPlan:
    """Which live data files get a new file index, and the COMPACT commit (module docstring). `run_id` (a UUID,
    chosen when not given) names the new index files."""
    try:
        run_id = str(uuid.UUID(str(run_id))) if run_id is not None else str(uuid.uuid4())
    except ValueError:
        raise InvalidArgumentError(f"run_id must be a UUID, got {run_id!r}") from None
    b = PlanBuilder()
    b.gate(table, RewriteFileIndexPlan.operation)
    if table.is_primary_key:
        raise UnsupportedError(f"{table.identifier}: rewrite-file-index refused: it is a primary-key table, and Java "
                               "Paimon 0.9 neither writes nor reads file indexes of primary-key files; nothing was "
                               "changed")
    config = index_config(table)
    scanner = TableScanner(table)
    wanted_partition = _partition_filter(table, scanner, partitions)
    plan_pending(b, table)  # first finish what an interrupted run left
    latest = table.snapshots.latest()
    details: dict[str, Any] = {"partitions": partitions, "indexes": [c.label for c in config],
                               "in_manifest_threshold": table.options.get(FILE_INDEX_IN_MANIFEST_THRESHOLD)}
    if latest is None:
        details.update({"files_to_reindex": 0, "reason": "the table has no snapshot"})
        return b.build(RewriteFileIndexPlan, table, details, base_snapshot=None)
    todo: list[tuple[ManifestEntry, str]] = []
    checked = 0
    for e in sorted(scanner.live_entries(latest).values(), key=lambda e: (e.partition, e.bucket, e.file.file_name)):
        if wanted_partition is not None and not wanted_partition(e.partition):
            continue
        checked += 1
        path = scanner.data_file_path(e.partition, e.bucket, e.file)
        if not _up_to_date(_current(table, e, path), _wanted(table, config, e.file.schema_id)):
            todo.append((e, path))
    details.update({"snapshot": latest.id, "files_checked": checked, "files_to_reindex": len(todo)})
    if not todo:
        details["reason"] = f"every one of the {checked} file(s) is indexed as the options say"
        return b.build(RewriteFileIndexPlan, table, details, base_snapshot=latest.id)
    what = ", ".join(c.label for c in config) or "no index (the options name no column)"
    b.step("rebuild the file indexes (one COMPACT commit)", REINDEX, run_id=run_id,
           files=[[e.partition.hex(), e.bucket, e.file.file_name] for e, _ in todo],
           config=[c.label for c in config])
    for e, path in todo:
        part = scanner.partition_dir(e.partition).rstrip("/")
        b.add(FileAction(path, DATA, (f"partition {part}, " if part else "") + f"bucket {e.bucket}: index -> {what}",
                         e.file.file_size))
        for x in e.file.extra_files:
            if x.endswith(INDEX_SUFFIX):
                b.add(FileAction(posixpath.join(posixpath.dirname(path), x), EXTRA,
                                 f"old file index of {e.file.file_name}: replaced (left on disk for older snapshots)"))
    return b.build(RewriteFileIndexPlan, table, details, base_snapshot=latest.id)


def _partition_filter(table: FileStoreTable, scanner: TableScanner, partitions: Partitions | None) -> Any:
    if not partitions:
        return None
    schema = table.schema
    names = list(schema.partition_keys)
    if not names:
        raise InvalidArgumentError(f"--partition given, but {table.identifier} is not partitioned")
    types = [f.type for f in schema.fields_of(names)]
    specs = [parse_partition_spec(p, names, types, table.options.partition_default_name) for p in partitions]
    return lambda p: any(all(dict(zip(names, scanner.partition_values(p)))[k] == v for k, v in s.items())
                         for s in specs)


# ---------------------------------------------------------------------------------------------- execution
def reindexed(table: FileStoreTable, scanner: TableScanner, e: ManifestEntry, config: list[IndexColumn],
              run_id: str, written: list[str]) -> mf.DataFileMeta:
    """The file's entry with the index of `config` built from its rows (embedded, or written beside it)."""
    columns = _file_columns(table, config, e.file.schema_id)
    keep = tuple(x for x in e.file.extra_files if not x.endswith(INDEX_SUFFIX))
    if not columns:
        return e.file.with_(embedded_index=None, extra_files=keep)
    path = scanner.data_file_path(e.partition, e.bucket, e.file)
    live = LiveFile(e.partition, e.bucket, e.total_buckets, e.file, path)
    rows = read_file(scanner, live, None, keep_system_columns=False,
                     projection=list(dict.fromkeys(c.name for c in columns)))
    rename = {c.name: name for c, name in columns.items()}  # (read by current names, indexed by the file's)
    rows = rows.rename_columns([rename.get(n, n) for n in rows.column_names])
    indexes = fi.build_indexes(rows, [(name, c.type_root, c.index_type, c.options) for c, name in columns.items()])
    data = fi.write_file_index(indexes)
    if len(data) <= table.options.get(FILE_INDEX_IN_MANIFEST_THRESHOLD):
        return e.file.with_(embedded_index=data, extra_files=keep)
    name = f"{e.file.file_name}-{run_id}{INDEX_SUFFIX}"
    target = posixpath.join(posixpath.dirname(path), name)
    written.append(target)
    if not table.io.write_atomic_if_absent(target, data):
        raise CorruptMetadataError(target, "exists already; a file index is never overwritten (nothing was "
                                           "committed)")
    return e.file.with_(embedded_index=None, extra_files=keep + (name,))


@register_step(REINDEX)
def _reindex(ex: Execution, step: Step) -> None:
    """Each planned file still live, re-indexed as the options say now, in one COMPACT commit."""
    table, plan, p = ex.table, ex.plan, step.params
    run_id = str(uuid.UUID(str(p["run_id"])))
    config = index_config(table)
    if [c.label for c in config] != list(p["config"]):
        raise StalePlanError(plan.operation, plan.table, ["the file-index options changed since the plan"])
    scanner = TableScanner(table)
    latest = table.snapshots.latest()
    if latest is None:
        raise StalePlanError(plan.operation, plan.table, ["the table has no snapshot any more"])
    live = {(e.partition, e.bucket, e.file.file_name): e for e in scanner.live_entries(latest).values()}
    targets = []
    skipped = []
    for hexp, bucket, name in p["files"]:
        e = live.get((bytes.fromhex(hexp), int(bucket), name))
        if e is None:
            skipped.append(f"{name}: no longer in the latest snapshot")
        else:
            targets.append(e)
    if not targets:
        ex.warnings += skipped
        ex.details.update({"reindexed": 0, "skipped": skipped})
        return
    # new index files are named with the run id: a crash leaves them to the next run (its journal)
    ex.journal_writes(sorted({(scanner.bucket_dir(e.partition, e.bucket), run_id) for e in targets}))
    committer = FileStoreCommit(table, commit_user=ex.state.get("commit_user"), journal=ex.journal_writes,
                                name_uuid=run_id)
    written: list[str] = []
    try:
        news = [e.with_(file=reindexed(table, scanner, e, config, run_id, written)) for e in targets]
        changes = CommitChanges(data=tuple([e.with_(kind=mf.FileKind.DELETE) for e in targets] + news))
        snap = committer.commit(changes, "COMPACT", plan.base_snapshot, now_millis=ex.state.get("commit_time_millis"))
    except BaseException:
        if committer.committed is None:
            remove_written(table, written, "an uncommitted file-index rewrite")
        raise
    ex.snapshot_id = snap.id
    ex.written += [FileAction(w, EXTRA, "file index", table.io.size(w)) for w in written]
    ex.warnings += skipped
    ex.details.update({"reindexed": len(news), "embedded": sum(1 for e in news if e.file.embedded_index),
                       "index_files_written": len(written), "skipped": skipped})


__all__ = ["RewriteFileIndexPlan", "plan_rewrite_file_index", "index_config", "IndexColumn", "reindexed", "REINDEX"]
