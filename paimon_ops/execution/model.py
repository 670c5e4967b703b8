"""The parts of a plan (design.md §1: plan → execute → commit → report): the kinds of files it touches, its steps and
their actions, what it relies on (preconditions), what it asks of a runner (`Workload`), and which plan types exist
(each plan class registers its `operation` when defined, with its planner). The `Plan` class itself is in
execution/plan.py, above the executor it calls; everything below it (the executor, the deleter, the report, the
runners) reads plans through these parts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping

from paimon_ops.execution.files import FileAction, FileList
from paimon_ops.features import Gate

if TYPE_CHECKING:
    from paimon_ops.execution.plan import Plan

# Kinds of files a plan touches (used as report keys too).
DATA = "data"
CHANGELOG = "changelog"
EXTRA = "extra"  # file-index sidecars listed in _EXTRA_FILES
MANIFEST = "manifest"
MANIFEST_LIST = "manifest-list"
INDEX_MANIFEST = "index-manifest"
INDEX = "index"
STATISTICS = "statistics"
SNAPSHOT = "snapshot"
LONG_CHANGELOG = "changelog-metadata"
TAG = "tag"
HINT = "hint"
DIRECTORY = "directory"
TEMP = "temp"
ORPHAN = "orphan"
LEFTOVER = "leftover"  # a file an interrupted run left unreferenced (its journal lists it)
JOURNAL = "journal"    # the record of an interrupted run (.paimon-ops/journal-*)
SCHEMA = "schema"      # a branch's schema file (branch life cycle: create, delete, rename, fast-forward)
CONSUMER = "consumer"  # a consumer's progress file (consumer/consumer-<id>)
BRANCH_DIRECTORY = "branch-directory"  # a branch's directory or one of its metadata directories

# Files that hold the table's history (their deletion removes a snapshot, tag or changelog) and files that hold its
# content (deleted only when no remaining owner keeps them).
OWNER_KINDS = frozenset({SNAPSHOT, TAG, LONG_CHANGELOG})
CONTENT_KINDS = frozenset({DATA, CHANGELOG, EXTRA, MANIFEST, MANIFEST_LIST, INDEX_MANIFEST, INDEX, STATISTICS, ORPHAN,
                           LEFTOVER})

# Step actions the executor knows (operations register more: see executor.register_step).
DELETE_FILES = "delete-files"        # unordered; may run in batches on the runner's executors
DELETE_ORDERED = "delete-ordered"    # on the driver, one by one, in plan order (snapshot / tag / changelog files)
DELETE_DIRS = "delete-dirs"          # directories, each removed only if a listing shows it empty at that moment
WRITE_FILES = "write-files"          # params: contents (text per file), mode 'create' (if absent) | 'overwrite'
WRITE_HINT = "write-hint"            # params: value; advisory (readers verify hints): a failure is logged
ENSURE_HINTS = "ensure-hints"        # params: hints [{dir, name, source}]: repaired from a listing at run time

_NO_FILES = FileList(())


@dataclass(frozen=True)
class Workload:
    """What executing a plan asks of a runner (the default runner places the work by it): tasks (compaction) with
    the bytes they read; file deletes; for expiry and orphan removal the manifests its planning reads and the files
    it considers (listed candidates or deletes)."""

    tasks: int = 0
    input_bytes: int = 0
    deletes: int = 0
    manifests: int = 0
    files: int = 0


@dataclass(frozen=True)
class Step:
    """One phase of a plan. Steps run strictly in order; a step's files may run in any order within it only where
    its action says so (`delete-files`)."""

    name: str
    action: str
    files: FileList = _NO_FILES  # (any sequence of FileActions given is held as a FileList: millions in an expiry)
    params: Mapping[str, Any] = field(default_factory=dict)
    creates: tuple[FileAction, ...] = ()  # files a deleting step writes on the way (changelog copies, hints)

    def __post_init__(self) -> None:
        if not isinstance(self.files, FileList):
            object.__setattr__(self, "files", FileList(self.files))

    @property
    def deletes(self) -> bool:
        return self.action.startswith("delete") or self.action in _DELETE_ACTIONS

    @property
    def writes(self) -> bool:
        return self.action in (WRITE_FILES, WRITE_HINT) or self.action in _WRITE_ACTIONS

    @property
    def removes_files(self) -> bool:
        """Its files are deleted from storage (not only taken out of the table, like compaction inputs)."""
        return self.action in _PHYSICAL_DELETES


# Operation-specific step actions that delete / write their files (declared by the modules that register them).
_DELETE_ACTIONS: set[str] = set()
_WRITE_ACTIONS: set[str] = set()
_PHYSICAL_DELETES: set[str] = {DELETE_FILES, DELETE_ORDERED, DELETE_DIRS}
_VERBS: dict[str, str] = {}
_DONE_VERBS: dict[str, str] = {}
_REMOVAL_CODES: dict[str, str] = {}  # the words of `verb` / `done` -> the code JSON says instead ("replaced")
DELETED = "deleted"  # the removal code of files deleted from storage


def declare_step_action(action: str, *, deletes: bool = False, writes: bool = False, verb: str | None = None,
                        done: str | None = None, removes_files: bool | None = None, removal: str | None = None) -> None:
    """`verb` words the step in a plan ("would replace"), `done` its files in a report ("replaced") — for steps whose
    "deleted" files leave the table but stay on disk; `removal` is the one-word code JSON reports say for that
    ("replaced", "moved", "dropped"; default "deleted"). A deleting step removes its files from storage unless it
    says `done` (they only leave the table) or `removes_files=False`; every removed file goes through the executor's
    preflight before the plan's first destructive step."""
    if removal:
        _REMOVAL_CODES.update({w: removal for w in (verb, done) if w})
    if deletes:
        _DELETE_ACTIONS.add(action)
        if removes_files if removes_files is not None else done is None:
            _PHYSICAL_DELETES.add(action)
    if writes:
        _WRITE_ACTIONS.add(action)
    if verb:
        _VERBS[action] = verb
    if done:
        _DONE_VERBS[action] = done


def removal_words(plan: Plan, dry_run: bool) -> str | None:
    """How a report words the plan's deleted files when its delete steps only take them out of the table (one wording
    for all of them), else None ("deleted")."""
    words = {(_VERBS if dry_run else _DONE_VERBS).get(s.action) for s in plan.steps if s.deletes and s.files}
    return words.pop() if len(words) == 1 and None not in words else None


def removal_code(words: str | None) -> str:
    """The JSON code of a report's removal words (`removal_words`): "deleted" unless a step declared another."""
    return _REMOVAL_CODES.get(words, DELETED) if words else DELETED


# ---------------------------------------------------------------------------------------------- preconditions
_PRECONDITIONS: dict[str, type[Precondition]] = {}


@dataclass(frozen=True)
class Precondition:
    """Something a plan relies on. `check(table)` returns None when it still holds, else what changed (one line)."""

    kind: ClassVar[str] = ""
    # True when the executor's preflight re-derives the same from the live table anyway (checked once, not twice)
    preflight_covers: ClassVar[bool] = False

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.kind:
            _PRECONDITIONS[cls.kind] = cls

    def check(self, table: Any) -> str | None:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


@dataclass(frozen=True)
class LatestSnapshotIs(Precondition):
    """No snapshot was committed since planning (rollback, tag creation on 'latest')."""

    kind: ClassVar[str] = "latest-snapshot"
    snapshot_id: int | None

    def check(self, table: Any) -> str | None:
        now = table.snapshots.latest_id()
        if now != self.snapshot_id:
            return f"the latest snapshot is now {now}, the plan was made on {self.snapshot_id}"
        return None

    def describe(self) -> str:
        return f"latest snapshot is {self.snapshot_id}"


@dataclass(frozen=True)
class SnapshotIs(Precondition):
    """A snapshot the plan keeps or reads still exists with the same content (its base manifest list)."""

    kind: ClassVar[str] = "snapshot"
    snapshot_id: int
    base_manifest_list: str

    def check(self, table: Any) -> str | None:
        s = table.snapshots.try_snapshot(self.snapshot_id)
        if s is None:
            return f"snapshot {self.snapshot_id} no longer exists"
        if s.base_manifest_list != self.base_manifest_list:
            return f"snapshot {self.snapshot_id} was replaced (rollback and new commits since the plan)"
        return None

    def describe(self) -> str:
        return f"snapshot {self.snapshot_id} unchanged"


@dataclass(frozen=True)
class EarliestSnapshotIs(Precondition):
    kind: ClassVar[str] = "earliest-snapshot"
    snapshot_id: int | None

    def check(self, table: Any) -> str | None:
        now = table.snapshots.earliest_id()
        if now != self.snapshot_id:
            return f"the earliest snapshot is now {now}, the plan was made when it was {self.snapshot_id}"
        return None

    def describe(self) -> str:
        return f"earliest snapshot is {self.snapshot_id}"


@dataclass(frozen=True)
class TagIs(Precondition):
    """A tag is absent (`snapshot_id` None) or points at that snapshot."""

    kind: ClassVar[str] = "tag"
    name: str
    snapshot_id: int | None

    def check(self, table: Any) -> str | None:
        exists = table.tags.exists(self.name)
        if self.snapshot_id is None:
            return f"tag {self.name!r} was created meanwhile" if exists else None
        if not exists:
            return f"tag {self.name!r} was deleted meanwhile"
        now = table.tags.tag(self.name).id
        if now != self.snapshot_id:
            return f"tag {self.name!r} now points at snapshot {now}, not {self.snapshot_id}"
        return None

    def describe(self) -> str:
        return f"tag {self.name!r} " + ("absent" if self.snapshot_id is None else f"at snapshot {self.snapshot_id}")


def precondition_kinds() -> list[str]:
    """Every kind of precondition a plan can carry (as JSON says it)."""
    return sorted(_PRECONDITIONS)


# ---------------------------------------------------------------------------------------------- plan types
_PLANS: dict[str, type[Plan]] = {}  # plan type -> class: each `Plan` subclass registers its `operation` when defined


def plan_type(op: str) -> type[Plan] | None:
    """The plan class of a saved plan's operation (every plan class is defined with its planner, which the facade
    imports)."""
    return _PLANS.get(op) if isinstance(op, str) else None


def registered_plan_types() -> dict[str, type[Plan]]:
    """Every plan type defined so far (a plan class is defined with its planner), by its `operation`."""
    return dict(_PLANS)


def gate_of(plan_operation: str, mode: str | None = None) -> Gate | None:
    """The feature gate of a plan type (its operation's; per mode for compaction): None — refused by the gate — for a
    plan type no operation declares, or a mode it does not name."""
    cls = plan_type(plan_operation)
    return None if cls is None or cls.op is None else cls.op.gate(mode)


def count_by_kind(actions: Iterable[FileAction]) -> dict[str, int]:
    if isinstance(actions, FileList):
        return actions.kind_counts()
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + 1
    return out


def bytes_by_kind(actions: Iterable[FileAction]) -> dict[str, int]:
    if isinstance(actions, FileList):
        return actions.kind_bytes()
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + (a.size or 0)
    return out


__all__ = ["DATA", "CHANGELOG", "EXTRA", "MANIFEST", "MANIFEST_LIST", "INDEX_MANIFEST", "INDEX", "STATISTICS",
           "SNAPSHOT", "LONG_CHANGELOG", "TAG", "HINT", "DIRECTORY", "TEMP", "ORPHAN", "LEFTOVER", "JOURNAL",
           "SCHEMA", "CONSUMER", "BRANCH_DIRECTORY",
           "OWNER_KINDS", "CONTENT_KINDS", "DELETE_FILES", "DELETE_ORDERED", "DELETE_DIRS", "WRITE_FILES", "WRITE_HINT",
           "ENSURE_HINTS", "DELETED", "Workload", "Step", "declare_step_action", "removal_words", "removal_code",
           "Precondition", "LatestSnapshotIs", "SnapshotIs", "EarliestSnapshotIs", "TagIs", "precondition_kinds",
           "plan_type", "registered_plan_types", "gate_of", "count_by_kind", "bytes_by_kind", "FileAction", "FileList"]
