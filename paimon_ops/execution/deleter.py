"""The one deletion path: every file paimon-ops deletes — a plan's delete phases, the files an interrupted or
failed run wrote and did not commit — goes through here.

Before the first delete of an execution, `preflight` validates every path of every delete step (design.md §1: a
refusal leaves the table exactly as it was and names the path):

* where it is: under the real table root or a configured external data path, in the directory its kind lives in
  (a data file in a bucket directory, a manifest in manifest/, a snapshot in a branch's snapshot/, …), with a plain
  name (no '/', control characters, '..'; at most 255 bytes);
* what it is (local file systems): every directory on the way opened without following a symbolic link, the
  directory writable, the file a regular file (or already gone) — checked per directory, with one listing for
  directories holding many of the files;
* whether it is still needed: no snapshot, tag or long-lived changelog of any branch that stays keeps a content file
  the plan deletes alive (`references.kept_names`, read now from the live table).

Then the phases run in the caller's order, one at a time, each complete before the next starts (the crash-safe
order of maintenance.md §2.3–2.4 is the order of the phases: data files, then manifests, then manifest lists, …).
Within a phase the order does not matter, so its files are deleted concurrently: on a local or HDFS-like file
system by `file-operation.thread-num` threads of this process, in batches per directory (each batch opens its
directory once, without following a link; one listing per directory serves all its batches); on an object store in
bulk requests, several in flight; or in batches on Spark executors when the plan was placed there. Each executor
checks its paths against the roots again, and the FileIO underneath never deletes through a symlink. A failure or
an interrupt stops every batch at its next file and the phase raises: no later phase starts. Deletes are quiet
about missing files, so a rerun after a crash is idempotent. The checks cost a few string operations per file and a
system call per directory (or per file in directories holding few of them); `delete_task` is the executor side.
"""
from __future__ import annotations

import errno
import logging
import os
import posixpath
import re
import stat as _stat
import sys
import threading
from array import array
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

from paimon_ops.errors import PaimonOpsError, PreflightError, UnsafeOperationError
from paimon_ops.execution.files import FileAction, FileList, FileParts
from paimon_ops.execution.model import (
    BRANCH_DIRECTORY,
    CHANGELOG,
    CONSUMER,
    CONTENT_KINDS,
    DATA,
    DIRECTORY,
    EXTRA,
    HINT,
    INDEX,
    INDEX_MANIFEST,
    JOURNAL,
    LEFTOVER,
    LONG_CHANGELOG,
    MANIFEST,
    MANIFEST_LIST,
    ORPHAN,
    OWNER_KINDS,
    SCHEMA,
    SNAPSHOT,
    STATISTICS,
    TAG,
    TEMP,
    Step,
)
from paimon_ops.execution.runner import Progress, Runner
from paimon_ops.format.names import first_unplain
from paimon_ops.options import FILE_OPERATION_THREAD_NUM
from paimon_ops.table.consistency import check_history
from paimon_ops.table.fileio import FileIO
from paimon_ops.table.local_fileio import LocalFileIO, entry_types
from paimon_ops.table.references import (
    branch_tables,
    kept_names,
    referenced_among,
    referencing_owner,
)
from paimon_ops.table.removal import allowed_roots, check_paths
from paimon_ops.table.table import (
    BRANCH_PREFIX,
    CHANGELOG_PREFIX,
    CONSUMER_PREFIX,
    EARLIEST,
    LATEST,
    SCHEMA_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    FileStoreTable,
)

log = logging.getLogger(__name__)

DEFAULT_BATCH = 1000
# Below this many files a Spark job costs more than it saves (a plan placed on Spark). On a local disk a delete takes
# microseconds and the driver beats executors at any size (benchmarks/bench_expiry.py: 70k deletes/s inline vs 5k/s
# on local[2]); on HDFS each delete is a round trip, which the driver's delete threads overlap as well.
PARALLEL_THRESHOLD = 500
# Delete threads on local and HDFS-like file systems when `file-operation.thread-num` is unset (Java: the CPU
# count). An unlink is a system call the GIL is released for, and on a busy journaling file system mostly waiting:
# benchmarks/bench_scale.py measured 8 threads at 3-10x one on this 2-core machine under load, and no worse than 2
# when it was quiet. Threads beyond what a phase's batches can use are not started.
DELETE_THREADS = 8
CONCURRENT_MIN_FILES = 64   # a phase with fewer files is deleted inline, one file after the other
PREFLIGHT_THREADS = 2  # directories checked at once (each holds its listing: ~13 MB for 100,000 files)
BATCH_MIN, BATCH_MAX = 16, 4096  # files per concurrent batch (about four batches per thread, within these bounds)
# Object stores with bulk deletes (1,000 keys per request, several in flight) delete ~10k files/s from the driver
# (benchmarks/bench_expiry_s3.py); executors pay off only for very large phases.
BULK_PARALLEL_THRESHOLD = 200_000
BULK_DRIVER_CHUNK = 100_000


# ---------------------------------------------------------------------------------------------- preflight
NAME_MAX = 255          # bytes of one path component (local file systems; S3 keys are checked whole)
PATH_MAX = 4096
OBJECT_KEY_MAX = 1024
LISTING_THRESHOLD = 32  # a directory holding more of the files to delete is listed once instead of lstat per file
JOURNAL_DIR = ".paimon-ops"
_BUCKET = re.compile(r"^bucket-(\d+|postpone)$")
_ID_FILE = re.compile(r"^(snapshot|changelog|schema)-\d+$")
# A branch's metadata directories (branch life cycle: created, renamed and deleted with the branch).
BRANCH_SUBDIRS = ("snapshot", "tag", "schema", "consumer", "changelog")
METADATA_SUBDIRS = BRANCH_SUBDIRS  # where an atomic create (a commit, a tag, a branch's copy) may leave a temp file


def bad_name(name: str) -> str | None:
    """Why `name` is not a plain file name, or None."""
    if not name or name in (".", ".."):
        return "an empty name or '.'/'..'"
    if "/" in name or "\\" in name:
        return "a name with a path separator"
    if not name.isprintable():
        return "a name with control characters"
    if len(name) > NAME_MAX or (not name.isascii() and len(name.encode("utf-8", "surrogateescape")) > NAME_MAX):
        return f"a name longer than {NAME_MAX} bytes"
    return None


class Layout:
    """Which directory each kind of file lives in, for one table (all branches)."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.root = posixpath.normpath(table.root)
        self.data_root = posixpath.normpath(table.data_root)
        self.depth = len(table.schema.partition_keys)
        self.external = [posixpath.normpath(r) for r in allowed_roots(table)[1:]]
        # where partition and bucket directories are: the table's data root and, alike, each external root (Java
        # puts `<data-file.path-directory>/<partition>/bucket-N` under it)
        sub = table.options.data_path_directory
        self.data_roots = [self.data_root] + [posixpath.join(e, sub) if sub else e for e in self.external]
        self.index_in_data = table.options.index_file_in_data_dir
        self._memo: dict[tuple[str, str], str | None] = {}

    def _branch_root(self, d: str) -> bool:
        if d == self.root:
            return True
        parent, name = posixpath.split(d)
        return parent == posixpath.join(self.root, "branch") and name.startswith(BRANCH_PREFIX)

    def _branch_dir(self, d: str) -> bool:
        """A branch's own directory (`branch/branch-<name>`) or one of its metadata directories."""
        if d != self.root and self._branch_root(d):
            return True
        parent, name = posixpath.split(d)
        if name == "tag-success-file":
            parent, name = posixpath.split(parent)
            if name != "tag":
                return False
        return name in BRANCH_SUBDIRS and parent != self.root and self._branch_root(parent)

    def _bucket_dir(self, d: str) -> bool:
        for base in [self.data_root] + self.external:
            if d.startswith(base.rstrip("/") + "/"):
                parts = d[len(base.rstrip("/")) + 1:].split("/")
                if not _BUCKET.match(parts[-1]):
                    continue
                if base != self.data_root:
                    return True  # external paths: <root>/<partition dirs>/bucket-N
                if len(parts) == self.depth + 1 and all("=" in p for p in parts[:-1]):
                    return True
        return False

    def _partition_parts(self, d: str) -> list[str] | None:
        """The partition path components of `d` below a data root (the table's or an external one), or None."""
        for base in self.data_roots:
            if d.startswith(base.rstrip("/") + "/"):
                parts = d[len(base.rstrip("/")) + 1:].split("/")
                if all("=" in p for p in parts):
                    return parts
        return None

    def _data_dir(self, d: str) -> bool:
        """A bucket directory, or a partition directory at full depth (files Java left there, apache/paimon#7295)."""
        if self._bucket_dir(d):
            return True
        parts = self._partition_parts(d) if self.depth else None
        return parts is not None and len(parts) == self.depth

    def _meta_dir(self, d: str, sub: str) -> bool:
        parent, name = posixpath.split(d)
        return name == sub and self._branch_root(parent)

    def where_problem(self, kind: str, directory: str) -> str | None:
        """Why files of `kind` cannot be in `directory`, or None (memoised per directory)."""
        key = (kind, directory)
        if key not in self._memo:
            self._memo[key] = self._where(kind, directory)
        return self._memo[key]

    def _where(self, kind: str, d: str) -> str | None:
        ok: bool
        if kind == SNAPSHOT:
            ok = self._meta_dir(d, "snapshot")
        elif kind == LONG_CHANGELOG:
            ok = self._meta_dir(d, "changelog")
        elif kind == TAG:
            ok = self._meta_dir(d, "tag") or (posixpath.basename(d) == "tag-success-file"
                                              and self._meta_dir(posixpath.dirname(d), "tag"))
        elif kind in (MANIFEST, MANIFEST_LIST, INDEX_MANIFEST):
            ok = d == posixpath.join(self.root, "manifest")
        elif kind == STATISTICS:
            ok = d == posixpath.join(self.root, "statistics")
        elif kind == INDEX:
            ok = d == posixpath.join(self.root, "index") or (self.index_in_data and self._bucket_dir(d))\
                or any(d == e or d.startswith(e.rstrip("/") + "/") for e in self.external)
        elif kind in (DATA, EXTRA, CHANGELOG):
            ok = self._bucket_dir(d)
        elif kind == ORPHAN:
            ok = d in (posixpath.join(self.root, "manifest"), posixpath.join(self.root, "index"),
                       posixpath.join(self.root, "statistics")) or self._data_dir(d)
        elif kind == LEFTOVER:  # (temporary files of atomic creates also in metadata dirs: `leftover_problem`)
            ok = d in (posixpath.join(self.root, "manifest"), posixpath.join(self.root, "index"),
                       posixpath.join(self.root, "statistics")) or self._bucket_dir(d) or\
                any(self._meta_dir(d, sub) for sub in METADATA_SUBDIRS)
        elif kind == TEMP:
            ok = self._meta_dir(d, "snapshot") or self._meta_dir(d, "changelog")
        elif kind == JOURNAL:
            ok = d == posixpath.join(self.root, JOURNAL_DIR)
        elif kind == SCHEMA:
            ok = self._meta_dir(d, "schema")
        elif kind == CONSUMER:
            ok = self._meta_dir(d, "consumer")
        elif kind == HINT:
            ok = self._meta_dir(d, "snapshot") or self._meta_dir(d, "changelog")
        elif kind == BRANCH_DIRECTORY:  # `d` is the directory itself: never main's, never the table root
            ok = self._branch_dir(d)
        elif kind == DIRECTORY:  # `d` is the directory itself: a bucket or partition directory of the data, in
            # the table or under an external root (emptied by expiry there just the same)
            ok = self._data_dir(d) or self._partition_parts(d) is not None
        else:
            return f"kind {kind!r} is not something paimon-ops deletes"
        return None if ok else f"a {kind} file cannot be in {d}"

    def leftover_problem(self, directory: str, name: str) -> str | None:
        """A leftover of an interrupted run: a content file of its directory, or — in snapshot/, tag/, changelog/,
        schema/, consumer/ — only a hidden temporary file of an atomic create (never a snapshot, tag or hint)."""
        problem = self.where_problem(LEFTOVER, directory)
        if problem is None and posixpath.basename(directory) in METADATA_SUBDIRS and\
                not (name.startswith(".") and name.endswith(".tmp")):
            return f"only temporary files are leftovers in {directory}"
        return problem

    def name_problem(self, kind: str, name: str) -> str | None:
        if kind == SNAPSHOT and not (name.startswith(SNAPSHOT_PREFIX) and _ID_FILE.match(name)):
            return "not a snapshot file name"
        if kind == LONG_CHANGELOG and not (name.startswith(CHANGELOG_PREFIX) and _ID_FILE.match(name)):
            return "not a changelog file name"
        if kind == TAG and not (name.startswith(TAG_PREFIX) or name.endswith("_SUCCESS")):
            return "not a tag file name"
        if kind == TEMP and (_ID_FILE.match(name) or name in (EARLIEST, LATEST)):
            return "a snapshot, changelog or hint file is not a temporary file"
        if kind == JOURNAL and not name.startswith(("journal-", "cancel-")):
            return "not a journal file name"
        if kind == SCHEMA and not (name.startswith(SCHEMA_PREFIX) and _ID_FILE.match(name)):
            return "not a schema file name"
        if kind == CONSUMER and not name.startswith(CONSUMER_PREFIX):
            return "not a consumer file name"
        if kind == HINT and name not in (EARLIEST, LATEST):
            return "not a hint file name"
        if kind == BRANCH_DIRECTORY and not (name.startswith(BRANCH_PREFIX) or name in BRANCH_SUBDIRS
                                             or name == "tag-success-file"):
            return "not a branch directory"
        return None


@dataclass
class Checked:
    """What `preflight` found: the owner files the plan removes and the content files it deletes."""

    owners: list[str] = field(default_factory=list)
    content: FileParts = field(default_factory=FileParts)  # (in parts, as the steps hold them: never copied)
    files: int = 0


def preflight(table: FileStoreTable, steps: Iterable[Step], check_references: bool = True, runner: Runner | None = None
              ) -> Checked:
    """Validate every path every step of a plan removes, before anything is removed (see the module docstring).
    Raises PreflightError naming the first path that is not safe to delete; changes nothing. With a Spark `runner`
    (a plan placed on Spark) the manifests that tell whether an orphan is referenced are read there."""
    removing = [s.files for s in steps if s.removes_files and s.files]
    out = Checked(files=sum(map(len, removing)))
    if not removing:
        return out
    layout = Layout(table)
    roots = allowed_roots(table)
    ident = table.identifier
    io = table.io.with_roots(roots[1:])  # (configured external data paths are roots too)
    local = io.is_local
    limit = PATH_MAX if local else OBJECT_KEY_MAX
    by_dir = _bulk_checked(layout, roots, removing, limit)
    if by_dir is None:  # something may be wrong: the exact per-path checks name the first offending path
        actions = FileList.concat(removing)
        groups: dict[str, list[FileAction]] = {}
        for a in actions:
            d = _check_one(layout, ident, a, limit)
            groups.setdefault(d, []).append(a)
        try:
            check_paths(roots, list(actions.paths()))
        except UnsafeOperationError as e:
            raise PreflightError(ident, _first_outside(roots, actions), str(e)) from None
        by_dir = {d: [(FileList(g), None)] for d, g in groups.items()}
    out.owners = [posixpath.normpath(p) for files in removing for p in files.where_kind(OWNER_KINDS).paths()]
    for files in removing:
        out.content += files.where_kind(CONTENT_KINDS)
    if isinstance(io, LocalFileIO) and io.roots:
        _check_local_dirs(io, ident, by_dir, table.options.get(FILE_OPERATION_THREAD_NUM) or DELETE_THREADS)
    if check_references and out.content:
        check_history(table, "deleting files")
        check_unreferenced(table, out.content, out.owners, runner)
    return out


def _check_one(layout: Layout, ident: str, a: FileAction, limit: int) -> str:
    """Where one path is, what its name is, how long it is (module docstring); its directory, or PreflightError."""
    path = a.path
    if not isinstance(path, str) or "\x00" in path:
        raise PreflightError(ident, repr(path), "not a path")
    norm = posixpath.normpath(path)
    if norm != path.rstrip("/") or ".." in norm.split("/"):
        raise PreflightError(ident, path, "not a normalised path")
    d, name = posixpath.split(norm)
    why = bad_name(name) or layout.name_problem(a.kind, name) or (
        layout.leftover_problem(d, name) if a.kind == LEFTOVER else
        layout.where_problem(a.kind, norm if a.kind in (DIRECTORY, BRANCH_DIRECTORY) else d))
    if why is None and len(norm.encode("utf-8", "surrogateescape")) > limit:
        why = "the path is too long for the file system"
    if why is not None:
        raise PreflightError(ident, path, why)
    return d


# Kinds whose checks depend only on the directory and the name's characters (no per-kind name rules): checked per
# directory and per batch of names by `_bulk_checked`; the others (few per plan) one by one.
_BULK_KINDS = frozenset((DATA, EXTRA, CHANGELOG, MANIFEST, MANIFEST_LIST, INDEX_MANIFEST, INDEX, STATISTICS, ORPHAN))


# One step's files in one directory: the step's list and their positions in it (None: all of them). The groups of a
# large plan are made one directory at a time (`_group`), never all at once.
_Part = tuple[FileList, Sequence[int] | None]


def _group(parts: Sequence[_Part]) -> FileList:
    return FileList.concat(files if ix is None else files.take(ix) for files, ix in parts)


def _bulk_checked(layout: Layout, roots: Sequence[str], removing: Sequence[FileList],
                  limit: int) -> dict[str, list[_Part]] | None:
    """The checks of `_check_one` and `check_paths` for every file, done per directory (normalised, inside a root,
    the right place for the kind) and per directory's names (one join and a few C-level scans: plain, printable,
    short enough): the files grouped by directory, or None when anything may fail, so that the exact per-path loop
    names the first offending path. Certifies nothing it did not check: on any doubt, None."""
    by_dir: dict[str, list[_Part]] = {}
    for files in removing:
        for d, ix in files.directory_indices():
            by_dir.setdefault(d, []).append((files, ix))
    ident = layout.table.identifier
    norm_roots = [posixpath.normpath(r) for r in roots]
    exact = set(norm_roots)
    prefixes = tuple(r.rstrip("/") + "/" for r in norm_roots)
    for d, parts in by_dir.items():
        if not d or d == "/" or posixpath.normpath(d) != d or ".." in d.split("/") or "\x00" in d or\
                not d.isascii() or not (d in exact or (d + "/").startswith(prefixes)):
            return None
        for part in parts:
            group = _group([part])
            names = group.names
            joined = "".join(names)
            if first_unplain(names) is not None or not joined.isprintable() or not joined.isascii():
                return None
            longest = max(map(len, names))
            if longest > NAME_MAX or len(d) + 1 + longest > limit:  # (ASCII: characters are bytes)
                return None
            for kind in set(group.kind_iter()):
                if kind in _BULK_KINDS:
                    if layout.where_problem(kind, d) is not None:
                        return None
                    continue
                try:
                    for a in group.where_kind((kind,)):
                        _check_one(layout, ident, a, limit)
                except PreflightError:
                    return None
    return by_dir


def _first_outside(roots: Sequence[str], actions: Sequence[FileAction]) -> str:
    for a in actions:
        try:
            check_paths(roots, [a.path])
        except UnsafeOperationError:
            return a.path
    return actions[0].path


def _check_local_dirs(io: LocalFileIO, ident: str, by_dir: dict[str, list[_Part]], threads: int) -> None:
    """`_check_local_dir` of every directory; many files: several directories at once (listing a directory of 100,000
    files is mostly the kernel's work, done without the GIL). The first refusal in the directories' order is raised."""
    if threads < 2 or len(by_dir) < 2 or\
            sum(len(f) if ix is None else len(ix) for parts in by_dir.values() for f, ix in parts) < CONCURRENT_MIN_FILES:
        for d, parts in by_dir.items():
            _check_local_dir(io, ident, d, parts)
        return
    pool = ThreadPoolExecutor(min(threads, PREFLIGHT_THREADS, len(by_dir)), thread_name_prefix="paimon-ops-preflight")
    try:
        futures = [pool.submit(_check_local_dir, io, ident, d, parts) for d, parts in by_dir.items()]
        for fut in futures:
            fut.result()
    finally:  # (a refusal or an interrupt: the checks not started are dropped, the running ones finish)
        pool.shutdown(wait=True, cancel_futures=True)


def _check_local_dir(io: LocalFileIO, ident: str, d: str, parts: Sequence[_Part]) -> None:
    """The directory reached without a symlink and writable; each file a regular file (a directory for DIRECTORY
    actions) or already gone."""
    items = _group(parts)
    try:
        fd = io.open_dir(d, "delete")
    except UnsafeOperationError as e:
        m = re.search(r"(\S+ is a symbolic link(?: -> \S+)?)", str(e))
        raise PreflightError(ident, items[0].path, f"{m.group(1) if m else e} on the way (never followed)")\
            from None
    except NotADirectoryError:
        raise PreflightError(ident, d, "it is not a directory") from None
    except PermissionError:
        raise PreflightError(ident, d, "permission denied") from None
    except OSError as e:
        raise PreflightError(ident, d, e.strerror or str(e)) from None
    if fd is None:
        return  # nothing there: every file already gone
    try:
        if not os.access(".", os.W_OK | os.X_OK, dir_fd=fd):
            raise PreflightError(ident, d, "the directory is not writable (permission denied), so its files cannot "
                                           "be deleted")
        listing: dict[str, int] | None = None
        if len(items) > LISTING_THRESHOLD:
            listing = entry_types(fd)
        # (the names column: the part after the last '/'; a path ending in '/' has none and is taken apart whole)
        for i, (name, kind) in enumerate(zip(items.names, items.kind_iter())):
            if not name:
                name = posixpath.basename(posixpath.normpath(items[i].path))
            if listing is not None:
                mode = listing.get(name)
                if mode is None:
                    continue
            else:
                try:
                    mode = _stat.S_IFMT(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
                except FileNotFoundError:
                    continue
                except OSError as e:
                    if e.errno == errno.ENAMETOOLONG:
                        raise PreflightError(ident, items[i].path, "the name is too long for the file system")\
                            from None
                    raise PreflightError(ident, items[i].path, e.strerror or str(e)) from None
            is_dir = kind in (DIRECTORY, BRANCH_DIRECTORY)
            want = _stat.S_IFDIR if is_dir else _stat.S_IFREG
            if mode == want:
                continue
            path = items[i].path
            if mode == _stat.S_IFLNK:
                raise PreflightError(ident, path, "it is a symbolic link (never followed, never deleted)")
            raise PreflightError(ident, path, "it is a directory, not a file" if mode == _stat.S_IFDIR else
                                 "it is a file, not a directory" if is_dir else "not a regular file")
    finally:
        os.close(fd)


def check_unreferenced(table: FileStoreTable, content: Sequence[FileAction] | FileParts, removed_owners: Sequence[str],
                       runner: Runner | None = None) -> None:
    """Refuse (PreflightError) if any content file is kept alive by a snapshot, tag or long-lived changelog of any
    branch that stays — read from the live table now. Orphans must not even be named by anything (on Spark when
    `runner` is a Spark runner)."""
    # orphans are checked against what anything names (a superset of what is kept): one read of the history
    parts = content.lists() if isinstance(content, FileParts) else [FileList(content)]
    only_orphans = all(p.only_kinds((ORPHAN,)) for p in parts) and not removed_owners
    kept = set() if only_orphans else kept_names(table, removed_owners).names
    named: set[str] | None = None
    for part in parts:
        for i, (name, kind) in enumerate(zip(part.names, part.kind_iter())):  # (a name: the path's last part)
            hit = name in kept
            if not hit and kind == ORPHAN:
                if named is None:
                    orphans = [n for p in parts for n in p.where_kind((ORPHAN,)).names]
                    named, owners = _named_by_any(table, orphans, runner)
                    if not owners:
                        raise PreflightError(table.identifier, part[i].path, "no snapshot, tag or changelog of any "
                                             "branch references anything: a table without history has no orphans "
                                             "(apache/paimon#7710)")
                hit = name in named
            if hit:
                owner = referencing_owner(table, name, removed_owners) or "a snapshot, tag or changelog that stays"
                raise PreflightError(table.identifier, part[i].path, f"{owner} still uses it (the plan is stale or "
                                                                     "was edited); plan again")


def _named_by_any(table: FileStoreTable, names: Sequence[str], runner: Runner | None = None) -> tuple[set[str], int]:
    """(which of `names` any snapshot, tag or changelog of any branch names — orphan removal's used set, how many
    owners were read); the manifests read on Spark when `runner` is a Spark runner."""
    branches = branch_tables(table)
    spark = runner if getattr(runner, "name", "") == "spark" and hasattr(runner, "frame") else None
    hit, _, owners = referenced_among(branches[0], branches, list(names), spark)
    return hit, owners


def delete_task(table_location: str, task: dict) -> dict:
    """Executor side: delete one batch of files (already checked on the driver; checked again here)."""
    io, _ = FileIO.resolve(table_location)
    io = io.with_roots(task["roots"])
    check_paths(task["roots"], task["paths"])
    if io.bulk_delete:  # object stores: bulk requests, exact per-file outcome reported back
        out = io.delete_many(task["paths"])
        return {"deleted": len(out.deleted), "missing": len(out.missing), "missing_paths": list(out.missing),
                "failed": [list(f) for f in out.failed]}
    done = io.delete_files(task["paths"])
    deleted = sum(done)
    return {"deleted": deleted, "missing": len(done) - deleted}


class Deleter:
    def __init__(self, table: FileStoreTable, runner: Runner | None = None, batch_size: int = DEFAULT_BATCH,
                 parallel_threshold: int | None = None, progress: Progress | None = None, threads: int | None = None):
        self.table = table
        self.runner = runner
        self.batch_size = batch_size
        if parallel_threshold is None:
            if getattr(runner, "name", "") == "spark":
                # the plan was placed on Spark (its size, or the caller's choice): its deletes run there too, in
                # batches, each executor through `delete_task` (checked against the roots again)
                parallel_threshold = PARALLEL_THRESHOLD
            elif table.io.bulk_delete:
                parallel_threshold = BULK_PARALLEL_THRESHOLD
            else:  # in-process: this process's delete threads (`delete`) beat batches on a runner at any size
                parallel_threshold = sys.maxsize
        self.parallel_threshold = parallel_threshold
        self.progress = progress
        self.roots = allowed_roots(table)
        self.io = table.io.with_roots(self.roots[1:])
        # (read now: a bad value fails the execution before its first delete, naming the option and the table)
        self.threads = threads or table.options.get(FILE_OPERATION_THREAD_NUM) or DELETE_THREADS

    @property
    def _local_io(self) -> LocalFileIO:
        """The FileIO as a local one: plain names in a directory (`_directories`) are yielded for local ones only."""
        assert isinstance(self.io, LocalFileIO)
        return self.io

    def delete(self, actions: Sequence[FileAction]) -> tuple[FileList, int]:
        """Delete one phase; returns (actually deleted actions, missing count). Raises if any delete fails."""
        actions = FileList(actions)
        if not actions:
            return actions, 0
        groups = actions.directory_indices()  # (positions only: one directory's files are made at a time)
        self._check_roots(actions, groups)
        use_runner = self.runner is not None and self.table.io.fault_hook is None and\
            len(actions) >= self.parallel_threshold
        if self.table.io.bulk_delete:
            return self._delete_bulk(actions.in_directory_order(), use_runner)
        if not use_runner:
            if self.threads > 1 and len(actions) >= CONCURRENT_MIN_FILES:
                return self._delete_concurrently(actions, self._directories(actions, groups))
            gone = array("I")  # positions of the files deleted, when some were missing
            missing, n_done = 0, 0
            for directory, ix, names in self._directories(actions, groups):
                if names is not None:  # a local directory: opened (and listed) once for all its files
                    outcome = self._local_io.delete_in_directory(directory, names)
                else:
                    outcome = self.io.delete_files([actions[i].path for i in ix])
                gone.extend(i for i, ok in zip(ix, outcome) if ok)
                missing += len(outcome) - sum(map(bool, outcome))
                n_done += len(ix)
                if self.progress:
                    self.progress(n_done, len(actions))
            return (actions, 0) if not missing else (actions.take(gone), missing)
        ordered = actions.in_directory_order()  # (each task then touches few directories)
        tasks = [{"roots": self.roots, "paths": list(ordered[i:i + self.batch_size].paths())}
                 for i in range(0, len(ordered), self.batch_size)]
        results = self.runner.run("paimon_ops.execution.deleter.delete_task", self.table.location, tasks,  # type: ignore[union-attr]
                                  progress=self.progress)
        failed = [r["error"] for r in results if not r.get("ok")]
        if failed:
            raise PaimonOpsError(f"deleting files of {self.table.identifier} failed: {failed[0]}; "
                                 "the table stays readable, re-run to finish")
        missing = sum(r["missing"] for r in results)
        # Which individual files were missing is not reported back; counts are exact.
        return ordered, missing

    def _delete_concurrently(self, actions: FileList,
                             groups: Iterable[tuple[str, Sequence[int], Sequence[str] | None]]) -> tuple[FileList, int]:
        """One phase (any order) by `threads` threads: each directory's files (`_directories`' groups) cut into
        batches, about four a thread, a few batches a thread in flight (memory stays bounded whatever the phase's
        size); a directory with more files than a batch is listed once for all its batches. A batch that fails, or
        an interrupt of this thread, stops every batch at its next file; the phase then raises (the first failure in
        plan order) once all have stopped, so no later phase starts."""
        size = min(BATCH_MAX, max(BATCH_MIN, -(-len(actions) // (self.threads * 4))))

        def batches() -> Iterator[tuple[str, Sequence[int], Sequence[str], bool, bool]]:
            for d, ix, names in groups:
                for i in range(0, len(ix), size):
                    part = ix[i:i + size]
                    if names is None:  # (paths, one round trip each)
                        yield d, part, [actions[j].path for j in part], False, False
                    else:
                        yield d, part, names[i:i + size], True, len(names) > size
        stop = threading.Event()
        pool = ThreadPoolExecutor(self.threads, thread_name_prefix="paimon-ops-delete")
        gone = array("I")
        missing, n_done, k = 0, 0, 0
        failures: dict[int, BaseException] = {}
        # A directory's listing is queued just before its first batch: the pool takes work in order, so a batch
        # waits only for a listing that has started (no deadlock); it is dropped once its directory is done (a
        # listing of 100,000 names holds ~13 MB).
        listings: dict[str, Future] = {}
        open_batches: dict[str, int] = {}
        in_flight: dict[Future, tuple[int, str, Sequence[int]]] = {}
        source, generating = batches(), ""
        try:
            while True:
                while len(in_flight) < self.threads * 2 and not stop.is_set():
                    got = next(source, None)
                    if got is None:
                        break
                    d, part, files, local, shared = got
                    if d != generating:
                        if not open_batches.get(generating):
                            listings.pop(generating, None)
                        generating = d
                    if shared and d not in listings:
                        listings[d] = pool.submit(self._local_io.directory_entry_types, d)
                    open_batches[d] = open_batches.get(d, 0) + 1
                    in_flight[pool.submit(self._delete_batch, d, files, local, listings.get(d), stop)] = (k, d, part)
                    k += 1
                if not in_flight:
                    break
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for fut in done:
                    n, d, part = in_flight.pop(fut)
                    open_batches[d] -= 1
                    if not open_batches[d] and d != generating:
                        listings.pop(d, None)
                    try:
                        outcome = fut.result()
                    except Exception as e:  # noqa: BLE001 - raised below, once every batch has stopped
                        failures[n] = e
                        stop.set()
                        continue
                    gone.extend(i for i, ok in zip(part, outcome) if ok)
                    missing += len(outcome) - sum(map(bool, outcome))
                    n_done += len(outcome)
                    if self.progress and not stop.is_set():
                        self.progress(n_done, len(actions))
        except BaseException:  # an interrupt: every batch stops at its next file, then it goes on to the caller
            stop.set()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        if failures:
            raise failures[min(failures)]
        if not missing:
            return actions, 0
        return actions.take(sorted(gone)), missing

    def _delete_batch(self, directory: str, files: Sequence[str], local: bool, listing: Future | None,
                      stop: threading.Event) -> list[bool]:
        """One batch of `_delete_concurrently` (in a delete thread): plain names in a local directory, or paths
        one at a time (HDFS-like file systems); nothing once `stop` is set."""
        if stop.is_set():
            return []
        if local:
            return self._local_io.delete_in_directory(directory, files, listing.result() if listing else None, stop)
        out: list[bool] = []
        for p in files:
            if stop.is_set():
                break
            out.append(self.io.delete_file(p))
        return out

    def _check_roots(self, actions: FileList, groups: Sequence[tuple[str, Sequence[int] | None]]) -> None:
        """`check_paths` of every file, per directory: one path of each directory's files, then their names (a
        plain name below a normalised directory inside a root is inside too); any doubt: every path."""
        names = actions.names
        firsts = [d + "/" + names[0 if ix is None else ix[0]] for d, ix in groups]
        try:
            check_paths(self.roots, firsts)
        except UnsafeOperationError:
            check_paths(self.roots, list(actions.paths()))  # (names the first path outside, in plan order)
            raise
        for (_, ix), first in zip(groups, firsts):
            group_names = names if ix is None else [names[i] for i in ix]
            if posixpath.normpath(first) != first or not {"", ".", ".."}.isdisjoint(group_names):
                check_paths(self.roots, [actions[i].path for i in (range(len(actions)) if ix is None else ix)])

    def _directories(self, actions: FileList, groups: Sequence[tuple[str, Sequence[int] | None]]
                     ) -> Iterable[tuple[str, Sequence[int], Sequence[str] | None]]:
        """The files grouped by parent directory (first appearance order), at most batch_size files a group
        unless they share one directory: (directory, positions, plain names) where the directory is normalised,
        confined and local — `LocalFileIO.delete_in_directory` then deletes them; names None: the generic path."""
        all_names = actions.names
        for d, ix in groups:
            positions: Sequence[int] = range(len(actions)) if ix is None else ix
            names = all_names if ix is None else [all_names[i] for i in ix]
            if not (isinstance(self.io, LocalFileIO) and d and posixpath.normpath(d) == d
                    and {"", ".", ".."}.isdisjoint(names) and self.io.confined(d + "/" + names[0])):
                for i in range(0, len(positions), self.batch_size):
                    yield d, positions[i:i + self.batch_size], None
                continue
            yield d, positions, names

    def delete_ordered(self, actions: Sequence[FileAction]) -> tuple[list[FileAction], int]:
        """One by one on the driver, in the given order (snapshot, tag and changelog files)."""
        check_paths(self.roots, [a.path for a in actions])
        done, missing = [], 0
        for a in actions:
            if self.io.delete_file(a.path):
                done.append(a)
            else:
                missing += 1
        return done, missing

    def delete_dirs(self, actions: Sequence[FileAction]) -> list[FileAction]:
        """Directories, each removed only if a listing shows it empty at that moment; never the table root, an
        external root or a data root in them."""
        check_paths(self.roots, [a.path for a in actions])
        sub = self.table.options.data_path_directory
        keep = {posixpath.normpath(r) for r in self.roots} | {posixpath.normpath(self.table.data_root)} | \
            {posixpath.normpath(posixpath.join(r, sub)) for r in self.roots[1:] if sub}
        done = []
        for a in actions:
            if posixpath.normpath(a.path) in keep:
                continue
            if self.io.delete_dir_if_empty(a.path):
                done.append(a)
        return done

    # ---------------------------------------------------------------- object stores
    def _delete_bulk(self, actions: FileList, use_runner: bool) -> tuple[FileList, int]:
        """Bulk deletes (any order within the phase) on the driver or on executors; the phase fails if any file
        could not be deleted (after retries), naming the first one. Which files were missing is exact."""
        paths = list(actions.paths())
        # On the driver, large chunks: the existence listing then covers each directory once per chunk.
        size = self.batch_size if use_runner else max(self.batch_size, BULK_DRIVER_CHUNK)
        batches = [paths[i:i + size] for i in range(0, len(paths), size)]
        missing: set[str] = set()
        failed: list[tuple[str, str]] = []
        if use_runner:
            tasks = [{"roots": self.roots, "paths": b} for b in batches]
            results = self.runner.run("paimon_ops.execution.deleter.delete_task", self.table.location, tasks,  # type: ignore[union-attr]
                                      progress=self.progress, options=self.table.io.task_options())
            errors = [r["error"] for r in results if not r.get("ok")]
            if errors:
                raise PaimonOpsError(f"deleting files of {self.table.identifier} failed: {errors[0]}; "
                                     "the table stays readable, re-run to finish")
            for r in results:
                missing.update(r.get("missing_paths", ()))
                failed += [tuple(f) for f in r.get("failed", ())]
        else:
            done_n = 0
            for b in batches:
                out = self.io.delete_many(b)
                missing.update(out.missing)
                failed += out.failed
                done_n += len(b)
                if self.progress:
                    self.progress(done_n, len(paths))
        if failed:
            raise PaimonOpsError(f"deleting files of {self.table.identifier} failed for {len(failed)} of "
                                 f"{len(paths)} file(s), first {failed[0][0]}: {failed[0][1]}; the table stays "
                                 "readable, re-run to finish")
        if not missing:
            return actions, 0
        return actions.take(i for i, p in enumerate(paths) if p not in missing), len(missing)
