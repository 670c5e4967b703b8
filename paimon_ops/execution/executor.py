"""The one executor: check a plan's preconditions against the table now, run its steps in order on a runner,
build the report. Every operation goes through it — `plan.execute()` (the facade's plans, `paimon-ops apply`,
Dagster, Airflow).

A plan is a review artifact, not an authority (design.md §1). Before anything changes:

* the table is the plan's: its location, name and branch, and a saved plan may not override options that decide
  how the table's files are read;
* a plan that did not come straight from its planner in this process (`paimon-ops apply`, `po.load_plan(...)`,
  a copy) is re-planned with its recorded arguments on the live table and refused unless the decision is the same
  (`plan.replan`); the fresh plan is what runs;
* every path of every delete step is validated (`deleter.preflight`: where, what, and that nothing that stays keeps
  it alive) — a refusal names the path and leaves the table exactly as it was;
* every snapshot's and tag's manifest lists and manifests exist and are this table's history
  (`table.lineage.verify_lineage`) — or nothing is written or deleted;
* a plan that removes snapshots or tags and then their files records those files in a journal first, so that a
  crash leaves only unreferenced files, which the next run reclaims (`execution/journal.py`).

Steps are dispatched by their action. The generic ones (delete files / ordered metadata / empty directories, write
files, hints) are here; operations register their own (`register_step`): expiry's snapshot-to-changelog
conversion, compaction's tasks and commit. A handler gets the `Execution` (table, runner, what was done so far)
and the step.
"""
from __future__ import annotations

import dataclasses
import logging
import posixpath
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Sequence

import paimon_ops.execution.journal as journal
import paimon_ops.features as features
from paimon_ops.catalog import catalog_of, notify_tags, open_catalog
from paimon_ops.errors import (
    CancelledError,
    CommitConflictError,
    InvalidOptionError,
    PaimonOpsError,
    StalePlanError,
    UnsafeOperationError,
)
from paimon_ops.execution.deleter import Deleter, preflight
from paimon_ops.execution.files import FileAction, FileList, FileParts
from paimon_ops.execution.model import (
    DELETE_DIRS,
    DELETE_FILES,
    DELETE_ORDERED,
    ENSURE_HINTS,
    HINT,
    TAG,
    WRITE_FILES,
    WRITE_HINT,
    Step,
    bytes_by_kind,
    count_by_kind,
    gate_of,
    removal_words,
)
from paimon_ops.execution.placement import place
from paimon_ops.execution.planning import plan_again, replan
from paimon_ops.execution.report import Report
from paimon_ops.execution.runner import Progress, Runner
from paimon_ops.format.snapshot import Tag, parse_hint
from paimon_ops.options import CATALOG_WAREHOUSE, affects_files
from paimon_ops.table import hints
from paimon_ops.table.fileio import ensure_within
from paimon_ops.table.lineage import verify_lineage
from paimon_ops.table.removal import allowed_roots
from paimon_ops.table.table import TAG_PREFIX, FileStoreTable

if TYPE_CHECKING:
    from paimon_ops.execution.plan import Plan

log = logging.getLogger(__name__)

StepHandler = Callable[["Execution", Step], None]
_HANDLERS: dict[str, StepHandler] = {}


def register_step(action: str) -> Callable[[StepHandler], StepHandler]:
    def deco(fn: StepHandler) -> StepHandler:
        _HANDLERS[action] = fn
        return fn
    return deco


StepCheck = Callable[[FileStoreTable, "Plan", Step], None]
_CHECKS: dict[str, StepCheck] = {}


def register_check(action: str) -> Callable[[StepCheck], StepCheck]:
    """A check of an operation's own step, run with the preflight — before the plan's first destructive step — on
    the live table (e.g. expiry: no live consumer still reads a snapshot the step deletes)."""
    def deco(fn: StepCheck) -> StepCheck:
        _CHECKS[action] = fn
        return fn
    return deco


class Execution:
    """What one execution has done so far (the report is built from it)."""

    def __init__(self, plan: Plan, table: FileStoreTable, runner: Runner | None, progress: Progress | None,
                 batch_size: int | None = None, parallel_threshold: int | None = None):
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
        self.done = FileParts()
        self.written: list[FileAction] = []
        self.missing = 0
        self.details: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.snapshot_id: int | None = None
        self.runner_info: dict[str, Any] | None = None
        self.state: dict[str, Any] = {}  # what one step hands to the next (compaction: task results -> commit)
        self.journal: Any = None  # execution.journal.Journal of this run, once it has one

    # ------------------------------------------------------------------ primitives used by handlers
    def delete(self, actions: Sequence[FileAction]) -> None:
        actions = self._tags_through_catalog(actions)
        tags = self._tag_files(actions)
        try:
            done, missing = self.deleter.delete(actions)
        finally:
            self._tags_gone(tags)
        self.done += done
        self.missing += missing

    def delete_ordered(self, actions: Sequence[FileAction]) -> None:
        actions = self._tags_through_catalog(actions)
        tags = self._tag_files(actions)
        try:
            done, missing = self.deleter.delete_ordered(actions)
        finally:
            self._tags_gone(tags)
        self.done += done
        self.missing += missing

    def _tag_files(self, actions: Sequence[FileAction]) -> list[str]:
        """The tags whose files `actions` write or delete, when the table's catalog keeps its metastore in step with
        them (tag-to-partition); nothing is looked at otherwise."""
        cat = catalog_of(self.table)
        if cat is None or not cat.syncs_metastore:
            return []
        tags_dir = self.table.tags.dir
        found = actions.where_kind([TAG]) if isinstance(actions, FileList) else [a for a in actions if a.kind == TAG]
        return [posixpath.basename(a.path)[len(TAG_PREFIX):] for a in found
                if posixpath.dirname(a.path) == tags_dir and posixpath.basename(a.path).startswith(TAG_PREFIX)]

    def _tag_name(self, action: FileAction) -> str | None:
        name = posixpath.basename(action.path)
        if action.kind == TAG and posixpath.dirname(action.path) == self.table.tags.dir and name.startswith(TAG_PREFIX):
            return name[len(TAG_PREFIX):]
        return None

    def _catalog_writing_tags(self) -> Any:
        cat = catalog_of(self.table)
        return cat if cat is not None and cat.writes_tags(self.table) else None

    def _tags_through_catalog(self, actions: Sequence[FileAction]) -> Sequence[FileAction]:
        """Tags the catalog deletes itself (a REST server's tag endpoints) are deleted through it, in order; what is
        left (every other file) goes to the deleter."""
        found = actions.where_kind([TAG]) if isinstance(actions, FileList) else [a for a in actions if a.kind == TAG]
        named = [(a, n) for a in found if (n := self._tag_name(a)) is not None]
        cat = self._catalog_writing_tags() if named else None
        if cat is None:
            return actions
        for a, name in named:
            if cat.delete_tag(self.table, name):
                self.done += [a]
            else:
                self.missing += 1
        through = {a.path for a, _ in named}
        return [a for a in actions if a.path not in through]

    def _tags_gone(self, names: list[str]) -> None:
        """After deleting tag files (also when the delete failed part way): the catalog hears of each one gone."""
        gone = [n for n in names if not self.table.tags.exists(n)]
        notify_tags(self.table, deleted=gone)

    def journal_writes(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Record, before writing, that files named with a token will appear in a directory (crash leftovers)."""
        if self.journal is None:
            self.journal = journal.start(self.table, self.plan.operation, writes=pairs)
        else:
            self.journal.add_writes(pairs)

    def write(self, action: FileAction, data: bytes, create: bool = False) -> bool:
        ensure_within(self.table.root, action.path)
        name = self._tag_name(action)
        cat = self._catalog_writing_tags() if name is not None else None
        if cat is not None:  # a REST server's tag endpoints: it writes the tag
            created = cat.write_tag(self.table, name, Tag.from_json(data, action.path), replace=not create)
        elif create:
            token = str(uuid.uuid4())  # names the temporary file: a run killed mid-write leaves one the next finds
            self.journal_writes([(posixpath.dirname(action.path), token)])
            created = self.table.io.write_atomic_if_absent(action.path, data, tmp_token=token)
        else:
            self.table.io.write_bytes(action.path, data)
            created = True
        if created:
            self.written.append(FileAction(action.path, action.kind, action.reason, len(data)))
            notify_tags(self.table, created=self._tag_files([action]))
        return created

    def _hint_owned_by_catalog(self, path: str) -> bool:
        """A catalog that owns the table's history (REST) keeps its snapshot hints: paimon-ops writes none."""
        cat = catalog_of(self.table)
        return cat is not None and cat.owns_history(self.table) and \
            posixpath.dirname(path) == self.table.snapshots.dir

    def write_hint(self, path: str, value: int, reason: str) -> None:
        """Hints are advisory (readers verify them, maintenance.md §0.3): a failed hint write is logged, not fatal."""
        if self._hint_owned_by_catalog(path):
            log.info("%s: not writing %s = %s (the catalog owns the table's history)", self.table.identifier,
                     posixpath.basename(path), value)
            return
        try:
            self.write(FileAction(path, HINT, reason), str(int(value)).encode())
        except OSError as e:
            log.warning("could not write hint %s = %s: %s", path, value, e)

    def ensure_hint(self, path: str, value: int | None, reason: str) -> None:
        """Write a hint only if it does not already say `value`: a rerun after an interrupted run repairs what the
        interrupted run could not write, so every run converges to the same files."""
        if value is None or self._hint_owned_by_catalog(path):
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
        # one copy of the files (a million deleted files take ~35 MB); what was deleted is all but what was written
        files = FileList.concat([*self.done.parts, self.written])
        written, written_bytes = count_by_kind(self.written), bytes_by_kind(self.written)
        deleted = {k: n - written.get(k, 0) for k, n in count_by_kind(files).items() if n > written.get(k, 0)}
        deleted_bytes = {k: b - written_bytes.get(k, 0) for k, b in bytes_by_kind(files).items() if k in deleted}
        return Report(plan.operation, plan.table, False, round(time.time() - started, 3),
                      deleted=deleted, deleted_bytes=deleted_bytes, written=written, written_bytes=written_bytes,
                      snapshot_id=self.snapshot_id, details=details, files=files,
                      warnings=tuple(plan.warnings) + tuple(self.warnings), runner=self.runner_info,
                      deleted_as=removal_words(plan, dry_run=False))


def open_plan_table(plan: Plan, catalog_options: Any = None) -> FileStoreTable:
    """The plan's table: by its location, or — a plan made through a catalog (`plan.catalog`) — through that catalog,
    whose location for the table must be the plan's (`catalog_options`: more options for it, e.g. secrets)."""
    for name in ("table", "location", "branch"):
        if not isinstance(getattr(plan, name), str) or not getattr(plan, name):
            raise PaimonOpsError(f"the {plan.operation} plan names no {name}")
    planned_on = plan.planned_on
    if planned_on is not None and catalog_options is None:
        # a fresh plan runs on the table it was made on, through the same catalog — on the plan's branch (a plan
        # made through a branch may be the table's: orphan removal, a branch's deletion)
        return planned_on.refresh() if planned_on.branch == plan.branch else planned_on.for_branch(plan.branch)
    if not plan.catalog:
        return FileStoreTable(plan.location, identifier=plan.table, branch=plan.branch,
                              options_override=plan.options_override)
    options = {**plan.catalog, **(catalog_options or {})}
    catalog = open_catalog(options.get(CATALOG_WAREHOUSE.key), options)
    table = catalog.get_table(plan.table, branch=plan.branch, options_override=plan.options_override)
    if table.location != plan.location:
        catalog.close()
        raise PaimonOpsError(f"the {plan.operation} plan is for {plan.table} at {plan.location}, but its catalog "
                             f"{catalog.endpoint} now places it at {table.location}; refusing (was the plan edited, or "
                             "the table moved?)")
    return table


def check_preconditions(plan: Plan, table: FileStoreTable, skip_covered: bool = False) -> None:
    changed = [msg for p in plan.preconditions
               if not (skip_covered and p.preflight_covers) and (msg := p.check(table))]
    if changed:
        raise StalePlanError(plan.operation, plan.table, changed)


def check_identity(plan: Plan, table: FileStoreTable) -> None:
    """The table opened is the one the plan names: its directory is named after the plan's table (db.table lives in
    <warehouse>/<db>.db/<table>), and a saved plan does not change how its files are read."""
    base = posixpath.basename(posixpath.normpath(table.root))
    parent = posixpath.basename(posixpath.dirname(posixpath.normpath(table.root)))
    names = {base} | ({f"{parent[:-3]}.{base}"} if parent.endswith(".db") else set())
    located = plan.catalog and catalog_of(table) is not None and table.identifier == plan.table
    if plan.table not in names and not located:  # (a catalog places a table where it says: Hive's external tables)
        raise PaimonOpsError(f"the {plan.operation} plan is for table {plan.table!r}, but {plan.location} holds "
                             f"{sorted(names)[-1]!r}; refusing (was the plan edited?)")
    if plan.is_fresh:
        return
    own = table.schema.options
    # Options that decide how a table's files are read and where they are (the catalogue's `affects_files`): a saved
    # plan may not override them (running with another merge engine, bucket count or external path than the table's
    # own would rewrite or delete the wrong things). Overrides of retention, budgets and schedules stay allowed.
    for key, value in plan.options_override.items():
        if affects_files(key) and own.get(key) != value:
            raise InvalidOptionError(key, value, f"the table's own value {own.get(key)!r} (a saved plan may not "
                                                 "override how the table's files are read)", f"plan for {plan.table}")


def execute(plan: Plan, table: FileStoreTable | None = None, *, runner: Runner | None = None,
            progress: Progress | None = None, batch_size: int | None = None,
            parallel_threshold: int | None = None, max_replans: int = 0, commit_user: str | None = None,
            commit_time_millis: int | None = None) -> Report:
    """Execute `plan` exactly: refuse it if stale or not what its operation decides now (StalePlanError: nothing
    changed), refuse any path that is not safe to delete (PreflightError: nothing changed), else run every step in
    order.

    Execution options: `batch_size` / `parallel_threshold` of the deletes; `commit_user` and `commit_time_millis`
    (the snapshot's timeMillis) of a commit; `max_replans`: a plan fresh from its planner whose commit conflicts with
    a concurrent writer (CommitConflictError, or StalePlanError once the table moved on) is planned again with the
    same arguments on the new latest snapshot and executed, up to that many times (the report's `replans` says how
    many). A saved plan is never re-planned into something nobody reviewed: it runs as shown or is refused."""
    started = time.time()
    replans = 0
    while True:
        try:
            report = _execute_once(plan, table, runner, progress, batch_size, parallel_threshold,
                                   {"commit_user": commit_user, "commit_time_millis": commit_time_millis})
        except (CommitConflictError, StalePlanError) as e:
            if replans >= max_replans or not plan.is_fresh or "$unrecordable" in plan.planned_with:
                if max_replans:
                    log.warning("%s of %s aborted: %s", plan.operation, plan.table, e)
                raise
            replans += 1
            log.info("%s of %s conflicted (%s); re-planning (%d/%d)", plan.operation, plan.table, e, replans,
                     max_replans)
            plan = plan_again(plan, table or open_plan_table(plan))
            continue
        if not max_replans:
            return report
        return dataclasses.replace(report, duration_s=round(time.time() - started, 3),
                                   details={**report.details, "replans": replans})


def _execute_once(plan: Plan, table: FileStoreTable | None, runner: Runner | None, progress: Progress | None,
                  batch_size: int | None, parallel_threshold: int | None, state: dict[str, Any]) -> Report:
    started = time.time()
    if table is None:
        table = open_plan_table(plan)
    elif (table.identifier, table.location) == (plan.table, plan.location) and table.branch != plan.branch:
        table = table.for_branch(plan.branch)  # a plan made through one branch for another (orphan removal, a branch's deletion)
    elif (table.identifier, table.branch, table.location) != (plan.table, plan.branch, plan.location):
        raise PaimonOpsError(f"plan for {plan.table} ({plan.location}, branch {plan.branch}) cannot be executed on "
                             f"{table.identifier} ({table.location}, branch {table.branch})")
    check_identity(plan, table)
    mode = getattr(plan, "mode", None)
    # a plan reviewed earlier (or made by another version) is gated again
    features.require(table, gate_of(plan.operation, mode), what=f"{plan.operation} plan" + (f" ({mode})" if mode else ""))
    if plan.is_fresh:
        check_preconditions(plan, table, skip_covered=True)
    else:
        check_preconditions(plan, table)  # what changed since the review, in the plan's own words
        plan = replan(plan, table)  # then exactly what the operation decides now, or a refusal listing the difference
    unknown = [s.action for s in plan.steps if s.action not in _HANDLERS]
    if unknown:
        raise PaimonOpsError(f"plan of {plan.operation} has an unknown step {unknown[0]!r}; was it made by a newer "
                             "paimon-ops?")
    runner, placement = place(runner, plan.workload(), table.options)  # (Spark is started only when used)
    checked = preflight(table, plan.steps, runner=runner)
    for step in plan.steps:
        check = _CHECKS.get(step.action)
        if check is not None:
            check(table, plan, step)
    # every snapshot's and tag's metadata exists and is this table's, before the first write — also when the plan
    # has nothing to do, so that a table whose history is not its own is said, never reported as fine
    verify_lineage(table, plan.operation.replace("_", " "), repairs_missing=plan.repairs_missing())
    ex = Execution(plan, table, runner, progress, batch_size, parallel_threshold)
    ex.runner_info = placement
    ex.state.update(state)
    if checked.owners and checked.content:
        ex.journal = journal.start(table, plan.operation, deletes=checked.content)
    try:
        for step in plan.steps:
            _HANDLERS[step.action](ex, step)
    except BaseException as e:
        if ex.journal is not None:
            _end_journal_after_failure(ex)
        if isinstance(e, Exception) or isinstance(e, (SystemExit, GeneratorExit)):
            raise
        # an interrupt (Ctrl-C, SIGTERM, a terminated Dagster run) between two deletes: nothing is left unreadable
        raise CancelledError(f"{plan.operation} of {plan.table} interrupted after {len(ex.done)} file(s) were "
                             f"deleted and {len(ex.written)} written; nothing listed is unreadable, and the next run "
                             "finishes what is left") from None
    if ex.journal is not None:
        ex.journal.close()
    return ex.report(started)


def _end_journal_after_failure(ex: Execution) -> None:
    """After a failed or interrupted run: a journal of files to delete stays (abandoned, so the next run finishes it
    at once); a journal of files written is closed when the handlers removed every one of them (nothing left to
    finish), else abandoned. Nothing is deleted here: only the handlers know what was committed."""
    j = ex.journal
    if j.deletes or getattr(ex.runner, "name", "") == "spark":  # Spark: an executor may still close a file later
        j.abandon()
        return
    for w in j.writes:
        try:
            listed = ex.table.io.list_status(w["dir"])
        except UnsafeOperationError:
            continue  # a symbolic link: nothing is ever written through one
        except (OSError, PaimonOpsError):
            j.abandon()
            return
        if any(not st.is_dir and w["token"] in st.name for st in listed):
            j.abandon()
            return
    j.close()


# ---------------------------------------------------------------------------------------------- generic steps
@register_step(DELETE_FILES)
def _delete_files(ex: Execution, step: Step) -> None:
    ex.delete(step.files)


@register_step(DELETE_ORDERED)
def _delete_ordered(ex: Execution, step: Step) -> None:
    ex.delete_ordered(step.files)


@register_step(DELETE_DIRS)
def _delete_dirs(ex: Execution, step: Step) -> None:
    ex.done += ex.deleter.delete_dirs(step.files)


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
    """Hints from a listing at run time (`table.hints` decides what each must say): EARLIEST / LATEST of snapshot/ or
    changelog/ (params.hints: [{dir, name, default?, only_if_exists?}]; `default`: the value when the directory holds
    no file of its kind). Rerun after a crash converges to the right hints."""
    for h in step.params.get("hints", ()):
        mgr = hints.manager_of(ex.table.io, h["dir"])
        decided = hints.decide(mgr, names=[h["name"]])[0]
        value = decided.wanted if decided.wanted is not None else h.get("default")
        if value is None:
            continue
        if h.get("only_if_exists") and decided.wanted is None and not ex.table.io.exists(decided.path):
            continue
        ex.ensure_hint(decided.path, value, f"{h['name'].lower()} {decided.kind}")


def step_actions() -> list[str]:
    """Every step action the executor runs (the generic ones and those the operations register)."""
    return sorted(_HANDLERS)


__all__ = ["execute", "step_actions", "register_step", "register_check", "Execution", "check_preconditions",
           "open_plan_table", "check_identity"]
