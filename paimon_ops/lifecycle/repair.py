"""Repairing the snapshot hints: `LATEST` and `EARLIEST` of the branch's `snapshot/` (and of `changelog/` when it holds
long-lived changelogs) name the real latest and earliest snapshots again (Java's `repair_earliest_snapshot`, and
the repair of a hint a crashed writer left).

    plan_repair(table, earliest=None) -> RepairPlan

What each hint must say, and why a wrong one matters, is decided by `table.hints` (the one piece of code that decides
and writes hints): a LATEST older than the earliest snapshot — left by a writer that crashed before expiry ran —
makes Java 0.9 resolve the latest snapshot to a deleted file, and its reads and commits fail on it; a LATEST beyond
the newest snapshot file (snapshots lost in a bad copy) is repaired to the newest file, with a warning that the lost
snapshots' commits are gone; an EARLIEST ahead of older snapshots hides them from readers and expiry.

A gap in the snapshot ids (a snapshot file missing between two that exist) is refused unless `earliest` names the
first snapshot after it — Java's repair_earliest_snapshot: the snapshots before the gap stay on disk but are never
read; paimon-ops's deleting operations keep refusing the table while they are there (`table.consistency`).

The plan lists every hint that changes, with what it says now and why; executing writes exactly the hints the
listing at that moment calls for (a commit in between moves LATEST on: the newer value is written). Refused in one
line: a table without any snapshot file (nothing a hint could name), and a table whose catalog owns its history
(REST: the server's snapshots and hints are not ours to write).
"""
from __future__ import annotations

import logging
from typing import Any

from paimon_ops.errors import CorruptMetadataError, InvalidArgumentError, UnsupportedError
from paimon_ops.execution.executor import Execution, register_step
from paimon_ops.execution.plan import HINT, FileAction, Plan, PlanBuilder, Step, declare_step_action, planner
from paimon_ops.operations.repair import OPERATION as REPAIR
from paimon_ops.table import hints
from paimon_ops.table.table import LATEST, FileStoreTable

log = logging.getLogger(__name__)

REPAIR_HINTS = "repair-hints"
declare_step_action(REPAIR_HINTS, writes=True, verb="would rewrite")


class RepairPlan(Plan):
    """Rewriting the hints that do not name the real latest / earliest snapshot."""

    operation = "repair"
    op = REPAIR  # its operation (the feature gate, the planner's parameters)


def owns_history(table: FileStoreTable) -> bool:
    """Whether the table's catalog owns its history (REST): its snapshot files and hints are the server's."""
    return table.catalog is not None and table.catalog.owns_history(table)


def _decided(table: FileStoreTable, earliest: int | None) -> list[hints.Hint]:
    """Every hint of the branch: snapshot/ (with `earliest`), and changelog/ when it holds long-lived changelogs."""
    out = hints.decide(table.snapshots, earliest=earliest)
    if table.changelogs.list_ids():
        out += hints.decide(table.changelogs)
    return out


@planner(RepairPlan)
def plan_repair(table: FileStoreTable, *, earliest: int | None = None) -> RepairPlan:
    """Which hints are stale and what they must say (module docstring)."""
    what = f"{table.identifier}" + (f" (branch {table.branch})" if table.branch != "main" else "")
    if owns_history(table):
        raise UnsupportedError(f"{what}: repair refused: its catalog ({table.catalog.endpoint}) owns the table's "
                               "history — its snapshots and hints are the server's, not paimon-ops's to write; "
                               "nothing was changed")
    b = PlanBuilder()
    b.gate(table, RepairPlan.operation)
    ids = table.snapshots.list_ids()
    if not ids:
        named = [f"{h.name} names snapshot {h.now}" for h in hints.decide(table.snapshots, ids=[]) if h.now is not None]
        if named:
            raise CorruptMetadataError(table.snapshots.dir, f"holds no snapshot file, but {' and '.join(named)}: the "
                                                            "table's history is gone; repair has nothing a hint could "
                                                            "name (nothing was changed)")
        raise InvalidArgumentError(f"{what} has no snapshot: repair has nothing a hint could name (nothing was "
                                   "changed)")
    start = hints.contiguous_start(ids)
    if earliest is None and start != ids[0]:
        have = set(ids)
        gap = next(i for i in range(ids[0], ids[-1]) if i not in have)
        raise InvalidArgumentError(f"{table.snapshots.path(gap)} is missing between snapshot-{ids[0]} and "
                                   f"snapshot-{ids[-1]}: a hint cannot bridge it; give --earliest {start} to make "
                                   f"snapshot {start} the earliest (as Java's repair_earliest_snapshot; snapshots "
                                   f"{ids[0]} … {gap - 1} are then never read), or restore the missing snapshot files")
    decided = _decided(table, earliest)
    stale = [h for h in decided if h.stale]
    details: dict[str, Any] = {"snapshots": [ids[0], ids[-1]], "earliest": earliest if earliest is not None else ids[0],
                               "latest": ids[-1], "hints": [h.to_dict() for h in decided],
                               "stale_hints": len(stale)}
    below = [i for i in ids if i < start]
    if below:
        b.warn(f"snapshot(s) {', '.join(map(str, below))} stay on disk below the gap and are never read; paimon-ops's "
               "expiry and orphan removal refuse the table while they are there")
    latest_hint = next(h for h in decided if h.name == LATEST and h.kind == "snapshot")
    if latest_hint.now is not None and latest_hint.now > ids[-1]:
        b.warn(f"snapshot files {ids[-1] + 1} … {latest_hint.now} are missing: the table's latest snapshot becomes "
               f"snapshot {ids[-1]} (what the files say); the lost snapshots' commits are gone")
    if stale:
        b.step("rewrite the stale hints (decided again from the listing when written)", REPAIR_HINTS,
               earliest=earliest)
        for h in stale:
            b.add(FileAction(h.path, HINT, f"{h.name} {h.why} — rewritten to {h.wanted}"))
    else:
        details["reason"] = "every hint names the real latest and earliest snapshot"
    return b.build(RepairPlan, table, details, base_snapshot=ids[-1])


@register_step(REPAIR_HINTS)
def _repair_hints(ex: Execution, step: Step) -> None:
    """The hints as the listing decides now (verified at the moment of acting), written through the executor."""
    earliest = step.params.get("earliest")
    table = ex.table
    written = hints.ensure(table.snapshots, earliest=earliest, write_hint=ex.write_hint)
    if table.changelogs.list_ids():
        written += hints.ensure(table.changelogs, write_hint=ex.write_hint)
    ex.details["hints_written"] = [f"{h.kind}/{h.name} = {h.wanted}" for h in written]


__all__ = ["RepairPlan", "plan_repair", "owns_history", "REPAIR_HINTS"]
