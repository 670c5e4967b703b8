"""Plans and reports shared by every maintenance operation (design.md §1: plan → execute → commit → report).

A Plan is what `--dry-run` prints: every file that would be written or deleted, with its kind and the reason.
A Report is what an execution did: counts and bytes by kind, duration, and the files.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

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


@dataclass(frozen=True)
class FileAction:
    path: str
    kind: str
    reason: str
    size: int | None = None


@dataclass(frozen=True)
class Plan:
    operation: str
    table: str
    base_snapshot: int | None
    deletes: tuple[FileAction, ...] = ()
    writes: tuple[FileAction, ...] = ()
    details: dict[str, Any] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return _plain(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def counts(self) -> dict[str, int]:
        return count_by_kind(self.deletes)

    def summary(self) -> str:
        lines = [f"{self.operation} on {self.table} (base snapshot {self.base_snapshot})"]
        for k, v in self.details.items():
            lines.append(f"  {k}: {v}")
        if self.writes:
            lines.append(f"  would write {len(self.writes)} file(s):")
            lines += [f"    + {a.kind:<15} {a.path}  ({a.reason})" for a in self.writes]
        if self.deletes:
            counts = ", ".join(f"{n} {k}" for k, n in sorted(self.counts().items()))
            lines.append(f"  would delete {len(self.deletes)} file(s) ({counts}):")
            lines += [f"    - {a.kind:<15} {a.path}  ({a.reason})" for a in self.deletes]
        if not self.writes and not self.deletes:
            lines.append("  nothing to do")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    __str__ = summary


@dataclass(frozen=True)
class Report:
    operation: str
    table: str
    dry_run: bool
    duration_s: float
    deleted: dict[str, int] = field(default_factory=dict)  # kind -> count
    deleted_bytes: dict[str, int] = field(default_factory=dict)  # kind -> bytes
    written: dict[str, int] = field(default_factory=dict)
    written_bytes: dict[str, int] = field(default_factory=dict)
    snapshot_id: int | None = None  # the snapshot committed, if any
    details: dict[str, Any] = field(default_factory=dict)
    files: tuple[FileAction, ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def total_deleted(self) -> int:
        return sum(self.deleted.values())

    @property
    def total_deleted_bytes(self) -> int:
        return sum(self.deleted_bytes.values())

    def to_dict(self) -> dict[str, Any]:
        d = _plain(self)
        d["total_deleted"] = self.total_deleted
        d["total_deleted_bytes"] = self.total_deleted_bytes
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

    def summary(self) -> str:
        verb = "would delete" if self.dry_run else "deleted"
        lines = [f"{self.operation} on {self.table}: {self.duration_s:.2f}s"
                 + (f", committed snapshot {self.snapshot_id}" if self.snapshot_id else "")]
        for k, v in self.details.items():
            lines.append(f"  {k}: {v}")
        if self.deleted:
            lines.append(f"  {verb}: " + ", ".join(
                f"{n} {k} ({human_bytes(self.deleted_bytes.get(k, 0))})" for k, n in sorted(self.deleted.items())))
        if self.written:
            lines.append(f"  {'would write' if self.dry_run else 'wrote'}: " + ", ".join(
                f"{n} {k} ({human_bytes(self.written_bytes.get(k, 0))})" for k, n in sorted(self.written.items())))
        if self.dry_run:  # a dry run is for review: every file, with its kind and the reason
            lines += [f"    - {a.kind:<15} {a.path}  ({a.reason})" for a in self.files]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    __str__ = summary


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


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, bytes):
        return obj.hex()
    return obj
