"""Removing missing files from the table (Java's `remove_unexisting_files` / `ListUnexistingFiles`): recover a table
whose files went missing — a bucket lifecycle rule, a bad copy, an orphan removal with too short an age — so that
readers can read it again.

    plan_remove_unexisting_files(table, partitions=None) -> RemoveUnexistingFilesPlan

This is the one operation allowed to act on a table with missing files. Every other operation refuses such a table
where it meets a missing file (compaction reading a data file or deletion vector, expiry and orphan removal reading a
manifest of a snapshot that stays: `table.references`, `table.consistency`); this one exempts exactly the files it
repairs and nothing else:

* it reads only metadata — the latest snapshot of its branch, its manifest lists, manifests and index manifest —
  and the listings of the directories those name. A missing or unreadable manifest list, manifest or index manifest
  is refused in one line naming it (nothing changes): what it held cannot be known, so what to drop cannot be
  decided. A missing LATEST snapshot (a LATEST hint beyond the newest snapshot file) is refused too: `repair` first;
* what it drops, in one OVERWRITE commit (the rows are gone, as a partition drop's; streaming readers skip it):
  - the entry of every live data file that is missing,
  - the entry of every live data file whose deletion-vector index file is missing (its rows cannot be read
    correctly any more: rows the vectors deleted would come back), with that index entry,
  - the deletion vectors of the dropped files (each affected bucket's vectors are rewritten into one new index
    file without them; the old index files stay on disk for older snapshots),
  - the reference to a missing file-index file (`_EXTRA_FILES`): the data file's entry is replaced by one without it
    (DELETE + ADD of the same file, as Java's rewrite_file_index commits) — only file skipping is lost;
* a missing hash index file (dynamic-bucket tables) is refused: rebuilding it is not what this operation does;
* with `drop_missing_manifests` (Java's `remove_unexisting_manifests`), a data manifest of the latest snapshot that is
  missing from storage is dropped too — the files it added leave the table with their rows (the plan says how many
  files; their rows are unknown) — but only one that held no DELETE entry (the manifest list records how many):
  dropping DELETE entries would bring back files they removed, so such a manifest is refused. The repair snapshot is
  then written whole (base list: the manifests that stay; delta: this run's entries) and only on the planned
  snapshot: what a concurrent commit did cannot be checked against manifests nobody can read.

What a dropped file means. Append table: its rows are lost. Primary-key table: the newest version of each of its
keys is lost — where an older version lives in another file, readers see that older version again; a key deleted by
a record in the dropped file comes back; with deletion vectors, a key whose older row was marked deleted because of
the dropped file disappears. The plan says so (a warning), as Java's documentation of the procedure does.

Tags and older snapshots are never rewritten: a tag that references a missing file still cannot be read (the plan
names such tags). Changelog files (streaming reads of older snapshots) are not repaired.

Verified at the moment of committing: each planned entry is dropped only if it is still live in the latest snapshot
and its file is still missing — a file that reappeared (restored from a backup meanwhile) is kept, and said so in the
report; the commit runs through the table's catalog and its conflict checks (another writer's commit in between is
retried on, a compaction that replaced a planned file drops nothing of it).
"""
from __future__ import annotations

import logging
import posixpath
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from paimon_ops.compact.dv import dv_index_path, supports_cardinality, write_dv_index
from paimon_ops.errors import (
    CommitConflictError,
    CorruptMetadataError,
    InvalidArgumentError,
    MissingFileError,
    StalePlanError,
    UnsupportedError,
    arg,
)
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.plan import (
    DATA,
    EXTRA,
    INDEX,
    MANIFEST,
    FileAction,
    Plan,
    PlanBuilder,
    Step,
    declare_step_action,
    planner,
)
from paimon_ops.format import manifest as mf
from paimon_ops.format.deletion_vectors import DeletionVector
from paimon_ops.format.manifest import IndexManifestEntry, ManifestEntry, ManifestFileMeta
from paimon_ops.format.partition import parse_partition_spec
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.reclaim import extra_file_path
from paimon_ops.operations.model import Partitions
from paimon_ops.operations.remove_unexisting_files import OPERATION as REMOVE_UNEXISTING_FILES
from paimon_ops.table.commit import BATCH_COMMIT_IDENTIFIER, CommitChanges, FileStoreCommit
from paimon_ops.table.hints import decide
from paimon_ops.table.removal import remove_written
from paimon_ops.table.scan import DELETION_VECTORS, HASH, TableScanner, merge_entries
from paimon_ops.table.table import LATEST, FileStoreTable

log = logging.getLogger(__name__)

# The one step: an OVERWRITE commit dropping the planned entries (their files are missing: nothing is deleted).
DROP_MISSING = "drop-missing-files-commit"
declare_step_action(DROP_MISSING, deletes=True, verb="would drop from the table",
                    done="dropped from the table (missing from storage)", removal="dropped")

_WHAT = "remove-unexisting-files"
MISSING, LOST_VECTORS, MISSING_INDEX = "missing", "lost-deletion-vectors", "missing-index"


class RemoveUnexistingFilesPlan(Plan):
    """Dropping the entries whose files are missing, in one OVERWRITE commit."""

    operation = "remove_unexisting_files"
    op = REMOVE_UNEXISTING_FILES  # its operation (the feature gate, the planner's parameters)

    @property
    def is_empty(self) -> bool:
        return not self.details.get("missing") and not self.details.get("dropped_manifests")

    def effect(self) -> str:
        """The confirmation's words (`--yes`)."""
        d = self.details
        return (f"dropping {d.get('dropped_entries', 0)} entr(y/ies) of {self.table} whose files are missing loses "
                f"{d.get('dropped_rows', 0)} row(s)" + (f" and the file index of {d['stripped_entries']} file(s)"
                                                         if d.get("stripped_entries") else ""))


# ---------------------------------------------------------------------------------------------- planning
def _resolve_run_id(params: dict[str, Any]) -> None:
    if params.get("run_id") is None:
        params["run_id"] = str(uuid.uuid4())


@dataclass
class _Metadata:
    """What the latest snapshot's metadata says: its live entries and index entries, and — when missing manifests
    may be dropped — the manifests that are missing and those that stay."""

    entries: list[ManifestEntry]
    index_entries: list[IndexManifestEntry]
    lost_manifests: list[ManifestFileMeta]
    kept_manifests: list[ManifestFileMeta]


def _read_metadata(table: FileStoreTable, scanner: TableScanner, latest: Snapshot,
                   drop_missing_manifests: bool = False) -> _Metadata:
    """The latest snapshot's live entries and index entries; an unreadable metadata file refused, naming it — except
    a data manifest missing from storage when `drop_missing_manifests` (Java's remove_unexisting_manifests), and only
    one holding no DELETE entry: dropping a manifest with DELETE entries would bring back the files they removed."""
    where = f"snapshot {latest.id}"
    try:
        metas = list(scanner.store.manifest_list(latest.base_manifest_list, where)) + \
            list(scanner.store.manifest_list(latest.delta_manifest_list, where))
    except CorruptMetadataError as e:
        raise _unreadable(e, drop_missing_manifests) from None
    lost: list[ManifestFileMeta] = []
    if drop_missing_manifests:
        present = _present(table, [table.manifest_path(m.file_name) for m in metas])
        lost = [m for m in metas if table.manifest_path(m.file_name) not in present]
        for m in lost:
            if m.num_deleted_files:
                raise CorruptMetadataError(table.manifest_path(m.file_name), (
                    f"is missing and held {m.num_deleted_files} DELETE entr(y/ies): dropping it would bring back "
                    "the files they removed, so it cannot be dropped; nothing was changed"))
    kept = [m for m in metas if m not in lost]
    try:
        adds, _ = merge_entries((e for m in kept for e in scanner.store.manifest(m.file_name, where)), where)
        return _Metadata(list(adds.values()), scanner.index_entries(latest), lost, kept)
    except CorruptMetadataError as e:
        raise _unreadable(e, drop_missing_manifests) from None


def _unreadable(e: CorruptMetadataError, drop_missing_manifests: bool) -> CorruptMetadataError:
    hint = "" if drop_missing_manifests or not isinstance(e, MissingFileError) else \
        " (--drop-missing-manifests drops a missing manifest that holds no DELETE entry, losing its files' rows)"
    return CorruptMetadataError(e.path, f"{e.problem}; {_WHAT} drops entries whose data files are missing, but what "
                                        f"an unreadable manifest holds cannot be known{hint}: nothing was changed")


def _check_latest_known(table: FileStoreTable) -> None:
    """The latest snapshot is the newest file (a LATEST hint beyond it means snapshots were lost: committing on the
    newest file would bury them)."""
    latest_hint = decide(table.snapshots, names=[LATEST])[0]
    if latest_hint.now is not None and latest_hint.wanted is not None and latest_hint.now > latest_hint.wanted:
        raise CorruptMetadataError(latest_hint.path, f"{latest_hint.why}; refusing {_WHAT} (nothing changed): run "
                                                     "`repair` first to decide what the latest snapshot is")


def _partition_filter(table: FileStoreTable, scanner: TableScanner, partitions: Partitions | None) -> Any:
    """A predicate on partition bytes from `partitions` (None: every partition)."""
    if not partitions:
        return None
    schema = table.schema
    names = list(schema.partition_keys)
    if not names:
        raise InvalidArgumentError(f"{arg('partitions')} given, but {table.identifier} is not partitioned")
    types = [f.type for f in schema.fields_of(names)]
    specs = [parse_partition_spec(p, names, types, table.options.partition_default_name) for p in partitions]
    memo: dict[bytes, bool] = {}

    def wanted(partition: bytes) -> bool:
        hit = memo.get(partition)
        if hit is None:
            row = dict(zip(names, scanner.partition_values(partition)))
            hit = memo[partition] = any(all(row[k] == v for k, v in s.items()) for s in specs)
        return hit
    return wanted


def _present(table: FileStoreTable, paths: Iterable[str]) -> set[str]:
    """Which of `paths` exist: one listing per directory (a symbolic link counts as present: readers follow it, and
    paimon-ops never decides anything through one)."""
    by_dir: dict[str, set[str]] = {}
    for p in paths:
        d, _, name = p.rpartition("/")
        by_dir.setdefault(d, set()).add(name)
    out: set[str] = set()
    for d, names in by_dir.items():
        listed = {st.name for st in table.io.list_status(d, include_symlinks=True)}
        out.update(f"{d}/{n}" for n in names & listed)
    return out


@dataclass
class _Missing:
    """What the planner found missing (the entries to drop or replace, the index files gone)."""

    drops: dict[tuple[bytes, int, str], tuple[ManifestEntry, str, str]]  # -> (entry, cause, reason)
    strips: dict[tuple[bytes, int, str], tuple[ManifestEntry, tuple[str, ...]]]  # -> (entry, missing extra files)
    lost_indexes: list[IndexManifestEntry]


def find_missing(table: FileStoreTable, scanner: TableScanner, entries: list[ManifestEntry],
                 index_entries: list[IndexManifestEntry], wanted: Any = None) -> _Missing:
    """The live entries (of the partitions `wanted` accepts) whose data, file-index or deletion-vector files are
    missing. A missing hash index file is refused (UnsupportedError)."""
    entries = [e for e in entries if wanted is None or wanted(e.partition)]
    index_entries = [ie for ie in index_entries if wanted is None or wanted(ie.partition)]
    data_paths = {e.identifier: scanner.data_file_path(e.partition, e.bucket, e.file) for e in entries}
    extra_paths = {(e.identifier, x): extra_file_path(data_paths[e.identifier], x) for e in entries
                   for x in e.file.extra_files}
    index_paths = {ie.file_name: scanner.index_file_path(ie) for ie in index_entries}
    present = _present(table, [*data_paths.values(), *extra_paths.values(), *index_paths.values()])
    lost = [ie for ie in index_entries if index_paths[ie.file_name] not in present]
    for ie in lost:
        if ie.index_type == HASH:
            raise UnsupportedError(f"{index_paths[ie.file_name]}: the hash index of bucket {ie.bucket} (dynamic bucket "
                                   f"assignment) is missing; {_WHAT} does not rebuild it: nothing was changed")
    lost_vectors = {(ie.partition, r.data_file): ie for ie in lost if ie.index_type == DELETION_VECTORS
                    for r in ie.dv_ranges or ()}
    drops: dict[tuple[bytes, int, str], tuple[ManifestEntry, str, str]] = {}
    strips: dict[tuple[bytes, int, str], tuple[ManifestEntry, tuple[str, ...]]] = {}
    for e in entries:
        key = (e.partition, e.bucket, e.file.file_name)
        if data_paths[e.identifier] not in present:
            drops[key] = (e, MISSING, "missing from storage")
        elif (e.partition, e.file.file_name) in lost_vectors:
            ie = lost_vectors[(e.partition, e.file.file_name)]
            drops[key] = (e, f"{LOST_VECTORS}:{ie.file_name}",
                          f"its deletion vector is in the missing index file {ie.file_name}: rows it deleted would "
                          "come back, so the file cannot be read correctly any more")
        else:
            gone = tuple(x for x in e.file.extra_files if extra_paths[(e.identifier, x)] not in present)
            if gone:
                strips[key] = (e, gone)
    return _Missing(drops, strips, lost)


def _where(scanner: TableScanner, partition: bytes, bucket: int) -> str:
    part = scanner.partition_dir(partition).rstrip("/")
    return (f"partition {part}, " if part else "") + f"bucket {bucket}"


def _pk_warning(table: FileStoreTable) -> str:
    dv = " With deletion vectors, a key whose older row was marked deleted because of a dropped file disappears." \
        if table.options.deletion_vectors_enabled else ""
    return ("primary-key table: the newest version of every key in a dropped file is lost — where an older version "
            "lives in another file readers see it again, and a key deleted by a record in a dropped file comes back."
            + dv)


def _tags_referencing(table: FileStoreTable, scanner: TableScanner, names: set[str]) -> list[str]:
    """Tags that reference one of the data files `names` (they stay unreadable: tags are never rewritten)."""
    out = []
    for tag_name, tag in table.tags.tags():
        try:
            live = scanner.live_entries(tag)
        except CorruptMetadataError:
            out.append(f"{tag_name} (unreadable)")
            continue
        if any(e.file.file_name in names for e in live.values()):
            out.append(tag_name)
    return out


@planner(RemoveUnexistingFilesPlan, hidden=("run_id",), resolve=_resolve_run_id)
def plan_remove_unexisting_files(table: FileStoreTable, *, partitions: Partitions | None = None,
                                 drop_missing_manifests: bool = False,
                                 run_id: str | None = None) -> RemoveUnexistingFilesPlan:
    """Which entries of the latest snapshot (of `partitions`, default all) name missing files — and, with
    `drop_missing_manifests`, which missing manifests are dropped — and the one commit dropping them (module
    docstring). `run_id` (a UUID, chosen when not given) names the new deletion-vector index files."""
    try:
        run_id = str(uuid.UUID(str(run_id))) if run_id is not None else str(uuid.uuid4())
    except ValueError:
        raise InvalidArgumentError(f"run_id must be a UUID, got {run_id!r}") from None
    b = PlanBuilder()
    b.gate(table, RemoveUnexistingFilesPlan.operation)
    _check_latest_known(table)
    scanner = TableScanner(table)
    wanted = _partition_filter(table, scanner, partitions)
    plan_pending(b, table)  # first finish what an interrupted run left
    latest = table.snapshots.latest()
    details: dict[str, Any] = {"partitions": partitions}
    if latest is None:
        details.update({"missing": [], "reason": "the table has no snapshot"})
        return b.build(RemoveUnexistingFilesPlan, table, details, base_snapshot=None)
    meta = _read_metadata(table, scanner, latest, drop_missing_manifests)
    entries, index_entries = meta.entries, meta.index_entries
    found = find_missing(table, scanner, entries, index_entries, wanted)
    checked = sum(1 for e in entries if wanted is None or wanted(e.partition))
    details.update({"snapshot": latest.id, "checked_entries": checked})
    if meta.lost_manifests:
        if partitions:
            raise InvalidArgumentError(f"{arg('partitions')}: a missing manifest is dropped whole, whatever the "
                                       "partitions of its files; drop it without a partition filter")
        details["dropped_manifests"] = [{"manifest": m.file_name, "added_files": m.num_added_files}
                                        for m in meta.lost_manifests]
        b.warn(f"{len(meta.lost_manifests)} missing manifest(s) dropped (Java's remove_unexisting_manifests): the "
               f"{sum(m.num_added_files for m in meta.lost_manifests)} file(s) they added leave the table with their "
               "rows (how many rows is not known: the manifests are gone); the files stay on disk as orphans")
    if not found.drops and not found.strips and not found.lost_indexes and not meta.lost_manifests:
        details.update({"missing": [], "reason": f"every file the {checked} entries of snapshot {latest.id} name "
                                                 "exists"})
        return b.build(RemoveUnexistingFilesPlan, table, details, base_snapshot=latest.id)

    dropped = {(p, n) for p, _, n in found.drops}
    rewritten = _rewritten_buckets(index_entries, found, dropped)
    missing: list[dict[str, Any]] = []
    b.step("drop the entries whose files are missing (one OVERWRITE commit)", DROP_MISSING, run_id=run_id,
           drops=[[p.hex(), bucket, name, cause] for (p, bucket, name), (_, cause, _) in sorted(found.drops.items())],
           strips=[[p.hex(), bucket, name, list(gone)] for (p, bucket, name), (_, gone) in sorted(found.strips.items())],
           lost_indexes=sorted(ie.file_name for ie in found.lost_indexes),
           rewritten_buckets=[[p.hex(), bucket] for p, bucket in rewritten],
           manifests=[m.file_name for m in meta.lost_manifests])
    for m in meta.lost_manifests:
        b.add(FileAction(table.manifest_path(m.file_name), MANIFEST,
                         f"missing from storage; dropped with the {m.num_added_files} file(s) it added (no DELETE "
                         "entry: nothing comes back)", m.file_size))
    for _key, (e, cause, why) in sorted(found.drops.items()):
        path = scanner.data_file_path(e.partition, e.bucket, e.file)
        where = _where(scanner, e.partition, e.bucket)
        b.add(FileAction(path, DATA, f"{where}, level {e.file.level}, {e.file.row_count} row(s): {why}; the entry is "
                                     "dropped", e.file.file_size))
        missing.append(_row(scanner, e, DATA, path, MISSING if cause == MISSING else LOST_VECTORS, why))
    for (_p, _bucket, name), (e, gone) in sorted(found.strips.items()):
        data_path = scanner.data_file_path(e.partition, e.bucket, e.file)
        for x in gone:
            why = (f"file index of {name} is missing from storage; the data file's entry is kept without it (only "
                   "file skipping by that index is lost)")
            b.add(FileAction(extra_file_path(data_path, x), EXTRA, f"{_where(scanner, e.partition, e.bucket)}: {why}"))
            missing.append(_row(scanner, e, EXTRA, extra_file_path(data_path, x), MISSING, why))
    for ie in found.lost_indexes:
        n = sum(1 for _, cause, _ in found.drops.values() if cause == f"{LOST_VECTORS}:{ie.file_name}")
        why = (f"{ie.index_type} index file missing from storage; dropped with the {n} data file(s) whose vectors it "
               "held")
        b.add(FileAction(scanner.index_file_path(ie), INDEX, f"{_where(scanner, ie.partition, ie.bucket)}: {why}",
                         ie.file_size))
        missing.append(_row(scanner, ie, INDEX, scanner.index_file_path(ie), MISSING_INDEX, why))
    lost_names = {ie.file_name for ie in found.lost_indexes}
    for k, (p, bucket) in enumerate(rewritten):
        olds = [ie for ie in index_entries if (ie.partition, ie.bucket, ie.index_type) == (p, bucket, DELETION_VECTORS)
                and ie.file_name not in lost_names]
        for ie in olds:
            b.add(FileAction(scanner.index_file_path(ie), INDEX,
                             f"{_where(scanner, ie.partition, ie.bucket)}: holds deletion vectors of dropped files; "
                             "replaced by a new index file without them (left on disk for older snapshots)",
                             ie.file_size))
        if any((p, r.data_file) not in dropped for ie in olds for r in ie.dv_ranges or ()):
            b.creates(FileAction(dv_index_path(table, scanner, p, bucket, f"index-{run_id}-{k}"), INDEX,
                                 f"{_where(scanner, p, bucket)}: the deletion vectors of the remaining files"))
    rows = sum(e.file.row_count for e, _, _ in found.drops.values())
    details.update({"missing": missing, "dropped_entries": len(found.drops), "dropped_rows": rows,
                    "stripped_entries": len(found.strips), "lost_index_files": len(found.lost_indexes)})
    if found.drops:
        b.warn(_pk_warning(table) if table.is_primary_key else
               f"the {rows} row(s) of the {len(found.drops)} dropped file(s) are lost")
        tags = _tags_referencing(table, scanner, {n for _, _, n in found.drops})
        if tags:
            details["tags_still_missing_files"] = tags
            b.warn(f"tag(s) {', '.join(tags)} still reference dropped files and stay unreadable (tags are never "
                   "rewritten; delete them, or restore the files)")
    return b.build(RemoveUnexistingFilesPlan, table, details, base_snapshot=latest.id)


def _row(scanner: TableScanner, e: Any, kind: str, path: str, reason: str, why: str) -> dict[str, Any]:
    """One line of the plan's `missing` detail: partition (typed JSON), bucket, file, kind, reason."""
    name = e.file.file_name if isinstance(e, ManifestEntry) else e.file_name
    row: dict[str, Any] = {"partition": scanner.partition_json(e.partition), "bucket": e.bucket,
                           "file": posixpath.basename(path), "kind": kind, "reason": reason, "why": why}
    if isinstance(e, ManifestEntry):
        row.update({"data_file": name, "level": e.file.level, "rows": e.file.row_count})
    return row


def _rewritten_buckets(index_entries: list[IndexManifestEntry], found: _Missing,
                       dropped: set[tuple[bytes, str]]) -> list[tuple[bytes, int]]:
    """The buckets whose deletion vectors are rewritten: those holding a vector of a dropped file in an index file
    that still exists (sorted: the new index files are numbered in this order)."""
    lost = {ie.file_name for ie in found.lost_indexes}
    out = {(ie.partition, ie.bucket) for ie in index_entries
           if ie.index_type == DELETION_VECTORS and ie.file_name not in lost
           and any((ie.partition, r.data_file) in dropped for r in ie.dv_ranges or ())}
    return sorted(out)


# ---------------------------------------------------------------------------------------------- execution
@register_step(DROP_MISSING)
def _drop_missing(ex: Execution, step: Step) -> None:
    """The planned entries whose files are still missing and still live, dropped in one OVERWRITE commit (module
    docstring); a file that reappeared, or an entry no longer live, is left alone and reported."""
    table, plan, p = ex.table, ex.plan, step.params
    run_id = str(uuid.UUID(str(p["run_id"])))
    scanner = TableScanner(table)
    latest = table.snapshots.latest()
    if latest is None:
        raise StalePlanError(plan.operation, plan.table, ["the table has no snapshot any more"])
    planned_manifests = list(p.get("manifests") or ())
    meta = _read_metadata(table, scanner, latest, bool(planned_manifests))
    if planned_manifests and (latest.id != plan.base_snapshot or
                              sorted(m.file_name for m in meta.lost_manifests) != sorted(planned_manifests)):
        raise StalePlanError(plan.operation, plan.table, [
            "the table moved since the plan or a planned manifest exists again; dropping manifests needs exactly "
            "the planned snapshot: plan again"])
    entries, index_entries = meta.entries, meta.index_entries
    live = {(e.partition, e.bucket, e.file.file_name): e for e in entries}
    live_index = {ie.file_name: ie for ie in index_entries}
    skipped: list[str] = []

    def still_missing(path: str) -> bool:
        return not table.io.exists(path) and not table.io.is_symlink(path)

    lost = [live_index[n] for n in p["lost_indexes"] if n in live_index
            and still_missing(scanner.index_file_path(live_index[n]))]
    lost_names = {ie.file_name for ie in lost}
    deletes: list[ManifestEntry] = []
    for hexp, bucket, name, cause in p["drops"]:
        e = live.get((bytes.fromhex(hexp), int(bucket), name))
        path = None if e is None else scanner.data_file_path(e.partition, e.bucket, e.file)
        if e is None:
            skipped.append(f"{name}: no longer in the latest snapshot")
        elif cause == MISSING and not still_missing(path):  # type: ignore[arg-type]
            skipped.append(f"{name}: the file exists again (kept)")
        elif cause.startswith(LOST_VECTORS) and cause.split(":", 1)[1] not in lost_names:
            skipped.append(f"{name}: its deletion-vector index file exists again (kept)")
        else:
            deletes.append(e.with_(kind=mf.FileKind.DELETE))
    strip_deletes, strip_adds = [], []
    for hexp, bucket, name, gone in p["strips"]:
        e = live.get((bytes.fromhex(hexp), int(bucket), name))
        if e is None:
            skipped.append(f"{name}: no longer in the latest snapshot")
            continue
        data_path = scanner.data_file_path(e.partition, e.bucket, e.file)
        still = [x for x in gone if x in e.file.extra_files and still_missing(extra_file_path(data_path, x))]
        if not still:
            skipped.append(f"{name}: its file index exists again (kept)")
            continue
        strip_deletes.append(e.with_(kind=mf.FileKind.DELETE))
        strip_adds.append(e.with_(file=e.file.with_(extra_files=tuple(x for x in e.file.extra_files
                                                                          if x not in still))))
    if not deletes and not strip_deletes and not lost and not meta.lost_manifests:
        ex.warnings += skipped
        ex.details.update({"dropped_entries": 0, "skipped": skipped})
        return
    committer = FileStoreCommit(table, commit_user=ex.state.get("commit_user"), journal=ex.journal_writes,
                                name_uuid=run_id)
    committer._journal_names()  # before the first new index file is written
    written: list[str] = []
    try:
        removed = {(e.partition, e.file.file_name) for e in deletes}
        added, replaced = _rewrite_vectors(table, scanner, index_entries, lost_names, removed,
                                           [(bytes.fromhex(h), int(b)) for h, b in p["rewritten_buckets"]], run_id,
                                           written)
        changes = CommitChanges(data=tuple(deletes + strip_deletes + strip_adds), index_added=tuple(added),
                                index_deleted=tuple(replaced + lost))
        now_millis = ex.state.get("commit_time_millis")
        if meta.lost_manifests:
            snap = _commit_without(committer, table, changes, meta, plan.base_snapshot, now_millis)
        else:
            snap = committer.commit(changes, "OVERWRITE", plan.base_snapshot, now_millis=now_millis)
    except BaseException:
        if committer.committed is None:
            remove_written(table, written, "an uncommitted repair")
        raise
    ex.snapshot_id = snap.id
    done = {scanner.data_file_path(e.partition, e.bucket, e.file) for e in deletes}
    done |= {extra_file_path(scanner.data_file_path(e.partition, e.bucket, e.file), x)
             for e, a in zip(strip_deletes, strip_adds) for x in set(e.file.extra_files) - set(a.file.extra_files)}
    done |= {scanner.index_file_path(ie) for ie in replaced + lost}
    done |= {table.manifest_path(m.file_name) for m in meta.lost_manifests}
    ex.done += [a for a in step.files if a.path in done]
    ex.written += [FileAction(w, INDEX, "deletion vectors of the remaining files") for w in written]
    ex.warnings += skipped
    ex.details.update({"dropped_manifests": len(meta.lost_manifests),
                       "dropped_entries": len(deletes), "dropped_rows": sum(e.file.row_count for e in deletes),
                       "stripped_entries": len(strip_deletes), "lost_index_files": len(lost), "skipped": skipped})


def _commit_without(committer: FileStoreCommit, table: FileStoreTable, changes: CommitChanges, meta: _Metadata,
                    base_id: int | None, now_millis: int | None) -> Snapshot:
    """The repair snapshot when missing manifests are dropped (Java's RemoveUnexistingManifests, plus this run's
    other changes): its base list holds the manifests that stay, its delta the DELETE / ADD entries, its record count
    the rows the remaining files hold. Only on the planned snapshot: the missing manifests' contents are unknown,
    so a concurrent commit cannot be checked against them (CommitConflictError; nothing written stays)."""
    def check(latest: Snapshot | None) -> None:
        if latest is None or latest.id != base_id:
            raise CommitConflictError(table.identifier, base_id, latest.id if latest else None,
                                      "a snapshot was committed concurrently; dropping missing manifests needs the "
                                      "planned snapshot")

    def build(latest: Snapshot | None, written: Any) -> Snapshot:
        assert latest is not None
        base_name, base_size = committer._write_list(list(meta.kept_manifests), latest, written)
        delta = committer.write_manifests(list(changes.data), latest, written) if changes.data else []
        delta_name, delta_size = committer._write_list(delta, latest, written)
        index_name = committer._index_manifest(changes, latest, written)
        delta_rows = sum(e.file.row_count if e.kind == mf.FileKind.ADD else -e.file.row_count for e in changes.data)
        total = sum(e.file.row_count for e in meta.entries) + delta_rows
        schema_id = table.schema.id
        return Snapshot(
            version=3, id=latest.id + 1, schema_id=schema_id, base_manifest_list=base_name,
            base_manifest_list_size=base_size, delta_manifest_list=delta_name, delta_manifest_list_size=delta_size,
            index_manifest=index_name, commit_user=committer.commit_user, commit_identifier=BATCH_COMMIT_IDENTIFIER,
            commit_kind="OVERWRITE", time_millis=now_millis if now_millis is not None else int(time.time() * 1000),
            total_record_count=total, delta_record_count=total - (latest.total_record_count or 0),
            watermark=latest.watermark, statistics=latest.statistics if latest.schema_id == schema_id else None,
            next_row_id=latest.next_row_id)

    return committer.commit_snapshot(check, build, base_id, delta=changes.data)


def _rewrite_vectors(table: FileStoreTable, scanner: TableScanner, index_entries: list[IndexManifestEntry],
                     lost: set[str], removed: set[tuple[bytes, str]], buckets: list[tuple[bytes, int]], run_id: str,
                     written: list[str]) -> tuple[list[IndexManifestEntry], list[IndexManifestEntry]]:
    """For each bucket in `buckets` (numbered as planned) that still holds a vector of a removed file: one new index
    file with every other vector of the bucket (all its index files together: a bucket's index manifest entries are
    replaced as a whole); (added, replaced) index entries."""
    added: list[IndexManifestEntry] = []
    replaced: list[IndexManifestEntry] = []
    with_card = None
    for k, (part, bucket) in enumerate(buckets):
        olds = [ie for ie in index_entries if (ie.partition, ie.bucket, ie.index_type) == (part, bucket,
                                                                                          DELETION_VECTORS)
                and ie.file_name not in lost]
        if not any((part, r.data_file) in removed for ie in olds for r in ie.dv_ranges or ()):
            continue
        keep: dict[str, DeletionVector] = {}
        for ie in olds:
            for r in ie.dv_ranges or ():
                if (part, r.data_file) not in removed:
                    keep[r.data_file] = scanner.deletion_vector(ie, r)
        replaced += olds
        if not keep:
            continue
        if with_card is None:
            with_card = supports_cardinality(scanner)
        name = f"index-{run_id}-{k}"
        written.append(dv_index_path(table, scanner, part, bucket, name))
        entry, _ = write_dv_index(table, scanner, part, bucket, keep, with_card, name)
        added.append(entry)
    return added, replaced


__all__ = ["RemoveUnexistingFilesPlan", "plan_remove_unexisting_files", "find_missing", "DROP_MISSING"]
