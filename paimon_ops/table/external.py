"""External data paths (`data-file.external-paths`, `.strategy`, `.specific-fs`; Paimon 1.1+).

A data (or changelog) file may live outside the table directory: its manifest entry then carries `_EXTERNAL_PATH`,
the absolute location Java wrote (`file:/x/ext/dt=1/bucket-0/data-….parquet`, `s3://bucket/ext/…`). Java builds it
as `<external root>/<relative bucket path>/<file name>`, the relative bucket path being the partition path (under
`data-file.path-directory` if set) and `bucket-<n>` (`FileStorePathFactory.relativeBucketPath`).

Rules here, for reading, writing and deleting alike:
* an external path from metadata is accepted only inside a configured root, only for the file it names (its last
  component is the file's plain name) — anything else is corrupt metadata and refused;
* it is used only when the root is on the table's own file system (same scheme and authority: the local disk, or
  the same S3 bucket); a root elsewhere is a table feature the gate refuses (`features.EXTERNAL_ELSEWHERE`);
* local roots are resolved to their real path once, so every later access walks down from there without
  following a symlink (local_fileio.py), exactly as inside the table root.

Writing (compaction output) follows Java's `ExternalPathProvider`: strategy `none` (the default) writes into the
table; `round-robin` rotates over the roots from a random start per bucket writer; `specific-fs` uses the roots
whose scheme is `.specific-fs`, round robin. Other strategies (`entropy-inject`, `weight-robin`) are refused for
writes.
"""
from __future__ import annotations

import os
import posixpath
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paimon_ops.errors import CorruptMetadataError, InvalidOptionError, UnsupportedError
from paimon_ops.options import DATA_FILE_EXTERNAL_PATHS, DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS, DATA_FILE_EXTERNAL_PATHS_STRATEGY
from paimon_ops.table.fileio import split_location

if TYPE_CHECKING:
    from paimon_ops.table.table import FileStoreTable

STRATEGY = DATA_FILE_EXTERNAL_PATHS_STRATEGY.key
STRATEGIES = DATA_FILE_EXTERNAL_PATHS_STRATEGY.choices
WRITABLE = ("none", "round-robin", "specific-fs")


@dataclass(frozen=True)
class ExternalRoot:
    location: str     # as configured (a URI or Hadoop path text)
    scheme: str       # '' for local
    authority: str
    path: str         # path in the FileIO's convention ('/x/ext', 'bucket/ext'); unresolved

    @property
    def uri_scheme(self) -> str:
        """The scheme Java compares with `.specific-fs` (local roots are `file`)."""
        return self.scheme or "file"

    def text(self, rel: str) -> str:
        """`_EXTERNAL_PATH` of `rel` under this root, as Java's Path.toString() writes it."""
        rel = rel.strip("/")
        if not self.scheme:
            return f"file:{posixpath.join(self.path, rel)}"
        key = self.path[len(self.authority):].strip("/")
        return f"{self.scheme}://{self.authority}/{posixpath.join(key, rel) if key else rel}"


OPTION = DATA_FILE_EXTERNAL_PATHS.key


def configured_roots(table: FileStoreTable, strict: bool = True) -> list[ExternalRoot]:
    """Every `data-file.external-paths` entry, parsed (no I/O). An entry that is neither a URI nor an absolute path
    ('relative/dir' would be relative to whatever directory the process runs in; Java refuses a path without a
    scheme) is refused naming the option — or, not `strict` (feature detection, which never fails), left out."""
    out = []
    for loc in table.external_paths:
        if "://" not in loc and not loc.startswith(("file:", "/")):  # (split_location would make it absolute)
            if strict:
                raise InvalidOptionError(OPTION, table.options.raw.get(OPTION, loc),
                                         f"absolute locations (file:/data/ext, s3://bucket/ext), not {loc!r}",
                                         f"table {table.identifier}")
            continue
        scheme, authority, path = split_location(loc)
        if scheme in ("s3a", "s3n"):
            scheme = "s3"
        out.append(ExternalRoot(loc, scheme, authority, path.rstrip("/") or "/"))
    return out


def _io_scheme(table: FileStoreTable) -> tuple[str, str]:
    scheme = table.io.scheme or ""
    return ("s3" if scheme in ("s3a", "s3n") else scheme), table.io.authority or ""


def on_table_fs(table: FileStoreTable, root: ExternalRoot) -> bool:
    return (root.scheme, root.authority) == _io_scheme(table)


def elsewhere(table: FileStoreTable) -> list[ExternalRoot]:
    """Configured roots on another file system than the table's (another scheme, endpoint or bucket)."""
    return [r for r in configured_roots(table, strict=False) if not on_table_fs(table, r)]


def resolved_root(table: FileStoreTable, root: ExternalRoot) -> str:
    """The root as the table's FileIO addresses it: local roots by their real path."""
    return os.path.realpath(root.path) if table.io.is_local else root.path


def allowed_roots(table: FileStoreTable) -> list[str]:
    """Resolved external roots on the table's file system (where files of this table may be read, written and
    deleted besides the table root). A root that is the table directory, inside it or around it is refused naming
    the option: the table's own files and the external ones could not be told apart."""
    out = []
    table_root = posixpath.normpath(os.path.realpath(table.root) if table.io.is_local else table.root)
    for r in configured_roots(table):
        if not on_table_fs(table, r):
            continue
        resolved = posixpath.normpath(resolved_root(table, r))
        if _within(resolved, table_root) or _within(table_root, resolved):
            raise InvalidOptionError(OPTION, r.location, "a location outside the table directory "
                                     f"{table.location} (and not around it)", f"table {table.identifier}")
        out.append(resolved)
    return out


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def resolve(table: FileStoreTable, external: str, name: str) -> str:
    """The FileIO path of a file whose manifest entry says `_EXTERNAL_PATH = external`."""
    scheme, authority, path = split_location(external)
    if scheme in ("s3a", "s3n"):
        scheme = "s3"
    if posixpath.basename(path) == name and "/" not in name and name not in ("", ".", ".."):
        for root in configured_roots(table):
            if (root.scheme, root.authority) != (scheme, authority):
                continue
            base = root.path.rstrip("/")
            if path.startswith(base + "/"):
                if not on_table_fs(table, root):
                    raise UnsupportedError(
                        f"{table.identifier}: {name} lives under {OPTION} entry {root.location}, on another file "
                        f"system than the table ({table.location}); paimon-ops reaches only the table's own")
                return posixpath.join(resolved_root(table, root), path[len(base) + 1:])
    raise CorruptMetadataError(
        external, f"external path of {name} is not inside a configured data-file.external-paths entry of "
                  f"{table.identifier} ({', '.join(table.external_paths) or 'none configured'}); refusing to act on it")


def strategy(table: FileStoreTable) -> str:
    return table.options.get(DATA_FILE_EXTERNAL_PATHS_STRATEGY)


def write_roots(table: FileStoreTable) -> list[ExternalRoot]:
    """The roots new data files go to (Java's AbstractFileStore.createExternalPaths); [] = the table directory."""
    roots = configured_roots(table)
    s = strategy(table)
    if not roots or s == "none":
        return []
    if s not in WRITABLE:
        raise UnsupportedError(f"{table.identifier}: writing with {STRATEGY}={s} is not supported (none, round-robin, "
                               "specific-fs are)")
    if s == "specific-fs":
        fs = (table.options.get(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS) or "").strip().lower()
        if not fs:
            raise table.options.fail(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS,
                                     "a file system scheme when the strategy is specific-fs")
        roots = [r for r in roots if r.uri_scheme == fs]
        if not roots:
            raise table.options.fail(DATA_FILE_EXTERNAL_PATHS_SPECIFIC_FS,
                                     f"the scheme of one of {DATA_FILE_EXTERNAL_PATHS.key}")
    far = [r for r in roots if not on_table_fs(table, r)]
    if far:
        raise UnsupportedError(f"{table.identifier}: new files would go to {OPTION} entry {far[0].location}, on "
                               f"another file system than the table ({table.location}); paimon-ops writes only to "
                               "the table's own")
    allowed_roots(table)  # (a root around or inside the table directory is refused, naming the option)
    return roots


class ExternalPathProvider:
    """Where the next new file of one (partition, bucket) writer goes (Java's RoundRobinExternalPathProvider)."""

    def __init__(self, table: FileStoreTable, relative_bucket_path: str, roots: list[ExternalRoot] | None = None):
        self.table = table
        self.rel = relative_bucket_path.strip("/")
        self.roots = write_roots(table) if roots is None else roots
        self.position = random.randrange(len(self.roots)) if self.roots else 0

    def next(self, name: str) -> tuple[str, str] | None:
        """(FileIO path, `_EXTERNAL_PATH` text) of the next file, or None: write it into the table."""
        if not self.roots:
            return None
        self.position = (self.position + 1) % len(self.roots)
        root = self.roots[self.position]
        rel = posixpath.join(self.rel, name)
        return posixpath.join(resolved_root(self.table, root), rel), root.text(rel)


__all__ = ["ExternalRoot", "configured_roots", "allowed_roots", "resolve", "write_roots", "elsewhere", "strategy",
           "ExternalPathProvider", "on_table_fs"]
