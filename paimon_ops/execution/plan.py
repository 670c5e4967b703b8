"""Plans: what an operation will do, decided before anything changes (design.md §1: plan → execute → commit →
report).

A `Plan` is frozen and JSON-serialisable both ways (`to_json` / `Plan.from_json`): `--dry-run --json` prints it,
`paimon-ops apply plan.json` executes exactly it. It carries

* its **steps** (phases), in the crash-safe order they must run: files to delete or write, each with its kind and
  the reason, plus operation-specific steps (compaction tasks, the commit);
* its **preconditions**: what it was planned on (the latest snapshot, the tags, the snapshot it keeps, the files
  it relies on). The executor checks every one against the table before the first step and refuses a stale plan
  with `StalePlanError` saying what changed.

One `Plan` subclass per plan type (`ExpireSnapshotsPlan`, `CompactionPlan`, …), defined with its planner: it names its
`operation` (the JSON's) and its operation's declaration `op` (the feature gate). `execute()` runs it through the
executor, `dry_run_report()` is the report of not running it — both by reference: this module sits above them in the
execution core (model → codec | rendering → planning → report | runner → deleter → journal → executor → plan).

The parts of a plan live in execution/model.py (steps, kinds, preconditions), codec.py (JSON), rendering.py (text)
and planning.py (the builder, the planner wrapper, re-planning); their names are importable from here too.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterator, Mapping

from paimon_ops.errors import CorruptMetadataError
from paimon_ops.execution import rendering
from paimon_ops.execution.codec import decode, decode_param, encode, encode_param
from paimon_ops.execution.executor import execute as _execute
from paimon_ops.execution.files import FileAction, FileList
from paimon_ops.execution.model import *  # noqa: F403  (the parts of a plan, importable from here)
from paimon_ops.execution.model import (
    _PLANS,
    Precondition,
    Step,
    Workload,
    count_by_kind,
    plan_type,
)
from paimon_ops.execution.planning import (
    FRESH,
    PlanBuilder,
    Planner,
    decision,
    decision_diff,
    plan_again,
    planner,
    replan,
)
from paimon_ops.execution.rendering import (
    INTERNAL_DETAILS,
    bytes_by_kind,
    effects_rows,
    human_bytes,
    split_details,
    text_table,
)
from paimon_ops.execution.report import Report
from paimon_ops.operations.model import Operation
from paimon_ops.schemas import PLAN, envelope, format_of

# The saved plan's format (paimon_ops.schemas): new fields may be added without a new major (readers ignore what
# they do not know, so plans saved by older versions still load); a renamed or retyped field needs paimon-ops-plan/2.
PLAN_FORMAT = format_of(PLAN)


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
    # The catalog the table was opened through (its options, no secret; empty: the filesystem catalog): a saved plan
    # re-opens its table through it, so that its commits take the catalog's lock or go to its server.
    catalog: Mapping[str, str] = field(default_factory=dict)

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if cls.operation:
            _PLANS[cls.operation] = cls

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "_table"}  # (a table holds its catalog's connections)

    @property
    def planned_on(self) -> Any:
        """The table object a fresh plan was made on (None for a loaded or copied plan)."""
        return self.__dict__.get("_table") if self.is_fresh else None

    @property
    def is_fresh(self) -> bool:
        """True for the very object its planner returned in this process; a plan read from JSON (or copied with
        `dataclasses.replace`) is not, and is re-planned before it may change anything."""
        return self.__dict__.get("_fresh") is FRESH

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

    def repairs_missing(self) -> frozenset[str]:
        """Names of manifests and data files this plan takes out of the table *because* they are missing — what the
        history check (`table.lineage`) must not refuse it for. None, but for `remove-unexisting-files`."""
        return frozenset()

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
        return _execute(self, table, runner=runner, progress=progress, batch_size=batch_size,
                       parallel_threshold=parallel_threshold, max_replans=max_replans, commit_user=commit_user,
                       commit_time_millis=commit_time_millis)

    def dry_run_report(self, duration_s: float = 0.0) -> Any:
        return Report.of_plan(self, duration_s)

    # ------------------------------------------------------------------ text
    def summary(self, limit: int | None = None, files: bool = True) -> str:
        """For review: what it would write and delete (by kind, with byte totals), the figures a person reads, then
        every file with its kind and reason; `limit`: only the first N files, then how many more; `files` False:
        counts and bytes per kind of each step instead of the file list. Internals are in the JSON only."""
        return "\n".join(rendering.summary_lines(self, limit, files))

    def summary_lines(self, limit: int | None = None, files: bool = True) -> Iterator[str]:
        """The lines of `summary`, one at a time (a listing of millions of files is printed, never held whole; a
        subclass that words its summary itself gives its lines from that text)."""
        if type(self).summary is not Plan.summary:
            return iter(self.summary(limit, files).split("\n"))
        return rendering.summary_lines(self, limit, files)

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


__all__ = ["Plan", "PLAN_FORMAT", "PlanBuilder", "Planner", "planner", "replan", "plan_again", "decision",
           "decision_diff", "encode", "decode", "encode_param", "decode_param", "split_details", "text_table",
           "effects_rows", "human_bytes", "INTERNAL_DETAILS", "count_by_kind", "bytes_by_kind", "Workload", "Step",
           "Precondition", "FileAction", "FileList", "plan_type"]
