"""The files a snapshot or tag leaves behind when it goes away (maintenance.md §2.3, §3.3): its data files (with
their extra files), the manifests and manifest lists only it used, its index and statistics files, and the empty
directories afterwards. Shared by snapshot expiry, changelog expiry and tag deletion.

Failure policy (design.md §1): if anything needed to decide is unreadable, delete less — an unreadable list or index
manifest is kept with everything only it could name (a leak, never a loss) — except a crafted file name
(UnsafeNameError), which stops the run.
"""
from __future__ import annotations

import posixpath
from typing import Iterable

from paimon_ops.errors import CorruptMetadataError, MissingFileError, UnsafeNameError
from paimon_ops.execution.plan import (
    DATA,
    DIRECTORY,
    EXTRA,
    INDEX,
    INDEX_MANIFEST,
    MANIFEST,
    MANIFEST_LIST,
    STATISTICS,
    FileAction,
    PlanBuilder,
)
from paimon_ops.format.manifest import IndexManifestEntry, ManifestEntry
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.table.scan import ManifestStore, TableScanner
from paimon_ops.table.table import FileStoreTable


def file_size(table: FileStoreTable, path: str) -> int | None:
    try:
        return table.io.size(path)
    except (FileNotFoundError, OSError):
        return None


def extra_file_path(data_path: str, extra: str) -> str:
    """Extra files (file-index sidecars) live next to their data file, also for external paths."""
    return posixpath.join(posixpath.dirname(data_path), extra)


def statistics_path(table: FileStoreTable, name: str) -> str:
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


def plan_manifest_list(b: PlanBuilder, table: FileStoreTable, store: ManifestStore, list_name: str, list_size: int | None,
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
    path = table.manifest_path(list_name)
    # (a snapshot of Paimon < 1.0 records no list sizes: read the file's, so that reports count real bytes)
    lists_out.append(FileAction(path, MANIFEST_LIST, reason, list_size if list_size is not None else
                                file_size(table, path)))


def plan_index_and_stats(b: PlanBuilder, table: FileStoreTable, scanner: TableScanner, snap: Snapshot, skip: set[str],
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


__all__ = ["file_size", "extra_file_path", "statistics_path", "partition_dirs", "empty_dir_actions",
           "plan_manifest_list", "plan_index_and_stats", "data_actions"]
