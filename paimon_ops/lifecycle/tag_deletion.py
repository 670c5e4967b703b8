"""Tag deletion with file reclamation (maintenance.md §3.3).

* ``plan_delete_tags(table, names, missing_ok=False) -> DeleteTagsPlan``

A tag whose snapshot still exists (or that shares its snapshot with another tag) only loses its tag file. Otherwise
the files only it kept alive are deleted; protectors are the previous tag, the earlier of (earliest snapshot, next
tag), with changelog-producer 'none' the nearest long-lived changelogs (Java ignores them), and every other branch.
Several names are deleted as if one after another, in the given order. The tag files go first (as Java does), then
per tag its data files -> empty directories -> manifests, index and statistics files -> manifest lists and index
manifests; the executor records those files in a journal before the first tag file goes, so a crash leaves no
unreadable tag, and the next run reclaims what is left. The plan requires the tag set and the earliest snapshot it
was made on.
"""
from __future__ import annotations

import posixpath
from typing import Any

from paimon_ops.catalog import check_sync
from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, MissingFileError, UnsafeNameError
from paimon_ops.execution.journal import pending, plan_pending
from paimon_ops.execution.plan import (
    DELETE_DIRS,
    DELETE_FILES,
    DELETE_ORDERED,
    TAG,
    EarliestSnapshotIs,
    FileAction,
    Plan,
    PlanBuilder,
    planner,
)
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.protection import (
    STORE_CAPACITY,
    DataKey,
    TagsAre,
    data_keys,
    manifest_skipping_set,
    other_branches,
    read_tags,
    tag_set,
)
from paimon_ops.lifecycle.reclaim import data_actions, empty_dir_actions, plan_index_and_stats, plan_manifest_list
from paimon_ops.lifecycle.timeline import check_existing_tag_name
from paimon_ops.operations.delete_tags import OPERATION as DELETE_TAGS
from paimon_ops.operations.model import TagName
from paimon_ops.options import SNAPSHOT_CLEAN_EMPTY_DIRECTORIES
from paimon_ops.table.consistency import check_history
from paimon_ops.table.scan import ManifestStore, TableScanner, merge_entries
from paimon_ops.table.table import FileStoreTable


class DeleteTagsPlan(Plan):
    """Deleting tags, reclaiming the files only they kept alive."""

    operation = "delete_tags"
    op = DELETE_TAGS  # its operation (the feature gate, the planner's parameters)


@planner(DeleteTagsPlan, internal=("plan_type", "details"))
def plan_delete_tags(table: FileStoreTable, names: list[TagName], *, missing_ok: bool = False,
                     plan_type: type[Plan] | None = None, details: dict[str, Any] | None = None) -> Plan:
    """Plan deleting tags with file reclamation (maintenance.md §3.3), as if deleted one after another in the
    given order. Raises InvalidArgumentError for an unknown tag (unless missing_ok) and CorruptMetadataError if a
    neighbour that protects shared files cannot be read — nothing is deleted then. (`plan_type`, `details`: the
    plan of another operation deleting tags, tag expiry.)"""
    check_sync(table, "delete_tags")
    if isinstance(names, str):
        names = [TagName(names)]
    names = list(dict.fromkeys(names))
    if not names:
        raise InvalidArgumentError("no tag names given")
    for n in names:
        check_existing_tag_name(n)
    check_history(table, "tag deletion")
    tags = read_tags(table)
    by_name = {n: t for n, t in tags}
    unknown = [n for n in names if n not in by_name]
    resumed = bool(unknown and not missing_ok and pending(table)[0])
    if resumed:
        missing_ok = True  # a rerun after an interrupted deletion: the tag is gone, its files are finished below
    if unknown and not missing_ok:
        known = ", ".join(n for n, _ in tags) or "none"
        raise InvalidArgumentError(f"tag(s) {', '.join(map(repr, unknown))} do not exist on {table.identifier} "
                                   f"(branch {table.branch}); existing tags: {known}")
    store = ManifestStore(table, capacity=STORE_CAPACITY)
    scanner = TableScanner(table, store)
    others = other_branches(table)  # unreadable -> CorruptMetadataError before anything is deleted
    plan_type = plan_type or DeleteTagsPlan
    b = PlanBuilder()
    plan_pending(b, table)  # first finish what an interrupted run left
    if resumed:
        b.warn(f"tag(s) {', '.join(map(repr, unknown))} already gone: an interrupted run deleted them; what they kept "
               "alive is reclaimed now")
    remaining = list(tags)  # the tag list as it will be after the deletions planned so far
    # Phases, in crash-safe order per tag: data files, empty dirs, manifests/index/stats, lists, tag file. A tag file
    # is deleted last so that a rerun after a crash can still find what is left to delete (converges).
    per_tag: list[tuple[str, list[FileAction], list[FileAction], list[FileAction], list[FileAction], FileAction]] = []
    earliest_cache: dict[str, Snapshot | None] = {}
    cl_ids: list[int] | None = None
    details_tags: list[dict] = []
    for name in names:
        if name not in by_name:
            continue
        tag = by_name[name]
        tag_action = FileAction(table.tags.path(name), TAG, f"tag {name} (snapshot {tag.id}) deleted")
        extra_tag_files = []
        success = posixpath.join(table.tags.dir, "tag-success-file", f"{name}_SUCCESS")
        if table.io.is_file(success):
            extra_tag_files.append(FileAction(success, TAG, f"success file of tag {name}"))
        others_same = [n for n, t in remaining if t.id == tag.id and n != name]
        remaining = [(n, t) for n, t in remaining if n != name]
        info = {"tag": name, "snapshot": tag.id, "reclaim": False}
        details_tags.append(info)
        if table.snapshots.exists(tag.id):
            info["why_not"] = f"snapshot {tag.id} still exists; its files are left to snapshot expiry"
            per_tag.append((name, [], [], [], extra_tag_files, tag_action))
            continue
        if others_same:
            info["why_not"] = f"tag {others_same[0]} points at the same snapshot {tag.id}"
            per_tag.append((name, [], [], [], extra_tag_files, tag_action))
            continue
        # Neighbours (§3.3 step 4): left = previous tag; right = min(earliest snapshot, next tag).
        left = None
        right_tag = None
        for n, t in remaining:
            if t.id < tag.id:
                left = (n, t)
            elif t.id > tag.id and right_tag is None:
                right_tag = (n, t)
        if "e" not in earliest_cache:
            eid = table.snapshots.earliest_id()
            earliest_cache["e"] = table.snapshots.snapshot(eid) if eid is not None else None  # corrupt -> raises
        earliest = earliest_cache["e"]
        right: tuple[str, Snapshot] | None = None
        if earliest is not None:
            right = (f"snapshot {earliest.id}", earliest)
        if right_tag is not None and (right is None or right_tag[1].id < right[1].id):
            right = (f"tag {right_tag[0]}", right_tag[1])
        protectors: list[tuple[str, Snapshot]] = []
        changelogs: list[Snapshot] = []  # (long-lived: they keep their lists and files, not index or statistics)
        if left is not None:
            protectors.append((f"tag {left[0]}", left[1]))
        if right is not None:
            protectors.append(right)
        # Long-lived changelogs (decoupled lifecycle) with changelog-producer 'none' are retained owners of their
        # base/delta lists and the files they added (maintenance.md §2.8), which Java's TagDeletion ignores: by the
        # contiguity argument the nearest one on each side of the tag protects everything they need. (With another
        # producer a long-lived changelog needs only its changelog manifests, which tag deletion never touches.)
        if table.options.changelog_producer == "none":
            if cl_ids is None:
                cl_ids = table.changelogs.list_ids()
            below = [i for i in cl_ids if i <= tag.id]
            above = [i for i in cl_ids if i >= tag.id]
            for cid in sorted({*below[-1:], *above[:1]}):
                c = table.changelogs.try_snapshot(cid)  # corrupt -> raises: nothing deleted
                if c is not None:
                    protectors.append((f"changelog {cid}", c))
                    changelogs.append(c)
        prot_desc = " and ".join(f"{d} ({s.id})" for d, s in protectors) or "no neighbour"
        info["protectors"] = [d for d, _ in protectors]
        try:
            skip_data: set[DataKey] = set()
            for _, s in protectors:
                skip_data |= data_keys(store, s)
            skip_names = manifest_skipping_set(store, [s for _, s in protectors], lists_only=changelogs) |\
                others.names
        except (CorruptMetadataError, OSError) as e:
            raise CorruptMetadataError(getattr(e, "path", table.location),
                                       f"cannot read neighbour {prot_desc} of tag {name!r}; deleting nothing: "
                                       f"{getattr(e, 'problem', e)}") from None
        info["reclaim"] = True
        reason = f"only in tag {name} (snapshot {tag.id}), not in {prot_desc}"
        data: list[FileAction] = []
        buckets: set[tuple[bytes, int]] = set()
        try:
            adds, deletes = merge_entries(store.snapshot_entries(tag), f"tag {name}")
            for entry in list(adds.values()) + list(deletes.values()):
                key = (entry.partition, entry.bucket, entry.file.file_name)
                if key in skip_data or others.protects_data(key):
                    continue
                data += data_actions(scanner, entry, reason)
                buckets.add((entry.partition, entry.bucket))
        except MissingFileError as e:
            # A rerun after an interrupted deletion finds some of the tag's manifests gone (its data went first);
            # on real loss the data files are unknown anyway. Either way: delete no data files (leak, not loss).
            b.warn(f"tag {name}: {e}; its data files are not reclaimed (remove_orphans can clean them later)")
            data, buckets = [], set()
        except UnsafeNameError:  # a crafted file name: stop, never 'delete less'
            raise
        except CorruptMetadataError as e:
            b.warn(f"tag {name}: {e}; its data files are not reclaimed")
            data, buckets = [], set()
        dirs = empty_dir_actions(scanner, buckets, f"emptied by deleting tag {name}")\
            if table.options.get(SNAPSHOT_CLEAN_EMPTY_DIRECTORIES) else []
        contents: list[FileAction] = []
        lists: list[FileAction] = []
        plan_manifest_list(b, table, store, tag.base_manifest_list, tag.base_manifest_list_size, skip_names, reason,
                           contents, lists)
        plan_manifest_list(b, table, store, tag.delta_manifest_list, tag.delta_manifest_list_size, skip_names,
                           reason, contents, lists)
        plan_index_and_stats(b, table, scanner, tag, skip_names, reason, contents, lists)
        info["files"] = len(data) + len(contents) + len(lists)
        per_tag.append((name, data, dirs, contents, lists + extra_tag_files, tag_action))
    # The tag files go first (as Java's TagManager.deleteTag does), then what only they kept alive: a crash never
    # leaves a tag listed whose files are partly gone (the executor journals the files first; a rerun reclaims them).
    for name, *_, tag_action in per_tag:
        b.step(f"tag {name}: tag file", DELETE_ORDERED).add(tag_action)
    for name, data, dirs, contents, lists, _ in per_tag:
        b.step(f"tag {name}: data files", DELETE_FILES).add_all(data)
        b.step(f"tag {name}: empty directories", DELETE_DIRS).add_all(dirs)
        b.step(f"tag {name}: manifests, index and statistics files", DELETE_FILES).add_all(contents)
        b.step(f"tag {name}: manifest lists and index manifests", DELETE_FILES).add_all(lists)
    # A tag created or deleted since, or a new earliest snapshot, changes which neighbour protects what (§2.5).
    b.require(TagsAre(tag_set(tags)), EarliestSnapshotIs(table.snapshots.earliest_id()))
    return b.build(plan_type, table, {"branch": table.branch, "protected_branches": others.branches,
                                      "tags": details_tags, **(details or {})})


__all__ = ["DeleteTagsPlan", "plan_delete_tags"]
