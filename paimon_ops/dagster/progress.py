"""A Dagster run shows its work: before executing an operation, its plan (tasks, bytes to read, files to write and
delete, where it runs and why) as an observation on the table (`plan/*` keys, a markdown table of the tasks) and a
log line; while it runs, progress lines at every tenth of the work and at least every `PROGRESS_EVERY_S` seconds
(tasks done, the bytes and rows of the tasks done so far, elapsed time), so long work is visibly alive."""
from __future__ import annotations

import time
from typing import Any

from dagster import AssetKey, AssetObservation, MetadataValue

from paimon_ops.dagster.metadata import md_table
from paimon_ops.execution.placement import Placed, place
from paimon_ops.execution.plan import count_by_kind, human_bytes

PROGRESS_EVERY_S = 10.0
MAX_TASKS_LISTED = 20


def placement(plan: Any, runner: Any, options: Any) -> dict[str, str]:
    """Where the plan will run and why — the decision the executor makes (the default runner places by the work)."""
    if isinstance(runner, Placed):
        return dict(runner.placement)
    try:
        return place(runner, plan.workload(), options)[1]
    except Exception as e:  # noqa: BLE001 - only for display; the executor decides (and reports) for real
        return {"where": "decided at execution", "why": f"{type(e).__name__}: {e}"}


def _tasks(plan: Any) -> list[Any]:
    return list(getattr(plan, "tasks", None) or getattr(plan, "segments", None) or [])


def plan_event(key: AssetKey, op_title: str, plan: Any, where: dict[str, str]) -> tuple[AssetObservation, str]:
    """(the observation recording the plan, its one-line log summary)."""
    tasks = _tasks(plan)
    read = sum(int(getattr(t, "bytes_in", 0)) for t in tasks)
    rows = sum(int(getattr(t, "rows_in", 0)) for t in tasks)
    deletes, writes = plan.deletes, plan.writes
    dbytes = sum(a.size or 0 for a in deletes)
    line = (f"{op_title} on {plan.table}: planned on snapshot {plan.base_snapshot} — "
            + (f"{len(tasks)} task(s) reading {human_bytes(read)} ({rows:,} rows); " if tasks else "")
            + f"{len(deletes)} file(s) to delete / replace ({human_bytes(dbytes)}), {len(writes)} to write; "
            + f"runs {where['where']}: {where['why']}")
    md: dict[str, Any] = {
        "phase": "planned", "plan/operation": plan.operation,
        "plan/base_snapshot": MetadataValue.int(int(plan.base_snapshot or 0)),
        "plan/tasks": MetadataValue.int(len(tasks)), "plan/bytes_to_read": MetadataValue.int(read),
        "plan/rows_to_read": MetadataValue.int(rows),
        "plan/files_to_delete": MetadataValue.int(len(deletes)), "plan/bytes_to_delete": MetadataValue.int(dbytes),
        "plan/files_to_write": MetadataValue.int(len(writes)),
        "plan/runs_on": where["where"], "plan/runs_on_why": where["why"],
    }
    parts = [f"**{op_title}** on `{plan.table}` — planned on snapshot {plan.base_snapshot}, runs "
             f"{where['where']} ({where['why']})", ""]
    if tasks:
        shown = tasks[:MAX_TASKS_LISTED]
        parts.append(md_table(["partition", "bucket", "files", "rows", "size", "why"], [
            (", ".join(f"{k}={v}" for k, v in (getattr(t, "partition_spec", None) or {}).items()) or "—",
             getattr(t, "bucket", ""), len(getattr(t, "files", ()) or ()), f"{int(getattr(t, 'rows_in', 0)):,}",
             human_bytes(int(getattr(t, "bytes_in", 0))), getattr(t, "why", "")) for t in shown], "lrrrrl"))
        if len(tasks) > len(shown):
            parts.append(f"\n… and {len(tasks) - len(shown)} more task(s)")
    kinds = sorted(set(count_by_kind(deletes)) | set(count_by_kind(writes)))
    if kinds:
        d, w = count_by_kind(deletes), count_by_kind(writes)
        parts += ["", md_table(["kind", "to write", "to delete / replace"], [(k, w.get(k, 0), d.get(k, 0))
                                                                              for k in kinds])]
    md["plan"] = MetadataValue.md("\n".join(parts))
    return AssetObservation(asset_key=key, metadata=md, description=line), line


class RunProgress:
    """The engine's progress callback (done, total) as run log lines: tasks done with the bytes and rows of the
    plan's tasks up to that count (tasks finish in any order: those figures are the plan's, in plan order)."""

    def __init__(self, log: Any, label: str, plan: Any, every_s: float = PROGRESS_EVERY_S):
        self.log, self.label, self.every_s = log, label, every_s
        tasks = _tasks(plan)
        self._bytes = [int(getattr(t, "bytes_in", 0)) for t in tasks]
        self._rows = [int(getattr(t, "rows_in", 0)) for t in tasks]
        self.started = time.monotonic()
        self._last_t = self.started
        self._last_pct = -100.0
        self.lines = 0

    def __call__(self, done: int, total: int) -> None:
        if total <= 0:
            return
        now = time.monotonic()
        pct = 100.0 * done / total
        if done != total and pct - self._last_pct < 10 and now - self._last_t < self.every_s:
            return
        self._last_pct, self._last_t = pct, now
        figures = ""
        if len(self._bytes) == total:
            figures = (f", ~{human_bytes(sum(self._bytes[:done]))} of {human_bytes(sum(self._bytes))}, "
                       f"~{sum(self._rows[:done]):,} of {sum(self._rows):,} rows")
        self.log.info(f"{self.label}: {done}/{total} ({pct:.0f}%){figures}, {now - self.started:.1f} s elapsed")
        self.lines += 1
