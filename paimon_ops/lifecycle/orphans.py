"""Orphan-file removal (maintenance.md §4).

    plan_remove_orphans(table, older_than=None, now_millis=None, allow_short=False) -> RemoveOrphansPlan

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
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from paimon_ops.errors import (
    CorruptMetadataError,
    InvalidArgumentError,
    MissingFileError,
    TableNotFoundError,
    UnsafeOperationError,
    arg,
)
from paimon_ops.execution.journal import plan_pending
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
    planner,
)
from paimon_ops.features import MANAGED_BLOB_SUFFIXES
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.consistency import check_history
from paimon_ops.lifecycle.protection import STORE_CAPACITY
from paimon_ops.table.fileio import FileIO, FileStatus, ensure_within
from paimon_ops.table.scan import ManifestStore
from paimon_ops.table.table import CHANGELOG_PREFIX, EARLIEST, LATEST, SNAPSHOT_PREFIX, Table
from paimon_ops.timeutil import iso

log = logging.getLogger(__name__)

DEFAULT_OLDER_THAN = _dt.timedelta(days=3)
MIN_OLDER_THAN = _dt.timedelta(days=1)
DAY_MS = 86_400_000
_PARTITION_DIR = re.compile(r"^[^=]+=.*$")


class RemoveOrphansPlan(Plan):
    """Deleting files nothing references, older than a threshold."""

    operation = "remove_orphans"

    def workload(self) -> Any:
        from paimon_ops.execution.plan import Workload
        d = self.details if isinstance(self.details, dict) else {}
        return Workload(deletes=len(self.deletes), manifests=int(d.get("manifest_dir_files") or 0),
                        files=int(d.get("candidates") or 0))


@dataclass(frozen=True)
class NotReferenced(Precondition):
    """None of these file names is referenced by any snapshot, tag or long-lived changelog of any branch now."""

    kind: ClassVar[str] = "not-referenced"
    preflight_covers: ClassVar[bool] = True  # deleter.check_unreferenced reads the same used set before deleting
    names: tuple[str, ...]

    def check(self, table: Any) -> str | None:
        branches = _branch_tables(table)
        try:
            used = _collect_used(branches[0], branches)
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
        thr = now_millis - int(DEFAULT_OLDER_THAN.total_seconds() * 1000)
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


# ---------------------------------------------------------------------------------------------- used names


# Manifests queued before they are decoded together (bounds what is held: names only, never entries).
PENDING_MANIFESTS = 512
DECODE_BATCH = 32  # manifests decoded at once (what is held: their lifecycle columns)


class _Used:
    """Names referenced by every snapshot, tag and long-lived changelog of every branch."""

    def __init__(self, main: Table, defer: bool = False):
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


def _branch_tables(table: Table) -> list[Table]:
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


def _collect_used(main: Table, branches: list[Table], defer: bool = False) -> _Used:
    """Every name referenced; `defer`: the manifests are left queued (`_pending`) for `referenced_on_spark`."""
    used = _Used(main, defer)
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
    table = Table(table_location)
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


def referenced_on_spark(runner: Any, used: _Used, candidates: list[str]) -> tuple[set[str], int]:
    """The live-set difference on Spark: executors decode the manifests `used` has queued (`_collect_used(…,
    defer=True)`) into the names they reference, which are joined there with the candidates' names and the names
    read on the driver (manifest lists, manifests, index and statistics files). Returns (the candidates that are
    referenced, how many distinct names are referenced) — what `used.names` answers in-process; only those come
    back to the driver. A missing manifest is judged per owner as in-process (`_Used.flush`)."""
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
        frames.append(runner.frame("paimon_ops.lifecycle.orphans.manifest_names_task", used.main.location, tasks,
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


def referenced_among(main: Table, branches: list[Table], candidates: list[str], runner: Any = None
                     ) -> tuple[set[str], int, int]:
    """(which of `candidates` any snapshot, tag or long-lived changelog of any branch references, how many distinct
    names are referenced, how many owners were read): in-process, or on Spark when `runner` is one."""
    used = _collect_used(main, branches, defer=runner is not None)
    if runner is None:
        return {n for n in candidates if n in used.names}, len(used.names), used.owners
    hit, total = referenced_on_spark(runner, used, candidates)
    return hit, total, used.owners


# ---------------------------------------------------------------------------------------------- candidates


# Directories listed at once: listing is system calls (lstat per entry) that release the GIL, and on object stores
# round trips; a thread pool overlaps them while the results are still taken in order.
LIST_THREADS = 8


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
    """`_list` of each path (same results, same warnings in the same order), the listings done in parallel."""
    if len(paths) < 2:
        return [_list(io, p, b, symlinks) for p in paths]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(min(LIST_THREADS, len(paths)), thread_name_prefix="paimon-ops-list") as pool:
        raw = list(pool.map(functools.partial(_list_raw, io), paths))
    return [_accept(io, p, r, b, symlinks) for p, r in zip(paths, raw)]


def _data_dirs(table: Table, b: PlanBuilder, symlinks: dict[str, str | None],
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
            dirs.append(d)  # a partition directory without bucket dirs (Java #7295): its old files are candidates
    return dirs, children


def _mtime(io: FileIO, path: str, default: int) -> int:
    try:
        st = io.fs.get_file_info(path)
    except OSError:
        return default
    return int(st.mtime.timestamp() * 1000) if st.mtime is not None else default


def _external_data_roots(table: Table) -> list[str]:
    """The data roots under the configured external paths (`<root>[/data-file.path-directory]`), resolved; refused
    when another table of the warehouse names the same root (its files would look like orphans of this one)."""
    from paimon_ops.table import external
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
                    other = Table(st.path, identifier=f"{db.name[:-3]}.{st.name}", io=table.io)
                    shared = mine & set(external.allowed_roots(other))
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
    now = params.get("now_millis")
    wall = int(time.time() * 1000)
    if isinstance(now, int) and now > wall + 60_000:
        thr = resolve_threshold(params.get("older_than"), now, True, params.get("min_age"))
        if thr > wall - (0 if params.get("allow_short") else DAY_MS):
            raise InvalidArgumentError(f"the plan's time {iso(now)} is ahead of the clock ({iso(wall)}): its "
                                       f"threshold {iso(thr)} would make files of commits in flight candidates")


@planner("remove_orphans", check_saved=_check_saved_time, internal=("runner",))
def plan_remove_orphans(table: Table, older_than: Any = None, now_millis: int | None = None,
                        allow_short: bool = False, min_age: Any = None, runner: Any = None) -> Plan:
    """Files no snapshot, tag or long-lived changelog of any branch references, older than the threshold. The
    manifests are read, and the candidates' names told apart from the referenced ones, on Spark when the runner
    (`runner`, else the one the caller plans with, else the default) places the plan there: beyond
    execution.local.max-manifests files in manifest/ or execution.local.max-files candidates, or when the caller
    chose Spark."""
    now = int(time.time() * 1000) if now_millis is None else int(now_millis)
    threshold = resolve_threshold(older_than, now, allow_short, min_age)
    branches = _branch_tables(table)
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
    from paimon_ops.execution.deleter import allowed_roots, check_paths
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
    from paimon_ops.execution.plan import Workload
    from paimon_ops.execution.runner import spark_placed
    n_candidates = len(candidates) + len(temps)
    spark, _ = spark_placed(runner, Workload(manifests=len(listing.get(main.manifest_dir, ())), files=n_candidates),
                            main.options)
    try:
        referenced, referenced_total, owners = referenced_among(main, branches, [st.name for st in candidates], spark)
    except CorruptMetadataError as e:
        raise CorruptMetadataError(e.path, f"{e.problem}; refusing to remove orphans (nothing deleted)") from None
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


__all__ = ["RemoveOrphansPlan", "plan_remove_orphans", "resolve_threshold", "DEFAULT_OLDER_THAN"]
