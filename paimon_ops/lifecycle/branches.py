"""Branch life cycle: create (from a tag, a snapshot, or empty), delete with file reclamation, rename, fast-forward,
and the listing behind `paimon-ops branches` (maintenance.md §0.1, §2.7, §3.7; Java's BranchManager).

A branch `b` of a table lives in `<table>/branch/branch-b/` with its own `schema/`, `snapshot/`, `tag/`,
`consumer/` and `changelog/`; data, manifest, index and statistics files are shared by all branches.

* ``plan_create_branch(table, name, tag=None, snapshot_id=None)`` — from a tag (Java's create_branch: the tag file
  and its snapshot are copied into the branch; the snapshot is written from the tag if it has expired, as Java does
  since #8748), from a live snapshot (Java had this until 0.9 removed it: Java's own expiry of the source branch does
  not protect a branch's files, so the plan warns unless a tag holds the snapshot), or empty. Every schema up to the
  source snapshot's is copied (Java 0.9 copied only that one, leaving older data files unreadable on the branch).
  The source is the table's branch (`db.t` = main, `db.t$branch_x` = branch x).
* ``plan_delete_branch(table, name)`` — every file of the branch directory, and the files only the branch kept
  alive: everything its snapshots, tags and long-lived changelogs name (manifest lists, manifests, data and extra
  files, changelog files, index manifests and files, statistics) that no snapshot, tag or long-lived changelog of
  main or another branch keeps alive — counted as tag deletion and the deleter's own last check count it (a file a
  remaining owner only names as added-then-deleted is not kept). Java's delete_branch removes only the directory and
  leaves the rest as orphans; Java's remove_orphan_files afterwards removes the same files, except one that another
  owner's manifests still name as added-then-deleted (Java keeps what any manifest names).
  Order: the branch's tags, long-lived changelogs and snapshots (newest first) after the executor journalled the
  content files, then data and changelog files, manifests, index and statistics files, manifest lists, then the
  branch's hints, consumers and schema files, then its directories. A crash leaves at worst an empty branch; the
  next run (or any run reclaiming files) finishes it. A branch named by `scan.fallback-branch` is refused.
* ``plan_rename_branch(table, old, new)`` — the branch directory renamed (atomic where the file system renames
  directories; file by file on object stores, finished by `resume=True` after a crash, as Java's copy-based rename).
* ``plan_fast_forward(table, branch)`` — the table's branch (main for `db.t`) takes the state of `branch`, by Java's
  rules: its snapshots, tags and schemas from the branch's earliest snapshot on are removed and the branch's are
  copied in; data files are not touched (what only the removed snapshots used becomes orphans, as in Java). Refused
  when `branch` is behind: its latest snapshot is older than the target's latest, so the target's history would
  move back (streaming readers and consumers would skip or re-read). Deviations, both safer than Java: long-lived
  changelogs from the branch point on are removed too (Java leaves them naming the discarded history), and the hints
  are rewritten to name existing snapshots (Java copies the branch's hint files). A schema a remaining snapshot or
  tag uses is never replaced by a different one (refused).
* ``list_branches(table)`` — main and every branch: snapshots, tags, consumers, schema, whether it is behind main.
"""
from __future__ import annotations

import hashlib
import logging
import posixpath
import re
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable

from paimon_ops.catalog import check_sync
from paimon_ops.errors import (
    BranchNotFoundError,
    CorruptMetadataError,
    InvalidArgumentError,
    MissingFileError,
    PaimonOpsError,
    StalePlanError,
    TableNotFoundError,
    UnsafeNameError,
    UnsafeOperationError,
    UnsupportedError,
    arg,
)
from paimon_ops.execution.executor import Execution, register_check, register_step
from paimon_ops.execution.journal import pending, plan_pending
from paimon_ops.execution.plan import (
    BRANCH_DIRECTORY,
    CHANGELOG,
    CONSUMER,
    DATA,
    DELETE_DIRS,
    DELETE_FILES,
    DELETE_ORDERED,
    ENSURE_HINTS,
    EXTRA,
    HINT,
    INDEX,
    INDEX_MANIFEST,
    LEFTOVER,
    LONG_CHANGELOG,
    MANIFEST,
    MANIFEST_LIST,
    SCHEMA,
    SNAPSHOT,
    STATISTICS,
    TAG,
    WRITE_FILES,
    FileAction,
    LatestSnapshotIs,
    Plan,
    PlanBuilder,
    Precondition,
    Step,
    declare_step_action,
    planner,
)
from paimon_ops.format.snapshot import Snapshot
from paimon_ops.lifecycle.protection import TagsAre, read_tags, tag_set
from paimon_ops.lifecycle.reclaim import file_size
from paimon_ops.operations.create_branch import OPERATION as CREATE_BRANCH
from paimon_ops.operations.delete_branch import OPERATION as DELETE_BRANCH
from paimon_ops.operations.fast_forward import OPERATION as FAST_FORWARD
from paimon_ops.operations.model import Name
from paimon_ops.operations.rename_branch import OPERATION as RENAME_BRANCH
from paimon_ops.options import (
    METASTORE_ALLOW_OUT_OF_SYNC,
    METASTORE_PARTITIONED_TABLE,
    SNAPSHOT_CLEAN_EMPTY_DIRECTORIES,
)
from paimon_ops.table.consistency import check_history
from paimon_ops.table.references import kept_names
from paimon_ops.table.scan import ManifestStore, TableScanner
from paimon_ops.table.table import (
    BRANCH_PREFIX,
    CHANGELOG_PREFIX,
    CONSUMER_PREFIX,
    EARLIEST,
    LATEST,
    MAIN_BRANCH,
    SCHEMA_PREFIX,
    SNAPSHOT_PREFIX,
    TAG_PREFIX,
    FileStoreTable,
    SnapshotManager,
    TagManager,
    full_name,
    validate_branch_name,
)
from paimon_ops.timeutil import iso

log = logging.getLogger(__name__)

FALLBACK_BRANCH = "scan.fallback-branch"  # Java reads a table's missing partitions from this branch
PRIMARY_BRANCH = "scan.primary-branch"
_ID = re.compile(r"^\d+$")


class CreateBranchPlan(Plan):
    """Creating a branch from a tag, a snapshot, or empty."""

    operation = "create_branch"
    op = CREATE_BRANCH  # its operation (the feature gate, the planner's parameters)


class DeleteBranchPlan(Plan):
    """Deleting a branch, reclaiming the files only it kept alive."""

    operation = "delete_branch"
    op = DELETE_BRANCH


class RenameBranchPlan(Plan):
    """Renaming a branch."""

    operation = "rename_branch"
    op = RENAME_BRANCH


class FastForwardPlan(Plan):
    """A branch (main by default) taking the state of another branch."""

    operation = "fast_forward"
    op = FAST_FORWARD

    def effect(self) -> str:
        """What executing it removes, in words (the CLI asks --yes with them: `rollback.require_confirmation`)."""
        d = self.details
        parts = []
        if d.get("removed_snapshots"):
            s = d["removed_snapshots"]
            parts.append(f"{len(s)} snapshot(s) {s[0]}..{s[-1]}")
        if d.get("removed_tags"):
            parts.append("tag(s) " + ", ".join(d["removed_tags"]))
        what = ", ".join(parts) or "no snapshot or tag"
        return (f"fast-forwarding {full_name(self.table, self.branch)} to branch {d['source']!r} would remove {what} "
                f"of {self.branch} (from the branch point {d['branch_point']} on)")


# ---------------------------------------------------------------------------------------------- steps
COPY_FILES = "copy-files"          # params: sources (paths), sha256 (of each source), mode create | overwrite
MOVE_BRANCH = "move-branch"        # params: source, target (branch directories); files: the branch's files
declare_step_action(COPY_FILES, writes=True, verb="would copy")
declare_step_action(MOVE_BRANCH, deletes=True, verb="would move", done="moved", removal="moved")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@register_step(COPY_FILES)
def _copy_files(ex: Execution, step: Step) -> None:
    """Copy each source to its destination, checking the source is still what was planned (its SHA-256): an
    existing destination with the same bytes is already done (a rerun), with other bytes is refused (stale)."""
    io = ex.table.io
    create = step.params.get("mode", "create") == "create"
    for a, src, digest in zip(step.files, step.params["sources"], step.params["sha256"]):
        try:
            data = io.read_bytes(src)
        except FileNotFoundError:
            raise StalePlanError(ex.plan.operation, ex.plan.table, [f"{src} no longer exists"]) from None
        if _sha(data) != digest:
            raise StalePlanError(ex.plan.operation, ex.plan.table, [f"{src} changed since the plan was made"])
        if create and io.exists(a.path):
            if io.read_bytes(a.path) == data:
                continue
            raise StalePlanError(ex.plan.operation, ex.plan.table,
                                 [f"{a.path} was created meanwhile with other content"])
        ex.write(a, data, create=create)


@register_check(MOVE_BRANCH)
def _check_move(table: FileStoreTable, plan: Plan, step: Step) -> None:
    """Both ends are branch directories of this table, and the target is free (unless resuming)."""
    for key in ("source", "target"):
        d = posixpath.normpath(step.params[key])
        parent, name = posixpath.split(d)
        if parent != posixpath.join(posixpath.normpath(table.root), "branch") or not name.startswith(BRANCH_PREFIX):
            raise UnsafeOperationError(f"{plan.table}: refusing to move {d}: not a branch directory of the table")
        validate_branch_name(name[len(BRANCH_PREFIX):])
    for a, c in zip(step.files, step.creates):
        for p, d in ((a.path, step.params["source"]), (c.path, step.params["target"])):
            if not posixpath.normpath(p).startswith(posixpath.normpath(d) + "/"):
                raise UnsafeOperationError(f"{plan.table}: refusing to move {p}: not inside {d}")


@register_step(MOVE_BRANCH)
def _move_branch(ex: Execution, step: Step) -> None:
    """One atomic directory rename where the file system has directories (Java's rename). On object stores, every
    file is copied first (schema first, so the new branch is readable as soon as it appears), then the sources are
    deleted (schema last); a rerun with resume finishes an interrupted move."""
    io = ex.table.io
    src, dst = step.params["source"], step.params["target"]
    if io.has_directories and not step.params.get("resume"):
        io.rename(src, dst)
        ex.done += list(step.files)
        ex.written.extend(step.creates)
        return
    pairs = list(zip(step.files, step.creates))
    for a, c in sorted(pairs, key=lambda ac: _MOVE_ORDER.index(ac[0].kind)):
        try:
            data = io.read_bytes(a.path)
        except FileNotFoundError:
            continue  # moved by the interrupted run
        if io.exists(c.path):
            if io.read_bytes(c.path) != data:
                raise StalePlanError(ex.plan.operation, ex.plan.table, [f"{c.path} exists with other content"])
        else:
            ex.write(c, data, create=True)
    moved = []
    for a, _ in sorted(pairs, key=lambda ac: -_MOVE_ORDER.index(ac[0].kind)):
        if io.delete_file(a.path):
            moved.append(a)
    if io.has_directories:  # (resuming a file-by-file move: the emptied directories go too)
        for d in sorted({posixpath.dirname(a.path) for a in step.files}, key=len, reverse=True) + [src]:
            io.delete_dir_if_empty(d)
    ex.done += moved


_MOVE_ORDER = [SCHEMA, SNAPSHOT, LONG_CHANGELOG, TAG, CONSUMER, HINT, LEFTOVER]


# ---------------------------------------------------------------------------------------------- preconditions
def branch_state(table: FileStoreTable, branch: str) -> str | None:
    """What a plan relies on about a branch, in words: absent (None), or its snapshot ids and tags."""
    main = table if table.branch == MAIN_BRANCH else table.for_branch(MAIN_BRANCH)
    if not main.branch_exists(branch):
        return None
    root = main.branch_path(branch)
    snaps = SnapshotManager(main.io, root).list_ids()
    tags = TagManager(main.io, root).tags()
    span = f"snapshots {snaps[0]}..{snaps[-1]}" if snaps else "no snapshot"
    return span + "; tags " + (", ".join(f"{n}@{t.id}" for n, t in tags) or "none")


@dataclass(frozen=True)
class BranchIs(Precondition):
    """A branch is absent (`state` None) or has exactly these snapshots and tags (`branch_state`)."""

    kind: ClassVar[str] = "branch"
    branch: str
    state: str | None

    def check(self, table: Any) -> str | None:
        try:
            now = branch_state(table, self.branch)
        except (CorruptMetadataError, InvalidArgumentError) as e:
            return f"branch {self.branch!r} cannot be read ({e})"
        if now == self.state:
            return None
        if self.state is None:
            return f"branch {self.branch!r} was created meanwhile"
        if now is None:
            return f"branch {self.branch!r} was deleted meanwhile"
        return f"branch {self.branch!r} changed: {now} (the plan was made on {self.state})"

    def describe(self) -> str:
        return f"branch {self.branch!r} " + ("absent" if self.state is None else f"has {self.state}")


# ---------------------------------------------------------------------------------------------- helpers
def main_of(table: FileStoreTable) -> FileStoreTable:
    return table if table.branch == MAIN_BRANCH else table.for_branch(MAIN_BRANCH)


def existing_branch(table: FileStoreTable, name: str) -> FileStoreTable:
    """The branch `name` of the table (BranchNotFoundError naming the branches there are)."""
    validate_branch_name(name)
    main = main_of(table)
    if not main.branch_exists(name):
        raise BranchNotFoundError(full_name(main.identifier, name), main.location, name, main.branches())
    try:
        return main.for_branch(name)
    except TableNotFoundError:
        raise CorruptMetadataError(main.branch_path(name), f"branch {name!r} has no schema/ directory (an "
                                                           "interrupted create?); nothing was changed") from None


def _fallback_users(main: FileStoreTable, name: str) -> list[str]:
    """Which branches (main included) read missing partitions from branch `name` (`scan.fallback-branch` /
    `scan.primary-branch`): deleting or renaming it would break their reads."""
    users = []
    for b in [MAIN_BRANCH] + main.branches():
        try:
            bt = main if b == MAIN_BRANCH else main.for_branch(b)
            opts = bt.schema.options
        except (TableNotFoundError, CorruptMetadataError):
            continue  # a branch without schema names nothing
        if name in (opts.get(FALLBACK_BRANCH), opts.get(PRIMARY_BRANCH)):
            users.append(b)
    return users


_META_KINDS = {"snapshot": (SNAPSHOT_PREFIX, SNAPSHOT), "changelog": (CHANGELOG_PREFIX, LONG_CHANGELOG),
               "schema": (SCHEMA_PREFIX, SCHEMA), "consumer": (CONSUMER_PREFIX, CONSUMER), "tag": (TAG_PREFIX, TAG)}


def branch_files(main: FileStoreTable, branch: str) -> tuple[list[tuple[str, str]], list[str]]:
    """([(path, kind)] of every file, [every directory, deepest first]) of a branch's directory. Fails closed:
    a symbolic link anywhere, or a file that is not Paimon metadata of the branch (an unknown name, a file
    outside its metadata directories), is refused naming it — the branch is never deleted or moved past something
    unknown. Temporary files of interrupted atomic creates are leftovers."""
    root = main.branch_path(branch)
    files: list[tuple[str, str]] = []
    dirs: list[str] = []

    def refuse(path: str, why: str) -> UnsafeOperationError:
        return UnsafeOperationError(f"{path}: {why}; the branch directory holds something that is not Paimon "
                                    f"metadata of branch {branch!r}, so nothing was changed (move it away first)")

    def listing(d: str) -> list[Any]:
        entries = main.io.list_status(d, include_symlinks=True, strict=True)
        for st in entries:
            if st.is_symlink:
                raise refuse(st.path, f"a symbolic link -> {st.link_target}")
        return entries

    for st in listing(root):
        if not st.is_dir:
            raise refuse(st.path, "a file directly in the branch directory")
        if st.name not in _META_KINDS:
            raise refuse(st.path, "an unknown directory")
        prefix, kind = _META_KINDS[st.name]
        for f in listing(st.path):
            if f.is_dir:
                if st.name == "tag" and f.name == "tag-success-file":
                    for s in listing(f.path):
                        if s.is_dir or not s.name.endswith("_SUCCESS"):
                            raise refuse(s.path, "not a tag success file")
                        files.append((s.path, TAG))
                    dirs.append(f.path)
                    continue
                raise refuse(f.path, "an unknown directory")
            name = f.name
            if st.name in ("snapshot", "changelog") and name in (EARLIEST, LATEST):
                files.append((f.path, HINT))
            elif name.startswith(".") and name.endswith(".tmp"):
                files.append((f.path, LEFTOVER))
            elif name.startswith(prefix) and (kind in (TAG, CONSUMER) or _ID.match(name[len(prefix):])):
                files.append((f.path, kind))
            else:
                raise refuse(f.path, f"not a {st.name} file name")
        dirs.append(st.path)
    # schema/ goes last: until then the directory is a (possibly empty) branch every reader can open
    dirs.sort(key=lambda d: posixpath.basename(d) == "schema")
    dirs.append(root)
    return files, dirs


# ---------------------------------------------------------------------------------------------- create
def _schema_copies(src: FileStoreTable, up_to: int) -> list[tuple[str, str]]:
    """(source path, file name) of every schema of the source branch up to `up_to` (all of them: data files
    written under an older schema are read with it)."""
    return [(src.schemas.path(i), f"{SCHEMA_PREFIX}{i}") for i in src.schemas.list_ids() if i <= up_to]


@planner(CreateBranchPlan)
def plan_create_branch(table: FileStoreTable, name: Name, *, tag: str | None = None,
                       snapshot_id: int | None = None) -> Plan:
    """Plan creating branch `name` of the table from `tag` or `snapshot_id` of the table's branch, or empty."""
    validate_branch_name(name)
    if tag is not None and snapshot_id is not None:
        raise InvalidArgumentError(f"give {arg('tag')} or {arg('snapshot_id')}, not both")
    src = table
    main = main_of(table)
    root = main.branch_path(name)
    b = PlanBuilder()
    copies: list[tuple[str, str, str]] = []     # (source path, destination path, kind)
    inline: list[tuple[str, str, str, str]] = []  # (destination path, kind, contents, reason)
    details: dict[str, Any] = {"branch": name, "source_branch": src.branch, "from_tag": tag,
                               "from_snapshot": None}
    if tag is not None:
        tags = dict(read_tags(src))
        if tag not in tags:
            raise InvalidArgumentError(f"tag {tag!r} does not exist on {src.full_name}; its tags: "
                                       + (", ".join(tags) or "none"))
        t = tags[tag]
        _readable(src, t, f"tag {tag}")
        details["from_snapshot"] = t.id
        for p, n in _schema_copies(src, t.schema_id):
            copies.append((p, posixpath.join(root, "schema", n), SCHEMA))
        snap_dst = posixpath.join(root, "snapshot", f"{SNAPSHOT_PREFIX}{t.id}")
        if src.snapshots.exists(t.id):
            copies.append((src.snapshots.path(t.id), snap_dst, SNAPSHOT))
        else:  # expired: written from the tag (Java >= 1.3 does the same)
            inline.append((snap_dst, SNAPSHOT, t.to_snapshot().to_json(), f"snapshot {t.id} from tag {tag} "
                                                                          "(expired on the source)"))
        copies.append((src.tags.path(tag), posixpath.join(root, "tag", f"{TAG_PREFIX}{tag}"), TAG))
        b.require(TagsAre(tag_set(read_tags(src))))
    elif snapshot_id is not None:
        if isinstance(snapshot_id, bool) or not isinstance(snapshot_id, int):
            raise InvalidArgumentError(f"{arg('snapshot_id')} must be an integer, got {snapshot_id!r}")
        s = src.snapshots.try_snapshot(snapshot_id)
        if s is None:
            ids = src.snapshots.list_ids()
            held = [n for n, t in read_tags(src) if t.id == snapshot_id]
            raise InvalidArgumentError(
                f"snapshot {snapshot_id} of {src.full_name} does not exist ("
                + (f"snapshots {ids[0]}..{ids[-1]}" if ids else "no snapshots") + ")"
                + (f"; tag {held[0]!r} holds it: create the branch from the tag" if held else ""))
        _readable(src, s, f"snapshot {snapshot_id}")
        details["from_snapshot"] = snapshot_id
        for p, n in _schema_copies(src, s.schema_id):
            copies.append((p, posixpath.join(root, "schema", n), SCHEMA))
        copies.append((src.snapshots.path(snapshot_id), posixpath.join(root, "snapshot",
                                                                         f"{SNAPSHOT_PREFIX}{snapshot_id}"), SNAPSHOT))
        if not any(t.id == snapshot_id for _, t in read_tags(src)):
            b.warn(f"no tag holds snapshot {snapshot_id}: paimon-ops never deletes files another branch uses, but "
                   f"Java Paimon's own snapshot expiry on {src.branch} does not look at other branches (it is why "
                   "Java creates branches from tags only) — while Java writers expire it, create the branch from a "
                   "tag")
        b.require(LatestSnapshotIs(src.snapshots.latest_id()))
    else:
        latest = src.schemas.latest()
        if latest is None:
            raise CorruptMetadataError(src.schemas.dir, "holds no schema file")
        for p, n in _schema_copies(src, latest.id):
            copies.append((p, posixpath.join(root, "schema", n), SCHEMA))
    # an interrupted create of the same branch is finished; any other existing branch of that name is refused
    resumed = False
    plan_pending(b, main)  # (the temporary file of an interrupted copy)
    if main.branch_exists(name):
        planned = {d for _, d, _ in copies} | {d for d, *_ in inline}
        present = [(p, k) for p, k in branch_files(main, name)[0] if k != LEFTOVER]
        same = all(p in planned and _same_as_planned(main, p, copies, inline) for p, _ in present)
        done = {p for p, _ in present}
        copies = [c for c in copies if c[1] not in done]
        inline = [x for x in inline if x[0] not in done]
        if not same:
            raise InvalidArgumentError(f"branch {name!r} of {main.identifier} already exists; branches: "
                                       + ", ".join(main.branches()))
        resumed = True
        b.warn(f"branch {name!r} exists with part of what this creates (an interrupted create): finishing it"
               if copies or inline else f"branch {name!r} already exists exactly as this creates it: nothing to do")
    for group, kind in (("schema files", SCHEMA), ("snapshot file", SNAPSHOT), ("tag file", TAG)):
        todo = [c for c in copies if c[2] == kind]
        if todo:
            b.step(f"branch {name}: {group}", COPY_FILES, sources=[s for s, _, _ in todo],
                   sha256=[_sha(main.io.read_bytes(s)) for s, _, _ in todo], mode="create")
            for src_path, d, k in todo:
                b.add(FileAction(d, k, f"copy of {src_path[len(main.root) + 1:]}", file_size(main, src_path)))
        for d, k, text, reason in (x for x in inline if x[1] == kind):
            b.step(f"branch {name}: {group} (restored)", WRITE_FILES, contents=[text], mode="create")
            b.add(FileAction(d, k, reason))
    b.require(BranchIs(name, branch_state(main, name) if resumed else None))
    details["resumed"] = resumed
    return b.build(CreateBranchPlan, table, details)


def _same_as_planned(main: FileStoreTable, path: str, copies: list[tuple[str, str, str]],
                     inline: list[tuple[str, str, str, str]]) -> bool:
    data = main.io.read_bytes(path)
    for s, d, _ in copies:
        if d == path:
            return main.io.read_bytes(s) == data
    for d, _, text, _ in inline:
        if d == path:
            return text.encode() == data
    return False


def _readable(table: FileStoreTable, s: Snapshot, what: str) -> None:
    """A branch starts from this snapshot: its manifest lists and manifests must be readable (fail closed)."""
    store = ManifestStore(table)
    try:
        for lst in (s.base_manifest_list, s.delta_manifest_list):
            for meta in store.manifest_list(lst, what):
                store.manifest(meta.file_name, lst)
        if s.index_manifest:
            store.index_manifest(s.index_manifest, what)
    except CorruptMetadataError as e:  # MissingFileError included
        raise CorruptMetadataError(e.path, f"{e.problem}; refusing to start a branch from {what} of "
                                           f"{table.full_name}: its metadata is unreadable. Nothing was changed")\
            from None


# ---------------------------------------------------------------------------------------------- delete
@dataclass
class _Named:
    """What a branch's owners name (candidates for reclamation), each with the reason."""

    lists: dict[str, str]
    manifests: dict[str, str]
    index_manifests: dict[str, str]
    index_files: dict[str, tuple[str, int | None]]   # path -> (reason, size)
    statistics: dict[str, str]
    data: dict[str, tuple[str, str, int | None]]      # path -> (kind, reason, size)


def _branch_owners(main: FileStoreTable, branch: str) -> list[tuple[str, Snapshot]]:
    """(label, snapshot) of every snapshot, long-lived changelog and tag of the branch; unreadable ones raise."""
    root = main.branch_path(branch)
    out: list[tuple[str, Snapshot]] = []
    for sub, prefix, kind in (("snapshot", SNAPSHOT_PREFIX, "snapshot"), ("changelog", CHANGELOG_PREFIX, "changelog")):
        mgr = SnapshotManager(main.io, root, sub, prefix)
        for sid in mgr.list_ids():
            s = mgr.try_snapshot(sid)
            if s is not None:
                out.append((f"{kind} {sid}", s))
    for n, t in TagManager(main.io, root).tags():
        out.append((f"tag {n}", t))
    return out


def _named_by(main: FileStoreTable, branch: str, b: PlanBuilder) -> _Named:
    """Everything the branch's snapshots, tags and long-lived changelogs name. A metadata file that is gone names
    nothing (an expiry elsewhere); one that cannot be read is kept with everything only it could name (a leak,
    never a loss)."""
    store = ManifestStore(main)
    scanner = TableScanner(main, store)
    out = _Named({}, {}, {}, {}, {}, {})
    data_manifests: dict[str, str] = {}
    changelog_manifests: dict[str, str] = {}
    for label, s in _branch_owners(main, branch):
        why = f"only branch {branch} ({label}) uses it"
        lists = [(s.base_manifest_list, data_manifests), (s.delta_manifest_list, data_manifests)]
        if s.changelog_manifest_list:
            lists.append((s.changelog_manifest_list, changelog_manifests))
        for lst, into in lists:
            if lst in out.lists:
                continue
            try:
                metas = store.manifest_list(lst, f"branch {branch} {label}")
            except MissingFileError:
                continue
            except UnsafeNameError:
                raise
            except CorruptMetadataError as e:
                b.warn(f"keeping manifest list {lst} and what only it names: unreadable ({e.problem})")
                continue
            out.lists[lst] = why
            for m in metas:
                into.setdefault(m.file_name, why)
        if s.index_manifest and s.index_manifest not in out.index_manifests:
            try:
                entries = store.index_manifest(s.index_manifest, f"branch {branch} {label}")
                out.index_manifests[s.index_manifest] = why
                for ie in entries:
                    out.index_files.setdefault(scanner.index_file_path(ie), (f"{why} ({ie.index_type})",
                                                                             ie.file_size))
            except MissingFileError:
                pass
            except UnsafeNameError:
                raise
            except CorruptMetadataError as e:
                b.warn(f"keeping index manifest {s.index_manifest} and its index files: unreadable ({e.problem})")
        if s.statistics:
            out.statistics.setdefault(s.statistics, why)
    for manifests, kind in ((data_manifests, DATA), (changelog_manifests, CHANGELOG)):
        for mname, why in manifests.items():
            try:
                data_entries = store.manifest(mname, "a manifest list of the branch")
            except MissingFileError:
                continue
            except UnsafeNameError:
                raise
            except CorruptMetadataError as err:
                b.warn(f"keeping manifest {mname} and the files only it names: unreadable ({err.problem})")
                continue
            out.manifests.setdefault(mname, why)
            for entry in data_entries:
                p = scanner.data_file_path(entry.partition, entry.bucket, entry.file)
                if p not in out.data:
                    out.data[p] = (kind, why, entry.file.file_size)
                for x in entry.file.extra_files:
                    out.data.setdefault(posixpath.join(posixpath.dirname(p), x), (EXTRA, why, None))
    return out


def _existing(main: FileStoreTable, paths: Iterable[str]) -> dict[str, int]:
    """path -> size of those that exist, one listing per directory."""
    by_dir: dict[str, list[str]] = {}
    for p in paths:
        by_dir.setdefault(posixpath.dirname(p), []).append(p)
    out: dict[str, int] = {}
    for d, ps in by_dir.items():
        present = {st.path: st.size for st in main.io.list_status(d) if not st.is_dir}
        for p in ps:
            if p in present:
                out[p] = present[p]
    return out


@planner(DeleteBranchPlan)
def plan_delete_branch(table: FileStoreTable, name: Name) -> Plan:
    """Plan deleting branch `name` and the files only it kept alive (module docstring)."""
    main = main_of(table)
    validate_branch_name(name)
    if main.branch_exists(name) and not main.io.is_dir(posixpath.join(main.branch_path(name), "schema")):
        return _finish_deletion(main, name)
    if not main.branch_exists(name) and any(j.operation == DeleteBranchPlan.operation for j in pending(main)[0]):
        b = PlanBuilder()  # a rerun after an interrupted deletion of it: finish what it left
        plan_pending(b, main)
        b.warn(f"branch {name!r} is already gone: an interrupted deletion removed it; what it left is reclaimed now")
        return b.build(DeleteBranchPlan, main, {"branch": name, "resumed": True})
    bt = existing_branch(table, name)
    users = _fallback_users(main, name)
    if users:
        raise UnsafeOperationError(f"branch {name!r} of {main.identifier} is the {FALLBACK_BRANCH} of "
                                   f"{', '.join(users)}: deleting it would break their reads; unset the option first")
    check_history(main, "branch deletion")
    files, dirs = branch_files(main, name)
    b = PlanBuilder()
    plan_pending(b, main)  # first finish what an interrupted run left
    named = _named_by(main, name, b)
    # what every snapshot, tag and long-lived changelog of main and the other branches keeps alive (as tag deletion
    # and the deleter's own last check count it); unreadable metadata of any of them refuses the run
    owner_paths = [p for p, k in files if k in (SNAPSHOT, TAG, LONG_CHANGELOG)]
    kept_alive = kept_names(main, owner_paths)
    kept = kept_alive.names

    def keep(n: str) -> bool:
        return n in kept
    data = {p: v for p, v in named.data.items() if not keep(posixpath.basename(p))}
    present = _existing(main, list(data) + list(named.index_files)
                        + [main.manifest_path(n) for n in (*named.lists, *named.manifests, *named.index_manifests)]
                        + [posixpath.join(main.statistics_dir, n) for n in named.statistics])
    # owners first (the executor journals the content files before the first one goes), newest first
    by_kind: dict[str, list[str]] = {}
    for p, k in files:
        by_kind.setdefault(k, []).append(p)

    def id_of(p: str) -> int:
        return int(posixpath.basename(p).rsplit("-", 1)[1])
    # hints first: a snapshot deleted from the newest down must not leave a hint naming it
    owner_steps = (("tag files", TAG, sorted(by_kind.get(TAG, []))),
                   ("hints", HINT, sorted(by_kind.get(HINT, []))),
                   ("long-lived changelog files (newest first)", LONG_CHANGELOG,
                    sorted(by_kind.get(LONG_CHANGELOG, []), key=id_of, reverse=True)),
                   ("snapshot files (newest first)", SNAPSHOT,
                    sorted(by_kind.get(SNAPSHOT, []), key=id_of, reverse=True)))
    for title, kind, paths in owner_steps:
        b.step(f"branch {name}: {title}", DELETE_ORDERED)
        for p in paths:
            b.add(FileAction(p, kind, f"branch {name} deleted", file_size(main, p)))
    b.step(f"branch {name}: data and changelog files", DELETE_FILES)
    buckets: set[str] = set()
    data_root = posixpath.normpath(main.data_root) + "/"
    for p, (kind, why, _) in sorted(data.items()):
        if p in present:
            b.add(FileAction(p, kind, why, present[p]))
            if p.startswith(data_root):  # (directories of external paths are left alone)
                buckets.add(posixpath.dirname(p))
    clean_dirs: bool = main.options.get(SNAPSHOT_CLEAN_EMPTY_DIRECTORIES)
    if buckets and clean_dirs:
        b.step(f"branch {name}: empty directories", DELETE_DIRS)
        for d in _with_parents(main, buckets):
            b.add(FileAction(d, "directory", f"emptied by deleting branch {name}"))
    b.step(f"branch {name}: manifests, index and statistics files", DELETE_FILES)
    for n, why in sorted(named.manifests.items()):
        p = main.manifest_path(n)
        if not keep(n) and p in present:
            b.add(FileAction(p, MANIFEST, why, present[p]))
    for p, (why, _) in sorted(named.index_files.items()):
        if not keep(posixpath.basename(p)) and p in present:
            b.add(FileAction(p, INDEX, why, present[p]))
    for n, why in sorted(named.statistics.items()):
        p = posixpath.join(main.statistics_dir, n)
        if not keep(n) and p in present:
            b.add(FileAction(p, STATISTICS, why, present[p]))
    b.step(f"branch {name}: manifest lists and index manifests", DELETE_FILES)
    for names, kind in ((named.lists, MANIFEST_LIST), (named.index_manifests, INDEX_MANIFEST)):
        for n, why in sorted(names.items()):
            p = main.manifest_path(n)
            if not keep(n) and p in present:
                b.add(FileAction(p, kind, why, present[p]))
    b.step(f"branch {name}: consumers, schema and leftover files", DELETE_ORDERED)
    for kind in (CONSUMER, LEFTOVER, SCHEMA):
        paths = by_kind.get(kind, [])
        for p in (sorted(paths, key=id_of, reverse=True) if kind == SCHEMA else sorted(paths)):
            b.add(FileAction(p, kind, f"branch {name} deleted", file_size(main, p)))
    b.step(f"branch {name}: directories", DELETE_DIRS)
    for d in dirs:
        b.add(FileAction(d, BRANCH_DIRECTORY, f"branch {name} deleted"))
    b.require(BranchIs(name, branch_state(main, name)))
    snaps = bt.snapshots.list_ids()
    return b.build(DeleteBranchPlan, main, {
        "branch": name, "snapshots": f"{snaps[0]}..{snaps[-1]}" if snaps else None,
        "tags": [n for n, _ in read_tags(bt)], "owners_read_elsewhere": len(kept_alive.owners),
        "note": "files main, a tag or another branch keeps alive are never deleted"})


def _finish_deletion(main: FileStoreTable, name: str) -> Plan:
    """A branch directory without schema/ is what an interrupted deletion leaves (its schema directory goes last):
    what is left is removed when it holds no snapshot, tag or changelog; anything else is refused."""
    files, dirs = branch_files(main, name)
    owners = [p for p, k in files if k in (SNAPSHOT, TAG, LONG_CHANGELOG)]
    if owners:
        raise CorruptMetadataError(owners[0], f"branch {name!r} has no schema/ directory but still holds snapshots "
                                              "or tags (a branch broken outside paimon-ops?); nothing was changed")
    b = PlanBuilder()
    plan_pending(b, main)
    b.step(f"branch {name}: what an interrupted deletion left", DELETE_ORDERED)
    for p, kind in files:
        b.add(FileAction(p, kind, f"branch {name} deleted", file_size(main, p)))
    b.step(f"branch {name}: directories", DELETE_DIRS)
    for d in dirs:
        b.add(FileAction(d, BRANCH_DIRECTORY, f"branch {name} deleted"))
    b.require(BranchIs(name, branch_state(main, name)))
    b.warn(f"branch {name!r} was partly deleted by an interrupted run: finishing it")
    return b.build(DeleteBranchPlan, main, {"branch": name, "resumed": True})


def _with_parents(main: FileStoreTable, bucket_dirs: set[str]) -> list[str]:
    """Bucket directories, then their partition directories deepest first (each removed only if empty)."""
    data_root = posixpath.normpath(main.data_root)
    out: list[str] = []
    seen: set[str] = set()
    for d in sorted(bucket_dirs):
        out.append(d)
        seen.add(d)
    parents: set[str] = set()
    for d in bucket_dirs:
        p = posixpath.dirname(d)
        while p.startswith(data_root + "/") and "=" in posixpath.basename(p):
            parents.add(p)
            p = posixpath.dirname(p)
    out += sorted(parents - seen, key=lambda x: (-x.count("/"), x))
    return out


# ---------------------------------------------------------------------------------------------- rename
@planner(RenameBranchPlan)
def plan_rename_branch(table: FileStoreTable, old: Name, new: Name, *, resume: bool = False) -> Plan:
    """Plan renaming branch `old` to `new`; `resume` finishes a rename an object store interrupted."""
    validate_branch_name(new, "new branch name")
    main = main_of(table)
    if old == new:
        raise InvalidArgumentError(f"branch {old!r} would be renamed to itself")
    src_root, dst_root = main.branch_path(old), main.branch_path(new)
    b = PlanBuilder()
    if main.branch_exists(new):
        if not resume or not main.branch_exists(old):
            hint = f"; if a rename was interrupted, finish it with {arg('resume', True)}" \
                if main.branch_exists(old) else ""
            raise InvalidArgumentError(f"branch {new!r} of {main.identifier} already exists{hint}")
        moved, _ = branch_files(main, new)
        for p, _ in moved:  # what was moved must be exactly a copy of the source's file of that name
            src = src_root + p[len(dst_root):]
            if main.io.exists(src) and main.io.read_bytes(src) != main.io.read_bytes(p):
                raise InvalidArgumentError(f"branch {new!r} exists and differs from {old!r} ({p}); it is not an "
                                           "interrupted rename of it")
        b.warn(f"finishing the interrupted rename of branch {old!r} to {new!r}")
    else:
        existing_branch(table, old)
        if resume:
            raise InvalidArgumentError(f"there is no interrupted rename to finish: branch {new!r} does not exist")
    users = _fallback_users(main, old)
    if users:
        raise UnsafeOperationError(f"branch {old!r} of {main.identifier} is the {FALLBACK_BRANCH} of "
                                   f"{', '.join(users)}: renaming it would break their reads; change the option "
                                   "first")
    files, _ = branch_files(main, old)
    b.step(f"branch {old} -> {new}", MOVE_BRANCH, source=src_root, target=dst_root, resume=resume)
    for p, kind in files:
        b.add(FileAction(p, kind, f"branch {old} renamed to {new}", file_size(main, p)))
        b.creates(FileAction(dst_root + p[len(src_root):], kind, f"branch {new} (renamed from {old})"))
    b.require(BranchIs(old, branch_state(main, old)), BranchIs(new, branch_state(main, new)))
    return b.build(RenameBranchPlan, main, {"old": old, "new": new, "files": len(files), "resumed": resume})


# ---------------------------------------------------------------------------------------------- fast-forward
@planner(FastForwardPlan)
def plan_fast_forward(table: FileStoreTable, branch: Name) -> Plan:
    """Plan the table's branch (the target: main for `db.t`) taking the state of `branch` (module docstring)."""
    target = table
    validate_branch_name(branch)
    check_sync(target, "fast_forward")  # the target's tags: kept in step by a catalog that syncs them, else refused
    registered: bool = target.options.get(METASTORE_PARTITIONED_TABLE)
    out_of_sync_ok: bool = target.options.get(METASTORE_ALLOW_OUT_OF_SYNC)
    if target.schema.partition_keys and registered and not out_of_sync_ok:
        raise UnsupportedError(
            f"fast_forward refused on {target.full_name}: its option {METASTORE_PARTITIONED_TABLE.key}=true "
            "registers its partitions in a metastore, which a fast-forward (snapshots moved as files, as Java's) "
            f"cannot keep in step; set {METASTORE_ALLOW_OUT_OF_SYNC.key}=true to leave the metastore out of step")
    if branch == target.branch:
        raise InvalidArgumentError(f"{target.full_name} cannot be fast-forwarded to itself")
    source = existing_branch(table, branch)
    main = main_of(table)
    src_ids = source.snapshots.list_ids()
    if not src_ids:
        raise InvalidArgumentError(f"branch {branch!r} of {main.identifier} has no snapshot: there is nothing to "
                                   "fast-forward to")
    check_history(main, "fast-forward")
    e = src_ids[0]
    src_latest = src_ids[-1]
    tgt_ids = target.snapshots.list_ids()
    tgt_latest = tgt_ids[-1] if tgt_ids else None
    if tgt_latest is not None and src_latest < tgt_latest:
        raise UnsafeOperationError(
            f"branch {branch!r} is behind {target.branch} of {main.identifier}: its latest snapshot {src_latest} is "
            f"older than {target.branch}'s latest {tgt_latest}, so {target.branch}'s history would move back "
            f"(streaming readers and consumers would skip or re-read snapshots); nothing was changed. Roll "
            f"{target.branch} back first if that is what you want")
    first = source.snapshots.snapshot(e)
    s_point = first.schema_id
    io = main.io
    src_tags = read_tags(source)
    tgt_tags = read_tags(target)

    def same(a: str, b_: str) -> bool:
        return io.exists(a) and io.exists(b_) and io.read_bytes(a) == io.read_bytes(b_)
    # what the target keeps (before the branch point) must still read with the schemas it will have
    src_schemas = {i: source.schemas.path(i) for i in source.schemas.list_ids()}
    tgt_schemas = {i: target.schemas.path(i) for i in target.schemas.list_ids()}
    schema_after = {i: p for i, p in tgt_schemas.items() if i < s_point} | src_schemas
    for what, s in [(f"snapshot {i}", target.snapshots.snapshot(i)) for i in tgt_ids if i < e] + \
            [(f"tag {n}", t) for n, t in tgt_tags if t.id < e and not any(n == m for m, _ in src_tags)]:
        sid = s.schema_id
        if sid not in schema_after or (sid in tgt_schemas and not same(tgt_schemas[sid], schema_after[sid])):
            raise UnsafeOperationError(
                f"{target.full_name} {what} (kept: before the branch point {e}) uses schema {sid}, which "
                f"fast-forwarding to {branch!r} would {'remove' if sid not in schema_after else 'replace'}; "
                "nothing was changed")
    b = PlanBuilder()
    plan_pending(b, main)
    snap_dir, cl_dir = target.snapshots.dir, target.changelogs.dir
    why = f"{target.branch} fast-forwarded to branch {branch} (from its snapshot {e} on)"
    removed_snaps = [i for i in tgt_ids if i >= e and not same(target.snapshots.path(i), source.snapshots.path(i))]
    removed_tags = [(n, t) for n, t in tgt_tags if t.id >= e
                    and not same(target.tags.path(n), source.tags.path(n))]
    removed_tag_names = {n for n, _ in removed_tags}
    cl_ids = target.changelogs.list_ids()
    removed_cls = [i for i in cl_ids if i >= e]
    if removed_snaps:
        b.step("latest snapshot hint (readers list the snapshots meanwhile)", DELETE_ORDERED)
        if io.exists(posixpath.join(snap_dir, LATEST)):
            b.add(FileAction(posixpath.join(snap_dir, LATEST), HINT, "Java deletes it first as well"))
    b.step(f"{target.branch} snapshot files from {e} on (newest first)", DELETE_ORDERED)
    for i in sorted(removed_snaps, reverse=True):
        p = target.snapshots.path(i)
        b.add(FileAction(p, SNAPSHOT, why, file_size(main, p)))
    b.step(f"{target.branch} long-lived changelog files from {e} on (newest first)", DELETE_ORDERED)
    for i in sorted(removed_cls, reverse=True):
        p = target.changelogs.path(i)
        b.add(FileAction(p, LONG_CHANGELOG, f"{why}: it names the discarded history", file_size(main, p)))
    b.step(f"{target.branch} tags from snapshot {e} on", DELETE_ORDERED)
    for n, t in removed_tags:
        p = target.tags.path(n)
        b.add(FileAction(p, TAG, f"tag {n} (snapshot {t.id}): {why}", file_size(main, p)))
        success = posixpath.join(target.tags.dir, "tag-success-file", f"{n}_SUCCESS")
        if io.is_file(success):
            b.add(FileAction(success, TAG, f"success file of tag {n}"))
    # schemas: those from the branch point on that the branch does not have go; the branch's are copied in
    b.step(f"{target.branch} schema files the branch does not have (from schema {s_point} on)", DELETE_ORDERED)
    for i in sorted((i for i in tgt_schemas if i >= s_point and i not in src_schemas), reverse=True):
        b.add(FileAction(tgt_schemas[i], SCHEMA, why, file_size(main, tgt_schemas[i])))
    _copy_step(b, main, f"schema files of branch {branch}", SCHEMA,
               [(p, target.schemas.path(i)) for i, p in sorted(src_schemas.items())
                if not same(p, target.schemas.path(i))], "overwrite")
    moved_tags = [n for n, t in src_tags if target.tags.exists(n) and n not in removed_tag_names
                  and not same(source.tags.path(n), target.tags.path(n))]
    for n in moved_tags:
        b.warn(f"tag {n!r} of {target.branch} is replaced by branch {branch}'s tag of that name (as Java does)")
    _copy_step(b, main, f"tags of branch {branch}", TAG,
               [(source.tags.path(n), target.tags.path(n)) for n, _ in src_tags
                if not same(source.tags.path(n), target.tags.path(n))], "overwrite")
    _copy_step(b, main, f"snapshots of branch {branch} (oldest first)", SNAPSHOT,
               [(source.snapshots.path(i), target.snapshots.path(i)) for i in src_ids
                if not same(source.snapshots.path(i), target.snapshots.path(i))], "create")
    b.step("hints", ENSURE_HINTS, keep_empty=True, hints=[
        {"dir": snap_dir, "name": LATEST, "which": "last"},
        {"dir": snap_dir, "name": EARLIEST, "which": "first"},
        {"dir": cl_dir, "name": LATEST, "which": "last", "default": -1, "only_if_exists": not removed_cls}])
    consumers: list[str] = []
    try:
        for cid, (c, _) in sorted(target.consumers.consumers().items()):
            if e < c.next_snapshot <= (tgt_latest or 0) + 1:
                consumers.append(cid)
                b.warn(f"consumer {cid} of {target.branch} is at snapshot {c.next_snapshot}, after the branch point "
                       f"{e}: it continues on the branch's snapshots from there (what the branch has before that "
                       "is not re-read); reset it if it must")
    except (OSError, PaimonOpsError) as err:
        b.warn(f"could not read the consumers of {target.branch} ({err})")
    b.require(LatestSnapshotIs(tgt_latest), TagsAre(tag_set(tgt_tags)), BranchIs(branch, branch_state(main, branch)))
    return b.build(FastForwardPlan, target, {
        "source": branch, "target": target.branch, "branch_point": e, "source_latest": src_latest,
        "latest_before": tgt_latest, "removed_snapshots": sorted(removed_snaps),
        "removed_changelogs": sorted(removed_cls), "removed_tags": sorted(removed_tag_names),
        "replaced_tags": moved_tags, "consumers_after_branch_point": consumers,
        "note": "metadata only, as Java: files only the removed snapshots used become orphans; remove_orphans "
                "reclaims them"})


def _copy_step(b: PlanBuilder, main: FileStoreTable, title: str, kind: str, pairs: list[tuple[str, str]],
               mode: str) -> None:
    if not pairs:
        return
    b.step(title, COPY_FILES, sources=[s for s, _ in pairs], sha256=[_sha(main.io.read_bytes(s)) for s, _ in pairs],
           mode=mode)
    for s, d in pairs:
        b.add(FileAction(d, kind, f"copy of {s[len(main.root) + 1:]}", file_size(main, s)))


# ---------------------------------------------------------------------------------------------- listing
@dataclass(frozen=True)
class BranchInfo:
    branch: str
    earliest_snapshot: int | None
    latest_snapshot: int | None
    snapshots: int
    tags: tuple[str, ...]
    consumers: int
    schema_id: int | None
    created_millis: int | None   # the branch directory's modification time (Java's $branches create_time)
    behind_main: bool | None      # its latest snapshot is older than main's (fast-forward refuses)


def list_branches(table: FileStoreTable) -> list[BranchInfo]:
    """Main, then every branch by name."""
    main = main_of(table)
    main_latest = main.snapshots.latest_id()
    mtimes = {st.name[len(BRANCH_PREFIX):]: st.mtime_millis
              for st in main.io.list_status(main.path("branch")) if st.is_dir}
    out = []
    for b in [MAIN_BRANCH] + main.branches():
        bt = main if b == MAIN_BRANCH else existing_branch(main, b)
        ids = bt.snapshots.list_ids()
        schema = bt.schemas.latest()
        latest = ids[-1] if ids else None
        out.append(BranchInfo(b, ids[0] if ids else None, latest, len(ids), tuple(n for n, _ in bt.tags.tags()),
                              len(bt.consumers.consumers()), schema.id if schema else None,
                              mtimes.get(b) or None,
                              None if b == MAIN_BRANCH or main_latest is None
                              else (latest is None or latest < main_latest)))
    return out


def branch_rows(infos: list[BranchInfo]) -> list[dict[str, Any]]:
    """The JSON rows of `paimon-ops branches --json`."""
    return [{"branch": i.branch, "earliest_snapshot": i.earliest_snapshot, "latest_snapshot": i.latest_snapshot,
             "snapshots": i.snapshots, "tags": list(i.tags), "consumers": i.consumers, "schema_id": i.schema_id,
             "created": iso(i.created_millis) if i.created_millis else None, "behind_main": i.behind_main}
            for i in infos]


__all__ = ["CreateBranchPlan", "DeleteBranchPlan", "RenameBranchPlan", "FastForwardPlan", "BranchIs", "BranchInfo",
           "plan_create_branch", "plan_delete_branch", "plan_rename_branch", "plan_fast_forward", "list_branches",
           "branch_rows", "branch_files", "existing_branch", "COPY_FILES", "MOVE_BRANCH"]
