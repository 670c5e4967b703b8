"""FileIO on the remote file systems pyarrow.fs opens: hdfs:// and viewfs://. HDFS renames never overwrite, so a
check-then-move is a create-if-absent; any other store reached this way commits only under an external lock the user
vouches for (commit.object-store.unsafe-lock=external), since its rename may overwrite.
"""
from __future__ import annotations

import logging
import posixpath
import uuid
from typing import Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from paimon_ops.errors import InvalidArgumentError, UnsafeOperationError
from paimon_ops.options import COMMIT_OBJECT_STORE_UNSAFE_LOCK, Options
from paimon_ops.table.fileio import FaultHook, FileIO, FileStatus, register_opener

log = logging.getLogger(__name__)

ARROW_SCHEMES = ("hdfs", "viewfs")


class ArrowFileIO(FileIO):
    """A pyarrow.fs file system other than the local disk (no confinement roots: paths are checked by the Deleter)."""

    def __init__(self, fs: pafs.FileSystem, scheme: str, authority: str = "", fault_hook: FaultHook | None = None,
                 unsafe_lock: bool = False):
        super().__init__(fs, scheme, authority, fault_hook)
        self.unsafe_lock = unsafe_lock

    @staticmethod
    def open(scheme: str, rest: str, options: Mapping[str, str] | None,
             fault_hook: FaultHook | None) -> tuple[FileIO, str]:
        """FileIO.resolve's opener for hdfs:// and viewfs://."""
        location = f"{scheme}://{rest}"
        try:
            fs, path = pafs.FileSystem.from_uri(location)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise InvalidArgumentError(f"cannot open {location!r}: {str(e).splitlines()[0] if str(e) else e}") from None
        unsafe_lock = (Options(options or {}).text(COMMIT_OBJECT_STORE_UNSAFE_LOCK) or "").lower() == "external"
        return ArrowFileIO(fs, scheme, rest.split("/", 1)[0], fault_hook, unsafe_lock), path.rstrip("/")

    # ------------------------------------------------------------------ reads
    def list_status(self, path: str, include_symlinks: bool = False, strict: bool = False) -> list[FileStatus]:
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
        self._hook("write", path)
        self.mkdirs(posixpath.dirname(path))
        with self.fs.open_output_stream(path) as f:
            f.write(data)

    def open_output(self, path: str) -> pa.NativeFile:
        self._hook("write", path)
        self.mkdirs(posixpath.dirname(path))
        return self.fs.open_output_stream(path)

    def write_atomic_if_absent(self, path: str, data: bytes, tmp_token: str | None = None) -> bool:
        """HDFS: write a temp file, then check-then-move (its rename never overwrites). Any other store is refused
        unless the user opts into an external lock."""
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{tmp_token or uuid.uuid4()}.tmp")
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
        self.fs.move(src, dst)

    # ------------------------------------------------------------------ deletes
    def delete_files(self, paths: Sequence[str]) -> list[bool]:
        return [self._delete_one(p) for p in paths]

    def _delete_one(self, path: str) -> bool:
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


register_opener(ARROW_SCHEMES, ArrowFileIO.open)
