"""What protects a file: the snapshots, tags, long-lived changelogs and other branches that still reference it.

Everything here follows maintenance.md §0.4 (contiguous-lifetime invariant): a file that a deleted snapshot or tag
shares with anything retained in the same branch is shared with the nearest retained neighbour on one side, so the
protector sets only ever need the neighbours. Files shared with *other* branches are protected separately
(`other_branches`): Java's expiry and tag deletion ignore other branches (apache/paimon#6272).

Every reader raises on unreadable metadata; callers decide whether that means "delete nothing" or "keep more".
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, Iterable, Sequence

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, MissingFileError
from paimon_ops.execution.plan import Precondition
from paimon_ops.format.snapshot import Snapshot, Tag
from paimon_ops.table.references import STORE_CAPACITY, manifest_names_into
from paimon_ops.table.scan import ManifestStore, merge_entries
from paimon_ops.table.table import FileStoreTable

DataKey = tuple[bytes, int, str]  # (partition, bucket, file name): how Java compares data files, never by level



def read_tags(table: FileStoreTable) -> list[tuple[str, Tag]]:
    """All tags of the table's branch sorted by (snapshot id, name); unreadable tag -> CorruptMetadataError."""
    try:
        return table.tags.tags()
    except CorruptMetadataError:
        raise
    except InvalidArgumentError as e:  # a tag listed but vanished while reading: concurrent tag operation
        raise CorruptMetadataError(table.tags.dir, f"tags changed while being read ({e}); re-run") from None
    except OSError as e:
        raise CorruptMetadataError(table.tags.dir, f"cannot read tags: {e}") from None


def data_keys(store: ManifestStore, snapshot: Snapshot) -> set[DataKey]:
    """(partition, bucket, file name) of every entry left after merging base + delta (DELETE leftovers included,
    as Java's readMergedDataFiles). Raises on any unreadable manifest: callers must then delete nothing."""
    adds, deletes = merge_entries(store.snapshot_entries(snapshot), f"snapshot {snapshot.id}")
    out = {(e.partition, e.bucket, e.file.file_name) for e in adds.values()}
    out.update((e.partition, e.bucket, e.file.file_name) for e in deletes.values())
    return out


def _list_names(store: ManifestStore, list_name: str, ref: str, tolerate_missing: bool) -> list[str]:
    try:
        return [m.file_name for m in store.manifest_list(list_name, ref)]
    except MissingFileError:
        if tolerate_missing:
            return []
        raise


def manifest_skipping_set(store: ManifestStore, protectors: Iterable[Snapshot],
                          tolerate_missing_lists: Iterable[Snapshot] = (),
                          lists_only: Iterable[Snapshot] = ()) -> set[str]:
    """Names of manifest lists, manifests, index manifests, index files and statistics files the protectors use
    (maintenance.md §2.3 step 6). Changelog manifests are not included: tags do not protect changelogs.

    Raises on unreadable metadata. `tolerate_missing_lists`: protectors whose base/delta lists may legitimately be
    gone (long-lived changelogs after snapshot expiry deleted them, ChangelogDeletion.manifestSkippingSet).
    `lists_only`: protectors that keep only their base/delta lists and the manifests in them — long-lived changelogs:
    the index manifest and statistics a changelog names are not its own (snapshot expiry deletes them with the
    snapshot, as Java's does; `table.references` counts them for no changelog), so they protect nothing and may be
    gone."""
    tolerant = {id(s) for s in tolerate_missing_lists}
    only_lists = {id(s) for s in lists_only}
    out: set[str] = set()
    for s in protectors:
        ref = f"snapshot {s.id}"
        tol = id(s) in tolerant
        for lst in (s.base_manifest_list, s.delta_manifest_list):
            names = _list_names(store, lst, ref, tol)
            if names or not tol or store.table.io.exists(store.table.manifest_path(lst)):
                out.add(lst)
            out.update(names)
        if id(s) in only_lists:
            continue
        if s.index_manifest:
            out.add(s.index_manifest)
            try:
                out.update(ie.file_name for ie in store.index_manifest(s.index_manifest, ref))
            except MissingFileError:
                if not tol:
                    raise
        if s.statistics:
            out.add(s.statistics)
    return out


def nearest_tag_below(tags: Sequence[tuple[str, Tag]], snapshot_id: int) -> tuple[str, Tag] | None:
    """The tag with the largest snapshot id strictly less than `snapshot_id` (Java findPreviousTag)."""
    best = None
    for name, t in tags:
        if t.id < snapshot_id:
            best = (name, t)
        else:
            break
    return best


def skipping_tags(tags: Sequence[tuple[str, Tag]], begin: int, end: int) -> list[tuple[str, Tag]]:
    """Tags from the last tag with id <= begin through the last tag with id < end (Java findSkippingTags)."""
    right = -1
    for i, (_, t) in enumerate(tags):
        if t.id < end:
            right = i
    if right < 0:
        return []
    left = 0
    for i, (_, t) in enumerate(tags):
        if t.id <= begin:
            left = i
    return list(tags[left:right + 1])


@dataclass
class OtherBranches:
    """What every *other* branch of the table references (data keys and metadata/changelog file names).

    Branches share data, manifest and index files (a branch created from a tag starts from that tag's files), but
    Java's expiry and tag deletion look only at the branch being cleaned (maintenance.md §2.7, apache/paimon#6272). We
    additionally never delete anything another branch's snapshots, tags or long-lived changelogs reference
    (upstream later added the same idea as 'other branch protection'). Empty when the table has no branches."""

    branches: list[str] = field(default_factory=list)
    data: set[DataKey] = field(default_factory=set)
    names: set[str] = field(default_factory=set)

    def protects_data(self, key: DataKey) -> bool:
        return key in self.data


def other_branches(table: FileStoreTable) -> OtherBranches:
    """Raises CorruptMetadataError if anything another branch references cannot be read (fail closed)."""
    main = table if table.branch == "main" else table.for_branch("main")
    names = ["main"] + main.branches()
    out = OtherBranches([b for b in names if b != table.branch])
    if not out.branches:
        return out
    store = ManifestStore(main, capacity=STORE_CAPACITY)

    list_names = partial(manifest_names_into, store, out.names)

    for b in out.branches:
        try:
            bt = main.for_branch(b)
        except Exception as e:  # noqa: BLE001 - a branch we cannot open is a branch we cannot protect
            raise CorruptMetadataError(posixpath.join(main.root, "branch", f"branch-{b}"),
                                       f"cannot open branch {b!r} ({e}); its files could not be protected") from None
        owners: list[tuple[Snapshot, str]] = []
        for mgr, kind in ((bt.snapshots, "snapshot"), (bt.changelogs, "changelog")):
            for sid in mgr.list_ids():
                snap = mgr.try_snapshot(sid)
                if snap is not None:
                    owners.append((snap, kind))
        owners += [(t, "tag") for _, t in read_tags(bt)]
        for snap, kind in owners:
            ref = f"branch {b} {kind} {snap.id}"
            # Long-lived changelogs may have lost base/delta lists and index manifests to snapshot expiry, and tags
            # do not protect changelog lists (§2.3, §2.8); everything else must be readable.
            base = list_names(snap.base_manifest_list, ref, kind == "changelog")
            delta = list_names(snap.delta_manifest_list, ref, kind == "changelog")
            if base is not None and delta is not None:
                # what the owner reads: its merged file set (DELETE leftovers included, as Java's skippers)
                adds, deletes = merge_entries(
                    (x for m in base + delta for x in store.manifest(m, ref)), ref)
                for entry in list(adds.values()) + list(deletes.values()):
                    out.data.add((entry.partition, entry.bucket, entry.file.file_name))
                    out.names.add(entry.file.file_name)
                    out.names.update(entry.file.extra_files)
            if kind == "changelog" and delta is not None:
                for m in delta:  # with changelog-producer=none the added files are the changelog
                    for entry in store.manifest(m, ref):
                        out.data.add((entry.partition, entry.bucket, entry.file.file_name))
                        out.names.add(entry.file.file_name)
                        out.names.update(entry.file.extra_files)
            if snap.changelog_manifest_list:
                cl = list_names(snap.changelog_manifest_list, ref, kind == "tag")
                for m in cl or ():
                    for entry in store.manifest(m, ref):
                        out.data.add((entry.partition, entry.bucket, entry.file.file_name))
                        out.names.add(entry.file.file_name)
            if snap.index_manifest:
                try:
                    entries = store.index_manifest(snap.index_manifest, ref)
                    out.names.add(snap.index_manifest)
                    out.names.update(ie.file_name for ie in entries)
                except MissingFileError:
                    if kind != "changelog":
                        raise
            if snap.statistics:
                out.names.add(snap.statistics)
    return out


class DataSkipper:
    """Caches the data-file key set of one protector at a time (expiry walks snapshots in increasing order, so
    the nearest tag changes monotonically and only one set is held)."""

    def __init__(self, store: ManifestStore):
        self.store = store
        self._key: tuple | None = None
        self._set: set[DataKey] = set()

    def keys(self, protectors: Sequence[Snapshot]) -> set[DataKey]:
        key = tuple((s.id, s.base_manifest_list, s.delta_manifest_list) for s in protectors)
        if key != self._key:
            self._key = None
            out: set[DataKey] = set()
            for s in protectors:
                out |= data_keys(self.store, s)
            self._set, self._key = out, key
        return self._set


def tag_set(tags: Sequence[tuple[str, Tag]]) -> tuple[tuple[str, int], ...]:
    """The (name, snapshot id) pairs a plan records as its TagsAre precondition."""
    return tuple((n, t.id) for n, t in tags)


@dataclass(frozen=True)
class TagsAre(Precondition):
    """The exact tag set (name -> snapshot id): a tag created or deleted since changes what protects which file."""

    kind: ClassVar[str] = "tags"
    tags: tuple[tuple[str, int], ...]

    def check(self, table: Any) -> str | None:
        now = {n: t.id for n, t in read_tags(table)}
        was = dict(self.tags)
        if now == was:
            return None
        added = sorted(set(now) - set(was))
        removed = sorted(set(was) - set(now))
        moved = sorted(n for n in set(now) & set(was) if now[n] != was[n])
        parts = ([f"tag(s) {', '.join(added)} created"] if added else []) +\
            ([f"tag(s) {', '.join(removed)} deleted"] if removed else []) +\
            ([f"tag(s) {', '.join(moved)} moved"] if moved else [])
        return "; ".join(parts)

    def describe(self) -> str:
        return f"tags are {', '.join(f'{n}@{i}' for n, i in self.tags) or 'none'}"


__all__ = ["read_tags", "data_keys", "manifest_skipping_set", "nearest_tag_below", "skipping_tags", "OtherBranches",
           "other_branches", "DataSkipper", "DataKey", "STORE_CAPACITY", "tag_set", "TagsAre"]
