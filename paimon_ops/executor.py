"""The one executor: check a plan's preconditions against the table now, run its steps in order on a runner,
build the report. Every operation goes through it — `plan.execute()`, `paimon-ops apply`, the convenience
functions (`expire_snapshots(…)`), Dagster.

Steps are dispatched by their action. The generic ones (delete files / ordered metadata / empty directories, write
files, hints) are here; operations register their own (`register_step`): expiry's snapshot-to-changelog
conversion, compaction's tasks and commit. A handler gets the `Execution` (table, runner, what was done so far)
and the step.
"""
from __future__ import annotations

import logging
import posixpath
import time
from typing import Any, Callable, Sequence

from paimon_ops.errors import PaimonOpsError, StalePlanError
from paimon_ops.format.snapshot import parse_hint
from paimon_ops.plan import (
    DELETE_DIRS,
    DELETE_FILES,
    DELETE_ORDERED,
    ENSURE_HINTS,
    HINT,
    WRITE_FILES,
    WRITE_HINT,
    FileAction,
    Plan,
    Step,
    bytes_by_kind,
    count_by_kind,
    removal_words,
)
from paimon_ops.report import Report
from paimon_ops.runner import Progress, Runner, place
from paimon_ops.table.fileio import ensure_within
from paimon_ops.table.table import Table

log = logging.getLogger(__name__)

StepHandler = Callable[["Execution", Step], None]
_HANDLERS: dict[str, StepHandler] = {}


def register_step(action: str) -> Callable[[StepHandler], StepHandler]:
    def deco(fn: StepHandler) -> StepHandler:
        _HANDLERS[action] = fn
        return fn
    return deco


class Execution:
    """What one execution has done so far (the report is built from it)."""

    def __init__(self, plan: Plan, table: Table, runner: Runner | None, progress: Progress | None,
                 batch_size: int | None = None, parallel_threshold: int | None = None):
        from paimon_ops.lifecycle.deleter import Deleter, allowed_roots
        self.plan = plan
        self.table = table
        self.runner = runner
        self.progress = progress
        kw: dict[str, Any] = {}
        if batch_size is not None:
            kw["batch_size"] = batch_size
        if parallel_threshold is not None:
            kw["parallel_threshold"] = parallel_threshold
        self.deleter = Deleter(table, runner, progress=progress, **kw)
        self.roots = allowed_roots(table)
        self.done: list[FileAction] = []
        self.written: list[FileAction] = []
        self.missing = 0
        self.details: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.snapshot_id: int | None = None
        self.runner_info: dict[str, Any] | None = None
        self.state: dict[str, Any] = {}  # what one step hands to the next (compaction: task results -> commit)

    # ------------------------------------------------------------------ primitives used by handlers
    def delete(self, actions: Sequence[FileAction]) -> None:
        done, missing = self.deleter.delete(actions)
        self.done += done
        self.missing += missing

    def delete_ordered(self, actions: Sequence[FileAction]) -> None:
        from paimon_ops.lifecycle.deleter import check_paths
        check_paths(self.roots, [a.path for a in actions])
        for a in actions:
            if self.table.io.delete_file(a.path):
                self.done.append(a)
            else:
                self.missing += 1

    def write(self, action: FileAction, data: bytes, create: bool = False) -> bool:
        ensure_within(self.table.root, action.path)
        if create:
            created = self.table.io.write_atomic_if_absent(action.path, data)
        else:
            self.table.io.write_bytes(action.path, data)
            created = True
        if created:
            self.written.append(FileAction(action.path, action.kind, action.reason, len(data)))
        return created

    def write_hint(self, path: str, value: int, reason: str) -> None:
        """Hints are advisory (readers verify them, maintenance.md §0.3): a failed hint write is logged, not fatal."""
        try:
            self.write(FileAction(path, HINT, reason), str(int(value)).encode())
        except OSError as e:
            log.warning("could not write hint %s = %s: %s", path, value, e)

    def ensure_hint(self, path: str, value: int | None, reason: str) -> None:
        """Write a hint only if it does not already say `value`: a rerun after an interrupted run repairs what the
        interrupted run could not write, so every run converges to the same files."""
        if value is None:
            return
        try:
            current = parse_hint(self.table.io.read_bytes(path))
        except OSError:  # FileNotFoundError included
            current = None
        if current != value:
            self.write_hint(path, value, reason)

    def report(self, started: float) -> Report:
        plan = self.plan
        details = dict(plan.details)
        details.update(self.details)
        details["latest_after"] = self.table.snapshots.latest_id()
        if self.missing:
            details["already_missing"] = self.missing
        files = tuple(self.done) + tuple(self.written)
        return Report(plan.operation, plan.table, False, round(time.time() - started, 3),
                      deleted=count_by_kind(self.done), deleted_bytes=bytes_by_kind(self.done),
                      written=count_by_kind(self.written), written_bytes=bytes_by_kind(self.written),
                      snapshot_id=self.snapshot_id, details=details, files=files,
                      warnings=tuple(plan.warnings) + tuple(self.warnings), runner=self.runner_info,
                      deleted_as=removal_words(plan, dry_run=False))


def open_plan_table(plan: Plan) -> Table:
    return Table(plan.location, identifier=plan.table, branch=plan.branch, options_override=plan.options_override)


def check_preconditions(plan: Plan, table: Table) -> None:
    changed = [msg for p in plan.preconditions if (msg := p.check(table))]
    if changed:
        raise StalePlanError(plan.operation, plan.table, changed)


def execute(plan: Plan, table: Table | None = None, *, runner: Runner | None = None,
            progress: Progress | None = None, batch_size: int | None = None,
            parallel_threshold: int | None = None, state: dict[str, Any] | None = None) -> Report:
    """Execute `plan` exactly: refuse it if stale (StalePlanError: nothing changed), else run every step in order."""
    started = time.time()
    if table is None:
        table = open_plan_table(plan)
    elif table.identifier != plan.table or table.root != open_plan_table(plan).root:
        raise PaimonOpsError(f"plan for {plan.table} ({plan.location}) cannot be executed on {table.identifier} "
                             f"({table.location})")
    check_preconditions(plan, table)
    from paimon_ops import features  # a plan reviewed earlier (or made by another version) is gated again
    op = features.operation_name(plan.operation, getattr(plan, "mode", None))
    if op in features.ALL_OPS:
        features.require(table, op)
    runner, placement = place(runner, plan.workload(), table.options)
    ex = Execution(plan, table, runner, progress, batch_size, parallel_threshold)
    ex.runner_info = placement
    ex.state.update(state or {})
    for step in plan.steps:
        handler = _HANDLERS.get(step.action)
        if handler is None:
            raise PaimonOpsError(f"plan of {plan.operation} has an unknown step {step.action!r}; was it made by a "
                                 "newer paimon-ops?")
        handler(ex, step)
    return ex.report(started)


def run_plan(plan: Plan, table: Table, dry_run: bool = False, runner: Runner | None = None,
             progress: Progress | None = None, batch_size: int | None = None,
             parallel_threshold: int | None = None, started: float | None = None) -> Report:
    """A dry run's report, or the execution's: what the convenience functions (`expire_snapshots(…)`) return."""
    if dry_run:
        return plan.dry_run_report(time.time() - (started or time.time()))
    return execute(plan, table, runner=runner, progress=progress, batch_size=batch_size,
                   parallel_threshold=parallel_threshold)


# ---------------------------------------------------------------------------------------------- generic steps
@register_step(DELETE_FILES)
def _delete_files(ex: Execution, step: Step) -> None:
    ex.delete(step.files)


@register_step(DELETE_ORDERED)
def _delete_ordered(ex: Execution, step: Step) -> None:
    ex.delete_ordered(step.files)


@register_step(DELETE_DIRS)
def _delete_dirs(ex: Execution, step: Step) -> None:
    from paimon_ops.lifecycle.deleter import check_paths
    roots = {posixpath.normpath(r) for r in ex.roots}
    for a in step.files:
        check_paths(ex.roots, [a.path])  # the table root or a configured external path
        if posixpath.normpath(a.path) in roots:
            continue  # never a root itself
        if ex.deleter.io.delete_dir_if_empty(a.path):
            ex.done.append(a)


@register_step(WRITE_FILES)
def _write_files(ex: Execution, step: Step) -> None:
    contents = step.params["contents"]
    create = step.params.get("mode", "create") == "create"
    for a, text in zip(step.files, contents):
        if not ex.write(a, text.encode(), create=create):
            ex.warnings.append(f"{a.kind} {posixpath.basename(a.path)} was created concurrently by someone else; "
                               "left unchanged")


@register_step(WRITE_HINT)
def _write_hint(ex: Execution, step: Step) -> None:
    for a in step.files:
        ex.write_hint(a.path, int(step.params["value"]), a.reason)


@register_step(ENSURE_HINTS)
def _ensure_hints(ex: Execution, step: Step) -> None:
    """Hints from a listing at run time: EARLIEST / LATEST of snapshot/ or changelog/ (params.hints: [{dir, name,
    which: first|last}]). Rerun after a crash converges to the right hints."""
    from paimon_ops.table.table import CHANGELOG_PREFIX, SNAPSHOT_PREFIX, _ids_in
    for h in step.params.get("hints", ()):
        d = h["dir"]
        prefix = CHANGELOG_PREFIX if posixpath.basename(d) == "changelog" else SNAPSHOT_PREFIX
        ids = _ids_in(ex.table.io, d, prefix)
        value = (ids[0] if h["which"] == "first" else ids[-1]) if ids else h.get("default")
        if value is None:
            continue
        if h.get("only_if_exists") and not ex.table.io.exists(posixpath.join(d, h["name"])) and not ids:
            continue
        ex.ensure_hint(posixpath.join(d, h["name"]), value, f"{h['name'].lower()} {prefix.rstrip('-')}")


__all__ = ["execute", "run_plan", "register_step", "Execution", "check_preconditions", "open_plan_table"]
