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
import posixpath
from dataclasses import dataclass, field
from typing import Iterable

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, MissingFileError
from paimon_ops.format import manifest as mf
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.protection import STORE_CAPACITY
from paimon_ops.table.scan import ManifestStore
from paimon_ops.table.table import Table

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


def owners_of(table: Table, removed: Iterable[str] = ()) -> list[Owner]:
    """Every snapshot, tag and long-lived changelog of every branch, except the files in `removed`. Unreadable owner
    files raise; owners deleted while listing are skipped."""
    removed = set(removed)
    main = table if table.branch == "main" else table.for_branch("main")
    out: list[Owner] = []
    for b in ["main"] + main.branches():
        bt = main if b == "main" else main.for_branch(b)
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


def kept_names(table: Table, removed: Iterable[str] = (), store: ManifestStore | None = None) -> KeptNames:
    """See the module docstring. `removed`: owner files (snapshot, tag, changelog paths) the caller deletes."""
    store = store or ManifestStore(table, capacity=STORE_CAPACITY)
    owners = owners_of(table, removed)
    out = KeptNames(owners=[o.label for o in owners])
    names = out.names
    producer_none = table.options.changelog_producer == "none"

    def list_names(lst: str, ref: str, may_be_gone: bool) -> list[str] | None:
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


def referencing_owner(table: Table, name: str, removed: Iterable[str] = ()) -> str | None:
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


__all__ = ["KeptNames", "Owner", "kept_names", "owners_of", "referencing_owner"]
