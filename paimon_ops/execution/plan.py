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
import contextlib
import contextvars
import ctypes
import dataclasses
import datetime as _dt
import functools
import gc
import inspect
import itertools
import json
import logging
import sys
import time
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Generic, Iterable, Iterator, Mapping, ParamSpec, Sequence, TypeVar

import paimon_ops.features as features
from paimon_ops.errors import CorruptMetadataError, FormatError, InvalidArgumentError, PaimonOpsError, StalePlanError
from paimon_ops.execution.files import FileAction, FileColumns, FileList
from paimon_ops.features import Gate
from paimon_ops.operations.model import Operation
from paimon_ops.options import format_duration
from paimon_ops.schemas import PLAN, envelope, format_of
from paimon_ops.table.objectstore import is_store_option
from paimon_ops.timeutil import iso, now_ms

_P = ParamSpec("_P")
_R = TypeVar("_R", bound="Plan")

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

# The saved plan's format (paimon_ops.schemas): new fields may be added without a new major (readers ignore what
# they do not know, so plans saved by older versions still load); a renamed or retyped field needs paimon-ops-plan/2.
PLAN_FORMAT = format_of(PLAN)
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


# ---------------------------------------------------------------------------------------------- plans
_PLANS: dict[str, type[Plan]] = {}

# What runs a plan: the executor and the report register themselves here when imported (`import paimon_ops` imports
# both), as operations register their step handlers with the executor — a plan is data and never imports them.
_SERVED: dict[str, Callable[..., Any]] = {}


def serves_plans(role: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the function behind `Plan.execute` ("execute") or `Plan.dry_run_report` ("dry_run_report")."""
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        _SERVED[role] = fn
        return fn
    return deco


def _served(role: str) -> Callable[..., Any]:
    try:
        return _SERVED[role]
    except KeyError:
        raise PaimonOpsError(f"nothing registered to {role.replace('_', ' ')} plans: import paimon_ops") from None


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


@dataclass(frozen=True)
class Plan:
    """What one operation will do to one table (branch). See the module docstring."""

    operation: ClassVar[str] = ""
    op: ClassVar[Operation | None] = None  # the operation making plans of this type (its feature gate): declared by
    #                                        each plan type; a plan type without one is refused by the gate

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
    # The arguments its planner was called with (resolved: `now` included), so that executing a plan made elsewhere
    # re-plans on the live table and refuses unless the decision is the same (`replan`).
    planned_with: Mapping[str, Any] = field(default_factory=dict)
    # The operation whose planner made it (a compaction of a postpone-bucket table makes a postpone compaction plan):
    # what re-plans it. None (plans saved by older versions): the planner of its plan type.
    planned_by: str | None = None

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.operation:
            _PLANS[cls.operation] = cls

    @property
    def is_fresh(self) -> bool:
        """True for the very object its planner returned in this process; a plan read from JSON (or copied with
        `dataclasses.replace`) is not, and is re-planned before it may change anything."""
        return self.__dict__.get("_fresh") is _FRESH

    # ------------------------------------------------------------------ views
    @property
    def deletes(self) -> FileList:
        return FileList.concat(s.files for s in self.steps if s.deletes)

    @property
    def writes(self) -> FileList:
        return FileList.concat(part for s in self.steps for part in ((s.files, s.creates) if s.writes else
                                                                     (s.creates,)))

    @property
    def files(self) -> FileList:
        return FileList.concat((self.deletes, self.writes))

    @property
    def is_empty(self) -> bool:
        return not any((s.files and (s.deletes or s.writes)) or s.creates for s in self.steps)

    def counts(self) -> dict[str, int]:
        return count_by_kind(self.deletes)

    def workload(self) -> Any:
        """What executing this plan asks of a runner (the default runner places the work by it)."""
        return Workload(deletes=len(self.deletes))

    # ------------------------------------------------------------------ execution
    def execute(self, *, table: Any = None, runner: Any = None, progress: Any = None, batch_size: int | None = None,
                parallel_threshold: int | None = None, max_replans: int = 0, commit_user: str | None = None,
                commit_time_millis: int | None = None) -> Any:
        """Check the preconditions against the table now, run the steps, return the Report. The execution options
        (`batch_size`, `parallel_threshold` of deletes; `max_replans` on a concurrent commit; `commit_user`,
        `commit_time_millis` of a commit) are described at `paimon_ops.execution.executor.execute`."""
        return _served("execute")(self, table, runner=runner, progress=progress, batch_size=batch_size,
                       parallel_threshold=parallel_threshold, max_replans=max_replans, commit_user=commit_user,
                       commit_time_millis=commit_time_millis)

    def dry_run_report(self, duration_s: float = 0.0) -> Any:
        return _served("dry_run_report")(self, duration_s)

    # ------------------------------------------------------------------ text
    def summary(self, limit: int | None = None, files: bool = True) -> str:
        """For review: what it would write and delete (by kind, with byte totals), the figures a person reads, then
        every file with its kind and reason; `limit`: only the first N files, then how many more; `files` False:
        counts and bytes per kind of each step instead of the file list. Internals are in the JSON only."""
        return "\n".join(self._summary_lines(limit, files))

    def summary_lines(self, limit: int | None = None, files: bool = True) -> Iterator[str]:
        """The lines of `summary`, one at a time (a listing of millions of files is printed, never held whole; a
        subclass that words its summary itself gives its lines from that text)."""
        if type(self).summary is not Plan.summary:
            return iter(self.summary(limit, files).split("\n"))
        return self._summary_lines(limit, files)

    def _summary_lines(self, limit: int | None, files: bool) -> Iterator[str]:
        deletes, writes = self.deletes, self.writes
        lines = [f"{self.operation} on {self.table}" + (f" (branch {self.branch})" if self.branch != "main" else "")
                 + f", planned on snapshot {self.base_snapshot}"]
        if deletes or writes:
            words = removal_words(self, dry_run=True) or "would delete"
            lines += text_table(["kind", "would write", "size", words, "size"],
                                effects_rows(count_by_kind(writes), bytes_by_kind(writes), count_by_kind(deletes),
                                             bytes_by_kind(deletes), sized_writes=writes.any_sized()))
        shown_details, _ = split_details(self.details)
        lines += [f"  {k}: {v}" for k, v in shown_details]
        shown = omitted = 0
        if self.preconditions:
            lines.append("  requires: " + "; ".join(p.describe() for p in self.preconditions))
        for s in self.steps:
            if not s.files:
                continue
            verb = _VERBS.get(s.action) or ("would delete" if s.deletes else "would write" if s.writes
                                             else "would process")
            lines.append(f"  {s.name}: {verb} {len(s.files)} file(s)" + (
                f", {human_bytes(s.files.total_bytes())}" if s.files.any_sized() else ""))
            sign = "-" if s.deletes else "+" if s.writes else "~"  # "~": read or rewritten, left on disk
            if not files:
                for part, actions in (("", s.files), (" (created)", s.creates)):
                    n, size = count_by_kind(actions), bytes_by_kind(actions)
                    lines += [f"    {k:<15} {n[k]} file(s){part}, {human_bytes(size[k])}" for k in sorted(n)]
                continue
            listed = len(s.files) + len(s.creates)
            take = listed if limit is None else min(listed, max(0, limit - shown))
            omitted += listed - take
            shown += take
            yield from lines
            lines = []
            for sign_, a in itertools.islice(itertools.chain(((sign, a) for a in s.files),
                                                             (("+", a) for a in s.creates)), take):
                yield f"    {sign_} {a.kind:<15} {a.path}  ({a.reason})"
        if omitted:
            lines.append(f"  … and {omitted} more file(s) (--limit {limit}; --json lists every file)")
        if not deletes and not writes:
            lines.append("  nothing to do")
        elif deletes:
            lines.append(f"  total: {len(deletes)} file(s) to delete, {human_bytes(deletes.total_bytes())}"
                         + (f"; {len(writes)} to write" + (f", {human_bytes(writes.total_bytes())}"
                                                          if writes.any_sized() else "")
                            if writes else ""))
        lines += [f"  warning: {w}" for w in self.warnings]
        yield from lines

    __str__ = summary

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict[str, Any]:
        d = envelope(PLAN, operation=self.operation)
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
        cls = plan_type(op)  # type: ignore[arg-type]
        if cls is None:
            raise CorruptMetadataError(where, f"unknown operation {op!r} in plan")
        try:
            return decode(cls, {k: v for k, v in d.items() if k not in ("format", "version", "operation")})
        except RecursionError:
            raise CorruptMetadataError(where, f"malformed {op} plan: nested too deeply") from None
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise CorruptMetadataError(where, f"malformed {op} plan: {e}") from None

    @staticmethod
    def from_json(text: str | bytes, where: str = "plan") -> Plan:
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                raise CorruptMetadataError(where, "not a paimon-ops plan: not UTF-8 text") from None
        try:
            d = json.loads(text)
        except RecursionError:
            raise CorruptMetadataError(where, "not a paimon-ops plan: JSON nested too deeply") from None
        except ValueError as e:
            raise CorruptMetadataError(where, f"not JSON: {e}") from None
        return Plan.from_dict(d, where)


# ---------------------------------------------------------------------------------------------- codec
def encode(v: Any) -> Any:
    """Plain JSON values of plan data (dataclasses by field, preconditions tagged with their kind)."""
    if type(v) is FileAction:  # the bulk of a large plan or report: four plain fields, no reflection
        return {"path": v.path, "kind": v.kind, "reason": v.reason, "size": v.size}
    if isinstance(v, FileList):
        return [{"path": a.path, "kind": a.kind, "reason": a.reason, "size": a.size} for a in v]
    if isinstance(v, (list, tuple)) and v and type(v[0]) is FileAction:
        return [{"path": a.path, "kind": a.kind, "reason": a.reason, "size": a.size} if type(a) is FileAction
                else encode(a) for a in v]
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


def decode(tp: Any, v: Any, where: str = "") -> Any:
    """The inverse of `encode` for a type annotation `tp` (dataclasses, tuples, unions with None, mappings). Values
    of the wrong JSON type are refused (TypeError naming the field), never passed on."""
    if isinstance(tp, str):
        raise TypeError(f"unresolved annotation {tp}")
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if v is None:
            return None
        if len(members) == 1:
            return decode(members[0], v, where)
        for m in members:  # the first member the value fits
            try:
                return decode(m, v, where)
            except (TypeError, ValueError):
                continue
        raise TypeError(f"{where or 'value'}: {type(v).__name__} fits none of {tp}")
    if tp is FileList:
        _expect(v, list, where)
        cols = FileColumns()
        for i, x in enumerate(v):  # (one element at a time: a saved plan may list millions)
            cols.append(decode(FileAction, x, f"{where}[{i}]"))
        return cols.freeze()
    if tp is Precondition or (isinstance(tp, type) and issubclass(tp, Precondition) and not tp.kind):
        _expect(v, dict, where)
        cls = _PRECONDITIONS.get(v.get("kind"))
        if cls is None:
            raise FormatError(f"unknown precondition kind {v.get('kind')!r}")
        return decode(cls, {k: x for k, x in v.items() if k != "kind"}, where)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        _expect(v, dict, where)
        hints = typing.get_type_hints(tp)
        kw: dict[str, Any] = {}
        for f in dataclasses.fields(tp):
            if f.init and f.name in v:
                kw[f.name] = decode(hints[f.name], v[f.name], f"{where}.{f.name}" if where else f.name)
        return tp(**kw)
    if origin is tuple:
        _expect(v, list, where)
        targs = typing.get_args(tp)
        if len(targs) == 2 and targs[1] is Ellipsis:
            return tuple(decode(targs[0], x, f"{where}[{i}]") for i, x in enumerate(v))
        if len(v) != len(targs):
            raise FormatError(f"{where or 'value'}: expected {len(targs)} items, got {len(v)}")
        return tuple(decode(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(targs, v)))
    if origin in (list, collections.abc.Sequence, collections.abc.Iterable):
        _expect(v, list, where)
        item = (typing.get_args(tp) or (Any,))[0]
        return [decode(item, x, f"{where}[{i}]") for i, x in enumerate(v)]
    if origin in (dict, collections.abc.Mapping) or tp in (dict, Mapping):
        _expect(v, dict, where)
        margs = typing.get_args(tp)
        if len(margs) == 2:
            return {k: decode(margs[1], x, f"{where}.{k}") for k, x in v.items()}
        return dict(v)
    if tp is bytes:
        _expect(v, str, where)
        return bytes.fromhex(v)
    if tp is bool:
        _expect(v, bool, where)
    elif tp is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{where or 'value'}: expected an integer, got {type(v).__name__}")
    elif tp is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError(f"{where or 'value'}: expected a number, got {type(v).__name__}")
    elif tp is str:
        _expect(v, str, where)
    return v


def _expect(v: Any, kind: type, where: str) -> None:
    if not isinstance(v, kind):
        names = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}
        raise TypeError(f"{where or 'value'}: expected {names.get(kind, kind.__name__)}, got {type(v).__name__}")


# ---------------------------------------------------------------------------------------------- helpers
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
        self._seen: dict[str, set[str]] = {}  # directory (with its '/') -> names planned for deletion there
        self._dedupe = False
        self._name: str | None = None
        self._action: str | None = None
        self._files = FileColumns()
        self._creates: list[FileAction] = []
        self._params: dict[str, Any] = {}
        self._gated: set[str] = set()

    def gate(self, table: Any, operation: str, mode: str | None = None, uses: Any = None) -> None:
        """The feature gate of plan type `operation` (per `mode`) on `table`, now — before the planner reads in bulk;
        `build` then does not check it again. Without it, `build` gates the plan type (the gate fails closed: a plan
        type no operation declares, or a mode it does not name, is refused)."""
        features.require(table, gate_of(operation, mode), uses,
                         what=f"{operation} ({mode})" if mode else f"{operation} plan")
        self._gated.add(operation)

    def step(self, name: str, action: str, **params: Any) -> PlanBuilder:
        self._close()
        self._name, self._action, self._params = name, action, dict(params)
        self._dedupe = action.startswith("delete") or action in _DELETE_ACTIONS  # (once per step, not per file)
        return self

    def creates(self, action: FileAction) -> None:
        """A file the current step writes on the way (listed in the plan's writes)."""
        self._creates.append(action)

    def add(self, action: FileAction) -> bool:
        assert self._action is not None, "call step() first"
        if not self._dedupe:
            self._files.append(action)
            return True
        return self._add_once(action)

    def _add_once(self, a: FileAction) -> bool:
        path = a.path
        if not isinstance(path, str):
            raise TypeError(f"a file's path must be a string, not {type(path).__name__}")
        cut = path.rfind("/") + 1
        d, name = path[:cut], path[cut:]  # (the name string is the one the FileList keeps: no second copy)
        names = self._seen.get(d)
        if names is None:
            names = self._seen[d] = set()
        elif name in names:
            return False
        names.add(name)
        self._files.add_split(d, name, a.kind, a.reason, a.size)
        return True

    def add_all(self, actions: Iterable[FileAction]) -> None:
        """`add` of each action in turn (one loop: millions of files in a large expiry)."""
        assert self._action is not None, "call step() first"
        if not self._dedupe:
            self._files.extend(actions)
            return
        add = self._add_once
        for a in actions:
            add(a)

    def planned(self, path: str) -> bool:
        cut = path.rfind("/") + 1
        return path[cut:] in self._seen.get(path[:cut], ())

    def owners_first(self) -> None:
        """Move the steps that remove snapshot, tag or changelog files before every other step (keeping their order):
        a crash must never leave a snapshot or tag listed whose files are partly deleted. The executor records the
        content files in a journal before the first owner goes (lifecycle.journal), so a rerun still reclaims them."""
        self._close()
        owners = [st for st in self.steps if st.files and all(a.kind in OWNER_KINDS for a in st.files)]
        self.steps = owners + [st for st in self.steps if not any(st is o for o in owners)]

    def require(self, *conditions: Precondition) -> None:
        self.preconditions += conditions

    def warn(self, msg: str) -> None:
        logging.getLogger("paimon_ops.execution.plan").warning(msg)
        self.warnings.append(msg)

    def _close(self) -> None:
        if self._action is not None and (self._files or self._creates or self._params.get("keep_empty")):
            params = {k: v for k, v in self._params.items() if k != "keep_empty"}
            self.steps.append(Step(self._name or self._action, self._action, self._files.freeze(), params,
                                   tuple(self._creates)))
        self._name, self._action, self._files, self._params, self._creates = None, None, FileColumns(), {}, []

    def build(self, cls: type[Plan], table: Any, details: Mapping[str, Any], base_snapshot: Any = "latest",
              warnings: Iterable[str] = ()) -> Any:
        self._close()
        if cls.operation not in self._gated:  # (compaction gates itself, per mode, before it scans)
            features.require(table, gate_of(cls.operation), what=f"{cls.operation or cls.__name__} plan")
        base = table.snapshots.latest_id() if base_snapshot == "latest" else base_snapshot
        return cls(table=table.identifier, location=table.location, branch=table.branch, base_snapshot=base,
                   planned_at=iso(now_ms()), preconditions=tuple(self.preconditions), steps=tuple(self.steps),
                   details=dict(details), warnings=tuple(self.warnings) + tuple(warnings),
                   options_override=_plan_options(table.options_override))


# ---------------------------------------------------------------------------------------------- planners
# A plan is a review artifact, not an authority (design.md §1). Every operation's planner is registered here; the
# plan it returns records the arguments it was called with (`planned_with`). A plan that did not come straight from
# its planner in this process — read from JSON, or copied — is executed only after `replan`: the planner runs again
# with the recorded arguments on the live table, and the plan is refused unless that decision (steps, files,
# inputs, targets, preconditions, base snapshot) is exactly the reviewed one. What then runs is the fresh plan, so an
# edited plan can never do more than the command it claims to be.
_FRESH = object()
_PLANNERS: dict[str, Planner[..., Any]] = {}  # by plan type
_PLANNERS_BY_OPERATION: dict[str, Planner[..., Any]] = {}
_PLANNING: contextvars.ContextVar[bool] = contextvars.ContextVar("paimon_ops_planning", default=False)


class _Unrecordable(Exception):
    pass


def encode_param(v: Any) -> Any:
    """JSON for a planner argument; times and durations tagged so that they decode to the same values."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, _dt.timedelta):
        return {"$timedelta_us": (v.days * 86_400 + v.seconds) * 1_000_000 + v.microseconds}
    if isinstance(v, _dt.datetime):
        return {"$datetime": v.isoformat()}
    if isinstance(v, _dt.date):
        return {"$date": v.isoformat()}
    if isinstance(v, (list, tuple)):
        return [encode_param(x) for x in v]
    if isinstance(v, Mapping):
        if not all(isinstance(k, str) for k in v):
            raise _Unrecordable("a mapping with non-text keys")
        return {k: encode_param(x) for k, x in v.items()}
    raise _Unrecordable(f"a {type(v).__name__}")


def decode_param(v: Any) -> Any:
    if isinstance(v, list):
        return [decode_param(x) for x in v]
    if isinstance(v, dict):
        if len(v) == 1:
            (k, x), = v.items()
            try:
                if k == "$timedelta_us" and isinstance(x, int) and not isinstance(x, bool):
                    return _dt.timedelta(microseconds=x)
                if k == "$datetime" and isinstance(x, str):
                    return _dt.datetime.fromisoformat(x)
                if k == "$date" and isinstance(x, str):
                    return _dt.date.fromisoformat(x)
            except (ValueError, OverflowError) as e:
                raise FormatError(f"{k}: {e}") from None
        return {k: decode_param(x) for k, x in v.items()}
    return v


def _clock_now(params: dict[str, Any]) -> None:
    for name in ("now", "now_millis"):
        if name in params and params[name] is None:
            params[name] = int(time.time() * 1000)


_SAVED_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {}


_LARGE_PLAN = 100_000  # files: planning that many decoded manifests whose buffers the allocators keep


def _release_memory() -> None:
    """Give back to the system what a large planning freed: Arrow's pool and the C heap keep freed pages for reuse,
    and the execution that follows would otherwise peak on top of them (issue 24: peak RSS below Java's)."""
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    try:
        ctypes.CDLL(None).malloc_trim(0)  # (glibc; elsewhere there is nothing to call)
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a plan is built: a large plan creates millions of long-lived objects
    (file actions, paths; none in a cycle), and each full collection would walk all of them again (a quarter of a
    1 M-entry expiry plan's time). Collection resumes afterwards as usual."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Planner(Generic[_P, _R]):
    """A planner, `fn(table, **arguments) -> Plan`, as `planner` wraps it: the outermost call records its arguments in
    the plan (after `resolve` filled what defaults to the clock, such as `now`) and marks the returned object as
    fresh. `operation` is the declaration of the operation it plans (its plan types'), whose `Params` it takes."""

    def __init__(self, fn: Callable[_P, _R], plan_types: tuple[type[Plan] | str, ...], internal: tuple[str, ...],
                 hidden: tuple[str, ...], resolve: Callable[[dict[str, Any]], None] | None,
                 renamed: Mapping[str, str]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.plan_types = plan_types
        self.internal = internal
        self.hidden = hidden
        self.resolve = resolve
        self.renamed = dict(renamed)
        self.signature = inspect.signature(fn)
        self._first = next(iter(self.signature.parameters))

    @property
    def operation(self) -> Operation | None:
        return next((t.op for t in self.plan_types if not isinstance(t, str) and t.op is not None), None)

    def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        fn = self.fn
        if _PLANNING.get():  # part of another operation's plan
            return fn(*args, **kwargs)
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        params = dict(bound.arguments)
        table = params.pop(self._first)
        if self.resolve is not None:
            self.resolve(params)
        token = _PLANNING.set(True)
        try:
            with _gc_paused():
                plan = fn(table, **params)  # type: ignore[arg-type]
        finally:
            _PLANNING.reset(token)
        try:
            recorded = encode_param({k: v for k, v in params.items() if k not in self.internal})
        except _Unrecordable as e:
            recorded = {"$unrecordable": str(e)}
        op = self.operation
        plan = dataclasses.replace(plan, planned_with=recorded, planned_by=op.name if op is not None else None)
        object.__setattr__(plan, "_fresh", _FRESH)
        if sum(len(s.files) for s in plan.steps) >= _LARGE_PLAN:
            _release_memory()
        return plan


def planner(*plan_types: type[Plan] | str, internal: tuple[str, ...] = (), hidden: tuple[str, ...] = (),
            resolve: Callable[[dict[str, Any]], None] | None = _clock_now,
            check_saved: Callable[[dict[str, Any]], None] | None = None,
            renamed: Mapping[str, str] | None = None) -> Callable[[Callable[_P, _R]], Planner[_P, _R]]:
    """The planner of `plan_types` (the plan classes it returns): `Planner`. A plan of those types read from JSON is
    re-planned with it (`replan`). Its arguments are its operation's `Params` fields, `hidden` ones (recorded in the
    plan but never offered to users: a run id `resolve` fills, a switch for other callers) and `internal` ones (used
    by other planners calling this one; not recorded);
    `check_saved(arguments)` refuses recorded arguments a saved plan may not carry (e.g. a time ahead of the clock);
    `renamed`: old name -> new name of arguments plans saved by earlier versions record."""
    names = [t if isinstance(t, str) else t.operation for t in plan_types]

    def deco(fn: Callable[_P, _R]) -> Planner[_P, _R]:
        wrapper = Planner(fn, plan_types, internal, hidden, resolve, renamed or {})
        for name in names:
            _PLANNERS[name] = wrapper
            if check_saved is not None:
                _SAVED_CHECKS[name] = check_saved
        if wrapper.operation is not None:
            _PLANNERS_BY_OPERATION[wrapper.operation.name] = wrapper
        return wrapper
    return deco


def replan(plan: Plan, table: Any) -> Plan:
    """The plan `plan`'s operation makes now, on `table`, with the recorded arguments — refused (StalePlanError, which
    lists the differences) unless it decides exactly what `plan` says. Nothing is changed either way."""
    op = plan.operation
    pw = plan.planned_with
    if not isinstance(pw, Mapping) or not pw:
        raise StalePlanError(op, plan.table, ["the plan does not record the arguments it was made with (made by an "
                                              "older paimon-ops, or edited), so it cannot be verified"])
    if "$unrecordable" in pw:
        raise StalePlanError(op, plan.table, [f"the plan was made with an argument that cannot be saved "
                                              f"({pw['$unrecordable']}), so it cannot be verified; plan and execute "
                                              "in one go"])
    fresh = plan_again(plan, table, saved=True)
    changes = decision_diff(plan, fresh)
    if changes:
        raise StalePlanError(op, plan.table, [f"the plan differs from what {op} decides on the table now with the "
                                              f"same arguments: {'; '.join(changes)}"])
    return fresh


def plan_again(plan: Plan, table: Any, saved: bool = False) -> Plan:
    """What `plan`'s planner decides now on `table` with the arguments `plan` records (a fresh plan). `saved`: the
    arguments come from a saved plan, so they are checked first."""
    op = plan.operation
    fn = _PLANNERS_BY_OPERATION.get(plan.planned_by or "") or _PLANNERS.get(op)
    if fn is None:
        raise PaimonOpsError(f"no planner for operation {op!r}")
    try:
        params = {fn.renamed.get(k, k): v for k, v in decode_param(dict(plan.planned_with)).items()}
        fn.signature.bind(table, **params)
    except (TypeError, ValueError) as e:
        raise CorruptMetadataError("plan", f"planned_with does not fit {op}: {e}") from None
    if saved and op in _SAVED_CHECKS:
        _SAVED_CHECKS[op](params)
    try:
        return fn(table, **params)
    except (TypeError, AttributeError, KeyError) as e:  # wrongly typed arguments the planner did not expect
        raise CorruptMetadataError("plan", f"planned_with does not fit {op}: {type(e).__name__}: {e}") from None


# What an execution does is decided by these parts of a plan (details, warnings and times are for people).
_NOT_DECISION = ("planned_at", "details", "warnings", "planned_with", "planned_by")


def decision(plan: Plan) -> dict[str, Any]:
    d = plan.to_dict()
    for k in _NOT_DECISION:
        d.pop(k, None)
    return d


def decision_diff(reviewed: Plan, fresh: Plan, limit: int = 6) -> list[str]:
    """What differs between two plans' decisions, in words (at most `limit` items)."""
    a, b = decision(reviewed), decision(fresh)
    out: list[str] = []
    for k in sorted(set(a) | set(b)):
        if k in ("steps", "preconditions", "tasks") or a.get(k) == b.get(k):
            continue
        out.append(f"{k} is {_short(a.get(k))} in the plan, {_short(b.get(k))} now")
    pa_, pb = a.get("preconditions") or [], b.get("preconditions") or []
    if pa_ != pb:
        missing = [p for p in pb if p not in pa_]
        extra = [p for p in pa_ if p not in pb]
        changed = sorted({str(p.get("kind")) for p in missing} & {str(p.get("kind")) for p in extra})
        missing = [p for p in missing if str(p.get("kind")) not in changed]
        extra = [p for p in extra if str(p.get("kind")) not in changed]
        if changed:
            out.append("precondition(s) " + ", ".join(changed) + " differ from what the table requires now")
        if missing:
            out.append("preconditions missing from the plan: " + ", ".join(str(p.get("kind")) for p in missing))
        if extra:
            out.append("preconditions the operation does not make: " + ", ".join(str(p.get("kind")) for p in extra))
    out += _list_diff("step", a.get("steps") or [], b.get("steps") or [])
    if "tasks" in a or "tasks" in b:
        out += _list_diff("task", a.get("tasks") or [], b.get("tasks") or [])
    if len(out) > limit:
        out = out[:limit] + [f"and {len(out) - limit} more difference(s)"]
    return out


def _short(v: Any, n: int = 60) -> str:
    text = json.dumps(v, default=str)
    return text if len(text) <= n else text[:n - 3] + "..."


def _label(kind: str, i: int, x: Any) -> str:
    if isinstance(x, dict):
        name = x.get("name") or (f"partition {x.get('partition_spec')} bucket {x.get('bucket')}"
                                 if "bucket" in x else None)
        if name:
            return f"{kind} {i + 1} ({name})"
    return f"{kind} {i + 1}"


def _list_diff(kind: str, a: list, b: list) -> list[str]:
    out: list[str] = []
    if len(a) != len(b):
        out.append(f"the plan has {len(a)} {kind}(s), the operation makes {len(b)} now")
    for i, (x, y) in enumerate(zip(a, b)):
        if x == y:
            continue
        label = _label(kind, i, x)
        if not isinstance(x, dict) or not isinstance(y, dict):
            out.append(f"{label} differs")
            continue
        for field_name in sorted(set(x) | set(y)):
            xv, yv = x.get(field_name), y.get(field_name)
            if xv == yv:
                continue
            if field_name in ("files", "creates", "lookup_files") and isinstance(xv, list) and isinstance(yv, list):
                xp = [f.get("path") if isinstance(f, dict) else f for f in xv]
                yp = [f.get("path") if isinstance(f, dict) else f for f in yv]
                extra = [p for p in xp if p not in set(yp)]
                missing = [p for p in yp if p not in set(xp)]
                parts = []
                if extra:
                    parts.append(f"{len(extra)} not decided now ({', '.join(map(str, extra[:3]))}"
                                 f"{', …' if len(extra) > 3 else ''})")
                if missing:
                    parts.append(f"{len(missing)} decided now but not in the plan ({', '.join(map(str, missing[:3]))}"
                                 f"{', …' if len(missing) > 3 else ''})")
                out.append(f"{label} {field_name}: " + ("; ".join(parts) if parts else "differ"))
            else:
                out.append(f"{label}: {field_name} is {_short(xv)} in the plan, {_short(yv)} now")
    for i in range(len(b), len(a)):
        out.append(f"{_label(kind, i, a[i])} is not one the operation makes")
    return out



# ------------------------------------------------------------------------------------ rendering for people
# Details that are bookkeeping, not figures a person reads (in the JSON only).
INTERNAL_DETAILS = frozenset({"task_pids", "merge_slices", "task_time_s", "settings", "units", "dv_ratios"})


def _detail(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return ", ".join(map(str, v[:10])) + (f" … (+{len(v) - 10})" if len(v) > 10 else "")
    if isinstance(v, Mapping):
        return ", ".join(f"{k}={x}" for k, x in list(v.items())[:10])
    return str(v)


def _human_detail(key: str, v: Any) -> str:
    if key.endswith("_s") and isinstance(v, (int, float)) and not isinstance(v, bool):  # a duration in seconds
        return format_duration(_dt.timedelta(seconds=v))
    if isinstance(v, bool):
        return "yes" if v else "no"
    if not isinstance(v, int):
        return _detail(v)
    sized = key.endswith(("bytes", "_bytes_in", "_size")) or key.startswith("bytes_")
    return human_bytes(v) if sized else f"{v:,}"


def split_details(details: Mapping[str, Any]) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """(the figures a person reads — scalars, sizes human-readable —, everything else for the JSON entry)."""
    shown: list[tuple[str, str]] = []
    rest: dict[str, Any] = {}
    for k, v in details.items():
        if v is None:  # nothing to say (the JSON keeps the null)
            continue
        if k in INTERNAL_DETAILS or isinstance(v, (list, tuple, set, Mapping)) or (isinstance(v, str) and len(v) > 200):
            rest[k] = v
        else:
            label = k[:-2] if k.endswith("_s") and isinstance(v, (int, float)) else k
            shown.append((label.replace("_", " "), _human_detail(k, v)))
    return shown, rest


def text_table(header: Sequence[str], rows: Iterable[Sequence[Any]], indent: str = "  ") -> list[str]:
    """A plain-text table (columns padded, numbers and sizes right-aligned) as lines."""
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    right = [i > 0 and all(r[i][:1].isdigit() or r[i] == "-" for r in cells) for i in range(len(header))]

    def line(r: Sequence[str]) -> str:
        return indent + "  ".join(c.rjust(w) if right[i] else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return [line(list(header)).rstrip()] + [line(r).rstrip() for r in cells]


def effects_rows(written: Mapping[str, int], written_bytes: Mapping[str, int], deleted: Mapping[str, int],
                 deleted_bytes: Mapping[str, int], sized_writes: bool = True) -> list[tuple[Any, ...]]:
    """Rows (kind, written, size, deleted, size) by kind plus a total row: the table every report starts with.
    `sized_writes` False (a dry run's outputs not written yet): the written size is unknown, shown as "-"."""
    kinds = sorted(set(deleted) | set(written))

    def w_size(n: int | None) -> str:
        return human_bytes(n) if sized_writes else "-"
    rows: list[tuple[Any, ...]] = [(k, written.get(k, 0), w_size(written_bytes.get(k, 0)), deleted.get(k, 0),
                                    human_bytes(deleted_bytes.get(k, 0))) for k in kinds]
    if len(kinds) > 1:
        rows.append(("total", sum(written.values()), w_size(sum(written_bytes.values())), sum(deleted.values()),
                     human_bytes(sum(deleted_bytes.values()))))
    return rows


__all__ = ["Plan", "Step", "FileAction", "FileList", "Precondition", "LatestSnapshotIs", "SnapshotIs", "EarliestSnapshotIs",
           "TagIs", "PlanBuilder", "count_by_kind", "bytes_by_kind", "human_bytes", "encode", "decode",
           "declare_step_action", "plan_type", "serves_plans", "Workload", "InvalidArgumentError", "planner", "replan", "decision",
           "decision_diff", "encode_param", "decode_param", "split_details", "text_table", "effects_rows",
           "INTERNAL_DETAILS"]


def _plan_options(options: Mapping[str, str]) -> dict[str, str]:
    """A plan's option overrides, without object-store settings: plans are printed and saved, and secrets must not
    be (a plan re-opens its table with the store settings its process was given, objectstore.py)."""
    return {k: v for k, v in options.items() if not is_store_option(k)}
