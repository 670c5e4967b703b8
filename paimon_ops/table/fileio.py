"""File access for paimon-ops: pyarrow.fs underneath, local paths and URIs (s3://, hdfs://, gs://, file://).

Three properties the rest of the engine relies on:
* `write_atomic_if_absent` never overwrites (snapshot and schema commits depend on it);
* `delete_file` deletes files only, never directories, and is quiet about missing files (idempotent reruns);
* every mutating call passes through `_hook`, the single seam where tests inject faults.
"""
from __future__ import annotations

import errno
import logging
import os
import posixpath
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_ops.errors import CorruptMetadataError, UnsafeOperationError

log = logging.getLogger(__name__)

FaultHook = Callable[[str, str], None]  # (operation, path) -> may raise


@dataclass(frozen=True)
class FileStatus:
    path: str
    name: str
    size: int
    mtime_millis: int
    is_dir: bool


@dataclass(frozen=True)
class DeleteOutcome:
    """Per-file outcome of `FileIO.delete_files`: exact lists of deleted, already missing and failed paths."""

    deleted: tuple[str, ...]
    missing: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]  # (path, error)


class InjectedFault(OSError):
    """Raised by fault hooks in tests; a distinct type so tests can tell it from real I/O errors."""


class FileIO:
    """File system access rooted at a URI or local path."""

    def __init__(self, fs: pafs.FileSystem, scheme: str = "", authority: str = "", fault_hook: FaultHook | None = None):
        self.fs = fs
        self.scheme = scheme
        self.authority = authority
        self.fault_hook = fault_hook

    # ------------------------------------------------------------------ construction
    @staticmethod
    def resolve(location: str, fault_hook: FaultHook | None = None,
                options: Mapping[str, str] | None = None) -> tuple[FileIO, str]:
        """(FileIO, path inside that file system) for a local path or a URI. `options`: warehouse/table options
        that configure the store (s3.endpoint, s3.access-key, ...; see objectstore.py)."""
        if "://" not in location:
            return FileIO(pafs.LocalFileSystem(), "", "", fault_hook), os.path.abspath(location).rstrip("/") or "/"
        scheme, rest = location.split("://", 1)
        scheme = scheme.lower()
        if scheme == "file":
            return FileIO(pafs.LocalFileSystem(), "", "", fault_hook), "/" + rest.lstrip("/")
        # --- object stores (issue 13): conditional-put commits, bulk deletes, paginated listing
        from paimon_ops.table import objectstore
        if scheme in objectstore.S3_SCHEMES:
            if options is None:
                options = objectstore.current_task_options()  # on an executor: the options shipped with the task
            bucket, _, key = rest.partition("/")
            io = objectstore.ObjectStoreFileIO.open(scheme, bucket, options, fault_hook)
            return io, f"{bucket}/{key.strip('/')}".rstrip("/")
        # ---
        fs, path = pafs.FileSystem.from_uri(location)
        authority = rest.split("/", 1)[0]
        io = FileIO(fs, scheme, authority, fault_hook)
        io.unsafe_lock = str((options or {}).get("commit.object-store.unsafe-lock", "")).lower() == "external"
        return io, path.rstrip("/")

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def uri(self, path: str) -> str:
        """The user-facing location of `path` (what executors receive to re-open the table)."""
        if not self.scheme:
            return path
        return f"{self.scheme}://{path}" if not self.authority or path.startswith(self.authority) else f"{self.scheme}://{self.authority}/{path.lstrip('/')}"

    def with_fault_hook(self, hook: FaultHook | None) -> FileIO:
        io = FileIO(self.fs, self.scheme, self.authority, hook)
        io.unsafe_lock = self.unsafe_lock
        return io

    # Object-store FileIOs (objectstore.ObjectStoreFileIO) delete in bulk, ship their settings with tasks and have no
    # directories (a prefix exists only while an object is under it).
    bulk_delete = False
    has_directories = True
    # Stores whose rename may overwrite (pyarrow's GCS, Azure, ...) commit only under an external lock the user
    # vouches for: option commit.object-store.unsafe-lock=external.
    unsafe_lock = False

    def task_options(self) -> dict[str, str]:
        """Store settings an executor needs to re-open this file system (none for local and pyarrow URIs)."""
        return {}

    def delete_files(self, paths: Sequence[str]) -> DeleteOutcome:
        """Delete files (one request each here; object stores override this with bulk deletes)."""
        deleted, missing = [], []
        for p in paths:
            (deleted if self.delete_file(p) else missing).append(p)
        return DeleteOutcome(tuple(deleted), tuple(missing), ())

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

    def list_status(self, path: str) -> list[FileStatus]:
        """Direct children of a directory; [] if it does not exist."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
        except FileNotFoundError:
            return []
        out = []
        for i in infos:
            mtime = int(i.mtime.timestamp() * 1000) if i.mtime is not None else 0
            out.append(FileStatus(i.path, i.base_name, int(i.size or 0), mtime, i.type == pafs.FileType.Directory))
        return out

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
        for i in infos:
            if i.type == pafs.FileType.File:
                mtime = int(i.mtime.timestamp() * 1000) if i.mtime is not None else 0
                yield FileStatus(i.path, i.base_name, int(i.size or 0), mtime, False)

    # ------------------------------------------------------------------ writes
    def mkdirs(self, path: str) -> None:
        self.fs.create_dir(path, recursive=True)

    def write_bytes(self, path: str, data: bytes) -> None:
        """Plain (over)write: for files whose name is fresh (UUID-named) or that are hints."""
        self._hook("write", path)
        self.mkdirs(posixpath.dirname(path))
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def open_output(self, path: str) -> pa.NativeFile:
        self._hook("write", path)
        self.mkdirs(posixpath.dirname(path))
        return self.fs.open_output_stream(path)

    def write_atomic_if_absent(self, path: str, data: bytes) -> bool:
        """Create `path` with `data` only if it does not exist; True if we created it.

        Local file systems: write a hidden temp file, then `os.link` it to the target — link fails with
        EEXIST when the name is taken, which is a true no-overwrite atomic create across processes.
        Object stores: S3 goes through objectstore.ObjectStoreFileIO (conditional put). HDFS: check-then-move
        (its rename never overwrites). Any other store is refused unless the user opts into an external lock.
        """
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{uuid.uuid4()}.tmp")
        try:
            # inside the try: a write that fails half-way (disk full, lost connection) must not leave the
            # partial temp file behind either
            self.write_bytes(tmp, data)
            self._hook("rename", path)
            if self.is_local:
                try:
                    os.link(tmp, path)
                    return True
                except FileExistsError:
                    return False
                except OSError as e:
                    if e.errno == errno.EEXIST:
                        return False
                    raise
            if self.scheme not in ("hdfs", "viewfs") and not self.unsafe_lock:
                # HDFS renames never overwrite; other stores reached through pyarrow may (check-then-move races)
                raise UnsafeOperationError(
                    f"refusing to commit {self.uri(path)}: {self.scheme}:// has no atomic create-if-absent here, so "
                    "two concurrent committers could both win and one commit would be lost. If an external lock "
                    "guarantees a single committer, set commit.object-store.unsafe-lock=external")
            if self.exists(path):
                return False
            self.fs.move(tmp, path)
            return True
        finally:
            try:
                if self.exists(tmp):
                    self.fs.delete_file(tmp)
            except OSError:  # a leftover temp file is harmless: its name never matches a metadata prefix
                log.warning("could not remove temp file %s", tmp)

    def rename(self, src: str, dst: str) -> None:
        self._hook("rename", dst)
        if self.exists(dst):
            raise FileExistsError(dst)
        self.fs.move(src, dst)

    def delete_file(self, path: str) -> bool:
        """Delete one regular file; False if it was already gone. Refuses directories."""
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            return False
        if info.type != pafs.FileType.File:
            raise UnsafeOperationError(f"refusing to delete {path}: it is not a regular file")
        self._hook("delete", path)
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            return False
        return True

    def delete_dir_if_empty(self, path: str) -> bool:
        """Remove a directory only after listing it empty (object-store clients delete prefixes recursively)."""
        info = self.fs.get_file_info(path)
        if info.type != pafs.FileType.Directory:
            return False
        if self.list_status(path):
            return False
        self._hook("delete", path)
        try:
            if self.is_local:
                os.rmdir(path)  # fails if something appeared meanwhile
            else:
                self.fs.delete_dir(path)
        except OSError:
            return False
        return True


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
