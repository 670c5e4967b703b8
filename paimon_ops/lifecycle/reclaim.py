"""What protectors reference, how plans are executed phase by phase, and tag deletion with reclamation.

Shared by snapshot expiry (expire.py), tag deletion (here; also called by tag expiry in tags.py), orphan removal
and rollback. Everything here follows maintenance.md §0.4 (contiguous-lifetime invariant): a file that a deleted
snapshot/tag shares with anything retained in the same branch is shared with the nearest retained neighbour on one
side, so the protector sets only ever need the neighbours. Files shared with *other* branches are protected
separately (`other_branches`): Java's expiry and tag deletion ignore other branches (issue #6272).

Public API for tag deletion (maintenance.md §3.3):

* ``plan_delete_tags(table, names, missing_ok=False) -> Plan``
* ``delete_tags(table, names, dry_run=False, runner=None, progress=None, missing_ok=False) -> Report``

Semantics: a tag whose snapshot still exists (or that shares its snapshot with another tag) only loses its tag
file. Otherwise the files only it kept alive are deleted; protectors are the previous tag, the earlier of (earliest
snapshot, next tag), with changelog-producer 'none' the nearest long-lived changelogs (Java ignores them), and every
other branch. Several names are deleted as if one after another, in the given order. Per tag the order is data files ->
empty directories -> manifests, index and statistics files -> manifest lists and index manifests -> the tag file,
so that a rerun after a crash (with ``missing_ok=True``) converges.

Failure policy (design.md §1): if anything needed to decide is unreadable, we delete less — either nothing at all
(an error is raised before the first delete) or, where Java leaks, only the part that is provably safe.
"""
from __future__ import annotations

import logging
import posixpath
import time
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from paimon_ops.errors import (CorruptMetadataError, InvalidArgumentError, MissingFileError, PaimonOpsError,
                               UnsafeNameError)
from paimon_ops.format.manifest import IndexManifestEntry, ManifestEntry
from paimon_ops.format.snapshot import Snapshot, Tag, parse_hint
from paimon_ops.lifecycle.deleter import Deleter, allowed_roots, check_paths
from paimon_ops.plan import (DATA, DIRECTORY, EXTRA, HINT, INDEX, INDEX_MANIFEST, MANIFEST, MANIFEST_LIST, STATISTICS,
                             TAG, FileAction, Plan, Report, bytes_by_kind, count_by_kind)
from paimon_ops.runner import Progress, Runner
from paimon_ops.table.fileio import ensure_within
from paimon_ops.table.scan import ManifestStore, TableScanner, merge_entries
from paimon_ops.table.table import Table

log = logging.getLogger(__name__)

DataKey = tuple[bytes, int, str]  # (partition, bucket, file name): how Java compares data files, never by level

# Decoded manifests kept in memory at once: bounds driver memory (a manifest can hold ~100k entries) while every
# manifest is still decoded about once per operation (immutable, named by UUID).
STORE_CAPACITY = 32

# Phase modes (how the executor runs a slice of plan.deletes).
FILES = "files"        # unordered; may run in batches on executors
ORDERED = "ordered"    # one by one on the driver, in plan order (snapshot / tag / changelog metadata)
DIRS = "dirs"          # directories, each removed only if a listing shows it empty


# ---------------------------------------------------------------------------------------------- protector sets


def read_tags(table: Table) -> list[tuple[str, Tag]]:
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
                          tolerate_missing_lists: Iterable[Snapshot] = ()) -> set[str]:
    """Names of manifest lists, manifests, index manifests, index files and statistics files the protectors use
    (maintenance.md §2.3 step 6). Changelog manifests are not included: tags do not protect changelogs.

    Raises on unreadable metadata. `tolerate_missing_lists`: protectors whose base/delta lists may legitimately be
    gone (long-lived changelogs after snapshot expiry deleted them, ChangelogDeletion.manifestSkippingSet)."""
    tolerant = {id(s) for s in tolerate_missing_lists}
    out: set[str] = set()
    for s in protectors:
        ref = f"snapshot {s.id}"
        tol = id(s) in tolerant
        for lst in (s.base_manifest_list, s.delta_manifest_list):
            names = _list_names(store, lst, ref, tol)
            if names or not tol or store.table.io.exists(store.table.manifest_path(lst)):
                out.add(lst)
            out.update(names)
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
    Java's expiry and tag deletion look only at the branch being cleaned (maintenance.md §2.7, issue #6272). We
    additionally never delete anything another branch's snapshots, tags or long-lived changelogs reference
    (upstream later added the same idea as 'other branch protection'). Empty when the table has no branches."""

    branches: list[str] = field(default_factory=list)
    data: set[DataKey] = field(default_factory=set)
    names: set[str] = field(default_factory=set)

    def protects_data(self, key: DataKey) -> bool:
        return key in self.data


def other_branches(table: Table) -> OtherBranches:
    """Raises CorruptMetadataError if anything another branch references cannot be read (fail closed)."""
    main = table if table.branch == "main" else table.for_branch("main")
    names = ["main"] + main.branches()
    out = OtherBranches([b for b in names if b != table.branch])
    if not out.branches:
        return out
    store = ManifestStore(main, capacity=STORE_CAPACITY)

    def list_names(lst: str, ref: str, may_be_gone: bool) -> list[str] | None:
        try:
            metas = store.manifest_list(lst, ref)
        except MissingFileError:
            if may_be_gone:
                return None
            raise
        out.names.add(lst)
        out.names.update(m.file_name for m in metas)
        return [m.file_name for m in metas]

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
                    (e for m in base + delta for e in store.manifest(m, ref)), ref)
                for e in list(adds.values()) + list(deletes.values()):
                    out.data.add((e.partition, e.bucket, e.file.file_name))
                    out.names.add(e.file.file_name)
                    out.names.update(e.file.extra_files)
            if kind == "changelog" and delta is not None:
                for m in delta:  # with changelog-producer=none the added files are the changelog
                    for e in store.manifest(m, ref):
                        out.data.add((e.partition, e.bucket, e.file.file_name))
                        out.names.add(e.file.file_name)
                        out.names.update(e.file.extra_files)
            if snap.changelog_manifest_list:
                cl = list_names(snap.changelog_manifest_list, ref, kind == "tag")
                for m in cl or ():
                    for e in store.manifest(m, ref):
                        out.data.add((e.partition, e.bucket, e.file.file_name))
                        out.names.add(e.file.file_name)
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


# ---------------------------------------------------------------------------------------------- paths and sizes


def file_size(table: Table, path: str) -> int | None:
    try:
        return table.io.size(path)
    except (FileNotFoundError, OSError):
        return None


def extra_file_path(data_path: str, extra: str) -> str:
    """Extra files (file-index sidecars) live next to their data file, also for external paths."""
    return posixpath.join(posixpath.dirname(data_path), extra)


def statistics_path(table: Table, name: str) -> str:
    return posixpath.join(table.statistics_dir, name)


def partition_dirs(scanner: TableScanner, partition: bytes) -> list[str]:
    """Absolute partition directories of a partition, deepest first (for empty-directory cleanup)."""
    rel = scanner.partition_dir(partition)
    out = []
    parts = [p for p in rel.split("/") if p]
    for i in range(len(parts), 0, -1):
        out.append(posixpath.join(scanner.table.data_root, *parts[:i]))
    return out


def empty_dir_actions(scanner: TableScanner, buckets: Iterable[tuple[bytes, int]], reason: str) -> list[FileAction]:
    """Bucket directories, then partition directories deepest first, each deleted only if empty at that time
    (maintenance.md §2.9). Listed in the order they must be tried."""
    seen: set[str] = set()
    bucket_dirs: list[str] = []
    by_depth: dict[int, list[str]] = {}
    for partition, bucket in sorted(set(buckets)):
        d = scanner.bucket_dir(partition, bucket)
        if d not in seen:
            seen.add(d)
            bucket_dirs.append(d)
        for depth, p in enumerate(reversed(partition_dirs(scanner, partition))):
            if p not in seen:
                seen.add(p)
                by_depth.setdefault(depth, []).append(p)
    ordered = bucket_dirs + [p for depth in sorted(by_depth, reverse=True) for p in by_depth[depth]]
    return [FileAction(p, DIRECTORY, reason) for p in ordered]


# ---------------------------------------------------------------------------------------------- plan building


@dataclass
class PlanBuilder:
    """Collects deletes phase by phase; a path is planned once (first phase wins: deletes only move earlier)."""

    deletes: list[FileAction] = field(default_factory=list)
    writes: list[FileAction] = field(default_factory=list)
    phases: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _seen: set[str] = field(default_factory=set)
    _current: dict | None = None

    def phase(self, name: str, mode: str) -> None:
        self._current = {"name": name, "mode": mode, "count": 0}
        self.phases.append(self._current)

    def add(self, action: FileAction) -> bool:
        assert self._current is not None, "call phase() first"
        if action.path in self._seen:
            return False
        self._seen.add(action.path)
        self.deletes.append(action)
        self._current["count"] += 1
        return True

    def planned(self, path: str) -> bool:
        return path in self._seen

    def warn(self, msg: str) -> None:
        log.warning(msg)
        self.warnings.append(msg)

    def build(self, operation: str, table: Table, base_snapshot: int | None, details: dict) -> Plan:
        phases = [p for p in self.phases if p["count"]]
        return Plan(operation, table.location, base_snapshot, tuple(self.deletes), tuple(self.writes),
                    {**details, "phases": phases}, tuple(self.warnings))


def plan_phases(plan: Plan) -> Iterator[tuple[dict, list[FileAction]]]:
    """(phase, its delete actions) in execution order."""
    i = 0
    for p in plan.details.get("phases", []):
        n = int(p["count"])
        yield p, list(plan.deletes[i:i + n])
        i += n
    if i != len(plan.deletes):
        raise PaimonOpsError(f"plan of {plan.operation} is inconsistent: phases cover {i} of {len(plan.deletes)} "
                             "deletes; re-plan")


# ---------------------------------------------------------------------------------------------- execution


class PhaseExecutor:
    """Runs delete phases (Deleter for unordered file phases, the driver for ordered and directory phases) and
    records what was actually deleted for the report."""

    def __init__(self, table: Table, runner: Runner | None = None, progress: Progress | None = None,
                 batch_size: int | None = None, parallel_threshold: int | None = None):
        kw = {}
        if batch_size is not None:
            kw["batch_size"] = batch_size
        if parallel_threshold is not None:
            kw["parallel_threshold"] = parallel_threshold
        self.table = table
        self.deleter = Deleter(table, runner, progress=progress, **kw)
        self.roots = allowed_roots(table)
        self.done: list[FileAction] = []
        self.missing = 0
        self.written: list[FileAction] = []

    def run(self, mode: str, actions: Sequence[FileAction]) -> None:
        if not actions:
            return
        if mode == FILES:
            done, missing = self.deleter.delete(actions)
            self.done += done
            self.missing += missing
        elif mode == ORDERED:
            check_paths(self.roots, [a.path for a in actions])
            for a in actions:
                if self.table.io.delete_file(a.path):
                    self.done.append(a)
                else:
                    self.missing += 1
        elif mode == DIRS:
            for a in actions:
                ensure_within(self.table.root, a.path)
                if posixpath.normpath(a.path) == posixpath.normpath(self.table.root):
                    continue  # never the table root
                if self.table.io.delete_dir_if_empty(a.path):
                    self.done.append(a)
        else:
            raise PaimonOpsError(f"unknown phase mode {mode!r}")

    def write(self, action: FileAction, data: bytes, atomic_if_absent: bool = False) -> bool:
        ensure_within(self.table.root, action.path)
        if atomic_if_absent:
            created = self.table.io.write_atomic_if_absent(action.path, data)
        else:
            self.table.io.write_bytes(action.path, data)
            created = True
        if created:
            self.written.append(FileAction(action.path, action.kind, action.reason, len(data)))
        return created

    def write_hint(self, action: FileAction, value: int) -> None:
        """Hints are advisory (readers verify them, maintenance.md §0.3): a failed hint write is logged, not fatal."""
        try:
            self.write(action, str(int(value)).encode())
        except OSError as e:
            log.warning("could not write hint %s = %s: %s", action.path, value, e)

    def ensure_hint(self, path: str, value: int | None, reason: str) -> None:
        """Write a hint only if it does not already say `value`: a rerun after an interrupted run repairs a hint
        the interrupted run could not write, so every run converges to the same files."""
        if value is None:
            return
        try:
            current = parse_hint(self.table.io.read_bytes(path))
        except FileNotFoundError:
            current = None
        except OSError:
            current = None
        if current != value:
            self.write_hint(FileAction(path, HINT, reason), value)


def dry_run_report(plan: Plan, started: float) -> Report:
    return Report(plan.operation, plan.table, True, round(time.time() - started, 3),
                  deleted=count_by_kind(plan.deletes), deleted_bytes=bytes_by_kind(plan.deletes),
                  written=count_by_kind(plan.writes), written_bytes=bytes_by_kind(plan.writes),
                  details=dict(plan.details), files=plan.deletes, warnings=plan.warnings)


def executed_report(plan: Plan, ex: PhaseExecutor, started: float, details: dict | None = None,
                    warnings: Sequence[str] = ()) -> Report:
    d = {k: v for k, v in plan.details.items() if k != "phases"}
    d["already_missing"] = ex.missing
    d.update(details or {})
    return Report(plan.operation, plan.table, False, round(time.time() - started, 3),
                  deleted=count_by_kind(ex.done), deleted_bytes=bytes_by_kind(ex.done),
                  written=count_by_kind(ex.written), written_bytes=bytes_by_kind(ex.written),
                  details=d, files=tuple(ex.done), warnings=tuple(plan.warnings) + tuple(warnings))


# ---------------------------------------------------------------------------------------------- deleting files of a
# snapshot/tag that is going away: shared by tag deletion here and by expiry


def plan_manifest_list(b: PlanBuilder, table: Table, store: ManifestStore, list_name: str, list_size: int | None,
                       skip: set[str], reason: str, manifests_out: list[FileAction],
                       lists_out: list[FileAction]) -> None:
    """Manifests of a list not in `skip`, then the list itself (Java cleanUnusedManifestList). `skip` doubles as
    de-duplication. An unreadable list: neither it nor its manifests are deleted (delete less)."""
    if list_name in skip:
        return
    try:
        metas = store.manifest_list(list_name, reason)
    except MissingFileError:
        skip.add(list_name)
        return  # already gone (an earlier interrupted run): nothing to do
    except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
        raise
    except CorruptMetadataError as e:
        b.warn(f"keeping manifest list {list_name} and its manifests: unreadable ({e.problem})")
        skip.add(list_name)
        return
    for m in metas:
        if m.file_name not in skip:
            skip.add(m.file_name)
            manifests_out.append(FileAction(table.manifest_path(m.file_name), MANIFEST, reason, m.file_size))
    skip.add(list_name)
    lists_out.append(FileAction(table.manifest_path(list_name), MANIFEST_LIST, reason, list_size))


def plan_index_and_stats(b: PlanBuilder, table: Table, scanner: TableScanner, snap: Snapshot, skip: set[str],
                         reason: str, contents_out: list[FileAction], lists_out: list[FileAction]) -> None:
    """Index files of the snapshot's index manifest not in `skip`, the index manifest, the statistics file."""
    im = snap.index_manifest
    if im and im not in skip:
        try:
            entries: list[IndexManifestEntry] = scanner.store.index_manifest(im, reason)
        except MissingFileError:
            entries = []
            skip.add(im)  # already gone: Java skips it too
            im = None
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            b.warn(f"keeping index manifest {im} and its index files: unreadable ({e.problem})")
            skip.add(im)
            im = None
        if im:
            for ie in entries:
                if ie.file_name not in skip:
                    skip.add(ie.file_name)
                    contents_out.append(FileAction(scanner.index_file_path(ie), INDEX,
                                                   f"{reason} ({ie.index_type})", ie.file_size))
            skip.add(im)
            p = table.manifest_path(im)
            lists_out.append(FileAction(p, INDEX_MANIFEST, reason, file_size(table, p)))
    st = snap.statistics
    if st and st not in skip:
        skip.add(st)
        p = statistics_path(table, st)
        contents_out.append(FileAction(p, STATISTICS, reason, file_size(table, p)))


def data_actions(scanner: TableScanner, e: ManifestEntry, reason: str) -> list[FileAction]:
    p = scanner.data_file_path(e.partition, e.bucket, e.file)
    out = [FileAction(p, DATA, reason, e.file.file_size)]
    out += [FileAction(xp, EXTRA, reason, file_size(scanner.table, xp))
            for xp in (extra_file_path(p, x) for x in e.file.extra_files)]
    return out


# ---------------------------------------------------------------------------------------------- tag deletion (§3.3)


def plan_delete_tags(table: Table, names: Sequence[str], missing_ok: bool = False) -> Plan:
    """Plan deleting tags with file reclamation (maintenance.md §3.3), as if deleted one after another in the
    given order. Raises InvalidArgumentError for an unknown tag (unless missing_ok) and CorruptMetadataError if a
    neighbour that protects shared files cannot be read — nothing is deleted then."""
    if isinstance(names, str):
        names = [names]
    names = list(dict.fromkeys(names))
    if not names:
        raise InvalidArgumentError("no tag names given")
    tags = read_tags(table)
    by_name = {n: t for n, t in tags}
    unknown = [n for n in names if n not in by_name]
    if unknown and not missing_ok:
        known = ", ".join(n for n, _ in tags) or "none"
        raise InvalidArgumentError(f"tag(s) {', '.join(map(repr, unknown))} do not exist on {table.identifier} "
                                   f"(branch {table.branch}); existing tags: {known}")
    store = ManifestStore(table, capacity=STORE_CAPACITY)
    scanner = TableScanner(table, store)
    others = other_branches(table)  # unreadable -> CorruptMetadataError before anything is deleted
    b = PlanBuilder()
    remaining = list(tags)  # the tag list as it will be after the deletions planned so far
    # Phases, in crash-safe order per tag: data files, empty dirs, manifests/index/stats, lists, tag file. A tag file
    # is deleted last so that a rerun after a crash can still find what is left to delete (converges).
    per_tag: list[tuple[str, list[FileAction], list[FileAction], list[FileAction], list[FileAction], FileAction]] = []
    earliest_cache: dict[str, Snapshot | None] = {}
    cl_ids: list[int] | None = None
    details_tags: list[dict] = []
    for name in names:
        if name not in by_name:
            continue
        tag = by_name[name]
        tag_action = FileAction(table.tags.path(name), TAG, f"tag {name} (snapshot {tag.id}) deleted")
        extra_tag_files = []
        success = posixpath.join(table.tags.dir, "tag-success-file", f"{name}_SUCCESS")
        if table.io.is_file(success):
            extra_tag_files.append(FileAction(success, TAG, f"success file of tag {name}"))
        others_same = [n for n, t in remaining if t.id == tag.id and n != name]
        remaining = [(n, t) for n, t in remaining if n != name]
        info = {"tag": name, "snapshot": tag.id, "reclaim": False}
        details_tags.append(info)
        if table.snapshots.exists(tag.id):
            info["why_not"] = f"snapshot {tag.id} still exists; its files are left to snapshot expiry"
            per_tag.append((name, [], [], [], extra_tag_files, tag_action))
            continue
        if others_same:
            info["why_not"] = f"tag {others_same[0]} points at the same snapshot {tag.id}"
            per_tag.append((name, [], [], [], extra_tag_files, tag_action))
            continue
        # Neighbours (§3.3 step 4): left = previous tag; right = min(earliest snapshot, next tag).
        left = None
        right_tag = None
        for n, t in remaining:
            if t.id < tag.id:
                left = (n, t)
            elif t.id > tag.id and right_tag is None:
                right_tag = (n, t)
        if "e" not in earliest_cache:
            eid = table.snapshots.earliest_id()
            earliest_cache["e"] = table.snapshots.snapshot(eid) if eid is not None else None  # corrupt -> raises
        earliest = earliest_cache["e"]
        right: tuple[str, Snapshot] | None = None
        if earliest is not None:
            right = (f"snapshot {earliest.id}", earliest)
        if right_tag is not None and (right is None or right_tag[1].id < right[1].id):
            right = (f"tag {right_tag[0]}", right_tag[1])
        protectors: list[tuple[str, Snapshot]] = []
        if left is not None:
            protectors.append((f"tag {left[0]}", left[1]))
        if right is not None:
            protectors.append(right)
        # Long-lived changelogs (decoupled lifecycle) with changelog-producer 'none' are retained owners of their
        # base/delta lists and the files they added (maintenance.md §2.8), which Java's TagDeletion ignores: by the
        # contiguity argument the nearest one on each side of the tag protects everything they need. (With another
        # producer a long-lived changelog needs only its changelog manifests, which tag deletion never touches.)
        if table.options.changelog_producer == "none":
            if cl_ids is None:
                cl_ids = table.changelogs.list_ids()
            below = [i for i in cl_ids if i <= tag.id]
            above = [i for i in cl_ids if i >= tag.id]
            for cid in sorted({*below[-1:], *above[:1]}):
                c = table.changelogs.try_snapshot(cid)  # corrupt -> raises: nothing deleted
                if c is not None:
                    protectors.append((f"changelog {cid}", c))
        prot_desc = " and ".join(f"{d} ({s.id})" for d, s in protectors) or "no neighbour"
        info["protectors"] = [d for d, _ in protectors]
        try:
            skip_data: set[DataKey] = set()
            for _, s in protectors:
                skip_data |= data_keys(store, s)
            skip_names = manifest_skipping_set(store, [s for _, s in protectors]) | others.names
        except (CorruptMetadataError, OSError) as e:
            raise CorruptMetadataError(getattr(e, "path", table.location),
                                       f"cannot read neighbour {prot_desc} of tag {name!r}; deleting nothing: "
                                       f"{getattr(e, 'problem', e)}") from None
        info["reclaim"] = True
        reason = f"only in tag {name} (snapshot {tag.id}), not in {prot_desc}"
        data: list[FileAction] = []
        buckets: set[tuple[bytes, int]] = set()
        try:
            adds, deletes = merge_entries(store.snapshot_entries(tag), f"tag {name}")
            for e in list(adds.values()) + list(deletes.values()):
                key = (e.partition, e.bucket, e.file.file_name)
                if key in skip_data or others.protects_data(key):
                    continue
                data += data_actions(scanner, e, reason)
                buckets.add((e.partition, e.bucket))
        except MissingFileError as e:
            # A rerun after an interrupted deletion finds some of the tag's manifests gone (its data went first);
            # on real loss the data files are unknown anyway. Either way: delete no data files (leak, not loss).
            b.warn(f"tag {name}: {e}; its data files are not reclaimed (remove_orphans can clean them later)")
            data, buckets = [], set()
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            b.warn(f"tag {name}: {e}; its data files are not reclaimed")
            data, buckets = [], set()
        dirs = empty_dir_actions(scanner, buckets, f"emptied by deleting tag {name}") \
            if table.options.bool("snapshot.clean-empty-directories", False,
                                  ("snapshot.expire.clean-empty-directories",)) else []
        contents: list[FileAction] = []
        lists: list[FileAction] = []
        plan_manifest_list(b, table, store, tag.base_manifest_list, tag.base_manifest_list_size, skip_names, reason,
                           contents, lists)
        plan_manifest_list(b, table, store, tag.delta_manifest_list, tag.delta_manifest_list_size, skip_names,
                           reason, contents, lists)
        plan_index_and_stats(b, table, scanner, tag, skip_names, reason, contents, lists)
        info["files"] = len(data) + len(contents) + len(lists)
        per_tag.append((name, data, dirs, contents, lists + extra_tag_files, tag_action))
    for name, data, dirs, contents, lists, tag_action in per_tag:
        b.phase(f"tag {name}: data files", FILES)
        for a in data:
            b.add(a)
        b.phase(f"tag {name}: empty directories", DIRS)
        for a in dirs:
            b.add(a)
        b.phase(f"tag {name}: manifests, index and statistics files", FILES)
        for a in contents:
            b.add(a)
        b.phase(f"tag {name}: manifest lists and index manifests", FILES)
        for a in lists:
            b.add(a)
        b.phase(f"tag {name}: tag file", ORDERED)
        b.add(tag_action)
    latest = table.snapshots.latest_id()
    return b.build("delete_tags", table, latest, {"branch": table.branch, "protected_branches": others.branches,
                                                  "earliest_snapshot": table.snapshots.earliest_id(),
                                                  "tags": details_tags,
                                                  "tag_set": [[n, t.id] for n, t in tags]})


def execute_delete_tags(table: Table, plan: Plan, runner: Runner | None = None, progress: Progress | None = None,
                        batch_size: int | None = None, parallel_threshold: int | None = None) -> Report:
    started = time.time()
    # Tags are re-read right before the first delete: a tag created or deleted concurrently invalidates the plan's
    # neighbour choice (maintenance.md §2.5).
    now_tags = [[n, t.id] for n, t in read_tags(table)]
    if now_tags != plan.details.get("tag_set"):
        raise PaimonOpsError(f"tags of {table.identifier} changed since the plan was made; nothing deleted, re-plan")
    if table.snapshots.earliest_id() != plan.details.get("earliest_snapshot"):
        raise PaimonOpsError(f"the earliest snapshot of {table.identifier} changed since the plan was made (it is a "
                             "protecting neighbour); nothing deleted, re-plan")
    ex = PhaseExecutor(table, runner, progress, batch_size, parallel_threshold)
    for phase, actions in plan_phases(plan):
        ex.run(phase["mode"], actions)
    log.info("deleted tags %s of %s: %d files", [t["tag"] for t in plan.details.get("tags", [])], table.identifier,
             len(ex.done))
    return executed_report(plan, ex, started)


def delete_tags(table: Table, names: Sequence[str], dry_run: bool = False, runner: Runner | None = None,
                progress: Progress | None = None, missing_ok: bool = False, batch_size: int | None = None,
                parallel_threshold: int | None = None) -> Report:
    """Delete tags and reclaim the files only they kept alive (maintenance.md §3.3). `dry_run` returns the plan as
    a report (files with kind and reason) without touching anything."""
    started = time.time()
    plan = plan_delete_tags(table, names, missing_ok=missing_ok)
    if dry_run:
        return dry_run_report(plan, started)
    return execute_delete_tags(table, plan, runner, progress, batch_size, parallel_threshold)


__all__ = ["plan_delete_tags", "delete_tags", "execute_delete_tags", "data_keys", "manifest_skipping_set",
           "read_tags", "nearest_tag_below", "skipping_tags", "DataSkipper", "PlanBuilder", "PhaseExecutor",
           "plan_phases", "FILES", "ORDERED", "DIRS"]
