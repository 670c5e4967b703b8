"""Reports: what an execution did — counts and bytes by kind, the files, where it ran, how long it took. Built in
one place, by the executor (or from a plan, for a dry run); the CLI prints it, Dagster records it.

For people (`summary`, and the Dagster markdown built from the same pieces) what was written and deleted / replaced
comes first, as a table by kind with sizes, then the scalar figures; internals (per-task ids, settings, lists) are
only in the JSON (`to_dict`, format paimon-ops-report/1)."""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from paimon_ops.execution.codec import encode
from paimon_ops.execution.files import FileList
from paimon_ops.execution.model import (
    bytes_by_kind,
    count_by_kind,
    removal_code,
    removal_words,
)
from paimon_ops.execution.rendering import effects_rows, split_details, text_table
from paimon_ops.schemas import REPORT, envelope

if TYPE_CHECKING:
    from paimon_ops.execution.plan import Plan


@dataclass(frozen=True)
class Report:
    """What an execution (or the dry run of a plan) did: files and bytes written and deleted by kind, the snapshot it
    committed, where it ran and why, the operation's details and warnings. `to_json()` is the CLI's `--json` report
    (`paimon-ops-report/1`)."""

    operation: str
    table: str
    dry_run: bool
    duration_s: float
    deleted: Mapping[str, int] = field(default_factory=dict)        # kind -> count
    deleted_bytes: Mapping[str, int] = field(default_factory=dict)  # kind -> bytes
    written: Mapping[str, int] = field(default_factory=dict)
    written_bytes: Mapping[str, int] = field(default_factory=dict)
    snapshot_id: int | None = None  # the snapshot committed, if any
    details: Mapping[str, Any] = field(default_factory=dict)
    files: FileList = FileList(())
    warnings: tuple[str, ...] = ()
    runner: Mapping[str, Any] | None = None  # where the work ran and why (None: nothing needed a runner)
    deleted_as: str | None = None  # the text's word for `deleted` files that only left the table ("replaced")

    def __post_init__(self) -> None:
        if not isinstance(self.files, FileList):  # (any sequence of FileActions: held column-wise)
            object.__setattr__(self, "files", FileList(self.files))

    @staticmethod
    def of_plan(plan: Plan, duration_s: float = 0.0) -> Report:
        """The report of a dry run: what the plan would delete and write, changing nothing."""
        return Report(plan.operation, plan.table, True, round(duration_s, 3),
                      deleted=count_by_kind(plan.deletes), deleted_bytes=bytes_by_kind(plan.deletes),
                      written=count_by_kind(plan.writes), written_bytes=bytes_by_kind(plan.writes),
                      details=dict(plan.details), files=plan.files, warnings=plan.warnings,
                      deleted_as=removal_words(plan, dry_run=True))

    @property
    def total_deleted(self) -> int:
        return sum(self.deleted.values())

    @property
    def total_deleted_bytes(self) -> int:
        return sum(self.deleted_bytes.values())

    @property
    def deleted_words(self) -> str:
        """How the text names the `deleted` files: the operation's own words when they only left the table."""
        return self.deleted_as or ("would delete" if self.dry_run else "deleted")

    def to_dict(self, files: bool = True) -> dict[str, Any]:
        """The report as JSON (paimon-ops-report/1): `deleted_as` is a code ("deleted", "replaced", "moved",
        "dropped"), the words are the text's. `files` False: without the file list (the figures only)."""
        d = envelope(REPORT)
        d.update({f.name: encode(getattr(self, f.name)) for f in dataclasses.fields(self)
                  if files or f.name != "files"})
        d["deleted_as"] = removal_code(self.deleted_as)
        d["total_deleted"] = self.total_deleted
        d["total_deleted_bytes"] = self.total_deleted_bytes
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def summary(self) -> str:
        """For people: the outcome line, what was written and deleted / replaced (by kind, with sizes), the scalar
        figures, warnings; a dry run then lists every file with its kind and reason."""
        done = "would write" if self.dry_run else "wrote"
        lines = [f"{self.operation} on {self.table}" + (" (dry run)" if self.dry_run else "") + ": "
                 + (f"committed snapshot {self.snapshot_id}, " if self.snapshot_id else "")
                 + f"{self.duration_s:.2f} s" + (f", ran {self.runner['where']} ({self.runner['why']})"
                                                 if self.runner else "")]
        if self.deleted or self.written:
            code = removal_code(self.deleted_as)
            header = self.deleted_as if self.dry_run and self.deleted_as else \
                ("would delete" if self.dry_run else code)
            lines += text_table(["kind", done, "size", header, "size"],
                                effects_rows(self.written, self.written_bytes, self.deleted, self.deleted_bytes,
                                             sized_writes=not self.dry_run or any(self.written_bytes.values())))
            if self.deleted and self.deleted_words != header:  # what the one word means ("replaced: stay on disk")
                lines.append(f"  {self.deleted_words}")
        else:
            lines.append("  nothing written or deleted")
        shown, _ = split_details(self.details)
        lines += [f"  {k}: {v}" for k, v in shown]
        lines += [f"  warning: {w}" for w in self.warnings]
        if self.dry_run:  # a dry run is for review: every file, with its kind and the reason
            lines += [f"    {a.kind:<15} {a.path}  ({a.reason})" for a in self.files]
        return "\n".join(lines)

    __str__ = summary




__all__ = ["Report"]
