"""Commit: new manifests + manifest lists + index manifest + snapshot, made visible by one atomic
create-if-absent of `snapshot-<N>` (format.md §3.4–3.7).

The one commit path: every snapshot paimon-ops writes goes through `FileStoreCommit.commit_snapshot` — data commits
(`commit`: compaction, partition drops, writes) and manifest compaction's own COMPACT snapshot alike. It re-reads the
latest snapshot on every attempt, runs the caller's conflict check on it, writes the manifests and the snapshot,
retries a lost race from the new latest, and removes what an attempt wrote whenever no snapshot references it — a
lost race, a refused commit (a store without conditional put), an error or an interrupt (only the one deletion path,
`removal.remove_written`, deletes). A journal, when the caller gives one, records the attempt's manifest names
before they are written, so a crash leaves nothing a rerun does not reclaim.

Conflict detection always runs (format.md §3.6 says it is never wrong): the files we delete must still be
live in the latest snapshot, nothing we add may already be there, level >= 1 files of a primary-key bucket
must not overlap, bucket counts may not change (nor the table's `bucket` option: rescaling is its own operation),
and the deletion-vector / hash index files we replace must still be the live ones — otherwise a concurrent writer's
deletions would be lost.
"""
from __future__ import annotations

import logging
import random
import time
import uuid
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Callable, Iterable, Mapping, Sequence

import paimon_ops.format.manifest as mf
from paimon_ops.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    InvalidArgumentError,
    InvalidOptionError,
    PaimonOpsError,
    UnsupportedError,
)
from paimon_ops.format.binary_row import deserialize_row, serialize_row
from paimon_ops.format.manifest import FileKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats
from paimon_ops.format.partition import partition_spec
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.options import COMMIT_MAX_RETRIES, MANIFEST_MERGE_MIN_COUNT
from paimon_ops.table.removal import remove_written
from paimon_ops.table.scan import DELETION_VECTORS, HASH, ManifestStore, TableScanner, merge_entries
from paimon_ops.table.table import LATEST, FileStoreTable

log = logging.getLogger(__name__)

BATCH_COMMIT_IDENTIFIER = 9223372036854775807  # Long.MAX_VALUE, as Java batch writes use
MANIFEST_ROLL_ENTRIES = 50_000


@dataclass(frozen=True)
class CommitChanges:
    """What one commit changes. `data` is applied in order: DELETEs of compacted files, then ADDs."""

    data: tuple[ManifestEntry, ...] = ()
    index_added: tuple[IndexManifestEntry, ...] = ()
    index_deleted: tuple[IndexManifestEntry, ...] = ()
    changelog: tuple[ManifestEntry, ...] = ()
    # Partitions (BinaryRow bytes) that must hold no live file after this commit (a partition drop): a file written
    # into one of them concurrently is a conflict, never silently left behind or silently dropped.
    emptied_partitions: tuple[bytes, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.data or self.index_added or self.index_deleted or self.changelog)


@dataclass(frozen=True)
class PartitionStatistics:
    """What one commit changed in one partition (Java's PartitionStatistics, the REST commit's `statistics`): sums
    over the delta's entries, ADD positive and DELETE negative."""

    spec: Mapping[str, str]          # key -> value as in the partition directory
    record_count: int
    file_size_in_bytes: int
    file_count: int
    last_file_creation_time: int     # epoch millis of the newest file the delta names
    total_buckets: int

    def to_json(self) -> dict[str, Any]:
        return {"spec": dict(self.spec), "recordCount": self.record_count, "fileSizeInBytes": self.file_size_in_bytes,
                "fileCount": self.file_count, "lastFileCreationTime": self.last_file_creation_time,
                "totalBuckets": self.total_buckets}


@dataclass(frozen=True)
class SnapshotCommit:
    """One snapshot to make visible, with its preconditions (the design anchor is pyiceberg's
    `commit_table(table, requirements, updates)`): `base_snapshot` is the latest snapshot the attempt was built on
    (its successor id is `snapshot.id`; REST sends its uuid as `baseSnapshotUuid`). `delta` are the data entries the
    snapshot adds and deletes, from which `statistics` and `added_partitions` are derived — only when a backend asks
    (the filesystem backend never does, so a commit costs nothing per file there). `tmp_token` names the temporary
    file of a create-if-absent (crash leftovers, see table.commit)."""

    snapshot: Snapshot
    base_snapshot: Snapshot | None
    table: FileStoreTable = field(repr=False, compare=False)
    delta: Sequence[ManifestEntry] = field(default=(), repr=False, compare=False)
    tmp_token: str | None = None

    @cached_property
    def statistics(self) -> tuple[PartitionStatistics, ...]:
        """One PartitionStatistics per partition the delta touches (Java's `PartitionEntry.merge` of the delta)."""
        sums: dict[bytes, list[int]] = {}
        for e in self.delta:
            sign = 1 if e.kind == FileKind.ADD else -1
            s = sums.setdefault(e.partition, [0, 0, 0, 0, 0])
            s[0] += sign * e.file.row_count
            s[1] += sign * e.file.file_size
            s[2] += sign
            s[3] = max(s[3], e.file.creation_time or 0)  # (the millis Paimon writes: local time)
            s[4] = max(s[4], e.total_buckets)
        return tuple(PartitionStatistics(self._spec(p), *v) for p, v in sums.items())

    @cached_property
    def added_partitions(self) -> tuple[Mapping[str, str], ...]:
        """The partitions with ADD entries (Java's AddPartitionCommitCallback registers these in the metastore)."""
        seen = dict.fromkeys(e.partition for e in self.delta if e.kind == FileKind.ADD)
        return tuple(self._spec(p) for p in seen)

    def _spec(self, partition: bytes) -> Mapping[str, str]:
        schema = self.table.schema
        keys = list(schema.partition_keys)
        if not keys:
            return {}
        types = [f.type.with_nullable(True) for f in schema.fields_of(keys)]
        opts = self.table.options
        return partition_spec(deserialize_row(partition, types, "partition"), keys, types, opts.partition_legacy_name,
                              opts.partition_default_name)


@dataclass
class _Written:
    """Files written by one attempt, removed again if the attempt loses the race."""

    names: list[str] = field(default_factory=list)


def check_commit_options(table: FileStoreTable) -> None:
    """Every option a commit reads, parsed now (InvalidOptionError names it): a run that writes files before it
    commits (compaction) checks them before its first write, so a bad value never surfaces after it."""
    opts = table.options
    mf.avro_codec_from_options(opts)
    opts.get(COMMIT_MAX_RETRIES)
    opts.get(MANIFEST_MERGE_MIN_COUNT)


class FileStoreCommit:
    def __init__(self, table: FileStoreTable, commit_user: str | None = None, max_retries: int | None = None,
                 store: ManifestStore | None = None, journal: Any = None, name_uuid: str | None = None):
        self.table = table
        self.scanner = TableScanner(table, store)
        self.store = self.scanner.store
        self.commit_user = commit_user or str(uuid.uuid4())
        self._uuid = name_uuid or str(uuid.uuid4())
        self._counters = {"manifest": 0, "manifest-list": 0, "index-manifest": 0}
        self.journal = journal  # lifecycle.journal.Journal (or an Execution's journal_writes): crash leftovers
        self._journaled = False
        self.committed: Snapshot | None = None
        opts = table.options
        check_commit_options(table)
        self.max_retries = max_retries if max_retries is not None else opts.get(COMMIT_MAX_RETRIES)
        self.codec, self.codec_level = mf.avro_codec_from_options(opts)

    # ------------------------------------------------------------------ naming
    def _new_name(self, kind: str) -> str:
        n = self._counters[kind]
        self._counters[kind] = n + 1
        return f"{kind}-{self._uuid}-{n}"

    # ------------------------------------------------------------------ public
    def commit(self, changes: CommitChanges, kind: str, base_snapshot_id: int | None,
               identifier: int = BATCH_COMMIT_IDENTIFIER, properties: dict[str, str] | None = None,
               now_millis: int | None = None, watermark: int | None = None) -> Snapshot:
        """Commit `changes` planned against `base_snapshot_id`; retries lost races, raises on conflicts. `watermark`:
        the writer's, kept as Java keeps it (the larger of it and the latest snapshot's)."""
        if kind not in ("APPEND", "COMPACT", "OVERWRITE", "ANALYZE"):
            raise InvalidArgumentError(f"unknown commit kind {kind}")
        return self.commit_snapshot(
            lambda latest: self.check_conflicts(changes, latest, base_snapshot_id, kind),
            lambda latest, written: self._build_snapshot(changes, kind, latest, identifier, properties, written,
                                                         now_millis, watermark),
            base_snapshot_id, delta=changes.data)

    def commit_snapshot(self, check: Callable[[Snapshot | None], None],
                        build: Callable[[Snapshot | None, _Written], Snapshot], base_snapshot_id: int | None,
                        delta: Sequence[ManifestEntry] = ()) -> Snapshot:
        """The one commit loop (see the module docstring): `check(latest)` raises on a conflict; `build(latest,
        written)` writes the attempt's manifests (recording each in `written`) and returns the snapshot to create;
        `delta` are its data entries (per-partition statistics and metastore partitions for the catalog). The
        snapshot is made visible by the table's catalog (`_make_visible`)."""
        attempt = 0
        while True:
            latest = self.table.snapshots.latest()
            check(latest)
            written = _Written()
            self._journal_names()
            try:
                snapshot = build(latest, written)
            except BaseException:
                self._cleanup(written)
                raise
            if snapshot.uuid is None:  # every attempt is a new snapshot: catalogs name it as the next one's base
                snapshot = snapshot.with_(uuid=str(uuid.uuid4()))
            try:
                won = self._make_visible(snapshot, latest, delta)
            except BaseException as e:
                # Ambiguous (an I/O error, an interrupt mid-write) or refused (a store without conditional put): our
                # snapshot is either there — committed — or not, and then nothing references what we wrote.
                ours = self._is_ours(snapshot)
                if ours is None:  # cannot tell: keep everything (orphans at worst, never a broken snapshot)
                    raise CommitOutcomeUnknownError(f"commit of snapshot {snapshot.id} on {self.table.identifier} "
                                                    f"failed ({e}) and whether it was written cannot be read now; its "
                                                    "new files are kept (orphans if it was not)") from e
                if ours:
                    self.committed = snapshot
                    if not isinstance(e, Exception):
                        self._hint(snapshot)
                        raise
                    won = True
                else:
                    self._cleanup(written)
                    if isinstance(e, OSError) and not isinstance(e, PaimonOpsError):
                        raise PaimonOpsError(f"commit of snapshot {snapshot.id} on {self.table.identifier} failed: "
                                             f"{e}; nothing was committed") from e
                    raise
            if won:
                self.committed = snapshot
                self._hint(snapshot)
                log.info("committed snapshot %s (%s) on %s", snapshot.id, snapshot.commit_kind, self.table.identifier)
                return snapshot
            self._cleanup(written)
            attempt += 1
            if attempt > self.max_retries:
                raise CommitConflictError(self.table.identifier, base_snapshot_id, snapshot.id,
                                          f"lost the race for a snapshot id {attempt} times")
            # Exponential back-off with jitter, as Java 1.3+ does.
            time.sleep(min(0.01 * 2 ** attempt, 2.0) * (1 + random.random() * 0.2))

    def _make_visible(self, snapshot: Snapshot, base: Snapshot | None, delta: Sequence[ManifestEntry]) -> bool:
        """Through the table's catalog (its lock, its server, its metastore partitions); a table opened by location
        alone commits by create-if-absent of snapshot-<id>, as the filesystem catalog does."""
        token = self._uuid if self._journaled else None
        catalog = self.table.catalog
        if catalog is None:
            return self.table.snapshots.commit(snapshot, tmp_token=token)
        return catalog.commit_snapshot(self.table, SnapshotCommit(snapshot, base, self.table, delta, token))

    def _is_ours(self, snapshot: Snapshot) -> bool | None:
        """Whether the snapshot file now under our id is ours; None when it cannot be read. A catalog that owns the
        history (REST) says itself (a request may still be in flight on its server: unknown)."""
        catalog = self.table.catalog
        if catalog is not None and catalog.owns_history(self.table):
            return catalog.is_committed(self.table, snapshot)
        try:
            stored = self.table.snapshots.try_snapshot(snapshot.id)
        except Exception:  # noqa: BLE001 - unreadable now: unknown
            return None
        return stored is not None and stored.uuid == snapshot.uuid and stored.commit_user == snapshot.commit_user and\
            stored.commit_identifier == snapshot.commit_identifier and stored.commit_kind == snapshot.commit_kind\
            and stored.base_manifest_list == snapshot.base_manifest_list

    def _hint(self, snapshot: Snapshot) -> None:
        catalog = self.table.catalog
        if catalog is not None and catalog.owns_history(self.table):
            return  # the catalog owns the history: paimon-ops writes no hint of it
        try:
            self.table.snapshots.write_latest_hint(snapshot.id)
        except Exception as e:  # noqa: BLE001 - committed: a hint is advisory, never a reason to undo
            log.warning("could not write the LATEST hint %s: %s", snapshot.id, e)

    def _journal_names(self) -> None:
        """Record, before the first manifest is written, that files named with this commit's UUID appear in
        manifest/ (and index/): a crash before the snapshot leaves them to the next run."""
        if self.journal is None or self._journaled:
            return
        pairs = [(self.table.manifest_dir, self._uuid), (self.table.index_dir, self._uuid),
                 (self.table.snapshots.dir, self._uuid)]  # (the snapshot's temporary file)
        if callable(self.journal):
            self.journal(pairs)
        else:
            self.journal.add_writes(pairs)
        self._journaled = True

    def bucket_option(self) -> int | None:
        """The table's `bucket` option, read now from its latest schema (not the cached one): 0 is not a bucket
        count Paimon accepts (InvalidOptionError naming where it is set)."""
        schema = self.table.schemas.latest()
        if schema is None:
            return None
        raw = {**schema.options, **self.table.options_override}.get("bucket")
        if raw is None:
            return -1
        where = f"table {self.table.identifier} ({self.table.schemas.path(schema.id)})"
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise InvalidOptionError("bucket", raw, "an integer", where) from None
        if value == 0 or value < -2:
            raise InvalidOptionError("bucket", raw, "-1 (dynamic or unaware), -2 (postpone) or a positive bucket "
                                                    "count", where)
        return value

    # ------------------------------------------------------------------ conflicts
    def check_conflicts(self, changes: CommitChanges, latest: Snapshot | None, base_snapshot_id: int | None,
                        kind: str) -> None:
        table = self.table
        ident = table.identifier
        latest_id = latest.id if latest else None

        def conflict(detail: str) -> CommitConflictError:
            return CommitConflictError(ident, base_snapshot_id, latest_id, detail)

        # Files go into buckets of the table's bucket count, read now: a commit never rescales a table whose
        # `bucket` option changed since its files were written (that is Paimon's rescale, its own operation).
        bucket_now = self.bucket_option() if any(e.kind == FileKind.ADD and e.total_buckets > 0
                                                 for e in changes.data) else None
        if bucket_now is not None and bucket_now > 0:
            for e in changes.data:
                if e.kind == FileKind.ADD and e.total_buckets > 0 and e.total_buckets != bucket_now:
                    raise UnsupportedError(
                        f"{ident}: the table's bucket option is now {bucket_now}, but this commit puts "
                        f"{e.file.file_name} into bucket {e.bucket} of {e.total_buckets}: rescaling is its own "
                        "operation (Paimon's rescale procedure or INSERT OVERWRITE), never a side effect of a "
                        "compaction. Nothing was committed")

        # Delta self-check: the same file may not be added and deleted in one commit.
        seen_add = {e.identifier for e in changes.data if e.kind == FileKind.ADD}
        for e in changes.data:
            if e.kind == FileKind.DELETE and e.identifier in seen_add:
                raise conflict(f"file {e.file.file_name} is both added and deleted by this commit")

        live = self.scanner.live_entries(latest) if latest else {}
        touched_partitions = {e.partition for e in changes.data} | {e.partition for e in changes.index_added}
        merged = {k: v for k, v in live.items() if v.partition in touched_partitions}
        for e in changes.data:
            if e.kind == FileKind.DELETE:
                if e.identifier not in merged:
                    raise conflict(f"file {e.file.file_name} (bucket {e.bucket}, level {e.file.level}) is no longer "
                                   "live: another job compacted or deleted it")
                del merged[e.identifier]
            else:
                if e.identifier in merged:
                    raise conflict(f"file {e.file.file_name} is already live")
                merged[e.identifier] = e

        if changes.emptied_partitions:
            emptied = set(changes.emptied_partitions)
            left = [e for e in merged.values() if e.partition in emptied]
            if left:
                raise conflict(f"file {left[0].file.file_name} (bucket {left[0].bucket}) was written into a partition "
                               "being dropped, after the drop was planned")
            left_index = [ie for ie in (self.scanner.index_entries(latest) if latest else [])
                          if ie.partition in emptied and ie.file_name not in {d.file_name for d in changes.index_deleted}]
            if left_index:
                raise conflict(f"index file {left_index[0].file_name} was written into a partition being dropped, "
                               "after the drop was planned")

        if kind != "OVERWRITE":
            existing_buckets: dict[bytes, int] = {}
            for e in live.values():
                if e.total_buckets > 0:
                    existing_buckets.setdefault(e.partition, e.total_buckets)
            for e in changes.data:
                if e.kind == FileKind.ADD and e.total_buckets > 0:
                    prev = existing_buckets.get(e.partition)
                    if prev is not None and prev != e.total_buckets:
                        raise conflict(f"bucket count of a partition changed from {prev} to {e.total_buckets}")

        if table.is_primary_key:
            self._check_lsm(merged.values(), {(e.partition, e.bucket) for e in changes.data}, conflict)

        # Index files we replace or remove must still be the live ones.
        live_index = {ie.file_name: ie for ie in self.scanner.index_entries(latest)} if latest else {}
        deleted_names = {ie.file_name for ie in changes.index_deleted}
        for ie in changes.index_deleted:
            if ie.file_name not in live_index:
                raise conflict(f"index file {ie.file_name} ({ie.index_type}, bucket {ie.bucket}) was replaced "
                               "concurrently; our deletion vectors would drop another writer's deletes")
        for ie in changes.index_added:
            key = self._bucket_key(ie)
            if key is None:
                continue
            for cur in live_index.values():
                if self._bucket_key(cur) == key and cur.file_name not in deleted_names:
                    raise conflict(f"bucket {ie.bucket} got a new {ie.index_type} index file {cur.file_name} "
                                   "concurrently")
        # Rows of the files we delete may have been marked deleted concurrently: our rewrite, made from the
        # base snapshot's vectors, would bring them back. The DV files of every bucket we delete from must be
        # exactly those of the base snapshot.
        touched = {(e.partition, e.bucket) for e in changes.data if e.kind == FileKind.DELETE}
        if touched and latest is not None and base_snapshot_id is not None and latest.id != base_snapshot_id:
            def dv_files(entries: Iterable[IndexManifestEntry]) -> dict[tuple[bytes, int], frozenset[str]]:
                out: dict[tuple[bytes, int], set[str]] = {}
                for ie in entries:
                    if ie.index_type == DELETION_VECTORS and (ie.partition, ie.bucket) in touched:
                        out.setdefault((ie.partition, ie.bucket), set()).add(ie.file_name)
                return {k: frozenset(v) for k, v in out.items()}

            base = table.snapshots.try_snapshot(base_snapshot_id)
            now_dvs = dv_files(live_index.values())
            if base is None:
                if now_dvs:
                    raise conflict(f"base snapshot {base_snapshot_id} expired; cannot verify the deletion vectors "
                                   "of the buckets this commit rewrites")
            elif dv_files(self.scanner.index_entries(base)) != now_dvs:
                raise conflict("deletion vectors of a bucket this commit rewrites changed concurrently; rows "
                               "another writer deleted would come back")

        # After this commit no deletion vector may point at a file that is not live.
        live_names = {(e.partition, e.file.file_name) for e in merged.values()}
        result_index = [ie for ie in live_index.values() if ie.file_name not in deleted_names] + list(changes.index_added)
        for ie in result_index:
            if ie.index_type == DELETION_VECTORS and ie.dv_ranges and ie.partition in touched_partitions:
                for r in ie.dv_ranges:
                    if (ie.partition, r.data_file) not in live_names:
                        raise conflict(f"deletion vector for {r.data_file} (index file {ie.file_name}) would point "
                                       "at a file that is not live after this commit")

    def _check_lsm(self, entries: Iterable[ManifestEntry], buckets: set[tuple[bytes, int]], conflict) -> None:
        schema = self.table.schema
        key_types = [f.type for f in schema.fields_of(schema.trimmed_primary_keys)]
        groups: dict[tuple[bytes, int, int], list[tuple[tuple, tuple, str]]] = {}
        for e in entries:
            if e.file.level < 1 or (e.partition, e.bucket) not in buckets:
                continue
            lo = tuple(deserialize_row(e.file.min_key, key_types, "min key"))
            hi = tuple(deserialize_row(e.file.max_key, key_types, "max key"))
            groups.setdefault((e.partition, e.bucket, e.file.level), []).append((lo, hi, e.file.file_name))
        for (_, bucket, level), files in groups.items():
            files.sort(key=lambda t: t[0])
            for a, b in zip(files, files[1:]):
                if not a[1] < b[0]:
                    raise conflict(f"LSM conflict in bucket {bucket} level {level}: key ranges of {a[2]} and {b[2]} "
                                   "overlap")

    # ------------------------------------------------------------------ writing
    def _write(self, name: str, data: bytes, written: _Written) -> int:
        written.names.append(name)  # before writing: a half-written file is cleaned up too (delete is quiet)
        self.table.io.write_bytes(self.table.manifest_path(name), data)
        return len(data)

    def _cleanup(self, written: _Written) -> None:
        """Remove what an attempt wrote that no snapshot references (the one deletion path; never raises)."""
        remove_written(self.table, [self.table.manifest_path(n) for n in written.names], "an uncommitted attempt")
        written.names.clear()

    def write_manifests(self, entries: Sequence[ManifestEntry], latest: Snapshot | None,
                        written: _Written) -> list[ManifestFileMeta]:
        field_set = self.store.field_set("manifest", latest)
        metas = []
        for start in range(0, len(entries), MANIFEST_ROLL_ENTRIES):
            chunk = entries[start:start + MANIFEST_ROLL_ENTRIES]
            name = self._new_name("manifest")
            size = self._write(name, mf.write_manifest(list(chunk), field_set, self.codec, self.codec_level), written)
            metas.append(self._manifest_meta(name, size, chunk))
        return metas

    def _manifest_meta(self, name: str, size: int, entries: Sequence[ManifestEntry]) -> ManifestFileMeta:
        schema = self.table.schema
        ptypes = [f.type.with_nullable(True) for f in schema.fields_of(schema.partition_keys)]
        added = sum(1 for e in entries if e.kind == FileKind.ADD)
        # row-id range (1.4+): only when every entry has a first row id (Java's rule), else unknown
        with_ids = entries and all(e.file.first_row_id is not None for e in entries)
        return ManifestFileMeta(
            file_name=name, file_size=size, num_added_files=added, num_deleted_files=len(entries) - added,
            partition_stats=self._partition_stats({e.partition for e in entries}, ptypes),
            schema_id=max((e.file.schema_id for e in entries), default=schema.id),
            min_bucket=min((e.bucket for e in entries), default=None),
            max_bucket=max((e.bucket for e in entries), default=None),
            min_level=min((e.file.level for e in entries), default=None),
            max_level=max((e.file.level for e in entries), default=None),
            min_row_id=min(e.file.first_row_id for e in entries) if with_ids else None,  # type: ignore[type-var]
            max_row_id=max(e.file.first_row_id + e.file.row_count - 1 for e in entries)  # type: ignore[operator]
            if with_ids else None,
        )

    @staticmethod
    def _partition_stats(partitions: set[bytes], ptypes: list) -> SimpleStats:
        n = len(ptypes)
        if n == 0:
            return mf.EMPTY_STATS
        rows = [deserialize_row(p, ptypes, "partition") for p in partitions]
        mins, maxs, nulls = [], [], []
        for i in range(n):
            vals = [r[i] for r in rows if r[i] is not None]
            mins.append(min(vals) if vals else None)
            maxs.append(max(vals) if vals else None)
            nulls.append(len(rows) - len(vals))
        return SimpleStats(serialize_row(mins, ptypes), serialize_row(maxs, ptypes), tuple(nulls))

    def _write_list(self, metas: list[ManifestFileMeta], latest: Snapshot | None, written: _Written) -> tuple[str, int]:
        name = self._new_name("manifest-list")
        field_set = self.store.field_set("manifest_list", latest)
        size = self._write(name, mf.write_manifest_list(metas, field_set, self.codec, self.codec_level), written)
        return name, size

    def _base_metas(self, latest: Snapshot | None, written: _Written) -> list[ManifestFileMeta]:
        if latest is None:
            return []
        metas = list(self.store.manifest_list(latest.base_manifest_list)) +\
            list(self.store.manifest_list(latest.delta_manifest_list))
        merge_min = self.table.options.get(MANIFEST_MERGE_MIN_COUNT)
        if len(metas) < merge_min:
            return metas
        # Full merge of the base: fewer, larger manifests keep scans fast.
        entries = [e for m in metas for e in self.store.manifest(m.file_name)]
        adds, deletes = merge_entries(entries, f"snapshot {latest.id}")
        return self.write_manifests(list(deletes.values()) + list(adds.values()), latest, written)

    def _index_manifest(self, changes: CommitChanges, latest: Snapshot | None, written: _Written) -> str | None:
        prev = latest.index_manifest if latest else None
        if not changes.index_added and not changes.index_deleted:
            return prev
        current = self.scanner.index_entries(latest) if latest else []
        deleted = {ie.file_name for ie in changes.index_deleted}
        out = [ie for ie in current if ie.file_name not in deleted]
        # Java's IndexManifestFileHandler: a bucketed table's DV and hash index files are keyed by (partition, bucket,
        # type) — the added file replaces the bucket's previous one (check_conflicts made sure we delete it) — and a
        # bucket holds ONE: Java never rolls them (deletion-vector.index-file.target-size is for unaware-bucket
        # tables only) and its combiner keeps only the last of several. A second file for one bucket would lose the
        # first one's vectors: refused. Other index files are keyed by file name.
        replaced: set[tuple[bytes, int, str]] = set()
        for ie in changes.index_added:
            key = self._bucket_key(ie)
            if key is None:
                continue
            if key in replaced:
                raise PaimonOpsError(
                    f"{self.table.identifier}: a commit may not add two {ie.index_type} index files for bucket "
                    f"{ie.bucket} of partition {self.scanner.partition_json(ie.partition)} (the bucket keeps one; "
                    "the other's entries would be lost); nothing was committed")
            replaced.add(key)
        left = next((c for c in out if self._bucket_key(c) in replaced), None)
        if left is not None:  # check_conflicts refuses this first; kept here for callers that build their own check
            raise PaimonOpsError(
                f"{self.table.identifier}: this commit adds a {left.index_type} index file for bucket {left.bucket} "
                f"of partition {self.scanner.partition_json(left.partition)} but does not delete its live index "
                f"file {left.file_name}, whose entries would be lost; nothing was committed")
        out += [replace(ie, kind=FileKind.ADD) for ie in changes.index_added]
        if not out:
            return None
        name = self._new_name("index-manifest")
        field_set = self.store.field_set("index_manifest", latest)
        self._write(name, mf.write_index_manifest(out, field_set, self.codec, self.codec_level), written)
        return name

    def _bucket_key(self, ie: IndexManifestEntry) -> tuple[bytes, int, str] | None:
        """(partition, bucket, type) when index files of this type are kept one per bucket, else None."""
        if ie.index_type not in (DELETION_VECTORS, HASH) or (ie.index_type == DELETION_VECTORS
                                                             and self.table.is_bucket_unaware):
            return None
        return ie.partition, ie.bucket, ie.index_type

    def _build_snapshot(self, changes: CommitChanges, kind: str, latest: Snapshot | None, identifier: int,
                        properties: dict[str, str] | None, written: _Written, now_millis: int | None,
                        watermark: int | None = None) -> Snapshot:
        base_metas = self._base_metas(latest, written)
        base_name, base_size = self._write_list(base_metas, latest, written)
        delta_metas = self.write_manifests(list(changes.data), latest, written) if changes.data else []
        delta_name, delta_size = self._write_list(delta_metas, latest, written)
        changelog_name = changelog_size = None
        changelog_rows = None
        if changes.changelog:
            cl_metas = self.write_manifests(list(changes.changelog), latest, written)
            changelog_name, changelog_size = self._write_list(cl_metas, latest, written)
            changelog_rows = sum(e.file.row_count for e in changes.changelog)
        index_name = self._index_manifest(changes, latest, written)
        delta_rows = sum(e.file.row_count if e.kind == FileKind.ADD else -e.file.row_count for e in changes.data)
        schema_id = self.table.schema.id
        prev_total = (latest.total_record_count or 0) if latest else 0
        return Snapshot(
            version=3,
            id=(latest.id + 1) if latest else 1,
            schema_id=schema_id,
            base_manifest_list=base_name,
            base_manifest_list_size=base_size,
            delta_manifest_list=delta_name,
            delta_manifest_list_size=delta_size,
            changelog_manifest_list=changelog_name,
            changelog_manifest_list_size=changelog_size,
            index_manifest=index_name,
            commit_user=self.commit_user,
            commit_identifier=identifier,
            commit_kind=kind,
            time_millis=now_millis if now_millis is not None else int(time.time() * 1000),
            total_record_count=prev_total + delta_rows,
            delta_record_count=delta_rows,
            changelog_record_count=changelog_rows,
            watermark=_max_watermark(watermark, latest.watermark if latest else None),
            statistics=latest.statistics if latest and latest.schema_id == schema_id else None,
            properties=properties or None,
            next_row_id=latest.next_row_id if latest else None,
        )


def _max_watermark(given: int | None, latest: int | None) -> int | None:
    """Java's FileStoreCommitImpl: the commit's watermark, never below the latest snapshot's."""
    if given is None or latest is None:
        return latest if given is None else given
    return max(given, latest)


__all__ = ["CommitChanges", "FileStoreCommit", "SnapshotCommit", "PartitionStatistics", "BATCH_COMMIT_IDENTIFIER",
           "LATEST"]
