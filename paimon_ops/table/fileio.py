"""File access for paimon-ops: pyarrow.fs underneath, local paths and URIs (s3://, hdfs://, file://).

Four properties the rest of the engine relies on:
* `write_atomic_if_absent` never overwrites (snapshot and schema commits depend on it);
* `delete_file` deletes files only, never directories, and is quiet about missing files (idempotent reruns);
* every mutating call passes through `_hook`, the single seam where tests inject faults;
* on local file systems nothing is listed, written or deleted through a symbolic link: the root is resolved to its
  real path once, and every path below it is walked one directory at a time with `O_NOFOLLOW` (`openat`-style,
  so a link swapped in mid-way is refused too). A symlink inside the tree is an error for writes and deletes, and
  is reported, never followed, by listings. Mutations outside the confinement roots are refused.
"""
from __future__ import annotations

import errno
import logging
import os
import posixpath
import stat as _stat
import threading
import uuid
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, UnsafeOperationError
from paimon_ops.options import COMMIT_OBJECT_STORE_UNSAFE_LOCK, Options

log = logging.getLogger(__name__)

FaultHook = Callable[[str, str], None]  # (operation, path) -> may raise

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
# URI schemes paimon-ops maintains tables on (s3/s3a/s3n: objectstore.py); anything else is refused up front with a
# clear error. Google Cloud Storage and Azure are refused too although pyarrow can open them: their commits would
# not be atomic here and their clients wait minutes for credentials (no connection is bounded by a timeout).
# scheme -> opener(scheme, location after "://", options, fault hook) -> (FileIO, path): the object stores register
# theirs when paimon_ops.table is imported (objectstore.py subclasses FileIO, so FileIO cannot import it)
StoreOpener = Callable[[str, str, "Mapping[str, str] | None", "FaultHook | None"], "tuple[FileIO, str]"]
_STORE_OPENERS: dict[str, StoreOpener] = {}


def register_store(schemes: Sequence[str], opener: StoreOpener) -> None:
    """Open URIs of `schemes` with `opener` (FileIO.resolve)."""
    for scheme in schemes:
        _STORE_OPENERS[scheme] = opener


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


def _symlink_error(op: str, path: str, link: str, target: str | None) -> UnsafeOperationError:
    where = "" if link == path else f": {link} is a symbolic link"
    arrow = f" -> {target}" if target is not None else ""
    what = f"{path} is a symbolic link{arrow}" if link == path else f"{path}{where}{arrow}"
    return UnsafeOperationError(f"refusing to {op} {what}; paimon-ops never follows symbolic links inside a table "
                                "(left alone)")


def _named(e: OSError, path: str) -> OSError:
    """`e` naming the full `path` (calls relative to a directory descriptor report only the last component, e.g.
    "[Errno 13] Permission denied: 'snapshot'")."""
    if isinstance(e, InjectedFault) or (e.filename is not None and str(e.filename).startswith("/")):
        return e
    try:
        return type(e)(e.errno, e.strerror or str(e), path)
    except TypeError:  # an OSError subclass with its own constructor
        return e


def _split_normalised(paths: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """(normpath of each path, posixpath.split of it): a path whose directory was already seen normalised and whose
    name is a plain component is normalised as it is (a lookup instead of a normpath per file)."""
    norm: list[str] = []
    split: list[tuple[str, str]] = []
    normal_dirs: set[str] = set()
    for p in paths:
        d, sep, name = p.rpartition("/")
        if d not in normal_dirs or name in ("", ".", ".."):
            n = posixpath.normpath(p)
            if n != p:
                norm.append(n)
                split.append(posixpath.split(n))
                continue
            normal_dirs.add(d)
        norm.append(p)
        split.append((d or sep, name))
    return norm, split


DELETE_LISTING_RUN = 32  # files of one directory deleted in a row from which a listing beats an lstat per file


def entry_types(dfd: int) -> dict[str, int]:
    """Name -> file type (S_IFREG, S_IFLNK, S_IFDIR, 0 for anything else) of a directory, never following links."""
    out: dict[str, int] = {}
    with os.scandir(dfd) as it:
        for e in it:
            if e.is_file(follow_symlinks=False):
                out[e.name] = _stat.S_IFREG
            elif e.is_symlink():
                out[e.name] = _stat.S_IFLNK
            elif e.is_dir(follow_symlinks=False):
                out[e.name] = _stat.S_IFDIR
            else:
                out[e.name] = 0
    return out


def _readlink(name: str, dir_fd: int) -> str | None:
    try:
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


class FileIO:
    """File system access rooted at a URI or local path.

    `roots` (local file systems only) are the real directories mutations are confined to: the warehouse or table
    root this FileIO was resolved for, plus configured external data paths (`with_roots`)."""

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
        """(FileIO, path inside that file system) for a local path or a URI. Local paths are resolved to their real
        path: that is the root every later mutation is confined to. `options`: warehouse/table options that
        configure an object store (s3.endpoint, s3.access-key, ...; see objectstore.py)."""
        if "://" not in location:
            root = os.path.realpath(os.path.abspath(location)).rstrip("/") or "/"
            return FileIO(pafs.LocalFileSystem(), "", "", fault_hook, (root,)), root
        scheme, rest = location.split("://", 1)
        scheme = scheme.lower()
        if scheme == "file":
            root = os.path.realpath("/" + rest.lstrip("/")).rstrip("/") or "/"
            return FileIO(pafs.LocalFileSystem(), "", "", fault_hook, (root,)), root
        # object stores (conditional-put commits, bulk deletes, paginated listing): opened by what registered them
        opener = _STORE_OPENERS.get(scheme)
        if opener is not None:
            return opener(scheme, rest, options, fault_hook)
        if scheme in UNSUPPORTED_STORES:
            raise InvalidArgumentError(
                f"unsupported URI scheme {scheme!r} in {location!r}: {UNSUPPORTED_STORES[scheme]} is not supported "
                "yet (commits there would not be atomic); use a local path, s3:// (or an S3-compatible endpoint of "
                "that store) or hdfs://")
        if scheme not in SUPPORTED_SCHEMES:
            raise InvalidArgumentError(
                f"unsupported URI scheme {scheme!r} in {location!r}: use a local path or one of "
                + ", ".join(f"{s}://" for s in SUPPORTED_SCHEMES))
        try:
            fs, path = pafs.FileSystem.from_uri(location)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise InvalidArgumentError(f"cannot open {location!r}: {str(e).splitlines()[0] if str(e) else e}") from None
        authority = rest.split("/", 1)[0]
        other = FileIO(fs, scheme, authority, fault_hook)
        other.unsafe_lock = (Options(options or {}).text(COMMIT_OBJECT_STORE_UNSAFE_LOCK) or "").lower() == "external"
        return other, path.rstrip("/")

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def uri(self, path: str) -> str:
        """The user-facing location of `path` (what executors receive to re-open the table)."""
        if not self.scheme:
            return path
        return f"{self.scheme}://{path}" if not self.authority or path.startswith(self.authority) else f"{self.scheme}://{self.authority}/{path.lstrip('/')}"

    def with_fault_hook(self, hook: FaultHook | None) -> FileIO:
        io = FileIO(self.fs, self.scheme, self.authority, hook, self.roots)
        io.unsafe_lock = self.unsafe_lock
        return io

    def with_roots(self, roots: Sequence[str]) -> FileIO:
        """The same file system with more confinement roots (configured external data paths)."""
        extra = [os.path.realpath(r) if self.is_local else r for r in roots]
        io = FileIO(self.fs, self.scheme, self.authority, self.fault_hook, (*self.roots, *extra))
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

    def delete_many(self, paths: Sequence[str]) -> DeleteOutcome:
        """`delete_files` with an exact per-file outcome (object stores override this with bulk deletes)."""
        done = self.delete_files(paths)
        return DeleteOutcome(tuple(p for p, ok in zip(paths, done) if ok),
                             tuple(p for p, ok in zip(paths, done) if not ok), ())

    def _hook(self, op: str, path: str) -> None:
        if self.fault_hook is not None:
            self.fault_hook(op, path)

    # ------------------------------------------------------------------ local confinement
    def _anchor(self, path: str) -> str | None:
        """The deepest confinement root containing `path`, or None."""
        best = None
        for r in self.roots:
            if path == r or path.startswith(r.rstrip("/") + "/"):
                if best is None or len(r) > len(best):
                    best = r
        return best

    def _open_dir(self, dirpath: str, op: str, create: bool = False) -> int | None:
        """A file descriptor of `dirpath`, reached from its confinement root one component at a time without
        following any symlink; None if it does not exist (and `create` is off). Raises UnsafeOperationError for a
        symlink on the way or a path outside every root."""
        dirpath = posixpath.normpath(dirpath)
        anchor = self._anchor(dirpath)
        if anchor is None:
            roots = ", ".join(self.roots) or "none"
            raise UnsafeOperationError(f"refusing to {op} {dirpath}: outside the table root (allowed roots: {roots})")
        try:
            fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            if not create:
                return None
            os.makedirs(anchor, exist_ok=True)
            fd = os.open(anchor, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
        rel = dirpath[len(anchor):].lstrip("/") or "."  # (normalised, and below the anchor: `_anchor`)
        if rel == ".":
            return fd
        walked = anchor
        try:
            for comp in rel.split("/"):
                walked = posixpath.join(walked, comp)
                while True:
                    try:
                        nfd = os.open(comp, _DIR_FLAGS, dir_fd=fd)
                        break
                    except FileNotFoundError:
                        if not create:
                            os.close(fd)
                            return None
                        try:
                            os.mkdir(comp, 0o755, dir_fd=fd)
                        except FileExistsError:
                            pass
                        except OSError as e:
                            raise _named(e, walked) from None
                    except OSError as e:
                        if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
                            target = _readlink(comp, fd)
                            if target is not None:
                                raise _symlink_error(op, dirpath, walked, target) from None
                            if e.errno == errno.ENOTDIR:
                                raise NotADirectoryError(errno.ENOTDIR, f"{walked} is not a directory") from None
                        raise _named(e, walked) from None
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _confined(self, path: str) -> bool:
        return self.is_local and bool(self.roots) and self._anchor(posixpath.normpath(path)) is not None

    # ------------------------------------------------------------------ reads
    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_file(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.File

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def is_symlink(self, path: str) -> bool:
        return self.is_local and os.path.islink(path)

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

    def list_status(self, path: str, include_symlinks: bool = False, strict: bool = False) -> list[FileStatus]:
        """Direct children of a directory; [] if it does not exist. Never lists through a symlink: on local file
        systems a symlink on the way raises UnsafeOperationError, and symlinks among the children are skipped
        (or, with `include_symlinks`, returned with `is_symlink` and their target, for reporting). `strict`: a file
        where the directory should be raises NotADirectoryError (instead of listing as empty)."""
        if self.is_local:
            return self._list_local(path, include_symlinks, strict)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            if strict:
                raise
            return []
        if not infos and strict and self.fs.get_file_info(path).type == pafs.FileType.File:
            raise NotADirectoryError(path)
        out = []
        for i in infos:
            mtime = int(i.mtime.timestamp() * 1000) if i.mtime is not None else 0
            out.append(FileStatus(i.path, i.base_name, int(i.size or 0), mtime, i.type == pafs.FileType.Directory))
        return out

    def _list_local(self, path: str, include_symlinks: bool, strict: bool = False) -> list[FileStatus]:
        path = posixpath.normpath(path)
        if self._anchor(path) is not None:
            try:
                fd = self._open_dir(path, "list")
            except NotADirectoryError:
                if strict:
                    raise NotADirectoryError(path) from None
                return []
            if fd is None:
                return []
        else:  # reads outside the roots (a warehouse listing its tables' parents): still never through a link
            if os.path.islink(path):
                raise _symlink_error("list", path, path, os.readlink(path))
            try:
                fd = os.open(path, _DIR_FLAGS)
            except FileNotFoundError:
                return []
            except NotADirectoryError:
                if strict:
                    raise NotADirectoryError(path) from None
                return []
        out = []
        prefix = path.rstrip("/") + "/"
        try:
            try:
                it = os.scandir(fd)
            except OSError as e:
                raise _named(e, path) from None
            with it:
                for entry in it:
                    child = prefix + entry.name
                    if entry.is_symlink():
                        target = _readlink(entry.name, fd)
                        if include_symlinks:
                            out.append(FileStatus(child, entry.name, 0, 0, False, True, target))
                        else:
                            log.warning("skipping symbolic link %s -> %s (never followed)", child, target)
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue  # removed while listing
                    out.append(FileStatus(child, entry.name, int(st.st_size), int(st.st_mtime * 1000),
                                          _stat.S_ISDIR(st.st_mode)))
        finally:
            os.close(fd)
        out.sort(key=lambda s: s.name)
        return out

    def walk_files(self, path: str) -> Iterator[FileStatus]:
        """Every regular file below `path` (never descending through a symlink)."""
        if self.is_local:
            stack = [path]
            while stack:
                d = stack.pop()
                for st in self.list_status(d):
                    if st.is_dir:
                        stack.append(st.path)
                    else:
                        yield st
            return
        infos = self.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
        for i in infos:
            if i.type == pafs.FileType.File:
                mtime = int(i.mtime.timestamp() * 1000) if i.mtime is not None else 0
                yield FileStatus(i.path, i.base_name, int(i.size or 0), mtime, False)

    # ------------------------------------------------------------------ writes
    def mkdirs(self, path: str) -> None:
        if self._confined(path):
            fd = self._open_dir(path, "create directory", create=True)
            if fd is not None:
                os.close(fd)
            return
        if self.is_local:
            raise UnsafeOperationError(f"refusing to create directory {path}: outside the table root "
                                       f"(allowed roots: {', '.join(self.roots) or 'none'})")
        self.fs.create_dir(path, recursive=True)

    def _local_new_file(self, path: str, op: str) -> tuple[int, int, str]:
        """(dir fd, file fd, name) of a new/truncated regular file, never through a symlink."""
        directory, name = posixpath.split(posixpath.normpath(path))
        dfd = self._open_dir(directory, op, create=True)
        assert dfd is not None
        try:
            ffd = os.open(name, _NEW_FILE_FLAGS, 0o644, dir_fd=dfd)
        except OSError as e:
            target = _readlink(name, dfd) if e.errno in (errno.ELOOP, errno.EMLINK) else None
            os.close(dfd)
            if target is not None:
                raise _symlink_error(op, path, path, target) from None
            raise _named(e, path) from None
        return dfd, ffd, name

    def write_bytes(self, path: str, data: bytes) -> None:
        """Plain (over)write: for files whose name is fresh (UUID-named) or that are hints."""
        self._hook("write", path)
        if self.is_local:
            self._require_confined(path, "write")
            dfd, ffd, _ = self._local_new_file(path, "write")
            os.close(dfd)
            with os.fdopen(ffd, "wb") as f:
                f.write(data)
            return
        self.mkdirs(posixpath.dirname(path))
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def open_output(self, path: str) -> pa.NativeFile:
        self._hook("write", path)
        if self.is_local:
            self._require_confined(path, "write")
            dfd, ffd, _ = self._local_new_file(path, "write")
            os.close(dfd)
            return pa.PythonFile(os.fdopen(ffd, "wb"), mode="w")
        self.mkdirs(posixpath.dirname(path))
        return self.fs.open_output_stream(path)

    def _require_confined(self, path: str, op: str) -> None:
        if not self._confined(path):
            raise UnsafeOperationError(f"refusing to {op} {path}: outside the table root "
                                       f"(allowed roots: {', '.join(self.roots) or 'none'})")

    def write_atomic_if_absent(self, path: str, data: bytes, tmp_token: str | None = None) -> bool:
        """Create `path` with `data` only if it does not exist; True if we created it. `tmp_token` (a UUID a run's
        journal records) names the temporary file, so that a run killed mid-write leaves one its rerun finds.

        Local file systems: write a hidden temp file, then `link` it to the target — link fails with EEXIST when
        the name is taken, which is a true no-overwrite atomic create across processes.
        Object stores: S3 goes through objectstore.ObjectStoreFileIO (conditional put). HDFS: check-then-move
        (its rename never overwrites). Any other store is refused unless the user opts into an external lock.
        """
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{tmp_token or uuid.uuid4()}.tmp")
        if self.is_local:
            self._require_confined(path, "write")
            tmp_name = posixpath.basename(tmp)
            self._hook("write", tmp)
            dfd, ffd, _ = self._local_new_file(tmp, "write")
            try:
                try:
                    with os.fdopen(ffd, "wb") as f:
                        f.write(data)
                    self._hook("rename", path)
                    os.link(tmp_name, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
                    return True
                except FileExistsError:
                    return False
                except OSError as e:
                    if e.errno == errno.EEXIST:
                        return False
                    raise
                finally:
                    try:
                        os.unlink(tmp_name, dir_fd=dfd)
                    except FileNotFoundError:
                        pass
                    except OSError:  # a leftover temp file is harmless: its name never matches a metadata prefix
                        log.warning("could not remove temp file %s", tmp)
            finally:
                os.close(dfd)
        try:
            # inside the try: a write that fails half-way (disk full, lost connection) must not leave the
            # partial temp file behind either
            self.write_bytes(tmp, data)
            self._hook("rename", path)
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
        if self.is_local:
            self._require_confined(src, "rename")
            self._require_confined(dst, "rename")
            sfd = self._open_dir(posixpath.dirname(src), "rename")
            if sfd is None:
                raise FileNotFoundError(src)
            try:
                dfd = self._open_dir(posixpath.dirname(dst), "rename", create=True)
                try:
                    os.rename(posixpath.basename(src), posixpath.basename(dst), src_dir_fd=sfd, dst_dir_fd=dfd)
                finally:
                    os.close(dfd)  # type: ignore[arg-type]
            finally:
                os.close(sfd)
            return
        self.fs.move(src, dst)

    def delete_file(self, path: str) -> bool:
        """Delete one regular file; False if it was already gone. Refuses directories and symlinks."""
        return self.delete_files([path])[0]

    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        """Delete regular files (False where already gone), in order; stops at the first failure (raises).

        Local: each parent directory is opened once (without following links) and its files are unlinked
        relative to it, so a symlink swapped in anywhere on the way is refused, never followed."""
        if not self.is_local:
            return [self._delete_remote(p) for p in paths]
        out: list[bool] = []
        norm, split = _split_normalised(paths)
        i, n = 0, len(norm)
        while i < n:
            directory = split[i][0]
            j = i + 1
            while j < n and split[j][0] == directory:
                j += 1
            self._require_confined(norm[i], "delete")
            out += self.delete_in_directory(directory, [name for _, name in split[i:j]])
            i = j
        return out

    def delete_in_directory(self, directory: str, names: Sequence[str], kinds: Mapping[str, int] | None = None,
                            stop: threading.Event | None = None) -> list[bool]:
        """Delete regular files of one local directory (False where already gone), in order; stops at the first
        failure (raises). `directory` is normalised and confined by the caller, `names` are plain names.

        The directory is opened once, without following a link on the way, and its files are unlinked relative
        to it. For many files one listing (the types readdir reports) replaces an lstat per file; a file swapped
        for a link or a directory after the listing is still never followed: unlink removes a link itself (never
        its target) and refuses a directory. `kinds`: that listing, taken by the caller (`directory_entry_types`)
        for several batches of one directory deleted at once. `stop`: once set, no further file is deleted (the
        outcome is then shorter than `names`)."""
        dfd = self._open_dir(directory, "delete")
        if dfd is None:
            return [False] * len(names)
        out: list[bool] = []
        append = out.append
        hook = self.fault_hook
        unlink = os.unlink
        reg, lnk = _stat.S_IFREG, _stat.S_IFLNK
        stopped = stop.is_set if stop is not None else None
        try:
            if kinds is None and len(names) >= DELETE_LISTING_RUN:
                kinds = entry_types(dfd)
            for name in names:
                if stopped is not None and stopped():
                    break
                if kinds is not None:
                    mode = kinds.get(name)
                    if mode is None:
                        append(False)
                        continue
                else:
                    try:
                        mode = _stat.S_IFMT(os.stat(name, dir_fd=dfd, follow_symlinks=False).st_mode)
                    except FileNotFoundError:
                        append(False)
                        continue
                    except OSError as e:
                        raise _named(e, posixpath.join(directory, name)) from None
                if mode != reg:
                    p = posixpath.join(directory, name)
                    if mode == lnk:
                        raise _symlink_error("delete", p, p, _readlink(name, dfd))
                    raise UnsafeOperationError(f"refusing to delete {p}: it is not a regular file")
                if hook is not None:
                    hook("delete", posixpath.join(directory, name))
                try:
                    unlink(name, dir_fd=dfd)
                    append(True)
                except FileNotFoundError:
                    append(False)
                except OSError as e:
                    raise _named(e, posixpath.join(directory, name)) from None
        finally:
            os.close(dfd)
        return out

    def directory_entry_types(self, directory: str) -> dict[str, int] | None:
        """`entry_types` of a local directory (normalised and confined by the caller), reached without following a
        link; None if it does not exist."""
        dfd = self._open_dir(directory, "delete")
        if dfd is None:
            return None
        try:
            return entry_types(dfd)
        finally:
            os.close(dfd)

    def _delete_remote(self, path: str) -> bool:
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
        """Remove a directory only after listing it empty (object-store clients delete prefixes recursively).
        Local: never a symlink, never through one."""
        if self.is_local:
            path = posixpath.normpath(path)
            self._require_confined(path, "delete")
            parent, name = posixpath.split(path)
            pfd = self._open_dir(parent, "delete")
            if pfd is None:
                return False
            try:
                try:
                    st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
                except FileNotFoundError:
                    return False
                if not _stat.S_ISDIR(st.st_mode):
                    return False
                self._hook("delete", path)
                try:
                    os.rmdir(name, dir_fd=pfd)  # fails unless empty at this moment
                except OSError:
                    return False
                return True
            finally:
                os.close(pfd)
        info = self.fs.get_file_info(path)
        if info.type != pafs.FileType.Directory:
            return False
        if self.list_status(path):
            return False
        self._hook("delete", path)
        try:
            self.fs.delete_dir(path)
        except OSError:
            return False
        return True


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
