"""Test tooling for the lifecycle tests: a fast in-process table history builder on our own writer and commit
(writes, COMPACT rewrites, metadata-only level upgrades, deletion vectors, tags), and the invariants every
destructive operation must keep:

* every file referenced by a retained snapshot, tag or long-lived changelog exists;
* reads of retained snapshots and tags never change (our raw reader, deletion vectors applied);
* nothing leaks: every file on disk is metadata or referenced (checked where the operations promise it).
"""
from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from paimon_ops.format import manifest as mf
from paimon_ops.format.datafile import SEQUENCE_NUMBER, VALUE_KIND
from paimon_ops.format.deletion_vectors import DeletionVector, write_dv_index_file
from paimon_ops.format.manifest import DeletionVectorMeta, FileKind, IndexManifestEntry, ManifestEntry
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.table.commit import CommitChanges, FileStoreCommit
from paimon_ops.table.reader import read_file
from paimon_ops.table.scan import DELETION_VECTORS, ManifestStore, TableScanner, merge_entries
from paimon_ops.table.table import FileStoreTable
from paimon_ops.table.writer import DataFileWriteSpec, FileNamer, TableWriter, create_table, write_file

DAY_MS = 86_400_000
HOUR_MS = 3_600_000
T0 = 1_790_000_000_000  # a fixed "now" in 2026 for simulated commit times

PK_FIELDS = [("pt", "STRING"), ("k", "INT"), ("v", "STRING")]


def fast_tmpdir(prefix: str = "lc-") -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def new_table(warehouse: str, name: str = "db.t", kind: str = "pk", options: dict | None = None) -> FileStoreTable:
    """kind: 'pk' (partitioned, 2 buckets), 'dv' (pk + deletion vectors, 1 bucket), 'append' (unaware bucket)."""
    opts = {"file.compression": "none"}
    if kind == "pk":
        opts.update({"bucket": "2"})
        return create_table(warehouse, name, PK_FIELDS, ["pt"], ["pt", "k"], {**opts, **(options or {})})
    if kind == "dv":
        opts.update({"bucket": "1", "deletion-vectors.enabled": "true"})
        return create_table(warehouse, name, PK_FIELDS, ["pt"], ["pt", "k"], {**opts, **(options or {})})
    if kind == "append":
        opts.update({"bucket": "-1"})
        return create_table(warehouse, name, PK_FIELDS, ["pt"], [], {**opts, **(options or {})})
    raise ValueError(kind)


def rows_of(t: pa.Table) -> tuple:
    return tuple(sorted(tuple(r.values()) for r in t.to_pylist()))


# ---------------------------------------------------------------------------------------------- references


@dataclass
class Refs:
    """Absolute paths referenced by retained owners, with one owner each (for messages)."""

    files: dict[str, str] = field(default_factory=dict)
    # Decoupled changelog with producer 'none': files DELETEd in a retained snapshot's or changelog's delta are
    # deleted when that changelog expires (APPEND files double as the changelog; others may have been kept by a
    # since-deleted tag), maintenance.md §2.8.
    pending: dict[str, str] = field(default_factory=dict)

    def add(self, path: str, owner: str) -> None:
        self.files.setdefault(path, owner)


def snapshot_refs(table: FileStoreTable, scanner: TableScanner, s: Snapshot, owner: str, refs: Refs, kind: str) -> None:
    """kind: 'snapshot' (everything incl. changelog files), 'tag' (tags do not protect changelogs),
    'changelog' (long-lived changelog: its changelog manifest list and files)."""
    store = scanner.store
    if kind == "changelog":
        if s.changelog_manifest_list:
            refs.add(table.manifest_path(s.changelog_manifest_list), owner)
            for m in store.manifest_list(s.changelog_manifest_list, owner):
                refs.add(table.manifest_path(m.file_name), owner)
                for e in store.manifest(m.file_name, owner):
                    refs.add(scanner.data_file_path(e.partition, e.bucket, e.file), owner)
        elif table.options.changelog_producer == "none":
            # the changelog of an APPEND commit is the files it added (maintenance.md §2.8); snapshot expiry keeps
            # the changelog's base and delta lists for changelog expiry to delete
            for lst in (s.base_manifest_list, s.delta_manifest_list):
                refs.add(table.manifest_path(lst), owner)
                for m in store.manifest_list(lst, owner):
                    refs.add(table.manifest_path(m.file_name), owner)
                    if lst != s.delta_manifest_list:
                        continue
                    for e in store.manifest(m.file_name, owner):
                        if e.kind == FileKind.ADD and e.file.file_source in (None, 0):
                            p = scanner.data_file_path(e.partition, e.bucket, e.file)
                            refs.add(p, owner)
                            for x in e.file.extra_files:
                                refs.add(posixpath.join(posixpath.dirname(p), x), owner)
        return
    for lst in (s.base_manifest_list, s.delta_manifest_list):
        refs.add(table.manifest_path(lst), owner)
        for m in store.manifest_list(lst, owner):
            refs.add(table.manifest_path(m.file_name), owner)
    for e in scanner.live_entries(s).values():
        p = scanner.data_file_path(e.partition, e.bucket, e.file)
        refs.add(p, owner)
        for x in e.file.extra_files:
            refs.add(posixpath.join(posixpath.dirname(p), x), owner)
    if s.index_manifest:
        refs.add(table.manifest_path(s.index_manifest), owner)
        for ie in store.index_manifest(s.index_manifest, owner):
            refs.add(scanner.index_file_path(ie), owner)
    if s.statistics:
        refs.add(posixpath.join(table.statistics_dir, s.statistics), owner)
    if kind == "snapshot" and s.changelog_manifest_list:
        snapshot_refs(table, scanner, s, owner, refs, "changelog")


_STORES: dict[str, ManifestStore] = {}


def retained_refs(table: FileStoreTable, cache: bool = True) -> Refs:
    """Everything referenced by the retained snapshots, tags and long-lived changelogs of every branch.
    Raises (MissingFileError) if a manifest of a retained owner is gone. Decoded manifests may come from a cache
    (names are never reused); the existence of every referenced path, manifests included, is checked by the
    caller on disk."""
    refs = Refs()
    main = table.for_branch("main") if table.branch != "main" else table
    for bt in [main] + [_branch_or_none(main, b) for b in main.branches()]:
        if bt is None:
            continue  # what an interrupted branch creation or deletion leaves: no schema, no history
        store = _STORES.get(bt.root) if cache else None
        if store is None:
            store = ManifestStore(bt, capacity=100_000)
            if cache:
                if len(_STORES) > 8:
                    _STORES.clear()
                _STORES[bt.root] = store
        scanner = TableScanner(bt, store)
        lab = "" if bt.branch == "main" else f"{bt.branch}:"
        from paimon_ops.lifecycle.expire import resolve_settings
        cfg = resolve_settings(bt)
        if cfg.decoupled and cfg.changelog_producer == "none":
            owners = [bt.snapshots.snapshot(i) for i in bt.snapshots.list_ids()] +\
                [bt.changelogs.snapshot(i) for i in bt.changelogs.list_ids()]
            for s in owners:
                # changelog expiry (producer 'none') deletes what a changelog's delta DELETEs, unless a tag protects it
                for e in store.entries_of_list(s.delta_manifest_list):
                    if e.kind == FileKind.DELETE:
                        p = scanner.data_file_path(e.partition, e.bucket, e.file)
                        refs.pending[p] = f"delta of {s.id}"
                        for x in e.file.extra_files:
                            refs.pending[posixpath.join(posixpath.dirname(p), x)] = f"delta of {s.id}"
        for sid in bt.snapshots.list_ids():
            snapshot_refs(bt, scanner, bt.snapshots.snapshot(sid), f"{lab}snapshot {sid}", refs, "snapshot")
        for name, t in bt.tags.tags():
            snapshot_refs(bt, scanner, t, f"{lab}tag {name}", refs, "tag")
        for cid in bt.changelogs.list_ids():
            snapshot_refs(bt, scanner, bt.changelogs.snapshot(cid), f"{lab}changelog {cid}", refs, "changelog")
    return refs


def _branch_or_none(main: FileStoreTable, branch: str) -> FileStoreTable | None:
    """The branch, or None when it has no schema file and no history (an interrupted create or delete)."""
    root = posixpath.join(main.root, "branch", f"branch-{branch}")
    if os.path.isdir(os.path.join(root, "schema")) and any(n.startswith("schema-")
                                                            for n in os.listdir(os.path.join(root, "schema"))):
        return main.for_branch(branch)
    history = [n for sub in ("snapshot", "tag", "changelog") if os.path.isdir(os.path.join(root, sub))
               for n in os.listdir(os.path.join(root, sub)) if n.startswith(("snapshot-", "tag-", "changelog-"))]
    assert not history, f"branch {branch} holds {history} but no schema"
    return None


def all_files(root: str) -> set[str]:
    out = set()
    for d, _, files in os.walk(root):
        for f in files:
            out.add(os.path.join(d, f))
    return out


def rel_files(root: str) -> set[str]:
    return {os.path.relpath(p, root) for p in all_files(root)}


def is_metadata(table: FileStoreTable, path: str) -> bool:
    rel = os.path.relpath(path, table.root)
    parts = rel.split(os.sep)
    if parts[0] == "branch":
        parts = parts[2:]
    return parts[0] in ("schema", "snapshot", "tag", "consumer", "changelog")


def check_references(table: FileStoreTable) -> Refs:
    refs = retained_refs(table)
    missing = {p: o for p, o in refs.files.items() if not os.path.exists(p)}
    assert not missing, f"files referenced by retained owners are missing: {sorted(missing.items())[:5]}"
    return refs


def leaks(table: FileStoreTable, refs: Refs | None = None) -> set[str]:
    refs = refs or retained_refs(table)
    return {p for p in all_files(table.root)
            if p not in refs.files and p not in refs.pending and not is_metadata(table, p)}


# ---------------------------------------------------------------------------------------------- history builder


class Sim:
    """Builds a table history in-process with simulated commit times, remembering what each snapshot reads."""

    def __init__(self, table: FileStoreTable, start_ms: int = T0):
        self.table = table
        self.now = start_ms
        self.writer = TableWriter(table)
        self.scanner = self.writer.scanner
        self.store = self.scanner.store
        self.committer = FileStoreCommit(table, store=self.store)
        self.spec = DataFileWriteSpec.of(table, self.scanner)
        self.namer = FileNamer(table.options.data_file_prefix, ".parquet")
        self._file_rows: dict[str, pa.Table] = {}
        self._file_tuples: dict[str, tuple] = {}
        # (snapshot id, base manifest list) -> {data file: rows after DVs}; ids are reused after a rollback.
        self.expected: dict[tuple[int, str], dict[str, tuple]] = {}
        self.key_counter = 0
        self.max_level = table.options.num_levels - 1
        self.had_rollback = False

    # ------------------------------------------------------------------ expected reads
    def snapshot_view(self, s: Snapshot, fresh: bool = False) -> dict[str, tuple]:
        """{file name: sorted rows after DVs}; fresh=True reads files again (what a reader sees now)."""
        scanner = self.scanner if not fresh else TableScanner(self.table, ManifestStore(self.table, 4096))
        result = scanner.scan(s)
        out = {}
        for f in result.files:
            if fresh or f.name not in self._file_rows:
                data = read_file(scanner, f, None)
                if not fresh:
                    self._file_rows[f.name] = data
            else:
                data = self._file_rows[f.name]
            hit = result.dv_of(f)
            if hit is not None:
                dv = scanner.deletion_vector(*hit)
                out[f.name] = rows_of(data.filter(pa.array(dv.keep_mask(data.num_rows))))
            elif fresh:
                out[f.name] = rows_of(data)
            else:
                if f.name not in self._file_tuples:
                    self._file_tuples[f.name] = rows_of(data)
                out[f.name] = self._file_tuples[f.name]
        return out

    def remember(self, s: Snapshot | None) -> Snapshot | None:
        if s is not None:
            self.expected[(s.id, s.base_manifest_list)] = self.snapshot_view(s)
        return s

    def tick(self, ms: int) -> None:
        self.now += ms

    # ------------------------------------------------------------------ operations
    def write(self, rows: list[tuple[str, int, str | None]], kinds: list[int] | None = None,
              advance_ms: int = 60_000) -> Snapshot | None:
        self.now += advance_ms
        data = pa.Table.from_pydict({"pt": [r[0] for r in rows], "k": [r[1] for r in rows],
                                     "v": [r[2] for r in rows]})
        self.writer.write(data, kinds)
        s = self.writer.commit(now_millis=self.now)
        return self.remember(s)

    def _latest(self) -> Snapshot:
        s = self.table.snapshots.latest()
        assert s is not None
        return s

    def buckets(self) -> list[tuple[bytes, int]]:
        s = self.table.snapshots.latest()
        if s is None:
            return []
        return sorted(self.scanner.scan(s).buckets())

    def compact(self, pick: int, advance_ms: int = 60_000) -> Snapshot | None:
        """Rewrite all files of one bucket into one max-level file (DVs applied, PK: newest row per key, retracts
        dropped); its DV index entry goes away. A COMPACT snapshot."""
        latest = self.table.snapshots.latest()
        if latest is None:
            return None
        result = self.scanner.scan(latest)
        groups = sorted(result.buckets().items())
        if not groups:
            return None
        (partition, bucket), files = groups[pick % len(groups)]
        parts = []
        for f in files:
            hit = result.dv_of(f)
            dv = self.scanner.deletion_vector(*hit) if hit else None
            parts.append(read_file(self.scanner, f, dv))
        data = pa.concat_tables(parts)
        if self.table.is_primary_key:
            data = data.sort_by([("k", "ascending"), (SEQUENCE_NUMBER, "ascending")])
            keys = data.column("k").to_numpy()
            last = np.ones(len(keys), bool)
            if len(keys) > 1:
                last[:-1] = keys[1:] != keys[:-1]
            data = data.filter(pa.array(last))
            kinds = data.column(VALUE_KIND).to_numpy()
            data = data.filter(pa.array((kinds != 1) & (kinds != 3)))
        else:
            start = min(f.meta.min_sequence_number for f in files)
            data = data.append_column(pa.field(SEQUENCE_NUMBER, pa.int64(), False),
                                      pa.array(np.arange(start, start + data.num_rows, dtype=np.int64)))
        changes = [f.entry(FileKind.DELETE) for f in files]
        if data.num_rows:
            meta = write_file(self.table, self.scanner, self.spec, self.namer, data, partition, bucket,
                              level=self.max_level if self.table.is_primary_key else 0, file_source=1)
            changes.append(ManifestEntry(FileKind.ADD, partition, bucket, files[0].total_buckets, meta))
        idx_del = tuple(ie for ie in result.index_entries
                        if ie.partition == partition and ie.bucket == bucket and ie.index_type == DELETION_VECTORS
                        and (self.table.is_primary_key or any(r.data_file in {f.name for f in files}
                                                              for r in ie.dv_ranges or ())))
        self.now += advance_ms
        s = self.committer.commit(CommitChanges(data=tuple(changes), index_deleted=idx_del), "COMPACT",
                                  latest.id, now_millis=self.now)
        return self.remember(s)

    def upgrade(self, pick: int, advance_ms: int = 60_000) -> Snapshot | None:
        """Metadata-only level upgrade (DELETE old metadata + ADD same file at a higher level), as Java does when a
        level-0 file can move up unchanged (§0.4)."""
        latest = self.table.snapshots.latest()
        if latest is None:
            return None
        result = self.scanner.scan(latest)
        cands = []
        for _, files in sorted(result.buckets().items()):
            used = {f.level for f in files}
            for f in sorted(files, key=lambda f: f.name):
                if f.level == 0:
                    free = [lv for lv in range(1, self.max_level + 1) if lv not in used]
                    if free:
                        cands.append((f, free[-1]))
        if not cands:
            return None
        f, level = cands[pick % len(cands)]
        if self.table.is_primary_key:
            # moving a level-0 file above older level-0 files would reorder sequence numbers; keep it simple
            older = [g for g in result.buckets()[(f.partition, f.bucket)]
                     if g.level == 0 and g.meta.min_sequence_number < f.meta.min_sequence_number]
            if older:
                return None
        new = ManifestEntry(FileKind.ADD, f.partition, f.bucket, f.total_buckets, f.meta.with_level(level))
        self.now += advance_ms
        s = self.committer.commit(CommitChanges(data=(f.entry(FileKind.DELETE), new)), "COMPACT", latest.id,
                                  now_millis=self.now)
        return self.remember(s)

    def delete_rows(self, pick: int, n: int = 1, advance_ms: int = 60_000) -> Snapshot | None:
        """Deletion vectors: mark up to n rows of one file deleted (DV tables: a level > 0 file), replacing the
        bucket's DV index file; a COMPACT snapshot with only index changes."""
        latest = self.table.snapshots.latest()
        if latest is None:
            return None
        result = self.scanner.scan(latest)
        files = [f for f in sorted(result.files, key=lambda f: f.name)
                 if not self.table.is_primary_key or f.level > 0]
        if not files:
            return None
        f = files[pick % len(files)]
        dvs: dict[str, DeletionVector] = {}
        old = []
        for ie in result.index_entries:
            if ie.partition == f.partition and ie.bucket == f.bucket and ie.index_type == DELETION_VECTORS:
                if not self.table.is_primary_key and f.name not in {r.data_file for r in ie.dv_ranges or ()}:
                    continue
                old.append(ie)
                for r in ie.dv_ranges or ():
                    dvs[r.data_file] = self.scanner.deletion_vector(ie, r)
        dv = dvs.get(f.name, DeletionVector())
        live = [p for p in range(f.meta.row_count) if not dv.is_deleted(p)]
        if not live:
            return None
        dv = dv.copy()
        dv.delete_many(live[:n])
        dvs[f.name] = dv
        data, ranges = write_dv_index_file(dvs, False)
        name = f"index-{uuid.uuid4()}-0"
        self.table.io.write_bytes(posixpath.join(self.table.index_dir, name), data)
        ie = IndexManifestEntry(FileKind.ADD, f.partition, f.bucket, DELETION_VECTORS, name, len(data), len(ranges),
                                tuple(DeletionVectorMeta(r.data_file, r.offset, r.length, r.cardinality)
                                      for r in ranges))
        self.now += advance_ms
        s = self.committer.commit(CommitChanges(index_added=(ie,), index_deleted=tuple(old)), "COMPACT", latest.id,
                                  now_millis=self.now)
        return self.remember(s)

    def tag(self, name: str, snapshot_id: int | None = None) -> Tag | None:
        sid = snapshot_id if snapshot_id is not None else self.table.snapshots.latest_id()
        if sid is None:
            return None
        s = self.table.snapshots.try_snapshot(sid)
        if s is None:
            return None
        t = Tag.from_snapshot(s)
        self.table.tags.write(name, t)
        return t

    # ------------------------------------------------------------------ checks
    def check_reads(self) -> int:
        """Every retained snapshot and tag reads exactly as when it was committed. Returns owners checked."""
        n = 0
        owners: list[tuple[str, Snapshot]] = [(f"snapshot {i}", self.table.snapshots.snapshot(i))
                                              for i in self.table.snapshots.list_ids()]
        owners += [(f"tag {name}", t) for name, t in self.table.tags.tags()]
        for label, s in owners:
            want = self.expected.get((s.id, s.base_manifest_list))
            if want is None:
                continue  # not created through this Sim
            got = self.snapshot_view(s, fresh=True)
            assert got == want, f"{label} reads differently after maintenance"
            n += 1
        return n


class MetaSim:
    """Metadata-level history builder: data, extra, changelog and DV index files are tiny placeholder files, so
    thousands of histories are cheap. Table kind 'append' (unaware bucket, partitioned by `pt`)."""

    def __init__(self, table: FileStoreTable, start_ms: int = T0):
        from paimon_ops.format.binary_row import serialize_row
        self.table = table
        self.now = start_ms
        self.store = ManifestStore(table, 4096)
        self.scanner = TableScanner(table, self.store)
        self.committer = FileStoreCommit(table, store=self.store)
        self._uuid = uuid.uuid4().hex[:12]
        self._n = 0
        self.seq = 0
        ptypes = [f.type for f in table.schema.fields_of(["pt"])]
        self.partitions = [serialize_row([p], ptypes) for p in ("a", "b")]
        self.had_rollback = False

    def tick(self, ms: int) -> None:
        self.now += ms

    def _name(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._uuid}-{self._n}"

    def _meta(self, partition: bytes, level: int, source: int, extra: bool, prefix: str = "data-"):
        from paimon_ops.format.manifest import DataFileMeta
        name = self._name(prefix) + ".parquet"
        d = self.scanner.bucket_dir(partition, 0)
        self.table.io.write_bytes(posixpath.join(d, name), b"x")
        extras: tuple[str, ...] = ()
        if extra:
            extras = (name + ".index",)
            self.table.io.write_bytes(posixpath.join(d, extras[0]), b"i")
        self.seq += 1
        return DataFileMeta(name, 1, 1, mf.EMPTY_ROW, mf.EMPTY_ROW, mf.EMPTY_STATS, mf.EMPTY_STATS, self.seq,
                            self.seq, 0, level, extras, self.now, 0, None, source, ())

    def _commit(self, kind: str, data=(), changelog=(), idx_add=(), idx_del=(), advance_ms: int = 60_000):
        latest = self.table.snapshots.latest()
        self.now += advance_ms
        return self.committer.commit(CommitChanges(tuple(data), tuple(idx_add), tuple(idx_del), tuple(changelog)),
                                     kind, latest.id if latest else None, now_millis=self.now)

    def live(self) -> list:
        s = self.table.snapshots.latest()
        if s is None:
            return []
        return sorted(self.scanner.live_entries(s).values(), key=lambda e: e.file.file_name)

    def write(self, pick: int, n: int = 1, extra: bool = False, changelog: bool = False, advance_ms: int = 60_000):
        p = self.partitions[pick % 2]
        data = [ManifestEntry(FileKind.ADD, p, 0, -1, self._meta(p, 0, 0, extra and i == 0)) for i in range(n)]
        cl = [ManifestEntry(FileKind.ADD, p, 0, -1, self._meta(p, 0, 0, False, "changelog-"))] if changelog else []
        return self._commit("APPEND", data, cl, advance_ms=advance_ms)

    def _dv_entries(self, names: set[str]):
        s = self.table.snapshots.latest()
        if s is None:
            return []
        return [ie for ie in self.scanner.index_entries(s)
                if ie.index_type == DELETION_VECTORS and any(r.data_file in names for r in ie.dv_ranges or ())]

    def compact(self, pick: int, advance_ms: int = 60_000):
        live = self.live()
        if not live:
            return None
        p = self.partitions[pick % 2]
        files = [e for e in live if e.partition == p] or [e for e in live if e.partition == live[0].partition]
        p = files[0].partition
        out = [ManifestEntry(FileKind.ADD, p, 0, -1, self._meta(p, 0, 1, pick % 3 == 0))]
        dels = [e.with_(kind=FileKind.DELETE) for e in files]
        return self._commit("COMPACT", dels + out, idx_del=self._dv_entries({e.file.file_name for e in files}),
                            advance_ms=advance_ms)

    def upgrade(self, pick: int, advance_ms: int = 60_000):
        live = self.live()
        if not live:
            return None
        e = live[pick % len(live)]
        new = e.with_(file=e.file.with_level(e.file.level + 1))
        return self._commit("COMPACT", [e.with_(kind=FileKind.DELETE), new], advance_ms=advance_ms)

    def overwrite(self, pick: int, advance_ms: int = 60_000):
        """Drop one live file (INSERT OVERWRITE of its data)."""
        live = self.live()
        if not live:
            return None
        e = live[pick % len(live)]
        return self._commit("OVERWRITE", [e.with_(kind=FileKind.DELETE)],
                            idx_del=self._dv_entries({e.file.file_name}), advance_ms=advance_ms)

    def dv(self, pick: int, advance_ms: int = 60_000):
        live = self.live()
        if not live:
            return None
        e = live[pick % len(live)]
        name = self._name("index-")
        self.table.io.write_bytes(posixpath.join(self.table.index_dir, name), b"dv")
        ie = IndexManifestEntry(FileKind.ADD, e.partition, 0, DELETION_VECTORS, name, 2, 1,
                                (DeletionVectorMeta(e.file.file_name, 1, 1, 1),))
        return self._commit("COMPACT", idx_add=[ie], idx_del=self._dv_entries({e.file.file_name}),
                            advance_ms=advance_ms)

    def tag(self, name: str, snapshot_id: int | None = None):
        sid = snapshot_id if snapshot_id is not None else self.table.snapshots.latest_id()
        s = self.table.snapshots.try_snapshot(sid) if sid is not None else None
        if s is None:
            return None
        t = Tag.from_snapshot(s)
        self.table.tags.write(name, t)
        return t


def view_of(table: FileStoreTable, s: Snapshot) -> dict[str, tuple]:
    """What a reader sees in snapshot/tag `s` now: {data file: sorted rows after deletion vectors}, read fresh."""
    scanner = TableScanner(table, ManifestStore(table, 4096))
    result = scanner.scan(s)
    out = {}
    for f in result.files:
        data = read_file(scanner, f, None)
        hit = result.dv_of(f)
        if hit is not None:
            data = data.filter(pa.array(scanner.deletion_vector(*hit).keep_mask(data.num_rows)))
        out[f.name] = rows_of(data)
    return out


def views(table: FileStoreTable) -> dict[tuple[str, int, str], dict[str, tuple]]:
    """Views of every snapshot and tag, keyed by (owner label, id, base manifest list)."""
    out = {}
    for i in table.snapshots.list_ids():
        s = table.snapshots.snapshot(i)
        out[("snapshot", i, s.base_manifest_list)] = view_of(table, s)
    for name, t in table.tags.tags():
        out[(f"tag {name}", t.id, t.base_manifest_list)] = view_of(table, t)
    return out


def tag_snapshot(table: FileStoreTable, name: str, snapshot_id: int) -> None:
    table.tags.write(name, Tag.from_snapshot(table.snapshots.snapshot(snapshot_id)))


def copy_table(src_root: str, dst_warehouse: str, db: str = "db", name: str = "t") -> str:
    dst = os.path.join(dst_warehouse, f"{db}.db", name)
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copytree(src_root, dst)
    return dst


def age_files(root: str, seconds: float) -> None:
    """Make every file and directory under root look `seconds` old (orphan thresholds use mtimes)."""
    t = time.time() - seconds
    for d, dirs, files in os.walk(root):
        for x in files + dirs:
            os.utime(os.path.join(d, x), (t, t))
    os.utime(root, (t, t))


def write_consumer(table: FileStoreTable, consumer_id: str, next_snapshot: int) -> None:
    from paimon_ops.format.snapshot import Consumer
    table.io.write_bytes(posixpath.join(table.consumers.dir, f"consumer-{consumer_id}"),
                         Consumer(next_snapshot).to_json().encode())


def create_branch_from_tag(table: FileStoreTable, branch: str, tag: str) -> FileStoreTable:
    """What Java's createBranch(name, tag) does on a file system: schema files, the tag and its snapshot copied."""
    broot = posixpath.join(table.root, "branch", f"branch-{branch}")
    for sid in table.schemas.list_ids():
        table.io.write_bytes(posixpath.join(broot, "schema", f"schema-{sid}"),
                             table.io.read_bytes(table.schemas.path(sid)))
    t = table.tags.tag(tag)
    table.io.write_bytes(posixpath.join(broot, "tag", f"tag-{tag}"), t.to_json().encode())
    table.io.write_bytes(posixpath.join(broot, "snapshot", f"snapshot-{t.id}"), t.to_snapshot().to_json().encode())
    table.io.write_bytes(posixpath.join(broot, "snapshot", "LATEST"), str(t.id).encode())
    table.io.write_bytes(posixpath.join(broot, "snapshot", "EARLIEST"), str(t.id).encode())
    return table.for_branch(branch)


def entries_of(table: FileStoreTable, s: Snapshot) -> dict[tuple, ManifestEntry]:
    return TableScanner(table).live_entries(s)


def merged(table: FileStoreTable, s: Snapshot):
    return merge_entries(ManifestStore(table).snapshot_entries(s))


__all__ = [n for n in dir() if not n.startswith("_")]
