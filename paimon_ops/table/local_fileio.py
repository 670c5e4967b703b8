"""FileIO on local file systems (local paths and file:// URIs), confined: nothing is listed, written or deleted
through a symbolic link. The root is resolved to its real path once, and every path below it is walked one directory
at a time with `O_NOFOLLOW` (`openat`-style, so a link swapped in mid-way is refused too). A symlink inside the tree
is an error for writes and deletes, and is reported, never followed, by listings. Mutations outside the confinement
roots are refused. Reads go through pyarrow's LocalFileSystem (FileIO's own).
"""
from __future__ import annotations

import errno
import logging
import os
import posixpath
import stat as _stat
import threading
import uuid
from typing import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_ops.errors import UnsafeOperationError
from paimon_ops.table.fileio import FaultHook, FileIO, FileStatus, InjectedFault, register_opener

log = logging.getLogger(__name__)

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


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


class LocalFileIO(FileIO):
    """A local file system, mutations confined to `roots` (real paths), never through a symbolic link."""

    is_local = True

    def __init__(self, roots: Sequence[str], fault_hook: FaultHook | None = None):
        super().__init__(pafs.LocalFileSystem(), "", "", fault_hook, roots)

    @staticmethod
    def open(scheme: str, rest: str, options: Mapping[str, str] | None,
             fault_hook: FaultHook | None) -> tuple[FileIO, str]:
        """FileIO.resolve's opener for local paths (scheme '') and file:// URIs: the real path is the root."""
        if scheme == "file":
            root = os.path.realpath("/" + rest.lstrip("/")).rstrip("/") or "/"
        else:
            root = os.path.realpath(os.path.abspath(rest)).rstrip("/") or "/"
        return LocalFileIO((root,), fault_hook), root

    def with_roots(self, roots: Sequence[str]) -> LocalFileIO:
        """The same file system with more confinement roots (configured external data paths), by their real path."""
        return LocalFileIO((*self.roots, *(os.path.realpath(r) for r in roots)), self.fault_hook)

    # ------------------------------------------------------------------ confinement
    def _anchor(self, path: str) -> str | None:
        """The deepest confinement root containing `path`, or None."""
        best = None
        for r in self.roots:
            if path == r or path.startswith(r.rstrip("/") + "/"):
                if best is None or len(r) > len(best):
                    best = r
        return best

    def open_dir(self, dirpath: str, op: str, create: bool = False) -> int | None:
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

    def confined(self, path: str) -> bool:
        """Whether `path` is below a confinement root (where this FileIO may change anything)."""
        return bool(self.roots) and self._anchor(posixpath.normpath(path)) is not None

    def _require_confined(self, path: str, op: str) -> None:
        if not self.confined(path):
            raise UnsafeOperationError(f"refusing to {op} {path}: outside the table root "
                                       f"(allowed roots: {', '.join(self.roots) or 'none'})")

    # ------------------------------------------------------------------ reads
    def is_symlink(self, path: str) -> bool:
        return os.path.islink(path)

    def list_status(self, path: str, include_symlinks: bool = False, strict: bool = False) -> list[FileStatus]:
        path = posixpath.normpath(path)
        if self._anchor(path) is not None:
            try:
                fd = self.open_dir(path, "list")
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
        stack = [path]
        while stack:
            d = stack.pop()
            for st in self.list_status(d):
                if st.is_dir:
                    stack.append(st.path)
                else:
                    yield st

    # ------------------------------------------------------------------ writes
    def mkdirs(self, path: str) -> None:
        if not self.confined(path):
            raise UnsafeOperationError(f"refusing to create directory {path}: outside the table root "
                                       f"(allowed roots: {', '.join(self.roots) or 'none'})")
        fd = self.open_dir(path, "create directory", create=True)
        if fd is not None:
            os.close(fd)

    def _new_file(self, path: str, op: str) -> tuple[int, int, str]:
        """(dir fd, file fd, name) of a new/truncated regular file, never through a symlink."""
        directory, name = posixpath.split(posixpath.normpath(path))
        dfd = self.open_dir(directory, op, create=True)
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
        self._hook("write", path)
        self._require_confined(path, "write")
        dfd, ffd, _ = self._new_file(path, "write")
        os.close(dfd)
        with os.fdopen(ffd, "wb") as f:
            f.write(data)

    def open_output(self, path: str) -> pa.NativeFile:
        self._hook("write", path)
        self._require_confined(path, "write")
        dfd, ffd, _ = self._new_file(path, "write")
        os.close(dfd)
        return pa.PythonFile(os.fdopen(ffd, "wb"), mode="w")

    def write_atomic_if_absent(self, path: str, data: bytes, tmp_token: str | None = None) -> bool:
        """Write a hidden temp file, then `link` it to the target: link fails with EEXIST when the name is taken,
        which is a true no-overwrite atomic create across processes."""
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{tmp_token or uuid.uuid4()}.tmp")
        self._require_confined(path, "write")
        tmp_name = posixpath.basename(tmp)
        self._hook("write", tmp)
        dfd, ffd, _ = self._new_file(tmp, "write")
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

    def rename(self, src: str, dst: str) -> None:
        self._hook("rename", dst)
        if self.exists(dst):
            raise FileExistsError(dst)
        self._require_confined(src, "rename")
        self._require_confined(dst, "rename")
        sfd = self.open_dir(posixpath.dirname(src), "rename")
        if sfd is None:
            raise FileNotFoundError(src)
        try:
            dfd = self.open_dir(posixpath.dirname(dst), "rename", create=True)
            try:
                os.rename(posixpath.basename(src), posixpath.basename(dst), src_dir_fd=sfd, dst_dir_fd=dfd)
            finally:
                os.close(dfd)  # type: ignore[arg-type]
        finally:
            os.close(sfd)

    # ------------------------------------------------------------------ deletes
    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        """Delete regular files (False where already gone), in order; stops at the first failure (raises). Each
        parent directory is opened once (without following links) and its files are unlinked relative to it, so a
        symlink swapped in anywhere on the way is refused, never followed."""
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
        dfd = self.open_dir(directory, "delete")
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
        dfd = self.open_dir(directory, "delete")
        if dfd is None:
            return None
        try:
            return entry_types(dfd)
        finally:
            os.close(dfd)


    def delete_dir_if_empty(self, path: str) -> bool:
        """Never a symlink, never through one."""
        path = posixpath.normpath(path)
        self._require_confined(path, "delete")
        parent, name = posixpath.split(path)
        pfd = self.open_dir(parent, "delete")
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


register_opener(("", "file"), LocalFileIO.open)
