"""What the table keeps alive right now — the independent check every destructive execution makes before its first
delete (design.md §1, "verify at the moment of acting").

`kept_names(table, removed)` reads every snapshot, tag and long-lived changelog of every branch, except the owner
files the execution itself removes (`removed`: paths of snapshot, tag and changelog files it deletes), and returns
the names of every file they keep alive:

* a snapshot keeps its manifest lists, their manifests, its live data files (the merge of its base and delta
  manifests: a file DELETEd in its own delta is not kept) with their extra files, its changelog manifest list with
  its manifests and changelog files, its index manifest with the index files it lists, its statistics file;
* a tag keeps the same except changelog (tags do not protect changelog, maintenance.md §2.3);
* a long-lived changelog keeps its changelog manifest list, manifests and files; with `changelog-producer=none` also
  its base/delta manifest lists and manifests and the APPEND files its delta adds (they are the changelog, §2.8).

Data files are compared by name (UUID names: stricter than Java's (partition, bucket, name)). Live sets are computed
for many owners at once with a running count per file name over the owners' manifest multisets, ordered by snapshot
id: consecutive owners share almost all manifests, so each owner costs only the manifests that differ from the
previous one — about one full scan of the table plus its deltas, whatever the number of snapshots and tags.

Unreadable metadata of an owner that stays raises (CorruptMetadataError): what it keeps cannot be known, so nothing
may be deleted.
"""
from __future__ import annotations

import collections
import functools
import posixpath
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import paimon_ops.format.manifest as mf
from paimon_ops.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    MissingFileError,
    TableNotFoundError,
    UnsafeOperationError,
)
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.table.scan import ManifestStore
from paimon_ops.table.table import FileStoreTable

# Decoded manifests kept in memory at once: bounds driver memory (a manifest can hold ~100k entries) while every
# manifest is still decoded about once per operation (immutable, named by UUID).
STORE_CAPACITY = 32

_CHANGELOG_APPEND = (None, 0)  # file_source of files that are a producer-none changelog


@dataclass
class Owner:
    kind: str  # snapshot | tag | changelog
    label: str
    snapshot: Snapshot
    path: str


@dataclass
class KeptNames:
    """Names of the files the remaining owners keep alive, and which owners were read."""

    names: set[str] = field(default_factory=set)
    owners: list[str] = field(default_factory=list)

    def __contains__(self, name: str) -> bool:
        return name in self.names


def owners_of(table: FileStoreTable, removed: Iterable[str] = ()) -> list[Owner]:
    """Every snapshot, tag and long-lived changelog of every branch, except the files in `removed`. Unreadable owner
    files raise; owners deleted while listing are skipped."""
    removed = set(removed)
    main = table if table.branch == "main" else table.for_branch("main")
    out: list[Owner] = []
    for b in ["main"] + main.branches():
        try:
            bt = main if b == "main" else main.for_branch(b)
        except TableNotFoundError:
            if main.branch_holds_history(b):
                raise
            continue  # what an interrupted branch deletion leaves (no schema/, no history): it keeps nothing alive
        prefix = "" if b == "main" else f"branch {b} "
        for mgr, kind in ((bt.snapshots, "snapshot"), (bt.changelogs, "changelog")):
            for sid in mgr.list_ids():
                p = mgr.path(sid)
                if p in removed:
                    continue
                s = mgr.try_snapshot(sid)  # corrupt -> raises
                if s is not None:
                    out.append(Owner(kind, f"{prefix}{kind} {sid}", s, p))
        for name in bt.tags.names():
            p = bt.tags.path(name)
            if p in removed:
                continue
            try:
                t = bt.tags.tag(name)
            except InvalidArgumentError:
                continue  # deleted while listing
            out.append(Owner("tag", f"{prefix}tag {name}", t, p))
    return out


class _Counter:
    """Running net counts (ADDs minus DELETEs) of data file names over one sequence of owners' manifest sets."""

    def __init__(self, store: ManifestStore, kept: set[str]):
        self.store = store
        self.kept = kept
        self.count: dict[str, int] = {}
        self.current: collections.Counter[str] = collections.Counter()
        self.extras: dict[str, tuple[str, ...]] = {}

    def _apply(self, manifest: str, sign: int, ref: str, touched: set[str]) -> None:
        count = self.count
        for e in self.store.manifest(manifest, ref):
            n = e.file.file_name
            if e.kind == mf.FileKind.ADD:
                count[n] = count.get(n, 0) + sign
                if e.file.extra_files:
                    self.extras[n] = tuple(e.file.extra_files)
            else:
                count[n] = count.get(n, 0) - sign
            touched.add(n)

    def owner(self, manifests: list[str], ref: str) -> None:
        want = collections.Counter(manifests)
        touched: set[str] = set()
        for m, k in (want - self.current).items():
            for _ in range(k):
                self._apply(m, +1, ref, touched)
        for m, k in (self.current - want).items():
            for _ in range(k):
                self._apply(m, -1, ref, touched)
        self.current = want
        count = self.count
        # live after merging: net count > 0; a DELETE without its ADD (< 0) is kept too, as Java's skippers do
        self.kept.update(n for n in touched if count.get(n, 0) != 0)


def manifest_names_into(store: ManifestStore, names: set[str], lst: str, ref: str,
                        may_be_gone: bool) -> list[str] | None:
    """The manifests manifest list `lst` (named by `ref`) names, added with the list itself to `names`; None when the
    list is gone and `may_be_gone` (an owner deleted concurrently), else its absence raises."""
    try:
        metas = store.manifest_list(lst, ref)
    except MissingFileError:
        if may_be_gone:
            return None
        raise
    names.add(lst)
    got = [m.file_name for m in metas]
    names.update(got)
    return got


def kept_names(table: FileStoreTable, removed: Iterable[str] = (), store: ManifestStore | None = None) -> KeptNames:
    """See the module docstring. `removed`: owner files (snapshot, tag, changelog paths) the caller deletes."""
    store = store or ManifestStore(table, capacity=STORE_CAPACITY)
    owners = owners_of(table, removed)
    out = KeptNames(owners=[o.label for o in owners])
    names = out.names
    producer_none = table.options.changelog_producer == "none"

    list_names = functools.partial(manifest_names_into, store, names)

    # snapshots and tags of each branch in id order: one running count (their manifest sets overlap)
    by_branch: dict[str, list[Owner]] = {}
    for o in owners:
        if o.kind != "changelog":
            by_branch.setdefault(posixpath.dirname(posixpath.dirname(o.path)), []).append(o)
    for group in by_branch.values():
        counter = _Counter(store, names)
        for o in sorted(group, key=lambda o: (o.snapshot.id, o.kind != "snapshot", o.label)):
            s = o.snapshot
            base = list_names(s.base_manifest_list, o.label, False) or []
            delta = list_names(s.delta_manifest_list, o.label, False) or []
            counter.owner(base + delta, o.label)
            if o.kind == "snapshot" and s.changelog_manifest_list:
                _changelog_files(store, names, s.changelog_manifest_list, o.label, may_be_gone=False)
            _index_and_stats(store, names, s, o.label, may_be_gone=False)
        names.update(x for n, extras in counter.extras.items() if n in names for x in extras)
    for o in owners:
        if o.kind != "changelog":
            continue
        s = o.snapshot
        if s.changelog_manifest_list:
            _changelog_files(store, names, s.changelog_manifest_list, o.label, may_be_gone=True)
        if producer_none:
            list_names(s.base_manifest_list, o.label, True)
            for m in list_names(s.delta_manifest_list, o.label, True) or ():
                try:
                    entries = store.manifest(m, o.label)
                except MissingFileError:
                    continue
                for e in entries:
                    if e.kind == mf.FileKind.ADD and e.file.file_source in _CHANGELOG_APPEND:
                        names.add(e.file.file_name)
                        names.update(e.file.extra_files)
    return out


def _changelog_files(store: ManifestStore, names: set[str], lst: str, ref: str, may_be_gone: bool) -> None:
    try:
        metas = store.manifest_list(lst, ref)
    except MissingFileError:
        if may_be_gone:
            return
        raise
    names.add(lst)
    for m in metas:
        names.add(m.file_name)
        try:
            entries = store.manifest(m.file_name, lst)
        except MissingFileError:
            if may_be_gone:
                continue
            raise
        names.update(e.file.file_name for e in entries)


def _index_and_stats(store: ManifestStore, names: set[str], s: Snapshot, ref: str, may_be_gone: bool) -> None:
    if s.index_manifest:
        try:
            entries = store.index_manifest(s.index_manifest, ref)
            names.add(s.index_manifest)
            names.update(ie.file_name for ie in entries)
        except MissingFileError:
            if not may_be_gone:
                raise
    if s.statistics:
        names.add(s.statistics)


def referencing_owner(table: FileStoreTable, name: str, removed: Iterable[str] = ()) -> str | None:
    """Which remaining owner keeps `name` (for messages; reads owners one by one, so only used on refusal)."""
    store = ManifestStore(table, capacity=STORE_CAPACITY)
    for o in owners_of(table, removed):
        try:
            one = kept_names_of_owner(store, o, table.options.changelog_producer == "none")
        except CorruptMetadataError:
            continue
        if name in one:
            return o.label
    return None


def kept_names_of_owner(store: ManifestStore, o: Owner, producer_none: bool) -> set[str]:
    names: set[str] = set()
    s = o.snapshot
    if o.kind == "changelog":
        if s.changelog_manifest_list:
            _changelog_files(store, names, s.changelog_manifest_list, o.label, may_be_gone=True)
        return names
    counter = _Counter(store, names)
    manifests: list[str] = []
    for lst in (s.base_manifest_list, s.delta_manifest_list):
        names.add(lst)
        got = [m.file_name for m in store.manifest_list(lst, o.label)]
        names.update(got)
        manifests += got
    counter.owner(manifests, o.label)
    if o.kind == "snapshot" and s.changelog_manifest_list:
        _changelog_files(store, names, s.changelog_manifest_list, o.label, may_be_gone=False)
    _index_and_stats(store, names, s, o.label, may_be_gone=False)
    return names


# ---------------------------------------------------------------------------------------------- what anything names
# (orphan removal's used set, and the deleter's last check that nothing names an orphan it deletes)


# Manifests queued before they are decoded together (bounds what is held: names only, never entries).
PENDING_MANIFESTS = 512
DECODE_BATCH = 32  # manifests decoded at once (what is held: their lifecycle columns)


class UsedNames:
    """Names referenced by every snapshot, tag and long-lived changelog of every branch."""

    def __init__(self, main: FileStoreTable, defer: bool = False):
        self.main = main
        self.defer = defer  # manifests stay queued for Spark (`referenced_on_spark`), never decoded here
        self.store = ManifestStore(main, capacity=STORE_CAPACITY)
        self.names: set[str] = set()
        self._lists: dict[str, list[str]] = {}
        self._manifests: set[str] = set()
        self._indexes: set[str] = set()
        self._pending: list[tuple[str, str, Callable[[], bool], bool]] = []
        self.owners = 0

    def _missing(self, what: str, name: str, owner: str, still_there: Callable[[], bool]) -> bool:
        """True if the owner vanished meanwhile (concurrent expiry: fine); else the run must be refused."""
        if not still_there():
            return True
        raise UnsafeOperationError(
            f"{what} {name} referenced by {owner} of {self.main.identifier} is missing. Its files cannot be told "
            "apart from orphans, so nothing is deleted. If an expiry or tag deletion was interrupted, re-run it first; "
            "otherwise the table has lost metadata and needs repair")

    def add_list(self, name: str, owner: str, still_there: Callable[[], bool], tolerate_missing: bool) -> bool:
        self.names.add(name)
        manifests = self._lists.get(name)
        if manifests is None:
            try:
                metas = self.store.manifest_list(name, owner)
            except MissingFileError:
                if tolerate_missing:
                    return True
                return self._missing("manifest list", name, owner, still_there)
            manifests = self._lists[name] = [m.file_name for m in metas]
            self.names.update(manifests)
        # every owner of a manifest not read yet is queued with it: a missing one is judged per owner
        self._pending += [(m, owner, still_there, tolerate_missing) for m in manifests if m not in self._manifests]
        if len(self._pending) >= PENDING_MANIFESTS and not self.defer:
            self.flush()
        return True

    def flush(self) -> None:
        """Read the manifests queued by add_list, DECODE_BATCH at a time (one native decode each, names taken
        column-wise, nothing kept but the names); a missing one is judged per referencing owner."""
        pending, self._pending = self._pending, []
        todo = list(dict.fromkeys(p[0] for p in pending if p[0] not in self._manifests))
        missing: set[str] = set()
        for i in range(0, len(todo), DECODE_BATCH):
            chunk = todo[i:i + DECODE_BATCH]
            got = self.store.columns_many(chunk, "a manifest list")
            for mname in chunk:
                cols = got.get(mname)
                if cols is None:
                    missing.add(mname)
                    continue
                # ADD and DELETE alike (§4.2 step 4); a manifest's names go into the set in one C-level update
                self.names.update(cols.file_name)
                self.names.update(x for xs in cols.extra_files if xs for x in xs)
                self._manifests.add(mname)
        for mname, owner, still_there, tolerate in pending:
            if mname in missing and not tolerate:
                self._missing("manifest", mname, owner, still_there)  # raises unless the owner is gone

    def add_index(self, name: str, owner: str, still_there: Callable[[], bool], tolerate_missing: bool) -> None:
        self.names.add(name)
        if name in self._indexes:
            return
        try:
            entries = self.store.index_manifest(name, owner)
        except MissingFileError:
            if not tolerate_missing:
                self._missing("index manifest", name, owner, still_there)
            return
        self.names.update(ie.file_name for ie in entries)
        self._indexes.add(name)

    def add_owner(self, s: Snapshot, owner: str, still_there: Callable[[], bool], kind: str,
                  producer_none: bool) -> None:
        """kind: 'snapshot' | 'tag' | 'changelog'. Tags do not protect changelog lists (expiry deletes them, §2.3);
        long-lived changelogs may have lost base/delta lists and index manifests to snapshot expiry (§2.8)."""
        self.owners += 1
        loose_data = kind == "changelog" and not producer_none
        self.add_list(s.base_manifest_list, owner, still_there, loose_data)
        self.add_list(s.delta_manifest_list, owner, still_there, loose_data)
        if s.changelog_manifest_list:
            self.add_list(s.changelog_manifest_list, owner, still_there, kind == "tag")
        if s.index_manifest:
            self.add_index(s.index_manifest, owner, still_there, kind == "changelog")
        if s.statistics:
            self.names.add(s.statistics)


def branch_tables(table: FileStoreTable) -> list[FileStoreTable]:
    main = table.for_branch("main") if table.branch != "main" else table
    out = [main]
    for b in main.branches():
        try:
            bt = main.for_branch(b)
        except TableNotFoundError:
            raise UnsafeOperationError(f"branch {b!r} of {main.identifier} has no schema directory; refusing to "
                                       "remove orphans (its files could not be told apart from orphans)") from None
        if not bt.schemas.list_ids():
            raise UnsafeOperationError(f"branch {b!r} of {main.identifier} has no schema file; refusing to remove "
                                       "orphans")
        out.append(bt)
    return out


def collect_used(main: FileStoreTable, branches: list[FileStoreTable], defer: bool = False) -> UsedNames:
    """Every name referenced; `defer`: the manifests are left queued (`_pending`) for `referenced_on_spark`."""
    used = UsedNames(main, defer)
    producer_none = main.options.changelog_producer == "none"
    for bt in branches:
        label = "" if bt.branch == "main" else f"branch {bt.branch} "
        for mgr, kind in ((bt.snapshots, "snapshot"), (bt.changelogs, "changelog")):
            for sid in mgr.list_ids():
                s = mgr.try_snapshot(sid)  # corrupt -> CorruptMetadataError: refuse
                if s is None:
                    continue  # expired while we listed
                used.add_owner(s, f"{label}{kind} {sid}", functools.partial(mgr.exists, sid), kind, producer_none)
        for name in bt.tags.names():
            try:
                t = bt.tags.tag(name)
            except InvalidArgumentError:
                continue  # deleted while we listed
            used.add_owner(t, f"{label}tag {name}", functools.partial(bt.tags.exists, name), "tag", producer_none)
    if not defer:
        used.flush()
    return used


# ---------------------------------------------------------------------------------------------- on Spark
SPARK_MANIFESTS_PER_TASK = 64
_NAMES_SCHEMA = "error string, name string, kind string"


def manifest_names_task(table_location: str, task: dict) -> dict:
    """Executor side: the file names (data and extra files, ADD and DELETE alike) the task's manifests reference,
    kind 'used', and the manifests that do not exist, kind 'missing'. A crafted name or an unreadable manifest
    raises (the job then fails closed)."""
    table = FileStoreTable(table_location)
    store = ManifestStore(table, capacity=1)
    names: list[str] = []
    kinds: list[str] = []
    wanted = task["manifests"]
    got = store.columns_many(wanted, "a manifest list")
    for mname in wanted:
        cols = got.get(mname)
        if cols is None:
            names.append(mname)
            kinds.append("missing")
            continue
        found = list(cols.file_name) + [x for xs in cols.extra_files if xs for x in xs]
        names += found
        kinds += ["used"] * len(found)
    return {"name": names, "kind": kinds}


def referenced_on_spark(runner: Any, used: UsedNames, candidates: list[str]) -> tuple[set[str], int]:
    """The live-set difference on Spark: executors decode the manifests `used` has queued (`collect_used(…,
    defer=True)`) into the names they reference, which are joined there with the candidates' names and the names
    read on the driver (manifest lists, manifests, index and statistics files). Returns (the candidates that are
    referenced, how many distinct names are referenced) — what `used.names` answers in-process; only those come
    back to the driver. A missing manifest is judged per owner as in-process (`UsedNames.flush`)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    pending, used._pending = used._pending, []
    todo = list(dict.fromkeys(p[0] for p in pending if p[0] not in used._manifests))
    tasks = [{"manifests": todo[i:i + SPARK_MANIFESTS_PER_TASK]}
             for i in range(0, len(todo), SPARK_MANIFESTS_PER_TASK)]
    spark = runner.spark
    driver = pa.table({"error": pa.array([None] * len(used.names), pa.string()),
                       "name": pa.array(sorted(used.names), pa.string()),
                       "kind": pa.array(["used"] * len(used.names), pa.string())})
    cands = sorted(set(candidates))
    cand = pa.table({"error": pa.array([None] * len(cands), pa.string()), "name": pa.array(cands, pa.string()),
                     "kind": pa.array(["candidate"] * len(cands), pa.string())})
    frames = [spark.createDataFrame(driver), spark.createDataFrame(cand)]
    if tasks:
        frames.append(runner.frame("paimon_ops.table.references.manifest_names_task", used.main.location, tasks,
                                   _NAMES_SCHEMA, options=used.main.io.task_options()))
    rows = frames[0]
    for f in frames[1:]:
        rows = rows.unionByName(f)
    rows = rows.select(F.coalesce("error", "name").alias("name"),
                       F.when(F.col("error").isNotNull(), F.lit("error")).otherwise(F.col("kind")).alias("kind"))
    flags = rows.groupBy("name").agg(*[F.max((F.col("kind") == k).cast("int")).alias(k)
                                       for k in ("used", "candidate", "missing", "error")])
    flags = flags.persist()
    try:
        found = flags.where("(candidate = 1 AND used = 1) OR missing = 1 OR error = 1").collect()
        total = flags.where("used = 1").count()
    finally:
        flags.unpersist()
    errors = sorted(r["name"] for r in found if r["error"])
    if errors:
        raise CorruptMetadataError(used.main.manifest_dir, f"reading manifests on Spark failed: {errors[0]}")
    missing = {r["name"] for r in found if r["missing"]}
    for mname, owner, still_there, tolerate in pending:
        if mname in missing and not tolerate:
            used._missing("manifest", mname, owner, still_there)  # raises unless the owner is gone
    used._manifests.update(m for m in todo if m not in missing)
    return {r["name"] for r in found if r["candidate"] and r["used"]}, total


def referenced_among(main: FileStoreTable, branches: list[FileStoreTable], candidates: list[str], runner: Any = None
                     ) -> tuple[set[str], int, int]:
    """(which of `candidates` any snapshot, tag or long-lived changelog of any branch references, how many distinct
    names are referenced, how many owners were read): in-process, or on Spark when `runner` is one."""
    used = collect_used(main, branches, defer=runner is not None)
    if runner is None:
        return {n for n in candidates if n in used.names}, len(used.names), used.owners
    hit, total = referenced_on_spark(runner, used, candidates)
    return hit, total, used.owners


__all__ = ["KeptNames", "Owner", "kept_names", "owners_of", "referencing_owner", "STORE_CAPACITY", "UsedNames",
           "branch_tables", "collect_used", "referenced_among", "manifest_names_task"]
