"""Fail closed on an inconsistent table: before orphan removal, snapshot expiry, tag expiry or tag deletion decides
what is unreferenced, the table's history must be what its own hints say it is.

Refused, in one line naming what is wrong (CorruptMetadataError, nothing deleted):

* `snapshot/`, `changelog/` or `tag/` is not a directory, or a snapshot / tag / changelog entry in it is a symbolic
  link (table.list_metadata_dir);
* `LATEST` names a snapshot that does not exist while no later snapshot exists — the latest snapshot is lost — or
  any hint names snapshots while there are none: with every snapshot file gone, Java's orphan removal deletes the
  whole table (apache/paimon#7710);
* a catalog that owns the history (REST) names a latest snapshot other than the newest snapshot file;
* a gap in the snapshot ids (snapshot-5 missing between snapshot-4 and snapshot-6): expiry deletes oldest first and
  rollback newest first, so a gap means lost history (or a rollback/expiry of another engine that must be re-run).

A hint *behind* the listing (EARLIEST naming a snapshot an interrupted expiry already deleted, LATEST older than the
newest snapshot) is the normal state after a crash and is accepted: readers verify hints (maintenance.md §0.3).
Unreadable snapshot, tag and changelog files are refused where they are read (references.kept_names reads every one
that stays before the first delete).

Missing content files are refused where they are met: a manifest list, manifest or index manifest of a snapshot or tag
that stays (`references`, expiry, orphan removal, tag deletion), a data or deletion-vector file compaction reads. The
one exemption is `remove-unexisting-files` (`compact/remove_unexisting.py`), and it is narrow: it acts only on the
latest snapshot of its branch, only on data, deletion-vector and file-index files that are missing (it reads none of
them), deletes nothing from storage, and refuses like everyone else a missing or unreadable manifest, a lost latest
snapshot and a missing hash index.
"""
from __future__ import annotations

import posixpath

from paimon_ops.errors import CorruptMetadataError, TableNotFoundError
from paimon_ops.format.snapshot import parse_hint
from paimon_ops.table.table import EARLIEST, LATEST, FileStoreTable, SnapshotManager


def _hint(mgr: SnapshotManager, name: str) -> int | None:
    path = posixpath.join(mgr.dir, name)
    try:
        return parse_hint(mgr.io.read_bytes(path), path)
    except (OSError, CorruptMetadataError):  # missing or unreadable hints are advisory: readers list instead
        return None


def check_history(table: FileStoreTable, what: str) -> None:
    """Raise CorruptMetadataError if the history of any branch of `table` is not consistent (module docstring);
    `what` names the operation refused."""
    main = table if table.branch == "main" else table.for_branch("main")
    for b in ["main"] + main.branches():
        try:
            bt = main if b == "main" else main.for_branch(b)
        except TableNotFoundError:
            if main.branch_holds_history(b):
                raise
            continue  # what an interrupted branch create or delete leaves: no schema, no history
        _check_snapshots(bt.snapshots, what, "snapshot")
        bt.changelogs.list_ids()  # a file or a link in place of changelog/ is refused by the listing
        bt.tags.names()


def _check_snapshots(mgr: SnapshotManager, what: str, kind: str) -> None:
    ids = mgr.list_ids()
    latest, earliest = _hint(mgr, LATEST), _hint(mgr, EARLIEST)
    refuse = f"; refusing {what} (nothing deleted): the files of the missing snapshots could not be told apart "\
             "from orphans. If an expiry or rollback was interrupted, re-run it; otherwise the table needs repair"
    if not ids:
        owned = mgr.latest_loader() if mgr.latest_loader is not None and kind == "snapshot" else None
        hints = [f"{n} names {kind} {v}" for n, v in ((EARLIEST, earliest), (LATEST, latest)) if v is not None]
        if owned is not None:
            hints.append(f"the catalog's latest snapshot is {owned.id}")
        if hints:
            raise CorruptMetadataError(mgr.dir, f"{' and '.join(hints)}, but there is no {kind} file{refuse}")
        return
    if latest is not None and latest > ids[-1]:
        raise CorruptMetadataError(posixpath.join(mgr.dir, LATEST),
                                   f"names {kind} {latest}, but the newest {kind} file is {kind}-{ids[-1]}{refuse}")
    if earliest is not None and earliest > ids[-1]:
        raise CorruptMetadataError(posixpath.join(mgr.dir, EARLIEST),
                                   f"names {kind} {earliest}, beyond the newest {kind} file {kind}-{ids[-1]}{refuse}")
    if mgr.latest_loader is not None and kind == "snapshot":
        # a catalog owning the history (REST): its latest snapshot is the newest file, else the two disagree
        owned = mgr.latest_loader()
        if owned is not None and owned.id != ids[-1]:
            raise CorruptMetadataError(mgr.dir, f"the catalog's latest snapshot is {owned.id}, but the newest snapshot "
                                                f"file is {kind}-{ids[-1]} (a snapshot written around the catalog, or "
                                                f"one it lost){refuse}")
    if ids[-1] - ids[0] + 1 != len(ids):
        have = set(ids)
        gap = next(i for i in range(ids[0], ids[-1]) if i not in have)
        raise CorruptMetadataError(mgr.path(gap), f"is missing between {kind}-{ids[0]} and {kind}-{ids[-1]}{refuse}")


__all__ = ["check_history"]
