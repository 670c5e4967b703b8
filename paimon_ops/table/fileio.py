"""File access for paimon-ops: `FileIO`, the interface the engine uses, and `FileIO.resolve`, the one place a
location is opened. As in pyiceberg's `pyiceberg/io`, FileIO is abstract and each kind of storage has its own
implementation, chosen by the location's scheme:

* `LocalFileIO` (local_fileio.py): local paths and file:// URIs, confined to its roots, never through a symbolic link;
* `ArrowFileIO` (arrow_fileio.py): hdfs:// and viewfs:// through pyarrow.fs;
* `ObjectStoreFileIO` (objectstore.py): s3://, s3a://, s3n:// with conditional puts and bulk deletes.

Each registers the schemes it opens (`register_opener`) when paimon_ops.table is imported: they subclass FileIO, so
this module cannot import them.

Four properties the rest of the engine relies on, kept by every implementation:
* `write_atomic_if_absent` never overwrites (snapshot and schema commits depend on it);
* `delete_file` deletes files only, never directories, and is quiet about missing files (idempotent reruns);
* every mutating call passes through `_hook`, the single seam where tests inject faults;
* on local file systems nothing is listed, written or deleted through a symbolic link, and mutations outside the
  confinement roots are refused (local_fileio.py).
"""
from __future__ import annotations

import copy
import os
import posixpath
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, UnsafeOperationError

FaultHook = Callable[[str, str], None]  # (operation, path) -> may raise

# URI schemes paimon-ops maintains tables on; anything else is refused up front with a clear error. Google Cloud
# Storage and Azure are refused too although pyarrow can open them: their commits would not be atomic here and their
# clients wait minutes for credentials (no connection is bounded by a timeout).
# scheme ("" for a plain local path) -> opener(scheme, location after "://" (a plain local path: all of it), options,
# fault hook) -> (FileIO, path): each implementation registers the schemes it opens
Opener = Callable[[str, str, "Mapping[str, str] | None", "FaultHook | None"], "tuple[FileIO, str]"]
_OPENERS: dict[str, Opener] = {}


def register_opener(schemes: Sequence[str], opener: Opener) -> None:
    """Open locations of `schemes` with `opener` (FileIO.resolve)."""
    for scheme in schemes:
        _OPENERS[scheme] = opener


SUPPORTED_SCHEMES = ("file", "s3", "s3a", "s3n", "hdfs", "viewfs")
UNSUPPORTED_STORES = {"gs": "Google Cloud Storage", "gcs": "Google Cloud Storage", "abfs": "Azure Data Lake Storage",
                      "abfss": "Azure Data Lake Storage", "wasb": "Azure Blob Storage", "wasbs": "Azure Blob Storage",
                      "oss": "Alibaba OSS", "cosn": "Tencent COS", "obs": "Huawei OBS"}


@dataclass(frozen=True, slots=True)  # (slots: an orphan scan lists millions)
class FileStatus:
    path: str
    name: str
    size: int
    mtime_millis: int
    is_dir: bool
    is_symlink: bool = False
    link_target: str | None = None  # for symlinks: where the link points (reported, never followed)


@dataclass(frozen=True)
class DeleteOutcome:
    """Per-file outcome of `FileIO.delete_many`: exact lists of deleted, already missing and failed paths."""

    deleted: tuple[str, ...]
    missing: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]  # (path, error)


class InjectedFault(OSError):
    """Raised by fault hooks in tests; a distinct type so tests can tell it from real I/O errors."""


class FileIO(ABC):
    """File system access rooted at a URI or local path (open one with `FileIO.resolve`).

    `fs` is the pyarrow file system data streams go through. `roots` (local file systems only) are the real
    directories mutations are confined to: the warehouse or table root this FileIO was resolved for, plus configured
    external data paths (`with_roots`). Reads go through `fs` unless an implementation knows better."""

    is_local = False
    # Object-store FileIOs (objectstore.ObjectStoreFileIO) delete in bulk, ship their settings with tasks and have no
    # directories (a prefix exists only while an object is under it).
    bulk_delete = False
    has_directories = True
    # Stores whose rename may overwrite (pyarrow's GCS, Azure, ...) commit only under an external lock the user
    # vouches for: option commit.object-store.unsafe-lock=external.
    unsafe_lock = False

    def __init__(self, fs: pafs.FileSystem, scheme: str = "", authority: str = "", fault_hook: FaultHook | None = None,
                 roots: Sequence[str] = ()):
        self.fs = fs
        self.scheme = scheme
        self.authority = authority
        self.fault_hook = fault_hook
        self.roots = tuple(dict.fromkeys(posixpath.normpath(r) for r in roots))

    # ------------------------------------------------------------------ construction
    @staticmethod
    def resolve(location: str, fault_hook: FaultHook | None = None,
                options: Mapping[str, str] | None = None) -> tuple[FileIO, str]:
        """(FileIO, path inside that file system) for a local path or a URI, opened by the implementation registered
        for its scheme. Local paths are resolved to their real path: that is the root every later mutation is
        confined to. `options`: warehouse/table options that configure an object store (s3.endpoint,
        s3.access-key, ...; see objectstore.py)."""
        scheme, rest = "", location
        if "://" in location:
            scheme, rest = location.split("://", 1)
            scheme = scheme.lower()
        opener = _OPENERS.get(scheme)
        if opener is not None:
            return opener(scheme, rest, options, fault_hook)
        if scheme in UNSUPPORTED_STORES:
            raise InvalidArgumentError(
                f"unsupported URI scheme {scheme!r} in {location!r}: {UNSUPPORTED_STORES[scheme]} is not supported "
                "yet (commits there would not be atomic); use a local path, s3:// (or an S3-compatible endpoint of "
                "that store) or hdfs://")
        raise InvalidArgumentError(
            f"unsupported URI scheme {scheme!r} in {location!r}: use a local path or one of "
            + ", ".join(f"{s}://" for s in SUPPORTED_SCHEMES))

    def uri(self, path: str) -> str:
        """The user-facing location of `path` (what executors receive to re-open the table)."""
        if not self.scheme:
            return path
        return f"{self.scheme}://{path}" if not self.authority or path.startswith(self.authority) else f"{self.scheme}://{self.authority}/{path.lstrip('/')}"

    def with_fault_hook(self, hook: FaultHook | None) -> FileIO:
        """The same file system, with `hook` as its fault seam."""
        io = copy.copy(self)
        io.fault_hook = hook
        return io

    def with_roots(self, roots: Sequence[str]) -> FileIO:
        """The same file system with more confinement roots (configured external data paths). Confinement is a
        local-disk concept (symlinks): elsewhere paths are checked by the Deleter, and this is the same FileIO."""
        return self

    def task_options(self) -> dict[str, str]:
        """Store settings an executor needs to re-open this file system (none for local and pyarrow URIs)."""
        return {}

    def _hook(self, op: str, path: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(op, path)

    # ------------------------------------------------------------------ reads
    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_file(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.File

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def is_symlink(self, path: str) -> bool:
        return False

    def size(self, path: str) -> int:
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(path)
        return int(info.size)

    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError:
            raise
        except (pa.ArrowIOError, OSError) as e:
            if not self.exists(path):
                raise FileNotFoundError(path) from e
            raise

    def read_text(self, path: str) -> str:
        data = self.read_bytes(path)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptMetadataError(path, "not UTF-8 text") from None

    def open_input(self, path: str) -> pa.NativeFile:
        return self.fs.open_input_file(path)

    @abstractmethod
    def list_status(self, path: str, include_symlinks: bool = False, strict: bool = False) -> list[FileStatus]:
        """Direct children of a directory; [] if it does not exist. Never lists through a symlink: on local file
        systems a symlink on the way raises UnsafeOperationError, and symlinks among the children are skipped
        (or, with `include_symlinks`, returned with `is_symlink` and their target, for reporting). `strict`: a file
        where the directory should be raises NotADirectoryError (instead of listing as empty)."""

    @abstractmethod
    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every regular file below `path` (never descending through a symlink)."""

    # ------------------------------------------------------------------ writes
    @abstractmethod
    def mkdirs(self, path: str) -> None:
        ...

    @abstractmethod
    def write_bytes(self, path: str, data: bytes) -> None:
        """Plain (over)write: for files whose name is fresh (UUID-named) or that are hints."""

    @abstractmethod
    def open_output(self, path: str) -> pa.NativeFile:
        ...

    @abstractmethod
    def write_atomic_if_absent(self, path: str, data: bytes, tmp_token: str | None = None) -> bool:
        """Create `path` with `data` only if it does not exist; True if we created it — never an overwrite.
        `tmp_token` (a UUID a run's journal records) names a temporary file, so that a run killed mid-write leaves
        one its rerun finds."""

    @abstractmethod
    def rename(self, src: str, dst: str) -> None:
        """Move `src` to `dst`; FileExistsError if `dst` exists."""

    # ------------------------------------------------------------------ deletes
    def delete_file(self, path: str) -> bool:
        """Delete one regular file; False if it was already gone. Refuses directories and symlinks."""
        return self.delete_files([path])[0]

    @abstractmethod
    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        """Delete regular files (False where already gone), in order; stops at the first failure (raises)."""

    def delete_many(self, paths: Sequence[str]) -> DeleteOutcome:
        """`delete_files` with an exact per-file outcome (object stores override this with bulk deletes)."""
        done = self.delete_files(paths)
        return DeleteOutcome(tuple(p for p, ok in zip(paths, done) if ok),
                             tuple(p for p, ok in zip(paths, done) if not ok), ())

    @abstractmethod
    def delete_dir_if_empty(self, path: str) -> bool:
        """Remove a directory only after listing it empty (object-store clients delete prefixes recursively);
        True if it was removed."""


def split_location(location: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of a location, parsed without opening anything (no network access); local paths
    and file:// URIs have scheme and authority ''."""
    if "://" not in location:
        if location.startswith("file:"):  # Hadoop's file:/tmp/x form (Java writes external paths like this)
            return "", "", posixpath.normpath("/" + location[5:].lstrip("/"))
        return "", "", os.path.abspath(location)
    scheme, rest = location.split("://", 1)
    scheme = scheme.lower()
    if scheme == "file":
        return "", "", posixpath.normpath("/" + rest.lstrip("/"))
    authority, _, path = rest.partition("/")
    return scheme, authority, posixpath.normpath(f"{authority}/{path}").rstrip("/")


def ensure_within(root: str, path: str) -> str:
    """Normalise `path` and refuse anything outside `root` (destructive operations call this)."""
    norm_root = posixpath.normpath(root)
    norm = posixpath.normpath(path)
    if norm != norm_root and not norm.startswith(norm_root.rstrip("/") + "/"):
        raise UnsafeOperationError(f"refusing to touch {path}: outside the table root {root}")
    return norm


def fault_after(op: str, k: int) -> FaultHook:
    """A hook that fails the k-th (1-based) call of `op` ('write' | 'rename' | 'delete')."""
    count = {"n": 0}

    def hook(operation: str, path: str) -> None:
        if operation == op:
            count["n"] += 1
            if count["n"] == k:
                raise InjectedFault(f"injected failure at {op} #{k}: {path}")

    return hook
