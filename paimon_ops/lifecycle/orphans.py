"""Orphan-file removal (maintenance.md §4).

    plan_remove_orphans(table, older_than=None, min_age=None, allow_short=False, now=None) -> RemoveOrphansPlan

The plan requires that none of the files it deletes is referenced when it executes (`NotReferenced`: every
snapshot, tag and long-lived changelog of every branch is read again), so a reviewed plan applied later can never
delete a file a commit made since has started to use.

Candidates: regular files under `manifest/`, `index/`, `statistics/` and the partition/bucket data directories, plus
leftover temporary files in every branch's `snapshot/` and `changelog/` directories, strictly older than the
threshold (default now - 3 days; less than 1 day is refused unless `allow_short=True`; a threshold in the future is
refused). A candidate is an orphan when its *name* is not referenced by any snapshot, tag or long-lived changelog of
any branch (manifest lists, manifests, data files, extra files, index manifests, index files, statistics files).

Stricter than Java (which treats a missing manifest as empty, §4.3): the whole run is refused, deleting nothing,
when any metadata is unreadable, when a manifest/index manifest referenced by a still-existing snapshot or tag is
missing, or when a branch has no schema. Directories are only removed when a listing shows them empty; nothing
outside the table root and the configured `data-file.external-paths` is touched. External roots are scanned like
the table's data directory (`<root>/<partitions>/bucket-*/`), as Java does — which assumes a root belongs to one
table: a root another table of the same warehouse also names is refused (its files could not be told apart).
"""
from __future__ import annotations

import datetime as _dt
import functools
import logging
import os
import posixpath
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

import paimon_ops.table.external as external
from paimon_ops.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    TableNotFoundError,
    UnsafeOperationError,
    arg,
)
from paimon_ops.execution.journal import plan_pending
from paimon_ops.execution.placement import spark_placed
from paimon_ops.execution.plan import (
    DELETE_DIRS,
    DELETE_FILES,
    DIRECTORY,
    ORPHAN,
    TEMP,
    FileAction,
    Plan,
    PlanBuilder,
    Precondition,
    Workload,
    planner,
)
from paimon_ops.execution.runner import Runner
from paimon_ops.features import MANAGED_BLOB_SUFFIXES
from paimon_ops.operations.model import InstantMs
from paimon_ops.operations.remove_orphans import DEFAULT_MIN_AGE
from paimon_ops.operations.remove_orphans import OPERATION as REMOVE_ORPHANS
from paimon_ops.table.consistency import check_history
from paimon_ops.table.fileio import FileIO, FileStatus, ensure_within
from paimon_ops.table.lineage import unlisted_live_files
from paimon_ops.table.references import branch_tables, collect_used, referenced_among
from paimon_ops.table.removal import allowed_roots, check_paths
from paimon_ops.table.table import CHANGELOG_PREFIX, EARLIEST, LATEST, SNAPSHOT_PREFIX, FileStoreTable
from paimon_ops.timeutil import iso

log = logging.getLogger(__name__)

MIN_OLDER_THAN = _dt.timedelta(days=1)
DAY_MS = 86_400_000
_PARTITION_DIR = re.compile(r"^[^=]+=.*$")


class RemoveOrphansPlan(Plan):
    """Deleting files nothing references, older than a threshold."""

    operation = "remove_orphans"
    op = REMOVE_ORPHANS  # its operation (the feature gate, the planner's parameters)

    def workload(self) -> Any:
        d = self.details if isinstance(self.details, dict) else {}
        return Workload(deletes=sum(len(s.files) for s in self.steps if s.deletes), manifests=int(d.get("manifest_dir_files") or 0),
                        files=int(d.get("candidates") or 0))


@dataclass(frozen=True)
class NotReferenced(Precondition):
    """None of these file names is referenced by any snapshot, tag or long-lived changelog of any branch now."""

    kind: ClassVar[str] = "not-referenced"
    preflight_covers: ClassVar[bool] = True  # deleter.check_unreferenced reads the same used set before deleting
    names: tuple[str, ...]

    def check(self, table: Any) -> str | None:
        branches = branch_tables(table)
        try:
            used = collect_used(branches[0], branches)
        except CorruptMetadataError as e:
            return f"metadata became unreadable ({e})"
        now_used = sorted(set(self.names) & used.names)
        if now_used:
            more = f" and {len(now_used) - 3} more" if len(now_used) > 3 else ""
            return f"{', '.join(now_used[:3])}{more} are referenced by the table now"
        return None

    def describe(self) -> str:
        return f"the {len(self.names)} planned file(s) are still unreferenced"


def resolve_threshold(older_than: Any, now_millis: int, allow_short: bool, min_age: Any = None) -> int:
    """Epoch millis; files strictly older than this are candidates. `older_than` is an instant (a timedelta is read
    as an age, as older callers pass it), `min_age` an age."""
    name = "min_age" if min_age is not None else "older_than"
    if min_age is not None:
        if older_than is not None:
            raise InvalidArgumentError(f"give {arg('older_than')} (an instant) or {arg('min_age')} (an age), not both")
        older_than = min_age
    if older_than is None:
        thr = now_millis - int(DEFAULT_MIN_AGE.total_seconds() * 1000)
    elif isinstance(older_than, _dt.timedelta):
        if older_than.total_seconds() < 0:
            raise InvalidArgumentError(f"{arg(name)} must not be negative, got {older_than}")
        thr = now_millis - int(older_than.total_seconds() * 1000)
    elif isinstance(older_than, _dt.datetime):
        thr = int(older_than.timestamp() * 1000)
    elif isinstance(older_than, int) and not isinstance(older_than, bool):
        thr = older_than
    else:
        raise InvalidArgumentError(f"{arg(name)} must be a timedelta (age), a datetime or epoch milliseconds, "
                                   f"not {older_than!r}")
    if thr > now_millis:
        raise InvalidArgumentError(f"{arg(name)} ({thr} ms) is in the future (now is {now_millis} ms): every file, "
                                   "including those of commits in flight, would be a candidate")
    if now_millis - thr < DAY_MS and not allow_short:
        raise UnsafeOperationError(
            f"{arg(name)} is only {(now_millis - thr) / 3_600_000:.1f} h before now: files of commits still "
            "in flight or of long-running writers could be deleted. Use at least 1 day, or pass "
            f"{arg('allow_short', True)} if no writer can be active")
    return thr


# ---------------------------------------------------------------------------------------------- candidates


# Directories listed at once: listing is system calls (lstat per entry) that release the GIL, and on object stores
# round trips; a thread pool overlaps them while the results are still taken in order.
LIST_THREADS = 8
LOCAL_LIST_SERIAL = 8  # local directories listed one after the other below this many (a thread costs more)


def _list_raw(io: FileIO, path: str) -> list[FileStatus] | Exception:
    try:
        return io.list_status(path, include_symlinks=True)
    except (UnsafeOperationError, OSError) as e:
        return e


def _accept(io: FileIO, path: str, entries: list[FileStatus] | Exception, b: PlanBuilder,
            symlinks: dict[str, str | None] | None) -> list[FileStatus]:
    """Children of `path`, never through a symlink: symlinks found are recorded in `symlinks` (reported with their
    target, left alone) and never returned as candidates."""
    if isinstance(entries, UnsafeOperationError):  # the directory itself is reached through a symlink
        if symlinks is not None and io.is_symlink(path) and path not in symlinks:
            symlinks[path] = os.readlink(path)
        b.warn(f"not listing {path}: {entries}")
        return []
    if isinstance(entries, Exception):
        b.warn(f"cannot list {path} ({entries}); its files are not considered")
        return []
    out = []
    for st in entries:
        if st.is_symlink:
            if symlinks is not None and st.path not in symlinks:
                symlinks[st.path] = st.link_target
                b.warn(f"symbolic link {st.path} -> {st.link_target} inside the table: left alone, never followed")
            continue
        out.append(st)
    return out


def _list(io: FileIO, path: str, b: PlanBuilder, symlinks: dict[str, str | None] | None = None) -> list[FileStatus]:
    return _accept(io, path, _list_raw(io, path), b, symlinks)


def _list_many(io: FileIO, paths: list[str], b: PlanBuilder,
               symlinks: dict[str, str | None] | None = None) -> list[list[FileStatus]]:
    """`_list` of each path (same results, same warnings in the same order), the listings done in parallel (a few
    local directories: here, where starting threads would cost more than the listings)."""
    if len(paths) < (LOCAL_LIST_SERIAL if io.is_local else 2):
        return [_list(io, p, b, symlinks) for p in paths]
    with ThreadPoolExecutor(min(LIST_THREADS, len(paths)), thread_name_prefix="paimon-ops-list") as pool:
        raw = list(pool.map(functools.partial(_list_raw, io), paths))
    return [_accept(io, p, r, b, symlinks) for p, r in zip(paths, raw)]


def _data_dirs(table: FileStoreTable, b: PlanBuilder, symlinks: dict[str, str | None],
               root: str | None = None) -> tuple[list[str], dict[str, list[str]]]:
    """(candidate directories whose files are considered, partition directory -> its child directories), below the
    table's data root or below `root` (an external data path)."""
    io = table.io
    root = root or table.data_root
    depth = len(table.schema.partition_keys)
    level = [root]
    children: dict[str, list[str]] = {}
    for _ in range(depth):
        nxt = []
        for d, listed in zip(level, _list_many(io, level, b, symlinks)):
            kids = [st.path for st in listed if st.is_dir and _PARTITION_DIR.match(st.name)]
            if d != root:
                children[d] = kids
            nxt += kids
        level = nxt
    dirs: list[str] = []
    for d, listed in zip(level, _list_many(io, level, b, symlinks)):
        buckets = [st.path for st in listed if st.is_dir and st.name.startswith("bucket-")]
        if d != root:
            children[d] = buckets
        if buckets:
            dirs += buckets
        elif depth > 0:
            dirs.append(d)  # a partition directory without bucket dirs (apache/paimon#7295): its old files are candidates
    return dirs, children


def _mtime(io: FileIO, path: str, default: int) -> int:
    try:
        st = io.fs.get_file_info(path)
    except OSError:
        return default
    return int(st.mtime.timestamp() * 1000) if st.mtime is not None else default


def _external_data_roots(table: FileStoreTable) -> list[str]:
    """The data roots under the configured external paths (`<root>[/data-file.path-directory]`), resolved; refused
    when another table of the warehouse names the same root (its files would look like orphans of this one)."""
    roots = external.configured_roots(table)
    if not roots:
        return []
    mine = {external.resolved_root(table, r) for r in roots if external.on_table_fs(table, r)}
    db_dir = posixpath.dirname(table.root)
    if db_dir.endswith(".db"):
        for db in table.io.list_status(posixpath.dirname(db_dir)):
            if not (db.is_dir and db.name.endswith(".db")):
                continue
            for st in table.io.list_status(db.path):
                if not st.is_dir or st.path == table.root:
                    continue
                try:
                    other = FileStoreTable(st.path, identifier=f"{db.name[:-3]}.{st.name}", io=table.io)
                    # (leniently: another table's unusable entry is its own problem, not a reason to stop here)
                    shared = mine & {external.resolved_root(other, r) for r in
                                     external.configured_roots(other, strict=False) if external.on_table_fs(other, r)}
                except (TableNotFoundError, CorruptMetadataError):
                    continue
                if shared:
                    raise UnsafeOperationError(
                        f"data-file.external-paths root {sorted(shared)[0]} of {table.identifier} is also an external "
                        f"path of {other.identifier}; refusing to remove orphans there (files of one table would look "
                        "like orphans of the other)")
    sub = table.options.data_path_directory
    return [posixpath.join(r, sub) if sub else r for r in sorted(mine)]


def _check_saved_time(params: dict[str, Any]) -> None:
    """A saved plan's recorded time must not be ahead of the clock: a `now` moved forward would make files of commits
    in flight older than the threshold. (A caller may pass any `now`; a plan file is not a caller.)"""
    now = params.get("now", params.get("now_millis"))
    wall = int(time.time() * 1000)
    if isinstance(now, int) and now > wall + 60_000:
        thr = resolve_threshold(params.get("older_than"), now, True, params.get("min_age"))
        if thr > wall - (0 if params.get("allow_short") else DAY_MS):
            raise InvalidArgumentError(f"the plan's time {iso(now)} is ahead of the clock ({iso(wall)}): its "
                                       f"threshold {iso(thr)} would make files of commits in flight candidates")


@planner(RemoveOrphansPlan, check_saved=_check_saved_time, internal=("runner",), renamed={"now_millis": "now"})
def plan_remove_orphans(table: FileStoreTable, *, older_than: InstantMs | None = None,
                        min_age: _dt.timedelta | None = None, allow_short: bool = False, now: InstantMs | None = None,
                        runner: Runner | None = None) -> Plan:
    """Files no snapshot, tag or long-lived changelog of any branch references, older than the threshold. The
    manifests are read, and the candidates' names told apart from the referenced ones, on Spark when the runner
    (`runner`, else the one the caller plans with, else the default) places the plan there: beyond
    execution.local.max-manifests files in manifest/ or execution.local.max-files candidates, or when the caller
    chose Spark."""
    now = int(time.time() * 1000) if now is None else int(now)
    threshold = resolve_threshold(older_than, now, allow_short, min_age)
    branches = branch_tables(table)
    main = branches[0]
    check_history(main, "orphan removal")
    notes: list[str] = []
    b = PlanBuilder()
    plan_pending(b, main)  # first finish what an interrupted run left (whatever its age)
    # Candidates are listed BEFORE the used set is read: a file committed in between is then already referenced.
    # (It is also younger than the threshold; both guards hold.)
    io = main.io
    cand_dirs = [main.manifest_dir, main.index_dir, main.statistics_dir]
    symlinks: dict[str, str | None] = {}
    data_dirs, partition_children = _data_dirs(main, b, symlinks)
    ext_roots = _external_data_roots(main)
    for root in ext_roots:
        more_dirs, more_children = _data_dirs(main, b, symlinks, root)
        data_dirs += more_dirs
        partition_children.update(more_children)
    if ext_roots:
        notes.append(f"external data paths scanned: {', '.join(ext_roots)}")
    roots = allowed_roots(main)
    candidates: list[FileStatus] = []
    listing: dict[str, list[FileStatus]] = {}
    scan_dirs = cand_dirs + data_dirs
    for d, entries in zip(scan_dirs, _list_many(io, scan_dirs, b, symlinks)):
        listing[d] = entries
        # (managed BLOB packs are referenced from data, never from manifests: never candidates, as in Java)
        candidates += [st for st in entries if not st.is_dir and st.mtime_millis < threshold
                       and not st.name.endswith(MANAGED_BLOB_SUFFIXES)]
    temps: list[FileStatus] = []
    for bt in branches:
        for mgr_dir, prefix in ((bt.snapshots.dir, SNAPSHOT_PREFIX), (bt.changelogs.dir, CHANGELOG_PREFIX)):
            for st in _list(io, mgr_dir, b, symlinks):
                if st.is_dir or st.name.startswith(prefix) or st.name in (EARLIEST, LATEST):
                    continue
                if st.mtime_millis < threshold:
                    temps.append(st)
    n_candidates = len(candidates) + len(temps)
    spark, _ = spark_placed(runner, Workload(manifests=len(listing.get(main.manifest_dir, ())), files=n_candidates),
                            main.options)
    try:
        referenced, referenced_total, owners = referenced_among(main, branches, [st.name for st in candidates], spark)
    except CorruptMetadataError as e:
        raise CorruptMetadataError(e.path, f"{e.problem}; refusing to remove orphans (nothing deleted)") from None
    # What no later snapshot vouches for (the newest delta, a lone snapshot's base, a tag whose snapshot is gone)
    # keeps only files the table's directories hold: else its lists are another table's, and this table's own
    # files would all look unreferenced (table.lineage)
    present = {st.name for d in data_dirs for st in listing.get(d, ()) if not st.is_dir}
    stray = unlisted_live_files(main, present)
    if stray is not None:
        raise CorruptMetadataError(stray[1], f"kept live by {stray[0]} of {main.identifier}, is in none of its data "
                                             "directories (its manifest lists are not this table's?); refusing to "
                                             "remove orphans (nothing deleted)")
    if not owners and (candidates or temps):
        raise UnsafeOperationError(
            f"{main.identifier} has no snapshot, tag or changelog on any branch, so nothing is referenced and every "
            f"one of its {len(candidates) + len(temps)} files would be an orphan; refusing to remove orphans from a "
            "table without history (Java deletes them all: apache/paimon#7710)")
    age_h = (now - threshold) / 3_600_000
    b.step("orphan files", DELETE_FILES)
    orphans = [st for st in sorted(candidates, key=lambda s: s.path) if st.name not in referenced]
    check_paths(roots, [st.path for st in orphans])
    reason = f"referenced by no snapshot, tag or changelog of any branch; older than {age_h:.0f} h"
    for st in orphans:
        b.add(FileAction(st.path, ORPHAN, reason, st.size))
    b.step("temporary metadata files", DELETE_FILES)
    for st in sorted(temps, key=lambda s: s.path):
        ensure_within(main.root, st.path)
        b.add(FileAction(st.path, TEMP, f"leftover temporary file older than {age_h:.0f} h", st.size))
    # Directories that will be empty once the orphans are gone (and old enough, so that no writer is about to use
    # them): data directories first, then partition directories deepest first. Each is removed only if a listing
    # shows it empty at that moment.
    names = sorted({st.name for st in candidates if b.planned(st.path)} | {st.name for st in temps})
    b.step("empty directories", DELETE_DIRS)
    planned = {st.path for st in candidates + temps if b.planned(st.path)}
    holds_link = {posixpath.dirname(p) for p in symlinks}
    will_be_empty: set[str] = set()
    for d in data_dirs:
        entries = listing.get(d, [])
        if d in holds_link or any(st.is_dir or st.path not in planned for st in entries):
            continue
        if not entries and _mtime(io, d, now) >= threshold:
            continue
        will_be_empty.add(d)
        b.add(FileAction(d, DIRECTORY, "empty after orphan removal (deleted only if empty)"))
    parents = sorted(partition_children, key=lambda x: (-x.count("/"), x))
    for d in parents:
        if d in will_be_empty:
            continue
        kids = partition_children[d]
        files = [st for st in listing.get(d, [])] if d in listing else _list(io, d, b, symlinks)
        if d in holds_link:
            continue
        if kids and all(k in will_be_empty for k in kids) and not [st for st in files if not st.is_dir]:
            will_be_empty.add(d)
            b.add(FileAction(d, DIRECTORY, "empty partition directory (deleted only if empty)"))
    if names:
        b.require(NotReferenced(tuple(names)))
    details = {"older_than": iso(threshold), "now": iso(now), "branches": [t.branch for t in branches],
               "candidates": n_candidates, "referenced_names": referenced_total,
               "owners_read": owners, "manifest_dir_files": len(listing.get(main.manifest_dir, ())),
               "notes": notes,
               "symlinks": [{"path": p, "target": t} for p, t in sorted(symlinks.items())]}
    return b.build(RemoveOrphansPlan, main, details)


__all__ = ["RemoveOrphansPlan", "plan_remove_orphans", "resolve_threshold"]
