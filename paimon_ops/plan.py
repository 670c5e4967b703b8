"""Plans: what an operation will do, decided before anything changes (design.md §1: plan → execute → commit →
report).

A `Plan` is frozen and JSON-serialisable both ways (`to_json` / `Plan.from_json`): `--dry-run --json` prints it,
`paimon-ops apply plan.json` executes exactly it. It carries

* its **steps** (phases), in the crash-safe order they must run: files to delete or write, each with its kind and
  the reason, plus operation-specific steps (compaction tasks, the commit);
* its **preconditions**: what it was planned on (the latest snapshot, the tags, the snapshot it keeps, the files
  it relies on). The executor checks every one against the table before the first step and refuses a stale plan
  with `StalePlanError` saying what changed.

One `Plan` subclass per operation (`ExpireSnapshotsPlan`, `CompactionPlan`, …) registers itself by its `operation`
name, so `Plan.from_json` returns the right type.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import importlib
import json
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Iterator, Mapping

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError

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

# Step actions the executor knows (operations register more: see executor.register_step).
DELETE_FILES = "delete-files"        # unordered; may run in batches on the runner's executors
DELETE_ORDERED = "delete-ordered"    # on the driver, one by one, in plan order (snapshot / tag / changelog files)
DELETE_DIRS = "delete-dirs"          # directories, each removed only if a listing shows it empty at that moment
WRITE_FILES = "write-files"          # params: contents (text per file), mode 'create' (if absent) | 'overwrite'
WRITE_HINT = "write-hint"            # params: value; advisory (readers verify hints): a failure is logged
ENSURE_HINTS = "ensure-hints"        # params: hints [{dir, name, source}]: repaired from a listing at run time

PLAN_FORMAT = "paimon-ops-plan/1"


@dataclass(frozen=True)
class FileAction:
    path: str
    kind: str
    reason: str
    size: int | None = None


@dataclass(frozen=True)
class Step:
    """One phase of a plan. Steps run strictly in order; a step's files may run in any order within it only where
    its action says so (`delete-files`)."""

    name: str
    action: str
    files: tuple[FileAction, ...] = ()
    params: Mapping[str, Any] = field(default_factory=dict)
    creates: tuple[FileAction, ...] = ()  # files a deleting step writes on the way (changelog copies, hints)

    @property
    def deletes(self) -> bool:
        return self.action.startswith("delete") or self.action in _DELETE_ACTIONS

    @property
    def writes(self) -> bool:
        return self.action in (WRITE_FILES, WRITE_HINT) or self.action in _WRITE_ACTIONS


# Operation-specific step actions that delete / write their files (declared by the modules that register them).
_DELETE_ACTIONS: set[str] = set()
_WRITE_ACTIONS: set[str] = set()
_VERBS: dict[str, str] = {}
_DONE_VERBS: dict[str, str] = {}


def declare_step_action(action: str, *, deletes: bool = False, writes: bool = False, verb: str | None = None,
                        done: str | None = None) -> None:
    """`verb` words the step in a plan ("would replace"), `done` its files in a report ("replaced") — for steps whose
    "deleted" files leave the table but stay on disk."""
    if deletes:
        _DELETE_ACTIONS.add(action)
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


# ---------------------------------------------------------------------------------------------- preconditions
_PRECONDITIONS: dict[str, type[Precondition]] = {}


@dataclass(frozen=True)
class Precondition:
    """Something a plan relies on. `check(table)` returns None when it still holds, else what changed (one line)."""

    kind: ClassVar[str] = ""

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
class TagsAre(Precondition):
    """The exact tag set (name -> snapshot id): a tag created or deleted since changes what protects which file."""

    kind: ClassVar[str] = "tags"
    tags: tuple[tuple[str, int], ...]

    def check(self, table: Any) -> str | None:
        from paimon_ops.lifecycle.protection import read_tags
        now = {n: t.id for n, t in read_tags(table)}
        was = dict(self.tags)
        if now == was:
            return None
        added = sorted(set(now) - set(was))
        removed = sorted(set(was) - set(now))
        moved = sorted(n for n in set(now) & set(was) if now[n] != was[n])
        parts = ([f"tag(s) {', '.join(added)} created"] if added else []) + \
            ([f"tag(s) {', '.join(removed)} deleted"] if removed else []) + \
            ([f"tag(s) {', '.join(moved)} moved"] if moved else [])
        return "; ".join(parts)

    def describe(self) -> str:
        return f"tags are {', '.join(f'{n}@{i}' for n, i in self.tags) or 'none'}"


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


# ---------------------------------------------------------------------------------------------- plans
_PLANS: dict[str, type[Plan]] = {}
# Which module defines (and registers) each operation's plan type and step actions; imported on `from_json`.
OPERATION_MODULES = {
    "expire_snapshots": "paimon_ops.lifecycle.expire",
    "delete_tags": "paimon_ops.lifecycle.tag_deletion",
    "expire_tags": "paimon_ops.lifecycle.tag_expiry",
    "auto_tag": "paimon_ops.lifecycle.autotag",
    "create_tag": "paimon_ops.lifecycle.tags",
    "replace_tag": "paimon_ops.lifecycle.tags",
    "rename_tag": "paimon_ops.lifecycle.tags",
    "remove_orphans": "paimon_ops.lifecycle.orphans",
    "rollback": "paimon_ops.lifecycle.rollback",
    "compact": "paimon_ops.compact.api",
    "expire_partitions": "paimon_ops.lifecycle.partition_expiry",
    "compact_manifests": "paimon_ops.lifecycle.manifest_compaction",
    "compact_postpone": "paimon_ops.compact.postpone",
    "rescale": "paimon_ops.compact.rescale",
}


@dataclass(frozen=True)
class Plan:
    """What one operation will do to one table (branch). See the module docstring."""

    operation: ClassVar[str] = ""

    table: str                       # the table identifier, db.table
    location: str                    # where it lives (apply re-opens it from here)
    branch: str = "main"
    base_snapshot: int | None = None  # the latest snapshot when planned
    planned_at: str | None = None     # ISO 8601
    preconditions: tuple[Precondition, ...] = ()
    steps: tuple[Step, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    options_override: Mapping[str, str] = field(default_factory=dict)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.operation:
            _PLANS[cls.operation] = cls

    # ------------------------------------------------------------------ views
    @property
    def deletes(self) -> tuple[FileAction, ...]:
        return tuple(a for s in self.steps if s.deletes for a in s.files)

    @property
    def writes(self) -> tuple[FileAction, ...]:
        return tuple(a for s in self.steps for a in (s.files if s.writes else ()) + s.creates)

    @property
    def files(self) -> tuple[FileAction, ...]:
        return self.deletes + self.writes

    @property
    def is_empty(self) -> bool:
        return not self.files

    def counts(self) -> dict[str, int]:
        return count_by_kind(self.deletes)

    def workload(self) -> Any:
        """What executing this plan asks of a runner (the default runner places the work by it)."""
        from paimon_ops.runner import Workload
        return Workload(deletes=len(self.deletes))

    # ------------------------------------------------------------------ execution
    def execute(self, *, table: Any = None, runner: Any = None, progress: Any = None) -> Any:
        """Check the preconditions against the table now, run the steps, return the Report."""
        from paimon_ops.executor import execute
        return execute(self, table, runner=runner, progress=progress)

    def dry_run_report(self, duration_s: float = 0.0) -> Any:
        from paimon_ops.report import Report
        return Report.of_plan(self, duration_s)

    # ------------------------------------------------------------------ text
    def summary(self) -> str:
        lines = [f"{self.operation} on {self.table}" + (f" (branch {self.branch})" if self.branch != "main" else "")
                 + f", planned on snapshot {self.base_snapshot}"]
        for k, v in self.details.items():
            if isinstance(v, (list, dict)) and len(str(v)) > 160:
                v = f"{type(v).__name__} of {len(v)}"
            lines.append(f"  {k}: {v}")
        if self.preconditions:
            lines.append("  requires: " + "; ".join(p.describe() for p in self.preconditions))
        for s in self.steps:
            if not s.files:
                continue
            verb = _VERBS.get(s.action) or ("would delete" if s.deletes else "would write" if s.writes
                                             else "would process")
            lines.append(f"  {s.name}: {verb} {len(s.files)} file(s)")
            sign = "-" if s.deletes else "+" if s.writes else "~"  # "~": read or rewritten, left on disk
            lines += [f"    {sign} {a.kind:<15} {a.path}  ({a.reason})" for a in s.files]
            lines += [f"    + {a.kind:<15} {a.path}  ({a.reason})" for a in s.creates]
        if not self.files:
            lines.append("  nothing to do")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    __str__ = summary

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        d = {"format": PLAN_FORMAT, "operation": self.operation}
        d.update({f.name: encode(getattr(self, f.name)) for f in dataclasses.fields(self)})
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @staticmethod
    def from_dict(d: Mapping[str, Any], where: str = "plan") -> Plan:
        if not isinstance(d, Mapping) or d.get("format") != PLAN_FORMAT:
            raise CorruptMetadataError(where, f"not a paimon-ops plan (expected \"format\": \"{PLAN_FORMAT}\"); make "
                                              "one with --dry-run --json")
        op = d.get("operation")
        module = OPERATION_MODULES.get(op)  # type: ignore[arg-type]
        if module is None:
            raise CorruptMetadataError(where, f"unknown operation {op!r} in plan")
        importlib.import_module(module)
        cls = _PLANS[op]  # type: ignore[index]
        try:
            return decode(cls, {k: v for k, v in d.items() if k not in ("format", "operation")})
        except (KeyError, TypeError, ValueError) as e:
            raise CorruptMetadataError(where, f"malformed {op} plan: {e}") from None

    @staticmethod
    def from_json(text: str | bytes, where: str = "plan") -> Plan:
        try:
            d = json.loads(text)
        except ValueError as e:
            raise CorruptMetadataError(where, f"not JSON: {e}") from None
        return Plan.from_dict(d, where)


# ---------------------------------------------------------------------------------------------- codec
def encode(v: Any) -> Any:
    """Plain JSON values of plan data (dataclasses by field, preconditions tagged with their kind)."""
    if isinstance(v, Precondition):
        return {"kind": v.kind, **{f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: encode(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, Mapping):
        return {str(k): encode(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    if isinstance(v, bytes):
        return v.hex()
    return v


def decode(tp: Any, v: Any) -> Any:
    """The inverse of `encode` for a type annotation `tp` (dataclasses, tuples, unions with None, mappings)."""
    if isinstance(tp, str):
        raise TypeError(f"unresolved annotation {tp}")
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            return None
        return decode(members[0], v) if len(members) == 1 else v
    if tp is Precondition or (isinstance(tp, type) and issubclass(tp, Precondition) and not tp.kind):
        cls = _PRECONDITIONS.get(v.get("kind"))
        if cls is None:
            raise ValueError(f"unknown precondition kind {v.get('kind')!r}")
        return decode(cls, {k: x for k, x in v.items() if k != "kind"})
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        hints = typing.get_type_hints(tp)
        kw: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            if f.name in v:
                kw[f.name] = decode(hints[f.name], v[f.name])
        return tp(**kw)
    if origin is tuple:
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            return tuple(decode(targs[0], x) for x in v)
        return tuple(decode(a, x) for a, x in zip(targs, v))
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable):
        item = (typing.get_args(tp) or (Any,))[0]
        return [decode(item, x) for x in v]
    if origin in (dict, collections.abc.Mapping) or tp in (dict, Mapping):
        margs = typing.get_args(tp)
        if len(margs) == 2:
            return {k: decode(margs[1], x) for k, x in v.items()}
        return dict(v)
    if tp is bytes:
        return bytes.fromhex(v)
    return v


# ---------------------------------------------------------------------------------------------- helpers
def count_by_kind(actions: Iterable[FileAction]) -> dict[str, int]:
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + 1
    return out


def bytes_by_kind(actions: Iterable[FileAction]) -> dict[str, int]:
    out: dict[str, int] = {}
    for a in actions:
        out[a.kind] = out.get(a.kind, 0) + (a.size or 0)
    return out


def human_bytes(n: int | float | None) -> str:
    """1.5 KiB, 12.0 MiB … for reports, the CLI and Dagster metadata."""
    size = float(n or 0)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


class PlanBuilder:
    """Collects steps; a path is deleted by one step only (the first that plans it: deletes only move earlier)."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.warnings: list[str] = []
        self.preconditions: list[Precondition] = []
        self._seen: set[str] = set()
        self._name: str | None = None
        self._action: str | None = None
        self._files: list[FileAction] = []
        self._creates: list[FileAction] = []
        self._params: dict[str, Any] = {}

    def step(self, name: str, action: str, **params: Any) -> PlanBuilder:
        self._close()
        self._name, self._action, self._params = name, action, dict(params)
        return self

    def creates(self, action: FileAction) -> None:
        """A file the current step writes on the way (listed in the plan's writes)."""
        self._creates.append(action)

    def add(self, action: FileAction) -> bool:
        assert self._action is not None, "call step() first"
        if self._action.startswith("delete") or self._action in _DELETE_ACTIONS:
            if action.path in self._seen:
                return False
            self._seen.add(action.path)
        self._files.append(action)
        return True

    def add_all(self, actions: Iterable[FileAction]) -> None:
        for a in actions:
            self.add(a)

    def planned(self, path: str) -> bool:
        return path in self._seen

    def require(self, *conditions: Precondition) -> None:
        self.preconditions += conditions

    def warn(self, msg: str) -> None:
        import logging
        logging.getLogger("paimon_ops.plan").warning(msg)
        self.warnings.append(msg)

    def _close(self) -> None:
        if self._action is not None and (self._files or self._creates or self._params.get("keep_empty")):
            params = {k: v for k, v in self._params.items() if k != "keep_empty"}
            self.steps.append(Step(self._name or self._action, self._action, tuple(self._files), params,
                                   tuple(self._creates)))
        self._name, self._action, self._files, self._params, self._creates = None, None, [], {}, []

    def build(self, cls: type[Plan], table: Any, details: Mapping[str, Any], base_snapshot: Any = "latest",
              warnings: Iterable[str] = ()) -> Any:
        self._close()
        from paimon_ops import features
        from paimon_ops.timeutil import iso, now_ms
        if cls.operation in features.ALL_OPS:  # compaction gates itself, per mode, before it scans
            features.require(table, cls.operation)
        base = table.snapshots.latest_id() if base_snapshot == "latest" else base_snapshot
        return cls(table=table.identifier, location=table.location, branch=table.branch, base_snapshot=base,
                   planned_at=iso(now_ms()), preconditions=tuple(self.preconditions), steps=tuple(self.steps),
                   details=dict(details), warnings=tuple(self.warnings) + tuple(warnings),
                   options_override=_plan_options(table.options_override))


def iter_steps(plan: Plan, action: str) -> Iterator[Step]:
    return (s for s in plan.steps if s.action == action)


__all__ = ["Plan", "Step", "FileAction", "Precondition", "LatestSnapshotIs", "SnapshotIs", "EarliestSnapshotIs",
           "TagsAre", "TagIs", "PlanBuilder", "count_by_kind", "bytes_by_kind", "human_bytes", "encode", "decode",
           "declare_step_action", "OPERATION_MODULES", "InvalidArgumentError"]


def _plan_options(options: Mapping[str, str]) -> dict[str, str]:
    """A plan's option overrides, without object-store settings: plans are printed and saved, and secrets must not
    be (a plan re-opens its table with the store settings its process was given, objectstore.py)."""
    from paimon_ops.table.objectstore import is_store_option
    return {k: v for k, v in options.items() if not is_store_option(k)}
